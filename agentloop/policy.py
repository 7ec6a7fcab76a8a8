"""Policies: where an application steers or stops the loop, and tool-call approval.

=============  ===========================================  ================================
slot           when                                         verdicts
=============  ===========================================  ================================
pre-turn       before the model call, after transformers   Continue, Stop, Inject
pre-dispatch   for each tool call, whole batch first        Allow, Skip, Rewrite, Stop
post-turn      at the end of each turn                      Continue, Stop, Inject, Replace
post-loop      when the run would end                       Continue, Stop, Inject
=============  ===========================================  ================================

A policy that raises fails closed (the call is rejected, or the run ends with ``HookFailed``)
unless it declares ``fail_open = True``. Ready-made policies are in ``agentloop_policies``.
"""

from ._abc import (
    ApprovalCallback as ApprovalCallback,
    PostLoopPolicy as PostLoopPolicy,
    PostTurnPolicy as PostTurnPolicy,
    PreDispatchPolicy as PreDispatchPolicy,
    PreTurnPolicy as PreTurnPolicy,
)
from ._policy import (
    ALLOW as ALLOW,
    APPROVED as APPROVED,
    CONTINUE as CONTINUE,
    Allow as Allow,
    ApprovalDecision as ApprovalDecision,
    Approved as Approved,
    ApprovedWith as ApprovedWith,
    Continue as Continue,
    DispatchContext as DispatchContext,
    DispatchVerdict as DispatchVerdict,
    Inject as Inject,
    MessagesView as MessagesView,
    PolicyContext as PolicyContext,
    PolicyVerdict as PolicyVerdict,
    Rejected as Rejected,
    Replace as Replace,
    Rewrite as Rewrite,
    Skip as Skip,
    Stop as Stop,
)
from ._public import publish

__all__ = [
    "ALLOW",
    "APPROVED",
    "CONTINUE",
    "Allow",
    "ApprovalCallback",
    "ApprovalDecision",
    "Approved",
    "ApprovedWith",
    "Continue",
    "DispatchContext",
    "DispatchVerdict",
    "Inject",
    "MessagesView",
    "PolicyContext",
    "PolicyVerdict",
    "PostLoopPolicy",
    "PostTurnPolicy",
    "PreDispatchPolicy",
    "PreTurnPolicy",
    "Rejected",
    "Replace",
    "Rewrite",
    "Skip",
    "Stop",
]

publish(__name__, globals(), __all__, force=False)
del publish
