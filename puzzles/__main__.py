"""`python -m puzzles`: see `puzzles/cli.py`."""

import sys

from puzzles.cli import main

sys.exit(main())
