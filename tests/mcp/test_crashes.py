"""kill -9 of a server mid-call and between calls, over stdio and streamable HTTP.

A crashed server never hangs a run: the call in flight becomes an error result within a bound,
an event says so, and the server is restarted (reconnected to, over HTTP) for the next call.
Calls are repeated after a crash only when the server annotates the tool read-only/idempotent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import pytest

import agentloop_mcp as mcp
import agentloop_mcp._toolset

from ._helpers import (
    QUICK,
    SDK_TRIO_SSE_WARNINGS,
    Events,
    HttpServerProcess,
    Pending,
    call,
    http_spec,
    is_running,
    kill9,
    server_pid,
    stdio_spec,
    text,
)

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = [pytest.mark.anyio, *SDK_TRIO_SSE_WARNINGS]

# The documented bound for a crash to end the call in flight: the end of the server's output
# is seen at once (a few milliseconds are measured); this leaves room for a loaded machine.
CRASH_BOUND = 2.0


async def test_stdio_kill_mid_call_is_an_error_result_then_the_server_restarts() -> None:
    events = Events()
    async with mcp.open_toolset(stdio_spec(), on_event=events) as toolset:
        pid = await server_pid(toolset)
        pending = Pending(toolset, "hang")
        async with anyio.create_task_group() as tg:
            tg.start_soon(pending.run)
            await pending.hanging.wait()
            killed_at = anyio.current_time()
            kill9(pid)
            with anyio.fail_after(CRASH_BOUND):
                await pending.done.wait()
        assert pending.result is not None and pending.result.is_error
        assert "failed during the call to 'hang'" in text(pending.result)
        assert "was not repeated" in text(pending.result)
        assert pending.result.details["crash"]
        crashed = await events.wait_for(mcp.ServerCrashed)
        assert crashed.server == "tools"
        assert crashed.restart_in == QUICK.initial_delay
        assert anyio.current_time() - killed_at < CRASH_BOUND

        # The next call waits for the restart and runs on a new process.
        new_pid = await server_pid(toolset)
        assert new_pid != pid
        assert not is_running(pid)
        assert toolset.restarts == 1
        reconnected = await events.wait_for(mcp.ServerConnected, 2)
        assert reconnected.restarts == 1
    assert not is_running(new_pid)
    assert isinstance(events.events[-1], mcp.ServerClosed)


async def test_stdio_kill_between_calls_restarts_before_the_next_call() -> None:
    events = Events()
    async with mcp.open_toolset(stdio_spec(), on_event=events) as toolset:
        pid = await server_pid(toolset)
        kill9(pid)
        crashed = await events.wait_for(mcp.ServerCrashed)
        assert "ended" in crashed.reason
        # write_note may change things, so it is never repeated; it was never sent either:
        # the crash was seen before the call, which waits for the new server.
        assert text(await call(toolset, "write_note", text="hi")) == "noted: hi"
        assert not is_running(pid)
        new_pid = await server_pid(toolset)
        assert new_pid != pid
    assert not is_running(new_pid)


async def test_a_read_only_call_is_repeated_once_after_a_crash(tmp_path: Path) -> None:
    spec = stdio_spec(env={"MARKER_DIR": str(tmp_path)})
    async with mcp.open_toolset(spec) as toolset:
        pending = Pending(toolset, "read_twice")
        async with anyio.create_task_group() as tg:
            tg.start_soon(pending.run)
            await pending.hanging.wait()
            first_pid = int((tmp_path / "read_twice").read_text())
            kill9(first_pid)
        assert pending.result is not None
        assert not pending.result.is_error
        new_pid = await server_pid(toolset)
        assert text(pending.result) == f"read by {new_pid}"
        retrying = [u for u in pending.updates if u.details.get("retrying")]
        assert len(retrying) == 1
        assert "read-only call is repeated" in text(retrying[0])
    assert not is_running(first_pid)
    assert not is_running(new_pid)


async def test_restarts_back_off_and_give_up_after_max_attempts(tmp_path: Path) -> None:
    events = Events()
    policy = mcp.RestartPolicy(initial_delay=0.05, max_delay=0.1, factor=2.0, max_attempts=2)
    spec = stdio_spec(env={"MARKER_DIR": str(tmp_path)}, restart=policy)
    async with mcp.open_toolset(spec, on_event=events) as toolset:
        pid = await server_pid(toolset)
        (tmp_path / "refuse_start").touch()  # every restart now exits at once
        kill9(pid)
        last = await events.wait_for(mcp.ServerRestartFailed, 2)
        assert toolset.state == "failed"
        assert [(e.attempt, e.retry_in) for e in events.of(mcp.ServerRestartFailed)] == [
            (1, 0.1),
            (2, None),
        ]
        assert events.of(mcp.ServerCrashed)[0].restart_in == 0.05
        assert last.reason
        assert toolset.get_tools() == ()
    assert events.events[-1] == mcp.ServerClosed(server="tools")
    assert not is_running(pid)


async def test_without_a_restart_policy_a_crash_fails_the_toolset() -> None:
    events = Events()
    async with mcp.open_toolset(stdio_spec(restart=None), on_event=events) as toolset:
        echo = [t for t in toolset.get_tools() if t.name == "echo"][0]
        pid = await server_pid(toolset)
        kill9(pid)
        crashed = await events.wait_for(mcp.ServerCrashed)
        assert crashed.restart_in is None
        result = await echo.execute("late", {"text": "x"}, lambda update: None)
        assert result.is_error
        assert "stopped restarting" in text(result)
    assert not is_running(pid)


async def test_http_kill_mid_call_is_an_error_result_then_the_client_reconnects() -> None:
    events = Events()
    server = HttpServerProcess()
    try:
        async with mcp.open_toolset(http_spec(server.url), on_event=events) as toolset:
            pending = Pending(toolset, "hang")
            async with anyio.create_task_group() as tg:
                tg.start_soon(pending.run)
                await pending.hanging.wait()
                killed_at = anyio.current_time()
                server.kill()
                with anyio.fail_after(CRASH_BOUND):
                    await pending.done.wait()
            assert anyio.current_time() - killed_at < CRASH_BOUND
            assert pending.result is not None and pending.result.is_error
            assert "failed during the call to 'hang'" in text(pending.result)
            await events.wait_for(mcp.ServerCrashed)

            server = HttpServerProcess(port=server.port)  # the server comes back
            assert text(await call(toolset, "echo", text="back")) == "back"
            assert toolset.restarts >= 1
    finally:
        server.kill()


async def test_http_kill_between_calls_is_seen_and_the_client_reconnects() -> None:
    events = Events()
    server = HttpServerProcess()
    try:
        async with mcp.open_toolset(http_spec(server.url), on_event=events) as toolset:
            assert text(await call(toolset, "echo", text="one")) == "one"
            server.kill()
            # The change subscription (a 2026-era server) breaks with the server.
            await events.wait_for(mcp.ServerCrashed)
            server = HttpServerProcess(port=server.port)
            assert text(await call(toolset, "write_note", text="two")) == "noted: two"
    finally:
        server.kill()


async def test_closing_does_not_wait_long_for_a_server_that_never_acknowledges(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A handshake-era HTTP session ends with a DELETE; this server never answers it.
    monkeypatch.setattr(agentloop_mcp._toolset, "_CLOSE_GRACE", 0.3)
    with HttpServerProcess(env={"HANG_ON_DELETE": "1"}) as server:
        async with mcp.open_toolset(http_spec(server.url, mode="legacy")) as toolset:
            assert text(await call(toolset, "echo", text="hi")) == "hi"
            started = anyio.current_time()
            with anyio.fail_after(5):
                await toolset.aclose()
            assert anyio.current_time() - started < 2.0
