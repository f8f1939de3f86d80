"""Kernels that used to crash the simulator with a Python exception: each is now a diagnostic
(or, where Metal accepts the kernel, runs), never an internal error."""

import mlx.core as mx
import numpy as np
import pytest

import metalsim


def simulate(source, inputs, n=8, header="", **kw):
    kernel = metalsim.metal_kernel("k", [f"in{i}" for i in range(len(inputs))], ["out"], source,
                                   header=header, **kw)
    result = metalsim.simulate(kernel, inputs=inputs, output_shapes=[(n,)],
                               output_dtypes=[mx.float32], grid=(n, 1, 1),
                               threadgroup=(n, 1, 1), init_value=0)
    return np.array(result.outputs[0]), result.report


def kinds(report):
    return [(d.kind, d.severity) for d in report.diagnostics]


def test_writing_a_vector_component_past_the_end_is_out_of_bounds():
    out, report = simulate("uint i = thread_position_in_grid.x; float4 v = float4(1);\n"
                           "uint k = i + 4; v[k] = 2; out[i] = v[0] + v[3];", [mx.ones(8)])
    assert kinds(report) == [("out-of-bounds", "error")]
    assert "float4" in report.errors[0].message
    np.testing.assert_array_equal(out, np.full(8, 2))  # nothing was written


def test_reading_a_vector_component_past_the_end_is_out_of_bounds_not_wrapped():
    out, report = simulate("uint i = thread_position_in_grid.x; float4 v = float4(1, 2, 3, 4);"
                           "\nout[i] = v[i];", [mx.ones(8)])
    assert kinds(report) == [("out-of-bounds", "error")]
    assert report.errors[0].threads[0] == (4, 0, 0)
    np.testing.assert_array_equal(out, [1, 2, 3, 4, 0, 0, 0, 0])


def test_reading_element_zero_of_an_empty_input_is_out_of_bounds():
    _, report = simulate("out[0] = in0[0];", [mx.zeros((0,))], n=1)
    assert kinds(report) == [("out-of-bounds", "error")]
    assert "'in0' has 0 elements" in report.errors[0].message


def test_writing_an_input_through_a_cast_away_const_is_reported_and_seen_by_later_reads():
    data = mx.ones(8)
    out, report = simulate("uint i = thread_position_in_grid.x;\n"
                           "device float* w = (device float*)in0; w[i] = 5;\n"
                           "out[i] = in0[i];", [data])
    assert kinds(report) == [("input-write", "error")]
    np.testing.assert_array_equal(out, np.full(8, 5))   # as the GPU would
    np.testing.assert_array_equal(np.array(data), np.ones(8))  # the caller's array is intact


def test_atomic_load_from_a_const_input_reads_without_writing():
    out, report = simulate("out[0] = atomic_load_explicit((const device atomic<float>*)in0, "
                           "memory_order_relaxed);", [mx.full((4096,), 3.0)], n=1)
    assert kinds(report) == []
    assert out.tolist() == [3.0]


@pytest.mark.parametrize("terms", [500, 3000])
def test_a_long_flat_sum_compiles_and_runs(terms):
    source = "uint i = thread_position_in_grid.x; out[i] = " + " + ".join(["in0[i]"] * terms) + ";"
    out, report = simulate(source, [mx.ones(8)])
    assert kinds(report) == []
    np.testing.assert_array_equal(out, np.full(8, terms))


TEMPLATE_RECURSION = """
template <int N> float rec(float x) {
  if constexpr (N == 0) { return x; } else { return rec<N - 1>(x) + 1.0f; }
}"""


@pytest.mark.parametrize("depth", [100, 1000])
def test_template_recursion_as_deep_as_clang_allows_runs(depth):
    out, report = simulate(f"out[0] = rec<{depth}>(1.0f);", [mx.ones(1)], n=1,
                           header=TEMPLATE_RECURSION)
    assert kinds(report) == []
    assert out.tolist() == [depth + 1]


def test_template_recursion_deeper_than_clang_allows_is_a_compile_error():
    with pytest.raises(metalsim.CompileError, match="maximum depth of 1024"):
        simulate("out[0] = rec<2000>(1.0f);", [mx.ones(1)], n=1, header=TEMPLATE_RECURSION)


def test_recursive_function_is_a_compile_error_before_anything_runs():
    with pytest.raises(metalsim.CompileError, match="does not support recursive"):
        simulate("out[0] = f(3);", [mx.ones(1)], n=1,
                 header="int f(int n) { return n ? f(n - 1) : 0; }")


def test_a_kernel_may_modify_its_attribute_parameters():
    # found by the mutation fuzz: `--thread_index_in_simdgroup` wrote into read-only memory
    out, report = simulate("uint lane = --thread_index_in_simdgroup;\n"
                           "out[thread_position_in_grid.x] = lane + thread_index_in_simdgroup;",
                           [mx.ones(8)])
    assert kinds(report) == []
    np.testing.assert_array_equal(out, (2 * (np.arange(8) - 1) % 2**32).astype(np.float32))


@pytest.mark.parametrize("source", [
    "int i = int(thread_position_in_grid.x) - 1; out[thread_position_in_grid.x] = in0[i];",
    "threadgroup float t[8]; int i = int(thread_position_in_grid.x);\n"
    "t[i] = 1.0f; threadgroup_barrier(mem_flags::mem_threadgroup);\n"
    "out[i] = ((threadgroup float*)t)[i - 8];",
    "device const float* p = in0 - 1; out[thread_position_in_grid.x] = p[0];",
])
def test_a_negative_offset_is_out_of_bounds_in_device_and_threadgroup_memory(source):
    """The bounds check reads offsets as unsigned in its common case: a negative one must
    still fall outside every buffer."""
    out, report = simulate(source, [mx.ones(8)])
    assert ("out-of-bounds", "error") in kinds(report)


def test_an_unsigned_index_below_zero_is_named_as_wrapped_around():
    source = "uint i = thread_position_in_grid.x;\nout[i] = in0[i - 1];"
    _, report = simulate(source, [mx.ones(8)])
    oob = next(d for d in report.diagnostics if d.kind == "out-of-bounds")
    assert "element 4294967295" in oob.detail and "-1 wrapped around" in oob.detail
    assert "`0u - 1` is 4294967295" in oob.detail
    assert "a `uint` never goes below 0" in oob.hint


def test_a_signed_negative_index_is_not_called_wrapped_around():
    source = "int i = int(thread_position_in_grid.x) - 1;\nout[thread_position_in_grid.x] = in0[i];"
    _, report = simulate(source, [mx.ones(8)])
    oob = next(d for d in report.diagnostics if d.kind == "out-of-bounds")
    assert "element -1" in oob.detail and "wrapped" not in oob.detail
    assert "bounds check" in oob.hint
