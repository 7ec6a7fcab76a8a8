"""Public names under public module names, in reprs and tracebacks.

Classes and functions are defined in private modules (``agentloop._types``) and re-exported by
public ones (``agentloop``, ``agentloop.stream``, ...); ``publish`` makes each report the public
module that exports it (``agentloop.HookFailed`` in a traceback, ``<class 'agentloop.Text'>``),
as trio's ``fixup_module_metadata`` does.

msgspec resolves a Struct's string annotations (``from __future__ import annotations``) in the
module its ``__module__`` names, lazily, at first use. So before a Struct moves, its annotations
are resolved where they were written and stored resolved.
"""

from __future__ import annotations

import inspect
import typing
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["publish"]


def _resolve_annotations(cls: type[Any]) -> None:
    for klass in cls.__mro__:
        if not klass.__module__.startswith("agentloop._"):
            continue
        own = klass.__dict__.get("__annotations__")
        if not own or not any(isinstance(v, str) for v in own.values()):
            continue
        hints = typing.get_type_hints(klass, include_extras=True)
        klass.__annotations__ = {name: hints[name] for name in own}


def publish(module: str, namespace: dict[str, Any], names: Iterable[str], *, force: bool) -> None:
    """Give the classes and functions ``names`` of ``namespace`` the module name ``module``.

    Without ``force``, only names still reporting a private module are changed, so a name that
    several public modules export keeps the first (or the forced) one.
    """
    for name in names:
        obj = namespace[name]
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        current = getattr(obj, "__module__", "") or ""
        if not current.startswith("agentloop"):
            continue
        if not force and not current.startswith("agentloop._"):
            continue
        if inspect.isclass(obj) and issubclass(obj, msgspec.Struct):
            _resolve_annotations(obj)
        obj.__module__ = module
