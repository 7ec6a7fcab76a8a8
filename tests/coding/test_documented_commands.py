"""Every ``agentloop`` command line that docs/coding.md and README.md show, run for real.

Each line runs as written, through ``bash -c`` in a workspace of its own (a git repository, so
that ``git diff | ...`` has a diff), one after the other in the page's order (so ``--resume``
continues what the lines before it left). The model is the scripted one (``AGENTLOOP_MODEL``),
or, for a line naming a real provider (``-m openai:gpt-4.1``), an OpenAI-compatible server on
127.0.0.1 that plays scripted answers. A line the pages show and this file does not know fails
the test: add what it should do below.

The terminal UI's lines (``agentloop``, ``agentloop tui ...``) are the TUI's (tests/tui).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

import agentloop as al
from agentloop.sessions import JsonlSessionStore

from ._cli_helpers import AGENTLOOP, Cli
from ._fake_openai import running_fake_openai

if TYPE_CHECKING:
    from collections.abc import Callable

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "docs" / "coding.md", ROOT / "README.md"]
OURS = ("run", "acp", "config", "sessions")


def documented() -> list[tuple[str, str]]:
    """``(page, line)`` for each ``agentloop`` command of a ``bash`` block, in page order."""
    found: list[tuple[str, str]] = []
    for page in PAGES:
        for block in re.findall(r"^```bash\n(.*?)^```", page.read_text(), flags=re.M | re.S):
            for raw in block.splitlines():
                line = re.sub(r"\s#[^\"']*$", "", raw).strip()  # a comment after the line
                words = shlex.split(line.split("|")[-1]) if "agentloop" in line else []
                if words[:1] == ["agentloop"] and words[1:2] and words[1] in OURS:
                    found.append((page.name, line))
    return found


class Run:
    """The state the lines share: the command's home, the last result, the fake server."""

    def __init__(self, cli: Cli, server: Any) -> None:
        self.cli = cli
        self.server = server
        self.script = cli.home / "model.json"

    def sessions(self) -> list[tuple[str, list[str]]]:
        async def load() -> list[tuple[str, list[str]]]:
            store = JsonlSessionStore(self.cli.sessions_dir)
            out = []
            for info in await store.list_sessions():
                messages = await store.load(info.id)
                prompts = [
                    al.extract_text(m.content) for m in messages if isinstance(m, al.UserMessage)
                ]
                out.append((info.id, prompts))
            return out

        return anyio.run(load)

    def line(
        self, line: str, replies: list[dict[str, Any]], stdin: str = ""
    ) -> subprocess.CompletedProcess[str]:
        self.script.write_text(json.dumps({"replies": replies}))
        env = {
            **self.cli.env,
            "AGENTLOOP_MODEL": f"scripted:{self.script}",
            "OPENAI_API_KEY": "sk-loopback-docs",
            "OPENAI_BASE_URL": self.server.base_url,
            # The installed command comes first, as it would for a user of this environment.
            "PATH": os.pathsep.join((os.path.dirname(AGENTLOOP), self.cli.env.get("PATH", ""))),
        }
        return subprocess.run(
            ["bash", "-c", line],
            input=stdin,
            capture_output=True,
            text=True,
            cwd=self.cli.workspace,
            env=env,
            timeout=60,
            check=False,
        )


def ok(done: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    return done


def asking_what_the_project_does(run: Run, line: str) -> None:
    done = ok(
        run.line(
            line,
            [{"tool_calls": [{"name": "list_dir", "arguments": {}}]}, {"text": "A demo project."}],
        )
    )
    assert done.stdout == "A demo project.\n"
    assert "> List ." in done.stderr and "session: " in done.stderr


def fixing_with_a_real_provider(run: Run, line: str) -> None:
    run.server.answers[:] = [
        {"tool_calls": [("write_file", {"path": "fix.py", "content": "FIXED = True\n"})]},
        {"text": "Fixed."},
    ]
    done = ok(run.line(line, []))
    assert done.stdout == "Fixed.\n"
    assert (run.cli.workspace / "fix.py").read_text() == "FIXED = True\n"  # no one was asked
    assert run.server.requests[0]["model"] == "gpt-4.1"


def reviewing_a_diff(run: Run, line: str) -> None:
    done = ok(run.line(line, [{"text": "Looks fine."}]))
    assert done.stdout == "Looks fine.\n"
    session_id = done.stderr.rsplit("session: ", 1)[1].strip()
    (prompt,) = dict(run.sessions())[session_id]
    assert prompt.startswith("Review this change\n\ndiff --git a/app.py b/app.py")


def planning(run: Run, line: str) -> None:
    done = ok(run.line(line, [{"text": "1. Add the option\n2. Test it"}]))
    assert done.stdout == "1. Add the option\n2. Test it\n"
    run.cli.home.joinpath("planned").write_text(done.stderr.rsplit("session: ", 1)[1].strip())


def resuming_the_latest(run: Run, line: str) -> None:
    done = ok(run.line(line, [{"text": "Done as planned."}]))
    assert done.stdout == "Done as planned.\n"
    planned = run.cli.home.joinpath("planned").read_text()
    assert f"session: {planned}" in done.stderr  # the latest session of this workspace
    prompts = dict(run.sessions())[planned]
    assert prompts[-1] == "Now do it" and len(prompts) == 2


def a_named_session(run: Run, line: str) -> None:
    done = ok(run.line(line, [{"text": "Started."}]))
    assert "session: fix-123" in done.stderr
    assert dict(run.sessions())["fix-123"] == ["Start on issue 123"]


def listing_sessions(run: Run, line: str) -> None:
    done = ok(run.line(line, []))
    listed = done.stdout.splitlines()
    assert any(row.startswith("fix-123 ") for row in listed)
    assert len(listed) == len(run.sessions())


def showing_the_configuration(run: Run, line: str) -> None:
    done = ok(run.line(line, []))
    assert "model = " in done.stdout and "# env AGENTLOOP_MODEL" in done.stdout


def serving_acp(run: Run, line: str) -> None:
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    done = ok(run.line(line, [], stdin=json.dumps(hello) + "\n"))  # then standard input ends
    (answer,) = [json.loads(row) for row in done.stdout.splitlines()]
    assert answer["id"] == 1 and answer["result"]["agentInfo"]["name"] == "agentloop"


WHAT_EACH_DOES: dict[str, Callable[[Run, str], None]] = {
    'agentloop run "What does this project do?"': asking_what_the_project_does,
    'agentloop run -m openai:gpt-4.1 "Fix the failing test" --approval bypassed': (
        fixing_with_a_real_provider
    ),
    'git diff | agentloop run "Review this change"': reviewing_a_diff,
    'agentloop run --plan "How would you add a --verbose flag?"': planning,
    'agentloop run --plan "How would you add caching?"': planning,
    'agentloop run --resume "Now do it"': resuming_the_latest,
    'agentloop run --session fix-123 "Start on issue 123"': a_named_session,
    "agentloop sessions": listing_sessions,
    "agentloop config": showing_the_configuration,
    "agentloop acp": serving_acp,
}


def test_every_documented_command_line_runs_as_shown(tmp_path: Path) -> None:
    lines = documented()
    assert len(lines) >= 10
    unknown = [line for _, line in lines if line not in WHAT_EACH_DOES]
    assert not unknown, f"documented command lines without a check here: {unknown}"
    cli = Cli(tmp_path)
    work = cli.workspace
    (work / "app.py").write_text("print('hello')\n")
    for command in (["init", "-q"], ["add", "."], ["commit", "-qm", "first"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *command], cwd=work, check=True
        )
    (work / "app.py").write_text("print('hello, world')\n")
    with running_fake_openai([]) as server:
        run = Run(cli, server)
        for page, line in lines:
            try:
                WHAT_EACH_DOES[line](run, line)
            except AssertionError as exc:
                raise AssertionError(f"{page}: {line}: {exc}") from exc
