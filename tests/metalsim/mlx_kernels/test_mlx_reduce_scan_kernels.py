"""MLX's reduction and scan `[[kernel]]` functions from the installed MLX's headers, run
whole through `metalsim.dispatch`, against MLX's CPU `mx.sum` / `mx.max` / `mx.cumsum`."""

import mlx.core as mx
import mlx_reduce_scan_kernels
import pytest
from block_case import differences

CASES = mlx_reduce_scan_kernels.cases()


@pytest.mark.parametrize("case", CASES, ids=[c.label for c in CASES])
def test_mlx_reduce_and_scan_kernels_agree_with_mlx_cpu(case):
    run = case.run()
    assert not run.report.diagnostics, run.report.diagnostics
    assert differences(case, [run.buffers[i] for i in case.outputs]) == []


def test_a_reduction_one_element_short_is_caught_by_the_oracle():
    case = mlx_reduce_scan_kernels.all_reduce_case(1000, mx.float32)
    case.buffers[2] = case.buffers[3] = 999
    run = case.run()
    assert differences(case, [run.buffers[1]])
