"""``python -m agentloop_coding`` is the ``agentloop`` command."""

import sys

from ._cli import main

sys.exit(main())
