"""The sandbox at the point of use: a file or directory swapped for a symbolic link while the
tools run never leads them outside (issue 35 §2), and a FIFO never blocks them (issue 34 §7).

A process keeps swapping a path inside the workspace between a real file (or directory) and a
link to an outside one, as fast as it can, while the tools use that path again and again. A
check of the name before the open (what the tools did) lost that race a few times in a
hundred; opening component by component without following links never does.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import anyio
import pytest

import agentloop as al
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls
from agentloop_coding import EditFile, Glob, Grep, ListDir, ReadFile, Workspace, WriteFile
from agentloop_policies import Sandbox

from ._helpers import call, text_of

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.anyio

ITERATIONS = int(os.environ.get("AGENTLOOP_RACE_ITERATIONS", "1000"))
# Each grep starts a process: fewer in the suite (the nox session "races" runs them all).
PROCESS_ITERATIONS = int(os.environ.get("AGENTLOOP_RACE_PROCESS_ITERATIONS", "150"))
SECRET = "SECRET-outside-the-workspace"


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    inside, outside = tmp_path / "work", tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{SECRET}\n")
    (outside / "secret-name-only").write_text("")
    return inside, outside


def confined(inside: Path) -> Workspace:
    # A sandbox given explicitly: the old code confined only with one.
    return Workspace(inside, sandbox=Sandbox([inside]))


# The racer runs in a process of its own, so that it swaps while the tools' own Python code
# runs (a thread of this process would wait for the GIL, and swap only between their steps).
SWAPPER = r"""
import contextlib, ctypes, os, sys
kind, target, outside = sys.argv[1:]
other = target + ".other"
# The other state, made once: a link to the outside (or a FIFO), or a regular file.
if kind == "fifo":
    os.mkfifo(other)
else:
    os.symlink(outside, other)
# renameat2(RENAME_EXCHANGE) swaps the two names in one step, whatever their types.
exchange = ctypes.CDLL(None, use_errno=True).renameat2
AT_FDCWD, RENAME_EXCHANGE = -100, 2
a, b = target.encode(), other.encode()
print("ready", flush=True)
while True:
    if exchange(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")
"""


@contextlib.contextmanager
def swapping(kind: str, target: Path, outside: Path) -> Iterator[None]:
    """Swap ``target`` for a link to ``outside`` and back, atomically, in another process,
    until the block ends. ``kind``: ``file``, ``dir``, or ``fifo`` (a FIFO instead of the
    link)."""
    racer = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, kind, str(target), str(outside)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert racer.stdout is not None
    with racer.stdout:
        try:
            assert racer.stdout.readline() == "ready\n", "the racer did not start"
            yield
        finally:
            racer.kill()
            racer.wait()
    assert racer.returncode == -signal.SIGKILL  # it raced to the end


async def test_reading_a_file_swapped_for_a_link_never_leaks(places: tuple[Path, Path]) -> None:
    inside, outside = places
    (inside / "f.txt").write_text("inside\n")
    tool = ReadFile(confined(inside))
    leaks = reads = 0
    with swapping("file", inside / "f.txt", outside / "secret.txt"):
        for _ in range(ITERATIONS):
            result = await call(tool, path="f.txt")
            leaks += SECRET in text_of(result)
            reads += "inside" in text_of(result)
    assert leaks == 0
    assert reads > 0  # the file was read between swaps, not refused every time


async def test_reading_through_a_directory_swapped_for_a_link_never_leaks(
    places: tuple[Path, Path],
) -> None:
    inside, outside = places
    (inside / "d").mkdir()
    (inside / "d" / "secret.txt").write_text("inside\n")
    tool, lister = ReadFile(confined(inside)), ListDir(confined(inside))
    leaks = 0
    with swapping("dir", inside / "d", outside):
        for _ in range(ITERATIONS // 2):
            read = await call(tool, path="d/secret.txt")
            listed = await call(lister, path="d")
            leaks += SECRET in text_of(read)
            leaks += "secret-name-only" in text_of(listed)
    assert leaks == 0


async def test_writing_and_editing_through_swapped_links_never_change_outside(
    places: tuple[Path, Path],
) -> None:
    inside, outside = places
    (inside / "f.txt").write_text("a = 1\n")
    (inside / "d").mkdir()
    space = confined(inside)
    writer, editor = WriteFile(space), EditFile(space)
    outside_file = outside / "secret.txt"
    outside_file.write_text("a = 1\n")  # an edit would apply to it just as well
    before = sorted(os.listdir(outside))
    with (
        swapping("file", inside / "f.txt", outside_file),
        swapping("dir", inside / "d", outside),
    ):
        for n in range(ITERATIONS // 2):
            await call(writer, path="f.txt", content="a = 1\n")
            await call(editor, path="f.txt", old="a = 1", new="a = 1")  # refused: same text
            await call(editor, path="f.txt", old="a = 1\n", new="a = 1\n\n")
            await call(writer, path="d/new.txt", content=f"{n}\n")
            await call(writer, path="d/secret.txt", content="overwritten\n")
    assert outside_file.read_text() == "a = 1\n"
    assert sorted(os.listdir(outside)) == before


async def test_searching_through_a_directory_swapped_for_a_link_never_leaks(
    places: tuple[Path, Path],
) -> None:
    inside, outside = places
    (inside / "d").mkdir()
    (inside / "d" / "notes.txt").write_text("SECRET-looking but inside\n")
    space = confined(inside)
    grep, glob = Grep(space, backend="python"), Glob(space)
    leaks = 0
    with swapping("dir", inside / "d", outside):
        for _ in range(PROCESS_ITERATIONS):
            found = await call(grep, pattern="SECRET", path="d")
            everywhere = await call(grep, pattern="SECRET")
            names = await call(glob, pattern="**/*")
            leaks += SECRET in text_of(found) + text_of(everywhere)
            leaks += "secret-name-only" in text_of(names)
    assert leaks == 0


async def test_a_link_that_stays_inside_still_works(places: tuple[Path, Path]) -> None:
    inside, outside = places
    (inside / "src").mkdir()
    (inside / "src" / "real.py").write_text("x = 1\n")
    os.symlink("src/real.py", inside / "alias.py")
    os.symlink(inside / "src", inside / "linked-dir")
    os.symlink(outside / "secret.txt", inside / "src" / "escape")
    space = confined(inside)
    assert text_of(await call(ReadFile(space), path="alias.py")).endswith("x = 1")
    assert text_of(await call(ReadFile(space), path="linked-dir/../src/real.py")).endswith("x = 1")
    edit = await call(EditFile(space), path="linked-dir/real.py", old="x = 1", new="x = 2")
    assert not edit.is_error, text_of(edit)
    assert (inside / "src" / "real.py").read_text() == "x = 2\n"
    assert (inside / "alias.py").is_symlink()  # the link was followed, not replaced
    escape = await call(ReadFile(space), path="src/escape")
    assert escape.is_error and "outside the allowed directories" in text_of(escape)
    listed = text_of(await call(ListDir(space)))
    assert listed.splitlines() == ["alias.py@", "linked-dir@", "src/"]


# --------------------------------------------------------------------------- FIFOs (34 §7)


async def test_fifos_are_refused_before_they_are_opened(places: tuple[Path, Path]) -> None:
    inside, _ = places
    os.mkfifo(inside / "pipe")
    space = confined(inside)
    with anyio.fail_after(10):  # opening it would block until a writer came
        cases: list[tuple[Any, dict[str, Any]]] = [
            (ReadFile(space), {"path": "pipe"}),
            (EditFile(space), {"path": "pipe", "old": "a", "new": "b"}),
            (WriteFile(space), {"path": "pipe", "content": "x"}),
            (Grep(space, backend="python"), {"pattern": "x", "path": "pipe"}),
        ]
        for tool, arguments in cases:
            result = await call(tool, **arguments)
            assert result.is_error and "FIFO" in text_of(result), tool.name
        searched = await call(Grep(space, backend="python"), pattern="x")
        assert not searched.is_error  # a FIFO met in a directory is skipped, not waited on
    assert (inside / "pipe").is_fifo()


async def test_a_fifo_in_the_workspace_cannot_hang_an_agent(places: tuple[Path, Path]) -> None:
    inside, _ = places
    os.mkfifo(inside / "pipe")
    model = ScriptedStream(
        [reply_tool_calls(("read_file", {"path": "pipe"})), reply_text("It is a pipe.")]
    )
    agent = al.Agent(
        model=al.ModelSpec(provider="scripted", model_id="m"),
        stream_fn=model,
        tools=[ReadFile(confined(inside))],
        tool_timeout=2,
    )
    with anyio.fail_after(10):
        result = await agent.prompt("read it")
    (answer,) = [m for m in result.messages if isinstance(m, al.ToolResultMessage)]
    assert answer.is_error and "FIFO" in answer.text


async def test_a_file_swapped_for_a_fifo_never_blocks_a_read(places: tuple[Path, Path]) -> None:
    inside, _ = places
    target = inside / "f.txt"
    target.write_text("inside\n")
    tool = ReadFile(confined(inside))
    refused = 0
    with anyio.fail_after(60), swapping("fifo", target, target):
        for _ in range(ITERATIONS // 2):
            result = await call(tool, path="f.txt")
            refused += result.is_error
            assert not result.is_error or "FIFO" in text_of(result) or "changing" in text_of(result)
    assert refused < ITERATIONS // 2
