"""``Agent`` methods under the names they had before 0.2, kept for one release.

Each warns (``DeprecationWarning``) and does what its new name does; CHANGELOG.md gives the
reason for every rename. This module goes away in the next release.
"""

from __future__ import annotations

import functools
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._abc import SessionStore, StreamFn
    from ._agent import Agent, AgentInput
    from ._agent_checkpoint import Checkpoint
    from ._types import AgentResult, ModelSpec

__all__ = ["AgentCompat"]


def _deprecated(old: str, new: str) -> None:
    warnings.warn(
        f"Agent.{old} is deprecated and will be removed; use Agent.{new}",
        DeprecationWarning,
        stacklevel=3,
    )


class AgentCompat:
    """The old names (a mixin of ``Agent``)."""

    if not TYPE_CHECKING:  # no dict of its own (``Agent`` holds the slots); mypy would
        __slots__ = ()  # check this mixin's assignments against an empty list

    @classmethod
    async def resume(
        cls,
        store: SessionStore,
        session_id: str,
        *,
        model: str | ModelSpec,
        stream_fn: StreamFn | None = None,
        **options: Any,
    ) -> Agent[Any]:
        """Deprecated: ``Agent.from_session``."""
        _deprecated("resume()", "from_session()")
        agent_cls: Any = cls
        result: Agent[Any] = await agent_cls.from_session(
            store, session_id, model=model, stream_fn=stream_fn, **options
        )
        return result

    @classmethod
    def restore(
        cls,
        checkpoint: Checkpoint,
        *,
        tools: Any = (),
        stream_fn: StreamFn | None = None,
        **options: Any,
    ) -> Agent[Any]:
        """Deprecated: ``Agent.from_checkpoint``."""
        _deprecated("restore()", "from_checkpoint()")
        agent_cls: Any = cls
        result: Agent[Any] = agent_cls.from_checkpoint(
            checkpoint, tools=tools, stream_fn=stream_fn, **options
        )
        return result

    async def continue_(self) -> AgentResult[Any]:
        """Deprecated: ``Agent.continue_run``."""
        _deprecated("continue_()", "continue_run()")
        agent: Any = self
        result: AgentResult[Any] = await agent.continue_run()
        return result

    def continue_sync(self, *, backend: str = "asyncio") -> AgentResult[Any]:
        """Deprecated: ``Agent.continue_run_sync``."""
        _deprecated("continue_sync()", "continue_run_sync()")
        agent: Any = self
        result: AgentResult[Any] = agent.continue_run_sync(backend=backend)
        return result

    def request_pause(self) -> bool:
        """Deprecated: ``Agent.pause_nowait``."""
        _deprecated("request_pause()", "pause_nowait()")
        agent: Any = self
        return bool(agent.pause_nowait())

    async def structured(
        self,
        prompt: AgentInput,
        output: Any,
        *,
        max_retries: int = 2,
        tool_name: str = "final_result",
    ) -> Any:
        """Deprecated: ``(await agent.prompt(..., output_type=T)).output``."""
        _deprecated("structured()", "prompt(..., output_type=...)")
        from ._output import OutputSpec

        agent: Any = self
        spec: OutputSpec[Any] = OutputSpec(output, max_retries=max_retries, tool_name=tool_name)
        result = await agent._execute(agent._prompts(prompt, None), spec)
        return spec.finish(result).output

    def structured_sync(
        self,
        prompt: AgentInput,
        output: Any,
        *,
        max_retries: int = 2,
        tool_name: str = "final_result",
        backend: str = "asyncio",
    ) -> Any:
        """Deprecated: ``agent.prompt_sync(..., output_type=T).output``."""
        import anyio

        from ._agent_run import ensure_no_event_loop

        ensure_no_event_loop("structured_sync", "structured")
        call = functools.partial(
            self.structured, prompt, output, max_retries=max_retries, tool_name=tool_name
        )
        return anyio.run(call, backend=backend)
