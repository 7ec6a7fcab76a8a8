"""Content capture (off by default, opt-in), and what never appears either way."""

from __future__ import annotations

import json
from typing import Any

import pytest

import agentloop as al
from agentloop.policy import CONTINUE, Replace, Skip
from agentloop.testing import reply_text, reply_tool_calls

from ._helpers import Telemetry, every_text

pytestmark = pytest.mark.anyio

CONTENT_KEYS = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.definitions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "agentloop.policy.reason",
}


@al.tool
async def lookup(term: str) -> str:
    """Look a term up."""
    return f"{term}: a small cat"


def script() -> list[Any]:
    return [
        reply_tool_calls(("lookup", {"term": "kitten"}), text="Let me look. "),
        reply_text("A kitten is a small cat."),
    ]


def attribute_keys(telemetry: Telemetry) -> set[str]:
    keys: set[str] = set()
    for span in telemetry.spans:
        keys |= set(span.attributes or {})
        for event in span.events:
            keys |= set(event.attributes or {})
    return keys


async def test_no_content_is_recorded_by_default(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    bot = al.Agent(
        model=telemetry.agent([]).model,
        stream_fn=telemetry.agent(script()).stream_fn,
        system_prompt="You are terse.",
        tools=[lookup],
        instrumentation=telemetry.instrumentation(),  # capture_content left as it defaults
    )
    assert bot.instrumentation is not None and not bot.instrumentation.capture_content  # type: ignore[attr-defined]
    await bot.prompt("What is a kitten, my secret question?")
    assert attribute_keys(telemetry) & CONTENT_KEYS == set()
    text = "\n".join(every_text(telemetry))
    for private in ("secret question", "kitten", "small cat", "You are terse", "Let me look"):
        assert private not in text


async def test_content_capture_records_the_conversation_in_the_conventions_shape(
    telemetry: Telemetry,
) -> None:
    bot = telemetry.agent(script(), tools=[lookup], capture_content=True, system_prompt="Be terse.")
    await bot.prompt("What is a kitten?")
    first, second = sorted(telemetry.named("chat gpt-test"), key=lambda s: s.start_time or 0)
    assert first.attributes is not None and second.attributes is not None
    assert json.loads(str(first.attributes["gen_ai.system_instructions"])) == [
        {"type": "text", "content": "Be terse."}
    ]
    assert json.loads(str(first.attributes["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": "What is a kitten?"}]}
    ]
    assert json.loads(str(first.attributes["gen_ai.output.messages"])) == [
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "Let me look. "},
                {
                    "type": "tool_call",
                    "id": "call_1",
                    "name": "lookup",
                    "arguments": {"term": "kitten"},
                },
            ],
            "finish_reason": "tool_call",
        }
    ]
    (definition,) = json.loads(str(first.attributes["gen_ai.tool.definitions"]))
    assert (definition["type"], definition["name"]) == ("function", "lookup")
    assert definition["parameters"]["properties"] == {"term": {"type": "string"}}
    # The tool's result reaches the trace as the model read it: in the next request.
    assert json.loads(str(second.attributes["gen_ai.input.messages"]))[-1] == {
        "role": "tool",
        "parts": [
            {"type": "tool_call_response", "id": "call_1", "response": "kitten: a small cat"}
        ],
    }
    tool = telemetry.one("execute_tool lookup")
    assert tool.attributes is not None
    assert json.loads(str(tool.attributes["gen_ai.tool.call.arguments"])) == {"term": "kitten"}
    assert "gen_ai.tool.call.result" not in tool.attributes


async def test_the_environment_variable_turns_capture_on(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    assert telemetry.instrumentation().capture_content
    assert not telemetry.instrumentation(capture_content=False).capture_content
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "false")
    assert not telemetry.instrumentation().capture_content


@pytest.mark.parametrize("capture_content", [False, True], ids=["capture-off", "capture-on"])
async def test_keys_never_appear(telemetry: Telemetry, capture_content: bool) -> None:
    """The key from ``get_api_key``, the one in the stream options, headers in the options'
    ``extra``, and a provider error quoting the key: none of it is recorded."""
    key = "sk-live-key-7d1f0a9c3b2e"

    async def get_api_key(provider: str) -> str:
        return key

    class Unauthorized(OSError):
        pass

    bot = telemetry.agent(
        [
            Unauthorized(f"401 for Authorization: Bearer {key}"),
            reply_tool_calls(("lookup", {"term": "kitten"})),
            reply_text("done"),
        ],
        tools=[lookup],
        capture_content=capture_content,
        get_api_key=get_api_key,
        stream_options=al.StreamOptions(
            api_key=key, temperature=0.2, extra={"headers": {"Authorization": f"Bearer {key}"}}
        ),
    )
    result = await bot.prompt("go")
    assert result.output == "done"
    failed = min(telemetry.named("chat gpt-test"), key=lambda s: s.start_time or 0)
    assert failed.attributes is not None and failed.attributes["error.type"] == "network"
    assert failed.attributes["gen_ai.request.temperature"] == 0.2
    assert (
        failed.status.description is not None
        and "401 for Authorization" in failed.status.description
    )
    everything = "\n".join(every_text(telemetry))
    assert len(telemetry.spans) == 5  # the agent, three attempts, one tool call
    assert key not in everything
    assert key[3:] not in everything


async def test_redacted_content_never_appears(telemetry: Telemetry) -> None:
    """A post-turn policy replacing a tool's result (PII redaction): the original is never
    recorded, even with content capture on; nor is redacted reasoning."""
    private = "jane.doe@example.com"

    @al.tool
    async def contact() -> str:
        """Finds the contact."""
        return f"write to {private}"

    class Redact:
        name = "redact"

        def evaluate(self, ctx: Any) -> Any:
            if not ctx.tool_results:
                return CONTINUE
            return Replace(
                tool_results=[
                    al.ToolResultMessage(
                        tool_call_id=r.tool_call_id,
                        tool_name=r.tool_name,
                        content=[al.Text(text=r.text.replace(private, "[REDACTED:email]"))],
                    )
                    for r in ctx.tool_results
                ]
            )

    thinking = al.Thinking(thinking="", redacted=True, data="opaque-provider-reasoning-blob")
    answer = al.AssistantMessage(
        content=[thinking, al.ToolCall(id="call_1", name="contact", arguments={})],
        stop_reason=al.StopReason.TOOL_USE,
    )
    bot = telemetry.agent(
        [answer, reply_text("I wrote to them.")],
        tools=[contact],
        capture_content=True,
        post_turn_policies=[Redact()],
    )
    await bot.prompt("Who do I write to?")
    everything = "\n".join(every_text(telemetry))
    assert "[REDACTED:email]" in everything  # the redacted result, as the model read it
    assert private not in everything
    assert "opaque-provider-reasoning-blob" not in everything
    agent = telemetry.one("invoke_agent agent")
    (verdict,) = agent.events
    assert verdict.name == "agentloop.policy_verdict"
    assert verdict.attributes == {
        "agentloop.policy.slot": "post_turn",
        "agentloop.policy.name": "redact",
        "agentloop.policy.verdict": "replace",
    }


@pytest.mark.parametrize("capture_content", [False, True], ids=["capture-off", "capture-on"])
async def test_policy_verdicts_are_events_of_the_agent_span(
    telemetry: Telemetry, capture_content: bool
) -> None:
    class NoDelete:
        name = "no-delete"

        def evaluate(self, ctx: Any) -> Any:
            if ctx.call.name == "delete":
                return Skip(reason=f"deleting {ctx.call.arguments['path']} is not allowed")
            return None

    @al.tool
    async def delete(path: str) -> str:
        """Deletes a file."""
        return "deleted"

    bot = telemetry.agent(
        [reply_tool_calls(("delete", {"path": "/etc/passwd"})), reply_text("ok")],
        tools=[delete],
        capture_content=capture_content,
        pre_dispatch_policies=[NoDelete()],
    )
    await bot.prompt("go")
    agent = telemetry.one("invoke_agent agent")
    (event,) = agent.events
    expected: dict[str, Any] = {
        "agentloop.policy.slot": "pre_dispatch",
        "agentloop.policy.name": "no-delete",
        "agentloop.policy.verdict": "skip",
        "gen_ai.tool.call.id": "call_1",
    }
    if capture_content:
        expected["agentloop.policy.reason"] = "deleting /etc/passwd is not allowed"
    assert (event.name, dict(event.attributes or {})) == ("agentloop.policy_verdict", expected)
    assert telemetry.named("execute_tool delete") == []  # the call never ran
