"""One launch everywhere: `problem.check()`, the CLI's `check_kernel` and the grader start a
puzzle's outputs the same way (zeros for Metal-Puzzles' puzzles), so a kernel gets one
verdict."""

from __future__ import annotations

import mlx.core as mx
import nbformat
import pytest
from classroom import learner, solve

from puzzles.catalog import find
from puzzles.checking import check_kernel
from puzzles.grader import grade
from utils import MetalKernel, MetalProblem

# Both rely on outputs starting as zeros, as Metal-Puzzles launches them.
ACCUMULATES = "uint i = thread_position_in_grid.x;\nout[i] += a[i] + 10;\n"
ADDS_TO_ZERO = "uint i = thread_position_in_grid.x;\nout[i] = out[i] + a[i] + 10;\n"
WRONG = "uint i = thread_position_in_grid.x;\nout[i] += a[i] + 11;\n"


def in_the_notebook(body: str) -> str:
    def map_test(a: mx.array) -> MetalKernel:
        return MetalKernel(name="map", input_names=["a"], output_names=["out"], source=body)

    problem = MetalProblem("Map", map_test, [mx.arange(4, dtype=mx.int32)], (4,),
                           grid=(4, 1, 1))
    problem.check()
    return problem.result.status


@pytest.mark.parametrize(("body", "status"), [
    (ACCUMULATES, "over-budget"),  # right values; reading `out` is a second global read
    (ADDS_TO_ZERO, "over-budget"),
    (WRONG, "fail"),
])
def test_check_the_cli_and_the_grader_agree(tmp_path, body, status, capsys):
    nb = learner("01_threads.ipynb")
    solve(nb, 1, body)
    nbformat.write(nb, tmp_path / "s.ipynb")
    graded = next(r for r in grade(tmp_path / "s.ipynb", seed=5) if r["puzzle"] == 1)
    statuses = {in_the_notebook(body), check_kernel(find(1), body).status, graded["status"]}
    capsys.readouterr()
    assert statuses == {status}, graded["reason"]
