"""The total per-request deadline, over real HTTP on 127.0.0.1.

The idle timeout alone cannot end a call whose server keeps the connection warm: a keep-alive
comment every half second resets it forever. ``deadline`` bounds the whole call (connecting,
the headers, every byte of the body) and ends it as a typed error.
"""

from __future__ import annotations

import anyio
import pytest

from agentloop import ErrorKind, ModelSpec, StopReason, StreamOptions
from agentloop_providers import HttpProvider
from agentloop_providers.anthropic import AnthropicProvider
from agentloop_providers.openai_chat import OpenAIChatProvider

from ._loopback import Reply, serve
from ._loopback_ii import context
from ._util import collect

pytestmark = pytest.mark.anyio

KEEP_ALIVE = b": keep-alive\n\n"
OPTIONS = StreamOptions(api_key="k")
MODEL = ModelSpec(provider="anthropic", model_id="m")


def _keep_alive_forever() -> Reply:
    """Headers, then a keep-alive comment every 0.5 s for ten minutes, and nothing else."""
    return Reply(body=KEEP_ALIVE * 1200, chunk_size=len(KEEP_ALIVE), pause=0.5)


async def test_keep_alives_do_not_defeat_the_deadline() -> None:
    async with serve([_keep_alive_forever()]) as server:
        provider = AnthropicProvider(base_url=server.base_url, idle_timeout=1.0, deadline=2.0)
        async with provider:
            started = anyio.current_time()
            with anyio.fail_after(20):
                _, message = await collect(provider, MODEL, context(), OPTIONS)
            elapsed = anyio.current_time() - started
    assert message.stop_reason is StopReason.ERROR
    assert message.error_kind is ErrorKind.NETWORK
    assert "no complete answer within the 2s deadline" in (message.error_message or "")
    assert 2.0 <= elapsed < 6.0
    assert server.sent >= 2 * len(KEEP_ALIVE)  # the keep-alives did arrive, and reset nothing


async def test_the_deadline_bounds_a_silent_server_under_a_longer_idle_timeout() -> None:
    # The server sends its headers, then holds the body at its gate (never opened here).
    reply = Reply(body=b'data: {"choices":[]}\n\n', gate_at=0)
    async with serve([reply]) as server:
        provider = OpenAIChatProvider(base_url=server.base_url, idle_timeout=60, deadline=1.0)
        async with provider:
            with anyio.fail_after(20):
                _, message = await collect(provider, MODEL, context(), OPTIONS)
            with anyio.fail_after(10):
                await server.disconnected.wait()  # the connection was dropped
    assert message.error_kind is ErrorKind.NETWORK
    assert "deadline" in (message.error_message or "")


def test_no_deadline_by_default_and_both_defaults_documented() -> None:
    provider = AnthropicProvider(api_key="k")
    assert provider.deadline is None
    assert provider.idle_timeout == 120.0
    doc = HttpProvider.__doc__ or ""
    assert "120 s" in doc
    assert "no deadline" in doc
