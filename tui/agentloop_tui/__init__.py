"""agentloop_tui: the terminal UI of the agentloop coding agent, in Textual.

==========================  =========================================================
name                        what it is
==========================  =========================================================
``AgentApp``                the Textual application around a ``CodingSession``
``Conversation``            the view model: entries and status fed by agent events,
                            shown by the app (full screen or inline) and by tests
``Status``                  what the status bar shows, the context gauge included
``ContextGauge``            the context window's estimated fill, counted per message
``MarkdownBlocks``          streamed markdown cut into finished blocks and a tail
``parse_diff``,             unified diffs read, and shown syntax-highlighted
``render_diff``
``edit_prompt``             a prompt written in ``$EDITOR``
``PromptHistory``           the prompts sent in a project, kept across restarts
``main``                    ``agentloop tui``
==========================  =========================================================

Textual runs on asyncio, so the app runs the agent on anyio's asyncio backend. This package
imports ``agentloop_coding`` and below; nothing there imports it (``agentloop`` finds it when
the ``[tui]`` extra is installed).
"""

from __future__ import annotations

import importlib
from importlib.util import find_spec as _find_spec
from typing import TYPE_CHECKING, Any


# Checked without importing anything heavy, so that ``import agentloop_tui.cli`` (the
# ``agentloop`` command listing its subcommands) stays fast.
def _installed(module: str) -> bool:
    try:
        return _find_spec(module) is not None
    except (ImportError, ValueError):  # a broken install, or a finder that refuses it
        return False


for _module in ("textual", "httpx"):
    if not _installed(_module):
        from agentloop import MissingExtra

        raise MissingExtra("agentloop_tui", "tui", missing=_module)

if TYPE_CHECKING:
    from ._app import AgentApp as AgentApp, SessionStarter as SessionStarter
    from ._diff import (
        ParsedDiff as ParsedDiff,
        parse_diff as parse_diff,
        render_diff as render_diff,
    )
    from ._editor import EditorError as EditorError, edit_prompt as edit_prompt
    from ._history import PromptHistory as PromptHistory
    from ._main import main as main, print_transcript as print_transcript
    from ._markdown import MarkdownBlocks as MarkdownBlocks
    from ._status import ContextGauge as ContextGauge, Status as Status
    from ._view import (
        AssistantEntry as AssistantEntry,
        Conversation as Conversation,
        NoticeEntry as NoticeEntry,
        ToolEntry as ToolEntry,
        UserEntry as UserEntry,
    )

__all__ = [
    "AgentApp",
    "AssistantEntry",
    "ContextGauge",
    "Conversation",
    "EditorError",
    "MarkdownBlocks",
    "NoticeEntry",
    "ParsedDiff",
    "PromptHistory",
    "SessionStarter",
    "Status",
    "ToolEntry",
    "UserEntry",
    "edit_prompt",
    "main",
    "parse_diff",
    "print_transcript",
    "render_diff",
]

_WHERE: dict[str, str] = {
    "AgentApp": "._app",
    "SessionStarter": "._app",
    "ParsedDiff": "._diff",
    "parse_diff": "._diff",
    "render_diff": "._diff",
    "EditorError": "._editor",
    "edit_prompt": "._editor",
    "PromptHistory": "._history",
    "main": "._main",
    "print_transcript": "._main",
    "MarkdownBlocks": "._markdown",
    "ContextGauge": "._status",
    "Status": "._status",
    "AssistantEntry": "._view",
    "Conversation": "._view",
    "NoticeEntry": "._view",
    "ToolEntry": "._view",
    "UserEntry": "._view",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
