"""A newcomer's first mistakes fail at once, naming what to fix."""

from __future__ import annotations

import logging
import threading

import pytest

import agentloop as al
from agentloop.testing import ScriptedStream

from ._helpers import MODEL


class NotJson:
    """A class msgspec cannot make a JSON Schema for."""


def test_an_unannotated_tool_parameter_is_refused_naming_tool_and_parameter() -> None:
    with pytest.raises(TypeError, match=r"'lookup'.*parameter 'city' has no type annotation"):

        @al.tool
        def lookup(city, days: int = 1) -> str:  # type: ignore[no-untyped-def]
            """Look it up."""
            return city  # type: ignore[no-any-return]


def test_a_parameter_of_an_unsupported_class_is_refused_naming_both() -> None:
    with pytest.raises(TypeError, match=r"'store'.*parameter 'thing'.*NotJson") as caught:

        @al.tool
        def store(thing: NotJson) -> str:
            """Store it."""
            return "ok"

    assert "\n" not in str(caught.value)  # one line, not msgspec's explanation of schema hooks


@pytest.mark.parametrize("bad", [NotJson, threading.Lock])
def test_an_unsupported_output_type_is_refused_when_the_agent_is_made(bad: object) -> None:
    with pytest.raises(TypeError, match="output_type .* is not supported"):
        al.Agent(model=MODEL, stream_fn=ScriptedStream([]), output_type=bad)  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_an_unsupported_output_type_per_prompt_is_refused_before_the_run() -> None:
    stream = ScriptedStream([])
    agent = al.Agent(model=MODEL, stream_fn=stream)
    with pytest.raises(TypeError, match="output_type 'NotJson' is not supported"):
        await agent.prompt("hi", output_type=NotJson)
    assert stream.calls == []


def test_an_unknown_model_id_is_said_once_naming_the_way_to_set_its_window(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with caplog.at_level(logging.INFO, logger="agentloop.models"):
        al.Agent(model="openai:my-fine-tune-xyz")
        al.Agent(model="openai:my-fine-tune-xyz")
    records = [r for r in caplog.records if "my-fine-tune-xyz" in r.getMessage()]
    assert len(records) == 1
    assert records[0].levelno == logging.WARNING
    assert "ModelSpec(context_window=" in records[0].getMessage()
