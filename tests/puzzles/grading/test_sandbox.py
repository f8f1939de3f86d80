"""Workers: a puzzle past the wall-time limit is stopped and the next one still graded; a kernel
asking for more memory than Metal allows is an error before anything is allocated; submissions
are found by file or folder."""

from __future__ import annotations

import nbformat
from classroom import MAP, learner, solve

from puzzles.grading.assignment import Assignment, Limits
from puzzles.grading.batch import grade_all
from puzzles.grading.intake import find_submissions, student_id

# Past the 2 s limit well before the 1,000,000-step limit: each step of the loop costs some
# 15 us (a SIMD-group reduction), 16 s to the step limit on the development machine, where a
# plain load and add (2 us a step) would reach the step limit first.
SLOW = ("uint local_i = thread_position_in_grid.x;\nfloat acc = 0;\n"
        "for (int k = 0; k < 100000000; k++) { acc += simd_sum(a[local_i]) * 0.5f; }\n"
        "out[local_i] = a[local_i] + 10 + acc * 0.0f;\n")
HUGE = ("uint local_i = thread_position_in_grid.x;\nfloat t[1 << 28];\n"
        "t[local_i] = a[local_i];\nout[local_i] = t[local_i] + 10;\n")


def test_limits_stop_one_puzzle_and_the_others_are_still_graded(tmp_path):
    nb = learner("01_threads.ipynb")
    solve(nb, 1, SLOW)
    solve(nb, 2, HUGE.replace("a[local_i] + 10", "a[local_i] + b[local_i]"))
    solve(nb, 3)
    nbformat.write(nb, tmp_path / "student.ipynb")
    assignment = Assignment(points={1: 1, 2: 1, 3: 1}, limits=Limits(2.0, 1 << 30), seed=9)
    lines: list[str] = []
    result = grade_all(find_submissions(tmp_path / "student.ipynb"), assignment,
                       progress=lines.append)
    outcome, = result.outcomes
    statuses = {row["puzzle"]: row["status"] for row in outcome.rows}
    assert statuses == {1: "timeout", 2: "error", 3: "pass"}
    assert "time limit of 2 s" in outcome.rows[0]["reason"]
    assert "resource-limit" in str(outcome.rows[1]), outcome.rows[1]
    assert outcome.seconds < 2 * 3 + 20
    assert lines == [lines[0]] and "student: 1/3 points" in lines[0]
    assert 0 < result.peak_memory_bytes < 3 << 30


def test_a_memory_cap_too_small_to_read_the_submission_is_an_error_naming_the_cap(tmp_path):
    nb = learner("01_threads.ipynb")
    solve(nb, 1, MAP)
    nbformat.write(nb, tmp_path / "s.ipynb")
    result = grade_all(find_submissions(tmp_path / "s.ipynb"),
                       Assignment(points={1: 1}, limits=Limits(5.0, 64 << 20), seed=3),
                       progress=lambda _line: None)
    outcome, = result.outcomes
    assert outcome.rows == []
    assert "64 MiB" in outcome.error, outcome.error


def test_submissions_are_notebooks_or_folders_with_ids_from_their_names(tmp_path):
    (tmp_path / "ann.ipynb").write_text("{}")
    (tmp_path / "bob").mkdir()
    nbformat.write(learner("01_threads.ipynb"), tmp_path / "bob" / "01.ipynb")
    (tmp_path / "bob" / ".ipynb_checkpoints").mkdir()
    (tmp_path / "bob" / ".ipynb_checkpoints" / "01-checkpoint.ipynb").write_text("{}")
    (tmp_path / "=cmd|'x'!A1.ipynb").write_text("{}")
    (tmp_path / "notes.txt").write_text("not a submission")
    found = find_submissions(tmp_path)
    assert [s.id for s in found] == ["=cmd|'x'!A1", "ann", "bob"]  # the names, exactly
    assert [f.name for f in found[2].files] == ["01.ipynb"]
    assert student_id("x.ipynb") == "x" and student_id("x.zip") == "x"


def test_a_solved_notebook_scores_full_marks(tmp_path):
    nb = learner("01_threads.ipynb")
    solve(nb, 1, MAP)
    nbformat.write(nb, tmp_path / "s.ipynb")
    result = grade_all(find_submissions(tmp_path / "s.ipynb"),
                       Assignment(points={1: 4}, seed=3), progress=lambda _line: None)
    assert result.outcomes[0].rows[0]["status"] == "pass"
    assert Assignment(points={1: 4}).score(result.outcomes[0].rows) == (4, 4)
