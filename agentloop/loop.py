"""The loop itself, without ``Agent``: for applications that keep their own state.

``agent_loop(prompts, context, config)`` is an async context manager yielding the run's events;
``run_loop`` awaits the run and returns its result (with an optional event callback and no
channel). ``AgentLoopConfig`` holds everything a run needs besides its context; ``use_clock``
gives the messages a run builds their timestamps from a clock of the caller's.
"""

from ._config import (
    AgentLoopConfig as AgentLoopConfig,
    AsyncTransform as AsyncTransform,
    ConvertToLlm as ConvertToLlm,
    MessageSource as MessageSource,
    SteeringInterrupt as SteeringInterrupt,
    ToolExecution as ToolExecution,
    Transform as Transform,
    TransformContext as TransformContext,
    default_convert_to_llm as default_convert_to_llm,
)
from ._entry import (
    EventStream as EventStream,
    agent_loop as agent_loop,
    agent_loop_continue as agent_loop_continue,
    run_loop as run_loop,
)
from ._public import publish
from ._types import AgentContext as AgentContext, use_clock as use_clock

__all__ = [
    "AgentContext",
    "AgentLoopConfig",
    "AsyncTransform",
    "ConvertToLlm",
    "EventStream",
    "MessageSource",
    "SteeringInterrupt",
    "ToolExecution",
    "Transform",
    "TransformContext",
    "agent_loop",
    "agent_loop_continue",
    "default_convert_to_llm",
    "run_loop",
    "use_clock",
]

publish(__name__, globals(), __all__, force=False)
del publish
