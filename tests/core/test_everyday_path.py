"""The everyday path: model strings, deps for tools, a dynamic system prompt, streaming text,
and the renamed methods (the old names warn and still work for one release)."""

from __future__ import annotations

import warnings
import weakref
from typing import TYPE_CHECKING, Any

import msgspec
import pytest

import agentloop as al
from agentloop.models import ResolvedModel, register_provider, registered_providers, resolve_model
from agentloop.sessions import JsonlSessionStore, SessionRecorder
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

from ._helpers import MODEL

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.anyio

SPEC = al.ModelSpec(provider="fakeco", model_id="fake-large", context_window=1000)


@pytest.fixture
def fakeco() -> Iterator[list[str]]:
    """A provider named ``fakeco`` in the registry, answering "hello"; the ids it was asked for."""
    asked: list[str] = []

    def factory(model_id: str) -> ResolvedModel:
        asked.append(model_id)
        spec = msgspec.structs.replace(SPEC, model_id=model_id)
        return ResolvedModel(spec=spec, stream_fn=ScriptedStream([reply_text("hello")] * 5))

    register_provider("fakeco", factory, replace=True)
    yield asked
    from agentloop import _models

    _models._registered.pop("fakeco", None)


# ---------------------------------------------------------------- model strings


async def test_a_model_string_names_the_provider_and_the_model(fakeco: list[str]) -> None:
    agent = al.Agent(model="fakeco:fake-large")
    assert agent.model == SPEC
    assert (await agent.prompt("hi")).output == "hello"
    assert fakeco == ["fake-large"]
    assert "fakeco" in registered_providers()


def test_a_model_id_may_contain_colons(fakeco: list[str]) -> None:
    assert resolve_model("fakeco:org/model:free").spec.model_id == "org/model:free"


@pytest.mark.parametrize("bad", ["no-colon", ":model", "provider:"])
def test_a_malformed_model_string_is_a_clear_error(bad: str) -> None:
    with pytest.raises(al.UnknownModel, match="provider:model-id"):
        al.Agent(model=bad)


def test_an_unknown_provider_names_the_extra_to_install() -> None:
    with pytest.raises(al.UnknownModel) as caught:
        al.Agent(model="nosuchprovider:model")
    message = str(caught.value)
    assert "nosuchprovider" in message
    assert 'pip install "anyio-agentloop[providers]"' in message
    assert isinstance(caught.value, LookupError)


def test_a_model_spec_still_needs_its_stream_fn() -> None:
    with pytest.raises(TypeError, match="stream_fn"):
        al.Agent(model=MODEL)


def test_a_model_string_with_an_explicit_provider_object() -> None:
    stream = ScriptedStream([reply_text("x")])
    agent = al.Agent(model="somewhere:some-model", stream_fn=stream)
    assert agent.model == al.ModelSpec(provider="somewhere", model_id="some-model")
    assert agent.stream_fn is stream


def test_registering_a_name_twice_needs_replace(fakeco: list[str]) -> None:
    with pytest.raises(ValueError, match="registered already"):
        register_provider("fakeco", lambda model_id: resolve_model("fakeco:x"))
    with pytest.raises(ValueError, match="invalid provider name"):
        register_provider("a:b", lambda model_id: resolve_model("fakeco:x"))


async def test_set_model_with_a_string_switches_the_provider(fakeco: list[str]) -> None:
    agent = al.Agent(model=MODEL, stream_fn=ScriptedStream([reply_text("scripted")]))
    agent.set_model("fakeco:fake-small")
    assert agent.model.model_id == "fake-small"
    assert (await agent.prompt("hi")).output == "hello"


# ---------------------------------------------------------------- deps, system prompt, text


class Clients(msgspec.Struct):
    database: dict[str, int]


async def test_deps_reach_tools_through_their_context() -> None:
    seen: list[Any] = []

    @al.tool
    async def lookup(ctx: al.ToolContext[Clients], key: str) -> int:
        """Look a key up in the database."""
        seen.append(al.current_tool_context() is ctx)
        return ctx.deps.database[key]

    @al.tool
    def lookup_in_a_thread(ctx: al.ToolContext[Clients], key: str) -> int:
        """The same, from a worker thread."""
        return ctx.deps.database[key] * 10

    model = ScriptedStream(
        [
            reply_tool_calls(("lookup", {"key": "a"}), ("lookup_in_a_thread", {"key": "a"})),
            reply_text("done"),
        ]
    )
    deps = Clients(database={"a": 4})
    agent = al.Agent(model=MODEL, stream_fn=model, tools=[lookup, lookup_in_a_thread], deps=deps)
    result = await agent.prompt("go")
    texts = [m.text for m in result.messages if isinstance(m, al.ToolResultMessage)]
    assert texts == ["4", "40"]
    assert seen == [True]


async def test_a_dynamic_system_prompt_is_computed_every_turn() -> None:
    count = 0

    async def system_prompt() -> str:
        nonlocal count
        count += 1
        return f"turn {count}"

    @al.tool
    async def noop() -> str:
        """Nothing."""
        return "ok"

    model = ScriptedStream([reply_tool_calls(("noop", {})), reply_text("done")])
    agent = al.Agent(model=MODEL, stream_fn=model, tools=[noop], system_prompt=system_prompt)
    await agent.prompt("go")
    assert [call.context.system_prompt for call in model.calls] == ["turn 1", "turn 2"]
    # Plan mode appends its instruction to the dynamic prompt.
    model.script.append(reply_text("plan"))
    agent.set_plan_mode(True)
    await agent.prompt("plan")
    assert model.calls[-1].context.system_prompt.startswith("turn 3\n\nYou are in plan mode")


async def test_text_deltas_stream_the_answers_text() -> None:
    @al.tool
    async def noop() -> str:
        """Nothing."""
        return "ok"

    model = ScriptedStream(
        [reply_tool_calls(("noop", {}), text="Let me see. "), reply_text("All done here.")],
        chunk_size=4,
    )
    agent = al.Agent(model=MODEL, stream_fn=model, tools=[noop])
    deltas: list[str] = []
    async with agent.stream("go") as events:
        async for delta in events.text_deltas():
            deltas.append(delta)
    assert len(deltas) > 4
    assert "".join(deltas) == "Let me see. All done here."
    assert events.result.output == "All done here."


# ---------------------------------------------------------------- renamed, kept for a release


async def test_old_names_warn_and_still_work(tmp_path: Path) -> None:
    with pytest.warns(DeprecationWarning, match="from_text"):
        message = al.UserMessage.text("hi")
    assert message.text == "hi"  # on a message, .text is its text, as on every message

    agent = al.Agent(model=MODEL, stream_fn=ScriptedStream([reply_text("a"), reply_text("b")]))
    await agent.prompt("one")
    agent.steer("more")
    with pytest.warns(DeprecationWarning, match="continue_run"):
        assert (await agent.continue_()).output == "b"
    with pytest.warns(DeprecationWarning, match="pause_nowait"):
        assert agent.request_pause() is False

    with pytest.warns(DeprecationWarning, match="from_checkpoint"):
        restored = al.Agent.restore(agent.checkpoint(), stream_fn=ScriptedStream([]))
    assert restored.messages == agent.messages

    store = JsonlSessionStore(tmp_path)
    sid = (await store.create()).id
    await store.append(sid, agent.messages)
    with pytest.warns(DeprecationWarning, match="from_session"):
        resumed = await al.Agent.resume(store, sid, model=MODEL, stream_fn=ScriptedStream([]))
    assert isinstance(resumed.session, SessionRecorder)
    assert resumed.messages == agent.messages
    vars(al).pop("resume_session", None)  # resolved once per process, then cached
    with pytest.warns(DeprecationWarning, match="load_session"):
        load: Any = al.resume_session
    assert await load(store, sid) == agent.messages


def test_an_old_name_warns_once_then_is_a_plain_attribute() -> None:
    vars(al).pop("TextDelta", None)
    with pytest.warns(DeprecationWarning, match=r"agentloop\.stream\.TextDelta"):
        first = al.TextDelta
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = al.TextDelta
    assert first is again is al.stream.TextDelta
    assert "TextDelta" in vars(al)  # a plain attribute from now on: no __getattr__ call


def test_an_agent_keeps_its_state_in_slots_and_a_subclass_may_add_its_own() -> None:
    # ~50 attributes are past what CPython's shared instance dicts hold: slots save ~1.1 KiB per
    # agent (B4 makes one per run). A misspelt attribute is an error rather than a silent no-op.
    agent = al.Agent(model=MODEL, stream_fn=ScriptedStream([reply_text("hi")]))
    assert not hasattr(agent, "__dict__")
    with pytest.raises(AttributeError):
        agent.sytem_prompt = "typo"  # type: ignore[attr-defined]
    assert weakref.ref(agent)() is agent

    class Mine(al.Agent[str]):
        def __init__(self, note: str) -> None:
            super().__init__(model=MODEL, stream_fn=ScriptedStream([reply_text("hi")]))
            self.note = note

    mine = Mine("mine")
    assert mine.note == "mine"
    assert mine.prompt_sync("hello").text == "hi"
