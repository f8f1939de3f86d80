"""Findings that used to be missed or wrong: inner-dimension overruns of multi-dimensional
arrays, uninitialised vector components, an atomic store unordered with atomic updates,
same-value writes of one statement (a benign race: a warning, an error under strict), and 64-bit
indices whose byte offset wraps around."""

import mlx.core as mx
import numpy as np
import pytest

import metalsim


def simulate(source, n=8, dtype=mx.float32, atomic_outputs=False, **kw):
    kernel = metalsim.metal_kernel("k", ["a"], ["out"], source, atomic_outputs=atomic_outputs)
    return metalsim.simulate(kernel, inputs=[mx.arange(n, dtype=mx.float32)],
                             output_shapes=[(n,)], output_dtypes=[dtype], grid=(n, 1, 1),
                             threadgroup=(n, 1, 1), init_value=0, **kw)


def findings(run):
    return [(d.kind, d.severity) for d in run.report.diagnostics]


TID = "uint i = thread_position_in_grid.x;\n"


def test_reading_past_a_row_of_a_threadgroup_tile_is_out_of_bounds():
    run = simulate(TID + "threadgroup float tile[2][4]; tile[i / 4][i % 4] = i;\n"
                   "threadgroup_barrier(mem_flags::mem_threadgroup);\n"
                   "if (i < 4) out[i] = tile[i / 4][i % 4 + 1];")
    [d] = run.report.diagnostics
    assert (d.kind, d.line) == ("out-of-bounds", 4)
    assert "inner array of 'tile' (4 elements)" in d.message
    assert d.threads == [(3, 0, 0)]


@pytest.mark.parametrize("index_type", ["int", "uint", "long", "ulong", "short"])
@pytest.mark.parametrize("bad", [-1, 4, -9000])
def test_an_inner_index_out_of_its_row_is_reported_for_the_lanes_that_take_it(index_type,
                                                                             bad):
    """One pass over the index seen as unsigned finds both ends: a negative index (of a
    signed type, or wrapped in an unsigned one) and one past the row, among good lanes."""
    t = index_type
    run = simulate(TID + "float t[2][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}};\n"
                   f"{t} k = i % 3 == 1 ? {t}({bad}) : {t}(i % 4);\n"
                   "out[i] = t[1][k];")
    # (an index that also leaves the array is reported again by the bounds of its memory)
    [d] = [d for d in run.report.diagnostics if "inner array" in d.message]
    assert (d.kind, d.severity, d.line) == ("out-of-bounds", "error", 4)
    assert d.message == "index out of bounds of an inner array of 't' (4 elements)"
    assert d.threads == [(i, 0, 0) for i in range(8) if i % 3 == 1]


def test_indexing_past_a_row_of_a_thread_array_is_out_of_bounds():
    run = simulate(TID + "float t[2][4] = {}; out[i] = t[0][4 + i % 2];")
    assert findings(run) == [("out-of-bounds", "error")]


def test_indexing_within_each_dimension_is_clean():
    run = simulate(TID + "float t[2][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}};\n"
                   "out[i] = t[i / 4][i % 4];")
    assert findings(run) == []
    np.testing.assert_array_equal(np.array(run.outputs[0]), np.arange(1, 9))


def test_reading_an_unwritten_vector_component_is_reported():
    run = simulate("float4 v; v.x = 1; out[0] = v.y;", n=1)
    [d] = run.report.diagnostics
    assert (d.kind, d.severity) == ("uninitialized-read", "error")
    assert d.message == "uninitialised value is stored to 'out' (read from variable 'v' at line 1)"


@pytest.mark.parametrize("source", ["float4 v; v.x = 1; v.yzw = float3(2); out[0] = v.w;",
                                    "float4 v; v.x = 1; out[0] = v.x;",
                                    "float2 v; for (int k = 0; k < 2; k++) v[k] = k;"
                                    " out[0] = v.x + v.y;"])
def test_reading_written_vector_components_is_clean(source):
    assert findings(simulate(source, n=1)) == []


def test_an_atomic_store_unordered_with_other_threads_updates_is_a_race():
    run = simulate(TID + "if (i == 0) atomic_store_explicit(&out[0], 5, memory_order_relaxed);\n"
                   "else atomic_fetch_add_explicit(&out[0], 1, memory_order_relaxed);",
                   dtype=mx.int32, atomic_outputs=True)
    [d] = run.report.diagnostics
    assert (d.kind, d.severity, d.line) == ("race", "error", 3)
    assert "atomic store" in d.message


def test_an_atomic_store_ordered_by_a_barrier_before_the_updates_is_clean():
    run = simulate(TID + "if (i == 0) atomic_store_explicit(&out[0], 5, memory_order_relaxed);\n"
                   "threadgroup_barrier(mem_flags::mem_device);\n"
                   "atomic_fetch_add_explicit(&out[0], 1, memory_order_relaxed);",
                   dtype=mx.int32, atomic_outputs=True)
    assert findings(run) == []
    assert np.array(run.outputs[0])[0] == 13


def test_same_value_written_by_many_threads_in_one_statement_is_a_benign_race_warning():
    run = simulate("out[0] = 3.0f;")
    [d] = run.report.diagnostics
    assert (d.kind, d.severity, d.message) == ("race", "warning",
                                               "benign race on 'out': identical values")


def test_a_benign_race_is_an_error_under_strict():
    assert findings(simulate("out[0] = 3.0f;", strict=True)) == [("race", "error")]


def test_different_values_written_in_one_statement_are_a_race_error_only():
    run = simulate(TID + "out[0] = (i < 4) ? 1.0f : 2.0f;")
    assert findings(run) == [("race", "error")]
    assert run.report.diagnostics[0].message == "data race on 'out' (device memory)"


@pytest.mark.parametrize("access", ["a[k]", "*(a + k)", "a[ulong(k)]", "(a - k)[0]"])
@pytest.mark.parametrize("k", ["4611686018427387904L", "-4611686018427387904L",
                               "9223372036854775807L", "(long)0x8000000000000000UL"])
def test_a_64_bit_index_whose_byte_offset_wraps_is_out_of_bounds_not_element_0(access, k):
    # 2^62 floats are 2^64 bytes: modulo 2^64 the offset lands back on a[0].
    run = simulate(TID + f"long k = {k} + long(i) * 0;\nout[i] = {access};")
    assert findings(run) == [("out-of-bounds", "error")]
    np.testing.assert_array_equal(np.array(run.outputs[0]), np.zeros(8))
