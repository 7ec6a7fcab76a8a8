"""Resources, prompts, completions and ping against a real server (features_server.py), in both
protocol eras (the 2025-11-25 handshake and the 2026-07-28 protocol), on both backends."""

from __future__ import annotations

import anyio
import pytest

import agentloop as al
import agentloop_mcp as mcp

from ._helpers import (
    ERAS,
    PNG_B64,
    Events,
    Mode,
    call,
    features_spec,
    kill9,
    server_pid,
    text,
    tool_named,
)

pytestmark = pytest.mark.anyio


@ERAS
async def test_resources_are_listed_read_and_attached_as_content_blocks(mode: Mode) -> None:
    async with mcp.open_toolset(features_spec(mode)) as server:
        resources = await server.list_resources()
        assert [(r.uri, r.name, r.mime_type) for r in resources] == [
            ("notes://today", "today", "text/plain"),
            ("pictures://dot", "dot", "image/png"),
        ]
        assert {r.server for r in resources} == {"features"}
        (template,) = await server.list_resource_templates()
        assert (template.uri_template, template.name) == ("notes://{day}/summary", "summary")

        assert await server.read_resource("notes://today") == [
            mcp.ResourceContents(uri="notes://today", mime_type="text/plain", text="buy milk")
        ]
        assert await server.resource_blocks("notes://monday/summary") == [
            al.Text(text="summary of monday")
        ]
        # A binary image resource is an image block a model can look at.
        assert await server.resource_blocks("pictures://dot") == [
            al.Image(media_type="image/png", data=PNG_B64)
        ]
        message = await server.attach_resource("notes://today", "What does this say?")
        assert message.content == [al.Text(text="What does this say?"), al.Text(text="buy milk")]

        with pytest.raises(mcp.RequestFailed) as failed:
            await server.read_resource("notes://nowhere")
        assert failed.value.method == "resources/read"
        assert failed.value.server == "features"

        # Completions, for a template's argument.
        assert await server.complete(template, "day", "tu") == ["tuesday"]
        assert await server.ping() >= 0


@ERAS
async def test_prompts_render_into_agent_messages_with_arguments_checked(mode: Mode) -> None:
    async with mcp.open_toolset(features_spec(mode)) as server:
        prompts = {p.name: p for p in await server.list_prompts()}
        assert set(prompts) == {"review", "greet"}
        review = prompts["review"]
        assert review.title == "Review a file"
        assert review.arguments == [
            mcp.PromptArgument(name="path", required=True),
            mcp.PromptArgument(name="focus", required=False),
        ]

        rendered = await server.get_prompt("review", {"path": "a.py", "focus": "style"})
        # Consecutive user messages are joined; roles alternate as providers want them.
        assert [type(m) for m in rendered.messages] == [
            al.UserMessage,
            al.AssistantMessage,
            al.UserMessage,
        ]
        first, second, third = rendered.messages
        assert isinstance(first, al.UserMessage)
        assert first.content == [
            al.Text(text="Review a.py, looking for style."),
            al.Text(text="x = 1"),
        ]
        assert isinstance(second, al.AssistantMessage)
        assert second.content == [al.Text(text="Send me the file.")]
        assert isinstance(third, al.UserMessage)
        assert third.content == [al.Image(media_type="image/png", data=PNG_B64)]
        assert rendered.truncated is None

        # Arguments are checked before anything is sent.
        with pytest.raises(mcp.PromptArgumentError, match="missing required argument"):
            await server.get_prompt("review", {})
        with pytest.raises(mcp.PromptArgumentError, match="unknown argument"):
            await server.get_prompt("review", {"path": "a.py", "colour": "red"})
        with pytest.raises(mcp.PromptArgumentError, match="must be a string"):
            await server.get_prompt("review", {"path": 3})
        with pytest.raises(mcp.PromptArgumentError, match="no such prompt"):
            await server.get_prompt("nope")

        assert await server.complete(review, "focus", "s") == ["style", "speed"]


@ERAS
async def test_prompts_are_commands_for_a_user_interface(mode: Mode) -> None:
    async with mcp.open_group() as group:
        await group.connect(features_spec(mode))
        commands = {c.name: c for c in await group.prompt_commands()}
        assert set(commands) == {"mcp__features__review", "mcp__features__greet"}
        review = commands["mcp__features__review"]
        assert (review.description, review.hint) == ("Review a file", "<path> [focus]")
        assert review.parse('src/a.py focus="speed and style"') == {
            "path": "src/a.py",
            "focus": "speed and style",
        }
        assert review.parse("focus=bugs path=b.py") == {"focus": "bugs", "path": "b.py"}
        with pytest.raises(mcp.PromptArgumentError, match="more values than arguments"):
            review.parse("a b c")

        rendered = await group.run_command("mcp__features__review", "a.py")
        first = rendered.messages[0]
        assert isinstance(first, al.UserMessage)
        assert first.content[0] == al.Text(text="Review a.py, looking for bugs.")
        greeting = await group.run_command("mcp__features__greet")
        (hello,) = greeting.messages
        assert isinstance(hello, al.UserMessage)
        assert hello.content == [al.Text(text="Hello!")]
        with pytest.raises(mcp.PromptArgumentError, match="no open MCP server"):
            await group.run_command("mcp__other__thing")


@ERAS
async def test_resource_links_are_resolved_on_request_and_by_the_opt_in_tool(mode: Mode) -> None:
    async with mcp.open_toolset(features_spec(mode, prefix="f_")) as plain:
        # Without the option there is no read_resource tool.
        assert "f_read_resource" not in {t.name for t in plain.get_tools()}
        linked = await call(plain, "f_link")
        # The link is named, not silently read.
        assert text(linked) == "see the note[resource: today <notes://today>]"
        assert linked.details["resource_links"] == [
            {"uri": "notes://today", "name": "today", "mime_type": "text/plain"}
        ]
        resolved = await plain.resolve_links(linked)
        assert text(resolved).endswith("[resource notes://today:]buy milk")

    async with mcp.open_toolset(features_spec(mode, prefix="f_", resource_tool=True)) as server:
        reader = {t.name: t for t in server.get_tools()}["f_read_resource"]
        assert reader.read_only and "features" in reader.description
        result = await reader.execute("r", {"uri": "notes://today"}, lambda u: None)
        assert (text(result), result.is_error) == ("buy milk", False)
        missing = await reader.execute("r", {"uri": "notes://nowhere"}, lambda u: None)
        assert missing.is_error
        assert "resources/read" in text(missing)


@ERAS
async def test_subscribed_resources_report_their_updates(mode: Mode) -> None:
    events = Events()
    legacy = mode == "legacy"
    async with mcp.open_toolset(features_spec(mode), on_event=events) as server:
        async with server.watch_resource("notes://today") as updates:
            state = await call(server, "state")
            # Handshake era: resources/subscribe; 2026: a subscriptions/listen stream.
            subscribed = ["notes://today"] if legacy else []
            assert state.details["structured_content"]["subscribed"] == subscribed
            await call(server, "edit_note", text="buy bread")
            with anyio.fail_after(20):
                update = await updates.receive()
            assert update == mcp.ResourceUpdated(server="features", uri="notes://today")
            assert await server.read_resource(update.uri) == [
                mcp.ResourceContents(uri="notes://today", mime_type="text/plain", text="buy bread")
            ]
        # Leaving the block unsubscribes.
        state = await call(server, "state")
        assert state.details["structured_content"]["subscribed"] == []
    assert events.of(mcp.ResourceUpdated) == [update]


async def test_a_server_without_resources_or_prompts_lists_none() -> None:
    from ._helpers import stdio_spec

    async with mcp.open_toolset(stdio_spec(mode="legacy")) as server:
        assert await server.list_resources() == []
        assert await server.list_prompts() == []
        assert await server.prompt_commands() == []
        with pytest.raises(mcp.RequestFailed, match="no subscriptions"):
            async with server.watch_resource("x://y"):
                pass
        assert tool_named(server, "echo").name == "echo"


async def test_subscriptions_and_the_log_level_are_renewed_after_a_restart() -> None:
    events = Events()
    spec = features_spec("legacy", log_level="error")
    async with mcp.open_toolset(spec, on_event=events) as server:
        async with server.watch_resource("notes://today") as updates:
            kill9(await server_pid(server))
            await events.wait_for(mcp.ServerConnected, count=2)  # restarted
            state = (await call(server, "state")).details["structured_content"]
            assert state == {"level": "error", "subscribed": ["notes://today"]}
            await call(server, "edit_note", text="after the crash")
            with anyio.fail_after(20):
                update = await updates.receive()
        assert update.uri == "notes://today"
