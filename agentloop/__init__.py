"""agentloop: LLM agent loops on structured concurrency.

Runs under trio and asyncio (through anyio). Every tool call is a child task in its own cancel
scope; abort and steering are prompt and exact; no task outlives its run.

The top level holds what a user of ``Agent`` needs. The rest lives in public submodules:
``agentloop.loop`` (the loop without ``Agent``), ``agentloop.stream`` (the provider protocol),
``agentloop.policy``, ``agentloop.context``, ``agentloop.sessions``, ``agentloop.retry``,
``agentloop.models`` (model strings), ``agentloop.abc`` (every plug-in protocol) and
``agentloop.testing`` (fake providers).
"""

from . import abc, context, loop, models, multi, policy, retry, sessions, stream
from ._abc import AgentTool as AgentTool, Toolset as Toolset
from ._agent import Agent as Agent, AgentInput as AgentInput, SystemPrompt as SystemPrompt
from ._agent_checkpoint import Checkpoint as Checkpoint
from ._agent_queues import QueueMode as QueueMode
from ._codec import decode as decode, encode as encode
from ._errors import (
    Aborted as Aborted,
    AgentError as AgentError,
    AlreadyRunning as AlreadyRunning,
    ContextWindowOverflow as ContextWindowOverflow,
    ErrorKind as ErrorKind,
    HookFailed as HookFailed,
    InvalidContinue as InvalidContinue,
    MissingExtra as MissingExtra,
    ModelError as ModelError,
    ModelThrottled as ModelThrottled,
    NetworkError as NetworkError,
    NoMessages as NoMessages,
    SessionNotFound as SessionNotFound,
    StreamError as StreamError,
    StructuredOutputFailed as StructuredOutputFailed,
    ToolArgumentError as ToolArgumentError,
    UnknownModel as UnknownModel,
)
from ._events import (
    AgentEnd as AgentEnd,
    AgentEvent as AgentEvent,
    AgentStart as AgentStart,
    AgentToolResult as AgentToolResult,
    ContextCompacted as ContextCompacted,
    MessageEnd as MessageEnd,
    MessageStart as MessageStart,
    MessageUpdate as MessageUpdate,
    SessionWriteFailed as SessionWriteFailed,
    StreamRetry as StreamRetry,
    ToolExecutionEnd as ToolExecutionEnd,
    ToolExecutionStart as ToolExecutionStart,
    ToolExecutionUpdate as ToolExecutionUpdate,
    TurnEnd as TurnEnd,
    TurnEndReason as TurnEndReason,
    TurnStart as TurnStart,
)
from ._public import publish as _publish
from ._tools import (
    FunctionTool as FunctionTool,
    Tool as Tool,
    ToolContext as ToolContext,
    current_tool_context as current_tool_context,
    tool as tool,
)
from ._types import (
    AgentMessage as AgentMessage,
    AgentResult as AgentResult,
    AssistantMessage as AssistantMessage,
    ContentBlock as ContentBlock,
    Cost as Cost,
    CustomMessage as CustomMessage,
    Extension as Extension,
    Image as Image,
    LlmMessage as LlmMessage,
    ModelSpec as ModelSpec,
    Pricing as Pricing,
    StopReason as StopReason,
    StreamOptions as StreamOptions,
    Text as Text,
    Thinking as Thinking,
    ThinkingBudgets as ThinkingBudgets,
    ThinkingLevel as ThinkingLevel,
    ToolCall as ToolCall,
    ToolResultMessage as ToolResultMessage,
    Usage as Usage,
    UserMessage as UserMessage,
    extract_text as extract_text,
)

# The one place the version is written: the build (hatch) reads it from here.
__version__ = "0.2.0.dev0"

__all__ = [
    "Aborted",
    "Agent",
    "AgentEnd",
    "AgentError",
    "AgentEvent",
    "AgentInput",
    "AgentMessage",
    "AgentResult",
    "AgentStart",
    "AgentTool",
    "AgentToolResult",
    "AlreadyRunning",
    "AssistantMessage",
    "Checkpoint",
    "ContentBlock",
    "ContextCompacted",
    "ContextWindowOverflow",
    "Cost",
    "CustomMessage",
    "ErrorKind",
    "Extension",
    "FunctionTool",
    "HookFailed",
    "Image",
    "InvalidContinue",
    "LlmMessage",
    "MessageEnd",
    "MessageStart",
    "MessageUpdate",
    "MissingExtra",
    "ModelError",
    "ModelSpec",
    "ModelThrottled",
    "NetworkError",
    "NoMessages",
    "Pricing",
    "QueueMode",
    "SessionNotFound",
    "SessionWriteFailed",
    "StopReason",
    "StreamError",
    "StreamOptions",
    "StreamRetry",
    "StructuredOutputFailed",
    "SystemPrompt",
    "Text",
    "Thinking",
    "ThinkingBudgets",
    "ThinkingLevel",
    "Tool",
    "ToolArgumentError",
    "ToolCall",
    "ToolContext",
    "ToolExecutionEnd",
    "ToolExecutionStart",
    "ToolExecutionUpdate",
    "ToolResultMessage",
    "Toolset",
    "TurnEnd",
    "TurnEndReason",
    "TurnStart",
    "UnknownModel",
    "Usage",
    "UserMessage",
    "abc",
    "context",
    "current_tool_context",
    "decode",
    "encode",
    "extract_text",
    "loop",
    "models",
    "multi",
    "policy",
    "retry",
    "sessions",
    "stream",
    "tool",
]

_publish(__name__, globals(), __all__, force=True)

# Names that moved to a public submodule in 0.2, still reachable here for one release.
_MOVED: dict[str, tuple[str, str]] = {
    **{
        name: ("loop", name)
        for name in (
            "AgentContext",
            "AgentLoopConfig",
            "EventStream",
            "TransformContext",
            "agent_loop",
            "agent_loop_continue",
            "default_convert_to_llm",
            "run_loop",
        )
    },
    **{
        name: ("context", name)
        for name in (
            "Compaction",
            "EstimatingCounter",
            "SlidingWindow",
            "SummarizingCompactor",
            "TokenCounter",
            "compact_messages",
            "estimate_tokens",
        )
    },
    **{name: ("policy", name) for name in policy.__all__},
    **{name: ("retry", name) for name in retry.__all__},
    **{
        name: ("sessions", name)
        for name in (
            "JsonlSessionStore",
            "SessionInfo",
            "SessionRecorder",
            "SessionStore",
            "SqliteSessionStore",
            "repair_history",
        )
    },
    "resume_session": ("sessions", "load_session"),
    **{name: ("stream", name) for name in stream.__all__},
    "OnUpdate": ("abc", "OnUpdate"),
}


def __getattr__(name: str) -> object:
    moved = _MOVED.get(name)
    if moved is None:
        raise AttributeError(f"module 'agentloop' has no attribute {name!r}")
    module, new = moved
    import warnings

    warnings.warn(
        f"agentloop.{name} moved to agentloop.{module}.{new}; the old name will be removed",
        DeprecationWarning,
        stacklevel=2,
    )
    value: object = getattr(globals()[module], new)
    # One warning per name, then a plain attribute: an old name in a hot loop costs nothing
    # after its first use.
    globals()[name] = value
    return value
