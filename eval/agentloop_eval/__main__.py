"""``python -m agentloop_eval run|report|gate ...``."""

import sys

from ._cli import main

sys.exit(main())
