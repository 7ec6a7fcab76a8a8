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
=================  ==================================================  =======================

Implementations need not inherit from these: they are ``typing.Protocol`` classes, checked
structurally. ``agentloop.Tool`` is a convenient base class for tools with a JSON Schema, and
``@agentloop.tool`` makes a tool from a typed function.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

# Needed at run time: the two type aliases below are built from them.
from ._events import AgentToolResult
from ._policy import ApprovalDecision
from ._types import ToolCall

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

    from ._errors import ModelError
    from ._policy import DispatchContext, DispatchVerdict, PolicyContext, PolicyVerdict
    from ._session_store import SessionInfo
    from ._stream import AssistantMessageEvent
    from ._types import AgentMessage, LlmContext, ModelSpec, StreamOptions

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

    async def execute(
        self, call_id: str, arguments: Any, on_update: OnUpdate
    ) -> AgentToolResult: ...


@runtime_checkable
class Toolset(Protocol):
    """A source of tools whose set may change while an agent runs (an MCP server, say).

    The loop calls ``get_tools()`` at the start of every turn, so it must be cheap and must not
    block: return the current tools (the same objects while nothing changed) and refresh them
    elsewhere. A ``name`` attribute, if any, names the toolset in errors.
    """

    def get_tools(self) -> Sequence[AgentTool]: ...


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

    def evaluate(self, ctx: PolicyContext) -> PolicyVerdict: ...


class PreDispatchPolicy(Protocol):
    """Before each tool call (the whole batch first): ``Allow``, ``Skip``, ``Rewrite`` or ``Stop``.

    A policy that raises rejects the call (fail closed) unless it declares ``fail_open = True``.
    """

    def evaluate(self, ctx: DispatchContext) -> DispatchVerdict: ...


class PostTurnPolicy(Protocol):
    """At the end of each turn: ``Continue``, ``Stop``, ``Inject`` or ``Replace`` tool results."""

    def evaluate(self, ctx: PolicyContext) -> PolicyVerdict: ...


class PostLoopPolicy(Protocol):
    """When the run would end: ``Continue``, ``Stop`` or ``Inject`` (which goes on)."""

    def evaluate(self, ctx: PolicyContext) -> PolicyVerdict: ...


ApprovalCallback = Callable[[ToolCall, AgentTool | None], Awaitable[ApprovalDecision]]
"""Asked about each tool call that passed the pre-dispatch policies; one that raises rejects."""
