"""An MCP server with every feature besides tools, for the tests: resources (subscribable),
prompts, completions, logging, and tools that ask the client things (sampling, elicitation,
roots) or return hostile results. Written with the SDK's own ``MCPServer``.

    python features_server.py            serve over stdio
    python features_server.py http       serve streamable HTTP on a free port (printed)

Its tools that ask the client work on both protocol eras: over the 2025 handshake they send the
client a request; on 2026-era connections, which have no server-to-client requests, they answer
with an ``InputRequiredResult`` and read the client's answers on the retried call.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import sys
from typing import Any

import anyio
from mcp.server import MCPServer, ServerRequestContext
from mcp.server.mcpserver import Context  # noqa: TC002 - read at run time by MCPServer
from mcp.server.mcpserver.prompts.base import AssistantMessage, UserMessage
from mcp.types import (
    Completion,
    CompletionArgument,
    CompletionContext,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    EmbeddedResource,
    EmptyResult,
    ImageContent,
    InputRequiredResult,
    ListRootsRequest,
    ListRootsResult,
    ModelHint,
    ModelPreferences,
    NotificationParams,
    PromptReference,
    ResourceLink,
    ResourceTemplateReference,
    SamplingMessage,
    SetLevelRequestParams,
    SubscribeRequestParams,
    TextContent,
    TextResourceContents,
    UnsubscribeRequestParams,
)

PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
mcp = MCPServer("features", log_level="WARNING")
NOTES = {"today": "buy milk"}
SUBSCRIBED: set[str] = set()
CANCELLED: dict[str, anyio.Event] = {}
LEVEL = ["info"]
FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "Ada"},
        "age": {"type": "integer", "default": 36},
        "colour": {"type": "string", "enum": ["red", "blue"]},
    },
    "required": ["colour"],
}


def _modern(ctx: Context) -> bool:
    return (ctx.protocol_version or "") >= "2026"


# ------------------------------------------------------------------ resources


@mcp.resource("notes://today", mime_type="text/plain")
def today() -> str:
    """Today's note."""
    return NOTES["today"]


@mcp.resource("notes://{day}/summary")
def summary(day: str) -> str:
    """The summary of a day."""
    return f"summary of {day}"


@mcp.resource("pictures://dot", mime_type="image/png")
def dot() -> bytes:
    """A one-pixel PNG."""
    return base64.b64decode(PNG_B64)


@mcp.tool()
async def edit_note(text: str, ctx: Context) -> str:
    """Change today's note; subscribers are told."""
    NOTES["today"] = text
    if _modern(ctx):
        await ctx.notify_resource_updated("notes://today")  # to subscriptions/listen streams
    elif "notes://today" in SUBSCRIBED:
        await ctx.session.send_resource_updated("notes://today")
    return "edited"


@mcp.tool()
def link() -> list[Any]:
    """A result that links to a resource instead of embedding it."""
    return [
        TextContent(type="text", text="see the note"),
        ResourceLink(
            type="resource_link", name="today", uri="notes://today", mime_type="text/plain"
        ),
    ]


# ------------------------------------------------------------------ prompts


@mcp.prompt(title="Review a file")
def review(path: str, focus: str = "bugs") -> list[Any]:
    """Review a file."""
    return [
        UserMessage(content=f"Review {path}, looking for {focus}."),
        UserMessage(
            content=EmbeddedResource(
                type="resource",
                resource=TextResourceContents(
                    uri=f"file://{path}", mime_type="text/plain", text="x = 1"
                ),
            )
        ),
        AssistantMessage(content="Send me the file."),
        UserMessage(content=ImageContent(type="image", data=PNG_B64, mime_type="image/png")),
    ]


@mcp.prompt()
def greet() -> str:
    """Say hello."""
    return "Hello!"


@mcp.completion()  # type: ignore[untyped-decorator,no-untyped-call]
async def complete(
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
) -> Completion:
    if isinstance(ref, PromptReference) and argument.name == "focus":
        options = ["bugs", "style", "speed"]
    elif isinstance(ref, ResourceTemplateReference) and argument.name == "day":
        options = ["monday", "tuesday"]
    else:
        options = []
    return Completion(values=[o for o in options if o.startswith(argument.value)])


# ------------------------------------------------------------------ asking the client


@mcp.tool()
async def ask_model(question: str, ctx: Context) -> Any:
    """Asks the client's model (sampling) and returns its answer."""
    params = CreateMessageRequestParams(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text=question))],
        max_tokens=5000,
        system_prompt="Be brief.",
        temperature=0.5,
        model_preferences=ModelPreferences(hints=[ModelHint(name="small")], speed_priority=1.0),
    )
    if _modern(ctx):
        answer = (ctx.input_responses or {}).get("q")
        if answer is None:
            return InputRequiredResult(input_requests={"q": CreateMessageRequest(params=params)})
        assert isinstance(answer, CreateMessageResult)
    else:
        answer = await ctx.session.create_message(
            messages=params.messages,
            max_tokens=params.max_tokens,
            system_prompt=params.system_prompt,
            temperature=params.temperature,
            model_preferences=params.model_preferences,
            related_request_id=ctx.request_id,
        )
    content = answer.content
    said = content.text if isinstance(content, TextContent) else content.type
    return f"{answer.model}: {said}"


@mcp.tool()
async def ask_user(ctx: Context) -> Any:
    """Asks the user to fill in a form (elicitation) and returns the answer as JSON."""
    params = ElicitRequestFormParams(message="Who are you?", requested_schema=FORM)
    if _modern(ctx):
        answer = (ctx.input_responses or {}).get("form")
        if answer is None:
            return InputRequiredResult(input_requests={"form": ElicitRequest(params=params)})
    else:
        answer = await ctx.session.elicit_form(
            message=params.message, requested_schema=FORM, related_request_id=ctx.request_id
        )
    assert isinstance(answer, ElicitResult)
    return json.dumps({"action": answer.action, "content": answer.content, "meta": answer.meta})


@mcp.tool()
async def ask_url(ctx: Context) -> str:
    """Sends the user to a URL (URL-mode elicitation; handshake era only)."""
    answer = await ctx.elicit_url("Sign in, please", "https://example.com/login", "login-1")
    if answer.action == "accept":
        await ctx.session.send_elicit_complete("login-1")
    return answer.action


@mcp.tool()
async def roots(ctx: Context) -> Any:
    """The client's roots, as JSON."""
    if _modern(ctx):
        answer = (ctx.input_responses or {}).get("roots")
        if answer is None:
            return InputRequiredResult(input_requests={"roots": ListRootsRequest()})
    else:
        answer = await ctx.session.list_roots()
    assert isinstance(answer, ListRootsResult)
    return json.dumps([{"uri": str(r.uri), "name": r.name} for r in answer.roots])


ROOTS_CHANGED = anyio.Event()


async def on_roots_changed(ctx: ServerRequestContext[Any], params: Any) -> None:
    global ROOTS_CHANGED
    ROOTS_CHANGED.set()
    ROOTS_CHANGED = anyio.Event()


@mcp.tool()
async def wait_roots_changed(ctx: Context) -> str:
    """Reports progress ("waiting"), then returns once the client says its roots changed."""
    changed = ROOTS_CHANGED
    await ctx.report_progress(1, message="waiting")
    await changed.wait()
    return "changed"


# ------------------------------------------------------------------ logging, cancellation


@mcp.tool()
async def chatty(ctx: Context) -> str:
    """Logs at three levels, then answers."""
    for level, text in (("debug", "dull detail"), ("info", "working"), ("error", "oh no")):
        await ctx.session.send_log_message(
            level=level, data=text, logger="chatty", related_request_id=ctx.request_id
        )
    return "done"


@mcp.tool()
async def sleepy(name: str, ctx: Context) -> str:
    """Reports progress once ("sleeping"), then sleeps until cancelled; remembers cancellations."""
    seen = CANCELLED.setdefault(name, anyio.Event())
    try:
        await ctx.report_progress(1, message="sleeping")
        await anyio.sleep_forever()
    finally:
        seen.set()
    return "unreachable"


@mcp.tool()
async def cancelled(name: str) -> bool:
    """Whether the sleepy call ``name`` was cancelled (waiting up to 10 s for it to be)."""
    seen = CANCELLED.setdefault(name, anyio.Event())
    with anyio.move_on_after(10):
        await seen.wait()
    return seen.is_set()


# ------------------------------------------------------------------ hostile results


@mcp.tool()
def flood(chars: int, blocks: int, error: bool = False) -> Any:
    """``blocks`` text blocks of ``chars`` characters in all (an error result if asked)."""
    each = max(1, chars // max(1, blocks))
    content: list[Any] = [TextContent(type="text", text="x" * each) for _ in range(blocks)]
    if error:
        from mcp.types import CallToolResult

        return CallToolResult(content=content, is_error=True)
    return content


@mcp.tool()
def bad_images() -> list[Any]:
    """Images a provider would refuse: bad base64, a wrong media type, lying data, and a good one."""
    return [
        ImageContent(type="image", data="not base64!!", mime_type="image/png"),
        ImageContent(type="image", data=PNG_B64, mime_type="image/x-icon"),
        ImageContent(
            type="image", data=base64.b64encode(b"GIF89a....").decode(), mime_type="image/png"
        ),
        ImageContent(type="image", data=PNG_B64, mime_type="image/png"),
    ]


# ------------------------------------------------------------------ low-level handlers


async def on_set_level(
    ctx: ServerRequestContext[Any], params: SetLevelRequestParams
) -> EmptyResult:
    LEVEL[0] = params.level
    return EmptyResult()


async def on_subscribe(
    ctx: ServerRequestContext[Any], params: SubscribeRequestParams
) -> EmptyResult:
    SUBSCRIBED.add(str(params.uri))
    return EmptyResult()


async def on_unsubscribe(
    ctx: ServerRequestContext[Any], params: UnsubscribeRequestParams
) -> EmptyResult:
    SUBSCRIBED.discard(str(params.uri))
    return EmptyResult()


@mcp.tool()
def pid() -> int:
    """This server's process id."""
    return os.getpid()


@mcp.tool()
def state() -> dict[str, Any]:
    """What the client set: the log level and the subscriptions."""
    return {"level": LEVEL[0], "subscribed": sorted(SUBSCRIBED)}


low = mcp._lowlevel_server
low.add_request_handler("logging/setLevel", SetLevelRequestParams, on_set_level)
low.add_request_handler("resources/subscribe", SubscribeRequestParams, on_subscribe)
low.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, on_unsubscribe)
low.add_notification_handler(
    "notifications/roots/list_changed", NotificationParams, on_roots_changed
)


def serve_http() -> None:
    import uvicorn

    app: Any = mcp.streamable_http_app(host="127.0.0.1")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    print(listener.getsockname()[1], flush=True)  # once it listens: no polling in the tests
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    anyio.run(uvicorn.Server(config).serve, [listener])


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        serve_http()
    else:
        mcp.run()
