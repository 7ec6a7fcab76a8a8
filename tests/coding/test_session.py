"""``CodingSession``, the state every front end shares: modes, approval, sessions, the prompt."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

import agentloop as al
from agentloop.sessions import JsonlSessionStore
from agentloop.testing import ScriptedStream, reply_text, reply_tool_calls
from agentloop_coding import NO_APPROVER, CodingSession, Config, ConfigError, TextRenderer
from agentloop_policies import ALWAYS_ALLOW

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.anyio

MODEL = al.ModelSpec(provider="scripted", model_id="m")


def results(result: al.AgentResult[Any]) -> dict[str, al.ToolResultMessage]:
    return {m.tool_name: m for m in result.messages if isinstance(m, al.ToolResultMessage)}


async def start(tmp_path: Path, script: list[Any], **kwargs: Any) -> CodingSession:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return await CodingSession.start(
        kwargs.pop("config", Config()),
        workspace=work,
        store=JsonlSessionStore(tmp_path / "sessions"),
        model=MODEL,
        stream_fn=ScriptedStream(script),
        environ={},
        **kwargs,
    )


async def test_a_session_is_recorded_and_can_be_resumed(tmp_path: Path) -> None:
    session = await start(tmp_path, [reply_text("one")])
    assert session.session_id is not None and session.model == "scripted:m"
    await session.agent.prompt("first")
    store = JsonlSessionStore(tmp_path / "sessions")
    info = await store.info(session.session_id)
    assert info.metadata == {"cwd": str(tmp_path / "work")} and info.title == "first"
    again = await start(tmp_path, [reply_text("two")], resume=session.session_id)
    assert [type(m) for m in again.agent.messages] == [al.UserMessage, al.AssistantMessage]
    await again.agent.prompt("second")
    assert len(await store.load(session.session_id)) == 4
    with pytest.raises(al.SessionNotFound):
        await start(tmp_path, [], resume="missing")
    unrecorded = await start(tmp_path, [], record=False)
    assert unrecorded.session_id is None and unrecorded.store is None


async def test_the_system_prompt_names_the_workspace_and_the_projects_rules(
    tmp_path: Path,
) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "AGENTS.md").write_text("Run `make test` before finishing.\n")
    config = Config(instructions="Answer in French.")
    session = await start(tmp_path, [], config=config)
    prompt = session.agent.system_prompt
    assert isinstance(prompt, str)
    assert "coding agent" in prompt and str(tmp_path / "work") in prompt
    assert "Run `make test` before finishing." in prompt and "Answer in French." in prompt
    assert "Tools: bash, edit_file, glob, grep, list_dir, read_file, write_file" in prompt


async def test_no_model_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no model is configured"):
        await CodingSession.start(Config(), workspace=tmp_path, record=False, environ={})
    with pytest.raises(ConfigError, match="not a directory"):
        await CodingSession.start(Config(), workspace=tmp_path / "nope", record=False)


async def test_approval_asks_the_front_end_and_fails_closed_without_one(tmp_path: Path) -> None:
    calls: tuple[tuple[str, dict[str, Any]], ...] = (
        ("write_file", {"path": "a.txt", "content": "A"}),
        ("list_dir", {}),
    )
    script = [reply_tool_calls(*calls), reply_text("ok")] * 3
    session = await start(tmp_path, script)
    first = results(await session.agent.prompt("go"))
    assert first["write_file"].is_error and NO_APPROVER in al.extract_text(
        first["write_file"].content
    )
    assert not first["list_dir"].is_error

    asked: list[str] = []

    async def ask(call: al.ToolCall, tool: Any) -> Any:
        asked.append(call.name)
        return ALWAYS_ALLOW

    session.ask = ask
    second = results(await session.agent.prompt("again"))
    assert not second["write_file"].is_error and asked == ["write_file"]
    assert session.approvals.trusted == {"write_file"}
    await session.agent.prompt("and again")
    assert asked == ["write_file"]  # trusted for the session: not asked again


async def test_approval_modes(tmp_path: Path) -> None:
    script = [reply_tool_calls(("list_dir", {})), reply_text("ok")] * 2
    session = await start(tmp_path, script, config=Config(approval="enabled"))
    assert session.approval_mode == "enabled"
    enabled = results(await session.agent.prompt("go"))
    assert enabled["list_dir"].is_error  # enabled: every call needs a person
    session.approval_mode = "bypassed"
    bypassed = results(await session.agent.prompt("go"))
    assert not bypassed["list_dir"].is_error
    with pytest.raises(ValueError, match="sometimes"):
        session.approval_mode = "sometimes"


async def test_plan_mode_and_carrying_out_the_plan(tmp_path: Path) -> None:
    script = [
        reply_tool_calls(("write_file", {"path": "a.txt", "content": "A"})),
        reply_text("1. Create a.txt\n2. Done"),
        reply_tool_calls(("write_file", {"path": "a.txt", "content": "A"})),
        reply_text("Created."),
    ]
    session = await start(tmp_path, script, config=Config(plan=True, approval="bypassed"))
    assert session.mode == "plan"
    with pytest.raises(ValueError, match="no plan"):
        session.execute_plan()
    planned = await session.agent.prompt("add a.txt")
    assert "unknown tool 'write_file'" in al.extract_text(results(planned)["write_file"].content)
    assert session.plan == "1. Create a.txt\n2. Done"
    follow_up = session.execute_plan()
    mode: str = session.mode  # read again: the call changed it
    assert mode == "execute" and "1. Create a.txt" in follow_up
    done = await session.agent.prompt(follow_up)
    assert not results(done)["write_file"].is_error
    assert (tmp_path / "work" / "a.txt").read_text() == "A"
    with pytest.raises(ValueError, match="mode"):
        session.mode = "yolo"  # type: ignore[assignment]


async def test_the_sandbox_keeps_calls_inside_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("secret")
    script = [reply_tool_calls(("read_file", {"path": "../outside.txt"})), reply_text("ok")]
    session = await start(tmp_path, script)
    result = results(await session.agent.prompt("read it"))["read_file"]
    assert result.is_error and "outside the allowed directories" in al.extract_text(result.content)
    script = [reply_tool_calls(("read_file", {"path": "../outside.txt"})), reply_text("ok")]
    free = await start(tmp_path, script, config=Config(sandbox=False))
    assert not results(await free.agent.prompt("read it"))["read_file"].is_error


def test_the_text_renderer_separates_the_answer_from_the_run(tmp_path: Path) -> None:
    from agentloop.stream import TextDelta

    renderer = TextRenderer(lambda name, args: f"{name} {args}", verbose=True)
    out = renderer.feed(al.MessageUpdate(event=TextDelta(index=0, delta="Hello")))
    assert out == [("out", "Hello")]
    start_tool = al.ToolExecutionStart(call_id="c", name="bash", arguments={"command": "ls"})
    assert renderer.feed(start_tool) == [("out", "\n"), ("err", "> bash {'command': 'ls'}\n")]
    failed = al.ToolExecutionEnd(
        call_id="c", name="bash", result=al.AgentToolResult.error("boom\nmore"), is_error=True
    )
    assert renderer.feed(failed) == [("err", "  ! bash: boom\n")]
    assert renderer.finish() == []


async def test_extra_roots_are_taken_from_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "lib.txt").write_text("shared code")
    script = [reply_tool_calls(("read_file", {"path": "../shared/lib.txt"})), reply_text("ok")]
    session = await start(tmp_path, script, config=Config(roots=["../shared"]))
    result = results(await session.agent.prompt("read it"))["read_file"]
    assert not result.is_error and "shared code" in al.extract_text(result.content)


# --------------------------------------------------------------------------- recording


async def test_a_session_is_stored_only_once_it_holds_a_real_exchange(tmp_path: Path) -> None:
    store = JsonlSessionStore(tmp_path / "sessions")
    # Started and never prompted (an editor's new session, the TUI opened and closed).
    idle = await start(tmp_path, [])
    await idle.aclose()
    assert await store.list_sessions() == []
    # The first run fails before any answer (a wrong API key, say).
    failing = await start(tmp_path, [al.testing.reply_error(al.ErrorKind.AUTH, "bad key")])
    failed = await failing.agent.prompt("hello", raise_on_error=False)
    assert failed.stop_reason == al.StopReason.ERROR and failed.unsaved_messages == 0
    assert await store.list_sessions() == []
    assert idle.session_id is not None and not idle.recorded and not failing.recorded
    # A real exchange stores the session with everything the agent holds, in order.
    failing.agent.stream_fn = ScriptedStream([reply_text("hi there")])
    await failing.agent.prompt("again")
    assert failing.recorded
    assert failing.session_id is not None
    stored = await store.load(failing.session_id)
    assert [al.extract_text(m.content) for m in stored if isinstance(m, al.UserMessage)] == [
        "hello",
        "again",
    ]
    assert len(stored) == len(failing.agent.messages)
    (info,) = await store.list_sessions()
    assert info.id == failing.session_id and info.title == "hello" and info.message_count == 4


async def test_a_named_session_is_checked_at_once_and_stored_under_its_name(
    tmp_path: Path,
) -> None:
    named = await start(tmp_path, [reply_text("ok")], session_id="fix-123")
    assert named.session_id == "fix-123" and not named.recorded
    await named.agent.prompt("start")
    assert named.recorded
    with pytest.raises(ValueError, match="taken"):
        await start(tmp_path, [], session_id="fix-123")
    with pytest.raises(ValueError, match="invalid session id"):
        await start(tmp_path, [], session_id="../escape")


async def test_list_sessions_gives_a_picker_what_it_shows(tmp_path: Path) -> None:
    from agentloop_coding import list_sessions

    config = Config(sessions_dir=str(tmp_path / "sessions"))
    other = tmp_path / "elsewhere"
    other.mkdir()
    first = await start(tmp_path, [reply_text("one")], config=config)
    await first.agent.prompt("Fix the bug\nin parser.py")
    store = JsonlSessionStore(tmp_path / "sessions")
    await store.create(session_id="empty-legacy", metadata={"cwd": str(tmp_path / "work")})
    away = await CodingSession.start(
        config,
        workspace=other,
        model=MODEL,
        stream_fn=ScriptedStream([reply_text("two")]),
        environ={},
    )
    await away.agent.prompt("Elsewhere")
    everything = await list_sessions(config, environ={})
    assert [i.title for i in everything] == ["Elsewhere", "Fix the bug"]  # newest first
    (here,) = await list_sessions(config, environ={}, workspace=tmp_path / "work")
    assert here.id == first.session_id and here.message_count == 2
    assert here.model == "scripted:m" and here.created_at <= here.updated_at


async def test_paths_reach_the_tools_as_the_model_gave_them(tmp_path: Path) -> None:
    write = ("write_file", {"path": " lead.txt", "content": "x"})
    session = await start(
        tmp_path,
        [reply_tool_calls(write), reply_text("done")],
        config=Config(approval="bypassed"),
    )
    result = await session.agent.prompt("write it")
    assert not results(result)["write_file"].is_error
    assert (tmp_path / "work" / " lead.txt").read_text() == "x"
    assert not (tmp_path / "work" / "lead.txt").exists()


# --------------------------------------------------------------------------- trusted commands


async def test_a_trusted_command_runs_unasked_and_nothing_chained_to_it_does(
    tmp_path: Path,
) -> None:
    asked: list[str] = []

    async def ask(call: al.ToolCall, tool: object) -> bool:
        asked.append(call.arguments["command"])
        return False

    commands = [
        "echo hello  there",  # trusted by its prefix
        "echoes",  # another command
        "echo hi; touch chained",  # chained to a trusted one: asked
        "echo hi > clobbered",  # redirected: asked
        "echo $(touch substituted)",  # a substitution: asked
    ]
    calls = [("bash", {"command": c}) for c in commands]
    session = await start(
        tmp_path,
        [reply_tool_calls(*calls), reply_text("done")],
        config=Config(trusted_commands=["echo  hello"]),
        ask=ask,
    )
    assert session.commands.prefixes == ["echo hello"]
    result = await session.agent.prompt("look")
    assert asked == commands[1:]
    (ran,) = [m for m in result.messages if isinstance(m, al.ToolResultMessage) and not m.is_error]
    assert ran.text == "hello there\n[exit code 0]"
    leftovers = ("chained", "clobbered", "substituted")
    assert not any((tmp_path / "work" / name).exists() for name in leftovers)
    session.commands.trust("git stash")
    assert session.commands.allows("git stash list") and not session.commands.allows("git")
    session.commands.distrust("git stash")
    assert not session.commands.allows("git stash list")
    with pytest.raises(ValueError, match="simple command"):
        session.commands.trust("make && make install")
    with pytest.raises(ConfigError, match="trusted_commands"):
        await start(tmp_path, [], config=Config(trusted_commands=["a | b"]))
