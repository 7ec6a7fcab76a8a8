"""agentloop: LLM agent loops on structured concurrency.

Runs under trio and asyncio (through anyio). Every tool call is a child task in its own cancel
scope; abort and steering are prompt and exact; no task outlives its run.
"""

from ._codec import decode as decode
from ._codec import encode as encode
from ._errors import (
    Aborted as Aborted,
)
from ._errors import (
    AgentError as AgentError,
)
from ._errors import (
    AlreadyRunning as AlreadyRunning,
)
from ._errors import (
    ContextWindowOverflow as ContextWindowOverflow,
)
from ._errors import (
    InvalidContinue as InvalidContinue,
)
from ._errors import (
    ModelError as ModelError,
)
from ._errors import (
    ModelThrottled as ModelThrottled,
)
from ._errors import (
    NetworkError as NetworkError,
)
from ._errors import (
    NoMessages as NoMessages,
)
from ._errors import (
    StreamError as StreamError,
)
from ._errors import (
    StructuredOutputFailed as StructuredOutputFailed,
)
from ._events import (
    AgentEnd as AgentEnd,
)
from ._events import (
    AgentEvent as AgentEvent,
)
from ._events import (
    AgentStart as AgentStart,
)
from ._events import (
    AgentToolResult as AgentToolResult,
)
from ._events import (
    ContextCompacted as ContextCompacted,
)
from ._events import (
    MessageEnd as MessageEnd,
)
from ._events import (
    MessageStart as MessageStart,
)
from ._events import (
    MessageUpdate as MessageUpdate,
)
from ._events import (
    StreamRetry as StreamRetry,
)
from ._events import (
    ToolExecutionEnd as ToolExecutionEnd,
)
from ._events import (
    ToolExecutionStart as ToolExecutionStart,
)
from ._events import (
    ToolExecutionUpdate as ToolExecutionUpdate,
)
from ._events import (
    TurnEnd as TurnEnd,
)
from ._events import (
    TurnEndReason as TurnEndReason,
)
from ._events import (
    TurnStart as TurnStart,
)
from ._policy import (
    ALLOW as ALLOW,
)
from ._policy import (
    APPROVED as APPROVED,
)
from ._policy import (
    CONTINUE as CONTINUE,
)
from ._policy import (
    Allow as Allow,
)
from ._policy import (
    ApprovalCallback as ApprovalCallback,
)
from ._policy import (
    ApprovalDecision as ApprovalDecision,
)
from ._policy import (
    Approved as Approved,
)
from ._policy import (
    ApprovedWith as ApprovedWith,
)
from ._policy import (
    Continue as Continue,
)
from ._policy import (
    DispatchContext as DispatchContext,
)
from ._policy import (
    DispatchVerdict as DispatchVerdict,
)
from ._policy import (
    Inject as Inject,
)
from ._policy import (
    MessagesView as MessagesView,
)
from ._policy import (
    PolicyContext as PolicyContext,
)
from ._policy import (
    PolicyVerdict as PolicyVerdict,
)
from ._policy import (
    PostLoopPolicy as PostLoopPolicy,
)
from ._policy import (
    PostTurnPolicy as PostTurnPolicy,
)
from ._policy import (
    PreDispatchPolicy as PreDispatchPolicy,
)
from ._policy import (
    PreTurnPolicy as PreTurnPolicy,
)
from ._policy import (
    Rejected as Rejected,
)
from ._policy import (
    Replace as Replace,
)
from ._policy import (
    Rewrite as Rewrite,
)
from ._policy import (
    Skip as Skip,
)
from ._policy import (
    Stop as Stop,
)
from ._retry import (
    ExponentialBackoff as ExponentialBackoff,
)
from ._retry import (
    NoRetry as NoRetry,
)
from ._retry import (
    RetryStrategy as RetryStrategy,
)
from ._stream import (
    Accumulator as Accumulator,
)
from ._stream import (
    AssistantMessageEvent as AssistantMessageEvent,
)
from ._stream import (
    Done as Done,
)
from ._stream import (
    ErrorEvent as ErrorEvent,
)
from ._stream import (
    ExtensionBlock as ExtensionBlock,
)
from ._stream import (
    StreamFn as StreamFn,
)
from ._stream import (
    StreamStart as StreamStart,
)
from ._stream import (
    TextDelta as TextDelta,
)
from ._stream import (
    TextEnd as TextEnd,
)
from ._stream import (
    TextStart as TextStart,
)
from ._stream import (
    ThinkingDelta as ThinkingDelta,
)
from ._stream import (
    ThinkingEnd as ThinkingEnd,
)
from ._stream import (
    ThinkingStart as ThinkingStart,
)
from ._stream import (
    ToolCallDelta as ToolCallDelta,
)
from ._stream import (
    ToolCallEnd as ToolCallEnd,
)
from ._stream import (
    ToolCallStart as ToolCallStart,
)
from ._tools import (
    AgentTool as AgentTool,
)
from ._tools import (
    FunctionTool as FunctionTool,
)
from ._tools import (
    OnUpdate as OnUpdate,
)
from ._tools import (
    Tool as Tool,
)
from ._tools import (
    ToolArgumentError as ToolArgumentError,
)
from ._tools import (
    ToolContext as ToolContext,
)
from ._tools import (
    tool as tool,
)
from ._types import (
    AgentContext as AgentContext,
)
from ._types import (
    AgentMessage as AgentMessage,
)
from ._types import (
    AgentResult as AgentResult,
)
from ._types import (
    AssistantMessage as AssistantMessage,
)
from ._types import (
    ContentBlock as ContentBlock,
)
from ._types import (
    Cost as Cost,
)
from ._types import (
    CustomMessage as CustomMessage,
)
from ._types import (
    ErrorKind as ErrorKind,
)
from ._types import (
    Extension as Extension,
)
from ._types import (
    Image as Image,
)
from ._types import (
    LlmContext as LlmContext,
)
from ._types import (
    LlmMessage as LlmMessage,
)
from ._types import (
    ModelSpec as ModelSpec,
)
from ._types import (
    Pricing as Pricing,
)
from ._types import (
    StopReason as StopReason,
)
from ._types import (
    StreamOptions as StreamOptions,
)
from ._types import (
    Text as Text,
)
from ._types import (
    Thinking as Thinking,
)
from ._types import (
    ThinkingBudgets as ThinkingBudgets,
)
from ._types import (
    ThinkingLevel as ThinkingLevel,
)
from ._types import (
    ToolCall as ToolCall,
)
from ._types import (
    ToolResultMessage as ToolResultMessage,
)
from ._types import (
    ToolSchema as ToolSchema,
)
from ._types import (
    Usage as Usage,
)
from ._types import (
    UserMessage as UserMessage,
)
from ._types import (
    extract_text as extract_text,
)

__version__ = "0.1.0"

__all__ = [
    "ALLOW",
    "APPROVED",
    "CONTINUE",
    "Aborted",
    "Accumulator",
    "AgentContext",
    "AgentEnd",
    "AgentError",
    "AgentEvent",
    "AgentMessage",
    "AgentResult",
    "AgentStart",
    "AgentTool",
    "AgentToolResult",
    "Allow",
    "AlreadyRunning",
    "ApprovalCallback",
    "ApprovalDecision",
    "Approved",
    "ApprovedWith",
    "AssistantMessage",
    "AssistantMessageEvent",
    "ContentBlock",
    "ContextCompacted",
    "ContextWindowOverflow",
    "Continue",
    "Cost",
    "CustomMessage",
    "DispatchContext",
    "DispatchVerdict",
    "Done",
    "ErrorEvent",
    "ErrorKind",
    "ExponentialBackoff",
    "Extension",
    "ExtensionBlock",
    "FunctionTool",
    "Image",
    "Inject",
    "InvalidContinue",
    "LlmContext",
    "LlmMessage",
    "MessageEnd",
    "MessageStart",
    "MessageUpdate",
    "MessagesView",
    "ModelError",
    "ModelSpec",
    "ModelThrottled",
    "NetworkError",
    "NoMessages",
    "NoRetry",
    "OnUpdate",
    "PolicyContext",
    "PolicyVerdict",
    "PostLoopPolicy",
    "PostTurnPolicy",
    "PreDispatchPolicy",
    "PreTurnPolicy",
    "Pricing",
    "Rejected",
    "Replace",
    "RetryStrategy",
    "Rewrite",
    "Skip",
    "Stop",
    "StopReason",
    "StreamError",
    "StreamFn",
    "StreamOptions",
    "StreamRetry",
    "StreamStart",
    "StructuredOutputFailed",
    "Text",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "Thinking",
    "ThinkingBudgets",
    "ThinkingDelta",
    "ThinkingEnd",
    "ThinkingLevel",
    "ThinkingStart",
    "Tool",
    "ToolArgumentError",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolContext",
    "ToolExecutionEnd",
    "ToolExecutionStart",
    "ToolExecutionUpdate",
    "ToolResultMessage",
    "ToolSchema",
    "TurnEnd",
    "TurnEndReason",
    "TurnStart",
    "Usage",
    "UserMessage",
    "decode",
    "encode",
    "extract_text",
    "tool",
]
