"""A whole generated class graded by one command with `--jobs 2`: every submission gets the
status it must, every attack ends as a limit or error status within its limit, the outputs
are valid and leak no hidden case, and the process tree stays small.

The class is graded once (a module fixture); each test reads what that run wrote.
"""

from __future__ import annotations

import csv
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from classroom import ASSIGNMENT_TOML, ATTACK_STATUSES, write_class

from puzzles.catalog import ROOT
from tests.puzzles.grading.schemas import GRADESCOPE_SCHEMA

PLANTED = Path("/tmp/planted-by-a-student")

@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Write the class, grade it in one command, and keep what came out."""
    root = tmp_path_factory.mktemp("class")
    expected = write_class(root / "submissions")
    (root / "assignment.toml").write_text(ASSIGNMENT_TOML)
    PLANTED.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "puzzles", "grade", str(root / "submissions"),
         "--assignment", str(root / "assignment.toml"), "--out", str(root / "out"),
         "--jobs", "2"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    seconds = time.monotonic() - started
    largest_process = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    report = json.loads((root / "out" / "grades.json").read_text())
    print(f"\ngraded {len(expected)} submissions in {seconds:.1f} s (grader's own count "
          f"{report['seconds']:.1f} s); process tree peak <= "
          f"{report['peak_memory_bytes'] / 2**20:.0f} MiB; largest process "
          f"{largest_process / 2**20:.0f} MiB")
    return {"expected": expected, "done": done, "seconds": seconds, "out": root / "out",
            "report": report, "largest_process": largest_process}


def students(graded) -> dict[str, dict]:
    return {s["id"]: s for s in graded["report"]["students"]}


def test_the_class_is_large_and_grades_in_one_command(graded):
    assert len(graded["expected"]) >= 30
    assert graded["done"].returncode == 2  # some submissions could not be graded
    assert set(students(graded)) == set(graded["expected"])
    # The issue asks for under 60 s on 2 cores; other jobs share this machine, so the test
    # allows more and the benchmark (benchmarks/bench_grader.py) quotes the number.
    assert graded["seconds"] < 240


def test_every_submission_gets_its_status_and_points(graded):
    by_id = students(graded)
    for sid, expect in graded["expected"].items():
        student = by_id[sid]
        assert student["graded"] == expect.graded, (sid, student["error"])
        if not expect.graded:
            assert expect.reason in student["error"], (sid, student["error"])
            continue
        rows = {row["puzzle"]: row for row in student["rows"]}
        for number, statuses in expect.statuses.items():
            assert rows[number]["status"] in statuses, (sid, rows[number])
        if expect.points is not None:
            assert student["score"] == expect.points, (sid, student["rows"])
        if expect.reason:
            assert expect.reason in rows[1]["reason"], (sid, rows[1]["reason"])


def test_every_attack_ends_as_a_limit_or_error_status_within_its_limit(graded):
    by_id = students(graded)
    limit = graded["report"]["limits"]["seconds_per_puzzle"]
    attacks = [sid for sid, e in graded["expected"].items() if e.attack]
    assert len(attacks) >= 15
    for sid in attacks:
        student = by_id[sid]
        statuses = {row["status"] for row in student["rows"] if row["puzzle"] == 1}
        assert not student["graded"] or statuses <= ATTACK_STATUSES | {"fail", "pass"}, sid
        assert student["score"] < 5, sid
        # Reading plus two puzzles, each under the limit (and the worker's start).
        assert student["seconds"] < 3 * limit + 5, (sid, student["seconds"])
    assert not PLANTED.exists()


def test_the_process_tree_stays_under_3_gib(graded):
    assert 0 < graded["report"]["peak_memory_bytes"] < 3 * 2**30
    assert graded["largest_process"] < 3 * 2**30


def test_identical_kernels_on_trivial_puzzles_make_no_similar_pair(graded):
    # Map and Threadgroup Memory have one natural answer: the copiers of Map, and everyone
    # who solved it as the reference does, are no evidence (tests/puzzles/grading/
    # test_similarity.py shows planted copies of non-trivial kernels found).
    with (graded["out"] / "similarity.csv").open(newline="") as f:
        rows = list(csv.reader(f))
    assert rows == [["rank", "student", "other", "identical", "puzzles"]]
    assert graded["report"]["similarity"] == []


def test_the_csv_has_one_row_per_student_with_points_per_puzzle(graded):
    with (graded["out"] / "grades.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["student", "1 Map", "1 Map status", "8 Threadgroup Memory",
                             "8 Threadgroup Memory status", "total", "max", "status", "notes"]
    by_id = {row["student"]: row for row in rows}
    assert set(by_id) == set(graded["expected"])
    assert by_id["solved"] == {**by_id["solved"], "1 Map": "2", "8 Threadgroup Memory": "3",
                               "total": "5", "max": "5", "status": "graded"}
    assert by_id["over-budget"]["1 Map"] == "1"  # half of 2 points: over budget
    assert by_id["over-budget"]["1 Map status"] == "over-budget"
    assert by_id["attack-empty"]["status"] == "not graded"
    assert by_id["attack-empty"]["total"] == "0"
    assert by_id["attack-empty"]["1 Map status"] == "not graded"


def test_results_json_follows_gradescopes_schema(graded):
    for sid in graded["expected"]:
        results = json.loads((graded["out"] / "results" / sid / "results.json").read_text())
        jsonschema.validate(results, GRADESCOPE_SCHEMA)
        assert results["score"] == students(graded)[sid]["score"]
    solved = json.loads((graded["out"] / "results" / "solved" / "results.json").read_text())
    assert [(t["name"], t["score"], t["max_score"], t["visibility"])
            for t in solved["tests"]] == [
        ("Puzzle 1: Map", 2, 2, "visible"), ("Puzzle 1: Map (details)", 0, 0, "after_due_date"),
        ("Puzzle 8: Threadgroup Memory", 3, 3, "visible"),
        ("Puzzle 8: Threadgroup Memory (details)", 0, 0, "after_due_date")]


def test_student_outputs_never_show_a_hidden_case(graded):
    hidden_values = 0
    for student in graded["report"]["students"]:
        texts = [(graded["out"] / "feedback" / f"{student['id']}.md").read_text(),
                 (graded["out"] / "results" / student["id"] / "results.json").read_text()]
        for row in student["rows"]:
            for case in row["cases"]:
                if not case["case"].startswith("hidden"):
                    continue
                for value in _distinctive(case["expected"]):
                    hidden_values += 1
                    assert all(value not in text for text in texts), (student["id"], value)
                expected = json.dumps(case["expected"])
                assert all(expected not in text for text in texts)
    assert hidden_values > 20  # the check looked at real numbers
    feedback = (graded["out"] / "feedback" / "attack-lookup-table.md").read_text()
    assert "wrong values on hidden case 1" in feedback
    assert "Spec" not in feedback and "expected" not in feedback


def test_feedback_shows_verdicts_counts_and_diagnostics(graded):
    racy = (graded["out"] / "feedback" / "racy.md").read_text()
    assert "**2 of 5 points.**" in racy
    assert "| 1 Map | pass | 2 / 2 | 1 / 1 | 1 / 1 |" in racy
    assert "race" in racy and "Diagnostics:" in racy


def test_nothing_printed_or_written_has_control_characters(graded):
    outputs = [graded["done"].stdout, graded["done"].stderr] + [
        p.read_text() for p in graded["out"].rglob("*") if p.is_file()]
    assert graded["done"].stderr.count("\n") >= len(graded["expected"])  # progress lines
    for text in outputs:
        assert "\x1b" not in text and "\r" not in text
    escape = students(graded)["attack-escape-codes"]["rows"][0]
    assert escape["status"] == "error" and "pass 1 Map pass" in escape["reason"]


def _distinctive(values: object) -> list[str]:
    """Non-integer numbers of a nested list, written as the checker prints them."""
    flat = np.asarray(values, dtype=np.float64).ravel()
    return [f"{v:.4g}" for v in flat if np.isfinite(v) and not float(v).is_integer()]
