"""Cassettes: record once, replay offline event for event, and say so when a request is new."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
import pytest

import agentloop as al
from agentloop import multi
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls
from agentloop_eval import (
    Cassette,
    CassetteError,
    Criteria,
    EvalCase,
    RecordingStream,
    Registry,
    ReplayStream,
    Report,
    Setup,
    ToolExpectation,
    request_key,
    run_suite,
)

from ._helpers import MODEL, get_weather, provider, suite_of

if TYPE_CHECKING:
    from pathlib import Path

    from agentloop.stream import AssistantMessageEvent, StreamFn

pytestmark = pytest.mark.anyio


class Counting:
    """A provider factory that counts the models it made (replays must make none)."""

    def __init__(self, make: Any) -> None:
        self.make = make
        self.made = 0

    def __call__(self) -> StreamFn:
        self.made += 1
        stream_fn: StreamFn = self.make()
        return stream_fn


def timeless(report: Report) -> list[Any]:
    return [
        r.trajectory.without_timing() if r.trajectory else None
        for case in report.cases
        for r in case.runs
    ]


async def consume(
    stream_fn: StreamFn, context: al.stream.LlmContext
) -> list[AssistantMessageEvent]:
    return [e async for e in stream_fn(MODEL, context, al.StreamOptions())]


async def test_replay_yields_the_recorded_events_byte_for_byte() -> None:
    context = al.stream.LlmContext(messages=[al.UserMessage.from_text("hi")])
    provider_fn = ScriptedStream(
        [reply_tool_calls(("get_weather", {"city": "Rome"}), text="Let me see.")]
    )
    cassette = Cassette("unit")
    live = await consume(RecordingStream(provider_fn, cassette, repeat=0), context)
    replayed = await consume(ReplayStream(Cassette.loads(cassette.dumps()), repeat=0), context)
    assert [msgspec.json.encode(e) for e in replayed] == [msgspec.json.encode(e) for e in live]
    assert replayed == live
    # Writing a cassette read back gives the same bytes.
    assert Cassette.loads(cassette.dumps()).dumps() == cassette.dumps()


def test_request_keys_ignore_timestamps_and_details_but_not_content() -> None:
    def context(text: str, *, details: Any = None) -> al.stream.LlmContext:
        result = al.ToolResultMessage(
            tool_call_id="c1", tool_name="t", content=[al.Text(text="r")], details=details
        )
        return al.stream.LlmContext(messages=[al.UserMessage.from_text(text), result])

    first = request_key(MODEL, context("hi", details={"took": 1.5}))
    assert request_key(MODEL, context("hi", details={"took": 2.5})) == first
    assert request_key(MODEL, context("hello")) != first
    other = msgspec.structs.replace(MODEL, model_id="other")
    assert request_key(other, context("hi")) != first


def weather_case(**changes: Any) -> EvalCase:
    case = EvalCase(
        name="weather",
        prompt="Weather in Paris?",
        tools=["get_weather"],
        repeats=2,
        expected=ToolExpectation(tools=["get_weather"]),
        criteria=Criteria(contains=["Paris"]),
    )
    return msgspec.structs.replace(case, **changes)


def weather_model(counting: Counting) -> str:
    return provider(counting, pricing=al.Pricing(input=3.0, output=15.0))


async def test_a_suite_recorded_then_replayed_offline(tmp_path: Path) -> None:
    counting = Counting(
        lambda: ScriptedStream(
            [
                reply_tool_calls(
                    ("get_weather", {"city": "Paris"}), usage=al.Usage(input=9, output=4)
                ),
                reply_text("Sunny, 21 C in Paris.", usage=al.Usage(input=30, output=7)),
            ]
        )
    )
    suite = suite_of(weather_case(), model=weather_model(counting), root=tmp_path)
    recorded = await run_suite(suite, cassettes="record")
    assert counting.made == 2 and recorded.passed == 2
    path = tmp_path / "cassettes" / "weather.jsonl"
    lines = path.read_bytes().splitlines()
    assert msgspec.json.decode(lines[0]) == {"kind": "cassette", "case": "weather", "format": 1}
    assert [msgspec.json.decode(line)["kind"] for line in lines[1:]] == ["model"] + ["call"] * 4

    replayed = await run_suite(suite, cassettes="replay")
    assert counting.made == 2  # no model was made: offline
    assert replayed.passed == 2 and replayed.cassettes == "replay"
    assert timeless(replayed) == timeless(recorded)
    # The recorded model spec prices the replayed usage as it did the live one.
    assert replayed.cases[0].runs[0].cost == recorded.cases[0].runs[0].cost > 0


async def test_tool_results_recorded_and_replayed_without_running_the_tool(tmp_path: Path) -> None:
    runs = 0

    @al.tool
    async def lookup(term: str) -> str:
        """Look a term up (a different answer each time)."""
        nonlocal runs
        runs += 1
        return f"{term}: answer number {runs}"

    registry = Registry()
    registry.tool(lookup)
    model = provider(
        lambda: ScriptedStream(
            [
                reply_tool_calls(("lookup", {"term": "kitten"})),
                lambda c: reply_text(c.messages[-1].text),
            ]
        )
    )
    case = EvalCase(name="lookup", prompt="kitten?", tools=["lookup"], record_tools=True)
    suite = suite_of(case, model=model, registry=registry, root=tmp_path)
    recorded = await run_suite(suite, cassettes="record")
    assert runs == 1 and recorded.cases[0].runs[0].trajectory.text == "kitten: answer number 1"  # type: ignore[union-attr]
    replayed = await run_suite(suite, cassettes="replay")
    assert runs == 1  # the tool did not run: its result came from the cassette
    assert timeless(replayed) == timeless(recorded)


async def test_sub_agents_are_recorded_through_the_case_model(tmp_path: Path) -> None:
    registry = Registry()
    registry.tool(get_weather)

    @registry.tool_factory("ask")
    def ask(setup: Setup) -> al.AgentTool:
        def helper() -> al.Agent:
            return al.Agent(
                model=setup.model, stream_fn=setup.stream_fn, name="helper", tools=[get_weather]
            )

        return multi.SubAgentTool(helper, name="ask", description="Ask the helper.")

    def answer(context: Any) -> al.AssistantMessage:
        last = context.messages[-1]
        if isinstance(last, al.UserMessage) and last.text == "Go.":
            return reply_tool_calls(("ask", {"task": "Weather in Oslo?"}))
        if isinstance(last, al.UserMessage):
            return reply_tool_calls(("get_weather", {"city": "Oslo"}))
        return reply_text(f"Done: {last.text}")

    from agentloop.testing import FunctionStream

    counting = Counting(lambda: FunctionStream(answer))
    case = EvalCase(
        name="nested",
        prompt="Go.",
        tools=["ask"],
        expected=ToolExpectation(tools=["ask", "get_weather"], tree=True),
    )
    suite = suite_of(case, model=provider(counting), registry=registry, root=tmp_path)
    recorded = await run_suite(suite, cassettes="record")
    replayed = await run_suite(suite, cassettes="replay")
    assert counting.made == 1 and replayed.passed == 1
    assert timeless(replayed) == timeless(recorded)


async def test_misses_and_missing_cassettes_are_errors(tmp_path: Path) -> None:
    counting = Counting(lambda: ScriptedStream([reply_text("Sunny in Paris.")]))
    model = weather_model(counting)
    suite = suite_of(weather_case(repeats=1, expected=None), model=model, root=tmp_path)
    nothing = await run_suite(suite, cassettes="replay")
    run = nothing.cases[0].runs[0]
    assert run.status == "error" and "cannot read cassette" in (run.error or "")
    assert "record it with cassettes 'record' or 'once'" in (run.error or "")

    await run_suite(suite, cassettes="record")
    changed = suite_of(
        weather_case(repeats=1, prompt="Weather in Lyon?"), model=model, root=tmp_path
    )
    run = (await run_suite(changed, cassettes="replay")).cases[0].runs[0]
    assert run.status == "error" and (run.error or "").startswith("cassette miss: model evaltest")
    more = suite_of(weather_case(repeats=3, expected=None), model=model, root=tmp_path)
    runs = (await run_suite(more, cassettes="replay")).cases[0].runs
    assert [r.status for r in runs] == ["passed", "error", "error"]
    assert runs[1].error == "the cassette holds 1 repeats; this is repeat 1"


async def test_once_records_what_is_missing_and_replays_the_rest(tmp_path: Path) -> None:
    counting = Counting(
        lambda: ScriptedStream(
            [reply_tool_calls(("get_weather", {"city": "Paris"})), reply_text("Paris: sunny")]
        )
    )
    suite = suite_of(weather_case(), model=weather_model(counting), root=tmp_path)
    first = await run_suite(suite, cassettes="once")
    assert counting.made == 2 and (tmp_path / "cassettes" / "weather.jsonl").exists()
    second = await run_suite(suite, cassettes="once")
    assert counting.made == 2 and timeless(second) == timeless(first)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty"),
        (b"not json\n", "line 1"),
        (
            b'{"kind": "model", "name": "a:b", "spec": {"provider": "a", "model_id": "b"}}\n',
            "no cassette header",
        ),
        (b'{"kind": "cassette", "case": "x", "format": 99}\n', "format 99, not 1"),
        (b'{"kind": "cassette", "case": "x"}\n{"kind": "call", "repeat": 0}\n', "line 2"),
    ],
)
def test_malformed_cassettes(data: bytes, message: str) -> None:
    with pytest.raises(CassetteError, match=message):
        Cassette.loads(data)
