"""The public surface: each public module's ``__all__`` is pinned, sorted and complete; names
report the public module that exports them; names that moved still work, with a warning."""

from __future__ import annotations

import inspect
import types
import warnings

import pytest

import agentloop
import agentloop.secrets
import agentloop.testing

# The curated top level: what a user of ``Agent`` needs. Changing it needs a reason written in
# CHANGELOG.md.
TOP_LEVEL = [
    "Aborted",
    "Agent",
    "AgentEnd",
    "AgentError",
    "AgentEvent",
    "AgentInput",
    "AgentMessage",
    "AgentResult",
    "AgentStart",
    "AgentTool",
    "AgentToolResult",
    "AlreadyRunning",
    "AssistantMessage",
    "Checkpoint",
    "ContentBlock",
    "ContextCompacted",
    "ContextWindowOverflow",
    "Cost",
    "CustomMessage",
    "ErrorKind",
    "Extension",
    "FunctionTool",
    "HookFailed",
    "Image",
    "InvalidContinue",
    "LlmMessage",
    "MessageEnd",
    "MessageStart",
    "MessageUpdate",
    "MissingExtra",
    "ModelError",
    "ModelSpec",
    "ModelThrottled",
    "NetworkError",
    "NoMessages",
    "Pricing",
    "QueueMode",
    "SessionNotFound",
    "SessionWriteFailed",
    "StopReason",
    "StreamError",
    "StreamOptions",
    "StreamRetry",
    "StructuredOutputFailed",
    "SystemPrompt",
    "Text",
    "Thinking",
    "ThinkingBudgets",
    "ThinkingLevel",
    "Tool",
    "ToolArgumentError",
    "ToolCall",
    "ToolContext",
    "ToolExecutionEnd",
    "ToolExecutionStart",
    "ToolExecutionUpdate",
    "ToolResultMessage",
    "Toolset",
    "TurnEnd",
    "TurnEndReason",
    "TurnStart",
    "UnknownModel",
    "Usage",
    "UserMessage",
    "abc",
    "context",
    "current_tool_context",
    "decode",
    "encode",
    "extract_text",
    "loop",
    "models",
    "multi",
    "policy",
    "retry",
    "sessions",
    "stream",
    "tool",
]

SUBMODULES = {
    "agentloop.abc": [
        "AgentTool",
        "ApprovalCallback",
        "Instrumentation",
        "ModelCallInfo",
        "OnUpdate",
        "PostLoopPolicy",
        "PostTurnPolicy",
        "PreDispatchPolicy",
        "PreTurnPolicy",
        "RetryStrategy",
        "RunInfo",
        "RunNote",
        "SessionStore",
        "StreamFn",
        "TokenCounter",
        "ToolCallInfo",
        "Toolset",
    ],
    "agentloop.loop": [
        "AgentContext",
        "AgentLoopConfig",
        "AsyncTransform",
        "ConvertToLlm",
        "EventStream",
        "MessageSource",
        "SteeringInterrupt",
        "ToolExecution",
        "Transform",
        "TransformContext",
        "agent_loop",
        "agent_loop_continue",
        "default_convert_to_llm",
        "run_loop",
        "use_clock",
    ],
    "agentloop.stream": [
        "Accumulator",
        "AssistantMessageEvent",
        "Done",
        "ErrorEvent",
        "ExtensionBlock",
        "LlmContext",
        "MessageLog",
        "StreamFn",
        "StreamStart",
        "TextDelta",
        "TextEnd",
        "TextStart",
        "ThinkingDelta",
        "ThinkingEnd",
        "ThinkingStart",
        "ToolCallDelta",
        "ToolCallEnd",
        "ToolCallStart",
        "ToolSchema",
    ],
    "agentloop.context": [
        "Compaction",
        "EstimatingCounter",
        "SlidingWindow",
        "SummarizingCompactor",
        "TokenCounter",
        "TransformContext",
        "compact_messages",
        "estimate_tokens",
    ],
    "agentloop.sessions": [
        "JsonlSessionStore",
        "SessionInfo",
        "SessionNotFound",
        "SessionRecorder",
        "SessionStore",
        "SessionStoreError",
        "SqliteSessionStore",
        "load_session",
        "repair_history",
    ],
    "agentloop.retry": ["ExponentialBackoff", "NoRetry", "RetryStrategy"],
    "agentloop.secrets": ["redact", "redact_bytes", "register_secret", "register_secret_variable"],
    "agentloop.multi": [
        "AgentHandle",
        "AgentRef",
        "AgentRegistry",
        "DelegationEnd",
        "DelegationStart",
        "FastestN",
        "Hop",
        "Loop",
        "LoopSpec",
        "Named",
        "Parallel",
        "ParallelSpec",
        "Pipeline",
        "PipelineResult",
        "PipelineSpec",
        "PipelineTool",
        "Sequential",
        "SequentialSpec",
        "SharedBudget",
        "SubAgentEvent",
        "SubAgentTool",
        "Team",
        "TeamResult",
        "TransferInitiated",
        "TransferRejected",
        "build_pipeline",
    ],
    "agentloop.models": [
        "ENTRY_POINT_GROUP",
        "ProviderFactory",
        "ResolvedModel",
        "UnknownModel",
        "register_provider",
        "registered_providers",
        "resolve_model",
        "split_model_string",
    ],
}

# DESIGN.md's names that left the top level in 0.2, and where they live now.
MOVED_DESIGN_NAMES = {
    "AgentContext": "loop",
    "AgentLoopConfig": "loop",
    "agent_loop": "loop",
    "agent_loop_continue": "loop",
    "run_loop": "loop",
    "StreamFn": "stream",
    "AssistantMessageEvent": "stream",
    "RetryStrategy": "retry",
    "ExponentialBackoff": "retry",
}


def _module(name: str) -> types.ModuleType:
    module = agentloop
    for part in name.split(".")[1:]:
        module = getattr(module, part)
    return module


def test_the_top_level_is_pinned() -> None:
    assert agentloop.__all__ == TOP_LEVEL


@pytest.mark.parametrize("name", sorted(SUBMODULES))
def test_each_submodule_is_pinned(name: str) -> None:
    assert _module(name).__all__ == SUBMODULES[name]


@pytest.mark.parametrize(
    "module",
    [agentloop, agentloop.testing, *(_module(n) for n in SUBMODULES)],
    ids=lambda m: m.__name__,
)
def test_all_is_sorted_complete_and_defined(module: types.ModuleType) -> None:
    names: list[str] = list(module.__all__)
    assert names == sorted(names)
    assert len(names) == len(set(names))
    assert [n for n in names if not hasattr(module, n)] == []
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not (isinstance(value, types.ModuleType) and name not in names)
        and not (module is agentloop and name in agentloop._MOVED)  # an old name, once used
        and (
            module is not agentloop.testing or getattr(value, "__module__", None) == module.__name__
        )
    }
    assert sorted(public - set(names)) == []


def test_public_classes_and_functions_report_their_public_module() -> None:
    wrong = []
    for module in [agentloop, *(_module(n) for n in SUBMODULES)]:
        for name in module.__all__:
            value = getattr(module, name)
            if not (inspect.isclass(value) or inspect.isfunction(value)):
                continue
            where = value.__module__
            expected = "agentloop" if name in agentloop.__all__ else None
            if where.startswith("agentloop._") or (expected and where != expected):
                wrong.append((module.__name__, name, where))
    assert wrong == []
    assert repr(agentloop.Text) == "<class 'agentloop.Text'>"
    assert agentloop.stream.TextDelta.__module__ == "agentloop.stream"
    assert agentloop.HookFailed.__module__ == "agentloop"


def test_a_traceback_names_the_public_module() -> None:
    import traceback

    try:
        raise agentloop.HookFailed("x raised ValueError: y", hook="x")
    except agentloop.HookFailed as exc:
        text = "".join(traceback.format_exception_only(exc))
    assert text.startswith("agentloop.HookFailed: x raised ValueError")


def test_published_structs_still_decode() -> None:
    # msgspec resolves annotations in the module a Struct names: they were resolved first.
    checkpoint = agentloop.Checkpoint(
        model=agentloop.ModelSpec(provider="p", model_id="m"),
        messages=[agentloop.UserMessage.from_text("hi")],
    )
    assert agentloop.decode(agentloop.encode(checkpoint), agentloop.Checkpoint) == checkpoint
    done = agentloop.stream.Done(usage=agentloop.Usage(input=1))
    assert agentloop.decode(agentloop.encode(done), agentloop.stream.AssistantMessageEvent) == done


@pytest.mark.parametrize(("name", "module"), sorted(MOVED_DESIGN_NAMES.items()))
def test_moved_names_live_in_their_submodule_and_warn_at_the_top(name: str, module: str) -> None:
    new = getattr(getattr(agentloop, module), name)
    with pytest.warns(DeprecationWarning, match=f"agentloop.{name} moved to agentloop.{module}"):
        old = getattr(agentloop, name)
    assert old is new


def test_every_moved_name_resolves() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for name, (module, new) in agentloop._MOVED.items():
            assert getattr(agentloop, name) is getattr(getattr(agentloop, module), new)
    with pytest.raises(AttributeError):
        _ = agentloop.no_such_name


def test_testing_exports_the_fakes() -> None:
    assert "ScriptedStream" in agentloop.testing.__all__


def test_version() -> None:
    assert isinstance(agentloop.__version__, str)
    assert agentloop.__version__.count(".") >= 2


def test_a_moved_name_warns_once_then_is_a_plain_attribute() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = agentloop.run_loop
        again = agentloop.run_loop
    assert first is again is agentloop.loop.run_loop
    assert len([w for w in caught if "agentloop.run_loop moved" in str(w.message)]) == 1
    assert vars(agentloop)["run_loop"] is first  # no __getattr__ on later reads
