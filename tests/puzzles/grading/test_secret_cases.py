"""Hidden cases are secret: a kernel that looks up the answers learners were shown passes
their `problem.check()` and fails under the grader."""

from __future__ import annotations

import mlx.core as mx
import nbformat
from classroom import MAP, learner, lookup_table_kernel, solve

from puzzles.catalog import find
from puzzles.cli import main
from puzzles.grader import grade
from utils import MetalKernel, MetalProblem


def learner_check(body: str) -> str:
    """The status `problem.check()` gives the Map kernel `body` in a learner's notebook."""
    def map_test(a: mx.array) -> MetalKernel:
        return MetalKernel(name="map", input_names=["a"], output_names=["out"], source=body)

    problem = MetalProblem("Map", map_test, [mx.arange(4)], (4,), grid=(4, 1, 1),
                           spec=find(1).spec)
    problem.check()
    return problem.result.status


def test_a_lookup_table_of_the_answers_learners_saw_fails_under_the_grader(tmp_path, capsys):
    table = lookup_table_kernel()
    assert learner_check(table) == "pass"  # it fools the learner-side check...
    nb = learner("01_threads.ipynb")
    solve(nb, 1, table)
    path = tmp_path / "cheat.ipynb"
    nbformat.write(nb, path)
    row = next(r for r in grade(path, seed=20260301) if r["puzzle"] == 1)
    assert row["status"] == "fail" and "wrong values on hidden case" in row["reason"]
    capsys.readouterr()
    # ...and the grading command, with its own random seed, exits non-zero.
    assert main(["grade", str(path), "--puzzle", "1"]) == 1
    assert "0 of 1 puzzles passed" in capsys.readouterr().out


def test_a_real_solution_passes_whatever_the_seed(tmp_path):
    nb = learner("01_threads.ipynb")
    solve(nb, 1, MAP)
    path = tmp_path / "honest.ipynb"
    nbformat.write(nb, path)
    for seed in (1, 2, 2**62):
        assert next(r for r in grade(path, seed=seed) if r["puzzle"] == 1)["status"] == "pass"
