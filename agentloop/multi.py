"""Agents of agents: sub-agents as tools, hand-offs, a registry with mailboxes, pipelines.

Everything here runs inside one task tree: cancelling a parent (abort, steering, a timeout)
cancels its children through the same cancel scopes, and every run still ends with complete
events and a paired history. A sub-agent's events are relayed into its caller's events
(``SubAgentEvent``, tagged with a ``path`` of ``Hop``s, between ``DelegationStart`` and
``DelegationEnd``), its usage and cost roll up into the caller's, and its approvals are asked of
the caller's approval hook.
"""

from ._agent_registry import AgentHandle as AgentHandle, AgentRegistry as AgentRegistry
from ._events import (
    DelegationEnd as DelegationEnd,
    DelegationStart as DelegationStart,
    Hop as Hop,
    SubAgentEvent as SubAgentEvent,
    TransferInitiated as TransferInitiated,
    TransferRejected as TransferRejected,
)
from ._pipeline import (
    AgentRef as AgentRef,
    FastestN as FastestN,
    Loop as Loop,
    LoopSpec as LoopSpec,
    Named as Named,
    Parallel as Parallel,
    ParallelSpec as ParallelSpec,
    Pipeline as Pipeline,
    PipelineResult as PipelineResult,
    PipelineSpec as PipelineSpec,
    PipelineTool as PipelineTool,
    Sequential as Sequential,
    SequentialSpec as SequentialSpec,
    build_pipeline as build_pipeline,
)
from ._public import publish
from ._subagent import SharedBudget as SharedBudget, SubAgentTool as SubAgentTool
from ._team import Team as Team, TeamResult as TeamResult

__all__ = [
    "AgentHandle",
    "AgentRef",
    "AgentRegistry",
    "DelegationEnd",
    "DelegationStart",
    "FastestN",
    "Hop",
    "Loop",
    "LoopSpec",
    "Named",
    "Parallel",
    "ParallelSpec",
    "Pipeline",
    "PipelineResult",
    "PipelineSpec",
    "PipelineTool",
    "Sequential",
    "SequentialSpec",
    "SharedBudget",
    "SubAgentEvent",
    "SubAgentTool",
    "Team",
    "TeamResult",
    "TransferInitiated",
    "TransferRejected",
    "build_pipeline",
]

publish(__name__, globals(), __all__, force=False)
del publish
