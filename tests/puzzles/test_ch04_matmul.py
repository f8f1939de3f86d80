"""Notebook 04 (puzzles 18-20): reference solutions pass, templates fail, and plausible wrong
kernels are rejected for the right reason."""

import pytest

from puzzles import ch04_matmul as ch04
from puzzles.checking import check_kernel

PUZZLES = [ch04.MATMUL_SIMPLE, ch04.MATMUL_TILED, ch04.SIMDGROUP_MATMUL]

PROLOGUE = ch04.MATMUL_SIMPLE.template.split("// FILL ME IN")[0] + "uint size = a_shape[0];\n"

SIMDGROUP_PROLOGUE = ch04.SIMDGROUP_MATMUL.template.split("// FILL ME IN")[0]


@pytest.mark.parametrize("puzzle", PUZZLES, ids=lambda p: p.slug)
def test_reference_solution_passes_visible_titled_and_hidden_cases(puzzle):
    result = check_kernel(puzzle, puzzle.solution())
    assert result.passed, result.text
    assert len(result.cases) >= 4


@pytest.mark.parametrize("puzzle", PUZZLES, ids=lambda p: p.slug)
def test_template_as_shipped_fails_without_raising(puzzle):
    assert "// FILL ME IN" in puzzle.template
    result = check_kernel(puzzle, puzzle.template)
    assert result.status == "fail", result.text


@pytest.mark.parametrize("puzzle", PUZZLES, ids=lambda p: p.slug)
def test_reference_solution_passes_other_hidden_draws(puzzle):
    assert check_kernel(puzzle, puzzle.solution(), seed=11).passed


def test_tiled_solution_also_solves_matmul_simple_as_in_metal_puzzles():
    # Metal-Puzzles uses one kernel for "Matmul (Simple)" and "Matmul (Full)".
    assert check_kernel(ch04.MATMUL_SIMPLE, ch04.MATMUL_TILED.solution()).passed
    assert set(ch04.MATMUL_TILED.cases_by_title) == {"Matmul (Full)"}
    assert ch04.MATMUL_TILED.cases_by_title["Matmul (Full)"].grid == (9, 9, 1)


def test_matmul_simple_without_bounds_checks_reads_out_of_bounds():
    source = PROLOGUE + """
a_shared[local_i][local_j] = a[i * size + j];
b_shared[local_i][local_j] = b[i * size + j];
threadgroup_barrier(mem_flags::mem_threadgroup);
float acc = 0;
for (uint k = 0; k < size; ++k) acc += a_shared[local_i][k] * b_shared[k][local_j];
out[i * size + j] = acc;
"""
    result = check_kernel(ch04.MATMUL_SIMPLE, source)
    assert result.status == "error"
    assert any(d.kind == "out-of-bounds" for d in result.diagnostics)


def test_matmul_simple_without_barrier_is_a_race():
    source = PROLOGUE + """
if (i < size && j < size) {
    a_shared[local_i][local_j] = a[i * size + j];
    b_shared[local_i][local_j] = b[i * size + j];
    float acc = 0;
    for (uint k = 0; k < size; ++k) acc += a_shared[local_i][k] * b_shared[k][local_j];
    out[i * size + j] = acc;
}
"""
    result = check_kernel(ch04.MATMUL_SIMPLE, source)
    assert result.status == "error"
    assert any(d.kind == "race" for d in result.diagnostics)


NAIVE = PROLOGUE + """
if (i < size && j < size) {
    float acc = 0;
    for (uint k = 0; k < size; ++k) acc += a[i * size + k] * b[k * size + j];
    out[i * size + j] = acc;
}
"""


def test_matmul_reading_rows_and_columns_from_device_memory_is_over_budget():
    simple = check_kernel(ch04.MATMUL_SIMPLE, NAIVE)
    assert simple.status == "over-budget"
    tiled = check_kernel(ch04.MATMUL_TILED, NAIVE)
    assert tiled.status == "over-budget"
    assert tiled.counts["global_reads"] == 18  # a 9x9 hidden case: 2 * 9


def test_single_tile_kernel_is_wrong_on_the_8x8_matrix():
    result = check_kernel(ch04.MATMUL_TILED, ch04.MATMUL_SIMPLE.solution())
    assert result.status in ("fail", "error")
    assert "visible" in result.reason


def test_tiled_matmul_without_the_second_barrier_is_a_race():
    source = ch04.MATMUL_TILED.solution()
    last = source.rindex("threadgroup_barrier")
    source = source[:last] + "// " + source[last:]
    result = check_kernel(ch04.MATMUL_TILED, source)
    assert result.status == "error"
    assert any(d.kind == "race" for d in result.diagnostics)


def test_simdgroup_matmul_with_origin_given_row_first_fails_a_hidden_case():
    source = SIMDGROUP_PROLOGUE + """
for (uint k = 0; k < K; k += 8) {
    simdgroup_float8x8 a_tile, b_tile;
    simdgroup_load(a_tile, a, K, ulong2(tile_row * 8, k));
    simdgroup_load(b_tile, b, N, ulong2(k, tile_col * 8));
    simdgroup_multiply_accumulate(acc, a_tile, b_tile, acc);
}
simdgroup_store(acc, out, N, ulong2(tile_row * 8, tile_col * 8));
"""
    assert check_kernel(ch04.SIMDGROUP_MATMUL, source, hidden=False).passed
    result = check_kernel(ch04.SIMDGROUP_MATMUL, source)
    assert result.status in ("fail", "error")  # wrong tiles, or tiles outside the matrix
    assert "hidden" in result.reason


def test_simdgroup_matmul_with_stride_8_fails_a_hidden_case():
    source = SIMDGROUP_PROLOGUE + """
for (uint k = 0; k < K; k += 8) {
    simdgroup_float8x8 a_tile, b_tile;
    simdgroup_load(a_tile, a, 8, ulong2(k, tile_row * 8));
    simdgroup_load(b_tile, b, 8, ulong2(tile_col * 8, k));
    simdgroup_multiply_accumulate(acc, a_tile, b_tile, acc);
}
simdgroup_store(acc, out, 8, ulong2(tile_col * 8, tile_row * 8));
"""
    result = check_kernel(ch04.SIMDGROUP_MATMUL, source)
    assert result.status in ("fail", "error")
    assert "hidden" in result.reason


def test_simdgroup_matrix_calls_in_divergent_code_are_an_error():
    source = SIMDGROUP_PROLOGUE + """
if (thread_index_in_simdgroup < 16) {
    simdgroup_float8x8 a_tile, b_tile;
    simdgroup_load(a_tile, a, K, ulong2(0, tile_row * 8));
    simdgroup_load(b_tile, b, N, ulong2(tile_col * 8, 0));
    simdgroup_multiply_accumulate(acc, a_tile, b_tile, acc);
    simdgroup_store(acc, out, N, ulong2(tile_col * 8, tile_row * 8));
}
"""
    result = check_kernel(ch04.SIMDGROUP_MATMUL, source)
    assert result.status == "error"
    assert "all 32 threads" in result.reason
