"""Kill the worker process mid-run (``kill -9`` by PID), start another: the run completes.

The worker runs in a process of its own (``_crash_worker.py``), blocked once at the step under
test: during a tool activity, or while a model activity streams. After the kill, Temporal
notices the lost activity when its heartbeats stop and tries it again on the new worker; the
new worker replays the workflow from its history. Every tool call's side effect happens exactly
once and the history is paired.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import pytest
from anyio.streams.text import TextReceiveStream

from agentloop_temporal.testing import start_dev_server

from ._support import (
    agent_for,
    assert_paired,
    connect,
    keep_history,
    new_queue,
    results,
    tool_calls,
)

if TYPE_CHECKING:
    from anyio.abc import Process

    from agentloop_temporal.testing import DevServer

pytestmark = pytest.mark.anyio

WORKER = Path(__file__).with_name("_crash_worker.py")


class WorkerProcess:
    """``_crash_worker.py`` in a process of its own, its output read line by line."""

    def __init__(self, process: Process) -> None:
        self.process = process
        assert process.stdout is not None
        self._text = TextReceiveStream(process.stdout)
        self._buffer = ""

    @classmethod
    async def start(cls, address: str, queue: str, workdir: Path) -> WorkerProcess:
        process = await anyio.open_process(
            [sys.executable, str(WORKER), address, queue, str(workdir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        worker = cls(process)
        await worker.line_starting("READY")
        return worker

    async def line_starting(self, prefix: str) -> str:
        with anyio.fail_after(60):
            while True:
                while "\n" in self._buffer:
                    line, self._buffer = self._buffer.split("\n", 1)
                    if line.startswith(prefix):
                        return line
                self._buffer += await self._text.receive()

    async def kill(self) -> None:
        """``kill -9`` by process id, and reap it."""
        os.kill(self.process.pid, signal.SIGKILL)
        await self.process.wait()
        await self.process.aclose()


@pytest.mark.parametrize("during", ["tool", "model"])
async def test_a_run_survives_its_worker_being_killed(
    temporal_server: DevServer, tmp_path: Path, during: str
) -> None:
    (tmp_path / "block").write_text(during)
    client = await connect(temporal_server.address)
    queue = new_queue()
    first = await WorkerProcess.start(temporal_server.address, queue, tmp_path)
    second: WorkerProcess | None = None
    try:
        agent = agent_for(client, queue)
        run = await agent.start("go")
        blocked = await first.line_starting("BLOCKED")
        assert blocked.startswith(f"BLOCKED {during}")
        await first.kill()
        killed = time.monotonic()
        second = await WorkerProcess.start(temporal_server.address, queue, tmp_path)
        with anyio.fail_after(60):
            result = await run.result()
        recovered = time.monotonic() - killed
        history = await keep_history(run.handle, f"killed_during_{during}")
    finally:
        if first.process.returncode is None:
            await first.kill()
        if second is not None:
            await second.kill()
    assert result.output == "finished after 3 effects"
    assert_paired(result.messages)
    assert [r.is_error for r in results(result.messages)] == [False, False, False]
    calls = [c.id for c in tool_calls(result.messages)]
    effects = (tmp_path / "effects").read_text().split()
    starts = (tmp_path / "starts").read_text().split()
    # Every tool call's side effect happened exactly once, whatever was killed.
    assert sorted(effects) == sorted(calls) and len(set(calls)) == 3
    # The call killed mid-way was started again (activities are at least once); the others,
    # finished before the kill, were never run again: the new worker took them from history.
    interrupted = blocked.split()[-1] if during == "tool" else None
    assert sorted(starts) == sorted(calls + ([interrupted] if interrupted else []))
    # The interrupted activity's second attempt ran on the new worker; nothing was rescheduled.
    assert '"attempt": 2' in history
    assert history.count('"name": "agentloop.tool_call"') == 3
    assert history.count('"name": "agentloop.model_call"') == 3
    assert recovered < 30, recovered


async def test_a_finished_call_whose_completion_never_reached_the_server_runs_again(
    tmp_path: Path,
) -> None:
    # What at-least-once means (docs/temporal.md): the server restarts while a tool call runs;
    # the call finishes while the server is away, so its completion is never delivered (its
    # worker is gone before the server is back). The call runs again, with the same call id.
    (tmp_path / "block").write_text("finish")
    port = _free_port()
    database = str(tmp_path / "temporal.db")
    server = start_dev_server(port=port, db_filename=database)
    first: WorkerProcess | None = None
    second: WorkerProcess | None = None
    try:
        client = await connect(server.address)
        queue = new_queue()
        first = await WorkerProcess.start(server.address, queue, tmp_path)
        run = await agent_for(client, queue).start("go")
        blocked = await first.line_starting("BLOCKED finish")
        call_id = blocked.split()[-1]
        await anyio.to_thread.run_sync(server.stop)  # the server goes down mid-call
        assert first.process.stdin is not None
        await first.process.stdin.send(b"go\n")
        assert await first.line_starting("FINISHED") == f"FINISHED {call_id}"
        await first.kill()  # its completion was never delivered
        server = await anyio.to_thread.run_sync(
            lambda: start_dev_server(port=port, db_filename=database)
        )
        second = await WorkerProcess.start(server.address, queue, tmp_path)
        with anyio.fail_after(120):
            result = await run.result()
        history = await keep_history(run.handle, "server_restart")
    finally:
        for worker in (first, second):
            if worker is not None and worker.process.returncode is None:
                await worker.kill()
        server.stop()
    assert result.output == "finished after 3 effects"
    assert_paired(result.messages)
    effects = (tmp_path / "effects").read_text().split()
    # The call that finished while the server was away ran twice, with the same call id; the
    # others once. The run recorded one result for it.
    assert sorted(effects) == sorted(["c1", "c2", call_id, call_id])
    assert [r.tool_call_id for r in results(result.messages)].count(call_id) == 1
    assert '"attempt": 2' in history


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
