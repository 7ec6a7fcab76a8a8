"""Shared helpers for the policy tests: contexts for direct calls, and small tools for runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from agentloop import (
    AgentEvent,
    AgentMessage,
    AgentResult,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    Cost,
    ModelSpec,
    Text,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from agentloop.loop import AgentContext, AgentLoopConfig, run_loop
from agentloop.policy import DispatchContext, MessagesView, PolicyContext
from agentloop.testing import ScriptedStream

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

MODEL = ModelSpec(provider="p", model_id="m")


def policy_ctx(
    *,
    turn: int = 0,
    messages: list[AgentMessage] | None = None,
    new_messages: int | None = None,
    usage: Usage | None = None,
    cost: Cost | None = None,
    message: AssistantMessage | None = None,
    tool_results: list[ToolResultMessage] | None = None,
) -> PolicyContext:
    items = messages if messages is not None else []
    return PolicyContext(
        turn=turn,
        messages=MessagesView(items),
        new_messages=len(items) if new_messages is None else new_messages,
        usage=usage or Usage(),
        cost=cost or Cost(),
        model=MODEL,
        message=message,
        tool_results=tool_results,
    )


def dispatch_ctx(
    name: str, arguments: Any = None, *, tool: AgentTool | None = None, call_id: str = "c1"
) -> DispatchContext:
    call = ToolCall(id=call_id, name=name, arguments={} if arguments is None else arguments)
    return DispatchContext(
        call=call, tool=tool, batch=[call], turn=0, messages=MessagesView([]), model=MODEL
    )


def result(text: str, call_id: str = "c1", name: str = "t") -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=call_id, tool_name=name, content=[Text(text=text)])


async def run(
    script: list[Any],
    *,
    tools: list[AgentTool] | None = None,
    model: ModelSpec = MODEL,
    on_event: Callable[[AgentEvent], None] | None = None,
    prompt: str = "go",
    **options: Any,
) -> tuple[AgentResult, ScriptedStream]:
    """Run the real loop against a scripted model; ``options`` go to ``AgentLoopConfig``."""
    stream = ScriptedStream(script)
    config = AgentLoopConfig(model=model, stream_fn=stream, tools=tools or [], **options)
    result = await run_loop(
        [UserMessage.from_text(prompt)],
        AgentContext(system_prompt="test"),
        config,
        on_event=on_event,
    )
    return result, stream


def tool_results(result: AgentResult) -> list[ToolResultMessage]:
    return [m for m in result.messages if isinstance(m, ToolResultMessage)]


def seen_by_model(stream: ScriptedStream, call: int) -> str:
    """Everything the model was sent on its ``call``-th request, as one JSON text."""
    return msgspec.json.encode(stream.calls[call].context.messages).decode()


class Recorder:
    """A tool that records the arguments it ran with."""

    def __init__(self, name: str, *, reply: str = "ok", requires_approval: bool = False) -> None:
        self.name = name
        self.label = name
        self.description = f"the {name} tool"
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
        }
        self.requires_approval = requires_approval
        self.read_only = False
        self.reply = reply
        self.ran: list[Any] = []

    async def execute(self, call_id: str, arguments: Any, on_update: Any) -> AgentToolResult:
        self.ran.append(arguments)
        return AgentToolResult.text(self.reply)


def real(path: Path, *parts: str) -> str:
    """The resolved absolute form of ``path / parts`` (what a pinning sandbox passes on)."""
    return str(path.resolve().joinpath(*parts))
