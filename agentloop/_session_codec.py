"""How the session stores turn messages into records and back, whatever either holds.

Writing never fails for a message's content. A message is encoded as it is; one that cannot be
(a value JSON cannot represent, such as an arbitrary object in a tool result's ``details``, or
nesting deeper than the encoder goes) is stored in a degraded form instead, with a warning:

- every value JSON cannot represent is replaced by the string
  ``"<agentloop: unencodable TYPE: REPR>"`` (``REPR`` shortened by ``reprlib``);
- every value nested more than ``MAX_DEPTH`` levels below the message is replaced by
  ``"<agentloop: unencodable nested too deep>"``;
- everything else (the role, ids, text, the rest of a dict) is kept as it was.

A message whose degraded form still cannot be encoded, or no longer reads back as its type (a
field declared ``int`` holding an object), is skipped with a warning.

Reading never fails for a record's content either: a record that is not a message (garbage,
wrong types, nesting too deep for the decoder) is skipped with a warning, and the others load.
"""

from __future__ import annotations

import logging
import reprlib
from typing import TYPE_CHECKING, Any

import msgspec

from ._codec import decode, encode
from ._redaction import redact, redact_bytes, secrets_now
from ._types import AgentMessage

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["MAX_DEPTH", "UNENCODABLE", "decode_records", "encode_records", "is_message"]

logger = logging.getLogger("agentloop.sessions")

UNENCODABLE = "<agentloop: unencodable"
MAX_DEPTH = 100  # far below the encoder's and decoder's limits (about 1,000)
_TOO_DEEP = f"{UNENCODABLE} nested too deep>"
_PLAIN = (str, int, float, bool, type(None))


def _marker(value: Any) -> str:
    return f"{UNENCODABLE} {type(value).__qualname__}: {reprlib.repr(value)}>"


def _degrade(value: Any, depth: int) -> Any:
    """``value`` with every part JSON cannot hold replaced by a marker string."""
    if type(value) in _PLAIN:
        return value
    if depth >= MAX_DEPTH:
        return _TOO_DEEP
    if isinstance(value, msgspec.Struct):
        fields = {f: _degrade(getattr(value, f), depth + 1) for f in value.__struct_fields__}
        return msgspec.structs.replace(value, **fields)
    if isinstance(value, dict):
        return {
            key if type(key) in (str, int) else _marker(key): _degrade(item, depth + 1)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple | set | frozenset):
        return [_degrade(item, depth + 1) for item in value]
    try:
        encode(value)  # a date, a UUID, an enum, bytes...: msgspec knows it
    except Exception:
        return _marker(value)
    return value


def _encode_one(message: AgentMessage, where: str) -> bytes | Exception:
    """The message's record, or why it cannot have one."""
    try:
        return encode(message)
    except Exception as exc:  # noqa: BLE001 - whatever the content, the session goes on
        reason = f"{type(exc).__name__}: {exc}"
    try:
        data = encode(_degrade(message, 0))
        decode(data, AgentMessage)
    except Exception as exc:  # noqa: BLE001
        logger.warning(
            "%s: skipping a %s that cannot be stored (%s; degraded: %s: %s)",
            where,
            type(message).__name__,
            reason,
            type(exc).__name__,
            exc,
        )
        return exc
    logger.warning(
        "%s: a %s is stored in a degraded form (%s)", where, type(message).__name__, reason
    )
    return data


def _redact_tree(value: Any, known: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return redact(value, known=known)
    if isinstance(value, list):
        return [_redact_tree(item, known) for item in value]
    if isinstance(value, dict):
        return {redact(k, known=known): _redact_tree(v, known) for k, v in value.items()}
    return value


def _without_secrets(data: bytes, known: tuple[str, ...], where: str) -> bytes | Exception:
    """The record with every known secret and key shape redacted (``_redaction``): a session
    file is a surface a key must never reach, whatever message carried it. Each string is
    redacted on its own, so the record stays the same JSON."""
    if redact_bytes(data, known=known) is data:
        return data  # the usual case: nothing to redact, nothing copied
    try:
        return encode(_redact_tree(msgspec.json.decode(data), known))
    except (RecursionError, msgspec.MsgspecError) as exc:
        logger.warning("%s: skipping a message holding a secret it cannot be freed of", where)
        return exc


def encode_records(
    messages: Sequence[AgentMessage], where: str
) -> tuple[list[bytes], list[AgentMessage], list[Exception]]:
    """Encode messages for a store: the records, the messages they hold, in order, and why
    each message left out (it cannot be stored in any form) was. Records are redacted of
    every secret the process knows."""
    records: list[bytes] = []
    kept: list[AgentMessage] = []
    rejected: list[Exception] = []
    known = secrets_now()
    for message in messages:
        data = _encode_one(message, where)
        if isinstance(data, bytes):
            data = _without_secrets(data, known, where)
        if isinstance(data, bytes):
            records.append(data)
            kept.append(message)
        else:
            rejected.append(data)
    return records, kept, rejected


def is_message(record: bytes) -> bool:
    """Whether a record reads as a message."""
    try:
        decode(record, AgentMessage)
    except Exception:  # noqa: BLE001 - garbage, wrong types, nesting too deep
        return False
    return True


def decode_records(records: list[bytes], where: str) -> list[AgentMessage]:
    """Decode records, at C speed when all are sound; bad ones are skipped with a warning."""
    if not records:
        return []
    try:
        out: list[AgentMessage] = decode(b"[" + b",".join(records) + b"]", list[AgentMessage])
    except Exception:  # noqa: BLE001, S110 - some record is bad: find it below
        pass
    else:
        if len(out) == len(records):  # no record smuggled in two messages
            return out
    out = []
    for number, record in enumerate(records, 1):
        try:
            out.append(decode(record, AgentMessage))
        except Exception as exc:  # noqa: BLE001
            logger.warning("%s: skipping unreadable record %d: %s", where, number, exc)
    return out
