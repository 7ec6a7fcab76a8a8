"""JSON encoding and decoding for every public struct, custom messages included.

msgspec decodes a tagged union only into the members it was given, so a field typed
``AgentMessage`` (whose custom part is open-ended) cannot name the application's subclasses in
advance. ``decode`` builds, once per set of registered ``CustomMessage`` subclasses, mirror
struct types whose message fields list those subclasses, decodes into them, and hands back
instances of the real types.
"""

from __future__ import annotations

import itertools
import sys
import types
import typing
from typing import Any, TypeVar, cast

import msgspec

from ._types import CustomMessage

__all__ = ["decode", "encode"]

T = TypeVar("T")

_encoder = msgspec.json.Encoder()
_mirrors: dict[type[Any], type[Any]] = {}  # mirror type -> real type
_namespace = types.ModuleType(f"{__name__}_mirrors")  # where mirrors find each other by name
sys.modules[_namespace.__name__] = _namespace
_names = itertools.count(1)
_cache: dict[tuple[Any, tuple[type[Any], ...]], tuple[Any, msgspec.json.Decoder[Any]]] = {}


def encode(value: Any) -> bytes:
    """Encode any message, event, result or checkpoint as JSON bytes."""
    return _encoder.encode(value)


def _involves_custom(tp: Any, seen: set[Any]) -> bool:
    if tp is CustomMessage:
        return True
    if tp in seen:
        return False
    seen.add(tp)
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        hints = typing.get_type_hints(tp)
        return any(_involves_custom(hints[f.name], seen) for f in msgspec.structs.fields(tp))
    return any(_involves_custom(arg, seen) for arg in typing.get_args(tp))


def _map(tp: Any, customs: tuple[type[Any], ...], memo: dict[Any, Any]) -> Any:
    if tp is CustomMessage:
        if not customs:
            return None
        # Custom messages may hold messages themselves, custom ones included: map them too.
        return typing.Union[tuple(_map(c, customs, memo) for c in customs)]  # noqa: UP007
    if tp in memo:
        return memo[tp]
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        if not _involves_custom(tp, set()):
            return tp
        # A type that contains itself refers to its mirror by name until the mirror exists;
        # msgspec resolves the name in the mirrors' module when it builds the decoder.
        name = f"{tp.__name__}_{next(_names)}"
        memo[tp] = typing.ForwardRef(name)
        hints = typing.get_type_hints(tp)
        config = tp.__struct_config__
        fields: list[Any] = []
        for f in msgspec.structs.fields(tp):
            ftype = _map(hints[f.name], customs, memo)
            if f.default is not msgspec.NODEFAULT:
                fields.append((f.encode_name, ftype, f.default))
            elif f.default_factory is not msgspec.NODEFAULT:
                fields.append(
                    (f.encode_name, ftype, msgspec.field(default_factory=f.default_factory))
                )
            else:
                fields.append((f.encode_name, ftype))
        mirror = msgspec.defstruct(
            tp.__name__,
            fields,
            tag=config.tag,
            tag_field=config.tag_field,
            kw_only=True,
            omit_defaults=config.omit_defaults,
            module=_namespace.__name__,
        )
        setattr(_namespace, name, mirror)
        _mirrors[mirror] = tp
        memo[tp] = mirror
        return mirror
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is None or not args:
        return tp
    mapped = tuple(a for a in (_map(a, customs, memo) for a in args) if a is not None)
    if origin in (typing.Union, types.UnionType):
        return typing.Union[mapped]  # noqa: UP007
    return origin[mapped] if len(mapped) > 1 else origin[mapped[0]]


def _unmirror(value: Any) -> Any:
    real = _mirrors.get(type(value))
    if real is not None:
        return real(**{f: _unmirror(getattr(value, f)) for f in value.__struct_fields__})
    if type(value) is list:
        return [_unmirror(v) for v in value]
    return value


def decode(data: bytes | str, type: type[T] | Any) -> T:  # noqa: A002
    """Decode JSON produced by ``encode`` (or any compatible JSON) as ``type``.

    Raises:
        msgspec.ValidationError: the JSON does not match ``type``.
        msgspec.DecodeError: the input is not JSON.
    """
    customs = tuple(CustomMessage.registered().values())
    key = (type, customs)
    entry = _cache.get(key)
    if entry is None:
        if _involves_custom(type, set()):
            mirror = _map(type, customs, {})
        else:
            mirror = type
        entry = (mirror, msgspec.json.Decoder(mirror))
        _cache[key] = entry
    mirror, decoder = entry
    value = decoder.decode(data)
    return cast("T", value if mirror is type else _unmirror(value))
