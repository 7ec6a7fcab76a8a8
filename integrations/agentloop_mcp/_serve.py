"""The other direction: agentloop tools served to any MCP client.

``build_server(tools)`` makes an MCP SDK low-level ``Server`` whose tools are the given
``AgentTool``s; ``serve(tools)`` runs one over stdio (the default: a host starts this program)
or streamable HTTP. Each tool keeps its name, label, description and JSON Schema; ``read_only``
becomes the ``readOnlyHint`` annotation. Arguments are checked against the schema (or by the
tool's ``validate_arguments``) before the tool runs, and a mismatch is an error result the
client's model can read. A tool's progress updates become progress notifications, its result
content MCP content blocks (text, images), its ``details`` the ``structuredContent`` (an object,
or ``{"result": value}``), and an error result (or an exception) an ``isError`` result.

A tool with ``requires_approval`` runs only if the ``approval`` callback approves the call
(``ApprovedWith`` replaces its arguments); without a callback such tools are refused: nothing
here can ask a human.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import uuid
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import anyio
import anyio.from_thread
import msgspec
from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp_types import MISSING_REQUIRED_CLIENT_CAPABILITY

from agentloop import (
    AgentTool,
    AgentToolResult,
    Text,
    ToolArgumentError,
    ToolCall,
)
from agentloop.policy import ApprovedWith, Rejected

from ._content import to_mcp_blocks
from ._serve_client import (
    InputRequired,
    InvalidAnswer,
    MissingCapability,
    ServedClient,
    serving,
)
from ._serve_content import ContentHandlers, connection_of, served_client

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from agentloop.abc import ApprovalCallback

    from ._served import ServedPrompt, ServedResource

__all__ = ["build_server", "serve"]

log = logging.getLogger("agentloop.mcp.serve")

_PROGRESS_BUFFER = 64
_Progress: TypeAlias = tuple[str, float | None, float | None]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def _validator(tool: AgentTool) -> Callable[[Any], Any]:
    custom = getattr(tool, "validate_arguments", None)
    if custom is not None:
        return custom  # type: ignore[no-any-return]
    import fastjsonschema

    try:
        compiled = fastjsonschema.compile(tool.parameters)
    except Exception:
        # A schema the validator cannot compile (a JSON Schema 2020-12 one, say) is left to
        # the tool to enforce, as the client side does.
        log.warning("tool %s: its input schema cannot be compiled; not checked", tool.name)
        return lambda arguments: arguments

    def validate(arguments: Any) -> Any:
        try:
            return compiled(arguments)
        except fastjsonschema.JsonSchemaValueException as exc:
            raise ToolArgumentError(str(exc.message)) from None

    return validate


def to_mcp_result(result: AgentToolResult) -> types.CallToolResult:
    """Translate an ``AgentToolResult`` into a ``CallToolResult``."""
    content = to_mcp_blocks(result.content)
    structured: dict[str, Any] | None = None
    if result.details is not None:
        try:
            value = msgspec.to_builtins(result.details)
        except (TypeError, ValueError):
            value = None
        if isinstance(value, dict):
            structured = value
        elif value is not None:
            structured = {"result": value}
    return types.CallToolResult(
        content=content, structured_content=structured, is_error=result.is_error
    )


def _describe_tool(tool: AgentTool) -> types.Tool:
    annotations = types.ToolAnnotations(read_only_hint=True) if tool.read_only else None
    return types.Tool(
        name=tool.name,
        title=tool.label if tool.label and tool.label != tool.name else None,
        description=tool.description or None,
        input_schema=tool.parameters,
        annotations=annotations,
    )


def build_server(
    tools: Iterable[AgentTool],
    *,
    name: str = "agentloop",
    version: str = "",
    instructions: str | None = None,
    approval: ApprovalCallback | None = None,
    resources: Sequence[ServedResource] = (),
    prompts: Sequence[ServedPrompt] = (),
) -> Server[Any]:
    """An MCP low-level ``Server`` offering ``tools``, ``resources`` and ``prompts``.

    Deploy it yourself (``server.streamable_http_app()`` is an ASGI app) or use ``serve``.

    Args:
        tools: the tools to offer; their names must be unique.
        name: the server's name, reported to clients.
        version: the server's version, reported to clients.
        instructions: text a client may show its model about how to use the server.
        approval: decides on calls to tools with ``requires_approval``.
        resources: resources and resource templates to offer (``agentloop_mcp.resource``).
        prompts: prompts to offer (``agentloop_mcp.prompt``); their names must be unique.

    Returns:
        The server.

    Raises:
        ValueError: two tools, or two prompts, have the same name.
    """
    by_name: dict[str, AgentTool] = {}
    for tool in tools:
        if tool.name in by_name:
            raise ValueError(f"two tools are named {tool.name!r}")
        by_name[tool.name] = tool
    content = ContentHandlers(resources, prompts)
    listing = types.ListToolsResult(tools=[_describe_tool(t) for t in by_name.values()])
    validators = {tool_name: _validator(tool) for tool_name, tool in by_name.items()}

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return listing

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        tool = by_name.get(params.name)
        if tool is None:
            return _error(f"unknown tool {params.name!r}; available: {', '.join(by_name)}")
        arguments: Any = params.arguments or {}
        call_id = f"mcp-{ctx.request_id if ctx.request_id is not None else uuid.uuid4().hex}"
        if tool.requires_approval:
            if approval is None:
                return _error(f"tool {tool.name!r} needs approval, and this server cannot ask")
            call = ToolCall(id=call_id, name=tool.name, arguments=arguments)
            try:
                decision = await approval(call, tool)
            except Exception as exc:
                log.exception("approval callback raised for %s", tool.name)
                return _error(f"tool call rejected: approval failed: {type(exc).__name__}")
            if isinstance(decision, Rejected):
                return _error(f"tool call rejected: {decision.reason}")
            if isinstance(decision, ApprovedWith):
                arguments = decision.arguments
        try:
            validated = validators[tool.name](arguments)
        except ToolArgumentError as exc:
            return _error(f"invalid arguments for tool {tool.name!r}: {exc}")
        client = served_client(ctx, params, content.levels.get(connection_of(ctx)))
        return await _run(ctx, tool, call_id, validated, client)

    server: Server[Any] = Server(
        name,
        version=version,
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        **content.server_options(),
    )
    # The 2026 multi-round state travels sealed (AES-GCM with a key of this process): a
    # client can echo it, not forge it.
    server.middleware.append(
        RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=name)
    )
    # Registered after construction: the SDK's constructor warns that logging is deprecated
    # for 2026-era connections, but handshake-era clients still set their level with it.
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, content.set_level)
    return server


async def _run(
    ctx: ServerRequestContext[Any],
    tool: AgentTool,
    call_id: str,
    arguments: Any,
    client: ServedClient,
) -> types.CallToolResult | types.InputRequiredResult:
    """Run one tool, forwarding its progress updates as they come; ``current_client()`` is
    ``client`` while it runs."""
    serving(client)
    send, receive = anyio.create_memory_object_stream[_Progress](_PROGRESS_BUFFER)
    loop_thread = threading.get_ident()

    def on_update(update: AgentToolResult | str) -> None:
        progress: _Progress
        if isinstance(update, str):
            progress = (update, None, None)
        else:
            # ``details`` may say how far along the tool is: {"progress": 50, "total": 100}.
            details = update.details if isinstance(update.details, dict) else {}
            progress = (
                "".join(b.text for b in update.content if isinstance(b, Text)),
                _number(details.get("progress")),
                _number(details.get("total")),
            )
        try:
            if threading.get_ident() == loop_thread:
                send.send_nowait(progress)
            else:
                anyio.from_thread.run_sync(send.send_nowait, progress)
        except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # progress is best effort: a full buffer or a finished call drops it
        except RuntimeError:
            log.debug("progress from a thread anyio does not know was dropped")

    async def forward() -> None:
        step = 0.0
        async with receive:
            async for text, progress, total in receive:
                step = progress if progress is not None else step + 1
                await ctx.session.report_progress(step, total, text or None)

    result: types.CallToolResult
    missing: MissingCapability | None = None
    asked: types.InputRequiredResult | None = None
    invalid: InvalidAnswer | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(forward)
        try:
            with send:
                outcome = await tool.execute(call_id, arguments, on_update)
            result = to_mcp_result(outcome)
        except MissingCapability as exc:
            missing = exc
            result = _error(str(exc))
        except InputRequired as needed:
            # 2026: the client answers, then calls again (the tool runs from the start).
            state = json.dumps(needed.state)
            requests: Any = {needed.key: needed.request}
            asked = types.InputRequiredResult(input_requests=requests, request_state=state)
        except InvalidAnswer as exc:
            invalid = exc
            result = _error(str(exc))
        except Exception as exc:
            log.warning("tool %s raised", tool.name, exc_info=True)
            result = _error(f"tool {tool.name!r} failed: {type(exc).__name__}: {exc}")
    if asked is not None:
        return asked
    if invalid is not None:
        raise MCPError(types.INVALID_PARAMS, str(invalid))
    if missing is not None:
        # A protocol error, not a tool result: the client must learn what it lacks. Raised
        # here, outside the task group, so that it reaches the SDK as itself.
        required: dict[str, Any] = {name: {} for name in missing.capabilities}
        raise MCPError(
            MISSING_REQUIRED_CLIENT_CAPABILITY,
            str(missing),
            data={"requiredCapabilities": required},
        )
    return result


async def serve(
    tools: Iterable[AgentTool],
    *,
    transport: Literal["stdio", "streamable-http"] = "stdio",
    name: str = "agentloop",
    version: str = "",
    instructions: str | None = None,
    approval: ApprovalCallback | None = None,
    resources: Sequence[ServedResource] = (),
    prompts: Sequence[ServedPrompt] = (),
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve ``tools`` to MCP clients until cancelled (or, over stdio, until stdin closes).

    Over stdio this process's stdout carries the protocol: log to stderr. Streamable HTTP runs
    uvicorn, which needs the asyncio backend (``anyio.run(main)`` uses it by default).

    Args:
        tools: the tools to offer (see ``build_server``).
        transport: ``"stdio"`` or ``"streamable-http"``.
        name: the server's name, reported to clients.
        version: the server's version.
        instructions: text a client may show its model.
        approval: decides on calls to tools with ``requires_approval``.
        resources: resources and resource templates to offer.
        prompts: prompts to offer.
        host: the address to listen on (HTTP).
        port: the port to listen on (HTTP); 0 picks a free one.
        path: the MCP endpoint's path (HTTP).
        on_ready: called with the endpoint's URL once the HTTP server listens.

    Raises:
        ValueError: an unknown transport, or two tools with the same name.
        OSError: the address cannot be listened on.
    """
    server = build_server(
        tools,
        name=name,
        version=version,
        instructions=instructions,
        approval=approval,
        resources=resources,
        prompts=prompts,
    )
    if transport == "stdio":
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        return
    if transport != "streamable-http":
        raise ValueError(f"unknown transport {transport!r}")
    import uvicorn

    app = server.streamable_http_app(streamable_http_path=path, host=host)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    with listener:
        listener.bind((host, port))
        listener.listen(128)
        bound = listener.getsockname()[1]
        config = uvicorn.Config(app, host=host, port=bound, log_level="warning")
        if on_ready is not None:
            shown = f"[{host}]" if family == socket.AF_INET6 else host
            on_ready(f"http://{shown}:{bound}{path}")
        await uvicorn.Server(config).serve(sockets=[listener])
