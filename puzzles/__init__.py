"""The puzzle catalog and its command line (`python -m puzzles`)."""
