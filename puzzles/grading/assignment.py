"""The assignment file (TOML): which puzzles are assigned, their points, partial credit, limits
and the secret seed of the hidden cases.

    [assignment]
    name = "Week 1: threads"
    seed = 918273645          # secret; absent: a random seed, recorded in grades.json
    time_limit = 30           # seconds per puzzle
    submission_time_limit = 300  # seconds per submission, all its puzzles together
    memory_limit_mb = 2048    # per submission's worker process
    due = 2026-03-01T23:59:00Z   # optional: the due date (TOML date-time, with its offset)
    late_penalty_per_day = 0.1   # the fraction of the score lost per day (or part) late
    hidden_visibility = "after_due_date"  # Gradescope: when hidden-case details show

    [partial_credit]
    over_budget = 0.5         # right values, over the per-thread budget
    warnings = 1.0            # passed, with warning diagnostics

    [[puzzles]]
    puzzle = "Map"            # number, slug or title
    points = 2

Without a file, every puzzle of the chapters a notebook works on is graded, one point each.
"""

from __future__ import annotations

import math
import secrets
import tomllib
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from puzzles.catalog import find

LEARNER_SEED = 0  # the seed `problem.check()` draws its hidden cases from: never the grader's


class AssignmentError(Exception):
    """The assignment file is missing, not TOML, or says something the grader cannot use."""


@dataclass(frozen=True)
class Limits:
    """What one submission may use: wall time per puzzle, wall time in all (its budget, so
    one slow submission cannot hold a worker for long) and the memory of its worker."""

    seconds: float = 30.0
    memory_bytes: int = 2 << 30
    submission_seconds: float = 300.0


@dataclass(frozen=True)
class Assignment:
    """What to grade and how. `points` maps puzzle numbers to points, in assignment order; an
    empty map means "the chapters each notebook works on, one point per puzzle"."""

    name: str = ""
    points: dict[int, float] = field(default_factory=dict)
    over_budget: float = 0.5
    warnings: float = 1.0
    limits: Limits = Limits()
    seed: int | None = None
    due: datetime | None = None
    late_penalty_per_day: float = 0.0
    hidden_visibility: str = "after_due_date"

    def with_seed(self) -> Assignment:
        """This assignment with a seed: its own, or a fresh random one (to be recorded)."""
        if self.seed is not None:
            return self
        return replace(self, seed=secrets.randbelow(2**63 - 1) + 1)

    def points_of(self, number: int) -> float:
        """The points puzzle `number` is worth (one each without an assignment file)."""
        return self.points.get(number, 0.0) if self.points else 1.0

    def earned(self, row: dict[str, object]) -> float:
        """The points one graded row earns: the instructor's override, else its verdict's
        credit, times the share a late submission keeps (see `late_policy`)."""
        number = row.get("puzzle")
        if not isinstance(number, int):
            return 0.0
        late = float(row.get("late_factor", 1.0))  # type: ignore[arg-type]
        if "override_points" in row:  # the instructor's, from overrides.csv
            return round(float(row["override_points"]) * late, 6)  # type: ignore[arg-type]
        warned = bool(row.get("warnings"))
        return round(self.points_of(number) * self.credit(str(row["status"]), warned) * late, 6)

    def score(self, rows: list[dict[str, object]]) -> tuple[float, float]:
        """(points earned, points possible) of one submission's rows. With an assignment file
        the possible points are the assignment's, whatever the rows hold."""
        earned = sum(self.earned(row) for row in rows)
        if self.points:
            return earned, sum(self.points.values())
        return earned, float(sum(isinstance(row.get("puzzle"), int) for row in rows))

    def late_factor(self, submitted: datetime | None, due: datetime | None = None) -> float:
        """The share of the score a submission keeps: 1 on time, less
        `late_penalty_per_day` per day or part of a day after `due` (the assignment's, unless
        given, e.g. a student's extended one), never below 0."""
        due = due or self.due
        if submitted is None or due is None or submitted <= due:
            return 1.0
        days = math.ceil((submitted - due).total_seconds() / 86400)
        return max(0.0, 1.0 - days * self.late_penalty_per_day)

    def credit(self, status: str, warned: bool) -> float:
        """The fraction of a puzzle's points a verdict earns."""
        if status == "pass":
            return self.warnings if warned else 1.0
        if status == "over-budget":
            return self.over_budget
        return 0.0


def load(path: Path) -> Assignment:
    """Read an assignment file; every mistake in it is an `AssignmentError` saying where."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise AssignmentError(f"cannot read {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise AssignmentError(f"{path} is not valid TOML: {exc}") from None
    return parse(data, str(path))


def parse(data: dict[str, object], where: str = "the assignment") -> Assignment:
    """An `Assignment` from the parsed TOML tables."""
    unknown = set(data) - {"assignment", "partial_credit", "puzzles"}
    if unknown:
        raise AssignmentError(f"{where}: unknown table(s) {sorted(unknown)}")
    head = _table(data, "assignment", where)
    partial = _table(data, "partial_credit", where)
    _only(head, {"name", "seed", "time_limit", "submission_time_limit", "memory_limit_mb",
                 "due", "late_penalty_per_day", "hidden_visibility"}, f"{where} [assignment]")
    _only(partial, {"over_budget", "warnings"}, f"{where} [partial_credit]")
    seed = head.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
        raise AssignmentError(f"{where}: seed must be a non-negative integer")
    if seed == LEARNER_SEED:
        raise AssignmentError(f"{where}: seed {LEARNER_SEED} is the one learners' check() uses; "
                              "pick a secret one (or leave it out for a random one)")
    limits = Limits(
        seconds=_number(head, "time_limit", 30.0, where, low=0.1),
        memory_bytes=int(_number(head, "memory_limit_mb", 2048, where, low=64)) << 20,
        submission_seconds=_number(head, "submission_time_limit", 300.0, where, low=0.1))
    return Assignment(
        name=str(head.get("name", "")),
        points=_puzzles(data.get("puzzles", []), where),
        over_budget=_number(partial, "over_budget", 0.5, where, high=1.0),
        warnings=_number(partial, "warnings", 1.0, where, high=1.0),
        limits=limits,
        seed=seed,
        due=_due(head.get("due"), where),
        late_penalty_per_day=_number(head, "late_penalty_per_day", 0.0, where, high=1.0),
        hidden_visibility=_visibility(head.get("hidden_visibility", "after_due_date"), where),
    )


VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")  # Gradescope's


def _due(value: object, where: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            value = None
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise AssignmentError(f"{where}: due must be a date-time with its offset, e.g. "
                              "2026-03-01T23:59:00-05:00")
    return value


def _visibility(value: object, where: str) -> str:
    if value not in VISIBILITIES:
        raise AssignmentError(f"{where}: hidden_visibility must be one of {VISIBILITIES}")
    return str(value)


def _table(data: dict[str, object], key: str, where: str) -> dict[str, object]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise AssignmentError(f"{where}: [{key}] must be a table")
    return value


def _only(table: dict[str, object], keys: set[str], where: str) -> None:
    unknown = set(table) - keys
    if unknown:
        raise AssignmentError(f"{where}: unknown key(s) {sorted(unknown)}; "
                              f"known: {sorted(keys)}")


def _number(table: dict[str, object], key: str, default: float, where: str,
            low: float = 0.0, high: float | None = None) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AssignmentError(f"{where}: {key} must be a number")
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise AssignmentError(f"{where}: {key} must be {bound}, not {value}")
    return float(value)


def _puzzles(entries: object, where: str) -> dict[int, float]:
    if not isinstance(entries, list):
        raise AssignmentError(f"{where}: [[puzzles]] must be an array of tables")
    points: dict[int, float] = {}
    for k, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or "puzzle" not in entry:
            raise AssignmentError(f"{where}: [[puzzles]] entry {k} needs `puzzle = ...`")
        _only(entry, {"puzzle", "points"}, f"{where} [[puzzles]] entry {k}")
        puzzle = find(entry["puzzle"])
        if puzzle is None:
            raise AssignmentError(f"{where}: [[puzzles]] entry {k}: no puzzle "
                                  f"{entry['puzzle']!r} (`python -m puzzles list` shows them)")
        if puzzle.number in points:
            raise AssignmentError(f"{where}: puzzle {puzzle.number} is assigned twice")
        points[puzzle.number] = _number(entry, "points", 1.0, f"{where} [[puzzles]] entry {k}")
    return points
