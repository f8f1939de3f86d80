"""Typical beginner mistakes, each a mutant of a reference solution (solutions/): the verdict
names the cause (the diagnosis kind) and its hint leads to the bug, not away from it."""

from __future__ import annotations

import re

import mlx.core as mx
import numpy as np
import pytest

from puzzles.catalog import Case, find
from puzzles.checking import CheckResult, KernelArgs, check_cases, check_kernel
from utils import MetalKernel, MetalProblem

# What the old verdicts said about a wrong index: advice that points away from the bug.
ONE_WRITER_ADVICE = "if (i == 0)"


def mutant(number: int, old: str, new: str) -> str:
    """The reference solution of puzzle `number` with `old` replaced by `new` (which must be
    there: a mutant that equals the solution would prove nothing)."""
    source = find(number).solution()
    assert old in source, f"puzzle {number}'s solution has no {old!r}"
    return source.replace(old, new)


def check(number: int, source: str) -> CheckResult:
    return check_kernel(find(number), source)


# --- wrong index ----------------------------------------------------------------------------

PUZZLE_6_LOCAL_INDEX = ("uint i = threadgroup_position_in_grid.x * "
                        "dispatch_threads_per_threadgroup.x + thread_position_in_threadgroup.x;",
                        "uint i = thread_position_in_threadgroup.x;")


def test_threadgroups_with_the_position_in_the_threadgroup_as_index_is_a_wrong_index():
    result = check(6, mutant(6, *PUZZLE_6_LOCAL_INDEX))
    assert result.status == "fail"
    assert result.cause.kind == "wrong-index"
    assert result.reason.startswith("wrong-index (line 3) on the visible case: out[0] is "
                                    "written by 3 threads, while no thread writes out[4]")
    # threads (0,0,0), (4,0,0), (8,0,0) share element 0: the hint follows one of the others
    assert "threads (0, 0, 0), (4, 0, 0), (8, 0, 0) all write out[0]" in result.cause.detail
    assert "thread (4, 0, 0)" in result.cause.hint
    assert "restarts at 0 in every threadgroup" in result.cause.hint


def test_a_wrong_index_is_not_reported_as_a_race_error_nor_fixed_with_one_writer():
    result = check(6, mutant(6, *PUZZLE_6_LOCAL_INDEX))
    assert not any(d.kind == "race" for d in result.diagnostics)
    assert "benign race" not in result.text
    assert ONE_WRITER_ADVICE not in result.text


def test_threadgroups_2d_with_x_in_the_y_index_is_a_wrong_index_naming_a_thread_off_row_0():
    source = mutant(7, "uint j = threadgroup_position_in_grid.y * "
                       "dispatch_threads_per_threadgroup.y + thread_position_in_threadgroup.y;",
                    "uint j = threadgroup_position_in_grid.x * "
                    "dispatch_threads_per_threadgroup.x + thread_position_in_threadgroup.x;")
    result = check(7, source)
    assert result.status == "fail" and result.cause.kind == "wrong-index"
    culprit = re.search(r"thread \((\d+), (\d+), 0\)", result.cause.hint)
    assert culprit and culprit.group(2) != "0"   # its y is what the index ignores
    assert ".x and .y are different directions" in result.cause.hint
    assert ONE_WRITER_ADVICE not in result.text


MAP_2D_TRANSPOSED_READ = ("= a[thread_y * cols + thread_x] + 10",
                          "= a[thread_x * cols + thread_y] + 10")


def test_map_2d_reading_transposed_says_the_values_land_on_the_wrong_elements():
    result = check(4, mutant(4, *MAP_2D_TRANSPOSED_READ))
    # a non-square hidden case reads past the end of `a`: a real error, and it stays one
    assert result.status == "error"
    assert any(d.kind == "out-of-bounds" for d in result.diagnostics)
    # ... but the verdict leads with the cause the square visible case shows
    assert result.cause.kind == "wrong-index"
    assert result.shown is result.cases[0]
    assert result.reason.startswith("wrong-index (line 6) on the visible case: the values "
                                    "land on the wrong elements; and out-of-bounds (line 6) "
                                    "on hidden case ")
    assert "transposed" in result.cause.detail
    assert "which thread position gives the row and which the column" in result.cause.hint


def test_map_2d_reading_transposed_points_the_out_of_bounds_read_at_the_index_not_a_guard():
    result = check(4, mutant(4, *MAP_2D_TRANSPOSED_READ))
    oob = next(d for d in result.diagnostics if d.kind == "out-of-bounds")
    # a guard would hide the transposed index: the hint must lead to the index
    assert "guard the access" not in oob.hint and "guard the access" not in result.text
    assert "the index expression is likely wrong" in oob.hint
    assert "rows and columns swapped" in oob.hint
    assert "already behind the test at line 5" in oob.hint   # the solution's bounds check
    # the cause points at the access that also goes out of bounds
    assert (result.cause.line, result.cause.column) == (oob.line, oob.column)
    assert "goes out of bounds (a thread read element" in result.cause.detail
    # both cases the reason names can be opened
    faulted = result.also
    assert faulted is not None and faulted.label.startswith("hidden ")
    case = faulted.label.split()[1]
    assert f"problem.show(case={case})" in result.text


def test_map_2d_with_the_wrong_row_length_is_an_index_past_the_end_not_a_missing_guard():
    # square visible cases hide it; a non-square hidden case reads past the end of `a`
    result = check(4, mutant(4, "= a[thread_y * cols + thread_x] + 10",
                             "= a[thread_y * rows + thread_x] + 10"))
    assert result.status == "error"
    oob = next(d for d in result.diagnostics if d.kind == "out-of-bounds")
    assert result.reason.startswith("out-of-bounds (line 6) on hidden case ")
    assert "guard the access" not in oob.hint
    assert "already behind the test at line 5" in oob.hint
    assert "how long a row is" in oob.hint


def test_threadgroups_2d_reading_transposed_names_the_wrong_index_and_no_guard():
    result = check(7, mutant(7, "= a[j * cols + i] + 10", "= a[i * cols + j] + 10"))
    assert result.status == "error" and result.cause.kind == "wrong-index"
    assert "the values land on the wrong elements; and out-of-bounds (line 6)" in result.reason
    assert "guard the access" not in result.text


# --- unsigned wrap-around -------------------------------------------------------------------


def test_pooling_with_local_i_minus_1_at_least_0_explains_the_unsigned_wrap_around():
    result = check(9, mutant(9, "if (local_i >= 1)", "if (local_i - 1 >= 0)"))
    assert result.status == "error"
    oob = next(d for d in result.diagnostics if d.kind == "out-of-bounds")
    assert "element 4294967295" in oob.detail
    assert "-1 wrapped around" in oob.detail and "`0u - 1` is 4294967295" in oob.detail
    assert "an unsigned one that went below zero" in result.reason
    assert "`i - 1 >= 0` is always true" in oob.hint
    # the kernel has a bounds check already: "add one" would point away
    assert "guard the access" not in oob.hint


# --- integer truncation ---------------------------------------------------------------------


def test_dot_product_with_an_int_accumulator_is_integer_truncation():
    result = check(10, mutant(10, "float total = 0.0f;", "int total = 0;"))
    assert result.status == "fail"
    assert result.cause.kind == "integer-truncation"
    assert "`int`" in result.cause.hint and "accumulator" in result.cause.hint
    # the visible case's values are whole numbers: only a hidden case shows it
    assert result.shown.label.startswith("hidden")
    assert "does your kernel depend on the actual input values" not in result.text


# --- lost updates ---------------------------------------------------------------------------


def test_mvmr_with_an_atomic_load_then_store_is_a_lost_update():
    source = mutant(23, "atomic_fetch_add_explicit(&out[(r * G + g) * M + m], acc, "
                        "memory_order_relaxed);",
                    "float old = atomic_load_explicit(&out[(r * G + g) * M + m], "
                    "memory_order_relaxed);\n"
                    "atomic_store_explicit(&out[(r * G + g) * M + m], old + acc, "
                    "memory_order_relaxed);")
    result = check(23, source)
    assert result.status == "error"
    lost = next(d for d in result.diagnostics if d.kind == "lost-update")
    assert lost.severity == "error" and lost.line == 13
    assert "at line 12" in lost.detail
    assert "atomic_fetch_*_explicit" in lost.hint
    assert "barrier" not in lost.hint


# --- stale tiles ----------------------------------------------------------------------------


def test_tiled_matmul_without_the_barrier_after_the_tile_is_used_reads_a_stale_tile():
    source = mutant(19, "    // Nobody may overwrite the tiles while another thread still reads "
                        "them.\n    threadgroup_barrier(mem_flags::mem_threadgroup);\n", "")
    result = check(19, source)
    assert result.status == "error"
    race = next(d for d in result.diagnostics if d.kind == "race")
    assert "in the next iteration" in race.detail
    assert "at the end of the loop body" in race.hint


def test_tiled_matmul_without_the_barrier_after_loading_reads_a_tile_not_yet_loaded():
    source = mutant(19, "    threadgroup_barrier(mem_flags::mem_threadgroup);\n    for (uint k",
                    "    for (uint k")
    result = check(19, source)
    assert result.status == "error"
    race = next(d for d in result.diagnostics if d.kind == "race")
    assert "threadgroup_barrier" in race.hint


# --- CUDA habits ----------------------------------------------------------------------------

CUDA_INDEX = "uint i = blockIdx.x * blockDim.x + threadIdx.x;"


@pytest.mark.parametrize(("number", "old", "new", "name", "metal"), [
    (6, PUZZLE_6_LOCAL_INDEX[0], CUDA_INDEX, "blockIdx", "threadgroup_position_in_grid"),
    (6, PUZZLE_6_LOCAL_INDEX[0], "uint i = threadIdx.x;", "threadIdx",
     "thread_position_in_threadgroup"),
    (6, PUZZLE_6_LOCAL_INDEX[0], "uint i = threadgroup_position_in_grid.x * blockDim.x + "
     "thread_position_in_threadgroup.x;", "blockDim", "threads_per_threadgroup"),
    (7, "uint rows = a_shape[0];", "uint rows = a_shape[0] + 0 * gridDim.x;", "gridDim",
     "threadgroups_per_grid"),
    (8, "threadgroup_barrier(mem_flags::mem_threadgroup);", "__syncthreads();",
     "__syncthreads", "threadgroup_barrier(mem_flags::mem_threadgroup)"),
    (8, "threadgroup float shared[THREADGROUP_MEM_SIZE];",
     "__shared__ float shared[THREADGROUP_MEM_SIZE];", "__shared__", "threadgroup"),
    (22, "atomic_fetch_add_explicit(&out[idx[t] * C + c], x[t * C + c], memory_order_relaxed);",
     "atomicAdd(&out[idx[t] * C + c], x[t * C + c]);", "atomicAdd",
     "atomic_fetch_add_explicit"),
])
def test_cuda_names_get_a_compile_error_naming_metals(number, old, new, name, metal):
    result = check(number, mutant(number, old, new))
    assert result.status == "error"
    error = result.diagnostics[0]
    assert error.kind == "compile" and f"'{name}'" in error.message
    assert f"'{name}' is CUDA's" in error.hint and metal in error.hint
    assert error.line == 1 + new.count("\n") + mutant(number, old, new).split(new)[0].count("\n")


# --- a whole kernel function as source ------------------------------------------------------

PASTED_MAP = """\
#include <metal_stdlib>
using namespace metal;

kernel void map(device const float* a [[buffer(0)]], device float* out [[buffer(1)]],
                uint3 thread_position_in_grid [[thread_position_in_grid]]) {
%s}
"""


@pytest.mark.parametrize("head", ["kernel void map(", "[[kernel]] void map(",
                                  "__global__ void map("])
def test_a_kernel_function_pasted_as_source_is_explained(head):
    body = "".join(f"    {line}\n" for line in find(1).solution().splitlines())
    source = (PASTED_MAP % body).replace("kernel void map(", head)
    result = check(1, source)
    assert result.status == "error"
    error = result.diagnostics[0]
    assert error.kind == "compile" and (error.line, error.column) == (4, 1)
    assert "'map' is a whole kernel function" in error.message
    assert "`source` is only the body" in error.message
    assert "puts `source` between its braces" in error.hint
    assert "Helper functions go in header=" in error.hint
    assert "inside a function body" not in error.message   # the helper-function error


# --- hidden-case reports --------------------------------------------------------------------


def test_a_hidden_case_failure_shows_that_case_and_ends_with_the_call_that_draws_it():
    result = check(10, mutant(10, "float total = 0.0f;", "int total = 0;"))
    label = result.shown.label
    number = label.split()[1]
    assert f"on hidden case {number}:" in result.reason
    assert f"\nHidden case {number}: grid" in result.text
    a_values = " ".join(f"{v:.4g}" for v in result.shown.case.inputs[0][:2])
    assert a_values.split()[0] in result.text   # the arrays are that case's
    assert result.text.splitlines()[-1] == (
        f"To see hidden case {number}: problem.show(case={number}) draws it, "
        f"problem.explore(case={number}) explores it.")


def test_the_case_the_headline_names_is_the_case_whose_arrays_are_shown():
    # Wrong on the visible case, out of bounds on a larger hidden one: the error comes first.
    map_puzzle = find(1)
    visible = map_puzzle.visible
    larger = Case((np.arange(6, dtype=np.float32),), (6,), (8, 1, 1))
    args = KernelArgs("map", ("a",), ("out",), "uint i = thread_position_in_grid.x;\n"
                                                "out[i] = a[i] + 11;\n")
    result = check_cases("Map", [("visible", visible), ("hidden 1", larger)], map_puzzle.spec,
                         lambda _case: args, {})
    assert "on hidden case 1" in result.reason and result.shown.label == "hidden 1"
    assert "\nHidden case 1: grid (8, 1, 1)" in result.text
    assert "The visible case:" not in result.text
    assert result.text.splitlines()[-1].startswith("To see hidden case 1: problem.show(case=1)")


def test_the_show_and_explore_calls_the_verdict_names_exist_and_draw_that_case():
    puzzle = find(10)
    source = mutant(10, "float total = 0.0f;", "int total = 0;")

    def dot_test(a: mx.array, b: mx.array) -> MetalKernel:
        return MetalKernel(name=puzzle.kernel, input_names=["a", "b"], output_names=["out"],
                           source=source, header=puzzle.header)

    visible = puzzle.visible
    problem = MetalProblem("Dot Product", dot_test, [mx.array(x) for x in visible.inputs],
                           visible.output_shape, grid=visible.grid,
                           threadgroup=visible.threadgroup)
    problem.check()
    number = int(problem.result.shown.label.split()[1])
    assert problem.show(case=number) is not None
    explorer = problem.explore(case=number)
    shown = problem.result.shown.case
    assert tuple(explorer.report.grid) == tuple(shown.grid)


def test_writing_through_the_position_in_the_threadgroup_is_a_wrong_index_before_a_race():
    # Different values this time: a real race, but the cause the verdict names is the index.
    result = check(6, mutant(6, "out[i] = a[i] + 10;",
                             "out[thread_position_in_threadgroup.x] = a[i] + 10;"))
    assert result.status == "error" and result.cause.kind == "wrong-index"
    assert result.reason.startswith("wrong-index (line 3)")
    assert "thread (4, 0, 0)" in result.cause.hint


# --- guards and barriers ----------------------------------------------------------------------


def test_guard_without_the_bounds_check_is_out_of_bounds_with_a_guard_hint():
    result = check(3, mutant(3, "if (local_i < a_shape[0]) {\n    out[local_i] = a[local_i] + 10;"
                                "\n}", "out[local_i] = a[local_i] + 10;"))
    assert result.status == "error"
    assert result.findings[0].kind == "out-of-bounds"
    assert "bounds check" in result.findings[0].hint


def test_pooling_with_the_barrier_inside_the_guard_is_a_divergent_barrier_on_a_partial_case():
    source = mutant(9, "}\nthreadgroup_barrier(mem_flags::mem_threadgroup);\n\n"
                       "if (i < a_shape[0]) {",
                    "    threadgroup_barrier(mem_flags::mem_threadgroup);\n")
    result = check(9, source)
    assert result.status == "error" and result.findings[0].kind == "divergent-barrier"
    assert "move it out of the condition" in result.findings[0].hint
    number = result.shown.label.split()[1]   # only a partial threadgroup shows it
    assert result.text.splitlines()[-1].startswith(
        f"To see hidden case {number}: problem.show(case={number})")
