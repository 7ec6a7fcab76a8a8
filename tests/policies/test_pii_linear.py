"""PiiRedactor runs in linear time on adversarial text, and never starves the event loop.

The key-ish-name and JWT patterns used to backtrack catastrophically (20 KB of hyphenated
UUIDs: 8 s; ``"a-" * 40000``: 385 s, with the event loop blocked). Each adversarial input below
is 1 MB; the bound is generous (a linear scan takes a small fraction of it). The scanners that
replaced those two patterns are checked against the old patterns on short texts, where the old
ones are fast: same output.
"""

from __future__ import annotations

import contextlib
import random
import re
import threading
import time
import uuid
from typing import TYPE_CHECKING, cast

import anyio
import anyio.from_thread
import anyio.to_thread
import msgspec
import pytest
from hypothesis import given, settings, strategies as st

from agentloop import Agent, ModelSpec, StopReason, StreamOptions, ToolExecutionEnd
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls
from agentloop_policies import PiiRedactor
from agentloop_policies._pii import _jwt, _keyish

from ._helpers import MODEL, Recorder

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterator

    from agentloop.stream import AssistantMessageEvent, LlmContext

MB = 1_000_000
BOUND_SECONDS = 10.0  # per 1 MB input; linear redaction takes well under a second


def _repeat(unit: str) -> str:
    return (unit * (MB // len(unit) + 1))[:MB]


def _uuids(sep: str) -> str:
    rng = random.Random(7)
    return _repeat(sep.join(str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(1000)) + sep)


def _soup() -> str:
    rng = random.Random(11)
    return "".join(rng.choice("aA0-_.=: \"'eyJtokn@+(1)") for _ in range(MB))


ADVERSARIAL: dict[str, str] = {
    "a- repeated": _repeat("a-"),
    "hyphenated UUIDs joined by hyphens": _uuids("-"),
    "hyphenated UUIDs joined by spaces": _uuids(" "),
    "key names without values": _repeat("token"),
    "key names with short values": _repeat("api_key=abc "),
    "key names, then spaces and no value": "password" + " " * (MB - 9) + "=",
    "JWT starts": _repeat("eyJ-"),
    "JWT first segments": _repeat("eyJhbGciOiJIUzI1.eyJ-"),
    "bearer without token": _repeat("Bearer "),
    "private key without end": "-----BEGIN " + _repeat("A ")[11:],
    "sk- prefixes": _repeat("sk-"),
    "at signs": _repeat("a@"),
    "domain of hyphens": "x@" + _repeat("a-")[2:],
    "domain of labels": "x@" + _repeat("a.")[2:],
    "spaced digits": _repeat("1 "),
    "digit pairs": _repeat("12 "),
    "digits and hyphens": _repeat("1-"),
    "long digit run": _repeat("1"),
    "parenthesised digits": _repeat("(1) "),
    "plus digits": _repeat("+1"),
    "random soup": _soup(),
}


@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_adversarial_megabyte_redacts_in_linear_time(name: str) -> None:
    text = ADVERSARIAL[name]
    redactor = PiiRedactor()
    started = time.perf_counter()
    redactor.redact(text)
    elapsed = time.perf_counter() - started
    assert elapsed < BOUND_SECONDS, f"{name}: {elapsed * 1000:.0f} ms for 1 MB"


def test_the_scanners_are_linear_not_just_fast_at_one_size() -> None:
    # Four times the input must cost about four times the time, not sixteen.
    redactor = PiiRedactor()
    small, large = _repeat("a-")[: MB // 4], _repeat("a-")
    timings = []
    for text in (small, large, small, large):
        started = time.perf_counter()
        redactor.redact(text)
        timings.append(time.perf_counter() - started)
    ratio = min(timings[1], timings[3]) / max(min(timings[0], timings[2]), 1e-4)
    assert ratio < 10, f"4x the input took {ratio:.1f}x the time"


# --------------------------------------------------------------------------- same results

_OLD_KEYISH = re.compile(
    r"(?i)(\b[\w.\-]*?(?:api[_\-]?key|apikey|secret|token|passw(?:or)?d|passphrase|"
    r"access[_\-]?key|private[_\-]?key|auth|credentials?)[\w.\-]*"
    r"[\"']?\s*[:=]\s*[\"']?)"
    r"([A-Za-z0-9+/_\-.~=]{16,})"
)
_OLD_JWT = re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")
_PIECES = st.sampled_from(
    ["token", "api_key", "Secret", "auth", "x", "-", ".", "_", "=", ":", " ", "\n", '"', "'"]
    + ["abcdefgh", "ABCDEFGH12345678", "~+/", "eyJ", "eyJabcdefghij", "é", "0123456789"]
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_PIECES, max_size=14).map("".join))
def test_keyish_scanner_agrees_with_the_old_pattern(text: str) -> None:
    assert _keyish(text, "<R>") == _OLD_KEYISH.sub(lambda m: m.group(1) + "<R>", text)


@settings(max_examples=500, deadline=None)
@given(st.lists(_PIECES, max_size=14).map("".join))
def test_jwt_scanner_agrees_with_the_old_pattern(text: str) -> None:
    assert _jwt(text, "<R>") == _OLD_JWT.sub("<R>", text)


# --------------------------------------------------------------------------- the event loop


HEAVY = ADVERSARIAL["hyphenated UUIDs joined by hyphens"] + " write to bob@example.com"


async def _heartbeat(gaps: list[float], done: anyio.Event) -> None:
    last = anyio.current_time()
    while not done.is_set():
        await anyio.sleep(0.01)
        now = anyio.current_time()
        gaps.append(now - last)
        last = now


@pytest.mark.anyio
async def test_a_megabyte_tool_result_does_not_starve_the_loop() -> None:
    """A heartbeat task keeps ticking around the redaction of 1 MB of adversarial text: the
    loop is held for one linear pass (a few hundred ms), not for minutes."""
    stream = ScriptedStream([reply_tool_calls(("dump", {})), reply_text("done")])
    agent = Agent(
        model=MODEL,
        stream_fn=stream,
        tools=[Recorder("dump", reply=HEAVY)],
        post_turn_policies=[PiiRedactor()],
    )
    gaps: list[float] = []
    done = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(_heartbeat, gaps, done)
        with anyio.fail_after(60):
            result = await agent.prompt("go")
        done.set()
    assert result.stop_reason is StopReason.STOP
    seen = msgspec.json.encode(stream.calls[1].context.messages).decode()
    assert "bob@example.com" not in seen
    assert "[REDACTED:email]" in seen
    assert max(gaps) < 2.0, f"the loop was held for {max(gaps) * 1000:.0f} ms"


@pytest.mark.anyio
async def test_an_abort_sent_around_a_heavy_redaction_lands_promptly() -> None:
    """An abort sent from another thread as the tool finishes (so before, during or just after
    the redaction pass) ends the run within that one pass; the model never answers again, so
    nothing but the abort can end it."""
    scripted = ScriptedStream([reply_tool_calls(("dump", {}))])

    async def answer_once(
        model: ModelSpec, context: LlmContext, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        if scripted.calls:
            await anyio.sleep_forever()  # the second answer never comes: only an abort ends this
        events = cast(
            "AsyncGenerator[AssistantMessageEvent, None]", scripted(model, context, options)
        )
        async with contextlib.aclosing(events):
            async for event in events:
                yield event

    agent = Agent(
        model=MODEL,
        stream_fn=answer_once,
        tools=[Recorder("dump", reply=HEAVY)],
        post_turn_policies=[PiiRedactor()],
    )
    sent: list[float] = []

    def abort_from_a_thread() -> None:
        sent.append(time.monotonic())
        agent.abort_threadsafe()

    def on_event(event: object) -> None:
        if type(event) is ToolExecutionEnd:
            threading.Thread(target=abort_from_a_thread).start()

    agent.subscribe(on_event)
    with anyio.fail_after(60):
        result = await agent.prompt("go", raise_on_error=False)
        await anyio.to_thread.run_sync(lambda: None)  # the thread has sent its abort
    ended = time.monotonic()
    assert result.stop_reason is StopReason.ABORTED
    assert ended - sent[0] < 2.0


@pytest.mark.anyio
async def test_a_large_redaction_runs_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``PiiRedactor.in_thread_above`` characters the pass runs in a worker thread: the
    redaction tells a task on the event loop it began and waits for that task to answer, which
    it could never do on the loop's own thread."""
    began = anyio.Event()
    loop_ran = threading.Event()
    loop_thread = threading.get_ident()
    threads: list[int] = []
    redact = PiiRedactor.redact

    def waiting_redact(self: PiiRedactor, text: str) -> str:
        threads.append(threading.get_ident())
        if threads[-1] != loop_thread:  # on the loop's thread this would wait for itself
            anyio.from_thread.run_sync(began.set)
            loop_ran.wait(10)
        return redact(self, text)

    monkeypatch.setattr(PiiRedactor, "redact", waiting_redact)
    stream = ScriptedStream([reply_tool_calls(("dump", {})), reply_text("done")])
    agent = Agent(
        model=MODEL,
        stream_fn=stream,
        tools=[Recorder("dump", reply="mail bob@example.com " + "x" * 70_000)],
        post_turn_policies=[PiiRedactor()],
    )

    async def answer_the_redaction() -> None:
        await began.wait()
        loop_ran.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(answer_the_redaction)
        with anyio.fail_after(60):
            result = await agent.prompt("go")
        tg.cancel_scope.cancel()
    assert threads and threads[0] != loop_thread
    assert loop_ran.is_set()
    assert result.stop_reason is StopReason.STOP
    seen = msgspec.json.encode(stream.calls[1].context.messages).decode()
    assert "bob@example.com" not in seen and "[REDACTED:email]" in seen


def test_a_small_redaction_answers_at_once() -> None:
    """Below the threshold ``evaluate`` returns the verdict itself (no thread, no awaitable)."""
    policy = PiiRedactor()
    assert policy.in_thread_above == 64 * 1024
    assert policy.redact("mail bob@example.com") == "mail [REDACTED:email]"
