"""Notebook 02 (puzzles 8-11): the Metal-Puzzles launches, the general-case convolution, and
plausible wrong kernels rejected for the right reason."""

import pytest

from puzzles import ch02_threadgroup_memory  # noqa: F401 - registers the puzzles
from puzzles.catalog import GLOBAL_INDEX_X, find
from puzzles.checking import check_kernel

PROLOGUE = ("threadgroup float shared[THREADGROUP_MEM_SIZE];\n" + GLOBAL_INDEX_X
            + "uint local_i = thread_position_in_threadgroup.x;\n")

POOLING_NO_BARRIER = PROLOGUE + """
shared[local_i] = a[i];
float total = shared[local_i];
if (local_i >= 1) total += shared[local_i - 1];
if (local_i >= 2) total += shared[local_i - 2];
out[i] = total;
"""

POOLING_FROM_DEVICE = PROLOGUE + """
if (i >= a_shape[0]) return;
float total = a[i];
if (i >= 1) total += a[i - 1];
if (i >= 2) total += a[i - 2];
out[i] = total;
"""

POOLING_DIVERGENT_BARRIER = PROLOGUE + """
shared[local_i] = a[i];
if (local_i >= 2) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = shared[local_i] + shared[local_i - 1] + shared[local_i - 2];
} else {
    out[i] = a[i] + (local_i == 1 ? a[0] : 0);
}
"""

DOT_EVERY_THREAD_WRITES = PROLOGUE + """
shared[local_i] = a[i] * b[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
float total = 0;
for (uint k = 0; k < 8; k++) total += shared[k];
out[0] = total;
"""

DOT_NO_BARRIER = PROLOGUE + """
shared[local_i] = a[i] * b[i];
if (local_i == 0) {
    float total = 0;
    for (uint k = 0; k < 8; k++) total += shared[k];
    out[0] = total;
}
"""

CONV_PROLOGUE = GLOBAL_INDEX_X + """\
uint local_i = thread_position_in_threadgroup.x;
threadgroup float tile[THREADGROUP_MAX_CONV_SIZE];
threadgroup float filter[MAX_CONV];
uint n = a_shape[0];
uint k = b_shape[0];
"""

# Treats everything past its own threadgroup's tile as zero: right for one threadgroup only.
CONV_NO_HALO = CONV_PROLOGUE + """
tile[local_i] = i < n ? a[i] : 0.0f;
if (local_i < k) filter[local_i] = b[local_i];
threadgroup_barrier(mem_flags::mem_threadgroup);
if (i < n) {
    float total = 0;
    for (uint j = 0; j < k && local_i + j < 8; j++) total += tile[local_i + j] * filter[j];
    out[i] = total;
}
"""

CONV_FROM_DEVICE = """\
uint i = thread_position_in_grid.x;
if (i < a_shape[0]) {
    float total = 0;
    for (uint j = 0; j < b_shape[0]; j++) {
        if (i + j < a_shape[0]) total += a[i + j] * b[j];
    }
    out[i] = total;
}
"""

# Assumes filters of exactly 3 taps (the visible case): wrong for 4, out of bounds for 2.
CONV_THREE_TAPS = CONV_PROLOGUE + """
tile[local_i] = i < n ? a[i] : 0.0f;
if (local_i < 3) filter[local_i] = b[local_i];
else if (local_i < 5) tile[8 + local_i - 3] = i + 5 < n ? a[i + 5] : 0.0f;
threadgroup_barrier(mem_flags::mem_threadgroup);
if (i < n) out[i] = tile[local_i] * filter[0] + tile[local_i + 1] * filter[1]
                    + tile[local_i + 2] * filter[2];
"""


def test_launches_are_those_of_metal_puzzles():
    shared, pooling, dot, conv = map(find, range(8, 12))
    assert (shared.visible.grid, shared.visible.threadgroup) == ((8, 1, 1), (4, 1, 1))
    assert (pooling.visible.grid, pooling.visible.threadgroup) == ((8, 1, 1), (8, 1, 1))
    assert dot.visible.output_shape == (1,)
    simple, full = conv.cases_by_title["1D Conv (Simple)"], conv.cases_by_title["1D Conv (Full)"]
    assert [x.shape for x in simple.inputs] == [(6,), (3,)] and simple.grid == (8, 1, 1)
    assert [x.shape for x in full.inputs] == [(15,), (4,)] and full.grid == (16, 1, 1)


def test_convolution_hidden_cases_cover_other_sizes_and_several_threadgroups():
    result = check_kernel(find(11), find(11).solution())
    shapes = {(c.case.inputs[0].shape[0], c.case.inputs[1].shape[0]) for c in result.cases}
    assert {(16, 4), (21, 2), (11, 1)} <= shapes
    assert any(c.case.grid[0] // c.case.threadgroup[0] >= 3 for c in result.cases)


@pytest.mark.parametrize(("number", "source", "status", "kind"), [
    (8, PROLOGUE + "shared[local_i] = a[i];\nthreadgroup_barrier(mem_flags::mem_threadgroup);\n"
        "out[i] = shared[i] + 10;", "error", "out-of-bounds"),
    (8, PROLOGUE + "shared[local_i] = a[i];\nout[i] = shared[3 - local_i] + 10;",
     "error", "race"),
    (9, POOLING_NO_BARRIER, "error", "race"),
    (9, POOLING_FROM_DEVICE, "over-budget", None),
    (9, POOLING_DIVERGENT_BARRIER, "error", "divergent-barrier"),
    (10, DOT_EVERY_THREAD_WRITES, "error", "race"),
    (10, DOT_NO_BARRIER, "error", "race"),
    (11, CONV_NO_HALO, "fail", None),
    (11, CONV_FROM_DEVICE, "over-budget", None),
    (11, CONV_THREE_TAPS, "error", "out-of-bounds"),
])
def test_wrong_kernel_is_rejected_for_the_right_reason(number, source, status, kind):
    result = check_kernel(find(number), source)
    assert result.status == status, result.text
    if kind is not None:
        assert kind in {d.kind for d in result.diagnostics}


def test_convolution_without_halo_passes_the_simple_case_but_not_the_full_one():
    result = check_kernel(find(11), CONV_NO_HALO)
    by_label = {c.label: c for c in result.cases}
    assert not by_label["visible"].mismatches
    assert by_label["1D Conv (Full)"].mismatches


# Puzzle 8 as Metal-Puzzles' notebook gives it: the barrier inside `if (i < a_shape[0])` and the
# index from `threads_per_threadgroup`; the learner writes only the guarded store.
SHARED_METAL_PUZZLES = """
threadgroup float shared[THREADGROUP_MEM_SIZE];
uint i = threadgroup_position_in_grid.x * threads_per_threadgroup.x
    + thread_position_in_threadgroup.x;
uint local_i = thread_position_in_threadgroup.x;
if (i < a_shape[0]) {
    shared[local_i] = a[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (i < a_shape[0]) out[i] = shared[local_i] + 10;
"""

SHARED_UNGUARDED_STORE = PROLOGUE + """
if (i < a_shape[0]) shared[local_i] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
out[i] = shared[local_i] + 10;
"""

# Pooling with its barrier inside the guard: the learner's own barrier, wrong when the grid runs
# past the end of `a` inside a threadgroup.
POOLING_BARRIER_IN_IF = PROLOGUE + """
if (i < a_shape[0]) {
    shared[local_i] = a[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float total = shared[local_i];
    if (local_i > 0) total += shared[local_i - 1];
    if (local_i > 1) total += shared[local_i - 2];
    out[i] = total;
}
"""


def test_puzzle_8_passes_with_the_lines_metal_puzzles_gives():
    result = check_kernel(find(8), SHARED_METAL_PUZZLES)
    assert result.passed, result.text
    partial = [c for c in result.cases if c.case.grid[0] < c.case.threadgroup[0]]
    past_the_end = [c for c in result.cases if c.case.grid[0] > c.case.inputs[0].shape[0]]
    assert partial and past_the_end  # launches that test the learner's guard still run


def test_puzzle_8_without_the_guard_on_the_store_fails_on_the_grid_past_the_end():
    result = check_kernel(find(8), SHARED_UNGUARDED_STORE)
    assert result.status == "error", result.text
    assert "out-of-bounds" in {d.kind for d in result.diagnostics}
    assert result.cases[0].correct  # the visible case alone would not show it


def test_pooling_with_its_barrier_inside_the_guard_fails_on_a_short_last_threadgroup():
    result = check_kernel(find(9), POOLING_BARRIER_IN_IF)
    assert result.status == "error", result.text
    assert "divergent-barrier" in {d.kind for d in result.diagnostics}
    assert result.cases[0].correct


def test_conv_simple_is_a_stepping_stone_checked_on_one_threadgroup_only(capsys):
    import mlx.core as mx

    from utils import MetalKernel, MetalProblem

    def no_halo(a, b):
        return MetalKernel(name="1D_conv", input_names=["a", "b"], output_names=["out"],
                           header=find(11).header, source=CONV_NO_HALO)

    simple = find(11).cases_by_title["1D Conv (Simple)"]
    full = find(11).cases_by_title["1D Conv (Full)"]
    for title, case, passes in (("1D Conv (Simple)", simple, True),
                                ("1D Conv (Full)", full, False),
                                ("1D Convolution", simple, False)):
        problem = MetalProblem(title, no_halo, [mx.array(x) for x in case.inputs],
                               case.output_shape, grid=case.grid, threadgroup=case.threadgroup)
        problem.check()
        result = problem.result
        assert bool(result) is passes, (title, result.text)
        if passes:
            assert all(c.case.grid[0] == c.case.threadgroup[0] for c in result.cases)
