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
