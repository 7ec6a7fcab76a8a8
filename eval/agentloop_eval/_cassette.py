"""Cassettes: a case's model answers (and, optionally, tool results) recorded once, replayed
offline, event for event.

A cassette is a JSON Lines file per case: a header, the ``ModelSpec`` each model string stood
for when it was recorded, then one line per model call (the provider's events, exactly as they
came) and per recorded tool call. Every line carries the repeat it belongs to, so each repeat of
a case replays its own recording.

A model call is looked up by its request: a hash of the model, the system prompt, what the
messages say (their roles, content and tool-call fields; never timestamps, usage or ``details``)
and the tools offered. Identical requests within a repeat get their recorded answers in order.
A request that is not on the cassette is a *miss*: the call fails and the run is reported as an
error, since the agent asked something it did not ask when the cassette was recorded.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections import deque
from typing import TYPE_CHECKING, Any

import msgspec

from agentloop import AgentToolResult, ModelSpec
from agentloop.secrets import redact_bytes
from agentloop.stream import AssistantMessageEvent, Done, ErrorEvent

from ._errors import CassetteError
from ._limits import MAX_CASSETTE_BYTES, MAX_CASSETTE_LINE, MAX_REPEATS, read_regular

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from agentloop import AgentTool, StreamOptions
    from agentloop.abc import OnUpdate
    from agentloop.stream import LlmContext, StreamFn

__all__ = [
    "Cassette",
    "CassetteMiss",
    "RecordingStream",
    "ReplayStream",
    "request_key",
    "tool_key",
]

FORMAT = 1
_KEPT = ("role", "content", "tool_call_id", "tool_name", "is_error")
_canonical = msgspec.json.Encoder(order="sorted")


def request_key(model: ModelSpec, context: LlmContext) -> str:
    """The stable hash of a model request that a cassette looks answers up by."""
    messages = []
    for message in context.messages:
        raw = msgspec.to_builtins(message)
        messages.append({k: raw[k] for k in _KEPT if k in raw})
    request = {
        "model": f"{model.provider}:{model.model_id}",
        "system": context.system_prompt,
        "messages": messages,
        "tools": msgspec.to_builtins(context.tools),
    }
    return hashlib.sha256(_canonical.encode(request)).hexdigest()[:32]


def tool_key(name: str, arguments: Any) -> str:
    """The stable hash of a tool call (its tool and arguments)."""
    return hashlib.sha256(_canonical.encode([name, arguments])).hexdigest()[:32]


class _Entry(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind"):
    pass


class Header(_Entry, frozen=True, tag="cassette"):
    case: str
    format: int = FORMAT


class ModelEntry(_Entry, frozen=True, tag="model"):
    name: str
    spec: ModelSpec


class CallEntry(_Entry, frozen=True, tag="call"):
    repeat: int
    key: str
    events: list[AssistantMessageEvent]


class ToolEntry(_Entry, frozen=True, tag="tool"):
    repeat: int
    key: str
    name: str
    result: AgentToolResult


_Line = Header | ModelEntry | CallEntry | ToolEntry
_line_decoder = msgspec.json.Decoder(_Line)
_encoder = msgspec.json.Encoder()


def _repeat(entry: CallEntry | ToolEntry) -> int:
    return entry.repeat


class CassetteMiss(msgspec.Struct, frozen=True, kw_only=True):
    """A request a replay found no recorded answer for."""

    what: str
    key: str


class Cassette:
    """The recordings of one case: model specs, model calls and tool results, by repeat."""

    def __init__(self, case: str) -> None:
        self.case = case
        self.models: dict[str, ModelSpec] = {}
        self.calls: list[CallEntry] = []
        self.tools: list[ToolEntry] = []

    @property
    def repeats(self) -> int:
        """How many repeats were recorded."""
        calls = max((e.repeat for e in self.calls), default=-1)
        return 1 + max(calls, max((e.repeat for e in self.tools), default=-1))

    def dumps(self) -> bytes:
        """The cassette as JSON Lines, calls in repeat order.

        Raises:
            CassetteError: a line would be longer than ``MAX_CASSETTE_LINE`` (a cassette that
                replay would refuse is not written).
        """
        calls = sorted(self.calls, key=_repeat)  # a stable sort: calls in order within
        tools = sorted(self.tools, key=_repeat)
        lines: list[_Entry] = [Header(case=self.case)]
        lines += [ModelEntry(name=n, spec=s) for n, s in sorted(self.models.items())]
        lines += calls
        lines += tools
        # A cassette is committed to a repository: no secret the process knows goes in it.
        encoded = [redact_bytes(_encoder.encode(line)) for line in lines]
        for number, line in enumerate(encoded, 1):
            if len(line) > MAX_CASSETTE_LINE:
                raise CassetteError(
                    f"cassette of {self.case!r}, line {number}: {len(line)} bytes, more than "
                    f"the limit of {MAX_CASSETTE_LINE} bytes per line"
                )
        return b"".join(line + b"\n" for line in encoded)

    @classmethod
    def loads(cls, data: bytes, *, source: str = "cassette") -> Cassette:
        """Read a cassette from its JSON Lines.

        Raises:
            CassetteError: a line is not a cassette entry, is longer than
                ``MAX_CASSETTE_LINE``, nests deeper than the decoder can go, or names a repeat
                out of range; or the header is missing.
        """
        cassette: Cassette | None = None
        for number, line in enumerate(data.splitlines(), 1):
            if not line.strip():
                continue
            where = f"{source}, line {number}"
            if len(line) > MAX_CASSETTE_LINE:
                raise CassetteError(
                    f"{where}: {len(line)} bytes, more than the limit of "
                    f"{MAX_CASSETTE_LINE} bytes per line"
                )
            try:
                entry = _line_decoder.decode(line)
            except msgspec.DecodeError as exc:
                raise CassetteError(f"{where}: {exc}") from None
            except RecursionError:
                raise CassetteError(f"{where}: nested deeper than the decoder's limit") from None
            if isinstance(entry, CallEntry | ToolEntry) and not 0 <= entry.repeat < MAX_REPEATS:
                raise CassetteError(
                    f"{where}: repeat {entry.repeat} is not between 0 and {MAX_REPEATS - 1}"
                )
            if isinstance(entry, Header):
                if entry.format != FORMAT:
                    raise CassetteError(f"{source}: format {entry.format}, not {FORMAT}")
                cassette = cls(entry.case)
            elif cassette is None:
                raise CassetteError(f"{source}, line {number}: no cassette header before it")
            elif isinstance(entry, ModelEntry):
                cassette.models[entry.name] = entry.spec
            elif isinstance(entry, CallEntry):
                cassette.calls.append(entry)
            else:
                cassette.tools.append(entry)
        if cassette is None:
            raise CassetteError(f"{source}: empty")
        return cassette

    @classmethod
    def load(cls, path: Path) -> Cassette:
        """Read the cassette at ``path``.

        Raises:
            CassetteError: it cannot be read, is not a regular file, is larger than
                ``MAX_CASSETTE_BYTES``, or is malformed.
        """
        data = read_regular(path, limit=MAX_CASSETTE_BYTES, error=CassetteError, what="cassette")
        return cls.loads(data, source=str(path))

    def save(self, path: Path) -> None:
        """Write the cassette to ``path`` (its folder is created if needed).

        Raises:
            CassetteError: it cannot be written.
        """
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(self.dumps())
        except OSError as exc:
            raise CassetteError(f"cannot write cassette {path}: {exc}") from exc


# --------------------------------------------------------------------------- model calls


class RecordingStream:
    """A ``StreamFn`` that calls ``inner`` and keeps each complete answer in ``cassette``."""

    def __init__(self, inner: StreamFn, cassette: Cassette, *, repeat: int) -> None:
        self.inner = inner
        self.cassette = cassette
        self.repeat = repeat

    def __call__(
        self, model: ModelSpec, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self._record(model, context, options)

    async def _record(
        self, model: ModelSpec, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        key = request_key(model, context)  # the context is only valid until the call ends
        events: list[AssistantMessageEvent] = []
        stream = self.inner(model, context, options)
        closing: Any = (
            contextlib.aclosing(stream) if hasattr(stream, "aclose") else contextlib.nullcontext()
        )
        async with closing:
            async for event in stream:
                events.append(event)
                if type(event) is Done or type(event) is ErrorEvent:
                    # Kept before handing the end on: the consumer may not come back for more.
                    entry = CallEntry(repeat=self.repeat, key=key, events=events)
                    self.cassette.calls.append(entry)
                yield event


class ReplayStream:
    """A ``StreamFn`` answering from the recorded calls of one repeat; ``misses`` lists the
    requests it had no answer for (each was answered with an ``ErrorEvent``)."""

    def __init__(self, cassette: Cassette, *, repeat: int) -> None:
        self._answers: dict[str, deque[list[AssistantMessageEvent]]] = {}
        for entry in cassette.calls:
            if entry.repeat == repeat:
                self._answers.setdefault(entry.key, deque()).append(entry.events)
        self.misses: list[CassetteMiss] = []
        self.played: list[CallEntry] = []
        self.repeat = repeat

    def __call__(
        self, model: ModelSpec, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        key = request_key(model, context)
        answers = self._answers.get(key)
        if not answers:
            self.misses.append(
                CassetteMiss(what=f"model {model.provider}:{model.model_id}", key=key)
            )
            message = f"cassette miss: no recorded answer for this request (key {key})"
            return _play([ErrorEvent(message=message)])
        events = answers.popleft()
        self.played.append(CallEntry(repeat=self.repeat, key=key, events=events))
        return _play(events)


async def _play(events: list[AssistantMessageEvent]) -> AsyncIterator[AssistantMessageEvent]:
    for event in events:
        yield event


# --------------------------------------------------------------------------- tool calls


class _ToolWrapper:
    """Everything of the wrapped tool (schema, validation, timeout) but ``execute``."""

    def __init__(self, inner: AgentTool) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class RecordingTool(_ToolWrapper):
    """A tool that runs ``inner`` and keeps each result in ``cassette``."""

    def __init__(self, inner: AgentTool, cassette: Cassette, *, repeat: int) -> None:
        super().__init__(inner)
        self._cassette = cassette
        self._repeat = repeat

    async def execute(self, call_id: str, arguments: Any, on_update: OnUpdate) -> AgentToolResult:
        result = await self._inner.execute(call_id, arguments, on_update)
        key = tool_key(self._inner.name, msgspec.to_builtins(arguments))
        entry = ToolEntry(repeat=self._repeat, key=key, name=self._inner.name, result=result)
        self._cassette.tools.append(entry)
        return result


class ReplayTool(_ToolWrapper):
    """A tool answering from the recorded results of one repeat, without running ``inner``."""

    def __init__(self, inner: AgentTool, cassette: Cassette, *, repeat: int) -> None:
        super().__init__(inner)
        self._results: dict[str, deque[AgentToolResult]] = {}
        for entry in cassette.tools:
            if entry.repeat == repeat and entry.name == inner.name:
                self._results.setdefault(entry.key, deque()).append(entry.result)
        self.misses: list[CassetteMiss] = []

    async def execute(self, call_id: str, arguments: Any, on_update: OnUpdate) -> AgentToolResult:
        key = tool_key(self._inner.name, msgspec.to_builtins(arguments))
        results = self._results.get(key)
        if not results:
            self.misses.append(CassetteMiss(what=f"tool {self._inner.name}", key=key))
            return AgentToolResult.error(f"cassette miss: no recorded result (key {key})")
        return results.popleft()
