"""What a batch writes: the gradebook for the instructor, and what each student may see.

    OUT/grades.csv                 one row per student: points per puzzle, total, max, flags
    OUT/grades.json                everything, for the instructor only (hidden cases included)
    OUT/results/<id>/results.json  Gradescope's autograder results format
    OUT/feedback/<id>.md           verdicts, counts and diagnostics, per student

Student-facing files are built from `student_view(row)`, which keeps the verdict, the counts,
the budget and the diagnostics, and never a case (no hidden input, no expected output).
All text is stripped of control characters.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from puzzles.catalog import all_puzzles
from puzzles.checking import COUNT_LABELS, COUNT_NAMES
from puzzles.grading.assignment import Assignment
from puzzles.grading.batch import BatchResult
from puzzles.grading.integrity import clean_text
from puzzles.grading.sandbox import Outcome

STUDENT_FIELDS = ("puzzle", "title", "status", "reason", "counts", "budget", "diagnostics",
                  "note", "warnings")


def write_all(out: Path, result: BatchResult, assignment: Assignment,
              flags: dict[str, list[str]]) -> list[Path]:
    """Write every output under `out`; return the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = [write_csv(out / "grades.csv", result, assignment, flags),
               write_instructor_json(out / "grades.json", result, assignment, flags)]
    for outcome in result.outcomes:
        sid = outcome.submission.id
        written.append(_write_json(out / "results" / sid / "results.json",
                                   gradescope(outcome, assignment)))
        path = out / "feedback" / f"{sid}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(feedback(outcome, assignment), encoding="utf-8")
        written.append(path)
    return written


def puzzle_columns(result: BatchResult, assignment: Assignment) -> list[int]:
    """The puzzles of the gradebook: the assigned ones, or every one graded for anybody."""
    if assignment.points:
        return list(assignment.points)
    graded = {int(row["puzzle"]) for o in result.outcomes for row in o.rows
              if isinstance(row.get("puzzle"), int)}
    return sorted(graded)


def write_csv(path: Path, result: BatchResult, assignment: Assignment,
              flags: dict[str, list[str]]) -> Path:
    columns = puzzle_columns(result, assignment)
    titles = {p.number: p.title for p in all_puzzles()}
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["student", *(f"{n} {titles[n]}" for n in columns), "total", "max",
                         "graded", "flags"])
        for outcome in result.outcomes:
            by_number = {row["puzzle"]: row for row in outcome.rows}
            points = [assignment.earned(by_number[n]) if n in by_number else 0.0
                      for n in columns]
            total, best = _score(outcome, assignment)
            writer.writerow([_cell(outcome.submission.id), *(f"{p:g}" for p in points),
                             f"{total:g}", f"{best:g}",
                             "no" if outcome.error else "yes",
                             _cell("; ".join(flags.get(outcome.submission.id, []) +
                                             ([outcome.error] if outcome.error else [])))])
    return path


def write_instructor_json(path: Path, result: BatchResult, assignment: Assignment,
                          flags: dict[str, list[str]]) -> Path:
    columns = puzzle_columns(result, assignment)
    students = []
    for outcome in result.outcomes:
        total, best = _score(outcome, assignment)
        students.append({
            "id": outcome.submission.id,
            "files": [str(f) for f in outcome.submission.files],
            "graded": not outcome.error,
            "error": clean_text(outcome.error),
            "score": total,
            "max_score": best,
            "flags": flags.get(outcome.submission.id, []),
            "seconds": round(outcome.seconds, 3),
            "rows": [_clean(row) for row in outcome.rows],
        })
    return _write_json(path, {
        "assignment": assignment.name,
        "seed": result.seed,
        "points": {str(n): assignment.points_of(n) for n in columns},
        "partial_credit": {"over_budget": assignment.over_budget,
                           "warnings": assignment.warnings},
        "limits": {"seconds_per_puzzle": assignment.limits.seconds,
                   "memory_bytes": assignment.limits.memory_bytes},
        "seconds": round(result.seconds, 3),
        "peak_memory_bytes": result.peak_memory_bytes,
        "cpu_seconds": round(result.cpu_seconds, 2),
        "students": students,
    })


def student_view(row: dict[str, object]) -> dict[str, object]:
    """What a student may see of a row: no cases, so no hidden input or expected output."""
    return {key: _clean(row[key]) for key in STUDENT_FIELDS if key in row}


def gradescope(outcome: Outcome, assignment: Assignment) -> dict[str, object]:
    """Gradescope's results.json: `score`, and per puzzle a test with `name`, `score`,
    `max_score`, `status`, `output` and `visibility`."""
    tests = []
    for row in map(student_view, outcome.rows):
        number = row.get("puzzle")
        if not isinstance(number, int):
            continue
        earned = assignment.earned(row)
        best = assignment.points_of(number)
        tests.append({
            "name": f"Puzzle {number}: {row['title']}",
            "score": earned,
            "max_score": best,
            "status": "passed" if row["status"] == "pass" else "failed",
            "output": _row_text(row),
            "visibility": "visible",
        })
    total = sum(t["score"] for t in tests)
    output = (f"Could not be graded: {clean_text(outcome.error)}" if outcome.error else
              f"{total:g} of {sum(t['max_score'] for t in tests):g} points.")
    return {"score": total, "execution_time": round(outcome.seconds, 3), "output": output,
            "visibility": "visible", "stdout_visibility": "hidden", "tests": tests}


def feedback(outcome: Outcome, assignment: Assignment) -> str:
    """A student's Markdown feedback: total, a table of verdicts, then each puzzle's details."""
    sid = outcome.submission.id
    total, best = _score(outcome, assignment)
    lines = [f"# Feedback for {sid}", ""]
    if assignment.name:
        lines += [f"Assignment: {clean_text(assignment.name)}", ""]
    if outcome.error:
        lines += ["Your submission could not be graded:", "", _fenced(outcome.error), ""]
    lines += [f"**{total:g} of {best:g} points.**", "",
              "| Puzzle | Status | Points | " + " | ".join(COUNT_LABELS[n] for n in COUNT_NAMES)
              + " |", "|---" * (3 + len(COUNT_NAMES)) + "|"]
    rows = [student_view(r) for r in outcome.rows]
    for row in rows:
        if not isinstance(row.get("puzzle"), int):
            continue
        counts, budget = row["counts"], row["budget"]
        cells = [f"{counts.get(n, 0)}" + (f" / {budget[n]}" if n in budget else "")
                 for n in COUNT_NAMES]
        lines.append(f"| {row['puzzle']} {_table_text(row['title'])} | {row['status']} | "
                     f"{assignment.earned(row):g} / {assignment.points_of(row['puzzle']):g} | "
                     + " | ".join(cells) + " |")
    lines += ["", "Counts are the maximum per thread, with the budget after the slash.", ""]
    for row in rows:
        if row["status"] == "pass" and not row["diagnostics"]:
            continue
        lines += [f"## Puzzle {row['puzzle']}: {_table_text(row['title'])}", "",
                  _fenced(_row_text(row)), ""]
    return "\n".join(lines)


def _row_text(row: dict[str, object]) -> str:
    text = [f"Status: {row['status']}"]
    if row.get("reason"):
        text.append(f"Why: {row['reason']}")
    counts, budget = row["counts"], row["budget"]
    text.append("Max per thread: " + ", ".join(
        f"{COUNT_LABELS[n].lower()} {counts.get(n, 0)}"
        + (f" (budget {budget[n]})" if n in budget else "") for n in COUNT_NAMES))
    if row.get("diagnostics"):
        text += ["", "Diagnostics:", *row["diagnostics"]]
    return clean_text("\n".join(map(str, text)))


def _score(outcome: Outcome, assignment: Assignment) -> tuple[float, float]:
    total, best = assignment.score(outcome.rows)
    if outcome.error and not assignment.points:
        best = 0.0
    return total, best


def _clean(value: object) -> object:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    return value


def _cell(text: str) -> str:
    """A CSV cell a spreadsheet shows as text: no control characters, no formula."""
    text = " ".join(clean_text(text).split())
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def _table_text(text: object) -> str:
    return " ".join(clean_text(str(text)).replace("|", "\\|").split())


def _fenced(text: str) -> str:
    """Text in a Markdown code block, which it cannot close early."""
    return "````text\n" + clean_text(text).replace("````", "'''") + "\n````"


def _write_json(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
