"""Streaming batch grading: the journal (grades.jsonl), interrupt and resume, `--only`
merging into an existing --out, re-scoring from stored rows, and the per-submission budget."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from puzzles.grading.assignment import Assignment, Limits
from puzzles.grading.batch import grade_all
from puzzles.grading.intake import find_submissions
from puzzles.grading.journal import JOURNAL, Header, Journal, JournalError
from tests.puzzles.grading.classroom import MAP, learner, solve
from tests.puzzles.grading.test_sandbox import SLOW

ROOT = Path(__file__).resolve().parents[3]
WRONG_MAP = "uint i = thread_position_in_grid.x;\nout[i] = a[i] + 9;\n"
TOML = """\
[assignment]
name = "streaming"
seed = 77123
time_limit = 20

[[puzzles]]
puzzle = 1
points = {map_points}

[[puzzles]]
puzzle = 2
points = 1
"""


def write_student(folder: Path, sid: str, map_body: str | None, zip_body: bool) -> None:
    nb = learner("01_threads.ipynb")
    if map_body is not None:
        solve(nb, 1, map_body)
    if zip_body:
        solve(nb, 2)
    (folder / sid).mkdir(parents=True)
    nbformat.write(nb, folder / sid / "01_threads.ipynb")


@pytest.fixture(scope="module")
def small_class(tmp_path_factory) -> Path:
    """Six students: right, wrong, half-done and untouched notebooks."""
    root = tmp_path_factory.mktemp("stream")
    subs = root / "subs"
    for k, (body, zip_body) in enumerate([(MAP, True), (WRONG_MAP, True), (MAP, False),
                                          (None, False), (MAP, True), (WRONG_MAP, False)]):
        write_student(subs, f"s{k}", body, zip_body)
    for points in (2, 5):
        (root / f"a{points}.toml").write_text(TOML.format(map_points=points))
    return root


def grade(root: Path, out: Path, *extra: str, toml: str = "a2.toml",
          path: bool = True) -> subprocess.CompletedProcess:
    where = [str(root / "subs")] if path else []
    return subprocess.run(
        [sys.executable, "-m", "puzzles", "grade", *where, "--assignment", str(root / toml),
         "--out", str(out), "--jobs", "2", *extra], cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)


def gradebook(out: Path) -> tuple[str, list[dict]]:
    """grades.csv and grades.json's students without their timings: what must not change."""
    report = json.loads((out / "grades.json").read_text())
    students = [{k: v for k, v in s.items() if k != "seconds"} for s in report["students"]]
    return (out / "grades.csv").read_text(), students


@pytest.fixture(scope="module")
def one_run(small_class) -> Path:
    out = small_class / "one"
    done = grade(small_class, out)
    assert done.returncode == 0, done.stderr
    return out


def test_the_journal_holds_one_line_per_student_and_the_gradebook_is_built_from_it(one_run):
    lines = (one_run / JOURNAL).read_text().splitlines()
    assert json.loads(lines[0])["seed"] == 77123
    assert sorted(json.loads(line)["id"] for line in lines[1:]) == [f"s{k}" for k in range(6)]
    rows = list(csv.DictReader((one_run / "grades.csv").open()))
    assert [r["student"] for r in rows] == [f"s{k}" for k in range(6)]
    assert [r["total"] for r in rows] == ["3", "1", "2", "0", "3", "0"]
    assert all((one_run / "feedback" / f"s{k}.md").exists() for k in range(6))


def test_interrupt_then_resume_gives_the_same_gradebook_as_one_run(small_class, one_run):
    out = small_class / "interrupted"
    command = [sys.executable, "-m", "puzzles", "grade", str(small_class / "subs"),
               "--assignment", str(small_class / "a2.toml"), "--out", str(out), "--jobs", "1"]
    process = subprocess.Popen(command, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # Ctrl-C once two students are in the journal
        journal = out / JOURNAL
        if journal.exists() and len(journal.read_text().splitlines()) >= 3:
            break
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "--resume" in stderr and "Traceback" not in stderr
    kept = len((out / JOURNAL).read_text().splitlines()) - 1
    assert 2 <= kept < 6
    resumed = grade(small_class, out, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr.count("points") == 6 - kept  # only the rest were graded
    assert gradebook(out) == gradebook(one_run)


def test_only_regrades_the_named_students_into_the_existing_out(small_class, one_run):
    out = small_class / "merged"
    assert grade(small_class, out).returncode == 0
    write_student(small_class / "fixed", "s1", MAP, True)
    (small_class / "subs" / "s1" / "01_threads.ipynb").write_bytes(
        (small_class / "fixed" / "s1" / "01_threads.ipynb").read_bytes())
    try:
        done = grade(small_class, out, "--only", "s1")
    finally:
        write_student(small_class / "back", "s1", WRONG_MAP, True)
        (small_class / "subs" / "s1" / "01_threads.ipynb").write_bytes(
            (small_class / "back" / "s1" / "01_threads.ipynb").read_bytes())
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("points") == 1
    rows = {r["student"]: r for r in csv.DictReader((out / "grades.csv").open())}
    assert list(rows) == [f"s{k}" for k in range(6)]
    assert rows["s1"]["total"] == "3"
    before = {r["student"]: r for r in csv.DictReader((one_run / "grades.csv").open())}
    assert all(rows[s] == before[s] for s in rows if s != "s1")


def test_only_an_unknown_id_is_an_error_that_changes_nothing(small_class, one_run):
    before = (one_run / "grades.csv").read_text()
    done = grade(small_class, one_run, "--only", "nobody")
    assert done.returncode == 2 and "no submission with id 'nobody'" in done.stderr
    assert (one_run / "grades.csv").read_text() == before


def test_rescoring_with_new_points_matches_a_full_regrade(small_class, one_run):
    out = small_class / "rescored"
    assert grade(small_class, out).returncode == 0
    done = grade(small_class, out, "--rescore", toml="a5.toml", path=False)
    assert done.returncode == 0, done.stderr
    assert "nothing simulated" in done.stdout
    full = small_class / "full5"
    assert grade(small_class, full, toml="a5.toml").returncode == 0
    assert gradebook(out) == gradebook(full)
    assert (out / "feedback" / "s0.md").read_text() == (full / "feedback" / "s0.md").read_text()
    assert gradebook(out) != gradebook(one_run)


def totals(out: Path) -> dict[str, str]:
    return {r["student"]: r["total"] for r in csv.DictReader((out / "grades.csv").open())}


def test_the_late_policy_survives_rescore_only_and_a_newer_roster(small_class):
    """s0 (3 points) hands in a day late, s4 (3 points) three days late with a three-day
    extension: the penalty is in the journal, so a re-score or a regrade without the roster
    keeps it, and a roster granting s0 an extension lifts it."""
    (small_class / "late.toml").write_text(
        TOML.format(map_points=2).replace(
            "time_limit = 20", 'time_limit = 20\ndue = 2026-03-01T23:59:00-05:00\n'
            "late_penalty_per_day = 0.5"))
    times = {"s0": ("2026-03-02T12:00:00-05:00", ""), "s1": ("2026-03-01T10:00:00-05:00", ""),
             "s4": ("2026-03-04T09:00:00-05:00", "3")}
    lines = ["id,submitted,extension_days"] + [
        f"s{k},{times.get(f's{k}', ('', ''))[0]},{times.get(f's{k}', ('', ''))[1]}"
        for k in range(6)]
    (small_class / "roster.csv").write_text("\n".join(lines) + "\n")
    out = small_class / "late"
    done = grade(small_class, out, "--roster", str(small_class / "roster.csv"),
                 toml="late.toml")
    assert done.returncode == 0, done.stderr
    expected = {"s0": "1.5", "s1": "1", "s2": "2", "s3": "0", "s4": "3", "s5": "0"}
    assert totals(out) == expected
    assert "submitted late: points multiplied by 0.5" in (out / "feedback" / "s0.md").read_text(
        ).lower()
    rescored = grade(small_class, out, "--rescore", toml="late.toml", path=False)
    assert rescored.returncode == 0, rescored.stderr
    assert totals(out) == expected
    regraded = grade(small_class, out, "--only", "s0", toml="late.toml")
    assert regraded.returncode == 0, regraded.stderr
    assert totals(out) == expected
    (small_class / "roster.csv").write_text(
        "\n".join(lines).replace("s0,2026-03-02T12:00:00-05:00,", "s0,2026-03-02T12:00:00-05:00,1")
        + "\n")
    extended = grade(small_class, out, "--rescore", "--roster", str(small_class / "roster.csv"),
                     toml="late.toml", path=False)
    assert extended.returncode == 0, extended.stderr
    assert totals(out) == {**expected, "s0": "3"}
    results = json.loads((out / "results" / "s0" / "results.json").read_text())
    assert results["score"] == 3


def test_rescoring_cannot_add_a_puzzle_that_was_not_graded(small_class, one_run, tmp_path):
    (tmp_path / "more.toml").write_text(TOML.format(map_points=1)
                                        + '\n[[puzzles]]\npuzzle = 3\npoints = 1\n')
    done = subprocess.run(
        [sys.executable, "-m", "puzzles", "grade", "--rescore", "--assignment",
         str(tmp_path / "more.toml"), "--out", str(one_run)], cwd=ROOT, capture_output=True,
        text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert done.returncode == 2 and "were not graded" in done.stderr


def test_a_torn_last_line_is_dropped_when_the_journal_is_reopened(tmp_path):
    journal = Journal.start(tmp_path, Header(5, [1], "x", ("a", "b")))
    journal.append({"id": "a", "rows": []})
    with journal.path.open("a") as f:
        f.write('{"id": "b", "rows": [')
    reopened = Journal.open(tmp_path)
    assert list(reopened.offsets) == ["a"]
    assert reopened.read("a") == {"id": "a", "rows": []}
    assert journal.path.read_text().endswith('"rows":[]}\n')


def test_opening_an_out_without_a_journal_says_to_grade_first(tmp_path):
    with pytest.raises(JournalError, match="grade the class"):
        Journal.open(tmp_path)


def test_a_slow_submission_stops_at_its_budget_with_every_puzzle_left_a_timeout(tmp_path):
    nb = learner("01_threads.ipynb")
    solve(nb, 1, SLOW)
    solve(nb, 2, SLOW.replace("a[local_i] + 10", "a[local_i] + b[local_i]"))
    solve(nb, 3, SLOW)
    nbformat.write(nb, tmp_path / "slow.ipynb")
    plan = Assignment(points={1: 1, 2: 1, 3: 1},
                      limits=Limits(seconds=4.0, submission_seconds=6.0), seed=99)
    outcome, = grade_all(find_submissions(tmp_path / "slow.ipynb"), plan,
                         progress=lambda _line: None).outcomes
    assert outcome.seconds < 6.0 + 1.0  # the budget, and the time to stop the worker
    statuses = {row["puzzle"]: row["status"] for row in outcome.rows}
    assert statuses == {1: "timeout", 2: "timeout", 3: "timeout"}
    assert "time limit of 4 s" in str(outcome.rows[0]["reason"])  # the puzzle's own limit
    assert "submission's time budget of 6 s" in str(outcome.rows[-1]["reason"])


def test_a_slow_submission_goes_behind_the_class_after_each_timeout(tmp_path):
    """Fair scheduling with one worker: the slow student, first in the class, gives the
    worker up at its first puzzle's time limit, so the students behind it finish first."""
    slow = learner("01_threads.ipynb")
    solve(slow, 1, SLOW)
    solve(slow, 2, SLOW.replace("a[local_i] + 10", "a[local_i] + b[local_i]"))
    solve(slow, 3, SLOW)
    nbformat.write(slow, tmp_path / "a-slow.ipynb")
    for sid in ("b-fast", "c-fast", "d-fast"):
        fast = learner("01_threads.ipynb")
        solve(fast, 1)
        nbformat.write(fast, tmp_path / f"{sid}.ipynb")
    plan = Assignment(points={1: 1, 2: 1, 3: 1},
                      limits=Limits(seconds=2.0, submission_seconds=30.0), seed=5)
    finished = []
    grade_all(find_submissions(tmp_path), plan, jobs=1, progress=lambda _line: None,
              on_outcome=finished.append)
    assert [o.submission.id for o in finished] == ["b-fast", "c-fast", "d-fast", "a-slow"]
    assert [row["status"] for row in finished[0].rows] == ["pass", "fail", "fail"]
    assert [row["status"] for row in finished[-1].rows] == ["timeout"] * 3
    assert all("time limit of 2 s" in str(row["reason"]) for row in finished[-1].rows)
    assert 3 * 2.0 <= finished[-1].seconds < 3 * 2.0 + 6.0  # its three turns, no waiting


def test_check_with_a_rows_seed_reproduces_the_graders_verdict(tmp_path):
    """A kernel right on the visible case only: which hidden cases fail depends on the
    per-submission seed, and `check N --seed S` with the row's seed finds the same ones."""
    body = "uint i = thread_position_in_grid.x;\nif (i < 4) { out[i] = a[i] + 10; }\n"
    nb = learner("01_threads.ipynb")
    solve(nb, 1, body)
    nbformat.write(nb, tmp_path / "s.ipynb")
    (tmp_path / "kernel.metal").write_text(body)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    graded = subprocess.run(
        [sys.executable, "-m", "puzzles", "grade", str(tmp_path / "s.ipynb"), "--puzzle", "1",
         "--seed", "2718", "--json", str(tmp_path / "rows.json")], cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=300)
    row, = json.loads((tmp_path / "rows.json").read_text())
    assert graded.returncode == 1 and row["status"] == "fail"
    checked = subprocess.run(
        [sys.executable, "-m", "puzzles", "check", "1", "--source",
         str(tmp_path / "kernel.metal"),
         "--seed", str(row["seed"]), "--json"], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=300)
    assert checked.returncode == 1, checked.stderr
    again = json.loads(checked.stdout)
    assert again["cases"] == row["cases"] and again["status"] == row["status"] == "fail"
