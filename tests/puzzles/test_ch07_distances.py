"""Notebook 07 (puzzles 30-32): reference solutions pass, templates fail, and plausible wrong
kernels are rejected for the right reason; the hidden cases contain what the rules are about
(coincident points, repeated indices, pairs exactly at the radius)."""

import mlx.core as mx
import numpy as np
import pytest

from puzzles import ch07_distances as ch07
from puzzles.checking import check_kernel

PUZZLES = [ch07.PAIRWISE_DISTANCE, ch07.INDEXED_DISTANCE, ch07.RADIUS_MASK]


@pytest.mark.parametrize("puzzle", PUZZLES, ids=lambda p: p.slug)
def test_reference_solution_passes_visible_and_hidden_cases(puzzle):
    result = check_kernel(puzzle, puzzle.solution())
    assert result.passed, result.text
    assert len(result.cases) >= 4  # hidden cases ran too


@pytest.mark.parametrize("puzzle", PUZZLES, ids=lambda p: p.slug)
def test_template_as_shipped_fails_without_raising(puzzle):
    assert "// FILL ME IN" in puzzle.template
    result = check_kernel(puzzle, puzzle.template)
    assert result.status == "fail", result.text


@pytest.mark.parametrize("puzzle", PUZZLES, ids=lambda p: p.slug)
def test_reference_solution_passes_other_hidden_draws(puzzle):
    assert check_kernel(puzzle, puzzle.solution(), seed=7).passed


def body(puzzle, code: str) -> str:
    """The puzzle's template with `code` in place of the FILL ME IN line."""
    prologue = puzzle.template.split("// FILL ME IN")[0]
    return prologue + code


# --- 30 Pairwise Distance -------------------------------------------------------------------

PAIRWISE_LOADS = """
uint n = p_shape[0];
uint m = q_shape[0];
uint p_row = i - local_i + local_j;
if (local_i == 0 && j < m) {
    q_tile[local_j] = load_point(q, j);
} else if (local_i == 1 && p_row < n) {
    p_tile[local_j] = load_point(p, p_row);
}
"""


def pairwise(puzzle_code: str) -> str:
    return body(ch07.PAIRWISE_DISTANCE, puzzle_code)


def test_pairwise_without_barrier_is_a_race():
    source = pairwise(PAIRWISE_LOADS + """
if (i < n && j < m) {
    float3 diff = p_tile[local_i] - q_tile[local_j];
    out[i * m + j] = sqrt(dot(diff, diff));
}
""")
    result = check_kernel(ch07.PAIRWISE_DISTANCE, source)
    assert result.status == "error"
    assert any(d.kind == "race" for d in result.diagnostics)


def test_pairwise_reading_both_points_from_device_memory_is_over_budget():
    source = pairwise("""
if (i < p_shape[0] && j < q_shape[0]) {
    float3 diff = load_point(p, i) - load_point(q, j);
    out[i * q_shape[0] + j] = sqrt(dot(diff, diff));
}
""")
    result = check_kernel(ch07.PAIRWISE_DISTANCE, source)
    assert result.status == "over-budget"
    assert result.counts["global_reads"] == 2


def test_pairwise_staging_coordinates_one_by_one_is_over_budget():
    source = pairwise("""
uint n = p_shape[0];
uint m = q_shape[0];
uint p_row = i - local_i + local_j;
if (local_i == 0 && j < m) {
    q_tile[local_j] = float3(q[3 * j], q[3 * j + 1], q[3 * j + 2]);
} else if (local_i == 1 && p_row < n) {
    p_tile[local_j] = float3(p[3 * p_row], p[3 * p_row + 1], p[3 * p_row + 2]);
}
threadgroup_barrier(mem_flags::mem_threadgroup);
if (i < n && j < m) {
    float3 diff = p_tile[local_i] - q_tile[local_j];
    out[i * m + j] = sqrt(dot(diff, diff));
}
""")
    result = check_kernel(ch07.PAIRWISE_DISTANCE, source)
    assert result.status == "over-budget"
    assert result.counts["global_reads"] == 3


def test_pairwise_squared_distance_without_sqrt_fails():
    source = pairwise(PAIRWISE_LOADS + """
threadgroup_barrier(mem_flags::mem_threadgroup);
if (i < n && j < m) {
    float3 diff = p_tile[local_i] - q_tile[local_j];
    out[i * m + j] = dot(diff, diff);
}
""")
    result = check_kernel(ch07.PAIRWISE_DISTANCE, source)
    assert result.status == "fail"
    assert "visible" in result.reason


def test_pairwise_loading_tiles_without_bounds_check_reads_past_the_points():
    source = pairwise("""
uint n = p_shape[0];
uint m = q_shape[0];
if (local_i == 0) q_tile[local_j] = load_point(q, j);
if (local_i == 1) p_tile[local_j] = load_point(p, i - local_i + local_j);
threadgroup_barrier(mem_flags::mem_threadgroup);
if (i < n && j < m) {
    float3 diff = p_tile[local_i] - q_tile[local_j];
    out[i * m + j] = sqrt(dot(diff, diff));
}
""")
    result = check_kernel(ch07.PAIRWISE_DISTANCE, source)
    assert result.status == "error"
    assert any(d.kind == "out-of-bounds" for d in result.diagnostics)


def test_pairwise_with_rows_and_columns_swapped_fails():
    source = pairwise(PAIRWISE_LOADS + """
threadgroup_barrier(mem_flags::mem_threadgroup);
if (i < n && j < m) {
    float3 diff = p_tile[local_i] - q_tile[local_j];
    out[j * n + i] = sqrt(dot(diff, diff));
}
""")
    result = check_kernel(ch07.PAIRWISE_DISTANCE, source)
    assert result.status == "fail"


def test_pairwise_hidden_cases_have_coincident_points_and_partial_tiles():
    cases = ch07.PAIRWISE_DISTANCE.hidden(np.random.default_rng(0))
    distances = [np.array(ch07.pairwise_distance_spec(*map(mx.array, c.inputs))) for c in cases]
    assert any((d == 0).any() for d in distances)
    assert any(c.output_shape[0] % ch07.TILE and c.output_shape[1] % ch07.TILE for c in cases)


# --- 31 Indexed Distance --------------------------------------------------------------------


def indexed(expression: str, reads: str = "") -> str:
    """An indexed-distance body whose ball/cube value is `expression` of `diff` and `m`."""
    reads = reads or "float3 diff = load_point(a, a_idx[t]) - load_point(b, b_idx[t]);"
    return body(ch07.INDEXED_DISTANCE, f"""
uint n = a_idx_shape[0];
if (t < n) {{
    {reads}
    float3 m = abs(diff);
    out[kind * n + t] = {expression};
}}
""")


CUBE = "max(max(m.x, m.y), m.z)"
BALL = "sqrt(dot(diff, diff))"


@pytest.mark.parametrize(
    "expression",
    [
        f"kind == 0 ? dot(diff, diff) : {CUBE}",                      # forgot the sqrt
        f"kind == 0 ? {BALL} : m.x + m.y + m.z",                        # L1, not L-inf
        f"kind == 0 ? {BALL} : max(max(diff.x, diff.y), diff.z)",      # forgot the abs
        f"kind == 0 ? {CUBE} : {BALL}",                                 # kinds swapped
        f"kind == 0 ? {BALL} : length(diff)",                           # ball for both
    ],
    ids=["missing-sqrt", "cube-as-l1", "cube-without-abs", "kinds-swapped", "ball-for-both"],
)
def test_indexed_distance_with_a_wrong_norm_fails(expression):
    result = check_kernel(ch07.INDEXED_DISTANCE, indexed(expression))
    assert result.status == "fail", result.text


def test_indexed_distance_with_the_first_ports_cosine_formula_fails():
    # 1 - sum(a - b) / (|a| |b|): a sum of differences where a dot product belongs.
    reads = """float3 pa = load_point(a, a_idx[t]);
    float3 pb = load_point(b, b_idx[t]);
    float3 diff = pa - pb;"""
    expression = "1.0f - (diff.x + diff.y + diff.z) / (length(pa) * length(pb))"
    result = check_kernel(ch07.INDEXED_DISTANCE, indexed(expression, reads))
    assert result.status == "fail"
    assert "visible" in result.reason


def test_indexed_distance_ignoring_the_indices_is_rejected():
    reads = "float3 diff = load_point(a, t) - load_point(b, t);"
    result = check_kernel(ch07.INDEXED_DISTANCE, indexed(f"kind == 0 ? {BALL} : {CUBE}", reads))
    assert result.status in ("fail", "error")  # wrong pairs, or reading past the points


def test_indexed_distance_loading_coordinates_one_by_one_is_over_budget():
    reads = """float3 diff = float3(a[3 * a_idx[t]], a[3 * a_idx[t] + 1], a[3 * a_idx[t] + 2])
        - float3(b[3 * b_idx[t]], b[3 * b_idx[t] + 1], b[3 * b_idx[t] + 2]);"""
    result = check_kernel(ch07.INDEXED_DISTANCE, indexed(f"kind == 0 ? {BALL} : {CUBE}", reads))
    assert result.status == "over-budget"
    assert result.counts["global_reads"] > 4


def test_indexed_distance_without_the_guard_reads_past_the_indices():
    source = body(ch07.INDEXED_DISTANCE, f"""
uint n = a_idx_shape[0];
float3 diff = load_point(a, a_idx[t]) - load_point(b, b_idx[t]);
float3 m = abs(diff);
if (t < n) out[kind * n + t] = kind == 0 ? {BALL} : {CUBE};
""")
    result = check_kernel(ch07.INDEXED_DISTANCE, source)
    assert result.status == "error"
    assert any(d.kind == "out-of-bounds" for d in result.diagnostics)


def test_indexed_distance_hidden_cases_repeat_indices_and_pair_coincident_points():
    case = ch07.INDEXED_DISTANCE.hidden(np.random.default_rng(0))[0]
    a, a_idx, b, b_idx = case.inputs
    assert (a.shape[0], b.shape[0], a_idx.size) == (50, 70, 500)   # the spec's puzzle tier
    assert np.bincount(a_idx).max() >= 64 and np.bincount(b_idx).max() > 1
    assert (np.array(ch07.indexed_distance_spec(*map(mx.array, case.inputs))) == 0).any()


# --- 32 Radius Mask -------------------------------------------------------------------------


def mask(comparison: str) -> str:
    return body(ch07.RADIUS_MASK, f"""
uint n = a_idx_shape[0];
if (t < n) {{
    float3 diff = load_point(a, a_idx[t]) - load_point(b, b_idx[t]);
    float3 m = abs(diff);
    float d = kind == 0 ? {BALL} : {CUBE};
    float d2 = kind == 0 ? dot(diff, diff) : d * d;
    float r = radius[0];
    out[kind * n + t] = {comparison};
}}
""")


def test_radius_mask_with_strict_comparison_loses_the_ties():
    result = check_kernel(ch07.RADIUS_MASK, mask("d < r"))
    assert result.status == "fail"


def test_radius_mask_comparing_the_squared_distance_with_the_radius_fails():
    result = check_kernel(ch07.RADIUS_MASK, mask("d2 <= r"))
    assert result.status == "fail"


def test_radius_mask_comparing_squared_distance_with_squared_radius_passes():
    # No sqrt at all: the same test for these inputs, ties included.
    assert check_kernel(ch07.RADIUS_MASK, mask("d2 <= r * r")).passed


def test_radius_mask_cases_have_pairs_exactly_at_the_radius_in_both_norms():
    puzzle = ch07.RADIUS_MASK
    for case in [puzzle.visible, *puzzle.hidden(np.random.default_rng(0))[:2]]:
        a, a_idx, b, b_idx, radius = case.inputs
        diff = a[a_idx].astype(np.float64) - b[b_idx]
        ball, cube = np.sqrt((diff * diff).sum(-1)), np.abs(diff).max(-1)
        assert (ball == radius[0]).sum() >= 1 and (cube == radius[0]).sum() >= 1
