"""Gradescope's autograder: a whole upload folder of several notebooks, named anyhow, scores as
batch grading does; the late policy from submission_metadata.json; per-test visibility,
capped output and no grader paths; the setup files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from puzzles.grading.assignment import parse
from puzzles.grading.gradescope import CONTAINER_MEMORY_BYTES, container_plan, write_files
from puzzles.grading.gradescope_results import (
    CUT,
    MAX_TEST_OUTPUT,
    MAX_TOTAL_OUTPUT,
    results_json,
)
from puzzles.grading.intake import Submission
from puzzles.grading.sandbox import Outcome
from tests.puzzles.grading.classroom import MAP, learner, solve

ROOT = Path(__file__).resolve().parents[3]
TOML = """\
[assignment]
name = "three chapters"
seed = 31337
due = 2026-03-01T23:59:00Z
late_penalty_per_day = 0.25

[[puzzles]]
puzzle = 1
points = 2

[[puzzles]]
puzzle = 8
points = 3

[[puzzles]]
puzzle = 12
points = 4
"""
ODD_NAMES = {"01_threads.ipynb": "my work (final).ipynb",
             "02_threadgroup_memory.ipynb": "ch2-v3.ipynb",
             "03_reductions.ipynb": "Untitled1.ipynb"}


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """One student's three notebooks under odd names: Map right, puzzle 8 right, 12 left."""
    root = tmp_path_factory.mktemp("gradescope")
    upload = root / "class" / "ada"
    upload.mkdir(parents=True)
    one, two, three = (learner(name) for name in ODD_NAMES)
    solve(one, 1, MAP)
    solve(two, 8)
    for nb, name in zip((one, two, three), ODD_NAMES.values(), strict=True):
        nbformat.write(nb, upload / name)
    (root / "a.toml").write_text(TOML)
    batch = subprocess.run(
        [sys.executable, "-m", "puzzles", "grade", str(root / "class"), "--assignment",
         str(root / "a.toml"), "--out", str(root / "out")], cwd=ROOT, capture_output=True,
        text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    assert batch.returncode == 0, batch.stderr
    return root


def autograde(course: Path, created_at: str, name: str) -> dict:
    metadata = course / f"{name}.json"
    metadata.write_text(json.dumps({
        "id": 1, "created_at": created_at,
        "assignment": {"due_date": "2026-03-01T23:59:00.000000+00:00", "title": "three"},
        "users": [{"email": "ada@example.edu", "id": 7, "name": "Ada"}]}))
    results = course / name / "results.json"
    done = subprocess.run(
        [sys.executable, "-m", "puzzles", "gradescope", "--assignment", str(course / "a.toml"),
         "--submission", str(course / "class" / "ada"), "--metadata", str(metadata),
         "--results", str(results)], cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(results.read_text())


def test_a_three_notebook_upload_with_odd_names_scores_as_batch_grading(course):
    batch = json.loads((course / "out" / "grades.json").read_text())["students"][0]
    results = autograde(course, "2026-03-01T20:00:00+00:00", "on-time")
    assert batch["score"] == 5 and results["score"] == batch["score"]
    scored = {t["name"]: t["score"] for t in results["tests"] if t["max_score"]}
    assert scored == {"Puzzle 1: Map": 2, "Puzzle 8: Threadgroup Memory": 3,
                      "Puzzle 12: Block Sum": 0}
    assert sum(t["max_score"] for t in results["tests"]) == 9


def test_a_late_upload_loses_the_penalty_per_started_day(course):
    results = autograde(course, "2026-03-03T08:00:00+00:00", "late")  # 1 day 8 h late: 2 days
    assert results["score"] == pytest.approx(5 * 0.5)
    assert "late" in results["output"]


def test_details_follow_the_assignments_visibility_and_carry_no_grader_path(course):
    results = autograde(course, "2026-03-01T20:00:00+00:00", "details")
    details = [t for t in results["tests"] if t["name"].endswith("(details)")]
    assert len(details) == 3 and {t["visibility"] for t in details} == {"after_due_date"}
    text = json.dumps(results)
    assert str(course) not in text and str(ROOT) not in text


def test_outputs_are_capped():
    row = {"puzzle": 1, "title": "Map", "status": "fail", "reason": "x" * 50_000,
           "counts": {}, "budget": {}, "diagnostics": ["d" * 100] * 500, "cases": []}
    outcome = Outcome(Submission("s", ()), [row] * 40)
    results = results_json(outcome, parse({"puzzles": [{"puzzle": 1}]}))
    assert all(len(t["output"]) <= MAX_TEST_OUTPUT for t in results["tests"])
    marks = len(results["tests"]) * len(CUT)  # once the total is spent, each says it was cut
    assert sum(len(t["output"]) for t in results["tests"]) <= MAX_TOTAL_OUTPUT + marks
    assert results["tests"][-1]["output"] == CUT.lstrip("\n")


def test_the_container_limits_fit_gradescopes_default_container():
    plan = container_plan(parse({}))
    assert plan.limits.memory_bytes == CONTAINER_MEMORY_BYTES < 768 * 10**6
    assert plan.limits.submission_seconds < 600


def test_the_setup_files_call_the_grader_on_the_upload_folder(tmp_path):
    setup, run = write_files(tmp_path, "week1.toml")
    assert os.access(run, os.X_OK) and os.access(setup, os.X_OK)
    text = run.read_text()
    assert "-m puzzles gradescope --assignment /autograder/source/week1.toml" in text
    assert "--submission /autograder/submission" in text
    assert "requirements.txt" in setup.read_text()
