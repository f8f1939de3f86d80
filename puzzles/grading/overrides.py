"""The instructor's overrides, `OUT/overrides.csv`: points set by hand for one student's
puzzle, with the reason. The grader never writes this file, so an override survives every
regrade (`--resume`, `--only`, `--rescore`, a fresh run into the same folder); the gradebook
applies it each time it is built, and says so in the row's notes.

    id,puzzle,points,reason
    ada,3,2,"regraded by hand: the race is benign on Apple GPUs"
"""

from __future__ import annotations

import csv
import dataclasses
import unicodedata
from pathlib import Path

from puzzles.catalog import find
from puzzles.grader import limit_row
from puzzles.grading.sandbox import Outcome

OVERRIDES = "overrides.csv"


class OverridesError(Exception):
    """overrides.csv says something the grader cannot use (with its line)."""


@dataclasses.dataclass(frozen=True)
class Overrides:
    """Points by (student id, puzzle number), with the reason."""

    points: dict[tuple[str, int], tuple[float, str]]

    @classmethod
    def load(cls, out: Path) -> Overrides:
        path = out / OVERRIDES
        if not path.exists():
            return cls({})
        try:
            rows = list(csv.DictReader(path.read_text(encoding="utf-8-sig").splitlines()))
        except (OSError, UnicodeDecodeError, csv.Error) as exc:
            raise OverridesError(f"cannot read {path}: {exc}") from None
        points: dict[tuple[str, int], tuple[float, str]] = {}
        for line, row in enumerate(rows, 2):
            puzzle = find((row.get("puzzle") or "").strip())
            sid = unicodedata.normalize("NFC", (row.get("id") or "").strip())
            try:
                value = float(row.get("points") or "")
            except ValueError:
                value = -1.0
            if not sid or puzzle is None or value < 0:
                raise OverridesError(f"{path} line {line}: needs an id, a puzzle (number, slug "
                                     "or title) and points (a number, 0 or more)")
            points[sid, puzzle.number] = (value, (row.get("reason") or "").strip())
        return cls(points)

    def apply(self, outcome: Outcome) -> Outcome:
        """`outcome` with its overridden rows carrying `override_points` (a puzzle without a
        row gets one, with the status "override")."""
        mine = {n: v for (sid, n), v in self.points.items() if sid == outcome.submission.id}
        if not mine:
            return outcome
        rows = []
        for row in outcome.rows:
            number = row.get("puzzle")
            if isinstance(number, int) and number in mine:
                row = {**row, "override_points": mine.pop(number)[0],
                       "notice": _note(number, *self.points[outcome.submission.id, number])}
            rows.append(row)
        for number, (value, reason) in mine.items():
            rows.append({**limit_row(number, "override", "points set by the instructor"),
                         "override_points": value, "notice": _note(number, value, reason)})
        return dataclasses.replace(outcome, rows=rows)


def _note(number: int, points: float, reason: str) -> str:
    return f"{points:g} points set by the instructor" + (f": {reason}" if reason else "")
