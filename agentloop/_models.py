"""Model strings: ``"provider:model-id"`` resolved to a ``ModelSpec`` and a provider.

The core knows no provider. Packages that bring providers fill a registry: either by calling
``register_provider`` or, the ecosystem's way, through an entry point in the group
``agentloop.providers`` whose value is a factory (``agentloop_providers`` declares one per
provider it has). A factory takes the model id and returns a ``ResolvedModel``: the model's
``ModelSpec`` (context window and prices from its catalog when it knows the model) and a
``StreamFn`` whose API key comes from the provider's usual environment variable.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

from ._errors import DISTRIBUTION, UnknownModel

if TYPE_CHECKING:
    from ._abc import StreamFn
    from ._types import ModelSpec

__all__ = [
    "ENTRY_POINT_GROUP",
    "ProviderFactory",
    "ResolvedModel",
    "register_provider",
    "registered_providers",
    "resolve_model",
    "split_model_string",
]

log = logging.getLogger("agentloop.models")

ENTRY_POINT_GROUP = "agentloop.providers"
"""The entry-point group where packages register provider factories for model strings."""
PROVIDERS_EXTRA = f'pip install "{DISTRIBUTION}[providers]"'


class ResolvedModel(NamedTuple):
    """What a model string stands for: the model's spec and the provider that calls it."""

    spec: ModelSpec
    stream_fn: StreamFn


ProviderFactory: TypeAlias = Callable[[str], ResolvedModel]
"""Makes the ``ResolvedModel`` of a model id (the part after ``provider:``)."""

_registered: dict[str, Callable[[str], ResolvedModel]] = {}
_entry_points: dict[str, object] | None = None
_lock = threading.Lock()


def register_provider(
    name: str, factory: Callable[[str], ResolvedModel], *, replace: bool = False
) -> None:
    """Make ``"{name}:{model id}"`` model strings resolve through ``factory(model_id)``.

    A registered factory takes precedence over an entry point of the same name.

    Raises:
        ValueError: ``name`` is empty or contains ``:``, or is registered already (without
            ``replace=True``).
    """
    if not name or ":" in name:
        raise ValueError(f"invalid provider name {name!r}")
    with _lock:
        if name in _registered and not replace:
            raise ValueError(f"a provider named {name!r} is registered already")
        _registered[name] = factory


def _load_entry_points() -> dict[str, object]:
    global _entry_points
    with _lock:
        if _entry_points is None:
            from importlib.metadata import entry_points

            _entry_points = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
        return _entry_points


def registered_providers() -> list[str]:
    """The provider names model strings can use, sorted."""
    return sorted({*_registered, *_load_entry_points()})


def split_model_string(model: str) -> tuple[str, str]:
    """``"provider:model-id"`` as ``(provider, model_id)``; the id may contain ``:`` itself.

    Raises:
        UnknownModel: the string is not of that form.
    """
    provider, sep, model_id = model.partition(":")
    if not sep or not provider or not model_id:
        raise UnknownModel(
            f"model strings look like 'provider:model-id' (for example "
            f"'anthropic:claude-sonnet-4-5'), not {model!r}"
        )
    return provider, model_id


def resolve_model(model: str) -> ResolvedModel:
    """The ``ModelSpec`` and provider for a model string such as ``"openai:gpt-5"``.

    Raises:
        UnknownModel: the string is malformed, no installed provider has that name (the
            message names the extra to install and the providers that are installed), or the
            provider's settings are missing or invalid.
    """
    provider, model_id = split_model_string(model)
    factory = _registered.get(provider)
    entry: Any = None
    try:
        if factory is None:
            entry = _load_entry_points().get(provider)
            if entry is not None:
                factory = entry.load()
        if factory is None:
            known = ", ".join(registered_providers()) or "none"
            raise UnknownModel(
                f"no provider named {provider!r} is installed (installed: {known}); the "
                f"providers that ship with agentloop come with: {PROVIDERS_EXTRA}"
            )
        return factory(model_id)
    except ModuleNotFoundError as exc:
        # The provider is registered but what it needs is not installed: name the extra
        # (an entry point declares it: ``name = "module:attr [extra]"``).
        if (exc.name or "").partition(".")[0].startswith("agentloop"):
            raise
        extras = list(getattr(entry, "extras", None) or ["providers"])
        dist = getattr(getattr(entry, "dist", None), "name", None) or DISTRIBUTION
        raise UnknownModel(
            f"model {model!r}: the {provider!r} provider needs the [{extras[0]}] extra "
            f'(no module named {exc.name!r}): pip install "{dist}[{extras[0]}]"'
        ) from exc
    except ValueError as exc:
        # The provider is there but its settings are not (Azure without an endpoint, say).
        raise UnknownModel(f"model {model!r}: {exc}") from exc
