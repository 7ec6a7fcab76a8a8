"""The protocols an application implements to plug into agentloop, in one place.

See the table in ``agentloop._abc``'s documentation (reproduced in the docs): providers
(``StreamFn``), tools (``AgentTool``, ``Toolset``), retries (``RetryStrategy``), token counting
(``TokenCounter``), sessions (``SessionStore``), policies and approval.
"""

from ._abc import (
    AgentTool as AgentTool,
    ApprovalCallback as ApprovalCallback,
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
from ._public import publish

__all__ = [
    "AgentTool",
    "ApprovalCallback",
    "OnUpdate",
    "PostLoopPolicy",
    "PostTurnPolicy",
    "PreDispatchPolicy",
    "PreTurnPolicy",
    "RetryStrategy",
    "SessionStore",
    "StreamFn",
    "TokenCounter",
    "Toolset",
]

publish(__name__, globals(), __all__, force=True)
del publish
