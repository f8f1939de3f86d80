"""MLX's quantized matrix-vector routines (qmv_impl, qmv_fast_impl with load_vector and qdot)
from the installed MLX's quantized.h, driven from an `mx.fast.metal_kernel` body under
metalsim, against MLX's CPU `mx.quantized_matmul` on `mx.quantize`'d operands
(`quantized_blocks`)."""

import mlx.core as mx
import pytest
import quantized_blocks
from block_case import differences

import metalsim

CASES = quantized_blocks.cases()


@pytest.mark.parametrize("case", CASES, ids=[c.label for c in CASES])
def test_quantized_qmv_blocks_agree_with_mlx_cpu_quantized_matmul(case):
    run = metalsim.simulate(case.kernel, **case.kwargs)
    assert not run.report.diagnostics, run.report.diagnostics
    assert differences(case, run.outputs) == []


def test_a_scale_for_the_wrong_group_is_caught_by_the_oracle():
    case = quantized_blocks.qmv_case(2, 20, 192, mx.float32)
    scales = case.kwargs["inputs"][1]
    case.kwargs["inputs"][1] = mx.concatenate([scales[:, 1:], scales[:, :1]], axis=1)
    run = metalsim.simulate(case.kernel, **case.kwargs)
    assert differences(case, run.outputs)
