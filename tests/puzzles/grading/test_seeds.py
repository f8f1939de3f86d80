"""Hidden cases are drawn per submission from the grader's secret, the student and the kernel's
text: a table of the answers of an earlier grading fails on resubmission."""

from __future__ import annotations

import nbformat
from classroom import MAP, learner, solve

from puzzles.catalog import find
from puzzles.checking import KernelArgs, check_puzzle, puzzle_cases
from puzzles.grader import grade
from puzzles.grading.assignment import LEARNER_SEED
from puzzles.grading.seeds import case_seed

SECRET = 4242


def element_table(seed: int) -> str:
    """A Map kernel keyed on each thread's own element: the answers for every input value of
    the hidden cases drawn from `seed`, and 0 for any other value."""
    seen = sorted({int(v) for label, case in puzzle_cases(find(1), seed=seed)
                   for v in case.inputs[0]})
    lines = ["uint i = thread_position_in_grid.x;", "int v = a[i];", "int r = 0;"]
    lines += [f"if (v == {v}) r = {v + 10};" for v in seen]
    return "\n".join(lines + ["out[i] = r;"]) + "\n"


def graded_map(tmp_path, body: str, student: str) -> dict:
    nb = learner("01_threads.ipynb")
    solve(nb, 1, body)
    path = tmp_path / f"{student}.ipynb"
    nbformat.write(nb, path)
    return next(r for r in grade(path, seed=SECRET) if r["puzzle"] == 1)


def test_a_table_of_an_earlier_gradings_cases_fails_on_resubmission(tmp_path):
    first = graded_map(tmp_path, MAP.replace("+ 10;", "+ 10; // v1"), "eve")
    assert first["status"] == "pass"
    table = element_table(first["seed"])
    args = KernelArgs("map", ("a",), ("out",), table)
    earlier = check_puzzle(find(1), puzzle_cases(find(1), seed=first["seed"]), lambda _: args)
    assert earlier.status == "pass"  # with the cases fixed, the table would pass...
    again = graded_map(tmp_path, table, "eve")
    assert again["seed"] != first["seed"]
    assert again["status"] == "fail" and "wrong values on hidden case" in again["reason"]


def test_the_seed_is_recorded_and_regrading_the_same_kernel_draws_the_same_cases(tmp_path):
    one = graded_map(tmp_path, MAP, "ann")
    two = graded_map(tmp_path, MAP, "ann")
    assert one["seed"] == two["seed"] == case_seed(SECRET, "ann", 1, "", one_source(tmp_path))
    assert [c["expected"] for c in one["cases"]] == [c["expected"] for c in two["cases"]]


def one_source(tmp_path) -> str:
    """The Map source as the learner notebook builds it (the template's lines around MAP)."""
    from puzzles.grader import parse_notebook, read_submission
    from puzzles.grading.intake import read_notebooks

    notebooks = [parse_notebook(f) for f in read_notebooks(tmp_path / "ann.ipynb")]
    return read_submission(notebooks).found[1].kernel.source


def test_seeds_differ_by_student_kernel_puzzle_and_secret():
    base = case_seed(SECRET, "ann", 1, "", MAP)
    others = [case_seed(SECRET, "bob", 1, "", MAP), case_seed(SECRET, "ann", 2, "", MAP),
              case_seed(SECRET, "ann", 1, "", MAP + " "), case_seed(SECRET, "ann", 1, "//", MAP),
              case_seed(SECRET + 1, "ann", 1, "", MAP)]
    assert len({base, *others}) == 6
    assert all(0 < s < 2**62 and s != LEARNER_SEED for s in (base, *others))


def test_a_students_id_is_compared_in_unicode_nfc():
    assert case_seed(SECRET, "Zo\u00e9", 1, "", MAP) == case_seed(SECRET, "Zoe\u0301", 1, "", MAP)
