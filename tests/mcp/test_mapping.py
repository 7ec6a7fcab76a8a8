"""The pure parts, without a server: result blocks, names and filters, annotations, specs."""

from __future__ import annotations

import io
import subprocess
import sys
from typing import Any

import msgspec
import pytest
from mcp import types

import agentloop as al
import agentloop_mcp as mcp
from agentloop_mcp._config import child_environment, server_name
from agentloop_mcp._connection import describe
from agentloop_mcp._tool import McpTool, agent_name, build_tools, to_agent_result
from agentloop_mcp._transport import _our_stderr

from ._helpers import PNG_B64


class FakeToolset:
    """What ``McpTool`` reads of its toolset when it is built."""

    name = "fake"


def listed(name: str, **kwargs: Any) -> types.Tool:
    return types.Tool(name=name, input_schema={"type": "object", "properties": {}}, **kwargs)


def build(spec: mcp.ServerSpec, *tools: types.Tool) -> dict[str, McpTool]:
    built = build_tools(FakeToolset(), spec, tools, ())  # type: ignore[arg-type]
    return {t.name: t for t in built}


SPEC = mcp.StdioServer(command="server")
LIMITS = mcp.ResultLimits()


def test_every_kind_of_block_maps_to_a_content_block() -> None:
    result = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="hello"),
            types.ImageContent(type="image", data=PNG_B64, mime_type="image/png"),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(uri="file:///a.txt", text="inside"),
            ),
            types.ResourceLink(type="resource_link", name="a", uri="file:///a.txt"),
            types.AudioContent(type="audio", data="UklG", mime_type="audio/wav"),
            types.EmbeddedResource(
                type="resource",
                resource=types.BlobResourceContents(uri="file:///b.bin", blob="AAAA"),
            ),
        ],
        structured_content={"answer": 42},
    )
    mapped = to_agent_result(result, server="s", tool="t", limits=LIMITS)
    assert mapped.content == [
        al.Text(text="hello"),
        al.Image(media_type="image/png", data=PNG_B64),
        al.Text(text="inside"),
        al.Text(text="[resource: a <file:///a.txt>]"),
        al.Extension(
            type_name="mcp_audio", data={"type": "audio", "data": "UklG", "mimeType": "audio/wav"}
        ),
        al.Extension(
            type_name="mcp_resource",
            data={"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAAA"}},
        ),
    ]
    assert mapped.details == {
        "server": "s",
        "tool": "t",
        "structured_content": {"answer": 42},
        "resource_links": [{"uri": "file:///a.txt", "name": "a"}],
    }
    assert not mapped.is_error


def test_structured_content_alone_is_shown_to_the_model_as_json() -> None:
    result = types.CallToolResult(content=[], structured_content={"b": [1, 2]}, is_error=True)
    mapped = to_agent_result(result, server="s", tool="t", limits=LIMITS)
    assert mapped.content == [al.Text(text='{"b":[1,2]}')]
    assert mapped.is_error


@pytest.mark.parametrize(
    ("prefix", "name", "expected"),
    [
        ("", "read_file", "read_file"),
        ("fs_", "read_file", "fs_read_file"),
        ("fs.", "files/read file", "fs_files_read_file"),
        ("", "ü", "_"),
        ("p_", "x" * 100, "p_" + "x" * 62),
    ],
)
def test_names_are_what_providers_accept(prefix: str, name: str, expected: str) -> None:
    assert agent_name(prefix, name) == expected


def test_include_exclude_and_clashing_names(caplog: pytest.LogCaptureFixture) -> None:
    spec = msgspec.structs.replace(SPEC, include=["read*", "list"], exclude=["*_secret"])
    tools = build(
        spec,
        listed("read_file"),
        listed("read_secret"),
        listed("list"),
        listed("write_file"),
        listed("read.file"),  # becomes read_file too: left out
    )
    assert list(tools) == ["read_file", "list"]
    assert "is named 'read_file' like another one" in caplog.text


def test_annotations_decide_read_only_idempotent_and_approval() -> None:
    read = types.ToolAnnotations(read_only_hint=True)
    idem = types.ToolAnnotations(idempotent_hint=True, title="Idem")
    tools = build(
        msgspec.structs.replace(SPEC, requires_approval="unless_read_only"),
        listed("r", annotations=read),
        listed("i", annotations=idem),
        listed("w", title="Writer"),
    )
    assert [(t.read_only, t.idempotent, t.requires_approval) for t in tools.values()] == [
        (True, True, False),
        (False, True, True),
        (False, False, True),
    ]
    assert [t.label for t in tools.values()] == ["r", "Idem", "Writer"]

    distrust = msgspec.structs.replace(SPEC, trust_read_only_hints=False, requires_approval=True)
    tools = build(distrust, listed("r", annotations=read), listed("i", annotations=idem))
    assert [(t.read_only, t.idempotent, t.requires_approval) for t in tools.values()] == [
        (False, False, True),
        (False, False, True),
    ]


def test_arguments_are_checked_and_a_schema_the_validator_rejects_is_left_to_the_server(
    caplog: pytest.LogCaptureFixture,
) -> None:
    good = types.Tool(
        name="g",
        input_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
    )
    bad = types.Tool(name="b", input_schema={"type": "object", "properties": {"n": {"type": 5}}})
    tools = build(SPEC, good, bad)
    assert tools["g"].validate_arguments({"n": 1}) == {"n": 1}
    with pytest.raises(al.ToolArgumentError, match="must be integer"):
        tools["g"].validate_arguments({"n": "one"})
    assert tools["b"].validate_arguments({"n": "anything"}) == {"n": "anything"}
    assert "cannot be compiled" in caplog.text


def test_unchanged_tools_are_kept_as_the_same_objects() -> None:
    first = build_tools(FakeToolset(), SPEC, [listed("a"), listed("b")], ())  # type: ignore[arg-type]
    second = build_tools(
        FakeToolset(),  # type: ignore[arg-type]
        SPEC,
        [listed("a"), listed("b", description="changed")],
        first,
    )
    assert second[0] is first[0]
    assert second[1] is not first[1]
    assert second[1].description == "changed"


def test_restart_delays_grow_to_the_cap() -> None:
    policy = mcp.RestartPolicy(initial_delay=0.25, max_delay=2.0, factor=2.0)
    assert [policy.delay(n) for n in range(6)] == [0.25, 0.5, 1.0, 2.0, 2.0, 2.0]
    assert policy.delay(10_000) == 2.0


def test_server_names_default_to_the_script_or_the_host() -> None:
    assert server_name(mcp.StdioServer(command="python", args=["-u", "/srv/files.py"])) == "files"
    assert server_name(mcp.StdioServer(command="/usr/bin/git-mcp")) == "git-mcp"
    assert server_name(mcp.StdioServer(command="python", args=["-m", "pkg.weather"])) == "weather"
    assert server_name(mcp.HttpServer(url="https://tools.example.com/mcp")) == ("tools.example.com")
    assert server_name(mcp.StdioServer(name="mine", command="x")) == "mine"


def test_the_environment_holds_only_what_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "s")
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.delenv("NOT_THERE", raising=False)
    spec = mcp.StdioServer(command="x", inherit_env=["LANG", "NOT_THERE"], env={"MODE": "test"})
    assert child_environment(spec) == {"LANG": "C.UTF-8", "MODE": "test"}


def test_specs_decode_from_configuration() -> None:
    raw = b"""[
        {"transport": "stdio", "name": "files", "command": "files-server", "args": ["--ro"],
         "inherit_env": ["LANG"], "prefix": "fs_", "restart": {"max_attempts": 3}},
        {"transport": "http", "url": "https://example.com/mcp",
         "headers": {"Authorization": "Bearer t"}, "requires_approval": "unless_read_only"}
    ]"""
    files, web = msgspec.json.decode(raw, type=list[mcp.ServerSpec])
    assert isinstance(files, mcp.StdioServer)
    assert (files.command, list(files.args), files.prefix) == ("files-server", ["--ro"], "fs_")
    assert files.restart == mcp.RestartPolicy(max_attempts=3)
    assert isinstance(web, mcp.HttpServer)
    assert web.headers == {"Authorization": "Bearer t"}
    assert web.requires_approval == "unless_read_only"


def test_failures_are_described_in_one_line() -> None:
    group = ExceptionGroup("x", [ExceptionGroup("y", [ConnectionError("refused")])])
    assert describe(group) == "ConnectionError: refused"
    assert describe(ExceptionGroup("x", [OSError("a"), ValueError()])) == "OSError: a; ValueError"


def test_a_server_gets_a_real_stderr_when_sys_stderr_is_not_a_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A notebook or a capturing harness replaces sys.stderr by an object with no descriptor,
    # which a subprocess cannot be given.
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert _our_stderr() is sys.__stderr__
    monkeypatch.setattr(sys, "__stderr__", None)
    assert _our_stderr() == subprocess.DEVNULL
