"""The lifecycle matrix: open and close from any task, in any order, cancelled from outside
mid-call or mid-connect, over stdio (and the same over HTTP at the end). Every stdio case ends
with the server's process gone (checked by its id); every case with no RuntimeError (raised or
logged, see conftest.py) and within a bounded time. The kill -9 cases are in test_crashes.py."""

from __future__ import annotations

import socket
import sys
import textwrap
from typing import TYPE_CHECKING

import anyio
import anyio.abc
import pytest

import agentloop as al
import agentloop_mcp as mcp
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls

from ._helpers import (
    MODEL,
    Pending,
    call,
    http_spec,
    is_running,
    server_pid,
    stdio_spec,
    text,
)

if TYPE_CHECKING:
    from pathlib import Path

    from ._helpers import HttpServerProcess

pytestmark = pytest.mark.anyio

# Stopping a stdio server: close its stdin, it exits (the SDK allows 2 s, then kills the group).
STOP_BOUND = 5.0


async def test_open_in_one_task_and_close_in_another() -> None:
    async with mcp.open_group() as group:
        opened = anyio.Event()
        toolsets: list[mcp.McpToolset] = []
        pids: list[int] = []

        async def task_a() -> None:
            toolset = await group.connect(stdio_spec())
            toolsets.append(toolset)
            pids.append(await server_pid(toolset))
            opened.set()

        async def task_b() -> None:
            await opened.wait()
            assert text(await call(toolsets[0], "echo", text="from b")) == "from b"
            with anyio.fail_after(STOP_BOUND):
                await toolsets[0].aclose()

        async with anyio.create_task_group() as tg:
            tg.start_soon(task_a)
            tg.start_soon(task_b)
        assert toolsets[0].state == "closed"
        assert toolsets[0].get_tools() == ()
        assert not is_running(pids[0])
        assert group.toolsets == []


async def test_close_several_out_of_order_from_different_tasks() -> None:
    async with mcp.open_group() as group:
        toolsets: dict[int, mcp.McpToolset] = {}

        async def open_one(i: int) -> None:
            toolsets[i] = await group.connect(stdio_spec(name=f"s{i}", prefix=f"s{i}_"))

        async with anyio.create_task_group() as tg:
            for i in range(3):
                tg.start_soon(open_one, i)
        pids = {i: await server_pid(t) for i, t in toolsets.items()}
        assert len(set(pids.values())) == 3
        assert len(group.get_tools()) == 3 * len(toolsets[0].get_tools())

        for closing in (1, 2, 0):
            async with anyio.create_task_group() as tg:
                tg.start_soon(toolsets[closing].aclose)
            assert not is_running(pids[closing])
            for i, toolset in toolsets.items():
                if toolset.state != "closed":
                    assert text(await call(toolset, f"s{i}_echo", text="still")) == "still"
        assert group.get_tools() == []


async def test_outer_cancellation_mid_call_stops_the_server() -> None:
    started = anyio.current_time()
    with anyio.CancelScope() as outer:
        async with mcp.open_group() as group:
            toolset = await group.connect(stdio_spec())
            pid = await server_pid(toolset)
            pending = Pending(toolset, "hang")
            async with anyio.create_task_group() as tg:
                tg.start_soon(pending.run)
                await pending.hanging.wait()
                outer.cancel()
    assert outer.cancelled_caught
    assert pending.result is None  # the call was cancelled with everything else
    assert not is_running(pid)
    assert toolset.state == "closed"
    assert anyio.current_time() - started < 10.0


async def test_an_aborted_agent_run_cancels_the_call_and_keeps_the_server() -> None:
    model = ScriptedStream([reply_tool_calls(("hang", {})), reply_text("unused")])
    async with mcp.open_toolset(stdio_spec()) as toolset:
        pid = await server_pid(toolset)
        agent = al.Agent(model=MODEL, stream_fn=model, toolsets=[toolset])

        def on_event(event: al.AgentEvent) -> None:
            if isinstance(event, al.ToolExecutionUpdate) and text(event.update) == "hanging":
                agent.abort()

        agent.subscribe(on_event)
        result = await agent.prompt("hang", raise_on_error=False)
        assert result.stop_reason is al.StopReason.ABORTED
        # The server is the same process and still answers.
        assert await server_pid(toolset) == pid
        assert text(await call(toolset, "echo", text="after")) == "after"
    assert not is_running(pid)


async def test_a_call_past_its_time_limit_is_an_error_and_the_server_goes_on() -> None:
    async with mcp.open_toolset(stdio_spec(call_timeout=0.3)) as toolset:
        pid = await server_pid(toolset)
        result = await call(toolset, "hang")
        assert result.is_error
        assert text(result) == "MCP tool 'hang' of server 'tools' timed out after 0.3 s"
        assert await server_pid(toolset) == pid
    assert not is_running(pid)


def never_answering_server(tmp_path: Path) -> mcp.StdioServer:
    """A process that writes its pid, then reads stdin and never answers; it exits at EOF."""
    pid_file = tmp_path / "pid"
    script = textwrap.dedent(
        f"""
        import os, sys
        open({str(pid_file)!r}, "w").write(str(os.getpid()))
        sys.stdin.read()
        """
    )
    return mcp.StdioServer(
        name="silent",
        command=sys.executable,
        args=["-c", script],
        connect_timeout=0.5,
    )


async def test_connect_timeout_fails_and_leaves_no_process(tmp_path: Path) -> None:
    started = anyio.current_time()
    async with mcp.open_group() as group:
        with pytest.raises(mcp.ConnectFailed, match=r"'silent': timed out after 0.5 s"):
            await group.connect(never_answering_server(tmp_path))
        assert group.toolsets == []
    pid = int((tmp_path / "pid").read_text())
    assert not is_running(pid)
    assert anyio.current_time() - started < 0.5 + STOP_BOUND


async def test_a_caller_timeout_during_connect_leaves_no_process(tmp_path: Path) -> None:
    spec = never_answering_server(tmp_path)
    async with mcp.open_group() as group:
        with anyio.move_on_after(0.5) as scope:
            await group.connect(msgspec_replace(spec, connect_timeout=60.0))
        assert scope.cancelled_caught
        assert group.toolsets == []
    assert not is_running(int((tmp_path / "pid").read_text()))


async def test_open_toolset_raises_connect_failed_for_a_missing_command() -> None:
    spec = mcp.StdioServer(name="missing", command="/nonexistent/agentloop-mcp-server")
    with pytest.raises(mcp.ConnectFailed, match="'missing'"):
        async with mcp.open_toolset(spec):
            pass  # pragma: no cover


async def test_open_toolset_raises_connect_failed_when_nothing_listens() -> None:
    with socket.socket() as probe:  # a port that was free a moment ago
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    spec = mcp.HttpServer(name="nobody", url=f"http://127.0.0.1:{port}/mcp")
    with pytest.raises(mcp.ConnectFailed, match="could not connect to MCP server 'nobody': "):
        async with mcp.open_toolset(spec):
            pass  # pragma: no cover


async def test_a_closed_group_refuses_to_connect() -> None:
    group = mcp.open_group()
    with pytest.raises(mcp.ToolsetClosed):
        await group.connect(stdio_spec())
    async with group:
        pass
    with pytest.raises(mcp.ToolsetClosed):
        await group.connect(stdio_spec())


async def test_an_error_in_the_block_comes_out_as_itself() -> None:
    with pytest.raises(KeyError, match="mine") as caught:
        async with mcp.open_group():
            raise KeyError("mine")
    assert type(caught.value) is KeyError


def msgspec_replace(spec: mcp.StdioServer, **changes: object) -> mcp.StdioServer:
    import msgspec

    return msgspec.structs.replace(spec, **changes)


async def test_closing_the_group_stops_a_connection_another_task_is_making() -> None:
    # The server tells a socket of ours that it runs, then never answers MCP.
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listeners:
        (listener,) = listeners.listeners
        assert isinstance(listener, anyio.abc.SocketListener)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        script = textwrap.dedent(
            f"""
            import os, socket, sys
            socket.create_connection(("127.0.0.1", {port})).sendall(str(os.getpid()).encode())
            sys.stdin.read()
            """
        )
        spec = mcp.StdioServer(name="slow", command=sys.executable, args=["-c", script])
        failures: list[BaseException] = []

        async def task_a(group: mcp.ToolsetGroup) -> None:
            try:
                await group.connect(spec)
            except mcp.ConnectFailed as exc:
                failures.append(exc)

        with anyio.fail_after(STOP_BOUND):
            async with anyio.create_task_group() as outside:
                async with mcp.open_group() as group:
                    outside.start_soon(task_a, group)
                    async with await listener.accept() as connection:
                        pid = int(await connection.receive())
                    # Leaving the block while task A is still connecting.
        assert [str(f) for f in failures] == [
            "could not connect to MCP server 'slow': closed while connecting"
        ]
        assert not is_running(pid)


async def test_connect_timeout_over_http_to_a_server_that_never_answers() -> None:
    async def silent(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            await stream.receive()  # the request arrives; no answer ever leaves
            await anyio.sleep_forever()

    async with (
        await anyio.create_tcp_listener(local_host="127.0.0.1") as listeners,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(listeners.serve, silent)
        port = listeners.listeners[0].extra(anyio.abc.SocketAttribute.local_port)
        spec = mcp.HttpServer(name="mute", url=f"http://127.0.0.1:{port}/mcp", connect_timeout=0.5)
        started = anyio.current_time()
        with pytest.raises(mcp.ConnectFailed, match=r"'mute': timed out after 0.5 s"):
            async with mcp.open_toolset(spec):
                pass  # pragma: no cover
        assert anyio.current_time() - started < 0.5 + STOP_BOUND
        tg.cancel_scope.cancel()


# The same cases over streamable HTTP, against the shared server (its process is the test's
# own; what must not be left behind is a task, a connection or a RuntimeError).


@pytest.mark.filterwarnings("ignore:Async generator 'httpx2[.]:ResourceWarning")
@pytest.mark.filterwarnings("ignore:Async generator 'httpcore2[.]:ResourceWarning")
async def test_http_toolsets_opened_in_some_tasks_and_closed_out_of_order_in_others(
    http_server: HttpServerProcess,
) -> None:
    async with mcp.open_group() as group:
        toolsets: dict[int, mcp.McpToolset] = {}

        async def open_one(i: int) -> None:
            spec = http_spec(http_server.url, name=f"h{i}", prefix=f"h{i}_")
            toolsets[i] = await group.connect(spec)

        async with anyio.create_task_group() as tg:
            for i in range(3):
                tg.start_soon(open_one, i)
        for closing in (2, 0, 1):
            async with anyio.create_task_group() as tg:
                tg.start_soon(toolsets[closing].aclose)
            assert toolsets[closing].state == "closed"
            for i, toolset in toolsets.items():
                if toolset.state != "closed":
                    assert text(await call(toolset, f"h{i}_echo", text="on")) == "on"
        assert group.get_tools() == []


@pytest.mark.filterwarnings("ignore:Async generator 'httpx2[.]:ResourceWarning")
@pytest.mark.filterwarnings("ignore:Async generator 'httpcore2[.]:ResourceWarning")
async def test_http_outer_cancellation_mid_call(http_server: HttpServerProcess) -> None:
    started = anyio.current_time()
    with anyio.CancelScope() as outer:
        async with mcp.open_toolset(http_spec(http_server.url)) as toolset:
            pending = Pending(toolset, "hang")
            async with anyio.create_task_group() as tg:
                tg.start_soon(pending.run)
                await pending.hanging.wait()
                outer.cancel()
    assert outer.cancelled_caught
    assert pending.result is None
    assert toolset.state == "closed"
    assert anyio.current_time() - started < STOP_BOUND
    # The server is fine and serves the next client.
    async with mcp.open_toolset(http_spec(http_server.url)) as again:
        assert text(await call(again, "echo", text="still")) == "still"
