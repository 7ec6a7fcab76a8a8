"""``agentloop acp`` driven by a real ACP client (the ``agent-client-protocol`` package's own
client side) over the stdio of a subprocess, against the scripted model.

The protocol package runs on asyncio only, so these tests do too.
"""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any, cast

import acp
import anyio
import pytest
from acp import spawn_agent_process, text_block
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AllowedOutcome,
    AvailableCommandsUpdate,
    DeniedOutcome,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from ._acp_client import Settled
from ._cli_helpers import AGENTLOOP, Cli
from ._helpers import alive, pids_in, wait_gone
from .test_bash import SPAWN

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from pathlib import Path

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Client:
    """An editor: records every update and answers permission requests as told."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.permissions: list[Any] = []
        self.answers: list[str] = []
        self.watch: Callable[[Any], None] | None = None
        self.asked = anyio.Event()
        self.hold: anyio.Event | None = None  # set: wait for it, then answer "cancelled"

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        if self.watch is not None:
            self.watch(update)

    async def request_permission(
        self, options: list[Any], session_id: str, tool_call: Any, **kwargs: Any
    ) -> RequestPermissionResponse:
        self.permissions.append((tool_call, [o.option_id for o in options]))
        self.asked.set()
        if self.hold is not None:
            await self.hold.wait()  # the person does not answer
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        answer = self.answers.pop(0)
        return RequestPermissionResponse(
            outcome=AllowedOutcome(option_id=answer, outcome="selected")
        )

    def take(self) -> list[Any]:
        taken, self.updates = self.updates, []
        return taken


def text_of(updates: list[Any], kind: type[Any]) -> str:
    return "".join(u.content.text for u in updates if isinstance(u, kind))


def tool_updates(updates: list[Any], call_id: str) -> list[Any]:
    return [
        u
        for u in updates
        if isinstance(u, ToolCallStart | ToolCallProgress) and u.tool_call_id == call_id
    ]


def final_text(update: Any) -> str:
    return "".join(
        c.content.text for c in update.content or [] if getattr(c, "type", "") == "content"
    )


def call(name: str, call_id: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "id": call_id, "arguments": arguments}


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


class Agent:
    """``agentloop acp`` running, and a client connected to it."""

    def __init__(self, conn: Any, client: Client, process: Any) -> None:
        self.conn = conn
        self.client = client
        self.process = process

    async def prompt(self, session_id: str, text: str) -> str:
        response = await self.conn.prompt(session_id=session_id, prompt=[text_block(text)])
        return str(response.stop_reason)


@contextlib.asynccontextmanager
async def open_agent(cli: Cli, script: list[dict[str, Any]], name: str) -> AsyncIterator[Agent]:
    path = cli.home / name
    path.write_text(json.dumps({"replies": script}))
    client = Client()
    env = {**cli.env, "AGENTLOOP_MODEL": f"scripted:{path}"}
    async with spawn_agent_process(
        lambda _: cast("acp.Client", client), AGENTLOOP, "acp", env=env, cwd=str(cli.workspace)
    ) as (conn, process):
        init = await conn.initialize(protocol_version=1)
        assert init.agent_capabilities is not None and init.agent_info is not None
        assert init.agent_capabilities.load_session is True
        assert init.agent_info.name == "agentloop"
        yield Agent(Settled(conn), client, process)


async def test_a_whole_session(cli: Cli) -> None:
    (cli.workspace / "app.py").write_text("print('hello')\n")
    script: list[dict[str, Any]] = [
        {"thinking": "A greeting.", "text": "Hello! How can I help?"},
        {"tool_calls": [call("edit_file", "edit", path="app.py", old="hello", new="world")]},
        {"text": "Edited."},
        {"tool_calls": [call("write_file", "write", path="new.txt", content="x")]},
        {"text": "Not written."},
        {"tool_calls": [call("bash", "bash1", command="echo one")]},
        {"tool_calls": [call("bash", "bash2", command="echo two")]},
        {"text": "Ran twice."},
        {"tool_calls": [call("bash", "long", command=SPAWN)]},
        {"tool_calls": [call("write_file", "planned", path="p.txt", content="x")]},
        {"text": "1. Write p.txt\n2. Test it"},
    ]
    with anyio.fail_after(60):
        async with open_agent(cli, script, "one.json") as agent:
            client = agent.client
            new = await agent.conn.new_session(cwd=str(cli.workspace))
            sid = new.session_id
            assert new.modes.current_mode_id == "execute"
            assert {m.id for m in new.modes.available_modes} == {"execute", "plan"}

            # Streamed message and thought chunks.
            assert await agent.prompt(sid, "hi") == "end_turn"
            updates = client.take()
            assert text_of(updates, AgentThoughtChunk) == "A greeting."
            assert text_of(updates, AgentMessageChunk) == "Hello! How can I help?"
            assert sum(isinstance(u, AgentMessageChunk) for u in updates) > 1  # streamed

            # A call needing permission, granted: its updates carry the diff.
            client.answers = ["allow"]
            assert await agent.prompt(sid, "edit it") == "end_turn"
            assert (cli.workspace / "app.py").read_text() == "print('world')\n"
            ((asked, options),) = client.permissions
            assert options == ["allow", "always", "reject"]
            assert asked.tool_call_id == "edit" and asked.kind == "edit"
            preview = [c for c in asked.content if c.type == "diff"]
            assert preview[0].old_text == "hello" and preview[0].new_text == "world"
            edit = tool_updates(client.take(), "edit")
            assert [u.status for u in edit] == ["pending", "in_progress", "completed"]
            assert edit[0].kind == "edit" and edit[0].title == "Edit app.py"
            assert edit[0].locations[0].path == str(cli.workspace / "app.py")
            diff = [c for c in edit[-1].content if c.type == "diff"][0]
            assert diff.path == str(cli.workspace / "app.py")
            assert (diff.old_text, diff.new_text) == ("hello", "world")
            assert "--- a/app.py" in edit[-1].raw_output["diff"]

            # Refused.
            client.answers = ["reject"]
            assert await agent.prompt(sid, "write it") == "end_turn"
            write = tool_updates(client.take(), "write")
            assert write[-1].status == "failed"
            assert "rejected" in final_text(write[-1])
            assert not (cli.workspace / "new.txt").exists()

            # Always allow: the second call is not asked about.
            client.permissions.clear()
            client.answers = ["always"]
            assert await agent.prompt(sid, "run twice") == "end_turn"
            assert len(client.permissions) == 1
            updates = client.take()
            for call_id, word in (("bash1", "one"), ("bash2", "two")):
                done = tool_updates(updates, call_id)[-1]
                assert done.status == "completed" and final_text(done).startswith(word)

            # Cancel mid-tool: the prompt answers "cancelled" and the commands are gone.
            output: list[str] = []
            running = anyio.Event()

            def watch(update: Any) -> None:
                if isinstance(update, ToolCallProgress) and update.tool_call_id == "long":
                    output[:] = [final_text(update)]
                    if len(pids_in(output[0])) == 4:
                        running.set()

            client.watch = watch
            async with anyio.create_task_group() as tg:
                answer: list[str] = []

                async def prompt() -> None:
                    answer.append(await agent.prompt(sid, "run long"))

                tg.start_soon(prompt)
                await running.wait()
                pids = pids_in(output[0])
                assert all(alive(pid) for pid in pids)
                await agent.conn.cancel(session_id=sid)
            assert answer == ["cancelled"]
            for pid in pids:
                await wait_gone(pid)
            client.watch = None
            assert tool_updates(client.take(), "long")[-1].status == "failed"

            # Plan mode as a session mode: read-only tools, the answer as a plan.
            await agent.conn.set_session_mode(session_id=sid, mode_id="plan")
            assert await agent.prompt(sid, "plan it") == "end_turn"
            updates = client.take()
            planned = tool_updates(updates, "planned")[-1]
            assert planned.status == "failed" and "unknown tool" in final_text(planned)
            (plan,) = [u for u in updates if isinstance(u, AgentPlanUpdate)]
            assert [e.content for e in plan.entries] == ["Write p.txt", "Test it"]
            assert not (cli.workspace / "p.txt").exists()

    # Another process loads the stored session: its history comes back as updates, and it
    # goes on with the session's own model (the script file, rewritten for this process).
    with anyio.fail_after(60):
        async with open_agent(cli, [{"text": "Welcome back."}], "one.json") as agent:
            # The session's commands come after its history: the end of the replay. (The
            # protocol package may hand a client its notifications after the answer.)
            introduced = anyio.Event()
            agent.client.watch = lambda u: (
                introduced.set() if isinstance(u, AvailableCommandsUpdate) else None
            )
            loaded = await agent.conn.load_session(cwd=str(cli.workspace), session_id=sid)
            assert loaded.modes.current_mode_id == "execute"
            await introduced.wait()
            agent.client.watch = None
            replay = [u for u in agent.client.take() if not isinstance(u, AvailableCommandsUpdate)]
            users = [u.content.text for u in replay if isinstance(u, UserMessageChunk)]
            assert users == ["hi", "edit it", "write it", "run twice", "run long", "plan it"]
            replayed = tool_updates(replay, "edit")
            assert replayed[0].status == "completed"
            assert any(c.type == "diff" for c in replayed[-1].content)
            assert "Hello! How can I help?" in text_of(replay, AgentMessageChunk)
            assert await agent.prompt(sid, "again") == "end_turn"
            assert text_of(agent.client.take(), AgentMessageChunk) == "Welcome back."


async def test_unknown_sessions_and_modes_are_errors(cli: Cli) -> None:
    from acp import RequestError

    with anyio.fail_after(60):
        async with open_agent(cli, [], "none.json") as agent:
            with pytest.raises(RequestError):
                await agent.conn.load_session(cwd=str(cli.workspace), session_id="missing")
            with pytest.raises(RequestError):
                await agent.prompt("no-such-session", "hi")
            new = await agent.conn.new_session(cwd=str(cli.workspace))
            with pytest.raises(RequestError):
                await agent.conn.set_session_mode(session_id=new.session_id, mode_id="yolo")
            # The script is empty: the model call fails, and the prompt reports an error.
            with pytest.raises(RequestError):
                await agent.prompt(new.session_id, "hi")


async def test_a_client_that_goes_away_mid_tool_leaves_no_process(cli: Cli) -> None:
    script = [{"tool_calls": [call("bash", "long", command=SPAWN)]}]
    output: list[str] = []
    running = anyio.Event()
    with anyio.fail_after(60):
        async with open_agent(cli, script, "gone.json") as agent:
            new = await agent.conn.new_session(cwd=str(cli.workspace))
            await agent.conn.set_session_mode(session_id=new.session_id, mode_id="execute")
            agent.client.answers = ["allow"]

            def watch(update: Any) -> None:
                if isinstance(update, ToolCallProgress) and update.content:
                    output[:] = [final_text(update)]
                    if len(pids_in(output[0])) == 4:
                        running.set()

            agent.client.watch = watch
            async with anyio.create_task_group() as tg:

                async def prompt() -> None:
                    with pytest.raises(ConnectionError):
                        await agent.prompt(new.session_id, "run long")

                tg.start_soon(prompt)
                await running.wait()
                process = agent.process
                await agent.conn.close()  # the editor quits: stdin closes under the server
        assert await process.wait() == 0  # it exits by itself, within the SDK's 2 s grace
    for pid in pids_in(output[0]):
        await wait_gone(pid)


async def test_cancel_while_permission_is_asked(cli: Cli) -> None:
    script: list[dict[str, Any]] = [
        {"tool_calls": [call("bash", "asked", command="touch never.txt")]},
        {"text": "After."},
    ]
    with anyio.fail_after(60):
        async with open_agent(cli, script, "ask.json") as agent:
            client = agent.client
            client.hold = release = anyio.Event()
            new = await agent.conn.new_session(cwd=str(cli.workspace))
            answer: list[str] = []
            async with anyio.create_task_group() as tg:

                async def prompt() -> None:
                    answer.append(await agent.prompt(new.session_id, "go"))

                tg.start_soon(prompt)
                await client.asked.wait()
                await agent.conn.cancel(session_id=new.session_id)
            assert answer == ["cancelled"]
            release.set()
            assert tool_updates(client.take(), "asked")[-1].status == "failed"
            assert not (cli.workspace / "never.txt").exists()
            # The session goes on.
            assert await agent.prompt(new.session_id, "again") == "end_turn"
            with pytest.raises(acp.RequestError, match="Invalid params"):
                await agent.conn.new_session(cwd=str(cli.workspace / "missing"))
