"""Gradescope's autograder: a whole upload folder of several notebooks, named anyhow, scores as
batch grading does and writes the same results.json; the late policy from
submission_metadata.json and an extensions roster; hidden cases drawn for the submission id;
per-test visibility, capped output and no grader paths, all within Gradescope's documented
results format; the setup files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import nbformat
import pytest

from puzzles.grading.assignment import parse
from puzzles.grading.gradescope import (
    CONTAINER_MEMORY_BYTES,
    NO_METADATA,
    container_plan,
    read_metadata,
    run_autograder,
    write_files,
)
from puzzles.grading.gradescope_results import (
    CUT,
    MAX_TEST_OUTPUT,
    MAX_TOTAL_OUTPUT,
    results_json,
)
from puzzles.grading.intake import Submission
from puzzles.grading.sandbox import Outcome
from tests.puzzles.grading.classroom import MAP, learner, solve
from tests.puzzles.grading.schemas import GRADESCOPE_SCHEMA

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


def write_metadata(path: Path, created_at: str, submission_id: int = 1) -> Path:
    """submission_metadata.json as Gradescope documents it (the fields the grader reads)."""
    path.write_text(json.dumps({
        "id": submission_id, "created_at": created_at,
        "assignment": {"due_date": "2026-03-01T23:59:00.000000+00:00", "title": "three",
                       "late_due_date": None, "total_points": "9.0"},
        "users": [{"email": "ada@example.edu", "id": 7, "name": "Ada"}],
        "previous_submissions": []}))
    return path


def autograde(course: Path, created_at: str, name: str) -> dict:
    metadata = write_metadata(course / f"{name}.json", created_at)
    results = course / name / "results.json"
    done = subprocess.run(
        [sys.executable, "-m", "puzzles", "gradescope", "--assignment", str(course / "a.toml"),
         "--submission", str(course / "class" / "ada"), "--metadata", str(metadata),
         "--results", str(results)], cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    assert done.returncode == 0, done.stderr
    results = json.loads(results.read_text())
    jsonschema.validate(results, GRADESCOPE_SCHEMA)
    return results


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


def test_batch_grading_writes_the_autograders_results_json(course):
    """One student-facing format: the batch's results/<id>/results.json holds the same tests
    (names, scores, visibilities, outputs) as Gradescope's autograder writes."""
    batch = json.loads((course / "out" / "results" / "ada" / "results.json").read_text())
    jsonschema.validate(batch, GRADESCOPE_SCHEMA)
    results = autograde(course, "2026-03-01T20:00:00+00:00", "same")
    assert batch["tests"] == results["tests"]
    assert {k: v for k, v in batch.items() if k != "execution_time"} == \
        {k: v for k, v in results.items() if k != "execution_time"}


def test_the_submission_id_not_the_file_name_seeds_the_hidden_cases(tmp_path):
    nb = learner("01_threads.ipynb")
    solve(nb, 1, MAP)
    upload = tmp_path / "01_threads.ipynb"  # every student's upload is named alike
    nbformat.write(nb, upload)
    plan = parse({"assignment": {"seed": 4242}, "puzzles": [{"puzzle": 1}]})

    def seeds(submission_id: int) -> list[int]:
        metadata = write_metadata(tmp_path / f"m{submission_id}.json",
                                  "2026-03-01T20:00:00+00:00", submission_id)
        outcome, _ = run_autograder(upload, tmp_path / "results.json", plan, metadata)
        return [row["seed"] for row in outcome.rows]

    first = seeds(101)
    assert seeds(102) != first  # another submission, other hidden cases
    assert seeds(101) == first  # a regrade of the same submission: the same ones
    assert read_metadata(tmp_path / "m101.json").sid == "gradescope-101"


def test_missing_metadata_is_said_not_silently_shared(tmp_path, capsys):
    assert read_metadata(tmp_path / "absent.json").sid == NO_METADATA
    assert "no submission metadata" in capsys.readouterr().err


def test_an_extension_in_the_roster_lifts_the_late_penalty(tmp_path):
    nb = learner("01_threads.ipynb")
    solve(nb, 1, MAP)
    nbformat.write(nb, tmp_path / "week one.ipynb")
    plan = parse({"assignment": {"seed": 4242, "late_penalty_per_day": 0.5},
                  "puzzles": [{"puzzle": 1, "points": 2}]})
    metadata = write_metadata(tmp_path / "m.json", "2026-03-02T20:00:00+00:00")  # 1 day late
    _, late = run_autograder(tmp_path / "week one.ipynb", tmp_path / "r1.json", plan, metadata)
    assert late["score"] == 1 and "late" in late["output"]
    roster = {"ada@example.edu": {"id": "ada@example.edu", "extension_days": "2"}}
    _, extended = run_autograder(tmp_path / "week one.ipynb", tmp_path / "r2.json", plan,
                                 metadata, roster)
    assert extended["score"] == 2 and "late" not in extended["output"]


def test_one_notebook_with_gradescope_uses_the_metadata(tmp_path):
    nb = learner("01_threads.ipynb")
    solve(nb, 1, MAP)
    nbformat.write(nb, tmp_path / "01_threads.ipynb")
    (tmp_path / "a.toml").write_text(TOML)
    metadata = write_metadata(tmp_path / "m.json", "2026-03-03T08:00:00+00:00")  # 2 days late
    done = subprocess.run(
        [sys.executable, "-m", "puzzles", "grade", str(tmp_path / "01_threads.ipynb"),
         "--assignment", str(tmp_path / "a.toml"), "--puzzle", "1", "--gradescope",
         str(tmp_path / "results.json"), "--metadata", str(metadata)], cwd=ROOT,
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=600)
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "results.json").read_text())
    jsonschema.validate(results, GRADESCOPE_SCHEMA)
    assert results["score"] == 2 * 0.5 and "late" in results["output"]


def test_outputs_are_capped():
    row = {"puzzle": 1, "title": "Map", "status": "fail", "reason": "x" * 50_000,
           "counts": {}, "budget": {}, "diagnostics": ["d" * 100] * 500, "cases": []}
    outcome = Outcome(Submission("s", ()), [row] * 40)
    results = results_json(outcome, parse({"puzzles": [{"puzzle": 1}]}))
    jsonschema.validate(results, GRADESCOPE_SCHEMA)
    assert results["output_format"] == "text"  # a kernel's text is never rendered as HTML
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
    assert "--roster /autograder/source/extensions.csv" in text
    check = subprocess.run(["bash", "-n", str(run)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    assert "requirements.txt" in setup.read_text()
