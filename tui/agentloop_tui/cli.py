"""``agentloop tui``: the terminal UI's subcommand of ``agentloop`` (and the default one).

Registered in the ``agentloop.commands`` entry-point group; importing this module imports
neither Textual nor agentloop, so that ``agentloop --help`` stays fast.
"""

from __future__ import annotations

__all__ = ["TUI"]


class _Tui:
    help = "the terminal UI (the default: agentloop alone, or with only flags)"

    def main(self, argv: list[str], prog: str) -> int:
        """Open the terminal UI with ``argv`` (see ``agentloop tui --help``)."""
        from ._main import main

        return main(argv, prog=prog)


TUI = _Tui()
"""The ``agentloop tui`` command (registered in the ``agentloop.commands`` entry-point group)."""
