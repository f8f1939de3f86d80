"""Notebook 06 (puzzles 26-29): reference solutions pass, templates fail, and plausible wrong
kernels (forgetting empty segments, the wrong identity, the wrong tie rule, a plain store where
segments share rows) are rejected for the right reason."""

import numpy as np
import pytest

from puzzles import ch06_segment_reduce as ch06
from puzzles.checking import check_kernel

PUZZLES = [ch06.SEGMENT_SUM, ch06.SEGMENT_MAX_MEAN, ch06.INDEXED_SEGMENT_MAX,
           ch06.SEGMENT_MAX_BACKWARD]

SEGMENT_PROLOGUE = ch06.SEGMENT_SUM.template.split("// FILL ME IN")[0] + """\
int len = lane < num_segments ? lengths[lane] : 0;
int start = simd_prefix_exclusive_sum(len);
int seg_start = simd_broadcast(start, s);
int seg_len = simd_broadcast(len, s);
bool inside = int(lane) < seg_len;
float v = inside ? x[(seg_start + lane) * C + c] : 0.0f;
"""
INDEXED_PROLOGUE = ch06.INDEXED_SEGMENT_MAX.template.split("// FILL ME IN")[0]
BACKWARD_PROLOGUE = INDEXED_PROLOGUE + """\
float best = y[s * C + c];
float g = gy[s * C + c];
int start = offsets[s];
int end = start + lengths[s];
"""


@pytest.mark.parametrize("puzzle", PUZZLES, ids=lambda p: p.slug)
def test_reference_solution_passes_visible_and_hidden_cases(puzzle):
    result = check_kernel(puzzle, puzzle.solution())
    assert result.passed, result.text
    assert len(result.cases) >= 5  # hidden cases ran too


@pytest.mark.parametrize("puzzle", PUZZLES, ids=lambda p: p.slug)
def test_template_as_shipped_fails_without_raising(puzzle):
    assert "// FILL ME IN" in puzzle.template
    result = check_kernel(puzzle, puzzle.template)
    assert result.status == "fail", result.text


@pytest.mark.parametrize("puzzle", PUZZLES, ids=lambda p: p.slug)
def test_reference_solution_passes_other_hidden_draws(puzzle):
    assert check_kernel(puzzle, puzzle.solution(), seed=7).passed


@pytest.mark.parametrize("puzzle", PUZZLES, ids=lambda p: p.slug)
def test_every_hidden_draw_has_an_empty_segment(puzzle):
    for case in puzzle.hidden(np.random.default_rng(0)):
        lengths = case.inputs[1] if len(case.inputs) == 2 else case.inputs[3]
        assert (lengths == 0).any()


def test_forward_solutions_use_no_atomics_and_the_backward_does():
    for puzzle in PUZZLES[:3]:
        assert check_kernel(puzzle, puzzle.solution()).counts["atomics"] == 0
    assert check_kernel(ch06.SEGMENT_MAX_BACKWARD,
                        ch06.SEGMENT_MAX_BACKWARD.solution()).counts["atomics"] > 0


# --- 26 Segment Sum -------------------------------------------------------------------------


def test_segment_sum_that_writes_only_inside_the_segment_forgets_empty_segments():
    # simd_sum over the active lanes is right, but an empty segment has no lane 0 inside it.
    source = SEGMENT_PROLOGUE + """
if (inside) {
    float total = simd_sum(v);
    if (lane == 0) out[s * C + c] = total;
}
"""
    result = check_kernel(ch06.SEGMENT_SUM, source)
    assert result.status == "fail"
    assert "visible" in result.reason
    bad_rows = {p[0] for p in result.cases[0].mismatches}
    assert bad_rows == set(np.flatnonzero(ch06.VISIBLE_LENGTHS == 0))


def test_segment_sum_with_an_inclusive_prefix_sum_reads_the_next_segment():
    source = SEGMENT_PROLOGUE.replace("simd_prefix_exclusive_sum", "simd_prefix_inclusive_sum")
    source += "float total = simd_sum(v);\nif (lane == 0) out[s * C + c] = total;\n"
    result = check_kernel(ch06.SEGMENT_SUM, source)
    assert result.status in ("fail", "error")   # wrong rows, or past the end of x
    assert "visible" in result.reason


def test_segment_sum_that_adds_up_the_earlier_lengths_in_every_thread_is_over_budget():
    source = ch06.SEGMENT_SUM.template.split("// FILL ME IN")[0] + """
int seg_start = 0;
for (uint k = 0; k < s; ++k) seg_start += lengths[k];
int seg_len = lengths[s];
float v = int(lane) < seg_len ? x[(seg_start + lane) * C + c] : 0.0f;
float total = simd_sum(v);
if (lane == 0) out[s * C + c] = total;
"""
    result = check_kernel(ch06.SEGMENT_SUM, source)
    assert result.status == "over-budget", result.text
    assert result.counts["global_reads"] > 2


# --- 27 Segment Max / Mean ------------------------------------------------------------------

MAX_MEAN_EPILOGUE = """
if (lane == 0) out[s * C + c] = biggest;
if (lane == 1) out[(num_segments + s) * C + c] = total / {divisor};
"""


def max_mean_source(biggest: str, divisor: str) -> str:
    return (SEGMENT_PROLOGUE + f"float biggest = {biggest};\nfloat total = simd_sum(v);\n"
            + MAX_MEAN_EPILOGUE.format(divisor=divisor))


def test_segment_max_mean_solution_shape_passes_as_written_here():
    source = max_mean_source("simd_max(inside ? v : -INFINITY)", "float(max(seg_len, 1))")
    assert check_kernel(ch06.SEGMENT_MAX_MEAN, source).passed


def test_segment_mean_divided_by_the_length_gives_nan_for_empty_segments():
    source = max_mean_source("simd_max(inside ? v : -INFINITY)", "float(seg_len)")
    result = check_kernel(ch06.SEGMENT_MAX_MEAN, source)
    assert result.status == "fail"
    visible = result.cases[0]
    assert {p[0] for p in visible.mismatches} == {1}   # only the mean plane is wrong
    assert np.isnan(visible.produced[1][ch06.VISIBLE_LENGTHS == 0]).all()


def test_segment_max_padded_with_zero_is_wrong_for_negative_and_empty_segments():
    source = max_mean_source("simd_max(v)", "float(max(seg_len, 1))")
    result = check_kernel(ch06.SEGMENT_MAX_MEAN, source)
    assert result.status == "fail"
    visible = result.cases[0]
    assert {p[0] for p in visible.mismatches} == {0}   # only the max plane is wrong
    assert (visible.produced[0][ch06.VISIBLE_LENGTHS == 0] == 0).all()
    assert visible.produced[0][6, 0] == 0 and visible.expected[0][6, 0] == -1


def test_segment_max_and_mean_both_written_by_lane_zero_is_over_budget():
    source = max_mean_source("simd_max(inside ? v : -INFINITY)", "float(max(seg_len, 1))")
    source = source.replace("if (lane == 1)", "if (lane == 0)")
    result = check_kernel(ch06.SEGMENT_MAX_MEAN, source)
    assert result.status == "over-budget"
    assert result.counts["global_writes"] == 2


# --- 28 Indexed Segment Reduce --------------------------------------------------------------


def test_indexed_max_started_from_the_first_element_forgets_empty_segments():
    source = INDEXED_PROLOGUE + """
int start = offsets[s];
float best = x[indices[start] * C + c];
for (int p = start + 1; p < start + lengths[s]; ++p) best = max(best, x[indices[p] * C + c]);
out[s * C + c] = best;
"""
    result = check_kernel(ch06.INDEXED_SEGMENT_MAX, source)
    # An empty segment reads the next segment's first row; the empty last segment reads past
    # the end of indices.
    assert result.status == "error"
    assert any(d.kind == "out-of-bounds" and "indices" in d.message
               for d in result.diagnostics)
    assert np.isfinite(result.cases[0].produced[1]).all()   # visible: not -inf


def test_indexed_max_without_the_gather_reads_the_wrong_rows():
    source = INDEXED_PROLOGUE + """
float best = -INFINITY;
for (int p = offsets[s]; p < offsets[s] + lengths[s]; ++p) best = max(best, x[p * C + c]);
out[s * C + c] = best;
"""
    result = check_kernel(ch06.INDEXED_SEGMENT_MAX, source)
    assert result.status in ("fail", "error")   # wrong rows, or past the end of a short x
    assert result.cases[0].mismatches


# --- 29 Segment Max Backward ----------------------------------------------------------------


def backward_source(body: str) -> str:
    return BACKWARD_PROLOGUE + "for (int p = start; p < end; ++p) {\n" + body + "}\n"


def test_max_backward_with_a_plain_add_is_a_race_between_segments_sharing_a_row():
    source = backward_source("""
    uint r = indices[p];
    device float* plain = (device float*)dx;
    if (float(x[r * C + c]) == best) plain[r * C + c] += g;
""")
    result = check_kernel(ch06.SEGMENT_MAX_BACKWARD, source)
    assert result.status == "error"
    assert any(d.kind == "race" for d in result.diagnostics)


def test_max_backward_that_stops_at_the_first_maximum_misses_ties_and_repeats():
    source = backward_source("""
    uint r = indices[p];
    if (float(x[r * C + c]) == best) {
        atomic_fetch_add_explicit(&dx[r * C + c], g, memory_order_relaxed);
        break;
    }
""")
    result = check_kernel(ch06.SEGMENT_MAX_BACKWARD, source)
    assert result.status == "fail"
    visible = result.cases[0]
    # Row 4 appears twice in segment 0 (once counted); rows 1 and 9 tie in column 0.
    assert (4, 0) in visible.mismatches and (9, 0) in visible.mismatches


def test_max_backward_that_splits_the_gradient_among_ties_is_the_wrong_rule():
    # torch.segment_reduce's rule: each of n tied maxima gets gy / n.
    source = BACKWARD_PROLOGUE + """
int ties = 0;
for (int p = start; p < end; ++p) ties += float(x[indices[p] * C + c]) == best;
for (int p = start; p < end; ++p) {
    uint r = indices[p];
    if (float(x[r * C + c]) == best) {
        atomic_fetch_add_explicit(&dx[r * C + c], g / ties, memory_order_relaxed);
    }
}
"""
    result = check_kernel(ch06.SEGMENT_MAX_BACKWARD, source)
    assert result.status == "fail"
    visible = result.cases[0]
    assert (1, 0) in visible.mismatches and (9, 0) in visible.mismatches


def test_max_backward_visible_case_gives_repeated_rows_the_gradient_once_per_occurrence():
    x, indices, offsets, lengths, y, gy = ch06.SEGMENT_MAX_BACKWARD.visible.inputs
    result = check_kernel(ch06.SEGMENT_MAX_BACKWARD, ch06.SEGMENT_MAX_BACKWARD.solution())
    dx = result.cases[0].produced
    # Row 4 is the max of segment 0 (twice) and of segment 2 (once), in every column.
    np.testing.assert_allclose(dx[4], 2 * gy[0] + gy[2], rtol=1e-6)
    assert dx[1, 0] == dx[9, 0] == gy[1, 0]   # a tie: both get the whole gradient
