"""read_file, list_dir, write_file and edit_file on real temporary directories, on both backends."""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING

import pytest

from agentloop_coding import EditFile, ListDir, ReadFile, Workspace, WriteFile, coding_tools
from agentloop_policies import Sandbox

from ._helpers import call, text_of

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio


@pytest.fixture
def space(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path)


# --------------------------------------------------------------------------- read_file


async def test_read_file_numbers_lines(space: Workspace, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\nbeta\n")
    result = await call(ReadFile(space), path="a.txt")
    assert not result.is_error
    assert text_of(result) == "     1\talpha\n     2\tbeta"
    assert result.details == {"path": "a.txt", "start": 1, "end": 2, "more": False}


async def test_read_file_range_and_how_to_read_on(space: Workspace, tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 101)))
    result = await call(ReadFile(space), path="long.txt", offset=10, limit=3)
    lines = text_of(result).splitlines()
    assert lines[:3] == ["    10\tline 10", "    11\tline 11", "    12\tline 12"]
    assert "offset=13" in lines[3]
    assert result.details["more"] is True


async def test_read_file_caps_lines_bytes_and_line_length(space: Workspace, tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("x" * 50 + "\n" + ("y" * 10 + "\n") * 5000)
    tool = ReadFile(space, max_lines=100, max_bytes=600, max_line_chars=20)
    result = await call(tool, path="big.txt")
    text = text_of(result)
    assert "x" * 20 + "... [line cut at 20 chars]" in text
    assert len(text) < 900
    assert "call read_file with offset=" in text
    capped = await call(tool, path="big.txt", limit=100_000)
    assert not capped.is_error and len(text_of(capped)) < 900  # capped, not an error


async def test_read_file_bad_input_is_an_error_result(space: Workspace, tmp_path: Path) -> None:
    (tmp_path / "blob.bin").write_bytes(b"PK\x03\x04\x00\x00binary")
    (tmp_path / "dir").mkdir()
    (tmp_path / "short.txt").write_text("one\n")
    cases = {
        "missing.txt": "does not exist",
        "blob.bin": "binary file",
        "dir": "is a directory",
    }
    for path, expected in cases.items():
        result = await call(ReadFile(space), path=path)
        assert result.is_error and expected in text_of(result), path
    past = await call(ReadFile(space), path="short.txt", offset=5)
    assert past.is_error and "past its end" in text_of(past)
    invalid = await call(ReadFile(space), path="short.txt", offset=0)
    assert invalid.is_error


async def test_read_file_empty_file(space: Workspace, tmp_path: Path) -> None:
    (tmp_path / "empty").write_text("")
    result = await call(ReadFile(space), path="empty")
    assert not result.is_error and text_of(result) == "(empty file)"


# --------------------------------------------------------------------------- list_dir


async def test_list_dir_marks_directories_and_caps(space: Workspace, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    for name in ("b.py", "a.py", ".hidden"):
        (tmp_path / name).write_text("")
    result = await call(ListDir(space))
    assert text_of(result).splitlines() == [".hidden", "a.py", "b.py", "src/"]
    capped = await call(ListDir(space, max_entries=2), path=".")
    assert "2 more entries not shown" in text_of(capped)
    assert capped.details["truncated"] is True
    missing = await call(ListDir(space), path="nope")
    assert missing.is_error
    a_file = await call(ListDir(space), path="a.py")
    assert a_file.is_error and "read_file" in text_of(a_file)


# --------------------------------------------------------------------------- write_file


async def test_write_file_creates_directories_and_reports_a_diff(
    space: Workspace, tmp_path: Path
) -> None:
    result = await call(WriteFile(space), path="pkg/mod.py", content="x = 1\ny = 2\n")
    assert not result.is_error
    assert (tmp_path / "pkg" / "mod.py").read_text() == "x = 1\ny = 2\n"
    details = result.details
    assert details["created"] is True and details["old_text"] is None
    assert details["diff"].startswith("--- /dev/null\n+++ b/pkg/mod.py\n")
    assert details["added"] == 2 and details["removed"] == 0
    assert text_of(result) == "Created pkg/mod.py (2 lines)."


async def test_write_file_replaces_keeping_the_mode(space: Workspace, tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("echo old\n")
    script.chmod(0o755)
    result = await call(WriteFile(space), path="run.sh", content="echo new\n")
    assert script.read_text() == "echo new\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert result.details["created"] is False
    assert "-echo old\n+echo new\n" in result.details["diff"]
    assert result.details["old_text"] == "echo old\n"
    assert os.listdir(tmp_path) == ["run.sh"]  # no temporary file left


async def test_write_file_onto_a_directory_is_an_error(space: Workspace, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    result = await call(WriteFile(space), path="d", content="x")
    assert result.is_error and "is a directory" in text_of(result)


# --------------------------------------------------------------------------- edit_file


async def test_edit_file_replaces_a_unique_piece(space: Workspace, tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("def f():\n    return 1\n\ndef g():\n    return 2\n")
    result = await call(EditFile(space), path="app.py", old="return 2", new="return 3")
    assert not result.is_error, text_of(result)
    assert (tmp_path / "app.py").read_text().endswith("    return 3\n")
    details = result.details
    assert details["replacements"] == 1 and details["first_line"] == 5
    assert details["old_text"] == "return 2" and details["new_text"] == "return 3"
    diff = details["diff"]
    assert diff.startswith("--- a/app.py\n+++ b/app.py\n@@ ")
    assert "-    return 2\n+    return 3\n" in diff
    assert "(+1 -1 lines)" in text_of(result)


async def test_edit_file_refuses_what_it_cannot_do_safely(space: Workspace, tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text("a = 1\nb = 1\nc = 1\n")
    tool = EditFile(space)
    missing = await call(tool, path="t.py", old="d = 1", new="d = 2")
    assert missing.is_error and "was not found" in text_of(missing)
    ambiguous = await call(tool, path="t.py", old=" = 1", new=" = 2")
    assert ambiguous.is_error
    assert "occurs 3 times" in text_of(ambiguous) and "lines 1, 2, 3" in text_of(ambiguous)
    same = await call(tool, path="t.py", old="a = 1", new="a = 1")
    assert same.is_error
    empty = await call(tool, path="t.py", old="", new="x")
    assert empty.is_error and "write_file" in text_of(empty)
    nofile = await call(tool, path="none.py", old="a", new="b")
    assert nofile.is_error and "does not exist" in text_of(nofile)
    assert (tmp_path / "t.py").read_text() == "a = 1\nb = 1\nc = 1\n"  # untouched


async def test_edit_file_replace_all(space: Workspace, tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text("a = 1\nb = 1\n")
    result = await call(EditFile(space), path="t.py", old="= 1", new="= 2", replace_all=True)
    assert (tmp_path / "t.py").read_text() == "a = 2\nb = 2\n"
    assert result.details["replacements"] == 2
    assert "replaced 2 occurrences" in text_of(result)


async def test_edit_file_keeps_windows_line_ends_and_bom(space: Workspace, tmp_path: Path) -> None:
    (tmp_path / "w.txt").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\nthree\r\n")
    result = await call(EditFile(space), path="w.txt", old="one\ntwo", new="one\n2")
    assert not result.is_error, text_of(result)
    assert (tmp_path / "w.txt").read_bytes() == b"\xef\xbb\xbfone\r\n2\r\nthree\r\n"


async def test_edit_file_refuses_binary_and_non_utf8(space: Workspace, tmp_path: Path) -> None:
    (tmp_path / "b.bin").write_bytes(b"a\x00b")
    (tmp_path / "l.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    binary = await call(EditFile(space), path="b.bin", old="a", new="b")
    assert binary.is_error and "binary" in text_of(binary)
    latin = await call(EditFile(space), path="l.txt", old="caf", new="tea")
    assert latin.is_error and "not UTF-8" in text_of(latin)
    assert (tmp_path / "l.txt").read_bytes() == "caf\xe9\n".encode("latin-1")


# --------------------------------------------------------------------------- the sandbox


async def test_tools_refuse_paths_outside_the_sandbox(tmp_path: Path) -> None:
    inside = tmp_path / "work"
    inside.mkdir()
    (tmp_path / "secret.txt").write_text("s3cret")
    os.symlink(tmp_path / "secret.txt", inside / "link.txt")
    space = Workspace(inside, sandbox=Sandbox([inside]))
    for path in ("../secret.txt", str(tmp_path / "secret.txt"), "link.txt", "~/x"):
        result = await call(ReadFile(space), path=path)
        assert result.is_error and "outside the allowed directories" in text_of(result), path
    write = await call(WriteFile(space), path="../escape.txt", content="x")
    assert write.is_error and not (tmp_path / "escape.txt").exists()


def test_the_sandbox_policy_lets_the_tools_non_path_arguments_through(tmp_path: Path) -> None:
    from agentloop import ModelSpec, ToolCall
    from agentloop.policy import Allow, DispatchContext, MessagesView, Rewrite, Skip

    sandbox = Sandbox([tmp_path])
    tools = {t.name: t for t in coding_tools(tmp_path)}

    def verdict(name: str, arguments: dict[str, object]) -> object:
        ctx = DispatchContext(
            call=ToolCall(id="c", name=name, arguments=arguments),
            tool=tools[name],
            batch=[],
            turn=0,
            messages=MessagesView([]),
            model=ModelSpec(provider="p", model_id="m"),
        )
        return sandbox.evaluate(ctx)

    # Contents, commands and patterns that look like outside paths are not paths.
    assert isinstance(verdict("bash", {"command": "cat /etc/passwd"}), Allow)
    assert isinstance(verdict("grep", {"pattern": "/etc/.*"}), Allow)
    edit = verdict("edit_file", {"path": "a.py", "old": "/etc/hosts", "new": "../x"})
    assert isinstance(edit, Rewrite)  # the path is pinned to its absolute form
    assert edit.arguments["path"] == str(tmp_path / "a.py")
    assert isinstance(verdict("write_file", {"path": "a", "content": "/etc/x"}), Rewrite)
    # Paths are still checked.
    assert isinstance(verdict("read_file", {"path": "/etc/passwd"}), Skip)
    assert isinstance(verdict("bash", {"command": "ls", "cwd": "/"}), Skip)
    assert isinstance(verdict("glob", {"pattern": "/etc/*"}), Skip)


def test_each_tool_declares_whether_it_is_read_only(tmp_path: Path) -> None:
    tools = {t.name: t for t in coding_tools(tmp_path)}
    read_only = {name for name, t in tools.items() if t.read_only}
    assert read_only == {"read_file", "list_dir", "glob", "grep"}
    for name, tool in tools.items():
        assert tool.requires_approval is not tool.read_only, name
        assert tool.kind in ("read", "search", "edit", "execute")
    assert "bash" not in {t.name for t in coding_tools(tmp_path, shell=False)}


# --------------------------------------------------------------------------- confinement


async def test_coding_tools_confine_to_the_workspace_by_default(tmp_path: Path) -> None:
    inside = tmp_path / "work"
    inside.mkdir()
    (tmp_path / "secret.txt").write_text("s3cret")
    tools = {t.name: t for t in coding_tools(inside)}
    for path in ("../secret.txt", str(tmp_path / "secret.txt")):
        read = await call(tools["read_file"], path=path)
        assert read.is_error and "outside the allowed directories" in text_of(read), path
        assert "s3cret" not in text_of(read)
    write = await call(tools["write_file"], path="../escape.txt", content="x")
    assert write.is_error and not (tmp_path / "escape.txt").exists()
    listed = await call(tools["list_dir"], path="..")
    assert listed.is_error and "secret.txt" not in text_of(listed)


async def test_opting_out_of_confinement_is_explicit_and_loud(tmp_path: Path) -> None:
    inside = tmp_path / "work"
    inside.mkdir()
    (tmp_path / "secret.txt").write_text("s3cret")
    with pytest.warns(UserWarning, match="not confined"):
        tools = {t.name: t for t in coding_tools(inside, confine=False)}
    read = await call(tools["read_file"], path="../secret.txt")
    assert not read.is_error and "s3cret" in text_of(read)
    assert "UNCONFINED" in repr(tools["read_file"].workspace)
    with pytest.raises(ValueError, match="confined"):
        Workspace(inside, sandbox=Sandbox([inside]), confined=False)


async def test_paths_are_taken_as_given(space: Workspace, tmp_path: Path) -> None:
    # A leading or trailing space is part of the name, as it is for the system.
    written = await call(WriteFile(space), path=" lead.txt", content="x")
    assert not written.is_error, text_of(written)
    assert (tmp_path / " lead.txt").read_text() == "x"
    assert not (tmp_path / "lead.txt").exists()
    await call(WriteFile(space), path="trail.txt ", content="y")
    assert sorted(os.listdir(tmp_path)) == [" lead.txt", "trail.txt "]
    read = await call(ReadFile(space), path="trail.txt")
    assert read.is_error and "does not exist" in text_of(read)
