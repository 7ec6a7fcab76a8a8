"""Sandbox: every string at any depth that could name a file is checked, unless the schema says
it is not a path; relative paths are taken from the call's own ``cwd``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import msgspec
import pytest

from agentloop import AgentToolResult, Tool, tool
from agentloop.policy import Allow, Rewrite, Skip
from agentloop.testing import reply_text, reply_tool_calls
from agentloop_policies import NOT_PATH_FORMATS, Sandbox, _sandbox as sandbox_module

from ._helpers import dispatch_ctx, real, run, tool_results

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio


class SchemaTool(Tool):
    def __init__(self, name: str, parameters: dict[str, Any] | None = None) -> None:
        self.name = name
        self.parameters = parameters or {"type": "object"}
        self.ran: list[Any] = []

    async def execute(self, call_id: str, arguments: Any, on_update: Any) -> AgentToolResult:
        self.ran.append(arguments)
        return AgentToolResult.text("ok")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    base = tmp_path / "root"
    (base / "sub").mkdir(parents=True)
    (base / "sub" / "x.txt").write_text("x")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("TOP-SECRET")
    return base


def verdict(
    sandbox: Sandbox, name: str, arguments: Any, schema: dict[str, Any] | None = None
) -> Any:
    return sandbox.evaluate(dispatch_ctx(name, arguments, tool=SchemaTool(name, schema)))


# --------------------------------------------------------------------------- the audit's cases


def test_an_argument_not_named_like_a_path(root: Path) -> None:
    result = verdict(Sandbox([root]), "copy", {"src": "/etc/passwd", "dst": "copy.txt"})
    assert isinstance(result, Skip)
    assert "'src'" in result.reason


def test_a_path_nested_in_an_object(root: Path) -> None:
    result = verdict(Sandbox([root]), "run", {"options": {"path": "/etc/passwd"}})
    assert isinstance(result, Skip)
    assert "options.path" in result.reason
    inside = verdict(Sandbox([root]), "run", {"options": {"path": "sub/x.txt"}})
    assert isinstance(inside, Rewrite)  # a path-like name at any depth is pinned
    assert inside.arguments == {"options": {"path": real(root, "sub", "x.txt")}}


def test_a_path_in_a_list_of_objects(root: Path) -> None:
    edits = [{"file": "sub/x.txt", "text": "a"}, {"file": "../outside/secret.txt", "text": "b"}]
    result = verdict(Sandbox([root]), "batch_edit", {"edits": edits})
    assert isinstance(result, Skip)
    assert "edits.1.file" in result.reason
    ok = verdict(Sandbox([root]), "batch_edit", {"edits": edits[:1]})
    assert isinstance(ok, Rewrite)
    assert ok.arguments == {"edits": [{"file": real(root, "sub", "x.txt"), "text": "a"}]}


def test_relative_paths_are_taken_from_the_calls_cwd(root: Path) -> None:
    result = verdict(Sandbox([root]), "write", {"cwd": "sub", "file": "x.txt"})
    assert isinstance(result, Rewrite)
    assert result.arguments == {"cwd": real(root, "sub"), "file": real(root, "sub", "x.txt")}


def test_the_calls_cwd_is_checked_too(root: Path) -> None:
    assert isinstance(verdict(Sandbox([root]), "w", {"cwd": "..", "file": "x"}), Skip)
    escape = {"cwd": "sub", "file": "../../outside/secret.txt"}
    assert isinstance(verdict(Sandbox([root]), "w", escape), Skip)
    # ".." from root/sub is the root itself: inside.
    back = verdict(Sandbox([root], pin=False), "w", {"workdir": "sub", "path": "../sub/x.txt"})
    assert isinstance(back, Allow)


# --------------------------------------------------------------------------- what counts


@pytest.mark.parametrize(
    "arguments",
    [
        {"files": {"/etc/passwd": "new text"}},  # an object key
        {"args": ["--in", "/etc/shadow"]},
        {"a": {"b": {"c": [{"d": "~/.ssh/id_rsa"}]}}},
        {"target": "file:///etc/passwd"},
        {"target": "/etc/passwd\n"},  # a trailing newline a tool may strip
        {"note": "  ../../outside  "},
    ],
)
def test_any_string_at_any_depth_is_checked(root: Path, arguments: Any) -> None:
    assert isinstance(verdict(Sandbox([root]), "t", arguments), Skip)


@pytest.mark.parametrize(
    "value",
    [
        "hello world",
        "cat /etc/passwd",  # a command is a name relative to the working directory
        "https://example.com/etc/passwd",
        "line one\n/etc/passwd",  # several lines: prose or code, not a file name
        "/etc/passwd" + "x" * 5000,  # longer than any system opens
        "a\x00/etc/passwd",
    ],
)
def test_strings_that_cannot_name_a_file_outside_pass(root: Path, value: str) -> None:
    assert isinstance(verdict(Sandbox([root]), "t", {"text": value}), Allow)


def _content_schema(content: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"path": {"type": "string"}, "content": content}}


@pytest.mark.parametrize(
    "content",
    [
        {"type": "string", "format": "not-path"},
        {"type": "string", "format": "date-time"},
        {"type": "string", "enum": ["/etc/passwd", "/"]},
        {"const": "/etc/passwd"},
        {"anyOf": [{"type": "string", "format": "not-path"}, {"type": "integer"}]},
        {"allOf": [{"type": "string"}, {"format": "not-path"}]},
        {"$ref": "#/$defs/Text"},
    ],
)
def test_the_schema_can_say_a_string_is_not_a_path(root: Path, content: dict[str, Any]) -> None:
    schema = _content_schema(content)
    schema["$defs"] = {"Text": {"type": "string", "format": "not-path"}}
    arguments = {"path": "sub/x.txt", "content": "/etc/passwd"}
    assert isinstance(verdict(Sandbox([root], pin=False), "w", arguments, schema), Allow)
    assert isinstance(verdict(Sandbox([root], pin=False), "w", arguments), Skip)  # unmarked


def test_an_alternative_that_could_be_a_path_keeps_the_check(root: Path) -> None:
    schema = _content_schema({"anyOf": [{"type": "string", "format": "not-path"}, {}]})
    result = verdict(Sandbox([root]), "w", {"path": "a", "content": "/etc/passwd"}, schema)
    assert isinstance(result, Skip)


def test_keys_and_items_marked_not_paths(root: Path) -> None:
    schema = {
        "type": "object",
        "properties": {
            "env": {
                "type": "object",
                "propertyNames": {"format": "not-path"},
                "additionalProperties": {"type": "string", "format": "not-path"},
            },
            "patterns": {"type": "array", "items": {"type": "string", "format": "regex"}},
        },
    }
    arguments = {"env": {"/etc/passwd": "/root"}, "patterns": ["/usr/.*", "^/etc"]}
    assert isinstance(verdict(Sandbox([root]), "grep", arguments, schema), Allow)


def test_a_declared_path_beats_a_not_path_mark(root: Path) -> None:
    schema = _content_schema({"type": "string", "format": "not-path"})
    sandbox = Sandbox([root], paths={"w": ["content"]})
    result = verdict(sandbox, "w", {"path": "a", "content": "/etc/passwd"}, schema)
    assert isinstance(result, Skip)


def test_not_path_formats_are_exported() -> None:
    assert "not-path" in NOT_PATH_FORMATS
    assert "uri" not in NOT_PATH_FORMATS  # a file: URI names a file


NotPath = Annotated[str, msgspec.Meta(extra_json_schema={"format": "not-path"})]


def test_a_tool_function_marks_an_argument_with_annotated(root: Path) -> None:
    @tool
    def write_file(path: str, content: NotPath) -> str:
        """Write a file."""
        return "written"

    arguments = {"path": "sub/x.txt", "content": "/usr/bin/env python3"}
    ctx = dispatch_ctx("write_file", arguments, tool=write_file)
    result = Sandbox([root]).evaluate(ctx)
    assert isinstance(result, Rewrite)
    assert result.arguments == {"path": real(root, "sub", "x.txt"), "content": arguments["content"]}


# --------------------------------------------------------------------------- failing closed


def test_arguments_nested_too_deep_are_skipped(root: Path) -> None:
    deep: Any = "x"
    for _ in range(1000):
        deep = [deep]
    result = verdict(Sandbox([root]), "t", {"a": deep})
    assert isinstance(result, Skip)
    assert "nested deeper" in result.reason


def test_arguments_with_too_many_strings_are_skipped(root: Path) -> None:
    result = verdict(Sandbox([root]), "t", {"names": [f"n{i}" for i in range(20_000)]})
    assert isinstance(result, Skip)
    assert "more than 10,000 strings" in result.reason


def test_the_limits_are_documented() -> None:
    doc = sandbox_module.__doc__ or ""
    assert "Time of check to time of use" in doc
    assert "RESOLVE_BENEATH" in doc
    assert '"format": "not-path"' in doc


# --------------------------------------------------------------------------- in a run


async def test_an_unnamed_path_never_reaches_the_tool_in_a_run(root: Path) -> None:
    copy = SchemaTool(
        "copy",
        {"type": "object", "properties": {"src": {"type": "string"}, "dst": {"type": "string"}}},
    )
    script = [
        reply_tool_calls(
            ("copy", {"src": str(root.parent / "outside" / "secret.txt"), "dst": "stolen.txt"}),
            ("copy", {"src": "sub/x.txt", "dst": "y.txt"}),
        ),
        reply_text("done"),
    ]
    result, _ = await run(script, tools=[copy], pre_dispatch_policies=[Sandbox([root])])
    first, second = tool_results(result)
    assert first.is_error
    assert "outside the allowed directories" in first.text
    assert not second.is_error
    assert copy.ran == [{"src": "sub/x.txt", "dst": "y.txt"}]  # checked, not named: not pinned
