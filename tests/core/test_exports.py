"""The public surface: ``__all__`` is sorted, complete, and holds every name DESIGN.md promises."""

from __future__ import annotations

import types

import pytest

import agentloop
import agentloop.testing

# DESIGN.md, "Public names". Changing one needs a reason written in CHANGELOG.md.
DESIGN_PUBLIC_NAMES = [
    # data model
    "Text",
    "Thinking",
    "ToolCall",
    "Image",
    "Extension",
    "ContentBlock",
    "UserMessage",
    "AssistantMessage",
    "ToolResultMessage",
    "LlmMessage",
    "CustomMessage",
    "AgentMessage",
    "Usage",
    "Cost",
    "StopReason",
    "ThinkingLevel",
    "ModelSpec",
    "StreamOptions",
    "AgentContext",
    "AgentResult",
    # provider protocol
    "StreamFn",
    "AssistantMessageEvent",
    # events
    "AgentEvent",
    "AgentStart",
    "AgentEnd",
    "TurnStart",
    "TurnEnd",
    "TurnEndReason",
    "MessageStart",
    "MessageUpdate",
    "MessageEnd",
    "ToolExecutionStart",
    "ToolExecutionUpdate",
    "ToolExecutionEnd",
    # tools, loop, agent
    "AgentTool",
    "AgentToolResult",
    "tool",
    "AgentLoopConfig",
    "agent_loop",
    "agent_loop_continue",
    "run_loop",
    "Agent",
    "RetryStrategy",
    "ExponentialBackoff",
    # errors
    "AgentError",
    "ContextWindowOverflow",
    "ModelThrottled",
    "NetworkError",
    "StructuredOutputFailed",
    "AlreadyRunning",
    "NoMessages",
    "InvalidContinue",
    "StreamError",
    "Aborted",
]
DESIGN_TESTING_NAMES = ["ScriptedStream"]

MODULES = [agentloop, agentloop.testing]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_all_is_sorted_without_duplicates(module: types.ModuleType) -> None:
    names: list[str] = list(module.__all__)
    assert names == sorted(names)
    assert len(names) == len(set(names))


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_every_name_in_all_exists(module: types.ModuleType) -> None:
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == []


def test_every_public_name_of_the_package_is_in_all() -> None:
    public = {
        name
        for name, value in vars(agentloop).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert sorted(public - set(agentloop.__all__)) == []


def test_every_public_name_of_testing_is_in_all() -> None:
    defined_here = {
        name
        for name, value in vars(agentloop.testing).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == "agentloop.testing"
    }
    assert sorted(defined_here - set(agentloop.testing.__all__)) == []


def test_design_public_names_are_exported() -> None:
    assert len(DESIGN_PUBLIC_NAMES) == len(set(DESIGN_PUBLIC_NAMES))
    missing = [name for name in DESIGN_PUBLIC_NAMES if name not in agentloop.__all__]
    assert missing == []
    absent = [name for name in DESIGN_PUBLIC_NAMES if not hasattr(agentloop, name)]
    assert absent == []


def test_design_testing_names_are_exported() -> None:
    for name in DESIGN_TESTING_NAMES:
        assert name in agentloop.testing.__all__
        assert hasattr(agentloop.testing, name)


def test_public_classes_and_functions_say_where_they_live() -> None:
    # Re-exported objects come from private modules of the package, never from elsewhere.
    for name in agentloop.__all__:
        module = getattr(getattr(agentloop, name), "__module__", None)
        if isinstance(module, str) and isinstance(getattr(agentloop, name), type):
            assert module.startswith("agentloop."), (name, module)


def test_version() -> None:
    assert isinstance(agentloop.__version__, str)
    assert agentloop.__version__.count(".") >= 2
