"""How the client answers a server without a server in the way: elicitation and sampling when the
application's callbacks fail, misbehave or are missing; roots and prompt commands as values."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

import agentloop as al
import agentloop_mcp as mcp
from agentloop.policy import APPROVED
from agentloop.testing import ScriptedStream, reply_text
from agentloop_mcp._elicitation import HEADLESS_REASON, answer_elicitation

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio

FORM = mcp.ElicitationRequest(
    server="s",
    mode="form",
    message="Who?",
    schema={
        "type": "object",
        "properties": {"name": {"type": "string", "default": "Ada"}, "n": {"type": "integer"}},
        "required": ["n"],
    },
    defaults={"name": "Ada"},
)


async def test_elicitation_answers_whatever_the_callback_does() -> None:
    assert await answer_elicitation(None, FORM) == mcp.ElicitationResponse.decline(HEADLESS_REASON)

    async def raises(request: mcp.ElicitationRequest) -> mcp.ElicitationResponse:
        raise OSError("no terminal")

    declined = await answer_elicitation(raises, FORM)
    assert isinstance(declined, mcp.ElicitationResponse)
    assert (declined.action, declined.reason) == ("decline", "the client failed to ask: OSError")

    async def wrong_type(request: mcp.ElicitationRequest) -> Any:
        return {"action": "accept"}

    assert await answer_elicitation(wrong_type, FORM) == "the elicitation callback returned dict"

    async def fills(request: mcp.ElicitationRequest) -> mcp.ElicitationResponse:
        return mcp.ElicitationResponse.accept({"n": 3})

    assert await answer_elicitation(fills, FORM) == mcp.ElicitationResponse.accept(
        {"name": "Ada", "n": 3}
    )

    async def declines(request: mcp.ElicitationRequest) -> mcp.ElicitationResponse:
        return mcp.ElicitationResponse(action="decline", content={"leaked": True})

    # Content only travels with an accepted form.
    declined_content = await answer_elicitation(declines, FORM)
    assert isinstance(declined_content, mcp.ElicitationResponse)
    assert declined_content.content is None


def request(**options: Any) -> mcp.SamplingRequest:
    options.setdefault("server", "s")
    options.setdefault("messages", [al.UserMessage.from_text("hi")])
    options.setdefault("max_tokens", 100)
    return mcp.SamplingRequest(**options)


async def approve(request: mcp.SamplingRequest) -> Any:
    return APPROVED


async def test_sampling_refuses_rather_than_raises() -> None:
    model = al.ModelSpec(provider="t", model_id="m")

    async def broken_approval(request: mcp.SamplingRequest) -> Any:
        raise OSError("approval service down")

    cases = [
        (mcp.Sampler(model, stream_fn=ScriptedStream([])), "no one to ask"),
        (
            mcp.Sampler(model, stream_fn=ScriptedStream([]), approve=broken_approval),
            "approval failed",
        ),
        (mcp.Sampler(approve=approve), "no model to answer with"),
        (mcp.Sampler(model, approve=approve), "needs its stream_fn"),
        (mcp.Sampler("nowhere:model", approve=approve), "no model to answer with"),
    ]
    for sampler, expected in cases:
        message, refused = await sampler.answer(request())
        assert message is None
        assert refused is not None and expected in refused, refused


async def test_sampling_caps_tokens_and_counts_what_it_spends() -> None:
    stream = ScriptedStream([reply_text("ok", usage=al.Usage(input=30, output=20))] * 2)
    sampler = mcp.Sampler(
        al.ModelSpec(provider="t", model_id="m"),
        stream_fn=stream,
        approve=approve,
        max_tokens=40,
        budget_tokens=100,
    )
    message, refused = await sampler.answer(request(max_tokens=1_000, temperature=0.2))
    assert refused is None and message is not None and message.text == "ok"
    assert stream.calls[0].options.max_tokens == 40
    assert stream.calls[0].options.temperature == 0.2
    assert sampler.spent == 50
    await sampler.answer(request(max_tokens=10))
    assert sampler.spent == 100
    # The budget is spent: the next request is refused before the model is called.
    message, refused = await sampler.answer(request(max_tokens=10))
    assert message is None and refused is not None and "budget" in refused
    assert len(stream.calls) == 2


def test_roots_take_paths_and_file_uris_only(tmp_path: Path) -> None:
    roots = mcp.Roots([tmp_path, "file:///srv/x"])
    assert [r.uri for r in roots.get()] == [tmp_path.as_uri(), "file:///srv/x"]
    told: list[int] = []
    stop = roots.listen(lambda: told.append(1))
    roots.set([tmp_path])
    roots.set([tmp_path])  # unchanged: nobody is told
    with pytest.raises(ValueError, match="file://"):
        roots.set(["s3://bucket"])
    assert roots.get() == (mcp.Root(uri=tmp_path.as_uri(), name=tmp_path.name),)
    stop()
    roots.set([])
    assert told == [1]


def test_a_command_parses_what_the_user_typed() -> None:
    prompt = mcp.Prompt(
        name="summarize file",
        server="my server",
        arguments=[mcp.PromptArgument(name="path", required=True)],
    )
    command = mcp.PromptCommand.of(prompt)
    assert (command.name, command.hint) == ("mcp__my_server__summarize_file", "<path>")
    # One argument takes the whole text, spaces and all.
    assert command.parse("  notes/a b.md ") == {"path": "notes/a b.md"}
    assert command.parse("") == {}
    with pytest.raises(mcp.PromptArgumentError):
        mcp.PromptCommand.of(mcp.Prompt(name="p", arguments=[mcp.PromptArgument(name="a")])).parse(
            'a="unbalanced'
        )
