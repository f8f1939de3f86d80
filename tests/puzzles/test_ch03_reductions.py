"""Notebook 03 (puzzles 12-17): reference solutions pass, templates fail, and plausible wrong
kernels are rejected for the right reason."""

import pytest

from puzzles import ch03_reductions as ch03
from puzzles.catalog import find
from puzzles.checking import check_kernel

PUZZLES = [ch03.BLOCK_SUM, ch03.AXIS_SUM, ch03.SIMD_SUM, ch03.BLOCK_REDUCE, ch03.SCAN,
           ch03.HISTOGRAM]

BLOCK_SUM_PROLOGUE = ch03.BLOCK_SUM.template.split("// FILL ME IN")[0]


@pytest.mark.parametrize("puzzle", PUZZLES, ids=lambda p: p.slug)
def test_reference_solution_passes_visible_titled_and_hidden_cases(puzzle):
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


def test_block_sum_keeps_the_metal_puzzles_prefix_sum_titles_and_cases():
    cases = ch03.BLOCK_SUM.cases_by_title
    assert set(cases) == {"Prefix Sum (Simple)", "Prefix Sum (Full)"}
    assert ch03.BLOCK_SUM.title == "Block Sum"
    assert cases["Prefix Sum (Simple)"].grid == (8, 1, 1)
    assert cases["Prefix Sum (Full)"].grid == (16, 1, 1)
    assert cases["Prefix Sum (Full)"].output_shape == (2,)


def test_block_sum_without_barrier_after_the_copy_is_a_race():
    source = BLOCK_SUM_PROLOGUE + """
cache[local_i] = i < a_shape[0] ? float(a[i]) : 0.0f;
for (uint stride = THREADGROUP_MEM_SIZE / 2; stride > 0; stride /= 2) {
    if (local_i < stride) cache[local_i] += cache[local_i + stride];
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (local_i == 0) out[threadgroup_position_in_grid.x] = cache[0];
"""
    result = check_kernel(ch03.BLOCK_SUM, source)
    assert result.status == "error"
    assert any(d.kind == "race" for d in result.diagnostics)


def test_block_sum_with_barrier_inside_the_branch_is_a_divergent_barrier():
    source = BLOCK_SUM_PROLOGUE + """
cache[local_i] = i < a_shape[0] ? float(a[i]) : 0.0f;
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint stride = THREADGROUP_MEM_SIZE / 2; stride > 0; stride /= 2) {
    if (local_i < stride) {
        cache[local_i] += cache[local_i + stride];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
}
if (local_i == 0) out[threadgroup_position_in_grid.x] = cache[0];
"""
    result = check_kernel(ch03.BLOCK_SUM, source)
    assert result.status == "error"
    assert any(d.kind == "divergent-barrier" for d in result.diagnostics)


def test_block_sum_by_one_thread_reading_its_whole_block_is_over_budget():
    source = BLOCK_SUM_PROLOGUE + """
if (local_i == 0) {
    float s = 0;
    for (uint k = i; k < i + THREADGROUP_MEM_SIZE && k < a_shape[0]; ++k) s += a[k];
    out[threadgroup_position_in_grid.x] = s;
}
"""
    result = check_kernel(ch03.BLOCK_SUM, source)
    assert result.status == "over-budget"
    assert result.counts["global_reads"] == 8


def test_block_sum_computed_from_the_arange_formula_fails_a_hidden_case():
    # Right on every arange input (visible and Metal-Puzzles cases), reads nothing.
    source = BLOCK_SUM_PROLOGUE + """
if (local_i == 0) {
    uint first = i, last = min(i + THREADGROUP_MEM_SIZE, uint(a_shape[0]));
    out[threadgroup_position_in_grid.x] = float((first + last - 1) * (last - first)) / 2;
}
"""
    result = check_kernel(ch03.BLOCK_SUM, source)
    assert result.status == "fail"
    assert "hidden" in result.reason
    assert check_kernel(ch03.BLOCK_SUM, source, hidden=False).passed


def test_axis_sum_with_hard_coded_row_length_fails_a_hidden_case():
    source = ch03.AXIS_SUM.template.replace("// FILL ME IN (roughly 16 lines)", """
cache[local_i] = i < 6 ? float(a[batch * 6 + i]) : 0.0f;
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint stride = THREADGROUP_MEM_SIZE / 2; stride > 0; stride /= 2) {
    if (local_i < stride) cache[local_i] += cache[local_i + stride];
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (local_i == 0) out[batch] = cache[0];
""")
    assert check_kernel(ch03.AXIS_SUM, source, hidden=False).passed
    result = check_kernel(ch03.AXIS_SUM, source)
    assert result.status in ("fail", "error")  # wrong rows, or reading past the end of `a`
    assert "hidden" in result.reason


def test_simd_sum_called_inside_the_lane_zero_branch_sums_one_value():
    source = """
uint i = thread_position_in_grid.x;
uint lane = thread_index_in_simdgroup;
if (lane == 0) out[i / 32] = simd_sum(a[i]);
"""
    result = check_kernel(ch03.SIMD_SUM, source)
    assert result.status == "fail"
    assert "visible" in result.reason


def test_simd_sum_written_by_every_lane_is_redundant_writes():
    # Every lane writes the same sum: a warning for metalsim, a failure for the puzzle.
    source = """
uint i = thread_position_in_grid.x;
out[i / 32] = simd_sum(a[i]);
"""
    result = check_kernel(ch03.SIMD_SUM, source)
    assert result.status == "fail" and result.cause.kind == "redundant-writes"


def test_simd_sum_through_threadgroup_memory_is_over_budget():
    source = """
threadgroup float staged[128];
uint i = thread_position_in_grid.x;
uint t = thread_position_in_threadgroup.x;
staged[t] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
float total = simd_sum(staged[t]);
if (thread_index_in_simdgroup == 0) out[i / 32] = total;
"""
    result = check_kernel(ch03.SIMD_SUM, source)
    assert result.status == "over-budget"
    assert "shared" in result.reason


BLOCK_REDUCE_PROLOGUE = """\
threadgroup float partial[SIMDGROUPS];
uint i = thread_position_in_grid.x;
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;
float s = simd_sum(a[i]);
if (lane == 0) partial[sg] = s;
"""


def test_block_reduce_without_barrier_is_a_race():
    source = BLOCK_REDUCE_PROLOGUE + """
if (sg == 0) {
    float total = simd_sum(lane < SIMDGROUPS ? partial[lane] : 0.0f);
    if (lane == 0) out[threadgroup_position_in_grid.x] = total;
}
"""
    result = check_kernel(ch03.BLOCK_REDUCE, source)
    assert result.status == "error"
    assert any(d.kind == "race" for d in result.diagnostics)


def test_block_reduce_reading_a_partial_per_lane_overruns_the_partials():
    source = BLOCK_REDUCE_PROLOGUE + """
threadgroup_barrier(mem_flags::mem_threadgroup);
if (sg == 0) {
    float total = simd_sum(partial[lane]);
    if (lane == 0) out[threadgroup_position_in_grid.x] = total;
}
"""
    result = check_kernel(ch03.BLOCK_REDUCE, source)
    assert result.status == "error"
    assert any(d.kind == "out-of-bounds" for d in result.diagnostics)


SCAN_PROLOGUE = """\
threadgroup float totals[SIMDGROUPS];
uint i = thread_position_in_grid.x;
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;
"""


def test_scan_of_each_simdgroup_alone_misses_the_earlier_groups():
    source = SCAN_PROLOGUE + "if (i < a_shape[0]) out[i] = simd_prefix_inclusive_sum(a[i]);\n"
    result = check_kernel(ch03.SCAN, source)
    assert result.status == "fail"
    assert "visible" in result.reason


def test_scan_without_barrier_is_a_race():
    source = SCAN_PROLOGUE + """
float x = simd_prefix_inclusive_sum(a[i]);
if (lane == 31) totals[sg] = x;
for (uint g = 0; g < sg; ++g) x += totals[g];
out[i] = x;
"""
    result = check_kernel(ch03.SCAN, source)
    assert result.status == "error"
    assert any(d.kind == "race" for d in result.diagnostics)


def test_scan_from_the_triangular_number_formula_fails_a_hidden_case():
    source = SCAN_PROLOGUE + """
uint k = i % THREADS;
if (i < a_shape[0]) out[i] = float(k * (k + 1) / 2 + (i - k) * (k + 1));
"""
    assert check_kernel(ch03.SCAN, source, hidden=False).passed
    result = check_kernel(ch03.SCAN, source)
    assert result.status == "fail"
    assert "hidden" in result.reason


def test_histogram_with_plain_increments_through_a_cast_pointer_is_a_race():
    source = """
uint i = thread_position_in_grid.x;
device int* bins = (device int*)out;
bins[a[i]] += 1;
"""
    result = check_kernel(ch03.HISTOGRAM, source)
    assert result.status == "error"
    assert any(d.kind == "race" for d in result.diagnostics)


def test_histogram_with_atomic_load_then_store_loses_updates():
    source = """
uint i = thread_position_in_grid.x;
int count = atomic_load_explicit(&out[a[i]], memory_order_relaxed);
atomic_store_explicit(&out[a[i]], count + 1, memory_order_relaxed);
"""
    result = check_kernel(ch03.HISTOGRAM, source)
    assert result.status == "error"
    assert any(d.kind == "lost-update" for d in result.diagnostics)
    assert result.counts["atomics"] == 2


def test_histogram_counts_an_atomic_as_a_read_a_write_and_an_atomic():
    result = check_kernel(ch03.HISTOGRAM, ch03.HISTOGRAM.solution())
    assert result.counts == {"global_reads": 2, "global_writes": 1, "threadgroup_reads": 0,
                             "threadgroup_writes": 0, "atomics": 1}


@pytest.mark.parametrize("number", [15, 16])
def test_unguarded_block_kernel_fails_on_a_short_last_block(number):
    guarded = find(number).solution()
    unguarded = (guarded.replace("i < a_shape[0] ? a[i] : 0.0f", "a[i]")
                 .replace("lane < simdgroups_per_threadgroup", "lane < SIMDGROUPS"))
    assert unguarded != guarded
    result = check_kernel(find(number), unguarded)
    assert result.status == "error", result.text
    assert {"out-of-bounds", "uninitialized-read"} & {d.kind for d in result.diagnostics}
