"""PrairieLearn's external grader: the job layout (/grade/student, /grade/data/data.json) in,
/grade/results/results.json out, validated against the fields PrairieLearn documents for
external graders' results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import nbformat

from puzzles.grading.assignment import parse
from puzzles.grading.intake import Submission
from puzzles.grading.prairielearn import STARTUP_SECONDS, job_plan, job_results
from puzzles.grading.sandbox import Outcome
from tests.puzzles.grading.classroom import MAP, learner, solve
from tests.puzzles.grading.schemas import PRAIRIELEARN_MAX_BYTES, PRAIRIELEARN_SCHEMA

ROOT = Path(__file__).resolve().parents[3]
TOML = "[assignment]\nseed = 5150\n\n[[puzzles]]\npuzzle = 1\npoints = 2\n\n" \
       "[[puzzles]]\npuzzle = 8\npoints = 3\n"


def run_job(tmp_path: Path, notebooks: dict[str, nbformat.NotebookNode]) -> tuple[dict, str]:
    root = tmp_path / "grade"
    (root / "student").mkdir(parents=True)
    (root / "data").mkdir()
    (root / "data" / "data.json").write_text(json.dumps(
        {"params": {}, "correct_answers": {}, "submitted_answers": {}, "variant_seed": 811}))
    for name, nb in notebooks.items():
        nbformat.write(nb, root / "student" / name)
    (tmp_path / "a.toml").write_text(TOML)
    done = subprocess.run(
        [sys.executable, "-m", "puzzles", "prairielearn", "--assignment", str(tmp_path / "a.toml"),
         "--root", str(root)], cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads((root / "results" / "results.json").read_text()), str(root)


def test_a_job_writes_results_that_follow_prairielearns_schema(tmp_path):
    one, two = learner("01_threads.ipynb"), learner("02_threadgroup_memory.ipynb")
    solve(one, 1, MAP)
    results, root = run_job(tmp_path, {"a.ipynb": one, "second try.ipynb": two})
    jsonschema.validate(results, PRAIRIELEARN_SCHEMA)
    assert results["gradable"] is True
    assert results["score"] == 2 / 5
    assert [(t["name"], t["points"], t["max_points"]) for t in results["tests"]] == [
        ("Puzzle 1: Map", 2, 2), ("Puzzle 8: Threadgroup Memory", 0, 3)]
    assert root not in json.dumps(results)


def test_a_job_without_notebooks_is_not_gradable(tmp_path):
    results, _ = run_job(tmp_path, {})
    jsonschema.validate(results, PRAIRIELEARN_SCHEMA)
    assert results["gradable"] is False and results["score"] == 0
    assert "Could not be graded" in results["message"]
    assert results["format_errors"] == [results["message"]]  # what PrairieLearn shows


def test_the_budget_fits_inside_the_jobs_timeout():
    plan = job_plan(parse({}), 30.0)
    assert plan.limits.submission_seconds == 30.0 - STARTUP_SECONDS
    assert plan.limits.seconds <= plan.limits.submission_seconds


def test_the_tests_pair_each_puzzles_verdict_with_its_details_and_carry_both_points():
    rows = [{"puzzle": n, "title": t, "status": s, "reason": "why", "counts": {},
             "budget": {}, "diagnostics": ["hidden case 1: error: race (line 3): threads"]}
            for n, t, s in ((1, "Map", "pass"), (2, "Zip", "fail"))]
    plan = parse({"puzzles": [{"puzzle": 1, "points": 0}, {"puzzle": 2, "points": 4}]})
    results = job_results(Outcome(Submission("s", ()), rows), plan, hide=[])
    jsonschema.validate(results, PRAIRIELEARN_SCHEMA)
    assert [(t["name"], t["points"], t["max_points"]) for t in results["tests"]] == [
        ("Puzzle 1: Map", 0, 0), ("Puzzle 2: Zip", 0, 4)]  # a 0-point puzzle keeps its test
    assert all("race (line 3)" in t["output"] for t in results["tests"])


def test_the_largest_results_stay_under_prairielearns_one_megabyte():
    row = {"puzzle": 1, "title": "Map", "status": "fail", "reason": "x" * 50_000,
           "counts": {}, "budget": {}, "diagnostics": ["d" * 100] * 5_000}
    results = job_results(Outcome(Submission("s", ()), [row] * 17),
                          parse({"puzzles": [{"puzzle": 1}]}), hide=[])
    jsonschema.validate(results, PRAIRIELEARN_SCHEMA)
    assert len(json.dumps(results).encode()) < PRAIRIELEARN_MAX_BYTES
