"""A scripted model read from a JSON file: ``agentloop run -m scripted:replies.json``.

For tests, demos and reproducing a session without a model: each model call plays the next
reply of the script (``agentloop.testing.ScriptedStream``). The file holds a list of replies,
or an object ``{"replies": [...], "chunk_size": 8, "delay": 0.0}``; a reply is an object with
any of::

    {"thinking": "...", "text": "...",
     "tool_calls": [{"name": "bash", "arguments": {"command": "ls"}, "id": "call_1"}],
     "error": "message", "kind": "network"}

(``error`` makes the call fail with that message and error kind). One script is played once per
process: every agent in the process that names the same file takes the next reply, so a
session resumed, or a second ACP session, goes on where the script is.

The ``scripted`` provider is registered by the ``agentloop`` command (``register_scripted``);
a program can register it too.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import msgspec

from agentloop import (
    AgentError,
    AssistantMessage,
    ErrorKind,
    ModelSpec,
    StopReason,
    Text,
    Thinking,
    ToolCall,
)
from agentloop.models import ResolvedModel, register_provider
from agentloop.testing import ScriptedStream, reply_error

__all__ = ["ScriptError", "load_script", "register_scripted"]


class ScriptError(AgentError, ValueError):
    """A script file cannot be read or does not describe replies."""


class _Call(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)
    id: str | None = None


class _Reply(msgspec.Struct, forbid_unknown_fields=True):
    text: str | None = None
    thinking: str | None = None
    tool_calls: list[_Call] = msgspec.field(default_factory=list)
    error: str | None = None
    kind: ErrorKind = ErrorKind.OTHER


class _Script(msgspec.Struct, forbid_unknown_fields=True):
    replies: list[_Reply]
    chunk_size: int = 8
    delay: float = 0.0


def _item(reply: _Reply, number: int) -> Any:
    if reply.error is not None:
        return reply_error(reply.kind, reply.error)
    content: list[Any] = []
    if reply.thinking:
        content.append(Thinking(thinking=reply.thinking))
    if reply.text:
        content.append(Text(text=reply.text))
    for index, call in enumerate(reply.tool_calls, 1):
        call_id = call.id or f"call_{number}_{index}"
        content.append(ToolCall(id=call_id, name=call.name, arguments=call.arguments))
    stop = StopReason.TOOL_USE if reply.tool_calls else StopReason.STOP
    return AssistantMessage(content=content, stop_reason=stop)


def load_script(path: str | Path) -> ScriptedStream:
    """A ``ScriptedStream`` playing the replies in the JSON file at ``path``.

    Raises:
        ScriptError: the file cannot be read or is not a script.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ScriptError(f"cannot read the script {path}: {exc.strerror or exc}") from None
    try:
        raw = msgspec.json.decode(data)
        if isinstance(raw, list):
            raw = {"replies": raw}
        script = msgspec.convert(raw, _Script)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ScriptError(f"{path} is not a script: {exc}") from None
    items = [_item(reply, number) for number, reply in enumerate(script.replies, 1)]
    return ScriptedStream(items, chunk_size=script.chunk_size, delay=script.delay)


_streams: dict[str, ScriptedStream] = {}
_lock = threading.Lock()


def _resolve(model_id: str) -> ResolvedModel:
    key = str(Path(model_id).resolve())
    with _lock:
        stream = _streams.get(key)
        if stream is None:
            stream = _streams[key] = load_script(key)
    return ResolvedModel(spec=ModelSpec(provider="scripted", model_id=model_id), stream_fn=stream)


def register_scripted() -> None:
    """Make ``scripted:<path to a JSON script>`` model strings resolve (see the module docs)."""
    register_provider("scripted", _resolve, replace=True)
