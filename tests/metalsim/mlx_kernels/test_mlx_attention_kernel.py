"""MLX's steel attention `[[kernel]]` function from the installed MLX's headers, run
whole through `metalsim.dispatch`, against MLX's CPU `mx.fast.scaled_dot_product_attention`."""

import mlx.core as mx
import mlx_attention_kernel
import pytest
from block_case import differences

CASES = mlx_attention_kernel.cases()


@pytest.mark.parametrize("case", CASES, ids=[c.label for c in CASES])
def test_mlx_steel_attention_kernel_agrees_with_mlx_cpu_sdpa(case):
    run = case.run()
    assert not run.report.diagnostics, run.report.diagnostics
    assert differences(case, [run.buffers[i] for i in case.outputs]) == []


def test_attention_without_the_causal_mask_is_caught_by_the_oracle():
    case = mlx_attention_kernel.attention_case(1, 1, 64, 64, 32, mx.float32, causal=True)
    case.function_constants[301] = False
    run = case.run()
    assert differences(case, [run.buffers[3]])
