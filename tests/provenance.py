"""Runs of lines a file shares with another project's sources.

A *copy* is `WINDOW` consecutive non-trivial lines of one file that also appear, consecutively
and in the same order, in a source file. Lines are compared after whitespace is normalised
(indentation and spacing do not hide a copy), and trivial lines (blank, punctuation only, or
only common keywords such as `} else {` or `#endif`) are dropped from both sides first, so
reflowing blank lines or braces does not hide one either. Notebooks are compared cell by cell,
on their cells' sources.

Windows are hashed, so indexing the sources and scanning a repository takes seconds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

WINDOW = 8

# Words that, alone on a line (with punctuation), say nothing about where the line came from.
COMMON_WORDS = frozenset({
    "break", "case", "catch", "continue", "default", "do", "done", "elif", "else", "end",
    "endif", "except", "fi", "finally", "once", "pass", "pragma", "private", "protected",
    "public", "return", "then", "try",
})
WORD = re.compile(r"[A-Za-z0-9_]+")

# A line, and where it is (`"12"`, or `"cell 3, line 5"` in a notebook).
Line = tuple[str, str]


@dataclass(frozen=True)
class Copy:
    """A run of lines of `path` starting at `where` that repeats `source` from `source_where`."""

    path: str
    where: str
    source: str
    source_where: str

    def __str__(self) -> str:
        return (f"{self.path}:{self.where}: {WINDOW}+ consecutive lines repeat "
                f"{self.source}:{self.source_where}")


def normalise(line: str) -> str:
    """`line` without leading/trailing whitespace and with inner whitespace runs as one space."""
    return " ".join(line.split())


def is_trivial(line: str) -> bool:
    """True for lines that carry no authorship: blank, punctuation, or common keywords only."""
    words = WORD.findall(line)
    return all(word in COMMON_WORDS for word in words)


def file_lines(path: Path) -> list[Line] | None:
    """The lines of a text file (of a notebook: its cells' sources); None for binary files."""
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if path.suffix == ".ipynb":
        cells = _notebook_cells(text)
        if cells is not None:
            return [(f"cell {c}, line {n}", line) for c, source in enumerate(cells, 1)
                    for n, line in enumerate(source.splitlines(), 1)]
    return [(str(n), line) for n, line in enumerate(text.splitlines(), 1)]


def _notebook_cells(text: str) -> list[str] | None:
    try:
        cells = json.loads(text).get("cells")
    except (ValueError, AttributeError):
        return None
    if not isinstance(cells, list):
        return None
    sources = []
    for cell in cells:
        source = cell.get("source", "") if isinstance(cell, dict) else ""
        sources.append("".join(source) if isinstance(source, list) else str(source))
    return sources


def significant(lines: Iterable[Line]) -> list[Line]:
    """The non-trivial lines, normalised, with where each was."""
    normalised = ((where, normalise(text)) for where, text in lines)
    return [(where, text) for where, text in normalised if not is_trivial(text)]


def windows(lines: list[Line]) -> Iterator[tuple[str, int]]:
    """(where the window starts, hash of its lines) for each `WINDOW` consecutive lines."""
    texts = [text for _, text in lines]
    for start in range(len(lines) - WINDOW + 1):
        yield lines[start][0], hash(tuple(texts[start:start + WINDOW]))


class SourceIndex:
    """The windows of a set of source files, each mapped to the first place it occurs."""

    def __init__(self) -> None:
        self._first: dict[int, tuple[str, str]] = {}
        self.files = 0

    @property
    def window_count(self) -> int:
        """How many distinct windows the index holds."""
        return len(self._first)

    def add_file(self, name: str, lines: Iterable[Line]) -> None:
        self.files += 1
        for where, key in windows(significant(lines)):
            self._first.setdefault(key, (name, where))

    def add_tree(self, root: Path, label: str) -> None:
        """Every text file under `root`, named `label/<relative path>`."""
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                lines = file_lines(path)
                if lines is not None:
                    self.add_file(f"{label}/{path.relative_to(root).as_posix()}", lines)

    def copies(self, name: str, lines: Iterable[Line]) -> list[Copy]:
        """Each run of windows of `lines` found here, reported once, at the run's first line."""
        found = []
        previous_hit = False
        for where, key in windows(significant(lines)):
            hit = self._first.get(key)
            if hit is not None and not previous_hit:
                found.append(Copy(name, where, *hit))
            previous_hit = hit is not None
        return found
