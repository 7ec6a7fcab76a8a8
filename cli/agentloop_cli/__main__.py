"""``python -m agentloop_cli``: the ``agentloop`` command."""

import sys

from ._main import main

sys.exit(main())
