"""An ``AgentWorkflow`` subclass that does something non-deterministic, where a test says.

A module of its own, with nothing but the workflow's imports: the sandbox imports a workflow's
module afresh for each run, and a test module would drag pytest in with it.

The run's ``agent_name`` says what to call and where: ``"configure:time.time"`` calls
``time.time()`` in ``configure`` (workflow code proper), ``"transformer:open"`` opens a file in
the context transformer ``configure`` adds (code the loop calls); any other name calls nothing.
"""

from __future__ import annotations

import dataclasses
import random
import time
from typing import TYPE_CHECKING, Any

from temporalio import workflow

from agentloop_temporal import AgentWorkflow

NAME = "test.forbidden"
"""The name the workflow is registered under (``TemporalAgent(workflow=NAME)`` starts it)."""

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentloop import AgentMessage
    from agentloop.loop import AgentLoopConfig, TransformContext


def _read_a_file() -> object:
    with open(__file__) as f:  # noqa: PTH123 - the builtin is what the sandbox guards
        return f.read(1)


FORBIDDEN: dict[str, Callable[[], object]] = {
    "time.time": time.time,
    "random.random": random.random,
    "open": _read_a_file,
}


@workflow.defn(name=NAME)
class ForbiddenCallWorkflow(AgentWorkflow):
    """The agent workflow, calling ``FORBIDDEN[...]`` where its ``agent_name`` says."""

    # Temporal wants the ``@workflow.run`` method on the class it registers, not inherited.
    @workflow.run
    async def run(self, payload: dict[str, Any]) -> dict[str, Any]:
        return await super().run(payload)

    def configure(self, config: AgentLoopConfig) -> AgentLoopConfig:
        where, _, name = config.agent_name.partition(":")
        call = FORBIDDEN.get(name)
        if call is not None and where == "configure":
            call()

        def transform(
            messages: list[AgentMessage], context: TransformContext
        ) -> list[AgentMessage]:
            if call is not None and where == "transformer":
                call()
            return messages

        return dataclasses.replace(config, transform_context=transform)
