"""Every ``gen_ai.*`` name and well-known value used is one the semantic conventions define.

The conventions' names come from the ``opentelemetry-semantic-conventions`` package (installed
with the SDK), not from our own table: a name misspelt on both sides cannot pass.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING

import pytest
from opentelemetry import metrics, trace
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes
from opentelemetry.semconv._incubating.metrics import gen_ai_metrics
from opentelemetry.semconv.attributes import error_attributes

import agentloop as al
from agentloop.abc import RunInfo
from agentloop.testing import ScriptedStream, reply_error, reply_text, reply_tool_calls
from agentloop_otel import OpenTelemetry
from agentloop_otel._names import provider_name

if TYPE_CHECKING:
    from ._helpers import Telemetry

pytestmark = pytest.mark.anyio


def _constants(module: object, prefix: str) -> set[str]:
    return {
        value
        for name, value in vars(module).items()
        if name.isupper() and isinstance(value, str) and value.startswith(prefix)
    }


ATTRIBUTES = _constants(gen_ai_attributes, "gen_ai.") | {error_attributes.ERROR_TYPE}
METRICS = _constants(gen_ai_metrics, "gen_ai.")
OPERATIONS = {v.value for v in gen_ai_attributes.GenAiOperationNameValues}
PROVIDERS = {v.value for v in gen_ai_attributes.GenAiProviderNameValues}


@al.tool
async def lookup(term: str) -> str:
    """Look a term up."""
    return f"{term}: a small cat"


async def test_every_name_and_value_is_the_conventions(telemetry: Telemetry) -> None:
    usage = al.Usage(
        input=10, output=5, cache_read=3, cache_write=2, total=20, extra={"reasoning_tokens": 4}
    )
    bot = telemetry.agent(
        [
            reply_error(al.ErrorKind.THROTTLED, "busy"),
            reply_tool_calls(("lookup", {"term": "kitten"}), usage=usage),
            reply_text("done", usage=usage),
        ],
        tools=[lookup],
        capture_content=True,
        system_prompt="Be brief.",
        stream_options=al.StreamOptions(temperature=0.1, max_tokens=100),
    )
    await bot.prompt("go")
    keys: set[str] = set()
    for span in telemetry.spans:
        attributes = dict(span.attributes or {})
        keys |= set(attributes)
        assert attributes["gen_ai.operation.name"] in OPERATIONS
        assert span.name.startswith(f"{attributes['gen_ai.operation.name']} ")
        for event in span.events:
            keys |= set(event.attributes or {})
    ours = {k for k in keys if not k.startswith("agentloop.")}
    assert ours <= ATTRIBUTES, ours - ATTRIBUTES
    # What the run exercised: the required and recommended names of the issue, all present.
    assert {
        "gen_ai.operation.name",
        "gen_ai.provider.name",
        "gen_ai.request.model",
        "gen_ai.response.model",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.usage.cache_creation.input_tokens",
        "gen_ai.usage.reasoning.output_tokens",
        "gen_ai.tool.name",
        "gen_ai.tool.call.id",
        "gen_ai.agent.name",
        "gen_ai.request.temperature",
        "gen_ai.request.max_tokens",
        "gen_ai.response.finish_reasons",
        "gen_ai.response.time_to_first_chunk",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.tool.definitions",
        "gen_ai.tool.call.arguments",
        "error.type",
    } <= keys
    names = telemetry.metric_names()
    assert {n for n in names if not n.startswith("agentloop.")} <= METRICS
    assert {
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.duration",
        "gen_ai.client.operation.time_to_first_chunk",
        "agentloop.tool.duration",
    } == names
    token_types = {
        a["gen_ai.token.type"] for a, _, _ in telemetry.points("gen_ai.client.token.usage")
    }
    assert token_types == {"input", "output"}


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        ("anthropic", "anthropic"),
        ("openai", "openai"),
        ("openai_responses", "openai"),
        ("azure", "azure.ai.openai"),
        ("bedrock", "aws.bedrock"),
        ("gemini", "gcp.gemini"),
        ("mistral", "mistral_ai"),
        ("xai", "x_ai"),
        ("groq", "groq"),
        ("deepseek", "deepseek"),
    ],
)
def test_provider_names_are_the_conventions_well_known_ones(ours: str, theirs: str) -> None:
    assert provider_name(ours) == theirs
    assert theirs in PROVIDERS


def test_local_providers_keep_their_own_names() -> None:
    assert provider_name("ollama") == "ollama"
    assert provider_name("llamacpp") == "llamacpp"


# --------------------------------------------------------------------------- without an SDK


async def test_with_no_providers_set_up_a_run_is_left_alone() -> None:
    otel = OpenTelemetry(
        tracer_provider=trace.NoOpTracerProvider(), meter_provider=metrics.NoOpMeterProvider()
    )
    info = RunInfo(
        agent="a", model=al.ModelSpec(provider="openai", model_id="m"), conversation_id=None
    )
    assert otel.run(info) is None
    bot = al.Agent(
        model=al.ModelSpec(provider="openai", model_id="m"),
        stream_fn=ScriptedStream([reply_tool_calls(("lookup", {"term": "a"})), reply_text("ok")]),
        tools=[lookup],
        instrumentation=otel,
    )
    assert (await bot.prompt("go")).output == "ok"


async def test_metrics_without_traces(telemetry: Telemetry) -> None:
    otel = OpenTelemetry(
        tracer_provider=trace.NoOpTracerProvider(), meter_provider=telemetry.meter_provider
    )
    bot = al.Agent(
        model=al.ModelSpec(provider="openai", model_id="gpt-test"),
        stream_fn=ScriptedStream([reply_tool_calls(("lookup", {"term": "a"})), reply_text("ok")]),
        tools=[lookup],
        instrumentation=otel,
    )
    await bot.prompt("go")
    assert telemetry.spans == ()
    assert [n for _, n, _ in telemetry.points("agentloop.tool.duration")] == [1]
    assert sorted(
        (a["gen_ai.operation.name"], n)
        for a, n, _ in telemetry.points("gen_ai.client.operation.duration")
    ) == [("chat", 2), ("invoke_agent", 1)]


def test_the_api_alone_costs_one_span_per_run_and_nothing_per_call() -> None:
    # In a fresh interpreter: the global providers are the API's proxies, as in an
    # application that installed the extra but set up no SDK.
    probe = textwrap.dedent(
        """
        import anyio, agentloop as al
        from agentloop.abc import RunInfo
        from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls
        from agentloop_otel import OpenTelemetry

        calls = []
        class Counting(OpenTelemetry):
            def model_call(self, call):
                calls.append("model")
                return super().model_call(call)
            def tool_call(self, call):
                calls.append("tool")
                return super().tool_call(call)

        @al.tool
        async def noop() -> str:
            '''Nothing.'''
            return ""

        otel = Counting()
        info = RunInfo(agent="a", model=al.ModelSpec(provider="p", model_id="m"), conversation_id=None)
        assert otel.run(info) is None
        agent = al.Agent(
            model=al.ModelSpec(provider="p", model_id="m"),
            stream_fn=ScriptedStream([reply_tool_calls(("noop", {})), reply_text("ok")]),
            tools=[noop],
            instrumentation=otel,
        )
        assert anyio.run(agent.prompt, "go").output == "ok"
        assert calls == [], calls
        print("ok")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
