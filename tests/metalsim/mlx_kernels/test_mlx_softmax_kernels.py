"""MLX's softmax and logsumexp `[[kernel]]` functions from the installed MLX's headers, run
whole through `metalsim.dispatch`, against MLX's CPU `mx.softmax` / `mx.logsumexp`."""

import mlx.core as mx
import mlx_softmax_kernels
import pytest
from block_case import differences

CASES = mlx_softmax_kernels.cases()


@pytest.mark.parametrize("case", CASES, ids=[c.label for c in CASES])
def test_mlx_softmax_kernels_agree_with_mlx_cpu(case):
    run = case.run()
    assert not run.report.diagnostics, run.report.diagnostics
    assert differences(case, [run.buffers[i] for i in case.outputs]) == []


def test_a_row_length_one_short_is_caught_by_the_oracle():
    case = mlx_softmax_kernels.softmax_case(4, 70, mx.float32)
    case.buffers[2] = 69
    run = case.run()
    assert differences(case, [run.buffers[1]])
