"""Over ACP, with an editor that offers file access and terminals (issue 35 §9): every read,
write and command of the agent goes through the editor's ``fs/*`` and ``terminal/*``
methods, under the same confinement, approval and cancellation as locally.

The protocol package runs on asyncio only, so these tests do too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import pytest
from acp import text_block
from acp.schema import ToolCallProgress

from ._acp_client import Editor, connect, final_text, script, tool_updates
from ._cli_helpers import Cli

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def call(name: str, call_id: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "id": call_id, "arguments": arguments}


async def prompt(conn: Any, session_id: str, text: str) -> str:
    response = await conn.prompt(session_id=session_id, prompt=[text_block(text)])
    return str(response.stop_reason)


async def test_reads_writes_and_commands_go_through_the_editor(cli: Cli) -> None:
    work = cli.workspace
    (work / "app.py").write_text("print('on disk')\n")
    (cli.workspace.parent / "outside.txt").write_text("secret\n")
    replies: list[dict[str, Any]] = [
        {
            "tool_calls": [
                call("read_file", "read", path="app.py"),
                call("read_file", "escape", path="../outside.txt"),
            ]
        },
        {"tool_calls": [call("edit_file", "edit", path="app.py", old="unsaved", new="edited")]},
        {"tool_calls": [call("write_file", "write", path="pkg/new.py", content="x = 1\n")]},
        {"tool_calls": [call("bash", "run", command="echo from-terminal; pwd; echo $SECRET_KEY")]},
        {"text": "Done."},
    ]
    async with anyio.create_task_group() as tg:
        editor = Editor(tg, fs=True, terminal=True)
        app = str(work / "app.py")
        editor.buffers[app] = "print('unsaved')\n"  # open in the editor, not saved
        with anyio.fail_after(60):
            async with connect(
                cli, editor, model=script(cli, replies), env={"SECRET_KEY": "sk-hidden"}
            ) as (conn, _, _):
                new = await conn.new_session(cwd=str(work))
                assert await prompt(conn, new.session_id, "go") == "end_turn"
        tg.cancel_scope.cancel()
    updates = editor.updates
    # Reads: the editor's buffer, unsaved changes included.
    assert "print('unsaved')" in final_text(tool_updates(updates, "read")[-1])
    escape = tool_updates(updates, "escape")[-1]
    assert escape.status == "failed" and "outside the allowed directories" in final_text(escape)
    assert str(cli.workspace.parent / "outside.txt") not in editor.reads  # never asked
    # Writes: to the editor, never to the disk behind its back.
    assert editor.writes == [
        (app, "print('edited')\n"),
        (str(work / "pkg" / "new.py"), "x = 1\n"),
    ]
    assert (work / "app.py").read_text() == "print('on disk')\n"
    assert not (work / "pkg" / "new.py").exists()
    edit = tool_updates(updates, "edit")[-1]
    diff = next(c for c in edit.content if c.type == "diff")
    assert (diff.old_text, diff.new_text) == ("unsaved", "edited")
    # Approval as usual: the changes and the command were asked about.
    assert {p.tool_call_id for p in editor.permissions} == {"edit", "write", "run"}
    # The command: in the editor's terminal, embedded in the tool call, released.
    (terminal,) = editor.terminals.values()
    assert terminal.argv[1:3] == ["-c", "echo from-terminal; pwd; echo $SECRET_KEY"]
    assert terminal.cwd == str(work) and "SECRET_KEY" not in terminal.env
    assert terminal.released
    run = tool_updates(updates, "run")
    embedded = [c for u in run for c in u.content or [] if c.type == "terminal"]
    assert embedded and embedded[0].terminal_id == "term-1"
    assert run[-1].status == "completed"
    assert final_text(run[-1]) == f"from-terminal\n{work}\n[exit code 0]"


async def test_a_cancelled_command_kills_and_releases_its_terminal(cli: Cli) -> None:
    replies = [{"tool_calls": [call("bash", "long", command="echo started; sleep 60")]}]
    async with anyio.create_task_group() as tg:
        editor = Editor(tg, terminal=True)
        editor.watch = lambda u: (
            isinstance(u, ToolCallProgress) and any(c.type == "terminal" for c in u.content or [])
        )
        with anyio.fail_after(60):
            async with connect(cli, editor, model=script(cli, replies)) as (conn, _, _):
                new = await conn.new_session(cwd=str(cli.workspace))
                answer: list[str] = []

                async def run() -> None:
                    answer.append(await prompt(conn, new.session_id, "go"))

                async with anyio.create_task_group() as inner:
                    inner.start_soon(run)
                    await editor.seen.wait()  # the terminal is embedded: the command runs
                    await conn.cancel(session_id=new.session_id)
        tg.cancel_scope.cancel()
    assert answer == ["cancelled"]
    (terminal,) = editor.terminals.values()
    assert terminal.killed and terminal.released
    assert terminal.process.returncode is not None  # it did not outlive its call


async def test_a_command_past_its_deadline_is_killed_in_the_terminal(cli: Cli) -> None:
    replies: list[dict[str, Any]] = [
        {"tool_calls": [call("bash", "slow", command="sleep 30", timeout=0.5)]},
        {"text": "Too slow."},
    ]
    async with anyio.create_task_group() as tg:
        editor = Editor(tg, terminal=True)
        with anyio.fail_after(60):
            async with connect(cli, editor, model=script(cli, replies)) as (conn, _, _):
                new = await conn.new_session(cwd=str(cli.workspace))
                assert await prompt(conn, new.session_id, "go") == "end_turn"
        tg.cancel_scope.cancel()
    slow = tool_updates(editor.updates, "slow")[-1]
    assert slow.status == "failed" and "timed out after 0.5 s" in final_text(slow)
    (terminal,) = editor.terminals.values()
    assert terminal.killed and terminal.released


async def test_without_the_capabilities_the_disk_and_local_processes_are_used(cli: Cli) -> None:
    replies: list[dict[str, Any]] = [
        {"tool_calls": [call("write_file", "write", path="a.txt", content="local\n")]},
        {"tool_calls": [call("bash", "run", command="cat a.txt")]},
        {"text": "Done."},
    ]
    async with anyio.create_task_group() as tg:
        editor = Editor(tg)
        with anyio.fail_after(60):
            async with connect(cli, editor, model=script(cli, replies)) as (conn, _, _):
                new = await conn.new_session(cwd=str(cli.workspace))
                assert await prompt(conn, new.session_id, "go") == "end_turn"
        tg.cancel_scope.cancel()
    assert (cli.workspace / "a.txt").read_text() == "local\n"
    assert not editor.writes and not editor.terminals
    assert final_text(tool_updates(editor.updates, "run")[-1]).startswith("local\n")
