"""Gradescope's results.json for one submission: the one file a student's results take in every
mode (a batch's `results/<id>/results.json`, Gradescope's autograder, and PrairieLearn's
results, built from it), so they all show the same tests, visibilities and limits.

Each puzzle is two tests: its score and verdict (`visible`), and the details of its checks
(diagnostics, hidden cases by kind and line only, see `disclosure`) with the assignment's
`hidden_visibility` (`after_due_date` by default), so a student cannot probe the hidden cases
before the due date. Outputs are capped, plain text (`output_format` "text": Gradescope
renders the top-level output as HTML otherwise), and never show the paths in `hide`.
"""

from __future__ import annotations

from puzzles.checking import COUNT_LABELS, COUNT_NAMES
from puzzles.grading.assignment import Assignment
from puzzles.grading.disclosure import student_view
from puzzles.grading.integrity import clean_text
from puzzles.grading.late_policy import note
from puzzles.grading.sandbox import Outcome

MAX_TEST_OUTPUT = 4_000     # characters of one test's output
MAX_TOTAL_OUTPUT = 60_000   # characters of all outputs together
CUT = "\n[... cut: the grader's output limit]"


def student_row(row: dict[str, object]) -> dict[str, object]:
    """A row as a student may see it, its text cleaned."""
    return {key: clean(value) for key, value in student_view(row).items()}


def clean(value: object) -> object:
    """`value` with every string in it stripped of control characters."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [clean(v) for v in value]
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    return value


def verdict_lines(row: dict[str, object]) -> list[str]:
    """A student row's status, note and counts against the budget."""
    lines = [f"Status: {row['status']}"]
    if row.get("notice"):
        lines.append(f"Note: {row['notice']}")
    counts, budget = row.get("counts") or {}, row.get("budget") or {}
    lines.append("Max per thread: " + ", ".join(
        f"{COUNT_LABELS[n].lower()} {counts.get(n, 0)}"  # type: ignore[union-attr]
        + (f" (budget {budget[n]})" if n in budget else "") for n in COUNT_NAMES))
    return lines


def detail_lines(row: dict[str, object]) -> list[str]:
    """A student row's reason and diagnostics."""
    return ([f"Why: {row['reason']}"] if row.get("reason") else []) + [
        str(d) for d in row.get("diagnostics") or []]  # type: ignore[union-attr]


def results_json(outcome: Outcome, plan: Assignment,
                 hide: list[str] | None = None) -> dict[str, object]:
    """Gradescope's results.json for one outcome (late rows already carry their factor, see
    `late_policy.apply`)."""
    budget = [MAX_TOTAL_OUTPUT]

    def text(value: str) -> str:
        for path in sorted(filter(None, hide or []), key=len, reverse=True):
            value = value.replace(path + "/", "").replace(path, "")
        value = clean_text(value)
        limit = min(MAX_TEST_OUTPUT, max(budget[0], 0))
        if len(value) > limit:
            value = (value[: limit - len(CUT)] + CUT) if limit > len(CUT) else CUT.lstrip("\n")
        budget[0] -= len(value)
        return value

    tests: list[dict[str, object]] = []
    for graded in outcome.rows:
        number, row = graded.get("puzzle"), student_row(graded)
        if not isinstance(number, int):
            continue
        name = f"Puzzle {number}: {row['title']}"
        tests.append({"name": name, "score": plan.earned(graded),  # overrides, late policy
                      "max_score": plan.points_of(number), "status":
                      "passed" if row["status"] == "pass" else "failed",
                      "output": text("\n".join(verdict_lines(row))), "visibility": "visible"})
        tests.append({"name": f"{name} (details)", "score": 0, "max_score": 0,
                      "output": text("\n".join(detail_lines(row)) or "No diagnostics."),
                      "visibility": plan.hidden_visibility})
    total = round(sum(float(t["score"]) for t in tests), 6)  # type: ignore[arg-type]
    best = sum(float(t["max_score"]) for t in tests)  # type: ignore[arg-type]
    summary = (f"Could not be graded: {outcome.error}" if outcome.error else
               f"{total:g} of {best:g} points.")
    late = note(outcome)
    if late:
        summary += f" {late[0].upper()}{late[1:]}."
    return {"score": total, "execution_time": round(outcome.seconds, 3),
            "output": text(summary), "output_format": "text", "visibility": "visible",
            "stdout_visibility": "hidden", "tests": tests}
