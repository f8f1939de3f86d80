"""MLX's steel GEMM `[[kernel]]` function from the installed MLX's headers, run
whole through `metalsim.dispatch`, against MLX's CPU `mx.matmul` / `mx.addmm`."""

import mlx.core as mx
import mlx_gemm_kernel
import pytest
from block_case import differences

CASES = mlx_gemm_kernel.cases()


def unbound_argument_reads(run) -> list:
    """MLX's `gemm` builds its epilogues from `addmm_params->alpha` and `->beta` whatever
    `use_out_source` says (steel_gemm_fused.h:166 and 168), so a plain matmul reads an
    argument its function constant leaves unbound: metalsim reports each such read (the values
    are never used, and Metal's compiler drops the dead loads)."""
    return [d for d in run.report.diagnostics
            if d.kind == "out-of-bounds" and "'addmm_params' has 0 elements" in d.message
            and d.line in (166, 168)]


def epilogue_reads_past_c(run) -> list:
    """MLX's `BlockMMA::apply_epilogue_safe` (steel/gemm/mma.h:665) bounds its reads of C by
    the tile's columns only, not its rows: in the last row of tiles of an addmm whose M is not
    a multiple of BM, fragments below the last row read C past its end (the values are never
    stored: `store_result_safe` checks rows). An upstream out-of-bounds read that metalsim
    reports."""
    return [d for d in run.report.diagnostics
            if d.kind == "out-of-bounds" and "'C' has" in d.message and d.line == 665]


@pytest.mark.parametrize("case", CASES, ids=[c.label for c in CASES])
def test_mlx_steel_gemm_kernel_agrees_with_mlx_cpu(case):
    run = case.run()
    addmm = case.function_constants[100]
    unbound, past_c = unbound_argument_reads(run), epilogue_reads_past_c(run)
    assert bool(unbound) == (not addmm)
    assert bool(past_c) == (addmm and not case.function_constants[200])
    assert [d for d in run.report.diagnostics if d not in unbound + past_c] == []
    assert differences(case, [run.buffers[i] for i in case.outputs]) == []


def test_a_product_told_the_wrong_leading_dimension_is_caught_by_the_oracle():
    case = mlx_gemm_kernel.gemm_case(40, 48, 24, mx.float32)
    params = bytearray(case.buffers[4])
    params[12:16] = (23).to_bytes(4, "little")   # lda
    case.buffers[4] = bytes(params)
    run = case.run()
    assert differences(case, [run.buffers[3]])
