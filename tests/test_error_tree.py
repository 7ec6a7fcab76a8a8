"""One exception tree: every exception class a public module exports is an ``AgentError``.

The modules are walked, not listed by hand: an error added to any package's ``__all__`` later
is checked too.
"""

from __future__ import annotations

import importlib

import pytest

from agentloop import AgentError
from agentloop.testing import ConformanceError

PUBLIC_MODULES = [
    "agentloop",
    "agentloop.abc",
    "agentloop.context",
    "agentloop.loop",
    "agentloop.models",
    "agentloop.multi",
    "agentloop.sessions",
    "agentloop.stream",
    "agentloop.testing",
    "agentloop_coding",
    "agentloop_eval",
    "agentloop_local",
    "agentloop_mcp",
    "agentloop_otel",
    "agentloop_policies",
    "agentloop_providers",
    "agentloop_temporal",
    "agentloop_tui",
]

# A failed conformance check is a test failure, as pytest reports it: an AssertionError.
NOT_LIBRARY_ERRORS = {ConformanceError}


def exported_errors(module_name: str) -> list[type[BaseException]]:
    module = importlib.import_module(module_name)
    exported = (getattr(module, name) for name in module.__all__)
    return [e for e in exported if isinstance(e, type) and issubclass(e, BaseException)]


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_every_exported_error_is_an_agent_error(module_name: str) -> None:
    outside = [
        e.__name__
        for e in exported_errors(module_name)
        if not issubclass(e, AgentError) and e not in NOT_LIBRARY_ERRORS
    ]
    assert outside == []


def test_the_errors_the_design_names_are_in_the_tree() -> None:
    names = {e.__name__ for m in PUBLIC_MODULES for e in exported_errors(m)}
    assert {
        "HookFailed",
        "SessionNotFound",
        "ToolArgumentError",
        "UnknownModel",
        "UnknownPreset",
        "ProtocolError",
        "FrameTooLarge",
        "InvalidApiKey",
        "McpError",
        "EvalError",
        "ConfigError",
    } <= names


def test_errors_raised_from_inside_the_packages_are_in_the_tree() -> None:
    """Errors a public function raises without exporting the class."""
    from agentloop_providers import AwsCredentials, NDJSONDecoder

    with pytest.raises(AgentError):
        AwsCredentials.from_env({})
    with pytest.raises(AgentError):
        NDJSONDecoder().feed(b"{not json}\n")
