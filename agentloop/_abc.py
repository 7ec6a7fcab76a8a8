"""Every plug-in point of the library, in one place: the protocols an application implements.

=================  ==================================================  =======================
protocol           what implements it                                  given to
=================  ==================================================  =======================
StreamFn           a provider: one model call, streamed                ``Agent(stream_fn=)``
AgentTool          a tool the model can call                           ``Agent(tools=)``
Toolset            a source of tools that may change during a run      ``Agent(toolsets=)``
RetryStrategy      when and how soon a failed model call is retried    ``Agent(retry_strategy=)``
TokenCounter       how messages are counted against a context window   ``SlidingWindow(counter=)``
SessionStore       where sessions are kept                             ``SessionRecorder(store)``
PreTurnPolicy      looks at each turn before the model call            ``pre_turn_policies=``
PreDispatchPolicy  looks at each tool call before it runs              ``pre_dispatch_policies=``
PostTurnPolicy     looks at each turn once its tools ran               ``post_turn_policies=``
PostLoopPolicy     looks at the run when it would end                  ``post_loop_policies=``
ApprovalCallback   asks whether a tool call may run                    ``approval=``
Instrumentation    observes runs, model calls and tool calls           ``instrumentation=``
=================  ==================================================  =======================

Implementations need not inherit from these: they are ``typing.Protocol`` classes, checked
structurally. ``agentloop.Tool`` is a convenient base class for tools with a JSON Schema, and
``@agentloop.tool`` makes a tool from a typed function.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

# Needed at run time: the two type aliases below are built from them.
from ._events import AgentToolResult
from ._policy import ApprovalDecision
from ._types import ToolCall

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence
    from contextlib import AbstractContextManager

    from ._errors import ModelError
    from ._instrumentation import ModelCallInfo, RunInfo, RunNote, ToolCallInfo
    from ._policy import DispatchContext, DispatchVerdict, PolicyContext, PolicyVerdict
    from ._session_store import SessionInfo
    from ._stream import AssistantMessageEvent
    from ._types import AgentMessage, LlmContext, ModelSpec, StreamOptions

__all__ = [
    "AgentTool",
    "ApprovalCallback",
    "Instrumentation",
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


# --------------------------------------------------------------------------- providers


class StreamFn(Protocol):
    """A provider: one model call, streamed as ``AssistantMessageEvent``s.

    Usually an async generator function. The loop always consumes it inside
    ``contextlib.aclosing``, so a cancelled turn closes the generator (and its HTTP response) at
    once. Failures are events (``ErrorEvent`` with a classified kind), not exceptions; an
    exception it raises anyway becomes an error of kind ``other`` (``network`` for an
    ``OSError``). ``agentloop.testing.check_stream_fn`` checks an implementation.
    """

    def __call__(
        self, model: ModelSpec, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]: ...


class RetryStrategy(Protocol):
    """Decides whether a failed model call is tried again, and after how long."""

    def should_retry(self, error: ModelError, attempt: int) -> bool:
        """Whether to retry after ``error``; ``attempt`` counts the failed attempts so far (1..)."""
        ...

    def delay(self, attempt: int, error: ModelError | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (1..)."""
        ...


# --------------------------------------------------------------------------- tools

OnUpdate = Callable[[AgentToolResult | str], None]
"""How a tool reports progress: each call becomes a ``ToolExecutionUpdate`` event."""


@runtime_checkable
class AgentTool(Protocol):
    """A tool the model can call.

    ``execute`` receives arguments that already passed validation. It reports progress through
    ``on_update`` (from any thread) and returns an ``AgentToolResult``; an exception it raises
    becomes an error result. A tool may define ``validate_arguments(arguments) -> validated``
    to replace the schema check, and ``timeout`` (seconds) to bound its calls.
    """

    name: str
    label: str
    description: str
    parameters: dict[str, Any]
    requires_approval: bool
    read_only: bool

    async def execute(self, call_id: str, arguments: Any, on_update: OnUpdate) -> AgentToolResult:
        """Run one call with ``arguments`` (already validated); ``on_update`` reports progress.

        Raises:
            Exception: anything; the loop turns it into an error result the model reads.
        """


@runtime_checkable
class Toolset(Protocol):
    """A source of tools whose set may change while an agent runs (an MCP server, say).

    The loop calls ``get_tools()`` at the start of every turn, so it must be cheap and must not
    block: return the current tools (the same objects while nothing changed) and refresh them
    elsewhere. A ``name`` attribute, if any, names the toolset in errors.
    """

    def get_tools(self) -> Sequence[AgentTool]:
        """The tools this toolset offers now (cheap, never blocking)."""


# --------------------------------------------------------------------------- context


class TokenCounter(Protocol):
    """Counts the tokens of messages and text. An exact, tokenizer-backed counter plugs in here."""

    def count(self, message: AgentMessage) -> int:
        """The tokens ``message`` takes in a request."""
        ...

    def count_text(self, text: str) -> int:
        """The tokens ``text`` (a system prompt, say) takes in a request."""
        ...


# --------------------------------------------------------------------------- sessions


class SessionStore(Protocol):
    """Where sessions live. Every method is async; implementations keep I/O off the event loop.

    Ids are 1-128 characters of ``[A-Za-z0-9_.-]``, starting with a letter or digit. A method
    that is cancelled may be abandoned (its thread left to finish): an append is then either
    never written or finished, all or none, before anything else touches the session.
    """

    async def create(
        self,
        *,
        session_id: str | None = None,
        title: str = "",
        model: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> SessionInfo:
        """Create an empty session (with a fresh id unless one is given).

        Raises:
            ValueError: the id is malformed or already taken.
        """
        ...

    async def append(self, session_id: str, messages: Sequence[AgentMessage]) -> None:
        """Append messages durably, in order; all of them or (on error) none.

        Raises:
            SessionNotFound: no such session.
        """
        ...

    async def load(self, session_id: str) -> list[AgentMessage]:
        """Every message of the session, in order.

        Raises:
            SessionNotFound: no such session.
        """
        ...

    async def info(self, session_id: str) -> SessionInfo:
        """The session's metadata.

        Raises:
            SessionNotFound: no such session.
        """
        ...

    async def list_sessions(self) -> list[SessionInfo]:
        """Every session's metadata, the most recently updated first."""
        ...

    async def update(
        self,
        session_id: str,
        *,
        title: str | None = None,
        model: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> SessionInfo:
        """Change the title, model or metadata (``None`` leaves a field as it is).

        Raises:
            SessionNotFound: no such session.
        """
        ...

    async def delete(self, session_id: str) -> None:
        """Delete the session and its messages.

        Raises:
            SessionNotFound: no such session.
        """
        ...


# --------------------------------------------------------------------------- policies


class PreTurnPolicy(Protocol):
    """Before each model call: ``Continue``, ``Stop`` or ``Inject`` messages.

    A policy that raises fails closed (the run ends with ``HookFailed``) unless it declares
    ``fail_open = True``.
    """

    def evaluate(self, ctx: PolicyContext) -> PolicyVerdict:
        """The verdict before this model call."""


class PreDispatchPolicy(Protocol):
    """Before each tool call (the whole batch first): ``Allow``, ``Skip``, ``Rewrite`` or ``Stop``.

    A policy that raises rejects the call (fail closed) unless it declares ``fail_open = True``.
    """

    def evaluate(self, ctx: DispatchContext) -> DispatchVerdict:
        """The verdict on the call ``ctx.call``."""


class PostTurnPolicy(Protocol):
    """At the end of each turn: ``Continue``, ``Stop``, ``Inject`` or ``Replace`` tool results.

    ``evaluate`` may answer with an awaitable verdict instead, for heavy work it does in a
    worker thread (``PiiRedactor`` does for large results): the loop awaits it, so the event
    loop keeps running meanwhile, and an abort cancels the wait at once.
    """

    def evaluate(self, ctx: PolicyContext) -> PolicyVerdict | Awaitable[PolicyVerdict]:
        """The verdict on the turn just ended (``ctx.message``, ``ctx.tool_results``)."""


class PostLoopPolicy(Protocol):
    """When the run would end: ``Continue``, ``Stop`` or ``Inject`` (which goes on)."""

    def evaluate(self, ctx: PolicyContext) -> PolicyVerdict:
        """The verdict when the run would end."""


ApprovalCallback = Callable[[ToolCall, AgentTool | None], Awaitable[ApprovalDecision]]
"""Asked about each tool call that passed the pre-dispatch policies; one that raises rejects."""


# --------------------------------------------------------------------------- observability


class Instrumentation(Protocol):
    """Observes runs: a context manager around each run, model call attempt and tool call.

    The loop enters each context manager itself, synchronously: ``run`` in the run's task,
    around everything from ``AgentStart`` to ``AgentEnd``; ``model_call`` in the run's task,
    around one attempt (each retry is another); ``tool_call`` in the call's own child task,
    around ``execute``, so that context variables it sets (the current span, say) are seen by
    the tool, by a sub-agent the tool runs, and by worker threads (anyio copies the context
    into them). The info object a hook receives gets the outcome just before the hook exits.
    ``note`` is told of policy verdicts and of steering that interrupts a batch.

    A hook returns ``None`` to leave its run or call alone; when ``run`` does, no other hook is
    called for that run. What a hook raises is logged and the hook skipped: an instrumentation
    never fails a run, and what its ``__exit__`` returns is ignored (it cannot swallow an
    exception). A run without an instrumentation of its own uses the one of the run it is
    nested in (a sub-agent started by a tool). Subclass this protocol to inherit its defaults
    for the hooks you leave out (they observe nothing; the default ``run`` takes every run on). ``agentloop_otel.OpenTelemetry`` is
    one.
    """

    def run(self, run: RunInfo) -> AbstractContextManager[object] | None:
        """A context manager around the run, or ``None`` to leave the run alone.

        The default takes every run on (doing nothing), so that the other hooks are called.
        """
        return nullcontext()

    def model_call(self, call: ModelCallInfo) -> AbstractContextManager[object] | None:
        """A context manager around one attempt of a model call, or ``None``."""
        return None

    def tool_call(self, call: ToolCallInfo) -> AbstractContextManager[object] | None:
        """A context manager around one tool call, entered in the call's task, or ``None``."""
        return None

    def note(self, note: RunNote) -> None:
        """A policy's verdict, or steering interrupting a batch."""
        return None
