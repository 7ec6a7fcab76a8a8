"""agentloop_cli: the ``agentloop`` command, one home for every subcommand.

::

    agentloop                       the terminal UI (``agentloop tui``; flags go with it:
                                    ``agentloop --inline``, ``agentloop -m openai:gpt-4.1``)
    agentloop run "fix the test"    one prompt, headless
    agentloop acp                   an Agent Client Protocol server on stdio, for editors
    agentloop config | sessions     the effective settings; the stored sessions
    agentloop eval run|report|gate  evaluate agents

This package sits above the others and imports none of them: each registers its
subcommands in the ``agentloop.commands`` entry-point group (``run = "agentloop_coding.cli:RUN
[coding]"``), naming the extra that brings what they need. A command whose extra is missing
is still listed by ``agentloop --help`` and, when asked for, says which extra to install, in one
line. A command is any object with ``help`` (one line) and ``main(argv, prog) -> int``
(``Command``); it parses its own arguments.
"""

from ._main import ENTRY_POINT_GROUP as ENTRY_POINT_GROUP, Command as Command, main as main

__all__ = ["ENTRY_POINT_GROUP", "Command", "main"]
