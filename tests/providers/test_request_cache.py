"""The request cache: the same bytes as building from scratch, only new messages converted, and
memory within its bound.

``HYPOTHESIS_PROFILE=thorough`` runs many more histories (the default is sized for CI).
"""

from __future__ import annotations

import gc
import os
import tracemalloc
from typing import TYPE_CHECKING, Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from agentloop import (
    AssistantMessage,
    Image,
    ModelSpec,
    StopReason,
    StreamOptions,
    Text,
    Thinking,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agentloop.stream import LlmContext, MessageLog, ToolSchema
from agentloop_providers import (
    _anthropic_request,
    _bedrock_request,
    _gemini_request,
    _openai_chat_request,
    _request_cache,
    ollama,
    openai_responses,
    proxy,
)
from agentloop_providers._request_cache import RequestCache
from agentloop_providers.anthropic import AnthropicProvider
from agentloop_providers.caching import PromptCaching

from ._histories import ADAPTERS, Adapter, equal_copy, message, messages

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agentloop_providers._http import HttpProvider

_PROFILES = {
    "ci": settings(
        max_examples=25,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    ),
    "thorough": settings(
        max_examples=2_000,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    ),
}
PROFILE = _PROFILES.get(os.environ.get("HYPOTHESIS_PROFILE", "ci"), _PROFILES["ci"])

_encode = msgspec.json.encode
_TOOLS = [ToolSchema(name="f", description="F.", parameters={"type": "object"})]
_CACHING: list[Any] = [
    None,
    False,
    PromptCaching(messages=1),
    PromptCaching(messages=2, ttl="1h"),
    PromptCaching(tools=False, system=False, messages=3),
]


def _options(caching: int, choice: str | None) -> StreamOptions:
    extra = {} if _CACHING[caching] is None else {"prompt_caching": _CACHING[caching]}
    return StreamOptions(tool_choice=choice, extra=extra)


def _body(
    provider: HttpProvider, model: ModelSpec, context: LlmContext, options: StreamOptions
) -> Any:
    """The encoded body, or the type of what building it raised."""
    try:
        return _encode(provider.payload(model, context, options))
    except Exception as exc:
        return type(exc)


def _call(adapter: Adapter) -> st.SearchStrategy[tuple[int, int, str | None, bool]]:
    """How a request is made: the model, the prompt caching, the tool choice, a system prompt."""
    return st.tuples(
        st.integers(0, 1),
        st.integers(0, len(_CACHING) - 1),
        st.sampled_from([None, "none", "auto"]),
        st.booleans(),
    )


def _step(adapter: Adapter) -> st.SearchStrategy[tuple[Any, ...]]:
    custom = adapter.custom_messages
    return st.one_of(
        st.tuples(st.just("append"), messages(custom=custom)),
        st.tuples(st.just("append"), messages(custom=custom)),
        st.tuples(st.just("window"), st.integers(0, 3), st.integers(1, 6), st.booleans()),
        st.tuples(st.just("insert"), st.integers(0, 40), message(custom=custom), st.booleans()),
        st.tuples(st.just("fresh"), st.integers(0, 40), st.booleans()),
        st.tuples(st.just("retry"), st.integers(1, 3)),
    )


def _request(history: list[Any], step: tuple[Any, ...]) -> tuple[list[Any], list[Any]]:
    """The messages of the request after ``step``, and the history kept afterwards."""
    op = step[0]
    if op == "append":
        history = history + step[1]
        return history, history
    if op == "window":  # keep the head, drop a slice after it (a sliding window, a summary)
        _, head, dropped, keep = step
        request = history[:head] + history[head + dropped :]
    elif op == "insert":
        _, at, inserted, keep = step
        request = [*history[:at], inserted, *history[at:]]
    elif op == "fresh":  # an equal message that is not the same object
        _, at, keep = step
        request = list(history)
        if request:
            at %= len(request)
            request[at] = equal_copy(request[at])
    else:  # a retry: the last messages are dropped
        request = history[: -step[1]]
        keep = True
    return request, (request if keep else history)


@pytest.fixture(params=["chunks", "tiny_chunks"])
def chunking(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The transcripts' chunking as shipped, or joining all but the last item at every turn
    (so that decorations reach into chunks and take the fallback)."""
    if request.param == "tiny_chunks":
        monkeypatch.setattr(_request_cache, "_CHUNK", 1)
        monkeypatch.setattr(_request_cache, "_LOOSE", 1)
    return str(request.param)


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: a.name)
def test_the_cached_body_is_the_body_built_from_scratch(adapter: Adapter, chunking: str) -> None:
    @PROFILE
    @given(st.lists(st.tuples(_step(adapter), _call(adapter)), min_size=1, max_size=12))
    def check(steps: list[tuple[tuple[Any, ...], tuple[int, int, str | None, bool]]]) -> None:
        cached, plain = adapter.make(1 << 20), adapter.make(0)
        assert plain.request_cache is None
        history: list[Any] = []
        for step, (model, caching, choice, system) in steps:
            request, history = _request(history, step)
            context = LlmContext(
                system_prompt="Be brief." if system else "", messages=request, tools=_TOOLS
            )
            spec, options = adapter.models[model], _options(caching, choice)
            assert _body(cached, spec, context, options) == _body(plain, spec, context, options)

    check()


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: a.name)
def test_a_tight_cache_gives_the_same_body(adapter: Adapter) -> None:
    """A cache too small to keep a conversation evicts as it goes, and stays correct."""

    @PROFILE
    @given(st.lists(messages(custom=adapter.custom_messages), min_size=1, max_size=8))
    def check(turns: list[list[Any]]) -> None:
        cached, plain = adapter.make(2_000), adapter.make(0)
        history: list[Any] = []
        for turn in turns:
            history = history + turn
            context = LlmContext(messages=history, tools=_TOOLS)
            for spec in adapter.models:
                options = StreamOptions()
                assert _body(cached, spec, context, options) == _body(plain, spec, context, options)
        assert cached.request_cache is not None
        assert cached.request_cache.nbytes <= 2_000

    check()


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: a.name)
def test_a_long_conversation_is_unchanged(adapter: Adapter, chunking: str) -> None:
    """Hundreds of messages (the transcript joins its items into chunks), then windows."""
    cached, plain = adapter.make(1 << 24), adapter.make(0)
    model = adapter.models[0]
    history: list[Any] = []
    requests: list[list[Any]] = []
    for turn in range(120):
        history = history + _turns(1, start=turn)
        requests.append(history)
    requests += [history[:1] + history[-k:] for k in (200, 198, 150)]  # a moving window
    for request in requests:
        context = LlmContext(system_prompt="s", messages=request, tools=_TOOLS)
        assert _body(cached, model, context, StreamOptions()) == _body(
            plain, model, context, StreamOptions()
        )


@pytest.mark.anyio
async def test_the_request_sent_is_the_same() -> None:
    """Through ``build_request``: ``extra_body`` merges into a cached body as into a plain one."""
    history = _turns(6)
    context = LlmContext(system_prompt="s", messages=history, tools=_TOOLS)
    options = StreamOptions(extra={"extra_body": {"top_k": 5}})
    model = ModelSpec(provider="anthropic", model_id="claude")
    bodies = []
    for size in (1 << 20, 0):
        async with AnthropicProvider(api_key="k", request_cache_bytes=size) as provider:
            provider.build_request(model, context, options, "k")  # a first turn fills the cache
            bodies.append(provider.build_request(model, context, options, "k").content)
    assert bodies[0] == bodies[1]
    assert b'"top_k":5' in bodies[0]


def test_a_request_built_while_another_thread_holds_the_cache_skips_it() -> None:
    provider = AnthropicProvider(api_key="k")
    cache = provider.request_cache
    assert cache is not None
    model = ModelSpec(provider="anthropic", model_id="claude")
    context = LlmContext(messages=_turns(4))
    expected = _encode(
        AnthropicProvider(api_key="k", request_cache_bytes=0).payload(
            model, context, StreamOptions()
        )
    )
    with cache._lock:
        assert _encode(provider.payload(model, context, StreamOptions())) == expected
    assert cache.nbytes == 0


# --------------------------------------------------------------------------- work per turn


def _turns(n: int, start: int = 0) -> list[Any]:
    """``n`` turns of an agent calling a tool: an answer with thinking and a call, its result,
    and every third turn a new prompt."""
    out: list[Any] = []
    for i in range(start, start + n):
        if i % 3 == 0:
            out.append(UserMessage(content=[Text(text=f"prompt {i}"), Image(data="QUJD")]))
        out.append(
            AssistantMessage(
                provider="p1",
                content=[
                    Thinking(thinking="plan", signature="sig"),
                    Text(text=f"step {i}"),
                    ToolCall(id=f"call_{i}", name="f", arguments={"i": i}),
                ],
                stop_reason=StopReason.TOOL_USE,
            )
        )
        out.append(
            ToolResultMessage(
                tool_call_id=f"call_{i}",
                tool_name="f",
                content=[Text(text=f"result {i}"), Image(data="QUJD")],
            )
        )
    return out


# The per-message converters of each adapter: what the cache must call only for new messages.
_CONVERTERS: dict[str, list[tuple[Any, str]]] = {
    "anthropic": [(_anthropic_request, "_converted")],
    "bedrock": [(_bedrock_request, "_converted")],
    "gemini": [
        (_gemini_request, "_user_parts"),
        (_gemini_request, "_model_parts"),
        (_gemini_request, "_function_response"),
    ],
    "openai_chat": [
        (_openai_chat_request, "_user"),
        (_openai_chat_request, "_assistant"),
        (_openai_chat_request, "_tool"),
    ],
    "openai_responses": [(openai_responses, "_items")],
    "ollama": [(ollama, "_message")],
    "proxy": [(proxy, "encode")],
}
_CONVERTERS["openai_chat_drop_images"] = _CONVERTERS["openai_chat"]
_CONVERTERS["mistral"] = _CONVERTERS["openai_chat"]
_CONVERTERS["azure_chat"] = _CONVERTERS["openai_chat"]
_CONVERTERS["xai_chat"] = _CONVERTERS["openai_chat"]
_CONVERTERS["azure_responses"] = _CONVERTERS["openai_responses"]
_CONVERTERS["xai_responses"] = _CONVERTERS["openai_responses"]


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: a.name)
def test_each_message_is_converted_once(adapter: Adapter, monkeypatch: pytest.MonkeyPatch) -> None:
    converted: list[Any] = []
    for module, name in _CONVERTERS[adapter.name]:
        original = getattr(module, name)

        def spy(message: Any, *args: Any, _original: Any = original) -> Any:
            converted.append(message)
            return _original(message, *args)

        monkeypatch.setattr(module, name, spy)
    provider = adapter.make(1 << 24)
    model = adapter.models[0]
    history: list[Any] = []
    for turn in range(40):
        new = _turns(1, start=turn)
        history = history + new
        converted.clear()
        provider.payload(
            model, LlmContext(system_prompt="s", messages=history, tools=_TOOLS), StreamOptions()
        )
        # Each new message exactly once (and no earlier one), whatever the length of the history.
        assert sorted(map(id, converted)) == sorted(map(id, new)), turn
    # An equal message that is a new object is converted afresh; the others are not.
    at = len(history) // 2
    history[at] = equal_copy(history[at])
    converted.clear()
    provider.payload(
        model, LlmContext(system_prompt="s", messages=history, tools=_TOOLS), StreamOptions()
    )
    assert [id(m) for m in converted] == [id(history[at])]


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: a.name)
def test_the_loops_message_log_is_trusted_and_a_plain_list_is_checked(
    adapter: Adapter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop passes one ``MessageLog``, only appended to: met again, its messages are not
    compared one by one, and the body is the body built from scratch. A plain list with the
    same messages is compared (and an equal copy in it converted afresh)."""
    checks: list[Any] = []

    def counting_is(a: Any, b: Any) -> bool:
        checks.append(a)
        return a is b

    monkeypatch.setattr(_request_cache, "_is", counting_is)
    cached, plain = adapter.make(1 << 24), adapter.make(0)
    model = adapter.models[0]
    log = MessageLog()
    for turn in range(30):
        log.extend(_turns(1, start=turn))
        context = LlmContext(system_prompt="s", messages=log, tools=_TOOLS)
        assert _body(cached, model, context, StreamOptions()) == _body(
            plain, model, context, StreamOptions()
        )
    assert checks == []
    copy = list(log)
    copy[len(copy) // 2] = equal_copy(copy[len(copy) // 2])
    context = LlmContext(system_prompt="s", messages=copy, tools=_TOOLS)
    assert _body(cached, model, context, StreamOptions()) == _body(
        plain, model, context, StreamOptions()
    )
    assert checks


# --------------------------------------------------------------------------- memory


def _conversation(i: int) -> list[Any]:
    return [
        UserMessage.from_text(f"conversation {i}: " + "x" * 200),
        *_turns(6, start=i * 10),
    ]


@pytest.mark.parametrize("adapter", ADAPTERS[:3], ids=lambda a: a.name)
def test_many_conversations_stay_within_the_bound(adapter: Adapter) -> None:
    bound = 256 * 1024
    provider = adapter.make(bound)
    cache = provider.request_cache
    assert isinstance(cache, RequestCache)
    model = adapter.models[0]

    def converse(i: int) -> None:
        history = _conversation(i)
        for end in range(2, len(history) + 1, 2):
            provider.payload(model, LlmContext(messages=history[:end]), StreamOptions())
        assert cache.nbytes <= bound

    for i in range(100):  # fill the cache
        converse(i)
    gc.collect()
    tracemalloc.start()
    try:
        for i in range(100, 200):
            converse(i)
        gc.collect()
        first, _ = tracemalloc.get_traced_memory()
        for i in range(200, 500):
            converse(i)
        gc.collect()
        second, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert cache.nbytes <= bound
    assert cache.transcripts > 0
    # Three hundred more conversations kept nothing more: the cache holds what its bound allows
    # (and the messages its entries keep alive), not what went through it.
    assert second - first < bound // 4, (first, second)
    assert second < 4 * bound, second


def test_a_conversation_larger_than_the_bound_is_not_kept() -> None:
    provider = AnthropicProvider(api_key="k", request_cache_bytes=64 * 1024)
    cache = provider.request_cache
    assert cache is not None
    model = ModelSpec(provider="p1", model_id="claude")
    plain = AnthropicProvider(api_key="k", request_cache_bytes=0)
    history = _turns(200)
    for end in (300, 400, len(history)):
        context = LlmContext(messages=history[:end])
        assert _encode(provider.payload(model, context, StreamOptions())) == _encode(
            plain.payload(model, context, StreamOptions())
        )
        assert cache.nbytes <= 64 * 1024
    assert cache.transcripts == 0
    cache.clear()
    assert cache.nbytes == 0


# --------------------------------------------------------------------------- edges, spelled out


def _same_bodies(provider: HttpProvider, model: ModelSpec, steps: list[list[Any]]) -> None:
    plain = type(provider)(api_key="k", request_cache_bytes=0)
    for history in steps:
        context = LlmContext(messages=history)
        got = _body(provider, model, context, StreamOptions())
        assert got == _body(plain, model, context, StreamOptions())


def test_gemini_names_a_result_after_the_call_before_it() -> None:
    """An aborted answer sends no parts but renames the call id for the results after it: a
    result folded again must see the name it saw the first time, not the later one."""
    call = ToolCall(id="x", name="f")
    history = [
        AssistantMessage(provider="p1", content=[call], stop_reason=StopReason.TOOL_USE),
        ToolResultMessage(tool_call_id="x", content=[Text(text="one")]),
        AssistantMessage(
            provider="p1",
            content=[ToolCall(id="x", name="g")],
            stop_reason=StopReason.ABORTED,
        ),
        ToolResultMessage(tool_call_id="x", content=[Text(text="two")]),
    ]
    provider = ADAPTERS[2].make(1 << 20)
    _same_bodies(
        provider, ADAPTERS[2].models[0], [history, [*history, UserMessage.from_text("go")]]
    )


def test_mistral_renames_an_earlier_result_when_a_later_one_names_its_id() -> None:
    """Mistral names a tool message after the last result carrying that id's name: a new one
    changes an item already built, which the cache must build again."""
    first = [
        UserMessage.from_text("hi"),
        AssistantMessage(content=[ToolCall(id="x", name="f")], stop_reason=StopReason.TOOL_USE),
        ToolResultMessage(tool_call_id="x", tool_name="f", content=[Text(text="one")]),
        AssistantMessage(content=[Text(text="ok")]),
    ]
    later = [
        AssistantMessage(content=[ToolCall(id="x", name="g")], stop_reason=StopReason.TOOL_USE),
        ToolResultMessage(tool_call_id="x", tool_name="g", content=[Text(text="two")]),
    ]
    provider = ADAPTERS[5].make(1 << 20)
    _same_bodies(provider, ADAPTERS[5].models[0], [first, first + later])


class _ReachingBack(_request_cache.Codec):
    """One item per message; the first item is decorated, whatever the length."""

    def fold(
        self,
        messages: Sequence[Any],
        start: int,
        state: Any,
        pieces: _request_cache.Pieces,
        out: _request_cache.Fold,
    ) -> None:
        for i in range(start, len(messages)):
            out.add(i, _encode(messages[i]))
        out.restart = len(messages)

    def finish(
        self,
        items: _request_cache.Tail,
        starts: Sequence[int],
        tags: Sequence[Any],
        messages: Sequence[Any],
        pieces: _request_cache.Pieces,
        out: _request_cache.Fold,
    ) -> None:
        items[0] = msgspec.Raw(b'"first"')


def test_a_decoration_reaching_into_a_chunk_builds_the_request_afresh() -> None:
    cache = RequestCache()
    history: list[Any] = []
    for turn in range(200):
        history = [*history, f"message {turn}"]
        got = _encode(cache.items(_ReachingBack(("back",)), history))
        assert got == _encode(_request_cache._uncached(_ReachingBack(("back",)), history))
    assert got.startswith(b'["first","message 1",')
