"""Only structs that cannot form reference cycles opt out of the cyclic garbage collector.

Regression tests for the core-edges issue, item 10. A struct created with ``gc=False`` is never
traversed by the collector, so a cycle through it is never freed. The rule the library keeps:
``gc=False`` only where every field's type, followed through every struct it names, holds
nothing but scalars and ``gc=False`` structs (no ``Any``, no ``object``, no open base class).
"""

from __future__ import annotations

import gc
import inspect
import types
import typing
import weakref
from typing import Any

import msgspec
import pytest

import agentloop as al
import agentloop.testing

SCALARS = (str, int, float, bool, bytes, type(None))


def _struct_classes() -> list[type[msgspec.Struct]]:
    seen: dict[str, type[msgspec.Struct]] = {}
    for module in (al, agentloop.testing):
        for name in dir(module):
            obj = getattr(module, name)
            if inspect.isclass(obj) and issubclass(obj, msgspec.Struct):
                seen[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return list(seen.values())


def _is_gc_false(cls: type[msgspec.Struct]) -> bool:
    return cls.__struct_config__.gc is False


def _acyclic(tp: Any, stack: frozenset[Any]) -> bool:
    """Whether a value of annotation ``tp`` can never reach back to an enclosing struct."""
    if tp in SCALARS or (inspect.isclass(tp) and issubclass(tp, SCALARS)):
        return True
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _acyclic(typing.get_args(tp)[0], stack)
    if origin is typing.Literal:
        return True
    if origin in (typing.Union, types.UnionType):
        return all(_acyclic(arg, stack) for arg in typing.get_args(tp))
    if origin in (list, tuple, frozenset, set, dict):
        return all(_acyclic(arg, stack) for arg in typing.get_args(tp) if arg is not Ellipsis)
    if inspect.isclass(tp) and issubclass(tp, msgspec.Struct):
        if tp in stack:
            return True
        if tp.__subclasses__():
            return False  # an open base: a subclass may add any field
        hints = typing.get_type_hints(tp, include_extras=True)
        fields = tp.__struct_fields__
        return all(_acyclic(hints[f], stack | {tp}) for f in fields)
    return False  # Any, object, a protocol, an arbitrary class


@pytest.mark.parametrize("cls", _struct_classes(), ids=lambda c: c.__qualname__)
def test_gc_false_only_where_no_cycle_is_possible(cls: type[msgspec.Struct]) -> None:
    if _is_gc_false(cls):
        assert _acyclic(cls, frozenset()), f"{cls.__qualname__} is gc=False but may hold a cycle"


def test_custom_message_subclasses_are_collected() -> None:
    class Note(al.CustomMessage, frozen=True, tag="edges-gc-note"):
        payload: Any = None

    class Box:
        pass

    box = Box()
    note = Note(payload=box)
    box.back = note  # type: ignore[attr-defined]  # note -> box -> note
    ref = weakref.ref(box)
    del note, box
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize(
    "make",
    [
        lambda box: al.ToolResultMessage(
            tool_call_id="c", content=[al.Text(text="x")], details=box
        ),
        lambda box: al.AgentToolResult(content=[al.Text(text="x")], details=box),
        lambda box: al.AssistantMessage(
            content=[al.ToolCall(id="c", name="t", arguments={"box": box})]
        ),
        lambda box: al.UserMessage(content=[al.Extension(type_name="x", data=box)]),
    ],
    ids=["tool-result-details", "agent-tool-result-details", "tool-call-arguments", "extension"],
)
def test_messages_holding_objects_are_collected(make: Any) -> None:
    class Box:
        pass

    box = Box()
    message = make(box)
    box.back = message  # type: ignore[attr-defined]
    ref = weakref.ref(box)
    del box, message
    gc.collect()
    assert ref() is None


# ---------------------------------------------------------------- runs leave no cycles


@pytest.fixture
def no_gc() -> Any:
    """The cyclic GC off, and everything collectable collected before the test."""
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    yield
    gc.set_debug(0)
    gc.garbage.clear()
    if was:
        gc.enable()


def _agentloop_garbage() -> list[str]:
    """What only the cyclic GC would free: the agentloop objects among it, by type."""
    gc.set_debug(gc.DEBUG_SAVEALL)
    gc.collect()
    found = sorted(
        type(o).__qualname__ for o in gc.garbage if type(o).__module__.startswith("agentloop")
    )
    gc.set_debug(0)
    gc.garbage.clear()
    return found


@pytest.mark.anyio
async def test_a_finished_agent_run_is_freed_without_the_cyclic_gc(no_gc: Any) -> None:
    """A run (and a dropped agent) is freed by reference counting alone: under load, cycles
    per run make the cyclic GC's full collections the dominant cost (benchmark B4)."""

    @al.tool
    def progress(ctx: al.ToolContext) -> str:
        """Report progress, then finish (from a worker thread)."""
        ctx.on_update("half way")
        return "done"

    @al.tool
    async def noop() -> str:
        """Nothing."""
        return "ok"

    from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

    for _ in range(2):  # the first round warms caches (schemas, type info) kept for the process
        stream = ScriptedStream(
            [
                reply_tool_calls(("progress", {}), ("noop", {})),
                reply_tool_calls(("noop", {})),
                reply_text("finished"),
            ]
        )
        agent = al.Agent(model="scripted:none", stream_fn=stream, tools=[progress, noop])
        seen: list[al.AgentEvent] = []
        agent.subscribe(seen.append)
        result = await agent.prompt("go")
        assert result.output == "finished"
        assert any(type(e).__name__ == "ToolExecutionUpdate" for e in seen)
        del agent, stream, seen, result
        garbage = _agentloop_garbage()
    assert garbage == []


@pytest.mark.anyio
async def test_a_finished_run_loop_run_is_freed_without_the_cyclic_gc(no_gc: Any) -> None:
    """The same through ``run_loop``, with a callback and without."""

    @al.tool
    async def noop() -> str:
        """Nothing."""
        return "ok"

    from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

    seen: list[al.AgentEvent] = []
    callbacks: list[Any] = [None, seen.append, None, seen.append]  # (the first two warm caches)
    for on_event in callbacks:
        config = al.loop.AgentLoopConfig(
            model=al.ModelSpec(provider="scripted", model_id="none"),
            stream_fn=ScriptedStream([reply_tool_calls(("noop", {})), reply_text("finished")]),
            tools=[noop],
        )
        result = await al.loop.run_loop(
            [al.UserMessage.from_text("go")], al.loop.AgentContext(), config, on_event=on_event
        )
        assert result.text == "finished"
        del config, result
        assert _agentloop_garbage() == []


@pytest.mark.anyio
async def test_a_finished_event_stream_is_freed_without_the_cyclic_gc(no_gc: Any) -> None:
    """The same through ``agent_loop``, read to the end. (A stream left early cancels its run:
    the cancellation's traceback holds the frames it went through, as any caught exception's
    does, and those cycles are the cyclic GC's.)"""

    @al.tool
    async def noop() -> str:
        """Nothing."""
        return "ok"

    from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

    for _ in range(2):  # the first round warms caches (schemas, type info) kept for the process
        config = al.loop.AgentLoopConfig(
            model=al.ModelSpec(provider="scripted", model_id="none"),
            stream_fn=ScriptedStream([reply_tool_calls(("noop", {})), reply_text("finished")]),
            tools=[noop],
        )
        prompt = [al.UserMessage.from_text("go")]
        read = 0
        async with al.loop.agent_loop(prompt, al.loop.AgentContext(), config) as events:
            async for _event in events:
                read += 1
        assert read > 10 and events.result.text == "finished"
        del config, events
        garbage = _agentloop_garbage()
    assert garbage == []
