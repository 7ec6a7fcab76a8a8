"""The protocols an application implements to plug into agentloop, in one place.

See the table in ``agentloop._abc``'s documentation (reproduced in the docs): providers
(``StreamFn``), tools (``AgentTool``, ``Toolset``), retries (``RetryStrategy``), token counting
(``TokenCounter``), sessions (``SessionStore``), policies and approval, and instrumentation
(``Instrumentation``, with the info objects its hooks receive).
"""

from ._abc import (
    AgentTool as AgentTool,
    ApprovalCallback as ApprovalCallback,
    Instrumentation as Instrumentation,
    OnUpdate as OnUpdate,
    PostLoopPolicy as PostLoopPolicy,
    PostTurnPolicy as PostTurnPolicy,
    PreDispatchPolicy as PreDispatchPolicy,
    PreTurnPolicy as PreTurnPolicy,
    RetryStrategy as RetryStrategy,
    SessionStore as SessionStore,
    StreamFn as StreamFn,
    TokenCounter as TokenCounter,
    Toolset as Toolset,
)
from ._instrumentation import (
    ModelCallInfo as ModelCallInfo,
    RunInfo as RunInfo,
    RunNote as RunNote,
    ToolCallInfo as ToolCallInfo,
)
from ._public import publish

__all__ = [
    "AgentTool",
    "ApprovalCallback",
    "Instrumentation",
    "ModelCallInfo",
    "OnUpdate",
    "PostLoopPolicy",
    "PostTurnPolicy",
    "PreDispatchPolicy",
    "PreTurnPolicy",
    "RetryStrategy",
    "RunInfo",
    "RunNote",
    "SessionStore",
    "StreamFn",
    "TokenCounter",
    "ToolCallInfo",
    "Toolset",
]

publish(__name__, globals(), __all__, force=True)
del publish
