"""The error hierarchy: every exception the library raises is an ``AgentError``.

Model and tool failures are data (assistant messages with stop reason ``error``, error tool
results); these exceptions are for what the caller must handle::

    AgentError
    ├── ModelError                  a model call that failed after retries (``kind`` says how)
    │   ├── ContextWindowOverflow   the request does not fit the model's context window
    │   ├── ModelThrottled          rate limited (429, "overloaded"); may carry retry_after
    │   ├── NetworkError            connection failures, 5xx, a stream cut short
    │   └── StreamError             any other failure (auth, content filter, malformed stream)
    ├── HookFailed                  application code the loop calls raised (transformer,
    │                               converter, policy, message source, key resolver, toolset)
    ├── StructuredOutputFailed      typed output still invalid after the retries
    ├── AlreadyRunning              a second prompt or continue while a run is active
    ├── NoMessages                  continue with an empty history
    ├── InvalidContinue             continue when the last message is the assistant's answer
    ├── Aborted                     the run was aborted
    ├── ToolArgumentError           (also ValueError) arguments that do not fit a tool
    ├── SessionNotFound             (also LookupError) no session has this id
    ├── SessionStoreError           (also OSError) a store cannot use its place: not writable,
    │                               not a database, a failing disk (names the path)
    ├── UnknownModel                (also LookupError) a model string no provider resolves
    └── MissingExtra                (also ModuleNotFoundError) a feature whose optional
                                    dependencies are not installed; names the extra

The other packages hang their own errors under this tree: ``agentloop_providers`` (unknown
presets, malformed wire data, frames over the limit, invalid API keys, missing AWS
credentials), ``agentloop_mcp`` (``McpError``), ``agentloop_eval`` (``EvalError``), the coding
agent's and the terminal UI's. A test walks every public module and checks. Exception groups never come out of
the library: where a task group is an internal detail, its one failure is raised as itself.
"""

from __future__ import annotations

import enum
from typing import Any

import anyio

__all__ = [
    "AgentError",
    "Aborted",
    "AlreadyRunning",
    "ContextWindowOverflow",
    "HookFailed",
    "InvalidContinue",
    "MissingExtra",
    "ModelError",
    "ModelThrottled",
    "SessionNotFound",
    "SessionStoreError",
    "NetworkError",
    "NoMessages",
    "StreamError",
    "StructuredOutputFailed",
    "ToolArgumentError",
    "UnknownModel",
    "ErrorKind",
    "error_for_kind",
]


class ErrorKind(enum.StrEnum):
    """A failure, classified so the loop can retry or recover without parsing text.

    Every kind but ``HOOK`` classifies a model call; ``HOOK`` marks a run ended because
    application code it called raised (see ``HookFailed``). ``TOOL_NOT_CALLED``: the call
    forced a tool (``tool_choice``) and the model answered without calling one, which a server
    that cannot hold a model to a call lets happen; another sample may comply, so it is retried.
    ``TIMEOUT``: the server took the request and sent nothing back in time (a provider's
    ``first_byte_timeout``); not retried by default (``ExponentialBackoff(retry_timeouts=True)``).
    """

    THROTTLED = "throttled"
    CONTEXT_OVERFLOW = "context_overflow"
    AUTH = "auth"
    NETWORK = "network"
    CONTENT_FILTERED = "content_filtered"
    TOOL_NOT_CALLED = "tool_not_called"
    TIMEOUT = "timeout"
    OTHER = "other"
    HOOK = "hook"


class AgentError(Exception):
    """Base class of every error this library raises.

    An error that ended a run (raised by ``Agent.prompt``, ``AgentResult.output`` or
    ``raise_for_error``) carries that run's ``AgentResult`` as ``result``: its messages, usage
    and cost; ``None`` otherwise.
    """

    result: Any = None


class ModelError(AgentError):
    """A model call failed; ``kind`` says how."""

    kind: ErrorKind = ErrorKind.OTHER

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after


class ContextWindowOverflow(ModelError):
    """The provider rejected the request because it exceeds the model's context window."""

    kind = ErrorKind.CONTEXT_OVERFLOW

    def __init__(self, message: str, *, model: str = "", retry_after: float | None = None) -> None:
        super().__init__(message, retry_after=retry_after)
        self.model = model


class ModelThrottled(ModelError):
    """Rate limited or overloaded; ``retry_after`` is the provider's hint in seconds, if any."""

    kind = ErrorKind.THROTTLED


class NetworkError(ModelError):
    """A transient transport failure: connection refused or reset, 5xx, a stream cut short."""

    kind = ErrorKind.NETWORK


class StreamError(ModelError):
    """A non-retryable model failure (auth, content filter, malformed stream, anything else)."""

    def __init__(
        self, message: str, *, kind: ErrorKind = ErrorKind.OTHER, retry_after: float | None = None
    ) -> None:
        super().__init__(message, retry_after=retry_after)
        self.kind = kind


class HookFailed(AgentError):
    """Application code the loop calls raised, so the run ended with an error.

    ``hook`` names it: ``transform_context``, ``convert_to_llm``, ``get_steering_messages``,
    ``pre-turn policy 'budget'`` and so on. The message reads
    ``"{hook} raised {ExceptionType}: {text}"`` on every backend; the original exception is the
    ``__cause__`` where the loop raised it (and logged with its traceback).
    """

    def __init__(self, message: str, *, hook: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hook = hook

    @classmethod
    def wrap(cls, hook: str, exc: BaseException) -> HookFailed:
        """The error for ``exc`` raised by ``hook``."""
        return cls(f"{hook} raised {type(exc).__name__}: {exc}", hook=hook)


class StructuredOutputFailed(AgentError):
    """The model's structured output was still invalid after the allowed attempts."""

    def __init__(self, attempts: int, last_error: str) -> None:
        super().__init__(f"structured output failed after {attempts} attempts: {last_error}")
        self.attempts = attempts
        self.last_error = last_error


class AlreadyRunning(AgentError):
    """The agent is already running; one run at a time."""


class NoMessages(AgentError):
    """There is nothing to continue from: the history is empty."""


class InvalidContinue(AgentError):
    """Cannot continue: the last message is the assistant's and nothing is queued."""


class SessionNotFound(AgentError, LookupError):
    """No session has this id."""


class SessionStoreError(AgentError, OSError):
    """A session store cannot use its place: a directory it may not write, a file that is not
    a database, a full or failing disk. ``path`` names the place; ``errno`` is the operating
    system's error number when there is one (so code catching ``OSError`` still works).

    Args:
        path: the store's file or directory.
        problem: what went wrong there.
        errno: the operating system's error number, if any.
    """

    def __init__(self, path: str, problem: str, errno: int | None = None) -> None:
        super().__init__(f"session store {path}: {problem}")
        self.path = path
        self.problem = problem
        self.errno = errno

    def __str__(self) -> str:
        return str(self.args[0])  # not OSError's "[Errno n] ..." form

    def __reduce__(self) -> tuple[type[SessionStoreError], tuple[str, str, int | None]]:
        return type(self), (self.path, self.problem, self.errno)


class ToolArgumentError(AgentError, ValueError):
    """Arguments that do not fit the tool; the message is sent to the model."""


class UnknownModel(AgentError, LookupError):
    """A model string that is malformed or names a provider that is not installed."""


class Aborted(AgentError):
    """The run was aborted."""


DISTRIBUTION = "anyio-agentloop"


class MissingExtra(AgentError, ModuleNotFoundError):
    """A feature needs optional dependencies that are not installed.

    The message names the extra that brings them and the command that installs it::

        agentloop_tui needs the [tui] extra: pip install "anyio-agentloop[tui]"

    Args:
        what: what was asked for (a module, a command, an option).
        extra: the extra that installs what it needs.
        missing: the module that could not be imported, if known.
    """

    def __init__(self, what: str, extra: str, *, missing: str | None = None) -> None:
        hint = f" (no module named {missing!r})" if missing else ""
        super().__init__(
            f'{what} needs the [{extra}] extra{hint}: pip install "{DISTRIBUTION}[{extra}]"',
            name=missing,
        )
        self.what = what
        self.extra = extra

    @classmethod
    def check(cls, what: str, extra: str, *modules: str) -> None:
        """Raise for ``what`` unless every module in ``modules`` can be found.

        It only looks for the modules (``importlib.util.find_spec``), it does not import them.

        Raises:
            MissingExtra: one of them is not installed.
        """
        from importlib.util import find_spec

        for module in modules:
            try:
                found = find_spec(module) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                raise cls(what, extra, missing=module)


def error_for_kind(
    kind: ErrorKind, message: str, *, retry_after: float | None = None, model: str = ""
) -> ModelError:
    """The typed ``ModelError`` for a classified failure."""
    if kind is ErrorKind.CONTEXT_OVERFLOW:
        return ContextWindowOverflow(message, model=model, retry_after=retry_after)
    if kind is ErrorKind.THROTTLED:
        return ModelThrottled(message, retry_after=retry_after)
    if kind is ErrorKind.NETWORK:
        return NetworkError(message, retry_after=retry_after)
    return StreamError(message, kind=kind, retry_after=retry_after)


def single_exception(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one real exception of an internal task group, unwrapped (else its first
    cancellation); a group with several real failures is returned as it is."""
    cancelled = anyio.get_cancelled_exc_class()
    errors = [e for e in group.exceptions if not isinstance(e, cancelled)]
    if not errors:
        return group.exceptions[0]
    if len(errors) == 1:
        error = errors[0]
        return single_exception(error) if isinstance(error, BaseExceptionGroup) else error
    return group
