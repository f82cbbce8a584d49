"""``python -m graphguard`` is ``graphguard``."""

import sys

from graphguard.cli import main

sys.exit(main())
