"""The bash tool with real subprocesses: output, exit codes, caps, the environment allow-list,
and no orphan process whichever way a command ends (finished, timed out, cancelled, aborted)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import anyio
import pytest

import agentloop as al
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls
from agentloop_coding import Bash, ResourceLimits, Workspace, coding_tools

from ._helpers import alive, call, pids_in, text_of, wait_gone

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio

# The leader, a child, a child shell and its own child (a grandchild): each prints its PID.
SPAWN = (
    'echo "pid $$"; sleep 30 & echo "pid $!"; '
    'bash -c \'echo "pid $$"; sleep 30 & echo "pid $!"; wait\' & wait'
)


@pytest.fixture
def space(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path)


async def test_output_and_exit_code(space: Workspace) -> None:
    ok = await call(Bash(space), command="echo hello; echo oops >&2")
    assert not ok.is_error
    assert text_of(ok) == "hello\noops\n[exit code 0]"
    assert ok.details["exit_code"] == 0 and ok.details["timed_out"] is False
    failed = await call(Bash(space), command="echo nope; exit 3")
    assert failed.is_error and text_of(failed) == "nope\n[exit code 3]"
    silent = await call(Bash(space), command="true")
    assert text_of(silent) == "(no output)\n[exit code 0]"


async def test_runs_in_the_workspace_or_the_given_directory(
    space: Workspace, tmp_path: Path
) -> None:
    (tmp_path / "sub").mkdir()
    root = await call(Bash(space), command="pwd")
    assert text_of(root).splitlines()[0] == str(tmp_path)
    sub = await call(Bash(space), command="pwd", cwd="sub")
    assert text_of(sub).splitlines()[0] == str(tmp_path / "sub")
    missing = await call(Bash(space), command="pwd", cwd="nope")
    assert missing.is_error and "nope does not exist" in text_of(missing)
    empty = await call(Bash(space), command="   ")
    assert empty.is_error


async def test_only_allowed_variables_reach_the_command(
    space: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-must-not-leak")
    monkeypatch.setenv("LC_TESTING", "kept")
    tool = Bash(space, env={"EXTRA": "given"})
    result = await call(tool, command='echo "[$ANTHROPIC_API_KEY] [$LC_TESTING] [$EXTRA] [$HOME]"')
    assert text_of(result).splitlines()[0] == f"[] [kept] [given] [{os.environ['HOME']}]"
    allowed = Bash(space, env_allow=["ANTHROPIC_API_KEY"])
    opened = await call(allowed, command='echo "$ANTHROPIC_API_KEY"; echo "[$HOME]"')
    assert text_of(opened).splitlines()[:2] == ["sk-must-not-leak", "[]"]


async def test_output_is_capped_keeping_head_and_tail(space: Workspace) -> None:
    tool = Bash(space, max_output=1000)
    result = await call(tool, command="echo START; yes line | head -n 20000; echo END")
    text = text_of(result)
    assert text.startswith("START\n") and text.endswith("END\n[exit code 0]")
    assert "bytes of output omitted" in text
    assert result.details["omitted_bytes"] == 6 + 20000 * 5 + 4 - 1000
    assert len(text) < 1200


async def test_output_streams_as_updates(space: Workspace) -> None:
    updates: list[str] = []
    result = await call(Bash(space), updates, command="echo one; echo two")
    assert "".join(updates) == "one\ntwo\n"
    assert not result.is_error


async def test_background_jobs_do_not_outlive_the_command(space: Workspace) -> None:
    with anyio.fail_after(20):  # the command must not wait for its 30-second children
        result = await call(Bash(space), command=SPAWN.replace("& wait", "& true"))
    pids = pids_in(text_of(result))
    assert len(pids) >= 2
    for pid in pids:
        await wait_gone(pid)


async def test_a_timeout_kills_the_whole_process_group(space: Workspace) -> None:
    result = await call(Bash(space), command=SPAWN, timeout=1)
    assert result.is_error and result.details["timed_out"] is True
    assert "timed out after 1 s" in text_of(result)
    pids = pids_in(text_of(result))
    assert len(pids) == 4  # the leader, a child, a child shell, a grandchild
    assert pids[0] == result.details["pid"]
    for pid in pids:
        await wait_gone(pid)


async def test_cancellation_kills_the_whole_process_group(space: Workspace) -> None:
    seen: list[str] = []
    started = anyio.Event()

    def on_update(update: Any) -> None:
        seen.append(update)
        if len(pids_in("".join(seen))) == 4:
            started.set()

    tool = Bash(space)
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(tool.execute, "call_1", {"command": SPAWN}, on_update)
            await started.wait()
            pids = pids_in("".join(seen))
            assert all(alive(pid) for pid in pids)
            tg.cancel_scope.cancel()
    for pid in pids:
        await wait_gone(pid)


async def test_aborting_an_agent_mid_command_leaves_no_process(tmp_path: Path) -> None:
    seen: list[str] = []
    model = ScriptedStream([reply_tool_calls(("bash", {"command": SPAWN})), reply_text("never")])
    agent = al.Agent(
        model=al.ModelSpec(provider="scripted", model_id="m"),
        stream_fn=model,
        tools=coding_tools(tmp_path),
    )

    def watch(event: al.AgentEvent) -> None:
        if isinstance(event, al.ToolExecutionUpdate):
            seen.append(text_of(event.update))
            if len(pids_in("".join(seen))) == 4:
                agent.abort()

    agent.subscribe(watch)
    with anyio.fail_after(20):
        result = await agent.prompt("run it", raise_on_error=False)
    assert result.stop_reason == al.StopReason.ABORTED
    pids = pids_in("".join(seen))
    assert len(pids) == 4
    for pid in pids:
        await wait_gone(pid)


async def test_steering_ends_a_lone_running_command_at_once(tmp_path: Path) -> None:
    # ``sleep 60`` alone in its batch: steering kills its process group at once (it used to
    # run to its end), and the steering message starts the next turn.
    seen: list[str] = []
    model = ScriptedStream(
        [
            reply_tool_calls(("bash", {"command": 'echo "pid $$"; sleep 60'})),
            reply_text("ok, stopped"),
        ]
    )
    agent = al.Agent(
        model=al.ModelSpec(provider="scripted", model_id="m"),
        stream_fn=model,
        tools=coding_tools(tmp_path),
    )

    def watch(event: al.AgentEvent) -> None:
        if isinstance(event, al.ToolExecutionUpdate):
            seen.append(text_of(event.update))
            if pids_in("".join(seen)):
                agent.steer("never mind, stop that")

    agent.subscribe(watch)
    with anyio.fail_after(30):
        result = await agent.prompt("run it")
    assert result.output == "ok, stopped"
    [pid] = pids_in("".join(seen))
    await wait_gone(pid)
    bash_result = next(m for m in result.messages if isinstance(m, al.ToolResultMessage))
    assert "steering interrupt: 'never mind, stop that'" in bash_result.text


async def test_a_missing_shell_is_an_error_result(space: Workspace) -> None:
    tool = Bash(space, shell="/nonexistent/shell")
    result = await call(tool, command="echo hi")
    assert result.is_error and "no such file" in text_of(result)


async def test_timeouts_are_bounded_by_the_schema(space: Workspace) -> None:
    tool = Bash(space, max_timeout=5)
    result = await call(tool, command="true", timeout=60)
    assert result.is_error and "invalid arguments" in text_of(result)


async def test_a_cancellation_while_the_process_is_made_leaves_no_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The window between the process's creation and ``open_process`` returning, widened: a
    # cancellation arriving there must not lose the process (it would run on, unowned).
    made: list[int] = []
    spawning = anyio.Event()
    release = anyio.Event()
    real_open_process = anyio.open_process

    async def slow_open_process(*args: Any, **kwargs: Any) -> Any:
        process = await real_open_process(*args, **kwargs)
        made.append(process.pid)
        spawning.set()
        await release.wait()
        return process

    monkeypatch.setattr(anyio, "open_process", slow_open_process)
    bash = Bash(Workspace("."), timeout=30)

    async def run() -> None:
        await call(bash, command="sleep 30")

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await spawning.wait()
        tg.cancel_scope.cancel()
        release.set()
    [pid] = made
    assert not alive(pid)


# --------------------------------------------------------------------------- resource limits


async def test_resource_limits_are_set_in_the_commands_process(space: Workspace) -> None:
    limits = ResourceLimits(cpu_seconds=7, memory_mb=512, processes=4096, file_size_mb=2)
    result = await call(Bash(space, limits=limits), command="ulimit -t -v -u -f")
    assert not result.is_error, text_of(result)
    # "cpu time (seconds, -t) 7", ...: bash counts memory in KiB, file sizes in KiB blocks.
    values = [line.rsplit(" ", 1)[1] for line in text_of(result).splitlines()[:4]]
    assert values == ["7", str(512 * 1024), "4096", str(2 * 1024)]
    unlimited = await call(Bash(space), command="ulimit -t")
    assert text_of(unlimited).splitlines()[0] == "unlimited"


async def test_each_resource_limit_stops_what_exceeds_it(space: Workspace, tmp_path: Path) -> None:
    cpu = Bash(space, limits=ResourceLimits(cpu_seconds=1))
    with anyio.fail_after(30):
        spin = await call(cpu, command='python3 -c "while True: pass"', timeout=25)
    assert spin.is_error and not spin.details["timed_out"]  # killed at 1 s of CPU, not 25 s

    memory = Bash(space, limits=ResourceLimits(memory_mb=200))
    hog = await call(memory, command="python3 -c \"b = bytearray(1 << 30); print('got it')\"")
    assert hog.is_error and "MemoryError" in text_of(hog) and "got it" not in text_of(hog)

    size = Bash(space, limits=ResourceLimits(file_size_mb=1))
    big = await call(size, command="head -c 3000000 /dev/zero > big.bin")
    assert big.is_error
    assert (tmp_path / "big.bin").stat().st_size <= 1 << 20
