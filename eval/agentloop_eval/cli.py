"""``agentloop eval``: evaluation's subcommand of ``agentloop``.

Registered in the ``agentloop.commands`` entry-point group; importing this module imports
nothing heavy, so that ``agentloop --help`` stays fast.
"""

from __future__ import annotations

__all__ = ["EVAL"]


class _Eval:
    help = "evaluate agents: run a suite, report, gate a change"

    def main(self, argv: list[str], prog: str) -> int:
        """Run ``agentloop eval`` with ``argv`` (see ``agentloop eval --help``)."""
        from ._cli import main

        return main(argv, prog=prog)


EVAL = _Eval()
"""The ``agentloop eval`` command (registered in the ``agentloop.commands`` entry-point group)."""
