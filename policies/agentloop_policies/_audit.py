"""``AuditLogger``: one JSON line per model call, per tool call and per policy decision.

It is an **event subscriber**, not a policy: pass it where the loop takes an event callback
(``run_loop(..., on_event=audit)``, ``agent.subscribe(audit)``). Events give it what a policy
could not see: when each model call and each tool call started and how long it took. The
decisions of policies and of the approval hook do not travel in events, so wrap the policies
and the approval callback you want audited with ``audit.watch(policy)`` and
``audit.watch_approval(callback)``: the wrappers keep the wrapped policy's name, pass its
verdict through unchanged, and log every verdict other than ``Continue``/``Allow``/``Approved``.

Records (``type`` field), each with ``at`` (UTC, ISO 8601) and ``run`` (a number per run):

* ``run_start``, ``run_end`` (``messages``: how many the run added);
* ``model_call``: ``turn``, ``provider``, ``model``, ``duration_ms``, ``stop_reason``,
  ``usage``, ``cost``, ``tool_calls`` (names), ``error``;
* ``tool_call``: ``turn``, ``call_id``, ``tool``, ``arguments``, ``duration_ms``,
  ``is_error``, ``result`` (its text as the tool returned it, before any post-turn redaction:
  pass ``redact=`` to clean it; cut to ``max_text`` characters), ``verdicts`` (the watched
  decisions about this call);
* ``verdict``: ``policy``, ``verdict``, ``reason`` and, for a tool call, ``call_id`` and
  ``tool``, written when the decision is made.

The sink is a file path (lines appended, flushed one by one, UTF-8; call ``close`` or use the
logger as a context manager) or a callable receiving each record as a ``dict``. Writing to a
file is a small blocking write on the event loop. A sink that fails is logged with ``logging``
and never disturbs the run. One logger follows one run at a time (an ``Agent`` runs one at a
time): runs that overlap would interleave their records.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import time
from typing import IO, TYPE_CHECKING, Any, Self

from agentloop import (
    AgentEnd,
    AgentStart,
    AssistantMessage,
    MessageEnd,
    MessageStart,
    ToolExecutionEnd,
    ToolExecutionStart,
    TurnStart,
    encode,
    extract_text,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

    from agentloop import AgentEvent, AgentTool, ToolCall
    from agentloop.policy import ApprovalCallback, ApprovalDecision

__all__ = ["AuditLogger", "WatchedPolicy"]

logger = logging.getLogger("agentloop.policies.audit")

_QUIET = frozenset({"continue", "allow", "approved"})


def _builtins(value: Any) -> Any:
    """``value`` as plain JSON data (``repr`` for what JSON cannot hold)."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    try:
        return json.loads(encode(value))
    except Exception:
        return repr(value)


def _summary(verdict: Any) -> dict[str, Any]:
    """A verdict as a small record: its kind and what matters about it."""
    tag = getattr(getattr(type(verdict), "__struct_config__", None), "tag", None)
    out: dict[str, Any] = {"verdict": str(tag) if tag is not None else type(verdict).__name__}
    for field in ("reason", "arguments"):
        if hasattr(verdict, field):
            out[field] = _builtins(getattr(verdict, field))
    for field in ("messages", "tool_results"):
        if hasattr(verdict, field):
            out[field] = len(getattr(verdict, field))
    return out


def _policy_name(policy: Any) -> str:
    name = getattr(policy, "name", None)
    return name if isinstance(name, str) else type(policy).__name__


class WatchedPolicy:
    """A policy wrapped by ``AuditLogger.watch``: same name, same verdicts, each one logged."""

    __slots__ = ("_audit", "name", "policy")

    def __init__(self, policy: Any, audit: AuditLogger) -> None:
        self.policy = policy
        self.name = _policy_name(policy)
        self._audit = audit

    def evaluate(self, ctx: Any) -> Any:
        """The wrapped policy's verdict, logged.

        Raises:
            Exception: whatever the wrapped policy raises (logged first).
        """
        try:
            verdict = self.policy.evaluate(ctx)
        except Exception as exc:
            # The loop reports the failure and carries on; the audit trail says so too.
            self._audit._verdict(self.name, {"verdict": "raised", "reason": repr(exc)}, ctx)
            raise
        summary = _summary(verdict)
        if summary["verdict"] not in _QUIET:
            self._audit._verdict(self.name, summary, ctx)
        return verdict

    def __repr__(self) -> str:
        return f"WatchedPolicy({self.policy!r})"


class AuditLogger:
    """Write an audit trail of a run as JSON lines.

    Example::

        with AuditLogger("audit.jsonl") as audit:
            agent = Agent(..., pre_dispatch_policies=[audit.watch(Sandbox(["."]))])
            agent.subscribe(audit)
            await agent.prompt("tidy the notes folder")

    Args:
        sink: a file path to append to, or a callable receiving each record.
        include_arguments: log tool call arguments (turn off when they may hold secrets).
        max_text: at most this many characters of a tool result's text are logged.
        redact: applied to each tool result's text before it is logged, for instance
            ``PiiRedactor().redact``: the events carry results as the tools returned them,
            before any post-turn policy redacted them.
    """

    def __init__(
        self,
        sink: str | os.PathLike[str] | Callable[[dict[str, Any]], None],
        *,
        include_arguments: bool = True,
        max_text: int = 500,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self._file: IO[str] | None = None
        self._callback: Callable[[dict[str, Any]], None] | None = None
        if isinstance(sink, str | os.PathLike):
            self._file = open(sink, "a", encoding="utf-8")  # closed by close()
        else:
            self._callback = sink
        self.include_arguments = include_arguments
        self.max_text = max_text
        self.redact = redact
        self._run = 0
        self._turn = 0
        self._model_started: float | None = None
        self._tools: dict[str, tuple[float, str, Any]] = {}
        self._call_verdicts: dict[str, list[dict[str, Any]]] = {}

    # ----------------------------------------------------------------- sink

    def write(self, record: dict[str, Any]) -> None:
        """Send one record to the sink; a failing sink is logged, never raised."""
        try:
            if self._file is not None:
                line = json.dumps(record, default=repr)
                self._file.write(line + "\n")
                self._file.flush()
            elif self._callback is not None:
                self._callback(record)
        except Exception:
            logger.exception("audit sink failed; record dropped")

    def _record(self, kind: str, **fields: Any) -> None:
        at = datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")
        self.write({"type": kind, "at": at, "run": self._run, **fields})

    def close(self) -> None:
        """Close the file sink (a callable sink needs no closing)."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ----------------------------------------------------------------- events

    def __call__(self, event: AgentEvent) -> None:
        """Observe one event of the run."""
        kind = type(event)
        if kind is ToolExecutionStart:
            assert isinstance(event, ToolExecutionStart)
            self._tools[event.call_id] = (time.perf_counter(), event.name, event.arguments)
        elif kind is ToolExecutionEnd:
            assert isinstance(event, ToolExecutionEnd)
            self._tool_end(event)
        elif kind is MessageStart:
            assert isinstance(event, MessageStart)
            if type(event.message) is AssistantMessage:
                self._model_started = time.perf_counter()
        elif kind is MessageEnd:
            assert isinstance(event, MessageEnd)
            if type(event.message) is AssistantMessage:
                self._model_end(event.message)
        elif kind is TurnStart:
            assert isinstance(event, TurnStart)
            self._turn = event.turn
        elif kind is AgentStart:
            self._run += 1
            self._turn = 0
            self._record("run_start")
        elif kind is AgentEnd:
            assert isinstance(event, AgentEnd)
            self._record("run_end", messages=len(event.messages))
            self._tools.clear()
            self._call_verdicts.clear()

    def _model_end(self, message: AssistantMessage) -> None:
        started, self._model_started = self._model_started, None
        duration = None if started is None else (time.perf_counter() - started) * 1000
        self._record(
            "model_call",
            turn=self._turn,
            provider=message.provider,
            model=message.model_id,
            duration_ms=None if duration is None else round(duration, 3),
            stop_reason=str(message.stop_reason),
            usage=_builtins(message.usage),
            cost=message.cost.total,
            tool_calls=[call.name for call in message.tool_calls],
            error=message.error_message,
        )

    def _tool_end(self, event: ToolExecutionEnd) -> None:
        started, _, arguments = self._tools.pop(event.call_id, (None, event.name, None))
        duration = None if started is None else (time.perf_counter() - started) * 1000
        text = extract_text(event.result.content)
        if self.redact is not None:
            text = self.redact(text)
        if len(text) > self.max_text:
            text = text[: self.max_text] + "..."
        self._record(
            "tool_call",
            turn=self._turn,
            call_id=event.call_id,
            tool=event.name,
            arguments=_builtins(arguments) if self.include_arguments else None,
            duration_ms=None if duration is None else round(duration, 3),
            is_error=event.is_error,
            result=text,
            verdicts=self._call_verdicts.pop(event.call_id, []),
        )

    # ----------------------------------------------------------------- decisions

    def watch(self, policy: Any) -> WatchedPolicy:
        """Wrap a policy of any slot so that its verdicts are logged."""
        return WatchedPolicy(policy, self)

    def watch_approval(self, callback: ApprovalCallback) -> ApprovalCallback:
        """Wrap an approval callback so that its refusals and rewrites are logged."""

        async def approval(call: ToolCall, tool: AgentTool | None) -> ApprovalDecision:
            decision = await callback(call, tool)
            summary = _summary(decision)
            if summary["verdict"] not in _QUIET:
                self._verdict("approval", summary, call)
            return decision

        return approval

    def _verdict(self, policy: str, summary: dict[str, Any], ctx: Any) -> None:
        call = getattr(ctx, "call", ctx if hasattr(ctx, "arguments") else None)
        fields: dict[str, Any] = {"policy": policy, **summary}
        if not self.include_arguments:
            fields.pop("arguments", None)
        if call is not None and hasattr(call, "id"):
            fields["call_id"] = call.id
            fields["tool"] = call.name
            self._call_verdicts.setdefault(call.id, []).append(
                {k: v for k, v in fields.items() if k not in ("call_id", "tool")}
            )
        else:
            fields["turn"] = getattr(ctx, "turn", self._turn)
        self._record("verdict", **fields)
