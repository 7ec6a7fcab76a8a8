"""Sandbox: path arguments must resolve inside the roots, whatever the model tries."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from agentloop import AgentToolResult, Tool, tool
from agentloop.policy import Allow, Rewrite, Skip
from agentloop.testing import reply_text, reply_tool_calls
from agentloop_policies import Sandbox

from ._helpers import dispatch_ctx, real, run, seen_by_model, tool_results

pytestmark = pytest.mark.anyio


class SchemaTool(Tool):
    def __init__(self, name: str, parameters: dict[str, Any]) -> None:
        self.name = name
        self.parameters = parameters

    async def execute(self, call_id: str, arguments: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult.text("ok")


READ = SchemaTool("read", {"type": "object", "properties": {"path": {"type": "string"}}})


@pytest.fixture
def root(tmp_path: Path) -> Path:
    base = tmp_path / "root"
    (base / "sub").mkdir(parents=True)
    (base / "sub" / "a.txt").write_text("a")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("TOP-SECRET")
    return base


def check(sandbox: Sandbox, value: Any, tool: Tool = READ, key: str = "path") -> Any:
    return sandbox.evaluate(dispatch_ctx(tool.name, {key: value}, tool=tool))


def test_relative_path_inside_is_pinned_to_absolute(root: Path) -> None:
    verdict = check(Sandbox([root]), "sub/a.txt")
    assert isinstance(verdict, Rewrite)
    assert verdict.arguments == {"path": str(root.resolve() / "sub" / "a.txt")}


def test_pinned_arguments_pass_unchanged(root: Path) -> None:
    sandbox = Sandbox([root])
    first = check(sandbox, "sub/./a.txt")
    assert isinstance(first, Rewrite)
    # The loop re-checks rewritten arguments: the second pass must settle, not rewrite again.
    assert isinstance(check(sandbox, first.arguments["path"]), Allow)


def test_no_pinning(root: Path) -> None:
    assert isinstance(check(Sandbox([root], pin=False), "sub/a.txt"), Allow)


def test_the_root_itself_is_allowed(root: Path) -> None:
    assert isinstance(check(Sandbox([root], pin=False), "."), Allow)
    assert isinstance(check(Sandbox([root], pin=False), ""), Allow)


@pytest.mark.parametrize(
    "value",
    [
        "..",
        "../outside/secret.txt",
        "sub/../../outside/secret.txt",
        "sub/../../root/../outside",
        "/etc/passwd",
        "/",
        "~/.ssh/id_rsa",
        "file:///etc/passwd",
        "  ../outside",
    ],
)
def test_escapes_are_skipped(root: Path, value: str) -> None:
    verdict = check(Sandbox([root]), value)
    assert isinstance(verdict, Skip), value
    assert "outside the allowed directories" in verdict.reason


def test_dotdot_that_comes_back_inside_is_fine(root: Path) -> None:
    assert isinstance(check(Sandbox([root], pin=False), f"sub/../../{root.name}/sub"), Allow)


def test_sibling_with_common_prefix_is_outside(root: Path) -> None:
    sibling = root.parent / (root.name + "-evil")
    sibling.mkdir()
    assert isinstance(check(Sandbox([root]), str(sibling / "x")), Skip)


def test_absolute_path_inside_is_allowed(root: Path) -> None:
    path = str(root.resolve() / "sub" / "a.txt")
    assert isinstance(check(Sandbox([root]), path), Allow)


def test_symlink_to_outside_is_caught(root: Path) -> None:
    (root / "link").symlink_to(root.parent / "outside")
    assert isinstance(check(Sandbox([root]), "link/secret.txt"), Skip)
    # and a file symlink
    (root / "f").symlink_to(root.parent / "outside" / "secret.txt")
    assert isinstance(check(Sandbox([root]), "f"), Skip)


def test_dangling_symlink_to_outside_is_caught(root: Path) -> None:
    # Writing through it would create a file outside the root.
    (root / "new.txt").symlink_to(root.parent / "outside" / "created-by-tool.txt")
    assert isinstance(check(Sandbox([root]), "new.txt"), Skip)


def test_symlink_then_dotdot_follows_the_link_first(root: Path) -> None:
    deep = root.parent / "outside" / "deep"
    deep.mkdir()
    (root / "jump").symlink_to(deep)
    # Lexically "jump/.." is the root; physically it is ../outside.
    assert isinstance(check(Sandbox([root]), "jump/../secret.txt"), Skip)


def test_symlink_inside_root_is_fine(root: Path) -> None:
    (root / "alias").symlink_to(root / "sub")
    verdict = check(Sandbox([root]), "alias/a.txt")
    assert isinstance(verdict, Rewrite)
    assert verdict.arguments["path"] == str(root.resolve() / "sub" / "a.txt")


def test_root_given_through_a_symlink(root: Path) -> None:
    via = root.parent / "via"
    via.symlink_to(root)
    assert isinstance(check(Sandbox([via], pin=False), "sub/a.txt"), Allow)
    assert isinstance(check(Sandbox([via]), str(root / "sub")), Allow)


def test_symlink_loop_does_not_hang_or_escape(root: Path) -> None:
    (root / "loop1").symlink_to(root / "loop2")
    (root / "loop2").symlink_to(root / "loop1")
    verdict = check(Sandbox([root], pin=False), "loop1/x")
    assert isinstance(verdict, Allow | Skip)


def test_nul_byte_is_skipped(root: Path) -> None:
    verdict = check(Sandbox([root]), "a\x00b")
    assert isinstance(verdict, Skip)
    assert "NUL" in verdict.reason


def test_file_url_for_another_host_is_skipped(root: Path) -> None:
    assert isinstance(check(Sandbox([root]), "file://evil.example/etc/passwd"), Skip)


def test_several_roots(root: Path) -> None:
    other = root.parent / "outside"
    sandbox = Sandbox([root, other], pin=False)
    assert isinstance(check(sandbox, str(other / "secret.txt")), Allow)
    assert isinstance(check(sandbox, "/etc/passwd"), Skip)


def test_cwd_differs_from_root(root: Path) -> None:
    sandbox = Sandbox([root], cwd=root / "sub")
    verdict = check(sandbox, "a.txt")
    assert isinstance(verdict, Rewrite)
    assert verdict.arguments["path"] == str(root.resolve() / "sub" / "a.txt")
    assert isinstance(check(sandbox, "../../outside"), Skip)


def test_schema_format_marks_paths(root: Path) -> None:
    tool = SchemaTool(
        "copy",
        {
            "type": "object",
            "properties": {
                "from_": {"type": "string", "format": "path"},
                "targets": {"type": "array", "items": {"type": "string", "format": "file-path"}},
                "options": {
                    "type": "object",
                    "properties": {"log": {"type": "string", "format": "path"}},
                },
                "note": {"type": "string", "format": "not-path"},
            },
        },
    )
    sandbox = Sandbox([root], pin=False, guess_from_names=False)
    ok = {"from_": "sub/a.txt", "targets": ["x", "y"], "options": {"log": "l"}, "note": "/etc"}
    assert isinstance(sandbox.evaluate(dispatch_ctx("copy", ok, tool=tool)), Allow)
    for bad in (
        {**ok, "from_": "/etc/passwd"},
        {**ok, "targets": ["x", "../../etc"]},
        {**ok, "options": {"log": "/tmp/../etc/log"}},
    ):
        verdict = sandbox.evaluate(dispatch_ctx("copy", bad, tool=tool))
        assert isinstance(verdict, Skip), bad


def test_declared_paths_including_nested_and_unknown_tool(root: Path) -> None:
    sandbox = Sandbox([root], paths={"edit": ["edits.*.file", "target"]}, pin=False)
    good = {"edits": [{"file": "a"}, {"file": "sub/b"}], "target": "t"}
    assert isinstance(sandbox.evaluate(dispatch_ctx("edit", good)), Allow)
    bad = {"edits": [{"file": "a"}, {"file": "../../x"}], "target": "t"}
    verdict = sandbox.evaluate(dispatch_ctx("edit", bad))
    assert isinstance(verdict, Skip)
    assert "edits.1.file" in verdict.reason


def test_pinning_nested_values_copies_containers(root: Path) -> None:
    sandbox = Sandbox([root], paths={"edit": ["edits.*.file"]})
    arguments = {"edits": [{"file": "a"}, {"file": "sub/b"}]}
    verdict = sandbox.evaluate(dispatch_ctx("edit", arguments))
    assert isinstance(verdict, Rewrite)
    resolved = root.resolve()
    assert verdict.arguments == {
        "edits": [{"file": str(resolved / "a")}, {"file": str(resolved / "sub" / "b")}]
    }
    assert arguments == {"edits": [{"file": "a"}, {"file": "sub/b"}]}  # never mutated


def test_names_are_guessed_for_pinning_unless_disabled(root: Path) -> None:
    tool = SchemaTool(
        "w",
        {"type": "object", "properties": {"output_file": {"type": "string"}, "n": {}}},
    )
    assert isinstance(check(Sandbox([root]), "/etc/x", tool=tool, key="output_file"), Skip)
    assert isinstance(check(Sandbox([root]), "x", tool=tool, key="output_file"), Rewrite)
    # Without guessing, such an argument is still checked (every string is), but not pinned.
    off = Sandbox([root], guess_from_names=False)
    assert isinstance(check(off, "/etc/x", tool=tool, key="output_file"), Skip)
    assert isinstance(check(off, "x", tool=tool, key="output_file"), Allow)


def test_non_string_values_and_non_dict_arguments_are_ignored(root: Path) -> None:
    sandbox = Sandbox([root])
    assert isinstance(check(sandbox, 42), Allow)
    assert isinstance(check(sandbox, None), Allow)
    assert isinstance(sandbox.evaluate(dispatch_ctx("read", ["x"], tool=READ)), Allow)


def test_a_list_of_paths(root: Path) -> None:
    tool = SchemaTool("cat", {"type": "object", "properties": {"paths": {"type": "array"}}})
    sandbox = Sandbox([root], pin=False)
    assert isinstance(check(sandbox, ["a", "b"], tool=tool, key="paths"), Allow)
    assert isinstance(check(sandbox, ["a", "/etc"], tool=tool, key="paths"), Skip)


def test_needs_a_root() -> None:
    with pytest.raises(ValueError, match="root"):
        Sandbox([])


def test_single_root_given_as_string(root: Path) -> None:
    sandbox = Sandbox(os.fspath(root))
    assert sandbox.roots == (root.resolve(),)


# ------------------------------------------------------------------ through a real run


def file_tools(log: list[str]) -> list[Any]:
    @tool
    def read_file(path: str) -> str:
        """Read a text file."""
        log.append(path)
        return Path(path).read_text()

    @tool
    def write_file(path: str, content: str) -> str:
        """Write a text file."""
        log.append(path)
        Path(path).write_text(content)
        return "written"

    return [read_file, write_file]


async def test_escapes_never_reach_the_tool_in_a_run(root: Path) -> None:
    (root / "link").symlink_to(root.parent / "outside")
    (root / "drop").symlink_to(root.parent / "outside" / "dropped.txt")
    secret = str(root.parent / "outside" / "secret.txt")
    log: list[str] = []
    script = [
        reply_tool_calls(
            ("read_file", {"path": "../outside/secret.txt"}),
            ("read_file", {"path": secret}),
            ("read_file", {"path": "link/secret.txt"}),
            ("write_file", {"path": "drop", "content": "pwned"}),
            ("read_file", {"path": "sub/a.txt"}),
        ),
        reply_text("done"),
    ]
    result, stream = await run(
        script, tools=file_tools(log), pre_dispatch_policies=[Sandbox([root])]
    )
    results = tool_results(result)
    assert [r.is_error for r in results] == [True, True, True, True, False]
    for skipped in results[:4]:
        assert "outside the allowed directories" in skipped.text
    assert results[4].text == "a"
    # Only the legitimate call ran, with the pinned absolute path.
    assert log == [real(root, "sub", "a.txt")]
    assert not (root.parent / "outside" / "dropped.txt").exists()
    assert "TOP-SECRET" not in seen_by_model(stream, 1)
    assert result.text == "done"


async def test_a_schema_tool_with_path_format_in_a_run(root: Path) -> None:
    class Copy(Tool):
        name = "copy"
        parameters: dict[str, Any] = {  # noqa: RUF012
            "type": "object",
            "properties": {
                "source": {"type": "string", "format": "path"},
                "target": {"type": "string", "format": "path"},
            },
            "required": ["source", "target"],
        }

        def __init__(self) -> None:
            self.ran: list[Any] = []

        async def execute(self, call_id: str, arguments: Any, on_update: Any) -> AgentToolResult:
            self.ran.append(arguments)
            return AgentToolResult.text("copied")

    copy = Copy()
    script = [
        reply_tool_calls(
            ("copy", {"source": "sub/a.txt", "target": "/tmp/../etc/cron.d/x"}),
            ("copy", {"source": "sub/a.txt", "target": "sub/b.txt"}),
        ),
        reply_text("done"),
    ]
    result, _ = await run(script, tools=[copy], pre_dispatch_policies=[Sandbox([root])])
    first, second = tool_results(result)
    assert first.is_error
    assert "'target'" in first.text
    assert not second.is_error
    assert copy.ran == [
        {"source": real(root, "sub", "a.txt"), "target": real(root, "sub", "b.txt")}
    ]


async def test_control_without_the_sandbox_the_secret_leaks(root: Path) -> None:
    # The same escape with no policy: proves the run-level check above can see a leak.
    log: list[str] = []
    secret = str(root.parent / "outside" / "secret.txt")
    script = [reply_tool_calls(("read_file", {"path": secret})), reply_text("")]
    _, stream = await run(script, tools=file_tools(log))
    assert "TOP-SECRET" in seen_by_model(stream, 1)


SEGMENTS = ["..", ".", "sub", "link", "alias", "a.txt", "", "~", " ", "x y"]


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    parts=st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=6),
    absolute=st.booleans(),
)
def test_property_whatever_passes_stays_inside(
    root: Path, parts: list[str], absolute: bool
) -> None:
    if not (root / "link").is_symlink():
        (root / "link").symlink_to(root.parent / "outside")
        (root / "alias").symlink_to(root / "sub")
    value = ("/" if absolute else "") + "/".join(parts)
    verdict = check(Sandbox([root]), value)
    inside = root.resolve()
    if isinstance(verdict, Skip):
        return
    pinned = verdict.arguments["path"] if isinstance(verdict, Rewrite) else value
    # Whatever the tool does with the value it gets, it stays inside the root.
    for reading in (pinned, os.path.join(inside, pinned)):
        assert Path(os.path.realpath(reading)).is_relative_to(inside), (value, pinned)
