"""API keys and the default model: from the environment or the system keyring, never a file.

A provider reads its key from its usual environment variable (``ANTHROPIC_API_KEY``, ...).
``ApiKeys`` is the agent's ``get_api_key`` hook: when that variable is unset it looks in the
system keyring (the optional ``keyring`` package; service ``agentloop``, user name = the
provider's name, e.g. ``keyring set agentloop anthropic``). Keys pass through memory only.

``default_model`` picks a model when none is configured: the first provider, in a fixed order,
whose key is in the environment, with that provider's default model.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

import anyio.to_thread

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["KEYRING_SERVICE", "PREFERRED_PROVIDERS", "ApiKeys", "default_model", "key_variable"]

log = logging.getLogger("agentloop.coding")

KEYRING_SERVICE = "agentloop"
PREFERRED_PROVIDERS = (
    "anthropic",
    "openai",
    "gemini",
    "mistral",
    "xai",
    "groq",
    "deepseek",
    "openrouter",
)
"""The order in which ``default_model`` looks for a provider with a key."""


def key_variable(provider: str) -> str | None:
    """The environment variable holding ``provider``'s API key, if it is a known preset."""
    from agentloop_providers import UnknownPreset, get_preset

    try:
        return get_preset(provider).api_key_env
    except UnknownPreset:
        return None


def default_model(environ: Mapping[str, str] | None = None) -> str | None:
    """``"provider:model"`` for the first preferred provider with a key in the environment."""
    from agentloop_providers import get_preset

    env = os.environ if environ is None else environ
    for name in PREFERRED_PROVIDERS:
        preset = get_preset(name)
        if preset.api_key_env and env.get(preset.api_key_env):
            return f"{name}:{preset.default_model}"
    return None


def _system_keyring(service: str, user: str) -> str | None:
    try:
        import keyring  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return None
    value = keyring.get_password(service, user)
    return value if isinstance(value, str) else None


class ApiKeys:
    """The agent's ``get_api_key`` hook: ``None`` (the provider reads its environment variable)
    when that variable is set, else the key stored in the keyring for the provider, if any.

    Args:
        environ: the environment (default ``os.environ``).
        keyring_get: looks a password up by ``(service, user)``; default: the ``keyring``
            package when it is installed.
    """

    def __init__(
        self,
        *,
        environ: Mapping[str, str] | None = None,
        keyring_get: Callable[[str, str], str | None] | None = None,
    ) -> None:
        self.environ = os.environ if environ is None else environ
        self.keyring_get = keyring_get or _system_keyring

    async def __call__(self, provider: str) -> str | None:
        variable = key_variable(provider)
        if variable and self.environ.get(variable):
            return None
        try:
            # A keyring may talk to a desktop service: keep it off the event loop.
            key = await anyio.to_thread.run_sync(
                self.keyring_get, KEYRING_SERVICE, provider, abandon_on_cancel=True
            )
        except Exception as exc:
            # A convenience that fails passes: the provider reports the missing key itself.
            log.warning("keyring lookup for %s failed: %s", provider, type(exc).__name__)
            return None
        return key.strip() if key else None
