"""No change that reports success is lost (issue 35 §1): edits and writes of one file in one
batch run one after the other, and a file written by something else between a change's read
and its write is not overwritten.

The calls go through the agent loop as a model's batch would (concurrently, each in its own
task), on both backends.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import HealthCheck, given, note, settings, strategies as st

import agentloop as al
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls
from agentloop_coding import EditFile, Workspace, coding_tools

from ._helpers import call, text_of

if TYPE_CHECKING:
    from agentloop.abc import OnUpdate

BACKENDS = ("asyncio", "trio")


class Jittered(al.Tool):
    """A tool that waits a given number of scheduler rounds before (and after) its work, so
    that the calls of a batch start and finish in many orders."""

    def __init__(self, inner: Any, delays: dict[str, tuple[int, int]]) -> None:
        self.inner = inner
        self.delays = delays
        self.name, self.label, self.description = inner.name, inner.label, inner.description
        self.parameters = inner.parameters
        self.requires_approval = False

    async def execute(
        self, call_id: str, arguments: Any, on_update: OnUpdate
    ) -> al.AgentToolResult:
        before, after = self.delays.get(call_id, (0, 0))
        for _ in range(before):
            await anyio.lowlevel.checkpoint()
        result: al.AgentToolResult = await self.inner.execute(call_id, arguments, on_update)
        for _ in range(after):
            await anyio.lowlevel.checkpoint()
        return result


async def run_batch(
    root: Path, calls: list[al.ToolCall], delays: dict[str, tuple[int, int]]
) -> list[al.ToolResultMessage]:
    tools = [Jittered(t, delays) for t in coding_tools(root, shell=False)]
    agent = al.Agent(
        model=al.ModelSpec(provider="scripted", model_id="m"),
        stream_fn=ScriptedStream([reply_tool_calls(*calls), reply_text("done")]),
        tools=tools,
    )
    with anyio.fail_after(60):
        result = await agent.prompt("change the files")
    return [m for m in result.messages if isinstance(m, al.ToolResultMessage)]


def edit(call_id: str, path: str, old: str, new: str) -> al.ToolCall:
    return al.ToolCall(
        id=call_id, name="edit_file", arguments={"path": path, "old": old, "new": new}
    )


@pytest.mark.anyio
@pytest.mark.parametrize("count", [2, 5])
async def test_edits_of_one_file_in_one_batch_are_all_kept(tmp_path: Path, count: int) -> None:
    names = "abcde"[:count]
    (tmp_path / "g.py").write_text("".join(f"{n} = {i}\n" for i, n in enumerate(names, 1)))
    calls = [edit(f"e{n}", "g.py", f"{n} = {i}", f"{n} = {i}0") for i, n in enumerate(names, 1)]
    results = await run_batch(tmp_path, calls, {})
    assert all(not r.is_error and "replaced 1 occurrence" in r.text for r in results)
    expected = "".join(f"{n} = {i}0\n" for i, n in enumerate(names, 1))
    assert (tmp_path / "g.py").read_text() == expected


@pytest.mark.anyio
async def test_a_file_changed_behind_an_edits_back_is_not_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another program writes the file after the edit has read it: the edit fails, saying so,
    # and the other program's content stays.
    target = tmp_path / "f.py"
    target.write_text("x = 1\n")
    space = Workspace(tmp_path)
    beneath = type(space.beneath)
    original = beneath.read

    def read_then_someone_writes(self: Any, *args: Any, **kwargs: Any) -> Any:
        data = original(self, *args, **kwargs)
        target.write_text("x = 1\ny = 2  # written by another program\n")
        return data

    monkeypatch.setattr(beneath, "read", read_then_someone_writes)
    result = await call(EditFile(space), path="f.py", old="x = 1", new="x = 100")
    assert result.is_error and "changed since it was read" in text_of(result)
    assert target.read_text() == "x = 1\ny = 2  # written by another program\n"


# --------------------------------------------------------------------------- the property

FILES = ("one.txt", "two.txt", "three.txt")
MARKERS = ("m0", "m1", "m2")


def initial(name: str) -> str:
    return "".join(f"{m}:\n" for m in MARKERS) + f"# {name}\n"


@st.composite
def batches(draw: st.DrawFn) -> tuple[list[al.ToolCall], dict[str, tuple[int, int]]]:
    """Edits (each adds its token to a marker's line) and writes (each a fresh file with its
    own token) of a few files, in a random order, each with random delays."""
    calls: list[al.ToolCall] = []
    delays: dict[str, tuple[int, int]] = {}
    for n in range(draw(st.integers(2, 10))):
        name = draw(st.sampled_from(FILES))
        call_id = f"c{n}"
        if draw(st.integers(0, 4)) == 0:
            content = initial(name) + f"write w{n}\n"
            arguments: dict[str, Any] = {"path": name, "content": content}
            calls.append(al.ToolCall(id=call_id, name="write_file", arguments=arguments))
        else:
            marker = draw(st.sampled_from(MARKERS))
            calls.append(edit(call_id, name, f"{marker}:", f"{marker}: t{n}"))
        delays[call_id] = (draw(st.integers(0, 6)), draw(st.integers(0, 6)))
    return calls, delays


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def check(root: Path, calls: list[al.ToolCall], results: list[al.ToolResultMessage]) -> None:
    by_id = {r.tool_call_id: r for r in results}
    for name in FILES:
        final = (root / name).read_text()
        changes = [c for c in calls if c.arguments["path"] == name]
        succeeded = [c for c in changes if not by_id[c.id].is_error]
        note(f"{name}: {[(c.id, c.name) for c in succeeded]} -> {final!r}")
        assert all(not by_id[c.id].is_error for c in changes)  # each applies to any content
        if not any(c.name == "write_file" for c in succeeded):
            # Only edits: the token of every one that reported success is in the file.
            for change in succeeded:
                assert change.arguments["new"].split()[-1] in final.split(), change.id
        # Whatever the mix: the changes form one chain from the initial content to the final
        # one, each applied to what the one before left (no two read the same version).
        links = {}
        for change in succeeded:
            details = by_id[change.id].details
            assert details["base_sha256"] not in links, "two changes started from one version"
            links[details["base_sha256"]] = details["sha256"]
        at, steps = sha256(initial(name)), 0
        while at in links:
            at, steps = links[at], steps + 1
        assert steps == len(succeeded) and at == sha256(final)


@settings(
    max_examples=int(os.environ.get("AGENTLOOP_LOST_UPDATE_EXAMPLES", "100")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(batch=batches())
def test_no_change_reported_as_done_is_ever_lost(
    batch: tuple[list[al.ToolCall], dict[str, tuple[int, int]]],
) -> None:
    calls, delays = batch
    for backend in BACKENDS:
        note(f"backend: {backend}")
        with tempfile.TemporaryDirectory() as directory:
            root = Path(directory)
            for name in FILES:
                (root / name).write_text(initial(name))
            results = anyio.run(run_batch, root, calls, delays, backend=backend)
            check(root, calls, results)
