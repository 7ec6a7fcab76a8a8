"""Every recorded response replays through its adapter to the expected message or error.

Twice: through ``httpx.MockTransport`` (the whole body at once) and over a real HTTP/1.1
connection to 127.0.0.1 that sends the body in small chunks with pauses and holds it half way
until the first event has reached the test, which shows the adapter streams rather than
buffering.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import anyio
import httpx
import pytest
from hypothesis import given, settings, strategies as st

from agentloop import ModelSpec, StreamOptions, UserMessage
from agentloop.stream import Accumulator, LlmContext, StreamStart

from ._fixtures import CASES, FIXTURES, Case, check
from ._loopback import Reply, serve
from ._util import collect, opened

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.anyio

CONTEXT = LlmContext(system_prompt="be brief", messages=[UserMessage.from_text("hi")])


def _model(case: Case) -> ModelSpec:
    return ModelSpec(provider=case.provider.provider_name, model_id="test-model")


def test_every_fixture_has_a_case() -> None:
    files = {
        f"{path.parent.name}/{path.name.split('.')[0]}"
        for provider in ("anthropic", "openai_chat", "ollama")
        for path in (FIXTURES / provider).iterdir()
    }
    covered = {case.name.split("#")[0] for case in CASES}
    assert files == {
        name.replace("multi_turn", "multi_turn_client_and_server_tool") for name in covered
    }


def test_every_fixture_file_is_attributed() -> None:
    rows: dict[str, str] = {}
    for line in (FIXTURES / "SOURCES.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 8 and "/" in cells[0] and cells[0] != "file":
            rows[cells[0]] = cells[7]
    files = {
        str(p.relative_to(FIXTURES)): p
        for p in FIXTURES.rglob("*")
        if p.is_file() and p.suffix != ".md"  # the attribution files themselves
    }
    assert set(rows) == set(files)
    for name, path in files.items():
        assert hashlib.sha256(path.read_bytes()).hexdigest()[:16] == rows[name], name


@pytest.mark.parametrize("case", CASES, ids=str)
async def test_replay_through_mock_transport(case: Case) -> None:
    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            case.status, content=case.body, headers={"content-type": case.content_type}
        )

    async with httpx.AsyncClient(transport=httpx.MockTransport(respond)) as client:
        provider = case.provider(client=client, api_key="test-key")
        events, message = await collect(provider, _model(case), CONTEXT, StreamOptions())
        await provider.aclose()
        assert not client.is_closed  # a given client is left to its owner
    check(case, message)
    if case.status == 200:
        assert type(events[0]) is StreamStart


def _gate(case: Case) -> int | None:
    """Where the server holds the body: half way, but after the first whole frame."""
    if case.status != 200:
        return None
    separator = b"\n" if "json" in case.content_type else b"\n\n"
    first = case.body.find(separator)
    if first < 0:
        return None  # one JSON document: nothing can arrive before its end
    gate = max(len(case.body) // 2, first + len(separator))
    return gate if gate < len(case.body) else None


@pytest.mark.parametrize("case", CASES, ids=str)
async def test_replay_over_loopback_in_small_chunks(case: Case) -> None:
    gate = _gate(case)
    reply = Reply(
        body=case.body,
        status=case.status,
        content_type=case.content_type,
        chunk_size=max(29, len(case.body) // 150),  # small chunks, at most ~150 pauses
        gate_at=gate,
    )
    model = _model(case)
    accumulator = Accumulator(model)
    sent_at_first_event: int | None = None
    async with serve([reply]) as server:
        async with case.provider(base_url=server.base_url, api_key="test-key") as provider:
            with anyio.fail_after(30):
                async with opened(provider, model, CONTEXT, StreamOptions()) as stream:
                    async for event in stream:
                        if sent_at_first_event is None:
                            sent_at_first_event = server.sent
                            server.gate.set()
                        accumulator.push(event)
        assert len(server.requests) == 1
    check(case, accumulator.finish())
    assert sent_at_first_event is not None
    if gate is not None:
        assert sent_at_first_event <= gate < len(case.body)


class _Chunks(httpx.AsyncByteStream):
    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece


@settings(deadline=None, max_examples=60)
@given(case=st.sampled_from([c for c in CASES if c.status == 200]), data=st.data())
async def test_any_chunking_of_any_fixture_gives_the_same_message(
    case: Case, data: st.DataObject
) -> None:
    body = case.body
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=25)))
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True) if b > a]

    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, stream=_Chunks(pieces), headers={"content-type": case.content_type}
        )

    async with httpx.AsyncClient(transport=httpx.MockTransport(respond)) as client:
        provider = case.provider(client=client, api_key="test-key")
        _, message = await collect(provider, _model(case), CONTEXT, StreamOptions())
    check(case, message)
