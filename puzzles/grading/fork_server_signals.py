"""Imported by the grader's fork server only (see `sandbox.context`), never by the parent: the
fork server ignores Ctrl-C, and the workers it forks inherit that from their first
instruction, so a Ctrl-C at the terminal stops the parent (which stops them and keeps what
was graded) without killing a worker half-way through starting."""

import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)
