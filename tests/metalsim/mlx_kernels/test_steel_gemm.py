"""MLX's steel GEMM building blocks (BlockLoader, BlockMMA, TransformAxpby) from the installed
MLX's headers, driven from `mx.fast.metal_kernel` bodies under metalsim, against MLX's CPU
`mx.matmul` / `mx.addmm` on the same inputs (`steel_gemm_blocks`)."""

import mlx.core as mx
import pytest
import steel_gemm_blocks
from block_case import differences

import metalsim

CASES = steel_gemm_blocks.cases()


@pytest.mark.parametrize("case", CASES, ids=[c.label for c in CASES])
def test_steel_gemm_blocks_agree_with_mlx_cpu(case):
    run = metalsim.simulate(case.kernel, **case.kwargs)
    assert not run.report.errors, run.report.errors
    assert differences(case, run.outputs) == []


def test_a_wrong_tile_extent_is_caught_by_the_oracle():
    # The same kernel told K is one column short must disagree with mx.matmul: the comparison
    # can fail.
    case = steel_gemm_blocks.gemm_case(40, 48, 24, mx.float32)
    case.kwargs["template"] = [(n, v - 1 if n == "K" else v) for n, v in case.kwargs["template"]]
    run = metalsim.simulate(case.kernel, **case.kwargs)
    assert differences(case, run.outputs)
