"""Gradescope's autograder: one container per submission (768 MB and 10 minutes by default).
`python -m puzzles gradescope` grades the whole upload folder as one submission (notebooks are
found by what their cells build, whatever they were named), applies the late policy from
`submission_metadata.json`, and writes `results/results.json`; `gradescope-files DIR` writes
the `setup.sh` and `run_autograder` that install and call it.

Each puzzle is two tests: its score and verdict (visible), and the details of its checks
(diagnostics, hidden cases by kind and line only) with the assignment's `hidden_visibility`
(`after_due_date` by default), so a student cannot probe the hidden cases before the due date.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from puzzles.checking import COUNT_LABELS, COUNT_NAMES
from puzzles.grading.assignment import Assignment
from puzzles.grading.batch import grade_all
from puzzles.grading.intake import folder_submission
from puzzles.grading.integrity import clean_text
from puzzles.grading.outputs import student_row
from puzzles.grading.sandbox import Outcome
from puzzles.grading.strict_json import strict_json

# What fits Gradescope's default container (768 MB, 10 minutes) with room for Python itself
# and for setting the container up: the assignment's limits are lowered to these.
CONTAINER_MEMORY_BYTES = 512 << 20
CONTAINER_SECONDS = 480.0
MAX_TEST_OUTPUT = 4_000     # characters of one test's output
MAX_TOTAL_OUTPUT = 60_000   # characters of all outputs together
CUT = "\n[... cut: the grader's output limit]"


def container_plan(plan: Assignment) -> Assignment:
    """`plan` with limits that fit the default container."""
    limits = replace(plan.limits,
                     memory_bytes=min(plan.limits.memory_bytes, CONTAINER_MEMORY_BYTES),
                     submission_seconds=min(plan.limits.submission_seconds, CONTAINER_SECONDS))
    return replace(plan, limits=limits)


def read_metadata(path: Path) -> tuple[str, datetime | None, datetime | None]:
    """(student id, submission time, due date) from submission_metadata.json: the id is the
    first user's email (else "submission"); the due date is the one Gradescope applies to
    this student (extensions included). Missing or unreadable: ("submission", None, None)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "submission", None, None
    users = data.get("users") or [{}]
    sid = str(users[0].get("email") or users[0].get("id") or "submission")
    due = (data.get("assignment") or {}).get("due_date")
    return sid, _time(data.get("created_at")), _time(due)


def _time(text: object) -> datetime | None:
    try:
        stamp = datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return stamp if stamp.tzinfo is not None else None


def run_autograder(submission: Path, results: Path, plan: Assignment,
                   metadata: Path | None = None) -> dict[str, object]:
    """Grade the folder `submission` and write Gradescope's results.json to `results`."""
    sid, submitted, due = read_metadata(metadata) if metadata else ("submission", None, None)
    plan = container_plan(plan.with_seed())
    outcome, = grade_all([folder_submission(submission, sid)], plan,
                         progress=lambda _line: None).outcomes
    data = results_json(outcome, plan, plan.late_factor(submitted, due),
                         hide=[str(submission.resolve()), str(submission),
                               str(Path(__file__).resolve().parents[2])])
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(strict_json(data), encoding="utf-8")
    return data


def results_json(outcome: Outcome, plan: Assignment, late_factor: float = 1.0,
                 hide: list[str] | None = None) -> dict[str, object]:
    """Gradescope's results.json for one outcome: per puzzle a scored, visible test and a
    details test (`plan.hidden_visibility`); the late factor applied to every score; outputs
    capped; the paths in `hide` never shown."""
    budget = [MAX_TOTAL_OUTPUT]

    def text(value: str) -> str:
        for path in sorted(hide or [], key=len, reverse=True):
            value = value.replace(path + "/", "").replace(path, "")
        value = clean_text(value)
        limit = min(MAX_TEST_OUTPUT, max(budget[0], 0))
        if len(value) > limit:
            value = (value[: limit - len(CUT)] + CUT) if limit > len(CUT) else CUT.lstrip("\n")
        budget[0] -= len(value)
        return value

    tests: list[dict[str, object]] = []
    for row in map(student_row, outcome.rows):
        number = row.get("puzzle")
        if not isinstance(number, int):
            continue
        name = f"Puzzle {number}: {row['title']}"
        counts, limits = row["counts"], row["budget"]
        verdict = [f"Status: {row['status']}"]
        if row.get("notice"):
            verdict.append(f"Note: {row['notice']}")
        verdict.append("Max per thread: " + ", ".join(
            f"{COUNT_LABELS[n].lower()} {counts.get(n, 0)}"
            + (f" (budget {limits[n]})" if n in limits else "") for n in COUNT_NAMES))
        details = ([f"Why: {row['reason']}"] if row.get("reason") else []) + [
            str(d) for d in row.get("diagnostics") or []]
        tests.append({"name": name, "score": round(plan.earned(row) * late_factor, 4),
                      "max_score": plan.points_of(number), "status":
                      "passed" if row["status"] == "pass" else "failed",
                      "output": text("\n".join(verdict)), "visibility": "visible"})
        tests.append({"name": f"{name} (details)", "score": 0, "max_score": 0,
                      "output": text("\n".join(details) or "No diagnostics."),
                      "visibility": plan.hidden_visibility})
    total = round(sum(float(t["score"]) for t in tests), 4)
    best = sum(float(t["max_score"]) for t in tests)
    summary = (f"Could not be graded: {outcome.error}" if outcome.error else
               f"{total:g} of {best:g} points.")
    if late_factor < 1.0:
        summary += f" Submitted late: scores multiplied by {late_factor:g} (the late policy)."
    return {"score": total, "execution_time": round(outcome.seconds, 3),
            "output": text(summary), "visibility": "visible",
            "stdout_visibility": "hidden", "tests": tests}


SETUP_SH = """\
#!/usr/bin/env bash
# Gradescope runs this once when it builds the autograder image.
set -euo pipefail
apt-get update && apt-get install -y python3 python3-pip python3-venv
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install -r /autograder/source/requirements.txt
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope runs this for every submission: grade the upload folder as one submission.
set -uo pipefail
cd /autograder/source
/autograder/venv/bin/python -m puzzles gradescope --assignment /autograder/source/{assignment} \\
    --submission /autograder/submission --metadata /autograder/submission_metadata.json \\
    --results /autograder/results/results.json
"""


def write_files(out: Path, assignment_name: str) -> list[Path]:
    """setup.sh and run_autograder for an autograder zip (with this repository and the
    assignment file `assignment_name` at its root)."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in (("setup.sh", SETUP_SH),
                       ("run_autograder", RUN_AUTOGRADER.format(assignment=assignment_name))):
        path = out / name
        path.write_text(text, encoding="utf-8")
        path.chmod(0o755)
        written.append(path)
    return written
