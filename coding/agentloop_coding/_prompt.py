"""The coding agent's system prompt.

``system_prompt`` assembles the default instructions, the facts of the environment (workspace,
platform, date), the project's own instructions when it has an ``AGENTS.md`` (capped), and the
user's ``instructions`` setting. Plan mode adds its own instruction on top (the core's
``PLAN_MODE_INSTRUCTION``, through ``Agent.set_plan_mode``).
"""

from __future__ import annotations

import datetime
import platform
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

__all__ = ["DEFAULT_SYSTEM_PROMPT", "PROJECT_INSTRUCTION_FILES", "system_prompt"]

DEFAULT_SYSTEM_PROMPT = """\
You are a coding agent working in a software project on the user's machine. You read and \
change files and run commands through your tools to carry out the user's requests.

How to work:
- Look before you change: find the relevant files (glob, grep), read them (read_file), and \
follow the conventions you see there.
- Make the smallest change that does the job. Prefer edit_file for changes to existing files; \
write_file creates files or replaces them whole.
- After changing code, check it: run the tests, the linter or the program with bash, and fix \
what fails.
- Paths are relative to the workspace root unless absolute. Commands run without a terminal: \
use non-interactive flags, and never start programs that wait for input.
- A tool call may be refused by the user or by a policy: read the reason and adjust rather \
than retrying the same call.
- Be brief. When you are done, say what you changed and how you checked it."""
"""The coding agent's system prompt, before the project's instructions (``AGENTS.md``)."""

PROJECT_INSTRUCTION_FILES = ("AGENTS.md",)
_MAX_PROJECT_INSTRUCTIONS = 20_000


def _project_instructions(root: Path) -> str:
    for name in PROJECT_INSTRUCTION_FILES:
        path = root / name
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if len(text) > _MAX_PROJECT_INSTRUCTIONS:
            text = text[:_MAX_PROJECT_INSTRUCTIONS] + "\n[... cut ...]"
        return f"The project's instructions ({name}):\n{text.strip()}"
    return ""


def system_prompt(
    root: Path,
    *,
    base: str | None = None,
    instructions: str = "",
    tools: Iterable[str] = (),
    today: datetime.date | None = None,
) -> str:
    """The system prompt for an agent working in ``root``.

    Args:
        root: the workspace root.
        base: replaces ``DEFAULT_SYSTEM_PROMPT``.
        instructions: the user's own instructions, added at the end.
        tools: the names of the tools offered (listed for the model).
        today: the date to state (default: today).
    """
    day = today or datetime.date.today()
    parts = [base if base is not None else DEFAULT_SYSTEM_PROMPT]
    facts = [
        f"Workspace root: {root}",
        f"Platform: {platform.system()} {platform.release()}",
        f"Today: {day.isoformat()}",
    ]
    names = sorted(tools)
    if names:
        facts.append(f"Tools: {', '.join(names)}")
    parts.append("\n".join(facts))
    project = _project_instructions(root)
    if project:
        parts.append(project)
    if instructions.strip():
        parts.append(f"The user's instructions:\n{instructions.strip()}")
    return "\n\n".join(parts)
