"""The late policy, shared by batch grading and Gradescope: when a student handed in and when
their work was due (the assignment's due date, or their own with an extension) give the share
of the score they keep (`Assignment.late_factor`), carried on each graded row as
`late_factor` so that every output (grades.csv, grades.json, results.json, feedback, the LMS
exports) scores it alike.

In a batch the times come from the roster's optional columns:

    id,submitted,due,extension_days
    ada,2026-03-02T09:00:00-05:00,,          # handed in 9 hours late
    bob,2026-03-03T12:00:00-05:00,,2         # two days' extension: on time

`submitted` is when the student handed in (a date-time with its offset, as an LMS export gives
it); `due` is the student's own due date, or `extension_days` days are added to the
assignment's. The journal records each student's times when they are graded, so the policy
survives `--resume`, `--only` and `--rescore`; a roster given to a later run wins (a new
extension applies on `--rescore --roster`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime, timedelta

from puzzles.grading.assignment import Assignment
from puzzles.grading.intake import IntakeError
from puzzles.grading.sandbox import Outcome


@dataclass(frozen=True)
class Lateness:
    """When one student handed in (None: unknown, never late) and their own due date (None:
    the assignment's)."""

    submitted: datetime | None = None
    due: datetime | None = None

    def to_json(self) -> dict[str, str | None]:
        return {"submitted": _text(self.submitted), "due": _text(self.due)}

    @classmethod
    def from_json(cls, data: object) -> Lateness:
        if not isinstance(data, dict):
            return cls()
        return cls(parse_time(data.get("submitted")), parse_time(data.get("due")))


def parse_time(text: object) -> datetime | None:
    """A date-time with its offset from ISO 8601 text (None where there is none, or no
    offset: a time without one could be anybody's local time)."""
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        stamp = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return stamp if stamp.tzinfo is not None else None


def from_roster(details: dict[str, dict[str, str]], assignment: Assignment
                ) -> dict[str, Lateness]:
    """Each roster id's `Lateness` from its `submitted`, `due` and `extension_days` columns;
    a value the grader cannot read is an `IntakeError` naming the student and column."""
    found: dict[str, Lateness] = {}
    for sid, row in details.items():
        submitted = _column(row, "submitted", sid)
        due = _column(row, "due", sid)
        days = (row.get("extension_days") or "").strip()
        if days:
            if due is not None:
                raise IntakeError(f"the roster gives {sid!r} both a due date and "
                                  "extension_days: one or the other")
            if assignment.due is None:
                raise IntakeError(f"the roster gives {sid!r} extension_days, but the "
                                  "assignment has no due date to extend")
            try:
                extra = float(days)
            except ValueError:
                extra = -1.0
            if not 0 <= extra < 10_000:
                raise IntakeError(f"the roster's extension_days for {sid!r} must be a number "
                                  f"of days (0 or more), not {days!r}")
            due = assignment.due + timedelta(days=extra)
        if submitted is not None or due is not None:
            found[sid] = Lateness(submitted, due)
    return found


def apply(outcome: Outcome, assignment: Assignment, lateness: Lateness | None) -> Outcome:
    """`outcome` with every puzzle row carrying the share of its points kept (`late_factor`,
    below 1 only when late)."""
    factor = late_factor(assignment, lateness)
    if factor == 1.0:
        return outcome
    rows = [{**row, "late_factor": factor} if isinstance(row.get("puzzle"), int) else row
            for row in outcome.rows]
    return dataclasses.replace(outcome, rows=rows)


def late_factor(assignment: Assignment, lateness: Lateness | None) -> float:
    if lateness is None:
        return 1.0
    return assignment.late_factor(lateness.submitted, lateness.due)


def note(outcome: Outcome) -> str:
    """What the gradebook and the feedback say of a late submission ("" when on time)."""
    factor = min((float(row.get("late_factor", 1.0)) for row in outcome.rows), default=1.0)
    if factor >= 1.0:
        return ""
    return f"submitted late: points multiplied by {factor:g} (the late policy)"


def _column(row: dict[str, str], key: str, sid: str) -> datetime | None:
    text = (row.get(key) or "").strip()
    if not text:
        return None
    stamp = parse_time(text)
    if stamp is None:
        raise IntakeError(f"the roster's {key} for {sid!r} must be a date-time with its "
                          f"offset, e.g. 2026-03-01T23:59:00-05:00, not {text!r}")
    return stamp


def _text(stamp: datetime | None) -> str | None:
    return stamp.isoformat() if stamp is not None else None
