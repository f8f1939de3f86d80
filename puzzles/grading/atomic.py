"""Files written whole or not at all, so that Ctrl-C (or a crash) at any moment leaves each
output either as it was or as it should be, never cut short.

A `FileSet` writes its files beside their final names (`.NAME.partial`) and, once all are
written, renames them over the old ones together with Ctrl-C held back, so the gradebook's
files always belong to one build. `interrupts_held` holds SIGINT back over such a step: a
Ctrl-C that arrives meanwhile is delivered (as KeyboardInterrupt) right after it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import TextIO


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """SIGINT blocked for the duration (where signals can be blocked: the main thread of a
    POSIX process); a pending one is delivered when it ends."""
    if threading.current_thread() is not threading.main_thread() or \
            not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class FileSet:
    """Text files written together: `open` each, then leaving the `with` block renames every
    one over its final path (or, on an exception, removes what was written)."""

    def __init__(self) -> None:
        self.files: list[tuple[Path, Path, TextIO]] = []

    def open(self, path: Path, newline: str | None = None) -> TextIO:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.partial")
        handle = partial.open("w", encoding="utf-8", newline=newline)
        self.files.append((partial, path, handle))
        return handle

    def __enter__(self) -> FileSet:
        return self

    def __exit__(self, kind: type[BaseException] | None, _value: BaseException | None,
                 _traceback: TracebackType | None) -> None:
        with interrupts_held():
            for _, _, handle in self.files:
                handle.close()
            for partial, path, _ in self.files:
                if kind is None:
                    os.replace(partial, path)
                else:
                    partial.unlink(missing_ok=True)

    @property
    def paths(self) -> list[Path]:
        return [path for _, path, _ in self.files]


def write_text(path: Path, text: str) -> Path:
    """`text` written to `path` whole or not at all."""
    with FileSet() as files:
        files.open(path).write(text)
    return path
