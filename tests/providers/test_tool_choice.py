"""``StreamOptions.tool_choice`` in every adapter, and per turn (issue 15, defect 4).

Each API has its own way to say auto / none / required / this tool, and some servers cannot say
all four: the table below is the contract (the fallbacks are documented in each adapter and in
``OpenAIChatCompat``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import httpx
import msgspec
import pytest

from agentloop import (
    Agent,
    AssistantMessage,
    ErrorKind,
    LlmMessage,
    ModelSpec,
    StopReason,
    StreamOptions,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    tool,
)
from agentloop.loop import AgentContext, AgentLoopConfig, run_loop
from agentloop.stream import LlmContext, ToolSchema
from agentloop_providers import create_provider
from agentloop_providers._presets import get_preset
from agentloop_providers.anthropic import AnthropicProvider, anthropic_payload
from agentloop_providers.bedrock import BedrockProvider
from agentloop_providers.gemini import GeminiProvider, gemini_payload
from agentloop_providers.mistral import MistralProvider, mistral_payload
from agentloop_providers.ollama import OllamaProvider, ollama_payload
from agentloop_providers.openai_chat import (
    OpenAIChatCompat,
    OpenAIChatProvider,
    openai_chat_payload,
)
from agentloop_providers.openai_responses import OpenAIResponsesProvider, responses_payload
from agentloop_providers.xai import XaiChatProvider

from ._loopback import RecordedRequest, Reply, serve
from ._util import collect

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentloop.stream import StreamFn

pytestmark = pytest.mark.anyio

A = ToolSchema(name="get_weather", description="Weather.", parameters={"type": "object"})
B = ToolSchema(name="get_time", description="Time.", parameters={"type": "object"})
ASK: list[LlmMessage] = [UserMessage.from_text("Paris?")]
BOTH = LlmContext(messages=ASK, tools=[A, B])
ONE = LlmContext(messages=ASK, tools=[A])
CHOICES = [None, "auto", "none", "required", "get_weather"]


def _model(provider: str, **kw: Any) -> ModelSpec:
    kw.setdefault("model_id", "m")
    return ModelSpec(provider=provider, **kw)


def _opts(choice: str | None) -> StreamOptions:
    return StreamOptions(tool_choice=choice)


def _compat(preset: str) -> OpenAIChatCompat:
    return OpenAIChatCompat(**(get_preset(preset).compat or {}))


def _chat(compat: OpenAIChatCompat, ctx: LlmContext, choice: str | None) -> tuple[Any, list[str]]:
    body = openai_chat_payload(_model("x"), ctx, _opts(choice), compat)
    return body.get("tool_choice"), [t["function"]["name"] for t in body.get("tools", [])]


NAMED = {"type": "function", "function": {"name": "get_weather"}}


@pytest.mark.parametrize(
    ("compat", "expected"),
    [
        (
            "openai",
            [
                (None, ["get_weather", "get_time"]),
                ("auto", ["get_weather", "get_time"]),
                ("none", ["get_weather", "get_time"]),
                ("required", ["get_weather", "get_time"]),
                (NAMED, ["get_weather", "get_time"]),
            ],
        ),
        (
            # llama-server ignores the object, and lets "required" pass as prose for a model
            # whose template knows no tools: a forced call goes as a JSON schema of the call
            # (no tool_choice; see test_llama_server_forces_a_call_by_json_schema), and a named
            # one offers only that tool.
            "llamacpp",
            [
                (None, ["get_weather", "get_time"]),
                ("auto", ["get_weather", "get_time"]),
                ("none", ["get_weather", "get_time"]),
                (None, ["get_weather", "get_time"]),
                (None, ["get_weather"]),
            ],
        ),
        (
            # llama_cpp.server takes the object but ignores "required" and "none".
            "llamacpp_python",
            [
                (None, ["get_weather", "get_time"]),
                ("auto", ["get_weather", "get_time"]),
                (None, []),
                (None, ["get_weather", "get_time"]),  # several tools: cannot be forced
                (NAMED, ["get_weather", "get_time"]),
            ],
        ),
        (
            # Ollama's /v1 ignores the field: leave tools out, or offer only the one named.
            "ollama_openai",
            [
                (None, ["get_weather", "get_time"]),
                ("auto", ["get_weather", "get_time"]),
                (None, []),
                (None, ["get_weather", "get_time"]),
                (None, ["get_weather"]),
            ],
        ),
    ],
)
def test_chat_completions_servers(compat: str, expected: list[tuple[Any, list[str]]]) -> None:
    settings = OpenAIChatCompat() if compat == "openai" else _compat(compat)
    got = [_chat(settings, BOTH, choice) for choice in CHOICES]
    want = [
        (c if isinstance(c, dict) else (c if c is not None else None), tools)
        for c, tools in expected
    ]
    assert got == want


def test_llama_server_forces_a_call_by_json_schema() -> None:
    compat = _compat("llamacpp")
    body = openai_chat_payload(_model("llamacpp"), BOTH, _opts("required"), compat)
    schema = body["response_format"]["json_schema"]["schema"]
    names = [alt["properties"]["name"]["enum"] for alt in schema["anyOf"]]
    assert names == [["get_weather"], ["get_time"]]
    named = openai_chat_payload(_model("llamacpp"), BOTH, _opts("get_time"), compat)
    assert named["response_format"]["json_schema"]["schema"]["properties"]["name"] == {
        "type": "string",
        "enum": ["get_time"],
    }
    for choice in (None, "auto", "none"):
        assert "response_format" not in openai_chat_payload(
            _model("llamacpp"), BOTH, _opts(choice), compat
        )


def test_llama_cpp_python_forces_required_by_name_with_a_single_tool() -> None:
    assert _chat(_compat("llamacpp_python"), ONE, "required") == (NAMED, ["get_weather"])


def test_anthropic() -> None:
    def choice(value: str | None, **model: Any) -> Any:
        body = anthropic_payload(_model("anthropic", **model), BOTH, _opts(value))
        return body.get("tool_choice")

    assert [choice(c) for c in CHOICES] == [
        None,
        {"type": "auto"},
        {"type": "none"},
        {"type": "any"},
        {"type": "tool", "name": "get_weather"},
    ]
    # Extended thinking allows no forced call: documented fallback to auto.
    thinking = {"thinking_level": ThinkingLevel.LOW}
    assert choice("required", **thinking) == {"type": "auto"}
    assert choice("get_weather", **thinking) == {"type": "auto"}
    assert choice("none", **thinking) == {"type": "none"}


def test_openai_responses() -> None:
    got = [responses_payload(_model("o"), BOTH, _opts(c)).get("tool_choice") for c in CHOICES]
    assert got == [None, "auto", "none", "required", {"type": "function", "name": "get_weather"}]


def test_gemini() -> None:
    got = [gemini_payload(_model("g"), BOTH, _opts(c)).get("toolConfig") for c in CHOICES]
    mode = [None if g is None else g["functionCallingConfig"] for g in got]
    assert mode == [
        None,
        {"mode": "AUTO"},
        {"mode": "NONE"},
        {"mode": "ANY"},
        {"mode": "ANY", "allowedFunctionNames": ["get_weather"]},
    ]


def test_bedrock() -> None:
    provider = BedrockProvider(api_key="k")

    def config(value: str | None, ctx: LlmContext = BOTH, **model: Any) -> Any:
        body = provider.payload(_model("bedrock", **model), ctx, _opts(value))
        return body.get("toolConfig")

    got = [config(c) for c in CHOICES]
    assert [None if g is None else g.get("toolChoice") for g in got] == [
        None,
        {"auto": {}},
        None,  # no "none" in Converse: the tools are left out ...
        {"any": {}},
        {"tool": {"name": "get_weather"}},
    ]
    assert got[2] is None
    # ... unless the history holds tool blocks, which need the toolConfig: then auto.
    call = ToolCall(id="t1", name="get_weather", arguments={})
    history = LlmContext(
        messages=[
            *ASK,
            AssistantMessage(content=[call], stop_reason=StopReason.TOOL_USE),
            ToolResultMessage(tool_call_id="t1", content=[]),
        ],
        tools=[A, B],
    )
    assert config("none", history)["toolChoice"] == {"auto": {}}
    claude = "anthropic.claude-sonnet-4-20250514-v1:0"
    thinking = config("required", model_id=claude, thinking_level=ThinkingLevel.LOW)
    assert thinking["toolChoice"] == {"auto": {}}


def test_ollama_native() -> None:
    def tools(value: str | None) -> list[str]:
        body = ollama_payload(_model("ollama"), BOTH, _opts(value))
        assert "tool_choice" not in body
        return [t["function"]["name"] for t in body.get("tools", [])]

    assert [tools(c) for c in CHOICES] == [
        ["get_weather", "get_time"],
        ["get_weather", "get_time"],
        [],
        ["get_weather", "get_time"],  # cannot be forced: documented
        ["get_weather"],
    ]


def test_mistral_takes_the_openai_forms() -> None:
    got = [mistral_payload(_model("mistral"), BOTH, _opts(c)).get("tool_choice") for c in CHOICES]
    assert got == [None, "auto", "none", "required", NAMED]


def test_no_tools_no_choice() -> None:
    bare = LlmContext(messages=ASK)
    for value in ("auto", "none"):
        assert "tool_choice" not in openai_chat_payload(_model("x"), bare, _opts(value))
        assert "tool_choice" not in anthropic_payload(_model("x"), bare, _opts(value))


ADAPTERS: dict[str, Callable[[httpx.AsyncClient], StreamFn]] = {
    "openai_chat": lambda c: OpenAIChatProvider(client=c, api_key="k"),
    "anthropic": lambda c: AnthropicProvider(client=c, api_key="k"),
    "openai_responses": lambda c: OpenAIResponsesProvider(client=c, api_key="k"),
    "gemini": lambda c: GeminiProvider(client=c, api_key="k"),
    "bedrock": lambda c: BedrockProvider(client=c, api_key="k"),
    "ollama": lambda c: OllamaProvider(client=c),
    "mistral": lambda c: MistralProvider(client=c, api_key="k"),
    "xai": lambda c: XaiChatProvider(client=c, api_key="k"),
    "llamacpp_python": lambda c: create_provider("llamacpp_python", client=c),
}


@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize("choice", ["get_the_moon", "required"])
async def test_a_choice_the_tools_cannot_meet_is_a_clear_error(adapter: str, choice: str) -> None:
    seen: list[httpx.Request] = []

    def respond(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(500)

    ctx = ONE if choice != "required" else LlmContext(messages=list(ASK))
    async with httpx.AsyncClient(transport=httpx.MockTransport(respond)) as client:
        provider = ADAPTERS[adapter](client)
        _, message = await collect(provider, _model(adapter), ctx, _opts(choice))
    assert not seen  # nothing was sent
    assert message.stop_reason is StopReason.ERROR
    assert message.error_kind is ErrorKind.OTHER
    assert f"tool_choice {choice!r}" in (message.error_message or "") or (
        f"names {choice!r}" in (message.error_message or "")
    )


# --------------------------------------------------------------------------- per turn


def _sse(*chunks: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + (
        b"data: [DONE]\n\n"
    )


def _call(name: str, arguments: str) -> bytes:
    call = {"index": 0, "id": "call_1", "type": "function"}
    delta = {"tool_calls": [{**call, "function": {"name": name, "arguments": arguments}}]}
    return _sse(
        {"choices": [{"index": 0, "delta": delta}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    )


def _text(text: str) -> bytes:
    return _sse(
        {"choices": [{"index": 0, "delta": {"content": text}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    )


@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"Sunny in {city}."


async def test_a_tool_forced_for_one_turn_only() -> None:
    # A forced tool in extra_body would be forced on every turn, and the run would never end.
    def answer(request: RecordedRequest) -> Reply:
        body = json.loads(request.body)
        if body.get("tool_choice"):
            return Reply(body=_call("get_weather", '{"city": "Paris"}'))
        return Reply(body=_text("Sunny in Paris."))

    def turn_options(ctx: Any, options: StreamOptions) -> StreamOptions:
        first = not any(isinstance(m, ToolResultMessage) for m in ctx.messages)
        return msgspec.structs.replace(options, tool_choice="get_weather" if first else None)

    async with serve([], answer) as server:
        async with OpenAIChatProvider(base_url=server.base_url) as provider:
            config = AgentLoopConfig(
                model=_model("openai"),
                stream_fn=provider,
                tools=[get_weather],
                turn_options=turn_options,
            )
            result = await run_loop([UserMessage.from_text("Weather?")], AgentContext(), config)
    assert result.stop_reason is StopReason.STOP
    assert result.text == "Sunny in Paris."
    sent = [json.loads(r.body).get("tool_choice") for r in server.requests]
    assert sent == [NAMED, None]


class Weather(msgspec.Struct):
    city: str
    sky: str


async def test_typed_output_forces_its_tool_on_llama_cpp_python() -> None:
    # Typed output asks for "required" on every call; llama_cpp.server ignores "required", so
    # its preset names the one tool instead.
    async with serve([Reply(body=_call("final_result", '{"city": "Paris", "sky": "clear"}'))]) as s:
        async with create_provider("llamacpp_python", base_url=s.base_url) as provider:
            agent = Agent(model=_model("llamacpp_python"), stream_fn=provider)
            result = await agent.prompt("Weather in Paris?", output_type=Weather)
    assert result.output == Weather(city="Paris", sky="clear")
    body = json.loads(s.requests[0].body)
    assert body["tool_choice"] == {"type": "function", "function": {"name": "final_result"}}
