"""Each run-time diagnostic: a kernel that must trigger it, and a corrected twin that must not."""

import mlx.core as mx
import numpy as np
import pytest

import metalsim


def simulate(source, inputs, out_shape, grid, threadgroup, header="", names=("a",),
             init_value=None, dtype=mx.float32):
    kernel = metalsim.metal_kernel("k", list(names), ["out"], source, header=header)
    return metalsim.simulate(kernel, inputs=inputs, output_shapes=[out_shape],
                             output_dtypes=[dtype], grid=grid, threadgroup=threadgroup,
                             init_value=init_value)


def kinds(run):
    return sorted({d.kind for d in run.report.diagnostics})


# --- out-of-bounds ---------------------------------------------------------------------------

def test_read_past_the_end_is_out_of_bounds():
    run = simulate("uint i = thread_position_in_grid.x;\nout[i] = a[i + 1];",
                   [mx.arange(8)], (8,), (8, 1, 1), (8, 1, 1))
    [d] = run.report.errors
    assert d.kind == "out-of-bounds" and d.line == 2
    assert d.threads == [(7, 0, 0)]
    assert "'a' has 8 elements" in d.message


def test_guarded_read_is_not_out_of_bounds():
    run = simulate("uint i = thread_position_in_grid.x;\n"
                   "out[i] = i + 1 < a_shape[0] ? a[i + 1] : 0;",
                   [mx.arange(8)], (8,), (8, 1, 1), (8, 1, 1))
    assert run.report.diagnostics == []
    np.testing.assert_array_equal(np.array(run.outputs[0]), [1, 2, 3, 4, 5, 6, 7, 0])


def test_threads_beyond_the_data_write_out_of_bounds():
    run = simulate("uint i = thread_position_in_grid.x;\nout[i] = a[i];",
                   [mx.arange(8)], (8,), (10, 1, 1), (4, 1, 1))
    assert kinds(run) == ["out-of-bounds"]
    assert {t for d in run.report.errors for t in d.threads} == {(8, 0, 0), (9, 0, 0)}


TRANSPOSED_2D = ("uint x = thread_position_in_grid.x;\n"
                 "uint y = thread_position_in_grid.y;\n"
                 "uint rows = a_shape[0];\n"
                 "uint cols = a_shape[1];\n")


def out_of_bounds_hint(source: str) -> str:
    """The hint of the one out-of-bounds error of `source` on a 2x4 input (rows x columns)."""
    run = simulate(TRANSPOSED_2D + source, [mx.arange(8).reshape(2, 4)], (2, 4), (4, 2, 1),
                   (4, 2, 1))
    [d] = run.report.errors
    assert d.kind == "out-of-bounds"
    return d.hint


def test_out_of_bounds_without_a_test_hints_at_a_bounds_check():
    hint = out_of_bounds_hint("out[y * cols + x] = a[x * cols + y + 4];")
    assert hint == "guard the access with a bounds check such as `if (i < n)`"


def test_out_of_bounds_inside_a_bounds_check_blames_the_index_and_names_the_test():
    hint = out_of_bounds_hint("if (x < cols && y < rows) {\n"
                              "    out[y * cols + x] = a[x * cols + y];\n"
                              "}")
    assert hint.startswith("this access is already behind the test at line 5, yet its index "
                           "goes past the end: the index expression is likely wrong")
    assert "rows and columns swapped" in hint and "guard the access" not in hint


def test_out_of_bounds_after_an_early_return_blames_the_index():
    hint = out_of_bounds_hint("if (x >= cols || y >= rows) return;\n"
                              "float v = a[x * cols + y];\n"
                              "out[y * cols + x] = v;")
    assert hint.startswith("this access is already behind the test at line 5")


def test_a_test_that_compares_nothing_is_no_bounds_check():
    hint = out_of_bounds_hint("if (x != 99) {\n"
                              "    out[y * cols + x] = a[x * cols + y];\n"
                              "}")
    assert hint.startswith("guard the access")


def test_the_condition_of_a_bounds_check_is_not_behind_it():
    hint = out_of_bounds_hint("if (a[x * cols + y] < 100.0f) {\n"
                              "    out[y * cols + x] = 1;\n"
                              "}")
    assert hint.startswith("guard the access")


def test_short_circuit_guard_never_reads_past_the_end():
    run = simulate("uint i = thread_position_in_grid.x;\n"
                   "if (i < a_shape[0] && a[i] > 2) out[i] = 1; else if (i < 8) out[i] = 0;",
                   [mx.arange(8)], (8,), (16, 1, 1), (16, 1, 1))
    assert run.report.diagnostics == []
    assert run.report.max_per_thread()["global_reads"] == 1


def test_uint_underflow_in_guard_is_caught():
    # `i - 1 >= 0` is always true for uint: thread 0 reads a[4294967295].
    source = "uint i = thread_position_in_grid.x;\nif (i - 1 >= 0) out[i] = a[i - 1];"
    run = simulate(source, [mx.arange(8)], (8,), (8, 1, 1), (8, 1, 1))
    [d] = run.report.errors
    assert d.kind == "out-of-bounds" and d.threads == [(0, 0, 0)]
    fixed = simulate("uint i = thread_position_in_grid.x;\nif (i >= 1) out[i] = a[i - 1];",
                     [mx.arange(8)], (8,), (8, 1, 1), (8, 1, 1), init_value=0)
    assert fixed.report.diagnostics == []


# --- races -------------------------------------------------------------------------------------

SHIFT_LEFT = """
threadgroup float tile[8];
uint i = thread_position_in_threadgroup.x;
tile[i] = a[i];
{barrier}
out[i] = i < 7 ? tile[i + 1] : 0;
"""


def test_missing_barrier_is_a_threadgroup_race():
    run = simulate(SHIFT_LEFT.format(barrier=""), [mx.arange(8)], (8,), (8, 1, 1), (8, 1, 1))
    [d] = run.report.errors
    assert d.kind == "race" and "'tile'" in d.message
    assert d.line == 6 and "threadgroup_barrier" in d.hint


def test_a_race_names_the_other_thread_and_the_line_of_its_access():
    run = simulate(SHIFT_LEFT.format(barrier=""), [mx.arange(8)], (8,), (8, 1, 1), (8, 1, 1))
    [d] = run.report.errors
    assert d.detail.startswith("thread (0, 0, 0) reads element 1 of 'tile', which thread "
                               "(1, 0, 0) wrote at line 4, with no barrier between them")


def test_a_race_within_one_statement_says_so():
    run = simulate("out[0] = a[thread_position_in_grid.x];", [mx.arange(8)], (1,),
                   (8, 1, 1), (8, 1, 1))
    [d] = run.report.errors
    assert d.detail.startswith("thread (0, 0, 0) writes element 0 of 'out', and so does "
                               "thread (7, 0, 0) in the same statement")


def test_a_race_with_a_helper_in_the_header_names_the_header_line():
    header = "inline void put(threadgroup float* t, uint i, float v) {\n    t[i] = v;\n}\n"
    source = """
    threadgroup float tile[8];
    uint i = thread_position_in_threadgroup.x;
    put(tile, i, a[i]);
    out[i] = tile[(i + 1) % 8];
    """
    run = simulate(source, [mx.arange(8)], (8,), (8, 1, 1), (8, 1, 1), header=header)
    [d] = run.report.errors
    assert "which thread (1, 0, 0) wrote at line 2 of the header" in d.detail


def test_barrier_removes_the_threadgroup_race():
    run = simulate(SHIFT_LEFT.format(barrier="threadgroup_barrier(mem_flags::mem_threadgroup);"),
                   [mx.arange(8)], (8,), (8, 1, 1), (8, 1, 1))
    assert run.report.diagnostics == []
    np.testing.assert_array_equal(np.array(run.outputs[0]), [1, 2, 3, 4, 5, 6, 7, 0])


def test_barrier_without_threadgroup_flag_does_not_order_threadgroup_memory():
    run = simulate(SHIFT_LEFT.format(barrier="threadgroup_barrier(mem_flags::mem_none);"),
                   [mx.arange(8)], (8,), (8, 1, 1), (8, 1, 1))
    assert kinds(run) == ["race"]


def test_many_threads_writing_one_output_is_a_device_race():
    run = simulate("out[0] = a[thread_position_in_grid.x];", [mx.arange(8)], (1,),
                   (8, 1, 1), (4, 1, 1))
    [d] = run.report.errors
    assert d.kind == "race" and "'out'" in d.message and len(d.threads) >= 2


def test_threads_of_one_threadgroup_writing_one_output_are_told_to_pick_one_writer():
    # A barrier orders nothing here: the hint must not suggest mem_device.
    run = simulate("out[0] = a[thread_position_in_grid.x];", [mx.arange(8)], (1,),
                   (8, 1, 1), (8, 1, 1))
    [d] = run.report.errors
    assert "let one thread write it" in d.hint and "mem_device" not in d.hint


TILE_LOOP = """
threadgroup float tile[4];
uint l = thread_position_in_threadgroup.x;
float total = 0;
for (uint k = 0; k < 8; k += 4) {
    tile[l] = a[k + l];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    total += tile[3 - l];
}
out[l] = total;
"""


def test_a_race_with_the_previous_loop_iteration_says_so_and_names_the_loop():
    run = simulate(TILE_LOOP, [mx.arange(8)], (4,), (4, 1, 1), (4, 1, 1))
    [d] = run.report.errors
    assert d.kind == "race" and d.line == 6
    assert "in the next iteration of the loop at line 5" in d.detail
    assert "read at line 8 in the iteration before" in d.detail
    assert "end of the loop body" in d.hint


def test_the_second_barrier_removes_the_race_with_the_previous_iteration():
    fixed = TILE_LOOP.replace("total += tile[3 - l];\n",
                              "total += tile[3 - l];\n"
                              "    threadgroup_barrier(mem_flags::mem_threadgroup);\n")
    run = simulate(fixed, [mx.arange(8)], (4,), (4, 1, 1), (4, 1, 1))
    assert run.report.diagnostics == []


def test_one_writer_per_output_is_not_a_race():
    run = simulate("uint i = thread_position_in_grid.x;\nif (i == 0) out[0] = a[0];",
                   [mx.arange(8)], (1,), (8, 1, 1), (4, 1, 1))
    assert run.report.diagnostics == []


def test_reading_another_threadgroups_output_is_a_race():
    source = """
    uint i = thread_position_in_grid.x;
    out[i] = a[i];
    threadgroup_barrier(mem_flags::mem_device);
    out[i] += out[(i + 4) % 8];
    """
    run = simulate(source, [mx.arange(8)], (8,), (8, 1, 1), (4, 1, 1))
    assert "race" in kinds(run)


# --- divergent barriers ----------------------------------------------------------------------

def test_barrier_inside_a_thread_dependent_branch_is_divergent():
    source = """
    threadgroup float t[8];
    uint i = thread_position_in_threadgroup.x;
    t[i] = a[i];
    if (i < 4) { threadgroup_barrier(mem_flags::mem_threadgroup); }
    out[i] = t[i];
    """
    run = simulate(source, [mx.arange(8)], (8,), (8, 1, 1), (8, 1, 1))
    [d] = [d for d in run.report.errors if d.kind == "divergent-barrier"]
    assert d.line == 5
    assert set(d.threads) == {(4, 0, 0), (5, 0, 0), (6, 0, 0), (7, 0, 0)}


def test_threads_that_returned_do_not_block_a_barrier():
    source = """
    threadgroup float t[8];
    uint i = thread_position_in_threadgroup.x;
    if (i >= 6) return;
    t[i] = a[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = t[5 - i];
    """
    run = simulate(source, [mx.arange(8)], (8,), (8, 1, 1), (8, 1, 1), init_value=-1)
    assert run.report.diagnostics == []
    np.testing.assert_array_equal(np.array(run.outputs[0]), [5, 4, 3, 2, 1, 0, -1, -1])


def test_barrier_in_loop_with_uniform_trip_count_per_threadgroup_is_fine():
    source = """
    uint g = threadgroup_position_in_grid.x;
    for (uint k = 0; k < g + 1; ++k) { threadgroup_barrier(mem_flags::mem_threadgroup); }
    out[thread_position_in_grid.x] = a[thread_position_in_grid.x];
    """
    run = simulate(source, [mx.arange(8)], (8,), (8, 1, 1), (4, 1, 1))
    assert run.report.diagnostics == []
    assert run.report.counts["barriers"].ravel().tolist() == [1] * 4 + [2] * 4


# --- uninitialised reads ---------------------------------------------------------------------

def test_threadgroup_memory_read_before_written_is_uninitialized():
    source = """
    threadgroup float t[8];
    uint i = thread_position_in_threadgroup.x;
    if (i < 4) t[i] = a[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = t[i];
    """
    run = simulate(source, [mx.arange(8)], (8,), (8, 1, 1), (8, 1, 1))
    [d] = run.report.errors
    assert d.kind == "uninitialized-read" and d.line == 6
    assert set(d.threads) == {(4, 0, 0), (5, 0, 0), (6, 0, 0), (7, 0, 0)}


def test_output_read_before_written_is_uninitialized_unless_init_value():
    source = "uint i = thread_position_in_grid.x;\nout[i] += a[i];"
    run = simulate(source, [mx.arange(8)], (8,), (8, 1, 1), (8, 1, 1))
    assert kinds(run) == ["uninitialized-read"]
    assert "init_value" in run.report.errors[0].hint
    fixed = simulate(source, [mx.arange(8)], (8,), (8, 1, 1), (8, 1, 1), init_value=1)
    assert fixed.report.diagnostics == []
    np.testing.assert_array_equal(np.array(fixed.outputs[0]), np.arange(8) + 1)


def test_thread_array_read_before_written_is_uninitialized():
    source = """
    float acc[4];
    acc[0] = 1;
    out[thread_position_in_grid.x] = acc[thread_position_in_grid.x % 4];
    """
    run = simulate(source, [mx.arange(8)], (8,), (8, 1, 1), (8, 1, 1))
    assert kinds(run) == ["uninitialized-read"]
    fixed = simulate(source.replace("float acc[4];", "float acc[4] = {1};"),
                     [mx.arange(8)], (8,), (8, 1, 1), (8, 1, 1))
    assert fixed.report.diagnostics == []
    np.testing.assert_array_equal(np.array(fixed.outputs[0]), [1, 0, 0, 0] * 2)


# Definedness as Memcheck and initcheck decide it: an uninitialised read is reported only where
# its value matters, naming the line it was read on and the line where it mattered.

GUARDED_TILE = """
threadgroup float t[8];
uint i = thread_position_in_threadgroup.x;
if (i < 4) t[i] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
float v = t[i] * 2;
{use}
"""


def undefined_run(use, init_value=0, **kw):
    return simulate(GUARDED_TILE.format(use=use), [mx.arange(8)], (8,), (8, 1, 1), (8, 1, 1),
                    init_value=init_value, **kw)


def test_uninitialised_value_thrown_away_is_not_reported():
    run = undefined_run("if (i < 4) out[i] = v;")
    assert run.report.diagnostics == []
    np.testing.assert_array_equal(np.array(run.outputs[0]), [0, 2, 4, 6, 0, 0, 0, 0])


@pytest.mark.parametrize(("use", "line", "says"), [
    ("out[i] = v;", 7, "is stored to 'out'"),
    ("float w = v + 1;\nout[i] = w;", 8, "is stored to 'out'"),
    ("out[i] = a[uint(v) % 8];", 7, "is used as an index"),
    ("if (v > 3) out[i] = 1;", 7, "decides a branch"),
    ("for (float k = 0; k < v; k += 1) out[i] += 1;", 7, "decides a branch or loop"),
    ("out[i] = v > 2 ? 1 : 0;", 7, "decides a branch"),
    ("atomic_fetch_add_explicit((device atomic_float*)&out[0], v, memory_order_relaxed);", 7,
     "is used by an atomic operation on 'out'"),
    ("float s = simd_sum(v);\nif (i == 0) out[0] = s;", 8, "is stored to 'out'"),
])
def test_uninitialised_value_is_reported_where_it_matters_naming_both_lines(use, line, says):
    [d] = undefined_run(use).report.errors
    assert d.kind == "uninitialized-read" and d.line == line and says in d.message
    assert "threadgroup memory 't' at line 6" in d.message
    assert f"reaches this use at line {line}" in d.detail


def test_uninitialised_value_through_threadgroup_memory_is_followed():
    barrier = "threadgroup_barrier(mem_flags::mem_threadgroup);\n"
    run = undefined_run(barrier + "t[7 - i] = v;\n" + barrier + "if (i < 4) out[i] = t[i];")
    [d] = run.report.errors
    assert d.line == 10 and "(read from threadgroup memory 't' at line 6)" in d.message
    assert set(d.threads) == {(0, 0, 0), (1, 0, 0), (2, 0, 0), (3, 0, 0)}


def test_traced_and_untraced_runs_report_the_same_and_the_trace_keeps_only_cells():
    kernel = metalsim.metal_kernel("k", ["a"], ["out"], GUARDED_TILE.format(use="out[i] = v;"))
    call = dict(inputs=[mx.arange(8)], output_shapes=[(8,)], output_dtypes=[mx.float32],
                grid=(8, 1, 1), threadgroup=(8, 1, 1), init_value=0)
    plain, traced = metalsim.simulate(kernel, **call), metalsim.simulate(kernel, trace=True, **call)
    assert [d.render() for d in plain.report.diagnostics] == [
        d.render() for d in traced.report.diagnostics]
    assert plain.report.trace is None
    # The second, traced run starts from the same outputs as the first.
    np.testing.assert_array_equal(np.array(plain.outputs[0]), np.array(traced.outputs[0]))
    accumulate = metalsim.metal_kernel("k", ["a"], ["out"], GUARDED_TILE.format(
        use="if (i < 4) out[i] += v;"))
    summed = metalsim.simulate(accumulate, **{**call, "init_value": 1})
    assert summed.report.diagnostics == []
    np.testing.assert_array_equal(np.array(summed.outputs[0]), [1, 3, 5, 7, 1, 1, 1, 1])
    sources = [c for e in traced.report.trace if e["sources"] for s in e["sources"] for c in s]
    assert sources and all(isinstance(c, tuple) for c in sources)


def test_launch_too_large_to_follow_warns_at_the_read():
    source = ("threadgroup float t[4];\nt[thread_position_in_threadgroup.x] = 1;\n"
              "out[thread_position_in_grid.x] = t[3] * 0;")
    n = 20_000  # above MAX_TRACED_THREADS: the value is not followed
    run = simulate(source, [mx.arange(n)], (n,), (n, 1, 1), (2, 1, 1))
    [d] = run.report.diagnostics
    assert (d.kind, d.severity, d.line) == ("uninitialized-read", "warning", 3)
    assert "not followed to where such a value goes" in d.detail


# --- division by zero, step limit, resource limits -------------------------------------------

def test_integer_division_by_zero_is_reported_for_the_threads_that_did_it():
    source = "int i = thread_position_in_grid.x;\nout[i] = 12 / (i - 3);"
    run = simulate(source, [mx.arange(8)], (8,), (8, 1, 1), (8, 1, 1), dtype=mx.int32)
    [d] = run.report.diagnostics
    assert (d.kind, d.severity, d.threads) == ("division-by-zero", "warning", [(3, 0, 0)])
    fixed = simulate(source.replace("12 / (i - 3)", "i == 3 ? 0 : 12 / (i - 3)"),
                     [mx.arange(8)], (8,), (8, 1, 1), (8, 1, 1), dtype=mx.int32)
    assert fixed.report.diagnostics == []
    assert np.array(fixed.outputs[0]).tolist() == [-4, -6, -12, 0, 12, 6, 4, 3]


def test_strict_simulation_makes_the_division_by_zero_warning_an_error():
    kernel = metalsim.metal_kernel("k", ["a"], ["out"],
                                   "int i = thread_position_in_grid.x;\nout[i] = 12 / (i - 3);")
    call = {"inputs": [mx.arange(8)], "output_shapes": [(8,)], "output_dtypes": [mx.int32],
            "grid": (8, 1, 1), "threadgroup": (8, 1, 1)}
    assert metalsim.simulate(kernel, **call).report.ok
    run = metalsim.simulate(kernel, strict=True, **call)
    [d] = run.report.diagnostics
    assert (d.kind, d.severity, d.threads) == ("division-by-zero", "error", [(3, 0, 0)])
    assert not run.report.ok


def test_float_division_by_zero_is_ieee_not_a_diagnostic():
    run = simulate("uint i = thread_position_in_grid.x;\nout[i] = 1.0f / (a[i] - 2);",
                   [mx.arange(4)], (4,), (4, 1, 1), (4, 1, 1))
    assert run.report.diagnostics == []
    assert np.isinf(np.array(run.outputs[0])[2])


def test_uint_countdown_loop_is_reported_before_its_first_iteration():
    # `k >= 0` is always true for a uint and nothing leaves the loop: no need to spin to the
    # step limit (out[0] is never written: the loop body never ran).
    source = "for (uint k = 3; k >= 0; --k) { out[0] += 1; }"
    run = simulate(source, [mx.arange(8)], (1,), (1, 1, 1), (1, 1, 1), init_value=0)
    [d] = run.report.errors
    assert d.kind == "step-limit" and d.line == 1
    assert d.message == ("this loop never ends: its condition is always true, since 'k' is a "
                         "'uint' and never below 0, and nothing in its body leaves it")
    assert "count with an int" in d.hint
    assert np.array(run.outputs[0]).tolist() == [0]


@pytest.mark.parametrize("loop", ["while (true) { out[0] += 1; }",
                                  "for (;;) { out[0] += 1; }",
                                  "do { out[0] += 1; } while (1);",
                                  "for (ushort k = 3; 0 <= k; --k) { out[0] += 1; }",
                                  "for (;;) { switch (int(a[0])) { case 0: break; } }",
                                  "for (;;) { for (;;) { break; } }"])
def test_loops_that_cannot_end_are_reported_at_once(loop):
    run = simulate(loop, [mx.arange(8)], (1,), (1, 1, 1), (1, 1, 1), init_value=0)
    [d] = run.report.errors
    assert d.kind == "step-limit" and d.message.startswith("this loop never ends")
    assert np.array(run.outputs[0]).tolist() == [0]


@pytest.mark.parametrize("loop", [
    "for (uint k = 3; k >= 0; --k) { out[0] += 1; if (k == 0) break; }",
    "while (true) { out[0] += 1; if (out[0] == 4) return; }",
    "for (;;) { out[0] += 1; switch (int(out[0])) { default: break; } if (out[0] > 3) break; }",
])
def test_an_always_true_loop_with_a_way_out_runs(loop):
    run = simulate(loop, [mx.arange(8)], (1,), (1, 1, 1), (1, 1, 1), init_value=0)
    assert run.report.diagnostics == []
    assert np.array(run.outputs[0]).tolist() == [4]


def test_a_loop_that_spins_without_an_obvious_cause_hits_the_step_limit():
    source = "uint k = 5;\nwhile (k != 7) { k -= 2; }\nout[0] = k;"
    run = simulate(source, [mx.arange(8)], (1,), (1, 1, 1), (1, 1, 1))
    [d] = run.report.errors
    assert d.kind == "step-limit" and "more than 1,000,000 steps" in d.message and d.line == 2


def test_counting_down_with_int_terminates():
    source = "float s = 0;\nfor (int k = 3; k >= 0; --k) { s += 1; }\nout[0] = s;"
    run = simulate(source, [mx.arange(8)], (1,), (1, 1, 1), (1, 1, 1))
    assert run.report.diagnostics == []
    assert np.array(run.outputs[0]).tolist() == [4]


def test_too_much_threadgroup_memory_is_a_resource_limit():
    source = "threadgroup float big[9000];\nbig[0] = 1;\nout[0] = a[0];"
    run = simulate(source, [mx.arange(8)], (1,), (1, 1, 1), (1, 1, 1))
    [d] = run.report.errors
    assert d.kind == "resource-limit" and "36,000 bytes" in d.message
    fixed = simulate(source.replace("9000", "8192"), [mx.arange(8)], (1,), (1, 1, 1), (1, 1, 1))
    assert fixed.report.diagnostics == []


def test_more_than_1024_threads_per_threadgroup_is_rejected_like_mlx():
    kernel = metalsim.metal_kernel("k", ["a"], ["out"], "out[0] = a[0];")
    with pytest.raises(ValueError, match="Thread group size \\(2048\\) is greater than  the"):
        kernel(inputs=[mx.arange(8)], output_shapes=[(1,)], output_dtypes=[mx.float32],
               grid=(8, 1, 1), threadgroup=(2048, 1, 1))


def test_calling_a_faulty_kernel_raises_kernel_fault_with_diagnostics():
    kernel = metalsim.metal_kernel("k", ["a"], ["out"], "out[0] = a[thread_position_in_grid.x];")
    with pytest.raises(metalsim.KernelFault) as info:
        kernel(inputs=[mx.arange(8)], output_shapes=[(1,)], output_dtypes=[mx.float32],
               grid=(8, 1, 1), threadgroup=(8, 1, 1))
    assert [d.kind for d in info.value.diagnostics] == ["race"]
    assert "out[0] = a[thread_position_in_grid.x];" in str(info.value)


# --- classic traps behave as on a GPU --------------------------------------------------------

def test_non_multiple_grid_runs_exactly_grid_threads_with_partial_threadgroup():
    source = """
    uint i = thread_position_in_grid.x;
    out[i] = threads_per_threadgroup.x * 100 + thread_position_in_threadgroup.x;
    """
    run = simulate(source, [mx.arange(8)], (10,), (10, 1, 1), (4, 1, 1))
    assert run.report.diagnostics == []
    assert np.array(run.outputs[0]).tolist() == [400, 401, 402, 403, 400, 401, 402, 403,
                                                 200, 201]


def test_naive_index_with_actual_threadgroup_size_breaks_in_the_edge_group():
    source = """
    uint i = threadgroup_position_in_grid.x * threads_per_threadgroup.x
             + thread_position_in_threadgroup.x;
    out[i] = i;
    """
    run = simulate(source, [mx.arange(8)], (10,), (10, 1, 1), (4, 1, 1))
    # The edge group has 2 threads, so its threads compute 4 and 5 instead of 8 and 9: the
    # same cells are written twice and the last two never.
    assert kinds(run) == ["race"]


def test_off_by_one_halo_reads_past_the_input():
    source = """
    threadgroup float tile[10];
    uint i = thread_position_in_grid.x, l = thread_position_in_threadgroup.x;
    tile[l] = a[i];
    if (l < 2) tile[8 + l] = a[i + 8];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = tile[l] + tile[l + 1] + tile[l + 2];
    """
    run = simulate(source, [mx.arange(16)], (16,), (16, 1, 1), (8, 1, 1))
    [d] = run.report.errors
    assert d.kind == "out-of-bounds" and d.line == 5
    assert set(d.threads) == {(8, 0, 0), (9, 0, 0)}


def test_local_variable_read_before_assignment_is_uninitialized():
    source = """
    uint i = thread_position_in_grid.x;
    float x;
    if (i < 4) x = a[i];
    out[i] = x;
    """
    run = simulate(source, [mx.arange(8)], (8,), (8, 1, 1), (8, 1, 1))
    [d] = run.report.errors
    assert d.kind == "uninitialized-read" and "'x'" in d.message and d.line == 5
    assert set(d.threads) == {(4, 0, 0), (5, 0, 0), (6, 0, 0), (7, 0, 0)}
    fixed = simulate(source.replace("float x;", "float x = 0;"), [mx.arange(8)], (8,),
                     (8, 1, 1), (8, 1, 1))
    assert fixed.report.diagnostics == []


def test_device_race_hint_depends_on_whether_threadgroups_differ():
    # One threadgroup, thread 1 reading what thread 0 wrote: a device barrier orders them.
    one_group = simulate("uint i = thread_position_in_grid.x;\nif (i == 0) out[0] = a[0];\n"
                         "if (i == 1) out[1] = out[0];", [mx.arange(8)], (2,),
                         (8, 1, 1), (8, 1, 1))
    assert "mem_device" in one_group.report.errors[0].hint
    two_groups = simulate("uint i = thread_position_in_grid.x;\nif (i % 4 == 0) out[0] = a[i];",
                          [mx.arange(8)], (1,), (8, 1, 1), (4, 1, 1))
    assert "different threadgroups" in two_groups.report.errors[0].hint


def test_misaligned_vector_load_is_reported():
    source = """
    uint i = thread_position_in_grid.x;
    out[i] = ((const device float4*)(a + 1))[i].x;
    """
    run = simulate(source, [mx.arange(16, dtype=mx.float32)], (2,), (2, 1, 1), (2, 1, 1))
    [d] = run.report.errors
    assert d.kind == "out-of-bounds" and "16-byte alignment" in d.message
    packed = source.replace("float4*", "packed_float4*")
    assert simulate(packed, [mx.arange(16, dtype=mx.float32)], (2,), (2, 1, 1),
                    (2, 1, 1)).report.diagnostics == []


SIMD_EXCHANGE = """
threadgroup float t[64];
uint l = thread_position_in_threadgroup.x;
t[l] = a[l];
{barrier}
out[l] = t[{partner}];
"""


def test_simdgroup_barrier_orders_threadgroup_memory_within_a_simdgroup():
    source = SIMD_EXCHANGE.format(barrier="simdgroup_barrier(mem_flags::mem_threadgroup);",
                                  partner="l ^ 1")
    run = simulate(source, [mx.arange(64)], (64,), (64, 1, 1), (64, 1, 1))
    assert run.report.diagnostics == []
    np.testing.assert_array_equal(np.array(run.outputs[0]), np.arange(64) ^ 1)
    missing = simulate(SIMD_EXCHANGE.format(barrier="", partner="l ^ 1"), [mx.arange(64)],
                       (64,), (64, 1, 1), (64, 1, 1))
    assert kinds(missing) == ["race"]


def test_simdgroup_barrier_does_not_order_other_simdgroups():
    source = SIMD_EXCHANGE.format(barrier="simdgroup_barrier(mem_flags::mem_threadgroup);",
                                  partner="(l + 32) % 64")
    run = simulate(source, [mx.arange(64)], (64,), (64, 1, 1), (64, 1, 1))
    assert kinds(run) == ["race"]


def test_simdgroup_barrier_in_divergent_code_is_reported():
    source = "uint l = thread_index_in_simdgroup;\n" \
             "if (l < 16) simdgroup_barrier(mem_flags::mem_none);\nout[l] = a[l];"
    run = simulate(source, [mx.arange(32)], (32,), (32, 1, 1), (32, 1, 1))
    [d] = run.report.errors
    assert d.kind == "divergent-barrier" and "SIMD-group" in d.message
