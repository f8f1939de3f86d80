"""What a batch writes: the gradebook for the instructor, and what each student may see.

    OUT/grades.jsonl               the journal: one line per student as each finishes (see
                                   `journal`); everything else is built from it
    OUT/grades.csv                 one row per student: points and status per puzzle, total,
                                   max, the submission's status, notes
    OUT/grades.json                everything, for the instructor only (hidden cases and their
                                   seeds included)
    OUT/similarity.csv             pairs of students ranked by identical non-trivial kernels
    OUT/results/<id>/results.json  Gradescope's autograder results format
    OUT/feedback/<id>.md           verdicts, counts and diagnostics, per student

Student-facing files are built from `disclosure.student_view(row)`: the verdict, the counts,
the budget and the diagnostics of the visible cases, and of a hidden case only its kind, line
and a fixed short reason (never a case, an element index, a thread or a value). All text is
stripped of control characters; all JSON is strict (no NaN or Infinity).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import TextIO

from puzzles.catalog import ROOT as GRADER_ROOT
from puzzles.catalog import all_puzzles
from puzzles.checking import COUNT_LABELS, COUNT_NAMES
from puzzles.grading import late_policy
from puzzles.grading.assignment import Assignment
from puzzles.grading.atomic import FileSet
from puzzles.grading.gradescope_results import (
    clean,
    results_json,
    student_row,
    verdict_lines,
)
from puzzles.grading.integrity import clean_text
from puzzles.grading.journal import Journal, outcome_of
from puzzles.grading.late_policy import Lateness
from puzzles.grading.lms_exports import LmsExports
from puzzles.grading.overrides import Overrides
from puzzles.grading.sandbox import Outcome
from puzzles.grading.similarity import Pair, ranked_pairs
from puzzles.grading.strict_json import strict_json

CSV_CELL_LIMIT = 32_767  # the most characters a spreadsheet cell holds (Excel's limit)


def write_student_files(out: Path, outcome: Outcome, assignment: Assignment) -> list[Path]:
    """What one student may see (results.json, as Gradescope's autograder writes it, and the
    feedback), each file whole or not at all. `outcome` is as the gradebook scores it (see
    `as_scored`)."""
    if outcome.submission.missing:
        return []  # nothing handed in: a gradebook row, no feedback
    sid = outcome.submission.id
    hide = [str(GRADER_ROOT)] + [str(folder) for f in outcome.submission.files
                                 for folder in (f.parent, f.parent.resolve())]
    with FileSet() as files:
        files.open(out / "feedback" / f"{sid}.md").write(feedback(outcome, assignment))
        files.open(out / "results" / sid / "results.json").write(
            strict_json(results_json(outcome, assignment, hide)))
    return files.paths


def as_scored(outcome: Outcome, assignment: Assignment, overrides: Overrides,
              lateness: Lateness | None) -> Outcome:
    """`outcome` as every output scores it: the instructor's overrides, then the late
    policy."""
    return late_policy.apply(overrides.apply(outcome), assignment, lateness)


def write_gradebook(out: Path, journal: Journal, assignment: Assignment,
                    run: dict[str, object], student_files: bool = False,
                    roster: dict[str, dict[str, str]] | None = None
                    ) -> tuple[list[Path], list[Pair]]:
    """grades.csv, grades.json, similarity.csv and the LMS exports (see `lms_exports`, with
    the `roster`'s names and ids) from the journal, the instructor's overrides (see
    `overrides`) and the late policy (each student's times as the journal recorded them, or
    as the `roster` now says, see `late_policy`), one record at a time (see
    `Journal.lines`); with `student_files`, each student's files again too (new points).
    `run` says what the last run took (seconds, CPU, memory). The files replace the old ones
    together once all are written (see `atomic`). Returns the paths written and the similar
    pairs."""
    columns, pairs = _first_pass(journal, assignment)
    overrides = Overrides.load(out)
    extended = late_policy.from_roster(roster or {}, assignment)
    written: list[Path] = []
    titles = {p.number: p.title for p in all_puzzles()}
    with FileSet() as files:
        exports = LmsExports(files, out, assignment.name,
                             sum(assignment.points_of(n) for n in columns), roster or {})
        write_similarity(files.open(out / "similarity.csv", newline=""), pairs)
        writer = csv.writer(files.open(out / "grades.csv", newline=""))
        json_file = files.open(out / "grades.json")
        writer.writerow(["student", *(f"{n} {titles[n]}{suffix}" for n in columns
                                      for suffix in ("", " status")),
                         "total", "max", "status", "notes"])
        head = {"assignment": assignment.name, "seed": journal.header.seed,
                "points": {str(n): assignment.points_of(n) for n in columns},
                "partial_credit": {"over_budget": assignment.over_budget,
                                   "warnings": assignment.warnings},
                "late_policy": {"due": _iso(assignment.due),
                                "late_penalty_per_day": assignment.late_penalty_per_day},
                "limits": {"seconds_per_puzzle": assignment.limits.seconds,
                           "seconds_per_submission": assignment.limits.submission_seconds,
                           "memory_bytes": assignment.limits.memory_bytes},
                **run}
        json_file.write(strict_json(head).rstrip()[:-1].rstrip() + ',\n  "students": [')
        for k, line in enumerate(journal.lines()):
            sid = str(line["id"])
            lateness = extended.get(sid) or Lateness.from_json(line.get("late"))
            outcome = as_scored(outcome_of(line), assignment, overrides, lateness)
            notes = list(line["notes"])  # type: ignore[call-overload]
            writer.writerow(csv_row(outcome, columns, assignment, notes))
            exports.add(sid, _score(outcome, assignment)[0])
            json_file.write(("," if k else "") + "\n" + _indented(
                {**instructor_record(outcome, assignment, notes), "late": lateness.to_json()}))
            if student_files:
                written += write_student_files(out, outcome, assignment)
        similarity = [{"student": p.first, "other": p.second, "puzzles": p.puzzles}
                      for p in pairs]
        json_file.write('\n  ],\n  "similarity": ' + _indented(similarity).lstrip() + "\n}\n")
    return files.paths + written, pairs


def _first_pass(journal: Journal, assignment: Assignment) -> tuple[list[int], list[Pair]]:
    """The gradebook's puzzle columns (the assigned ones, or every one graded for anybody)
    and the similarity pairs, from one pass over the journal."""
    graded: set[int] = set()

    def kernels() -> Iterator[tuple[str, dict[int, str]]]:
        for line in journal.lines():
            outcome = outcome_of(line)
            numbers = {row["puzzle"] for row in outcome.rows}
            graded.update(n for n in numbers if isinstance(n, int))
            if not outcome.error:
                yield outcome.submission.id, {n: text for n, text in outcome.kernels.items()
                                              if n in numbers}

    pairs = ranked_pairs(kernels(), {p.number: p.solution() for p in all_puzzles()},
                         {p.number: p.template for p in all_puzzles()})
    return (list(assignment.points) if assignment.points else sorted(graded)), pairs


def _indented(data: object) -> str:
    """`data` as strict JSON indented to sit inside grades.json's top-level object."""
    return "    " + strict_json(data).rstrip("\n").replace("\n", "\n    ")


def csv_row(outcome: Outcome, columns: list[int], assignment: Assignment,
            notes: list[str]) -> list[str]:
    """A student's grades.csv row: per puzzle its points and its status (pass, fail,
    over-budget, error, unreadable, timeout, memory-limit, crashed; or the submission's own
    status: not graded, refused, missing), then total, max, the submission's status and
    notes."""
    by_number = {row["puzzle"]: row for row in outcome.rows}
    cells = []
    for n in columns:
        row = by_number.get(n)
        cells += [f"{assignment.earned(row) if row else 0.0:g}",
                  str(row["status"]) if row else
                  (outcome.status if outcome.status != "graded" else "missing")]
    total, best = _score(outcome, assignment)
    return [_cell(outcome.submission.id), *cells, f"{total:g}", f"{best:g}", outcome.status,
            _cell("; ".join(_notes(outcome, notes)))]


def _notes(outcome: Outcome, notes: list[str]) -> list[str]:
    """What the gradebook row says besides points: the submission's own notes, why it was not
    graded, and which notebook was graded where there were several."""
    said = list(notes)
    if late_policy.note(outcome):
        said.append(late_policy.note(outcome))
    if outcome.error:
        said.append(outcome.error)
    for row in outcome.rows:
        if row.get("notice"):
            said.append(f"puzzle {row['puzzle']}: {row['notice']}")
    return said


def write_similarity(f: TextIO, pairs: list[Pair]) -> None:
    """The similarity report: one line per pair of students with identical non-trivial
    kernels, most first."""
    writer = csv.writer(f)
    writer.writerow(["rank", "student", "other", "identical", "puzzles"])
    for rank, pair in enumerate(pairs, 1):
        writer.writerow([rank, _cell(pair.first), _cell(pair.second), len(pair.puzzles),
                         " ".join(map(str, pair.puzzles))])


def instructor_record(outcome: Outcome, assignment: Assignment,
                      notes: list[str]) -> dict[str, object]:
    """A student's entry in grades.json: everything, hidden cases included."""
    total, best = _score(outcome, assignment)
    return {
        "id": outcome.submission.id,
        "files": [str(f) for f in outcome.submission.files],
        "graded": not outcome.error,
        "status": outcome.status,
        "error": clean_text(outcome.error),
        "score": total,
        "max_score": best,
        "notes": _notes(outcome, notes),
        "seconds": round(outcome.seconds, 3),
        "rows": [clean(row) for row in outcome.rows],
    }


def feedback(outcome: Outcome, assignment: Assignment) -> str:
    """A student's Markdown feedback: total, a table of verdicts, then each puzzle's details."""
    sid = outcome.submission.id
    total, best = _score(outcome, assignment)
    lines = [f"# Feedback for {sid}", ""]
    if assignment.name:
        lines += [f"Assignment: {clean_text(assignment.name)}", ""]
    if outcome.error:
        lines += ["Your submission could not be graded:", "", _fenced(outcome.error), ""]
    lines += [f"**{total:g} of {best:g} points.**", ""]
    late = late_policy.note(outcome)
    if late:
        lines += [f"{late[0].upper()}{late[1:]}.", ""]
    lines += ["| Puzzle | Status | Points | " + " | ".join(COUNT_LABELS[n] for n in COUNT_NAMES)
              + " |", "|---" * (3 + len(COUNT_NAMES)) + "|"]
    rows = [student_row(r) for r in outcome.rows]
    for graded, row in zip(outcome.rows, rows, strict=True):
        if not isinstance(row.get("puzzle"), int):
            continue
        counts, budget = row["counts"], row["budget"]
        cells = [f"{counts.get(n, 0)}" + (f" / {budget[n]}" if n in budget else "")
                 for n in COUNT_NAMES]
        lines.append(f"| {row['puzzle']} {_table_text(row['title'])} | {row['status']} | "
                     f"{assignment.earned(graded):g} / {assignment.points_of(row['puzzle']):g} | "
                     + " | ".join(cells) + " |")
    lines += ["", "Counts are the maximum per thread, with the budget after the slash.", ""]
    for row in rows:
        if row["status"] == "pass" and not row["diagnostics"] and not row.get("notice"):
            continue
        lines += [f"## Puzzle {row['puzzle']}: {_table_text(row['title'])}", "",
                  _fenced(_row_text(row)), ""]
    return "\n".join(lines)


def _row_text(row: dict[str, object]) -> str:
    text = verdict_lines(row)
    if row.get("reason"):
        text.append(f"Why: {row['reason']}")
    if row.get("diagnostics"):
        text += ["", "Diagnostics:", *map(str, row["diagnostics"])]  # type: ignore[call-overload]
    return clean_text("\n".join(text))


def _score(outcome: Outcome, assignment: Assignment) -> tuple[float, float]:
    total, best = assignment.score(outcome.rows)
    if outcome.error and not assignment.points:
        best = 0.0
    return total, best


def _cell(text: str) -> str:
    """A CSV cell a spreadsheet shows as text: no control characters, no formula, and within
    a spreadsheet's limit of characters (cut with a mark where longer)."""
    text = " ".join(clean_text(text).split())
    text = "'" + text if text[:1] in ("=", "+", "-", "@") else text
    if len(text) > CSV_CELL_LIMIT:
        mark = " [cut at the spreadsheet's cell limit]"
        text = text[: CSV_CELL_LIMIT - len(mark)] + mark
    return text


def _table_text(text: object) -> str:
    return " ".join(clean_text(str(text)).replace("|", "\\|").split())


def _fenced(text: str) -> str:
    """Text in a Markdown code block, which it cannot close early."""
    return "````text\n" + clean_text(text).replace("````", "'''") + "\n````"


def _iso(stamp: datetime | None) -> str | None:
    return stamp.isoformat() if stamp is not None else None
