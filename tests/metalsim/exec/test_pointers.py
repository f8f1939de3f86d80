"""Pointers as per-lane values: each lane's pointer names its own buffer and offset, in
divergent code too; postfix ++/-- yield the old pointer; ?: between pointers; arrays of
pointers; array parameters adjusted to pointers. Expected values are computed with numpy."""

import warnings

import mlx.core as mx
import numpy as np
import pytest

import metalsim

A = np.arange(8, dtype=np.float32)
B = 100 + np.arange(8, dtype=np.float32)


def run(source, header="", ensure_row_contiguous=True, inputs=(A, B), shape=(8,)):
    kernel = metalsim.metal_kernel("k", ["a", "b"][:len(inputs)], ["out"], source,
                                   header=header, ensure_row_contiguous=ensure_row_contiguous)
    result = metalsim.simulate(kernel, inputs=[mx.array(x) for x in inputs],
                               output_shapes=[shape], output_dtypes=[mx.float32],
                               grid=(8, 1, 1), threadgroup=(8, 1, 1))
    return np.array(result.outputs[0]), result.report


def clean(source, **kw):
    out, report = run(source, **kw)
    assert report.diagnostics == [], report.summary()
    return out


LANE = np.arange(8)
ODD = LANE % 2 == 1


def test_pointer_reassigned_under_a_branch_points_per_lane():
    out = clean("uint i = thread_position_in_grid.x; const device float* p = a;\n"
                "if (i % 2 == 1) p = b;\nout[i] = p[i];")
    np.testing.assert_array_equal(out, np.where(ODD, B, A))


def test_per_lane_pointer_survives_arithmetic_and_a_helper_call():
    header = "float at(const device float* p, uint k) { return *(p + k); }"
    out = clean("uint i = thread_position_in_grid.x; const device float* p = b + 1;\n"
                "if (i < 3) { p = a; } else if (i == 7) { p = b; }\n"
                "p += 0; out[i] = at(p, i % 4);", header=header)
    base = np.where(LANE < 3, 0, np.where(LANE == 7, 100, 101))
    np.testing.assert_array_equal(out, base + LANE % 4)


def test_conditional_operator_chooses_between_pointers_into_different_buffers():
    out = clean("uint i = thread_position_in_grid.x; uint o = 1;\n"
                "auto row = (i % 2) ? (a + o) : (b + o);\nout[i] = row[i % 7];")
    np.testing.assert_array_equal(out, np.where(ODD, A[1 + LANE % 7], B[1 + LANE % 7]))


def test_pointer_equality_compares_the_buffer_too():
    out = clean("uint i = thread_position_in_grid.x; const device float* p = (i % 2) ? a : b;"
                "\nout[i] = (p == a) ? 1.0f : ((p != b) ? 3.0f : 2.0f);")
    np.testing.assert_array_equal(out, np.where(ODD, 1, 2))


@pytest.mark.parametrize("space, setup", [
    ("const device", "const device float* t = a;"),
    ("threadgroup", "threadgroup float t[9]; t[i] = a[i]; if (i == 0) t[8] = a[8];\n"
                    "threadgroup_barrier(mem_flags::mem_threadgroup);"),
    ("thread", "float t[9]; for (int k = 0; k < 9; k++) t[k] = a[k];"),
])
def test_postfix_increment_and_decrement_yield_the_old_pointer(space, setup):
    a9 = np.arange(9, dtype=np.float32) * 3
    out = clean(f"uint i = thread_position_in_grid.x; {setup}\n"
                f"{space} float* p = t + i;\nfloat x = *p++;\n"
                f"{space} float* q = p--;\nout[i] = x + 10 * q[0] + 100 * (p++)[0];",
                inputs=(a9,))
    np.testing.assert_array_equal(out, a9[:8] + 10 * a9[1:] + 100 * a9[:8])


def test_postfix_increment_at_the_last_element_is_not_out_of_bounds():
    out = clean("uint i = thread_position_in_grid.x; const device float* p = a + 7;\n"
                "out[i] = *p++;")
    np.testing.assert_array_equal(out, np.full(8, 7))


def test_arrays_of_pointers_hold_a_pointer_per_lane_and_element():
    out = clean("uint i = thread_position_in_grid.x;\n"
                "const device float* ps[2] = {a, b};\n"
                "const device float* q = ps[i % 2];\nps[0] = q + 1;\n"
                "out[i] = ps[0][i % 4] + *ps[1];")
    np.testing.assert_array_equal(out, np.where(ODD, B[1 + LANE % 4], A[1 + LANE % 4]) + 100)


def test_dereferencing_an_uninitialised_pointer_is_diagnosed():
    _, report = run("uint i = thread_position_in_grid.x; const device float* p;\nout[i] = *p;")
    assert [d.kind for d in report.errors] == ["uninitialized-read"]
    assert "uninitialised pointer" in report.errors[0].message


def test_an_unwritten_element_of_an_array_of_pointers_is_diagnosed():
    _, report = run("uint i = thread_position_in_grid.x; const device float* ps[2];\n"
                    "ps[0] = a;\nout[i] = ps[1][0];")
    assert {d.kind for d in report.errors} == {"uninitialized-read"}
    assert any("uninitialised pointer" in d.message for d in report.errors)


def test_array_parameters_are_adjusted_to_pointers():
    header = "float f(const device float x[], uint i) { return x[i]; }"
    out = clean("uint i = thread_position_in_grid.x; out[i] = f(a, i);", header=header)
    np.testing.assert_array_equal(out, A)


def test_elem_to_loc_2_accepts_the_strides_array():
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    kernel = metalsim.metal_kernel(
        "k", ["a"], ["out"], "uint2 e = thread_position_in_grid.xy;\n"
        "out[e.y * 4 + e.x] = a[elem_to_loc_2(e, a_strides)];", ensure_row_contiguous=False)
    result = metalsim.simulate(kernel, inputs=[mx.array(x).T], output_shapes=[(4, 4)],
                               output_dtypes=[mx.float32], grid=(4, 4, 1),
                               threadgroup=(4, 4, 1))
    assert result.report.diagnostics == []
    np.testing.assert_array_equal(np.array(result.outputs[0]), x.T)


def test_auto_pointer_deduces_its_pointee_from_the_initializer():
    out = clean("uint i = thread_position_in_grid.x; float t[2] = {a[i], 7};\n"
                "const device auto* p = b + i; thread auto* q = t; out[i] = *p + q[1];")
    np.testing.assert_array_equal(out, B + 7)
    # the deduced pointee keeps const: a `device auto*` cannot point into a const input
    with pytest.raises(metalsim.CompileError, match="drops 'const'"):
        run("device auto* p = a; out[0] = p[0];")
    with pytest.raises(metalsim.CompileError, match="cannot deduce 'auto\\*' from 'int'"):
        run("thread auto* p = 0; out[0] = 1;")


@pytest.mark.parametrize("declaration", ["auto idx[1] = {1u};", "auto x[] = {1.0f};"])
def test_an_array_of_auto_is_a_compile_error(declaration):
    """Found by the mutation fuzz (an AttributeError): C++ has no arrays of `auto`."""
    with pytest.raises(metalsim.CompileError, match="element type cannot be 'auto'"):
        run(declaration + " out[0] = 1;")


@pytest.mark.parametrize("source", ["const device float* p = a + 4611686018427387904;",
                                    "float x = a[4611686018427387904];",
                                    "float x = *(a - 4611686018427387904);"])
def test_a_huge_constant_offset_raises_no_numpy_warning(source):
    """Found by the mutation fuzz: a constant offset times the element size wrapped in a numpy
    scalar, whose RuntimeWarning is an exception where warnings are errors."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run(source + " out[0] = 1;")


@pytest.mark.parametrize("declaration", ["threadgroup float c[4][];", "float t[2][] = {{1}};"])
def test_an_inner_array_dimension_left_empty_is_a_compile_error(declaration):
    """Found by the mutation fuzz (a ValueError from numpy): only the first dimension of an
    array may be left out (C++ [dcl.array]/3)."""
    with pytest.raises(metalsim.CompileError, match="incomplete element type"):
        run(declaration + " out[0] = 1;")
