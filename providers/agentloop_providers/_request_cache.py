"""Request bodies built incrementally: each message of a history converted and encoded once.

A model call sends the whole conversation, which grows by a few messages a turn. Converting
every message to the wire format and encoding the body again on each call costs time in
proportion to the history; a ``RequestCache`` (one per provider instance) makes that cost
proportional to what is new. It keeps two things, both bounded:

- **pieces**: a message's encoded wire form (JSON text), keyed by the message's identity and
  whatever else changes its bytes (the model's provider, a cache mark, a resolved tool name),
  so that a message already seen is never converted again;
- **transcripts**: per conversation, the messages of its last request and the wire items
  (``msgspec.Raw`` values) they were assembled into. A request that repeats those messages and
  adds some builds the items of the new ones only; the rest is a copy of a list.

Messages are recognised by identity (``is``), never by equality: the loop hands the provider
the same message objects turn after turn, and a fresh object equal to a known one is converted
afresh (an equal message can still encode differently: the key order of a dict, ``1`` against
``1.0``). Every entry keeps a reference to its message, so an identity is never reused while
its entry lives.

A ``Codec`` (one per wire protocol) says how messages fold into wire items: which ones merge
with their neighbours, what state the fold carries (the role of the last item, the names of
earlier tool calls) and which items a request decorates at its end (cache breakpoints). The
items before the last *unit* of a request (a message, or the run of messages that merge into
one item) are settled: no later message changes them. A transcript keeps the settled items and
the state before the last unit, and the next request folds on from there.

The body is byte for byte the body built without the cache (a property test checks every
adapter). What remains linear in the history is C-level work: copying the bytes into the
request, and checking that the repeated messages are the same objects — which is skipped when
the messages are the loop's own ``MessageLog`` met again (only ever appended to, so the part
a transcript saw is unchanged by contract).
"""

from __future__ import annotations

import bisect
import operator
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, overload

import msgspec

from agentloop.stream import MessageLog

if TYPE_CHECKING:
    from collections.abc import Hashable

__all__ = [
    "DEFAULT_REQUEST_CACHE_BYTES",
    "STALE",
    "Chain",
    "Codec",
    "Coalesced",
    "Fold",
    "Pieces",
    "RequestCache",
    "Tail",
    "encode",
]

DEFAULT_REQUEST_CACHE_BYTES: Final = 64 * 1024 * 1024
"""The memory one provider's request cache may use by default (pieces and transcripts)."""

encode = msgspec.json.Encoder().encode
STALE: Final = object()
"""What ``Codec.resume`` returns when a transcript cannot be folded on."""

# What an entry costs beyond its bytes (key, tuple, dict slot; the Raw, list slots, start and
# tag of an item; a reference), measured roughly with tracemalloc on CPython 3.11.
_PIECE_COST = 200
_ITEM_COST = 120
_REF_COST = 8
_TRANSCRIPT_COST = 1024
_HEADS = 4  # transcripts kept per first message (conversations forked from one history)
# Settled items are joined into chunks of this many once that many more are kept, all but the
# last _LOOSE: one contiguous chunk encodes much faster than its items scattered in memory, and
# decorations only ever change the last few items.
_CHUNK = 64
_LOOSE = 8
_is = operator.is_


class Pieces:
    """Encoded messages by key, least recently used dropped first past ``max_bytes``.

    A key holds the message's ``id`` and the flags that change its bytes; the entry keeps the
    message, and ``get`` answers only for that very object.
    """

    __slots__ = ("_entries", "max_bytes", "nbytes")

    def __init__(self, max_bytes: int) -> None:
        self._entries: OrderedDict[Hashable, tuple[object, Any, int]] = OrderedDict()
        self.max_bytes = max_bytes
        self.nbytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable, message: object) -> Any:
        """The piece stored for ``message`` under ``key``, or ``None``."""
        entry = self._entries.get(key)
        if entry is None or entry[0] is not message:
            return None
        self._entries.move_to_end(key)
        return entry[1]

    def put(self, key: Hashable, message: object, value: Any, size: int) -> None:
        """Keep ``value`` (``size`` bytes of encoded text) for ``message`` under ``key``."""
        cost = size + _PIECE_COST
        if cost > self.max_bytes:
            return
        old = self._entries.pop(key, None)
        if old is not None:
            self.nbytes -= old[2]
        self._entries[key] = (message, value, cost)
        self.nbytes += cost
        while self.nbytes > self.max_bytes:
            _, (_, _, dropped) = self._entries.popitem(last=False)
            self.nbytes -= dropped

    def clear(self) -> None:
        self._entries.clear()
        self.nbytes = 0


class _NoPieces(Pieces):
    """Remembers nothing: for a request built while another thread holds the cache."""

    __slots__ = ()

    def get(self, key: Hashable, message: object) -> Any:
        return None

    def put(self, key: Hashable, message: object, value: Any, size: int) -> None:
        return None


_NO_PIECES: Final = _NoPieces(0)


class Fold:
    """What a codec's fold produced, from its ``start`` to the end of the messages.

    ``items`` are the wire items (``msgspec.Raw``), each with the index of the first message of
    its unit in ``starts`` and a codec's tag (a role, say) in ``tags``. ``restart`` is where the
    last unit begins and ``state`` the fold's state just before it: the next request folds on
    from there. ``scratch`` holds what the codec converted during this request (by ``id``), so
    that decorating an item does not convert its messages again.
    """

    __slots__ = ("items", "restart", "scratch", "starts", "state", "tags")

    def __init__(self, start: int, state: Any) -> None:
        self.items: list[msgspec.Raw] = []
        self.starts: list[int] = []
        self.tags: list[Any] = []
        self.restart = start
        self.state = state
        self.scratch: dict[int, Any] = {}

    def add(self, start: int, data: bytes, tag: Any = None) -> None:
        """Append the item ``data`` of the unit that begins at message ``start``."""
        self.items.append(msgspec.Raw(data))
        self.starts.append(start)
        self.tags.append(tag)


class Coalesced(LookupError):
    """An item (or its tag or start) was merged into a chunk: only the last few are kept."""


class Chain(Sequence[Any]):
    """A read-only sequence of two lists end to end, the first ``skip`` values left out.

    The values of a request's items, by item index: the transcript's last few (the earlier
    ones are in chunks; asking for one raises ``Coalesced``), then the fold's.
    """

    __slots__ = ("_first", "_second", "_skip", "_split")

    def __init__(self, first: list[Any], second: list[Any], skip: int = 0) -> None:
        self._first = first
        self._second = second
        self._skip = skip
        self._split = skip + len(first)

    def __len__(self) -> int:
        return self._split + len(self._second)

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Any]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if index >= self._split:
            return self._second[index - self._split]
        if index < self._skip:
            raise Coalesced(index)
        return self._first[index - self._skip]


class Tail:
    """A request's last items, addressed by their index among all its items (the earlier ones
    are in chunks: asking for one raises ``Coalesced``)."""

    __slots__ = ("items", "skip")

    def __init__(self, items: list[msgspec.Raw], skip: int) -> None:
        self.items = items
        self.skip = skip

    def __len__(self) -> int:
        return self.skip + len(self.items)

    def __getitem__(self, index: int) -> msgspec.Raw:
        if index < self.skip:
            raise Coalesced(index)
        return self.items[index - self.skip]

    def __setitem__(self, index: int, item: msgspec.Raw) -> None:
        if index < self.skip:
            raise Coalesced(index)
        self.items[index - self.skip] = item


class Codec:
    """How one wire protocol folds messages into items; one instance per request.

    ``key`` holds everything besides the messages that changes their bytes (the protocol, the
    model's provider, options); pieces and transcripts are kept per key.
    """

    __slots__ = ("key",)

    def __init__(self, key: Hashable) -> None:
        self.key = key

    def start(self, messages: Sequence[Any]) -> Any:
        """The state of a fold from the first message."""
        return None

    def resume(self, state: Any, messages: Sequence[Any], known: int) -> Any:
        """The state to fold on with, from a transcript of the first ``known`` messages
        (``STALE`` when the new messages change a settled item)."""
        return state

    def fold(
        self, messages: Sequence[Any], start: int, state: Any, pieces: Pieces, out: Fold
    ) -> None:
        """Fold ``messages[start:]`` into ``out``, from ``state``."""
        raise NotImplementedError

    def finish(
        self,
        items: Tail,
        starts: Sequence[int],
        tags: Sequence[Any],
        messages: Sequence[Any],
        pieces: Pieces,
        out: Fold,
    ) -> None:
        """Decorate the request's last items in place (by index among all its items)."""
        return None


class _Transcript:
    """A conversation's last request: its messages, and its settled items, the earlier ones
    joined into ``chunks`` (``coalesced`` items in all), the others in ``items`` with the index
    of their unit's first message in ``starts`` and their tag in ``tags``."""

    __slots__ = (
        "chunks",
        "coalesced",
        "head",
        "items",
        "nbytes",
        "refs",
        "restart",
        "source",
        "starts",
        "state",
        "tags",
    )

    def __init__(self, head: tuple[Hashable, int] | None) -> None:
        self.head = head
        self.refs: list[Any] = []
        # The ``MessageLog`` the transcript was last extended from (``None``: another list).
        self.source: MessageLog | None = None
        self.chunks: list[msgspec.Raw] = []
        self.coalesced = 0
        self.items: list[msgspec.Raw] = []
        self.starts: list[int] = []
        self.tags: list[Any] = []
        self.restart = 0
        self.state: Any = None
        self.nbytes = _TRANSCRIPT_COST


class RequestCache:
    """The encoded history a provider keeps between requests (see the module docstring).

    Args:
        max_bytes: the memory it may hold, half for pieces and half for transcripts, counted
            as the encoded bytes plus a fixed cost per entry. Least recently used entries go
            first; a conversation larger than its half is not kept at all.

    One thread builds at a time; a request built meanwhile on another thread skips the cache.
    """

    def __init__(self, max_bytes: int = DEFAULT_REQUEST_CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self.pieces = Pieces(max_bytes // 2)
        self._max_transcript_bytes = max_bytes - max_bytes // 2
        self._transcript_bytes = 0
        self._transcripts: OrderedDict[int, _Transcript] = OrderedDict()
        self._heads: dict[tuple[Hashable, int], list[_Transcript]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"RequestCache(max_bytes={self.max_bytes}, nbytes={self.nbytes}, "
            f"pieces={len(self.pieces)}, transcripts={len(self._transcripts)})"
        )

    @property
    def nbytes(self) -> int:
        """The memory in use, counted as ``max_bytes`` counts it."""
        return self.pieces.nbytes + self._transcript_bytes

    @property
    def transcripts(self) -> int:
        """How many conversations are kept."""
        return len(self._transcripts)

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self.pieces.clear()
            self._transcripts.clear()
            self._heads.clear()
            self._transcript_bytes = 0

    def items(self, codec: Codec, messages: Sequence[Any]) -> list[msgspec.Raw]:
        """The wire items of ``messages``, each a ``msgspec.Raw`` to put in the body's list.

        Whatever the codec's conversion raises goes through (the request then cannot be built).
        """
        if not self._lock.acquire(blocking=False):
            return _uncached(codec, messages)
        try:
            return self._items(codec, messages)
        finally:
            self._lock.release()

    def _items(self, codec: Codec, messages: Sequence[Any]) -> list[msgspec.Raw]:
        head = (codec.key, id(messages[0])) if messages else None
        transcript = self._find(head, messages) if head is not None else None
        state: Any = STALE
        if transcript is not None:
            state = codec.resume(transcript.state, messages, len(transcript.refs))
            if state is STALE:
                self._forget(transcript)
                transcript = None
        try:
            return self._build(codec, messages, head, transcript, state)
        except Coalesced:
            # A decoration reached back into a chunk (no codec does): build afresh, unchunked.
            assert transcript is not None
            self._forget(transcript)
            return self._build(codec, messages, head, None, STALE)

    def _build(
        self,
        codec: Codec,
        messages: Sequence[Any],
        head: tuple[Hashable, int] | None,
        transcript: _Transcript | None,
        state: Any,
    ) -> list[msgspec.Raw]:
        base = _Transcript(head) if transcript is None else transcript
        if transcript is None:
            state = codec.start(messages)
        out = Fold(base.restart, state)
        skip = base.coalesced
        try:
            codec.fold(messages, base.restart, state, self.pieces, out)
            tail = Tail(base.items + out.items, skip)
            starts, tags = Chain(base.starts, out.starts, skip), Chain(base.tags, out.tags, skip)
            codec.finish(tail, starts, tags, messages, self.pieces, out)
        except BaseException:
            if transcript is not None:  # its state may be half folded
                self._forget(transcript)
            raise
        body = base.chunks + tail.items if base.chunks else tail.items
        if head is not None:
            self._keep(base, transcript is not None, messages, out)  # may add a chunk
        return body

    def _find(self, head: tuple[Hashable, int], messages: Sequence[Any]) -> _Transcript | None:
        best: _Transcript | None = None
        size = len(messages)
        for transcript in self._heads.get(head, ()):
            known = len(transcript.refs)
            if known <= size and (best is None or known > len(best.refs)):
                if transcript.source is messages or all(map(_is, transcript.refs, messages)):
                    best = transcript
        return best

    def _keep(
        self, transcript: _Transcript, reused: bool, messages: Sequence[Any], out: Fold
    ) -> None:
        if not reused:
            assert transcript.head is not None
            siblings = self._heads.setdefault(transcript.head, [])
            if len(siblings) >= _HEADS:
                self._forget(siblings[-1])
            siblings.insert(0, transcript)
            self._transcripts[id(transcript)] = transcript
            self._transcript_bytes += transcript.nbytes
        settled = bisect.bisect_left(out.starts, out.restart)
        new_items = out.items[:settled]
        added = _ITEM_COST * settled + sum(map(len, new_items))
        known = len(transcript.refs)
        transcript.items.extend(new_items)
        transcript.starts.extend(out.starts[:settled])
        transcript.tags.extend(out.tags[:settled])
        transcript.refs.extend(messages[known:])
        transcript.source = messages if type(messages) is MessageLog else None
        added += _REF_COST * (len(messages) - known)
        transcript.restart = out.restart
        transcript.state = out.state
        # Only a transcript that was folded on is worth joining: under a moving window every
        # request starts a new one, which the next request does not extend.
        if reused and len(transcript.items) >= _CHUNK + _LOOSE:
            joined = transcript.items[:-_LOOSE]
            transcript.chunks.append(msgspec.Raw(b",".join(map(memoryview, joined))))
            transcript.coalesced += len(joined)
            del transcript.items[:-_LOOSE], transcript.starts[:-_LOOSE], transcript.tags[:-_LOOSE]
            added += len(joined) - 1 - _ITEM_COST * (len(joined) - 1)
        transcript.nbytes += added
        self._transcript_bytes += added
        self._transcripts.move_to_end(id(transcript))
        if transcript.nbytes > self._max_transcript_bytes:
            self._forget(transcript)
            return
        while self._transcript_bytes > self._max_transcript_bytes:
            self._forget(next(iter(self._transcripts.values())))

    def _forget(self, transcript: _Transcript) -> None:
        if self._transcripts.pop(id(transcript), None) is None:
            return
        self._transcript_bytes -= transcript.nbytes
        assert transcript.head is not None
        siblings = self._heads[transcript.head]
        siblings.remove(transcript)
        if not siblings:
            del self._heads[transcript.head]


def _uncached(codec: Codec, messages: Sequence[Any]) -> list[msgspec.Raw]:
    out = Fold(0, codec.start(messages))
    codec.fold(messages, 0, out.state, _NO_PIECES, out)
    codec.finish(Tail(out.items, 0), out.starts, out.tags, messages, _NO_PIECES, out)
    return out.items
