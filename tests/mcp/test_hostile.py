"""Hostile servers: huge results, floods of blocks and broken images are bounded (configurable,
with a marker saying what was cut); tools that can only be called as tasks are not offered."""

from __future__ import annotations

import base64

import msgspec
import pytest
from mcp import types

import agentloop as al
import agentloop_mcp as mcp
from agentloop_mcp._content import check_image
from agentloop_mcp._tool import build_tools, to_agent_result

from ._helpers import PNG_B64, call, features_spec, text

pytestmark = pytest.mark.anyio


async def test_a_20_mb_text_and_a_5_mb_error_are_cut_to_the_limit_with_a_marker() -> None:
    async with mcp.open_toolset(features_spec()) as server:
        huge = await call(server, "flood", chars=20_000_000, blocks=1)
        error = await call(server, "flood", chars=5_000_000, blocks=1, error=True)
    kept, marker = huge.content
    assert isinstance(kept, al.Text) and kept.text == "x" * 100_000
    assert marker == al.Text(
        text="[result cut by the MCP client: text cut to 100,000 of 20,000,000 characters]"
    )
    assert huge.details["truncated"] == {"text_chars": 20_000_000, "text_chars_kept": 100_000}
    assert error.is_error
    assert len(text(error)) < 100_200
    assert error.details["truncated"]["text_chars"] == 5_000_000


async def test_50000_blocks_become_the_block_limit_and_a_marker() -> None:
    limits = mcp.ResultLimits(max_blocks=20, max_text=1_000)
    async with mcp.open_toolset(features_spec(limits=limits)) as server:
        flood = await call(server, "flood", chars=50_000, blocks=50_000)
    assert len(flood.content) == 21
    assert flood.content[-1] == al.Text(
        text="[result cut by the MCP client: 49,980 of 50,000 blocks left out]"
    )
    assert flood.details["truncated"] == {"blocks": 50_000, "blocks_kept": 20}


async def test_images_a_provider_would_refuse_are_left_out_with_the_reason() -> None:
    async with mcp.open_toolset(features_spec()) as server:
        result = await call(server, "bad_images")
    assert result.content == [
        al.Text(text="[image left out: its data is not valid base64]"),
        al.Text(text="[image left out: media type 'image/x-icon' is not allowed]"),
        al.Text(text="[image left out: its data is not a image/png image]"),
        al.Image(media_type="image/png", data=PNG_B64),
    ]
    assert len(result.details["truncated"]["images_left_out"]) == 3


def test_image_checks() -> None:
    limits = mcp.ResultLimits(max_image_bytes=100)
    webp = base64.b64encode(b"RIFF\x00\x00\x00\x00WEBPVP8 ").decode()
    assert check_image(webp, "image/webp", limits) is None
    assert check_image(PNG_B64, "image/png", limits) is None
    big = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"0" * 200).decode()
    assert check_image(big, "image/png", limits) == "larger than 100 bytes"
    only_gif = mcp.ResultLimits(image_types=["image/gif"])
    assert check_image(PNG_B64, "image/png", only_gif) == "media type 'image/png' is not allowed"


def test_structured_content_too_large_is_left_out_of_details() -> None:
    result = types.CallToolResult(
        content=[types.TextContent(type="text", text="ok")],
        structured_content={"blob": "y" * 2_000},
    )
    limits = mcp.ResultLimits(max_structured_bytes=1_000)
    mapped = to_agent_result(result, server="s", tool="t", limits=limits)
    assert "structured_content" not in mapped.details
    assert mapped.details["structured_content_left_out"] == len(
        msgspec.json.encode({"blob": "y" * 2_000})
    )


class FakeToolset:
    name = "fake"


def test_a_tool_that_needs_task_augmentation_is_not_offered() -> None:
    schema = {"type": "object", "properties": {}}
    listed = [
        types.Tool(name="plain", input_schema=schema),
        types.Tool(
            name="research",
            input_schema=schema,
            execution=types.ToolExecution(task_support="required"),
        ),
        types.Tool(
            name="either",
            input_schema=schema,
            execution=types.ToolExecution(task_support="optional"),
        ),
    ]
    spec = mcp.StdioServer(command="server")
    built = build_tools(FakeToolset(), spec, listed, ())  # type: ignore[arg-type]
    assert [t.name for t in built] == ["plain", "either"]
