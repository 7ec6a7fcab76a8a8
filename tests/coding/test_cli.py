"""The ``agentloop`` command as a real subprocess: against the scripted model, and against an
OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from typing import TYPE_CHECKING, Any

import anyio
import pytest

import agentloop as al
from agentloop.sessions import JsonlSessionStore
from agentloop_coding import NO_APPROVER

from ._cli_helpers import Cli, decode_events, write_script
from ._fake_openai import running_fake_openai
from ._helpers import alive, pids_in, text_of, wait_gone
from .test_bash import SPAWN

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def tool_ends(events: list[al.AgentEvent]) -> list[al.ToolExecutionEnd]:
    return [e for e in events if isinstance(e, al.ToolExecutionEnd)]


# --------------------------------------------------------------------------- answers and JSON


def test_run_streams_the_answer_to_stdout(cli: Cli, tmp_path: Path) -> None:
    (cli.workspace / "notes.txt").write_text("remember the milk\n")
    model = write_script(
        tmp_path,
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
            {"text": "The note says: remember the milk."},
        ],
    )
    done = cli.run("run", "-m", model, "what does the note say?")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "The note says: remember the milk.\n"
    assert "> Read notes.txt" in done.stderr
    assert "session: " in done.stderr


def test_json_output_parses_back_into_events(cli: Cli, tmp_path: Path) -> None:
    model = write_script(
        tmp_path,
        [
            {
                "thinking": "list first",
                "tool_calls": [{"name": "list_dir", "arguments": {}}],
            },
            {"text": "Empty."},
        ],
    )
    done = cli.run("run", "--json", "-m", model, "what is here?")
    assert done.returncode == 0, done.stderr
    events = decode_events(done.stdout)
    assert isinstance(events[0], al.AgentStart) and isinstance(events[-1], al.AgentEnd)
    assert sum(isinstance(e, al.AgentEnd) for e in events) == 1
    kinds = {type(e).__name__ for e in events}
    assert {"TurnStart", "MessageUpdate", "ToolExecutionStart", "ToolExecutionEnd"} <= kinds
    final = events[-1]
    assert isinstance(final, al.AgentEnd)
    assert isinstance(final.messages[-1], al.AssistantMessage)
    assert final.messages[-1].text == "Empty."
    assert "session: " in done.stderr and "session: " not in done.stdout


def test_the_prompt_can_come_from_stdin(cli: Cli, tmp_path: Path) -> None:
    model = write_script(tmp_path, [{"text": "ok"}, {"text": "ok"}])
    alone = cli.run("run", "--json", "-m", model, input="summarise this\n")
    first = decode_events(alone.stdout)[2]
    assert isinstance(first, al.MessageStart) and isinstance(first.message, al.UserMessage)
    assert first.message.content == [al.Text(text="summarise this")]
    model = write_script(tmp_path, [{"text": "ok"}], name="again.json")
    both = cli.run("run", "--json", "-m", model, "review:", input="diff --git a b\n")
    message = decode_events(both.stdout)[2]
    assert isinstance(message, al.MessageStart) and isinstance(message.message, al.UserMessage)
    assert al.extract_text(message.message.content) == "review:\n\ndiff --git a b\n"


# --------------------------------------------------------------------------- exit codes


def test_exit_codes_reflect_the_outcome(cli: Cli, tmp_path: Path) -> None:
    failing = write_script(tmp_path, [{"error": "bad key", "kind": "auth"}], name="f.json")
    failed = cli.run("run", "-m", failing, "hi")
    assert failed.returncode == 1 and "error: bad key" in failed.stderr

    looping = write_script(
        tmp_path, [{"tool_calls": [{"name": "list_dir", "arguments": {}}]}] * 3, name="l.json"
    )
    stopped = cli.run("run", "--max-turns", "2", "-m", looping, "go")
    assert stopped.returncode == 3 and "turn limit" in stopped.stderr

    unknown = cli.run("run", "-m", "nosuchprovider:x", "hi")
    assert unknown.returncode == 2 and "no provider named 'nosuchprovider'" in unknown.stderr
    no_prompt = cli.run("run", "-m", failing)
    assert no_prompt.returncode == 2 and "no prompt" in no_prompt.stderr
    bad_flag = cli.run("run", "--approval", "sometimes", "hi")
    assert bad_flag.returncode == 2
    no_model = cli.run("run", "hi")
    assert no_model.returncode == 2 and "no model is configured" in no_model.stderr


def test_the_tui_needs_a_terminal(cli: Cli) -> None:
    # Alone or as `agentloop tui`, the command opens the terminal UI; without a terminal it
    # says what to run instead (the UI itself is tested in tests/tui).
    for args in ((), ("tui",)):
        done = cli.run(*args)
        assert done.returncode == 2
        assert "needs a terminal" in done.stderr and "agentloop run" in done.stderr


# --------------------------------------------------------------------------- approval and plan


def _editing_script(tmp_path: Path, name: str) -> str:
    return write_script(
        tmp_path,
        [
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "a.txt", "content": "A\n"}},
                    {"name": "bash", "arguments": {"command": "echo ran > b.txt"}},
                    {"name": "list_dir", "arguments": {}},
                ]
            },
            {"text": "done"},
        ],
        name=name,
    )


def test_without_a_person_calls_needing_approval_are_refused(cli: Cli, tmp_path: Path) -> None:
    done = cli.run("run", "--json", "-m", _editing_script(tmp_path, "s.json"), "edit")
    assert done.returncode == 0, done.stderr
    ends = {e.name: e for e in tool_ends(decode_events(done.stdout))}
    assert ends["write_file"].is_error and NO_APPROVER in text_of(ends["write_file"].result)
    assert ends["bash"].is_error
    assert not ends["list_dir"].is_error  # read-only: smart mode lets it through
    assert not (cli.workspace / "a.txt").exists() and not (cli.workspace / "b.txt").exists()


def test_trusting_a_tool_or_bypassing_approval(cli: Cli, tmp_path: Path) -> None:
    trusted = cli.run("run", "--json", "--trust", "bash", "-m", _editing_script(tmp_path, "t"), "x")
    ends = {e.name: e for e in tool_ends(decode_events(trusted.stdout))}
    assert not ends["bash"].is_error and ends["write_file"].is_error
    assert (cli.workspace / "b.txt").read_text() == "ran\n"
    bypassed = cli.run(
        "run", "--json", "--approval", "bypassed", "-m", _editing_script(tmp_path, "b"), "x"
    )
    assert not any(e.is_error for e in tool_ends(decode_events(bypassed.stdout)))
    assert (cli.workspace / "a.txt").read_text() == "A\n"
    enabled = cli.run(
        "run", "--json", "--approval", "enabled", "-m", _editing_script(tmp_path, "e"), "x"
    )
    ends = {e.name: e for e in tool_ends(decode_events(enabled.stdout))}
    assert ends["list_dir"].is_error  # enabled: even read-only calls need a person


def test_plan_mode_offers_only_read_only_tools(cli: Cli, tmp_path: Path) -> None:
    model = write_script(
        tmp_path,
        [
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "a.txt", "content": "A"}},
                    {"name": "grep", "arguments": {"pattern": "x"}},
                ]
            },
            {"text": "1. Create a.txt\n2. Check it"},
        ],
    )
    done = cli.run("run", "--json", "--plan", "--approval", "bypassed", "-m", model, "plan it")
    events = decode_events(done.stdout)
    ends = {e.name: e for e in tool_ends(events)}
    assert "unknown tool 'write_file'" in text_of(ends["write_file"].result)
    assert not ends["grep"].is_error
    assert not (cli.workspace / "a.txt").exists()
    assert done.returncode == 0


# --------------------------------------------------------------------------- sessions


async def _load(directory: Path, session_id: str) -> list[al.AgentMessage]:
    return await JsonlSessionStore(directory).load(session_id)


def test_resume_and_named_sessions(cli: Cli, tmp_path: Path) -> None:
    first = cli.run("run", "-m", write_script(tmp_path, [{"text": "one"}], "1.json"), "first")
    session_id = first.stderr.rsplit("session: ", 1)[1].strip()
    again = cli.run(
        "run",
        "--resume",
        session_id,
        "-m",
        write_script(tmp_path, [{"text": "two"}], "2.json"),
        "second",
    )
    assert again.returncode == 0 and again.stdout == "two\n"
    latest = cli.run(
        "run", "--resume", "-m", write_script(tmp_path, [{"text": "3"}], "3.json"), "third"
    )
    assert f"session: {session_id}" in latest.stderr
    messages = anyio.run(_load, cli.sessions_dir, session_id)
    assert [al.extract_text(m.content) for m in messages if isinstance(m, al.UserMessage)] == [
        "first",
        "second",
        "third",
    ]
    named = cli.run(
        "run", "--session", "my-task", "-m", write_script(tmp_path, [{"text": "a"}], "4.json"), "a"
    )
    assert "session: my-task" in named.stderr
    cli.run(
        "run", "--session", "my-task", "-m", write_script(tmp_path, [{"text": "b"}], "5.json"), "b"
    )
    assert len(anyio.run(_load, cli.sessions_dir, "my-task")) == 4
    missing = cli.run("run", "--resume", "nope", "-m", write_script(tmp_path, [], "6.json"), "x")
    assert missing.returncode == 2 and "nope" in missing.stderr
    listed = cli.run("sessions")
    assert session_id in listed.stdout and "my-task" in listed.stdout
    unrecorded = cli.run(
        "run", "--no-session", "-m", write_script(tmp_path, [{"text": "x"}], "7"), "x"
    )
    assert "session:" not in unrecorded.stderr


def test_runs_on_trio_too(cli: Cli, tmp_path: Path) -> None:
    model = write_script(
        tmp_path,
        [{"tool_calls": [{"name": "bash", "arguments": {"command": "echo hi"}}]}, {"text": "ok"}],
    )
    done = cli.run("run", "--backend", "trio", "--trust", "bash", "--json", "-m", model, "x")
    assert done.returncode == 0, done.stderr
    (end,) = tool_ends(decode_events(done.stdout))
    assert text_of(end.result) == "hi\n[exit code 0]"


# --------------------------------------------------------------------------- interruption


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_aborts_the_run_and_kills_its_commands(
    cli: Cli, tmp_path: Path, signum: signal.Signals
) -> None:
    model = write_script(
        tmp_path, [{"tool_calls": [{"name": "bash", "arguments": {"command": SPAWN}}]}]
    )
    process = subprocess.Popen(
        cli.command("run", "--json", "--trust", "bash", "-m", model, "go"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cli.workspace,
        env=cli.env,
    )
    assert process.stdout is not None
    lines: list[str] = []
    output = ""
    try:
        for line in process.stdout:  # one event per line, as they happen
            lines.append(line)
            event: al.AgentEvent = al.decode(line, al.AgentEvent)
            if isinstance(event, al.ToolExecutionUpdate):
                output += text_of(event.update)
                if len(pids_in(output)) == 4:
                    break
        pids = pids_in(output)
        assert len(pids) == 4 and all(alive(pid) for pid in pids)
        process.send_signal(signum)
        rest, errors = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 128 + signum, errors  # 130 for SIGINT, 143 for SIGTERM
    events = decode_events("".join(lines) + rest)
    assert isinstance(events[-1], al.AgentEnd)
    (end,) = tool_ends(events)
    assert end.is_error
    for pid in pids:
        anyio.run(wait_gone, pid)


# --------------------------------------------------------------------------- configuration


def test_configuration_precedence(cli: Cli, tmp_path: Path) -> None:
    user = cli.home / "config" / "agentloop" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('model = "scripted:user.json"\napproval = "enabled"\nmax_turns = 7\n')
    (cli.workspace / ".agentloop.toml").write_text(
        'model = "scripted:project.json"\napproval = "bypassed"\ntrusted_tools = ["bash"]\n'
    )
    shown = cli.run("config")
    assert shown.returncode == 0, shown.stderr
    lines = dict(line.split(" = ", 1) for line in shown.stdout.splitlines() if " = " in line)
    assert lines["model"] == f'"scripted:project.json"  # {cli.workspace / ".agentloop.toml"}'
    assert lines["approval"] == f'"enabled"  # {user}'  # a project cannot loosen approval
    assert lines["max_turns"] == f"7  # {user}"
    assert lines["trusted_tools"] == "[]  # default"
    assert "'trusted_tools' is ignored" in shown.stderr
    env = cli.run("config", env={"AGENTLOOP_MODEL": "scripted:env.json"})
    assert '"scripted:env.json"  # env AGENTLOOP_MODEL' in env.stdout
    flag = cli.run("config", "-m", "scripted:flag.json", env={"AGENTLOOP_MODEL": "x:y"})
    assert '"scripted:flag.json"  # command line' in flag.stdout


def test_keys_in_configuration_files_are_refused(cli: Cli) -> None:
    (cli.workspace / ".agentloop.toml").write_text('openai_api_key = "sk-123"\n')
    done = cli.run("config")
    assert done.returncode == 2
    assert "never hold API keys" in done.stderr and "sk-123" not in done.stderr


# --------------------------------------------------------------------------- a real provider


def test_against_an_openai_compatible_server(cli: Cli) -> None:
    answers: list[dict[str, Any]] = [
        {"tool_calls": [("bash", {"command": 'echo "key=[$OPENAI_API_KEY]"'})]},
        {"text": "The key is hidden from commands."},
    ]
    with running_fake_openai(answers) as server:
        env = {"OPENAI_API_KEY": "sk-loopback-test", "OPENAI_BASE_URL": server.base_url}
        done = cli.run("run", "--json", "--trust", "bash", "-m", "openai:gpt-4.1", "go", env=env)
    assert done.returncode == 0, done.stderr
    events = decode_events(done.stdout)
    (end,) = tool_ends(events)
    assert text_of(end.result) == "key=[]\n[exit code 0]"  # the allow-list withheld it
    final = events[-1]
    assert isinstance(final, al.AgentEnd) and isinstance(final.messages[-1], al.AssistantMessage)
    assert final.messages[-1].text == "The key is hidden from commands."
    assert server.authorization == ["Bearer sk-loopback-test"] * 2
    first = server.requests[0]
    assert first["model"] == "gpt-4.1" and first["stream"] is True
    assert {t["function"]["name"] for t in first["tools"]} >= {"bash", "edit_file", "read_file"}
    assert "coding agent" in first["messages"][0]["content"]
    second = json.dumps(server.requests[1]["messages"])
    assert "key=[]" in second  # the tool's result went back to the model
    assert "sk-loopback-test" not in done.stdout + done.stderr
    assert os.environ.get("OPENAI_API_KEY") != "sk-loopback-test"


# --------------------------------------------------------------------------- asking a person


def _ask_on_a_terminal(cli: Cli, model: str, answers: list[str]) -> tuple[int, str, str]:
    """Run with standard input and error on a pseudo-terminal, answering each question."""
    import pty
    import select

    master, slave = pty.openpty()
    process = subprocess.Popen(
        cli.command("run", "--json", "-m", model, "go"),
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=slave,
        cwd=cli.workspace,
        env=cli.env,
    )
    os.close(slave)
    seen = b""
    try:
        pending = list(answers)
        while process.poll() is None or select.select([master], [], [], 0)[0]:
            ready, _, _ = select.select([master], [], [], 30)
            assert ready, f"no output from the command; so far: {seen!r}"
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the other side closed
                break
            if not chunk:
                break
            seen += chunk
            while pending and seen.count(b"[a]lways") > len(answers) - len(pending):
                os.write(master, pending.pop(0).encode() + b"\n")
        out, _ = process.communicate(timeout=30)
        stdout = out.decode()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)
    return process.returncode, stdout, seen.decode(errors="replace")


def test_a_person_at_the_terminal_is_asked(cli: Cli, tmp_path: Path) -> None:
    calls = [
        {"name": "write_file", "arguments": {"path": "a.txt", "content": "A"}},
        {"name": "write_file", "arguments": {"path": "b.txt", "content": "B"}},
        {"name": "bash", "arguments": {"command": "touch c.txt"}},
    ]
    model = write_script(
        tmp_path, [{"tool_calls": [c]} for c in calls] + [{"text": "ok"}], name="ask.json"
    )
    code, stdout, terminal = _ask_on_a_terminal(cli, model, ["a", "n"])
    assert code == 0, terminal
    assert terminal.count("Allow Write a.txt? [y]es / [n]o / [a]lways for write_file") == 1
    assert "Allow Write b.txt" not in terminal  # write_file is trusted for the session now
    assert terminal.count("Allow Run touch c.txt?") == 1
    ends = {e.call_id: e for e in tool_ends(decode_events(stdout))}
    assert [e.is_error for e in ends.values()] == [False, False, True]
    assert (cli.workspace / "a.txt").exists() and (cli.workspace / "b.txt").exists()
    assert not (cli.workspace / "c.txt").exists()


def test_interrupting_an_open_question_exits_at_once(cli: Cli, tmp_path: Path) -> None:
    import pty
    import select

    model = write_script(
        tmp_path, [{"tool_calls": [{"name": "bash", "arguments": {"command": "true"}}]}]
    )
    master, slave = pty.openpty()
    process = subprocess.Popen(
        cli.command("run", "-m", model, "go"),
        stdin=slave,
        stdout=subprocess.DEVNULL,
        stderr=slave,
        cwd=cli.workspace,
        env=cli.env,
    )
    os.close(slave)
    seen = b""
    try:
        while b"[a]lways" not in seen:
            ready, _, _ = select.select([master], [], [], 30)
            assert ready, f"no question asked; so far: {seen!r}"
            seen += os.read(master, 4096)
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 130  # no thread left waiting for the terminal
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)


def test_bad_trust_and_resume_values_are_one_line_errors(cli: Cli, tmp_path: Path) -> None:
    model = write_script(tmp_path, [{"text": "x"}])
    unknown = cli.run("run", "--trust", "no_such_tool", "-m", model, "hi")
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert unknown.stderr.splitlines() == [
        "agentloop: error: --trust no_such_tool: there is no such tool (the tools: bash, "
        "edit_file, glob, grep, list_dir, read_file, write_file)"
    ]
    missing = cli.run("run", "--resume", "nonexistent-id", "-m", model, "hi")
    assert missing.returncode == 2
    (line,) = missing.stderr.splitlines()
    assert line.startswith("agentloop: error: no stored session 'nonexistent-id'")
    assert "agentloop run --resume -- nonexistent-id" in line  # how to send it as a prompt
    nothing_here = cli.run("run", "--resume", "Now do it", "-m", model)
    assert nothing_here.returncode == 2
    assert nothing_here.stderr.splitlines() == [
        f"agentloop: error: no stored session for {cli.workspace} to resume (agentloop "
        "sessions lists them)"
    ]
    assert not cli.sessions_dir.exists() or not list(cli.sessions_dir.iterdir())
