"""``agentloop run`` against a server that never answers, as a user meets it: it says at once
that it is waiting, and gives up within the bound, in one line naming the URL."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import anyio.abc
import pytest
from anyio.abc import SocketAttribute

from ._cli_helpers import Cli

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio


async def test_a_silent_server_is_waited_for_aloud_then_given_up(tmp_path: Path) -> None:
    connections: list[int] = []

    async def handle(stream: anyio.abc.SocketStream) -> None:
        connections.append(1)
        async with stream:
            try:
                while await stream.receive():
                    pass
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                pass

    cli = Cli(tmp_path)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    url = f"http://127.0.0.1:{listener.extra(SocketAttribute.local_port)}/v1"
    env = {
        "OPENAI_BASE_URL": url,
        "OPENAI_API_KEY": "sk-test-key-for-the-silent-server",
        "AGENTLOOP_FIRST_BYTE_TIMEOUT": "3",
        "AGENTLOOP_WAIT_NOTICE": "1",
    }
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, handle)
        with anyio.fail_after(60):
            done = await anyio.run_process(
                cli.command("run", "--no-session", "-m", "openai:gpt-4.1", "hello"),
                cwd=cli.workspace,
                env={**cli.env, **env},
                check=False,
            )
        tg.cancel_scope.cancel()
    stderr = done.stderr.decode()
    assert done.returncode == 1, stderr
    waiting = [line for line in stderr.splitlines() if "still waiting" in line]
    assert waiting, stderr
    assert waiting[0].startswith(f"agentloop: no answer from {url} for 1 s, still waiting")
    assert f"no answer from {url}/chat/completions within 3s" in stderr
    assert len(connections) == 1  # given up once, not four times
