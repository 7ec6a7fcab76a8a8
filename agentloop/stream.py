"""The provider protocol: what a ``StreamFn`` receives and the events it yields.

A provider turns one request (``LlmContext``: system prompt, messages, tool schemas) into a
stream of ``AssistantMessageEvent``s: start/delta/end per content block (text, thinking, tool
call), closed by ``Done`` or ``ErrorEvent`` (with a classified ``ErrorKind``). One
``Accumulator`` turns such a stream into an ``AssistantMessage``; providers never build messages
themselves. ``agentloop.testing.check_stream_fn`` checks a provider against this contract.
"""

from ._abc import StreamFn as StreamFn
from ._public import publish
from ._stream import (
    Accumulator as Accumulator,
    AssistantMessageEvent as AssistantMessageEvent,
    Done as Done,
    ErrorEvent as ErrorEvent,
    ExtensionBlock as ExtensionBlock,
    StreamStart as StreamStart,
    TextDelta as TextDelta,
    TextEnd as TextEnd,
    TextStart as TextStart,
    ThinkingDelta as ThinkingDelta,
    ThinkingEnd as ThinkingEnd,
    ThinkingStart as ThinkingStart,
    ToolCallDelta as ToolCallDelta,
    ToolCallEnd as ToolCallEnd,
    ToolCallStart as ToolCallStart,
)
from ._types import LlmContext as LlmContext, MessageLog as MessageLog, ToolSchema as ToolSchema

__all__ = [
    "Accumulator",
    "AssistantMessageEvent",
    "Done",
    "ErrorEvent",
    "ExtensionBlock",
    "LlmContext",
    "MessageLog",
    "StreamFn",
    "StreamStart",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "ThinkingDelta",
    "ThinkingEnd",
    "ThinkingStart",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolSchema",
]

publish(__name__, globals(), __all__, force=False)
del publish
