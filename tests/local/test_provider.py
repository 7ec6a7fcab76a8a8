"""The in-process provider, for real: SmolLM2-135M-Instruct run by llama.cpp, both backends."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import msgspec
import pytest

from agentloop import (
    Agent,
    AssistantMessage,
    ErrorKind,
    ModelSpec,
    StopReason,
    StreamOptions,
    Text,
    ToolCall,
    UserMessage,
    tool,
)
from agentloop.loop import AgentContext, AgentLoopConfig, run_loop
from agentloop.stream import (
    Accumulator,
    Done,
    ErrorEvent,
    LlmContext,
    StreamStart,
    TextDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolSchema,
)
from agentloop_local import LoadProgress, LocalModel, LocalProvider, load_model
from agentloop_local._native import Sampler

from ..providers._util import opened
from .conftest import WINDOW

if TYPE_CHECKING:
    from agentloop.policy import PolicyContext
    from agentloop.stream import AssistantMessageEvent

pytestmark = pytest.mark.anyio

SPEC = ModelSpec(provider="local", model_id="smollm2", context_window=WINDOW)
ADD = ToolSchema(
    name="add",
    description="Add two integers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)
WEATHER = ToolSchema(
    name="weather",
    description="The weather in a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"enum": ["C", "F"]}},
        "required": ["city"],
    },
)


def _ask(text: str, *, tools: list[ToolSchema] | None = None) -> LlmContext:
    return LlmContext(
        system_prompt="You are a helpful assistant.",
        messages=[UserMessage(content=[Text(text=text)])],
        tools=tools or [],
    )


async def _collect(
    provider: LocalProvider, context: LlmContext, options: StreamOptions
) -> list[AssistantMessageEvent]:
    async with opened(provider, SPEC, context, options) as stream:
        return [event async for event in stream]


async def test_text_streams_with_exact_usage_and_the_model_string_id(smollm2: LocalModel) -> None:
    provider = LocalProvider(smollm2, temperature=0)
    events = await _collect(provider, _ask("Name a colour."), StreamOptions(max_tokens=12))
    assert events[0] == StreamStart(provider="local", model_id="smollm2")
    deltas = [e.delta for e in events if type(e) is TextDelta]
    assert deltas and "".join(deltas).strip()
    done = events[-1]
    assert type(done) is Done
    assert done.stop_reason in (StopReason.STOP, StopReason.LENGTH)
    assert done.usage is not None and not done.usage.estimated
    # Exact: the tokenizer's count of the rendered prompt and of the tokens generated.
    prompt = smollm2.template.render(_ask("Name a colour."))
    assert done.usage.input + done.usage.cache_read == len(smollm2.native.tokenize(prompt))
    assert 1 <= done.usage.output <= 12
    if done.stop_reason is StopReason.LENGTH:
        assert done.usage.output == 12


async def test_greedy_answers_are_reproducible_and_reuse_the_cached_prefix(
    smollm2: LocalModel,
) -> None:
    provider = LocalProvider(smollm2, temperature=0)
    options = StreamOptions(max_tokens=8)
    first = await _collect(provider, _ask("Say hi."), options)
    second = await _collect(provider, _ask("Say hi."), options)

    def text(events: list[AssistantMessageEvent]) -> str:
        return "".join(e.delta for e in events if type(e) is TextDelta)

    assert text(first) == text(second)
    usage = second[-1].usage  # type: ignore[union-attr]
    assert usage is not None and usage.cache_read > 0  # the context still held the prompt


@pytest.mark.parametrize("choice", ["add", "required"])
async def test_a_forced_tool_call_is_really_forced_and_parses(
    smollm2: LocalModel, choice: str
) -> None:
    provider = LocalProvider(smollm2, temperature=0.8, seed=7)
    context = _ask("Tell me a story about a dragon.", tools=[ADD, WEATHER])  # not about tools
    events = await _collect(provider, context, StreamOptions(tool_choice=choice, max_tokens=96))
    acc = Accumulator(SPEC)
    for event in events:
        acc.push(event)
    message = acc.finish()
    assert message.stop_reason is StopReason.TOOL_USE
    assert not [b for b in message.content if type(b) is Text]  # no prose around the call
    calls = [b for b in message.content if type(b) is ToolCall]
    assert len(calls) == 1 and calls[0].partial_json is None
    if choice == "add":
        assert calls[0].name == "add"
        assert set(calls[0].arguments) == {"a", "b"}
        assert all(type(v) is int for v in calls[0].arguments.values())
    else:
        assert calls[0].name in ("add", "weather")


async def test_a_tool_choice_naming_no_offered_tool_is_an_error(smollm2: LocalModel) -> None:
    events = await _collect(
        LocalProvider(smollm2), _ask("hi", tools=[ADD]), StreamOptions(tool_choice="nope")
    )
    assert type(events[-1]) is ErrorEvent and "nope" in events[-1].message


class Colour(msgspec.Struct):
    name: str
    hex: str


async def test_typed_output_through_the_forced_final_tool(smollm2: LocalModel) -> None:
    agent = Agent(
        model=SPEC,
        stream_fn=LocalProvider(smollm2, temperature=0, max_tokens=64),
        system_prompt="You answer with data.",
    )
    result = await agent.prompt("Give me a colour.", output_type=Colour)
    assert isinstance(result.output, Colour)
    assert isinstance(result.output.name, str) and isinstance(result.output.hex, str)


async def test_the_loop_runs_a_tool_the_model_was_made_to_call(smollm2: LocalModel) -> None:
    seen: list[tuple[int, int]] = []

    @tool
    def add(a: int, b: int) -> str:
        """Add two integers."""
        seen.append((a, b))
        return str(a + b)

    def turn_options(ctx: PolicyContext, options: StreamOptions) -> StreamOptions:
        # The first turn must call the tool; the second answers in words.
        return msgspec.structs.replace(options, tool_choice="add" if ctx.turn == 0 else "none")

    config = AgentLoopConfig(
        model=SPEC,
        stream_fn=LocalProvider(smollm2, temperature=0, max_tokens=48),
        tools=[add],
        turn_options=turn_options,
    )
    prompt = UserMessage(content=[Text(text="What is 2 plus 3?")])
    with anyio.fail_after(120):
        result = await run_loop([prompt], AgentContext(), config)
    assert len(seen) == 1
    first = result.messages[1]
    assert type(first) is AssistantMessage and first.stop_reason is StopReason.TOOL_USE
    last = result.messages[-1]
    assert type(last) is AssistantMessage and last.stop_reason in (
        StopReason.STOP,
        StopReason.LENGTH,
    )


async def test_abort_stops_generation_within_one_token(
    smollm2: LocalModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    sampled = 0
    original = Sampler.sample

    def counting(self: Sampler, context: Any) -> int:
        nonlocal sampled
        sampled += 1
        return original(self, context)

    monkeypatch.setattr(Sampler, "sample", counting)
    provider = LocalProvider(smollm2, temperature=0.8, seed=1)
    at_cancel = -1
    with anyio.CancelScope() as scope:
        async with opened(
            provider, SPEC, _ask("Write a long poem."), StreamOptions(max_tokens=500)
        ) as stream:
            async for event in stream:
                if type(event) is TextDelta and at_cancel < 0:
                    at_cancel = sampled
                    scope.cancel()
    assert scope.cancelled_caught
    assert at_cancel > 0
    # The worker noticed before its next token: at most the one being sampled when asked.
    assert sampled - at_cancel <= 1
    # And it is done: the context is back in the pool, free for the next call at once.
    with anyio.fail_after(30):
        async with smollm2.lease():
            pass


async def test_an_agent_abort_ends_the_run_aborted(smollm2: LocalModel) -> None:
    agent = Agent(
        model=SPEC,
        stream_fn=LocalProvider(smollm2, temperature=0.8, seed=3),
        stream_options=StreamOptions(max_tokens=500),
        raise_on_error=False,  # the aborted run as data, not as Aborted
    )

    def on_event(event: Any) -> None:
        from agentloop import MessageUpdate

        if type(event) is MessageUpdate:
            agent.abort()

    agent.subscribe(on_event)
    with anyio.fail_after(60):
        result = await agent.prompt("Write a long poem.")
    assert result.stop_reason is StopReason.ABORTED


async def test_two_agents_share_one_model(smollm2: LocalModel) -> None:
    provider = LocalProvider(smollm2, temperature=0, max_tokens=10)
    answers: dict[str, str] = {}

    async def ask(name: str, question: str) -> None:
        agent = Agent(model=SPEC, stream_fn=provider)
        result = await agent.prompt(question)
        answers[name] = "".join(
            b.text
            for b in result.messages[-1].content  # type: ignore[union-attr]
            if type(b) is Text
        )

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, "one", "Name a fruit.")
            tg.start_soon(ask, "two", "Name an animal.")
    assert set(answers) == {"one", "two"}
    assert all(answers.values())


async def test_several_contexts_run_at_once(smollm2_path: Any) -> None:
    model = await load_model(str(smollm2_path), context_window=512, max_contexts=2)
    assert model.native is (await load_model("smollm2", context_window=WINDOW)).native
    provider = LocalProvider(model, temperature=0, max_tokens=6)
    done: list[StopReason] = []

    async def one() -> None:
        events = await _collect(provider, _ask("Hello."), StreamOptions())
        assert type(events[-1]) is Done
        done.append(events[-1].stop_reason)

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            for _ in range(3):  # three calls, two contexts: one waits its turn
                tg.start_soon(one)
    assert len(done) == 3
    assert len(model._free) == 2  # two contexts were made, and both came back


async def test_a_prompt_over_the_window_is_a_context_overflow(smollm2_path: Any) -> None:
    model = await load_model(str(smollm2_path), context_window=64)
    events = await _collect(LocalProvider(model), _ask("word " * 200), StreamOptions())
    error = events[-1]
    assert type(error) is ErrorEvent and error.kind is ErrorKind.CONTEXT_OVERFLOW
    assert "64" in error.message


async def test_output_cut_by_the_window_ends_with_length(smollm2_path: Any) -> None:
    model = await load_model(str(smollm2_path), context_window=96)
    events = await _collect(
        LocalProvider(model, temperature=0.8, seed=5),
        _ask("Write a long story."),
        StreamOptions(max_tokens=500),
    )
    assert type(events[-1]) is Done and events[-1].stop_reason is StopReason.LENGTH


async def test_loading_reports_progress_and_happens_once(smollm2_path: Any) -> None:
    events: list[LoadProgress] = []
    first = await load_model(str(smollm2_path), context_window=WINDOW, on_progress=events.append)
    second = await load_model("smollm2", context_window=WINDOW)
    assert first is second
    stages = [e.stage for e in events]
    assert stages[0] == "locating" and stages[-1] == "ready"
    assert [e.fraction for e in events] == sorted(e.fraction for e in events)


async def test_a_lazy_provider_loads_on_its_first_call(smollm2: LocalModel) -> None:
    progress: list[LoadProgress] = []
    provider = LocalProvider(
        "smollm2", context_window=WINDOW, temperature=0, on_progress=progress.append
    )
    events = await _collect(provider, _ask("Hi."), StreamOptions(max_tokens=3))
    assert type(events[-1]) is Done
    assert await provider.model() is smollm2
    assert progress and progress[-1].stage == "ready"


async def test_an_unknown_model_is_an_error_event_not_an_exception() -> None:
    events = await _collect(LocalProvider("no-such-model"), _ask("hi"), StreamOptions())
    assert type(events[-1]) is ErrorEvent and "no-such-model" in events[-1].message


async def test_auto_tool_choice_lets_the_model_answer_in_text(smollm2: LocalModel) -> None:
    provider = LocalProvider(smollm2, temperature=0)
    events = await _collect(provider, _ask("Say hello.", tools=[ADD]), StreamOptions(max_tokens=16))
    done = events[-1]
    assert type(done) is Done
    starts = [e for e in events if type(e) is ToolCallStart]
    ends = [e for e in events if type(e) is ToolCallEnd]
    assert len(starts) == len(ends)  # whatever it chose, every call it began is closed


async def test_embeddings_rank_the_related_text_first(smollm2: LocalModel) -> None:
    vectors = await smollm2.embed(
        ["The cat sat on the mat.", "A kitten rests on a rug.", "Stock prices fell sharply."]
    )
    assert len(vectors) == 3 and all(len(v) == smollm2.native.n_embd for v in vectors)
    norms = [sum(x * x for x in v) for v in vectors]
    assert all(abs(n - 1.0) < 1e-3 for n in norms)

    def cosine(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2])


async def test_generation_never_holds_the_event_loop(
    smollm2: LocalModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentloop_local._provider import _Generation

    ticks = 0
    during: list[int] = []
    original = _Generation.step

    def step(self: _Generation) -> str:
        before = ticks
        text = original(self)
        # Read from the worker thread: the loop's task went on counting meanwhile.
        during.append(ticks - before)
        return text

    monkeypatch.setattr(_Generation, "step", step)
    done = anyio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        await _collect(
            LocalProvider(smollm2, temperature=0),
            _ask("Count to ten."),
            StreamOptions(max_tokens=16),
        )
        done.set()
    assert during and sum(during) > 0  # the loop ran while tokens were being computed


async def test_cancelling_while_the_prompt_is_read_samples_nothing(
    smollm2: LocalModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    sampled = 0
    original = Sampler.sample

    def counting(self: Sampler, context: Any) -> int:
        nonlocal sampled
        sampled += 1
        return original(self, context)

    monkeypatch.setattr(Sampler, "sample", counting)
    long_prompt = _ask("story " * 1500)
    with anyio.CancelScope() as scope:
        async with opened(LocalProvider(smollm2), SPEC, long_prompt, StreamOptions()) as stream:
            async for event in stream:
                assert type(event) is StreamStart
                scope.cancel()  # the prompt is being read in the worker now
    assert scope.cancelled_caught and sampled == 0
    with anyio.fail_after(30):  # the context came back, and still works
        events = await _collect(
            LocalProvider(smollm2, temperature=0), _ask("Hi."), StreamOptions(max_tokens=3)
        )
    assert type(events[-1]) is Done


async def test_the_provider_passes_the_conformance_kit(smollm2: LocalModel) -> None:
    from agentloop.testing import check_stream_fn

    provider = LocalProvider(smollm2, temperature=0, max_tokens=48)
    # It raises ConformanceError, listing every problem, for a stream that breaks the protocol.
    report = await check_stream_fn(provider, SPEC, per_call=120)
    assert report.messages["tool"].stop_reason is StopReason.TOOL_USE  # the kit forces a call


async def test_a_context_that_cannot_be_made_is_an_error_event(
    smollm2_path: Any, monkeypatch: pytest.MonkeyPatch, anyio_backend: str
) -> None:
    from agentloop_local import LocalModelError
    from agentloop_local._native import NativeModel

    def fail(self: NativeModel, n_ctx: int, **kw: Any) -> Any:
        raise LocalModelError(f"llama.cpp could not create a context of {n_ctx} tokens")

    # A model (a pool) of its own for each backend: none holds a context yet.
    window = 320 if anyio_backend == "asyncio" else 330
    model = await load_model(str(smollm2_path), context_window=window)
    monkeypatch.setattr(NativeModel, "new_context", fail)
    events = await _collect(LocalProvider(model), _ask("Hi."), StreamOptions(max_tokens=3))
    assert type(events[-1]) is ErrorEvent and "could not create a context" in events[-1].message
    monkeypatch.undo()  # and the slot it took is free again
    events = await _collect(LocalProvider(model), _ask("Hi."), StreamOptions(max_tokens=3))
    assert type(events[-1]) is Done
