"""PrairieLearn's external grader: one container per submission, CPU only, no network, 30 s by
default. `python -m puzzles prairielearn --assignment A.toml --timeout T` reads the job
PrairieLearn lays out under /grade (the student's files in /grade/student/, the question's
data in /grade/data/data.json) and writes /grade/results/results.json as PrairieLearn's
external grading documents it: `gradable`, `score` (0 to 1), `message`, `output`, one test per
puzzle (`name`, `description`, `points`, `max_points`, `message`, `output`: both points on
every test, which PrairieLearn needs for its per-test display), and `format_errors` where the
submission could not be graded; the tests are built from the Gradescope results (see
`gradescope_results`), so they show what a student may see of hidden cases only.

A question's info.json points PrairieLearn at it (the entrypoint must start with an absolute
path; `--timeout` repeats the job's timeout, at most 600 s, so the submission's budget ends
before PrairieLearn kills the job):

    "gradingMethod": "External",
    "externalGradingOptions": {
        "enabled": true,
        "image": "<an image with this repository in /opt/metal-puzzles and its requirements>",
        "entrypoint": "/usr/local/bin/python3 -m puzzles prairielearn --assignment
                       /grade/tests/assignment.toml --timeout 60",
        "environment": {"PYTHONPATH": "/opt/metal-puzzles"},
        "timeout": 60
    }

The hidden cases are drawn for the question variant (`variant_seed`). Late policy is
PrairieLearn's own (its access rules' credit), so none is applied here.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from puzzles.catalog import ROOT as GRADER_ROOT
from puzzles.grading.assignment import Assignment
from puzzles.grading.atomic import write_text
from puzzles.grading.batch import grade_all
from puzzles.grading.gradescope_results import results_json
from puzzles.grading.intake import folder_submission
from puzzles.grading.sandbox import Outcome
from puzzles.grading.strict_json import strict_json

GRADE = Path("/grade")
STARTUP_SECONDS = 5.0  # of the job's timeout, left for Python and the grader to start


def job_plan(plan: Assignment, timeout: float) -> Assignment:
    """`plan` with a submission budget inside the job's timeout."""
    seconds = max(timeout - STARTUP_SECONDS, 1.0)
    limits = replace(plan.limits,
                     submission_seconds=min(plan.limits.submission_seconds, seconds),
                     seconds=min(plan.limits.seconds, seconds))
    return replace(plan, limits=limits)


def grade_job(plan: Assignment, root: Path = GRADE, timeout: float = 30.0) -> dict[str, object]:
    """Grade the job under `root` and write its results.json; return what was written."""
    data = _data(root / "data" / "data.json")
    sid = str(data.get("variant_seed") or "submission")
    plan = job_plan(plan.with_seed(), timeout)
    outcome, = grade_all([folder_submission(root / "student", sid)], plan,
                         progress=lambda _line: None).outcomes
    results = job_results(outcome, plan, hide=[str((root / "student").resolve()),
                                               str(root / "student"), str(GRADER_ROOT)])
    write_text(results_path(root), strict_json(results))
    return results


def results_path(root: Path = GRADE) -> Path:
    """Where the job's results.json goes."""
    return root / "results" / "results.json"


def job_results(outcome: Outcome, plan: Assignment, hide: list[str]) -> dict[str, object]:
    """PrairieLearn's results for one outcome: one test per puzzle, its verdict and its
    details (the Gradescope results' two tests of the puzzle) together."""
    scope = results_json(outcome, plan, hide)
    pairs = zip(scope["tests"][::2], scope["tests"][1::2], strict=True)  # type: ignore[index]
    tests = [{"name": score["name"], "description": "score and verdict",
              "points": score["score"], "max_points": score["max_score"],
              "message": "passed" if score["status"] == "passed" else "not passed",
              "output": f"{score['output']}\n{details['output']}"}
             for score, details in pairs]
    best = sum(float(t["max_points"]) for t in tests)
    results: dict[str, object] = {
        "gradable": not outcome.error,
        "score": round(float(scope["score"]) / best, 6) if best and not outcome.error else 0.0,
        "message": scope["output"],
        "output": "",
        "tests": tests,
    }
    if outcome.error:
        results["format_errors"] = [scope["output"]]
    return results


def _data(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
