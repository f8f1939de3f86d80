"""`python -m puzzles`: see `puzzles/cli.py`."""

import sys

from puzzles.cli import main

if __name__ == "__main__":  # grading workers import this module again: it must not run then
    sys.exit(main())
