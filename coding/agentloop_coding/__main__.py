"""``python -m agentloop_coding run|acp|config|sessions``: the coding agent's commands."""

import sys

from .cli import main

sys.exit(main())
