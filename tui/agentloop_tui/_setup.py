"""First run: put the wizard's answers to use.

The API key goes into this process's environment, under the provider's own variable, so the
provider finds it as usual; with ``remember`` it is also stored in the system keyring (when the
``keyring`` package is installed, under the service ``agentloop`` where the coding agent's
``ApiKeys`` looks), never in a file. A local server's base URL goes into the environment too
(``{PROVIDER}_BASE_URL``, which the provider reads); it is not saved. The model is written to the
user's configuration file with ``remember`` only when that file does not exist yet: an existing
file is the user's own and is left alone.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import msgspec

from agentloop_coding import user_config_path

if TYPE_CHECKING:
    from collections.abc import MutableMapping

    from ._wizard import Setup

__all__ = ["KEYRING_SERVICE", "apply_setup", "key_variable", "needs_setup"]

KEYRING_SERVICE = "agentloop"
"""The keyring service API keys are kept under (the one ``agentloop_coding.ApiKeys`` reads)."""


def key_variable(provider: str) -> str | None:
    """The environment variable holding ``provider``'s API key, if it is a known preset."""
    from agentloop_providers import UnknownPreset, get_preset

    try:
        return get_preset(provider).api_key_env
    except UnknownPreset:
        return None


def needs_setup(model: str | None, environ: MutableMapping[str, str] | None = None) -> bool:
    """Whether the wizard must ask for a model: none configured and no provider key set."""
    from agentloop_coding import default_model

    return model is None and default_model(os.environ if environ is None else environ) is None


def _keyring_set(provider: str, key: str) -> bool:
    try:
        import keyring  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return False
    try:
        keyring.set_password(KEYRING_SERVICE, provider, key)
    except Exception:  # a keyring backend can fail in many ways; the key still works now
        return False
    return True


def apply_setup(setup: Setup, environ: MutableMapping[str, str] | None = None) -> list[str]:
    """Use the wizard's answers; returns lines telling the user what was done."""
    env = os.environ if environ is None else environ
    said: list[str] = []
    variable = key_variable(setup.provider)
    if setup.api_key and variable:
        env[variable] = setup.api_key
        if setup.remember and _keyring_set(setup.provider, setup.api_key):
            said.append(f"the {setup.provider} key is stored in the system keyring")
        else:
            said.append(f"the key is used for this run only: export {variable}=... to keep it")
    if setup.base_url:
        url_variable = f"{setup.provider.upper()}_BASE_URL"
        env[url_variable] = setup.base_url
        said.append(
            f"{setup.provider} at {setup.base_url} for this run: "
            f"export {url_variable}={setup.base_url} to keep it"
        )
    if setup.remember:
        path = user_config_path(env)
        if path.exists():
            said.append(f"{path} exists and was left alone: set model there to keep this one")
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            # A JSON string is a TOML basic string: the model id is written escaped.
            quoted = msgspec.json.encode(setup.model_string).decode()
            path.write_text(f"model = {quoted}\n", encoding="utf-8")
            said.append(f"the model is saved in {path}")
    return said
