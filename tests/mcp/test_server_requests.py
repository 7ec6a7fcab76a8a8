"""What a server asks of the client: sampling, elicitation (form and URL), roots; and what it
tells: log messages. Against features_server.py, in both protocol eras, on both backends."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

import anyio
import pytest

import agentloop as al
import agentloop_mcp as mcp
from agentloop.models import ResolvedModel, register_provider
from agentloop.policy import APPROVED, Rejected
from agentloop.testing import FunctionStream, ScriptedStream, reply_text, reply_tool_calls

from ._helpers import ERAS, MODEL, Events, Mode, call, features_spec, text, tool_named

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio

SMALL = FunctionStream(
    lambda context: reply_text("from the small model", usage=al.Usage(input=7, output=3))
)


@pytest.fixture(scope="module", autouse=True)
def small_provider() -> None:
    register_provider(
        "mcptest",
        lambda model_id: ResolvedModel(al.ModelSpec(provider="mcptest", model_id=model_id), SMALL),
        replace=True,
    )


async def approve(request: mcp.SamplingRequest) -> Any:
    return APPROVED


# --------------------------------------------------------------------------- sampling


@ERAS
async def test_sampling_is_answered_by_the_agents_own_model_and_counted_into_its_run(
    mode: Mode,
) -> None:
    seen: list[mcp.SamplingRequest] = []

    async def approve_and_record(request: mcp.SamplingRequest) -> Any:
        seen.append(request)
        return APPROVED

    model = ScriptedStream(
        [
            reply_tool_calls(
                ("ask_model", {"question": "2+2?"}), usage=al.Usage(input=1, output=1)
            ),
            # The server's question reaches this same model, between the agent's turns.
            reply_text("four", usage=al.Usage(input=100, output=20)),
            reply_text("The server's model said four.", usage=al.Usage(input=1, output=1)),
        ]
    )
    sampler = mcp.Sampler(approve=approve_and_record, max_tokens=50)
    events = Events()
    async with mcp.open_toolset(features_spec(mode), sampling=sampler, on_event=events) as server:
        agent = al.Agent(model=MODEL, stream_fn=model, toolsets=[server])
        sampler.use(agent)  # the agent's own model answers
        result = await agent.prompt("ask the server")

    tool_result = next(m for m in result.messages if isinstance(m, al.ToolResultMessage))
    assert al.extract_text(tool_result.content) == "scripted: four"
    # The sampling call saw the server's conversation and limits.
    call_ = model.calls[1]
    assert call_.context.system_prompt == "Be brief."
    assert [al.extract_text(m.content) for m in call_.context.messages] == ["2+2?"]
    assert call_.options.max_tokens == 50  # the server asked 5000; the sampler caps it
    assert call_.options.temperature == 0.5
    (request,) = seen
    assert request.preferences.hints == ["small"]
    assert request.preferences.speed_priority == 1.0
    # What the server's question cost is the run's too.
    assert result.usage.input == 102 and result.usage.output == 22
    (answered,) = events.of(mcp.SamplingAnswered)
    assert answered.refused is None and answered.usage == al.Usage(input=100, output=20)


@ERAS
async def test_sampling_needs_approval_and_respects_budget_and_hints(mode: Mode) -> None:
    async def refuse(request: mcp.SamplingRequest) -> Any:
        return Rejected(reason="not today")

    default = ScriptedStream([reply_text("default model")] * 3)
    spec = features_spec(mode)
    events = Events()

    for sampler, expected in (
        (mcp.Sampler(MODEL, stream_fn=default), "no one to ask"),
        (mcp.Sampler(MODEL, stream_fn=default, approve=refuse), "not today"),
        (mcp.Sampler(MODEL, stream_fn=default, approve=approve, budget_tokens=10), "budget"),
    ):
        async with mcp.open_toolset(spec, sampling=sampler, on_event=events) as server:
            refused = await call(server, "ask_model", question="hi")
        assert refused.is_error, text(refused)
        assert expected in text(refused)
    assert default.calls == []  # no token was spent
    assert [e.refused is not None for e in events.of(mcp.SamplingAnswered)] == [True] * 3

    # The server's hint "small" picks a model the application allows.
    hinted = mcp.Sampler(
        MODEL, stream_fn=default, approve=approve, models=["mcptest:big", "mcptest:small-1"]
    )
    async with mcp.open_toolset(spec, sampling=hinted) as server:
        answered = await call(server, "ask_model", question="hi")
    assert text(answered) == "small-1: from the small model"
    assert SMALL.calls[-1].model.model_id == "small-1"
    assert hinted.spent == 10

    # Without a sampler the client does not offer sampling at all.
    async with mcp.open_toolset(spec) as server:
        unsupported = await call(server, "ask_model", question="hi")
    assert unsupported.is_error


# --------------------------------------------------------------------------- elicitation


@ERAS
async def test_elicitation_goes_to_the_callback_with_schema_defaults_applied(mode: Mode) -> None:
    asked: list[mcp.ElicitationRequest] = []

    async def fill_in(request: mcp.ElicitationRequest) -> mcp.ElicitationResponse:
        asked.append(request)
        return mcp.ElicitationResponse.accept({"colour": "blue"})  # the rest left to defaults

    events = Events()
    async with mcp.open_toolset(features_spec(mode), elicitation=fill_in, on_event=events) as s:
        answer = json.loads(text(await call(s, "ask_user")))
    assert answer["action"] == "accept"
    assert answer["content"] == {"name": "Ada", "age": 36, "colour": "blue"}
    (request,) = asked
    assert (request.server, request.mode, request.message) == ("features", "form", "Who are you?")
    assert request.defaults == {"name": "Ada", "age": 36}
    assert request.schema is not None and request.schema["required"] == ["colour"]
    assert events.of(mcp.ElicitationAnswered) == [
        mcp.ElicitationAnswered(server="features", mode="form", action="accept", reason=None)
    ]

    async def wrong(request: mcp.ElicitationRequest) -> mcp.ElicitationResponse:
        return mcp.ElicitationResponse.accept({"colour": "green"})

    async with mcp.open_toolset(features_spec(mode), elicitation=wrong) as s:
        refused = await call(s, "ask_user")
    # An answer outside the schema is an error to the server, not a silent pass.
    assert refused.is_error, text(refused)


@ERAS
async def test_a_headless_client_declines_with_a_reason(mode: Mode) -> None:
    events = Events()
    async with mcp.open_toolset(features_spec(mode), on_event=events) as server:
        answer = json.loads(text(await call(server, "ask_user")))
    assert answer["action"] == "decline"
    assert answer["content"] is None
    assert "without a user interface" in answer["meta"]["io.agentloop/reason"]
    (told,) = events.of(mcp.ElicitationAnswered)
    assert told.action == "decline" and told.reason is not None


async def test_url_elicitation_sends_the_user_to_the_page() -> None:
    asked: list[mcp.ElicitationRequest] = []

    async def consent(request: mcp.ElicitationRequest) -> mcp.ElicitationResponse:
        asked.append(request)
        return mcp.ElicitationResponse.accept()

    events = Events()
    spec = features_spec("legacy")
    async with mcp.open_toolset(spec, elicitation=consent, on_event=events) as server:
        assert text(await call(server, "ask_url")) == "accept"
        completed = await events.wait_for(mcp.ElicitationCompleted)
    (request,) = asked
    assert (request.mode, request.url, request.elicitation_id) == (
        "url",
        "https://example.com/login",
        "login-1",
    )
    assert completed.elicitation_id == "login-1"


# --------------------------------------------------------------------------- roots


@ERAS
async def test_roots_are_advertised_and_kept_current(mode: Mode, tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    roots = mcp.Roots([tmp_path])
    async with mcp.open_toolset(features_spec(mode), roots=roots) as server:
        listed = json.loads(text(await call(server, "roots")))
        assert listed == [{"uri": tmp_path.as_uri(), "name": tmp_path.name}]
        if mode == "legacy":
            # The server is told when they change (2026-era servers ask each time instead).
            waiting = anyio.Event()
            changed: list[str] = []

            async def wait() -> None:
                tool = tool_named(server, "wait_roots_changed")

                def on_update(update: Any) -> None:
                    waiting.set()

                changed.append(text(await tool.execute("w", {}, on_update)))

            async with anyio.create_task_group() as tg:
                tg.start_soon(wait)
                with anyio.fail_after(20):
                    await waiting.wait()
                roots.set([tmp_path / "b", mcp.Root(uri="file:///srv/repo", name="repo")])
            assert changed == ["changed"]
        else:
            roots.set([tmp_path / "b", mcp.Root(uri="file:///srv/repo", name="repo")])
        # Only file:// roots exist in the protocol: another is refused before anything changes.
        with pytest.raises(ValueError, match="file://"):
            roots.set(["https://example.com/repo"])
        listed = json.loads(text(await call(server, "roots")))
        assert listed == [
            {"uri": (tmp_path / "b").as_uri(), "name": "b"},
            {"uri": "file:///srv/repo", "name": "repo"},
        ]


# --------------------------------------------------------------------------- logging


@ERAS
async def test_server_logs_reach_the_logger_and_events_at_the_level_asked(
    mode: Mode, caplog: pytest.LogCaptureFixture
) -> None:
    events = Events()
    caplog.set_level(logging.DEBUG, logger="agentloop.mcp")
    async with mcp.open_toolset(features_spec(mode, log_level="debug"), on_event=events) as s:
        assert text(await call(s, "chatty")) == "done"
        logs = [(e.level, e.logger, e.data) for e in events.of(mcp.ServerLog)]
        assert logs == [
            ("debug", "chatty", "dull detail"),
            ("info", "chatty", "working"),
            ("error", "chatty", "oh no"),
        ]
        if mode == "legacy":  # 2026 asks the level of each request instead
            assert (await call(s, "state")).details["structured_content"]["level"] == "debug"
        await s.set_log_level("error")
        await call(s, "chatty")
        assert [e.data for e in events.of(mcp.ServerLog)][3:] == ["oh no"]
    logged = [
        (r.levelno, r.getMessage())
        for r in caplog.records
        if r.name == "agentloop.mcp" and "[" in r.getMessage()
    ]
    assert (logging.ERROR, "MCP server features [error chatty] oh no") in logged
    assert (logging.DEBUG, "MCP server features [debug chatty] dull detail") in logged
