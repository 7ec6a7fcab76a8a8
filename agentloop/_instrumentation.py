"""What an ``Instrumentation`` (``agentloop.abc``) is told, and how the loop calls it.

=================  ============================================  ==================================
hook               entered around                                in which task
=================  ============================================  ==================================
``run``            a whole run, ``AgentStart`` to ``AgentEnd``   the run's own
``model_call``     each attempt of a model call (retries too)    the run's own
``tool_call``      each tool call's ``execute``                  the call's child task (so a
                                                                 context variable it sets is seen
                                                                 by the tool and its threads)
``note``           called for a policy's verdict and for         the run's, or a call's
                   steering that interrupts a batch
=================  ============================================  ==================================

Each hook receives an info object the loop fills in as it goes: what is known when the hook is
entered, then the outcome (the answer, the tool's result, the run's result) just before it is
exited. The loop enters and exits the context managers itself, synchronously, so the entering
and the exiting happen in the same task. An instrumentation can neither fail a run nor swallow
an exception: what a hook raises is logged and the hook skipped, and the return value of an
``__exit__`` is ignored.

A run whose config has no instrumentation uses the one of the run it is nested in, if any (a
sub-agent started by a tool of an observed run). With none anywhere the loop only tests a
``None`` per model call and per tool call.
"""

from __future__ import annotations

import contextvars
import logging
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractContextManager

    from ._abc import AgentTool, Instrumentation
    from ._events import AgentToolResult
    from ._types import (
        AgentResult,
        AssistantMessage,
        LlmContext,
        ModelSpec,
        StreamOptions,
        ToolCall,
    )

__all__ = [
    "Hook",
    "ModelCallInfo",
    "NoteKind",
    "Observer",
    "RunInfo",
    "RunNote",
    "ToolCallInfo",
    "enter",
    "inherited",
]

log = logging.getLogger("agentloop.loop")

NoteKind: TypeAlias = Literal["verdict", "steering"]

# The instrumentation of the run the current task belongs to: a run without its own uses it.
inherited: contextvars.ContextVar[Instrumentation | None] = contextvars.ContextVar(
    "agentloop_instrumentation", default=None
)


class RunInfo:
    """One run, as an instrumentation sees it.

    Attributes:
        agent: the name of the agent running (``AgentLoopConfig.agent_name``).
        model: the model the run calls.
        conversation_id: the conversation the run belongs to, if known
            (``AgentLoopConfig.conversation_id``; an ``Agent`` with a session gives its id).
        result: the run's result; set just before the hook exits, ``None`` until then.
        state: free for the instrumentation's own use (the loop never reads it).
    """

    __slots__ = ("agent", "conversation_id", "model", "result", "state")

    def __init__(self, *, agent: str, model: ModelSpec, conversation_id: str | None) -> None:
        self.agent = agent
        self.model = model
        self.conversation_id = conversation_id
        self.result: AgentResult[str] | None = None
        self.state: Any = None


class ModelCallInfo:
    """One attempt of a model call.

    Attributes:
        run: the run it belongs to.
        turn: the turn's index in the run.
        attempt: 1 for the first attempt of a call, 2 and up for its retries.
        model: the model called.
        request: the system prompt, messages and tool schemas sent (valid during the call).
        options: the stream options, never with the API key.
        first_chunk: ``time.perf_counter()`` when the first event arrived, if one did.
        message: the attempt's answer (stop reason ``error`` when it failed); set before the
            hook exits, ``None`` when the attempt was cancelled.
        retry_delay: seconds before a failed attempt is tried again; ``None`` when it is not.
        response_model: the model the provider's answer named (its ``StreamStart``); ``None``
            when it named none, as a request refused before any answer (a 429) names none.
    """

    __slots__ = (
        "attempt",
        "first_chunk",
        "message",
        "model",
        "options",
        "request",
        "response_model",
        "retry_delay",
        "run",
        "turn",
    )

    def __init__(
        self,
        *,
        run: RunInfo,
        turn: int,
        attempt: int,
        model: ModelSpec,
        request: LlmContext,
        options: StreamOptions,
    ) -> None:
        self.run = run
        self.turn = turn
        self.attempt = attempt
        self.model = model
        self.request = request
        self.options = options
        self.first_chunk: float | None = None
        self.message: AssistantMessage | None = None
        self.retry_delay: float | None = None
        self.response_model: str | None = None


class ToolCallInfo:
    """One tool call being executed.

    Attributes:
        run: the run it belongs to.
        turn: the turn's index in the run.
        call: the call as the model sent it.
        arguments: the arguments it runs with (after pre-dispatch rewrites and approval).
        tool: the tool.
        result: what the tool returned (or the error result the loop made of a failure); set
            before the hook exits, ``None`` when the call was cancelled.
        exception: what the tool raised, when it raised.
        timed_out: the call ran out of its time (``result`` says so to the model).
        interrupted: the call was cancelled by steering, or because its batch failed.
    """

    __slots__ = (
        "arguments",
        "call",
        "exception",
        "interrupted",
        "result",
        "run",
        "timed_out",
        "tool",
        "turn",
    )

    def __init__(
        self, *, run: RunInfo, turn: int, call: ToolCall, arguments: Any, tool: AgentTool
    ) -> None:
        self.run = run
        self.turn = turn
        self.call = call
        self.arguments = arguments
        self.tool = tool
        self.result: AgentToolResult | None = None
        self.exception: BaseException | None = None
        self.timed_out = False
        self.interrupted = False


class RunNote:
    """Something that happened in a run besides its calls.

    ``kind`` is ``"verdict"`` (a policy or the approval hook decided something other than
    letting the run go on as it was) or ``"steering"`` (steering cancelled the calls of a batch
    still running).

    Attributes:
        run: the run it happened in.
        kind: ``"verdict"`` or ``"steering"``.
        slot: for a verdict, where: ``"pre_turn"``, ``"pre_dispatch"``, ``"approval"``,
            ``"post_turn"`` or ``"post_loop"``.
        source: the policy's name (``"approval"`` for the approval hook).
        verdict: ``"stop"``, ``"inject"``, ``"skip"``, ``"rewrite"``, ``"replace"`` or
            ``"reject"`` (a policy that failed closed, or the approval hook refusing).
        reason: what the policy said (it may quote the conversation).
        call_id: the tool call it is about, if any.
        cancelled: for steering, how many calls were cancelled.
    """

    __slots__ = ("call_id", "cancelled", "kind", "reason", "run", "slot", "source", "verdict")

    def __init__(
        self,
        *,
        run: RunInfo,
        kind: NoteKind,
        slot: str = "",
        source: str = "",
        verdict: str = "",
        reason: str = "",
        call_id: str | None = None,
        cancelled: int = 0,
    ) -> None:
        self.run = run
        self.kind = kind
        self.slot = slot
        self.source = source
        self.verdict = verdict
        self.reason = reason
        self.call_id = call_id
        self.cancelled = cancelled


class Hook:
    """A hook's context manager, entered; ``exit`` leaves it. Neither can fail the run."""

    __slots__ = ("_cm", "_what")

    def __init__(self, cm: AbstractContextManager[object], what: str) -> None:
        self._cm = cm
        self._what = what

    def exit(self, exc: BaseException | None) -> None:
        """Leave the context manager with ``exc`` (``None``: normally); its answer is ignored."""
        try:
            if exc is None:
                self._cm.__exit__(None, None, None)
            else:
                self._cm.__exit__(type(exc), exc, exc.__traceback__)
        except Exception as error:
            if error is not exc:
                log.exception("instrumentation %s hook raised on exit; ignored", self._what)


def enter(
    open_hook: Callable[[Any], AbstractContextManager[object] | None], info: Any, what: str
) -> Hook | None:
    """Call ``open_hook(info)`` and enter what it returns; ``None`` if nothing was entered."""
    try:
        cm = open_hook(info)
        if cm is None:
            return None
        cm.__enter__()
    except Exception:
        log.exception("instrumentation %s hook raised; it is skipped", what)
        return None
    return Hook(cm, what)


class Observer:
    """The instrumentation of a run whose ``run`` hook took it on: the other hooks' callers."""

    __slots__ = ("info", "instrumentation")

    def __init__(self, instrumentation: Instrumentation, info: RunInfo) -> None:
        self.instrumentation = instrumentation
        self.info = info

    def model_call(
        self, turn: int, attempt: int, model: ModelSpec, request: LlmContext, options: StreamOptions
    ) -> tuple[ModelCallInfo, Hook | None]:
        info = ModelCallInfo(
            run=self.info, turn=turn, attempt=attempt, model=model, request=request, options=options
        )
        return info, enter(self.instrumentation.model_call, info, "model_call")

    def tool_call(
        self, turn: int, call: ToolCall, arguments: Any, tool: AgentTool
    ) -> tuple[ToolCallInfo, Hook | None]:
        info = ToolCallInfo(run=self.info, turn=turn, call=call, arguments=arguments, tool=tool)
        return info, enter(self.instrumentation.tool_call, info, "tool_call")

    def note(self, kind: NoteKind, **fields: Any) -> None:
        try:
            self.instrumentation.note(RunNote(run=self.info, kind=kind, **fields))
        except Exception:
            log.exception("instrumentation note hook raised; ignored")
