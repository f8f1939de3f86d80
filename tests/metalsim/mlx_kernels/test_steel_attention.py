"""MLX's steel attention building blocks (BlockLoaderT, MMATile, tile_matmad, row_reduce and
row_bin_op with steel_attention.h's ops) from the installed MLX's headers, driven from an
`mx.fast.metal_kernel` body under metalsim, against MLX's CPU
`mx.fast.scaled_dot_product_attention` on the same inputs (`steel_attention_blocks`)."""

import mlx.core as mx
import pytest
import steel_attention_blocks
from block_case import differences

import metalsim

CASES = steel_attention_blocks.cases()


@pytest.mark.parametrize("case", CASES, ids=[c.label for c in CASES])
def test_steel_attention_blocks_agree_with_mlx_cpu_sdpa(case):
    run = metalsim.simulate(case.kernel, **case.kwargs)
    assert not run.report.errors, run.report.errors
    assert differences(case, run.outputs) == []


def test_a_key_block_left_out_is_caught_by_the_oracle():
    # Told there are 16 fewer keys, the kernel attends to a prefix: SDPA must disagree.
    case = steel_attention_blocks.attention_case(1, 1, 32, 48, 32, mx.float32)
    case.kwargs["template"] = [(n, v - 16 if n == "KL" else v) for n, v in case.kwargs["template"]]
    run = metalsim.simulate(case.kernel, **case.kwargs)
    assert differences(case, run.outputs)
