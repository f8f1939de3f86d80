"""The prelude: a kernel body without MLX's headers gets what MLX's utils.h declares (MLX
compiles every custom kernel after it); a program that includes MLX's header declaring one of
those names gets MLX's declaration alone, with no stand-in beside it; a kernel's own
declaration of such a name meets the stand-in as it meets MLX's on Metal, by C++'s rules."""

import math

import ml_dtypes
import mlx.core as mx
import numpy as np
import pytest
from cxx_oracle import metalsim_outputs

import metalsim
from metalsim.diagnostics import SourceMap
from metalsim.exec import launch
from metalsim.exec.prelude import (
    MLX_KERNELS,
    MLX_SECTION,
    MLX_STAND_INS,
    PRELUDE,
    PRELUDE_SECTIONS,
    replaced_stand_ins,
    stand_in_of,
)
from metalsim.lang.parser import parse
from metalsim.lang.preprocess import preprocess

UTILS_SOURCE = """
complex64_t a = complex64_t(1.0f, 2.0f), b = complex64_t(3.0f, -4.0f);
complex64_t p = a * b - a + b;
out[0] = p.real;
out[1] = p.imag;
out[2] = log1p(1e-7f);
out[3] = float(log1p(bfloat16_t(0.5f)));
out[4] = float(float16_t(1.5f) * float16_t(2.0f));
out[5] = float(ceildiv(10, 4));
out[6] = float(elem_to_loc(uint(5), x_shape, x_strides, x_ndim));
out[7] = float(elem_to_loc(uint3(1, 2, 0), x_shape, x_strides, x_ndim));
out[8] = float(elem_to_loc_1(uint(3), x_strides[1]));
out[9] = float(elem_to_loc_2(uint2(1, 2), x_strides));
"""


def test_a_kernel_without_mlxs_headers_gets_what_mlxs_utils_h_declares():
    kernel = metalsim.metal_kernel("utils_names", ["x"], ["out"], UTILS_SOURCE,
                                   ensure_row_contiguous=False)
    x = mx.zeros((3, 4)).T   # shape (4, 3), strides (1, 4)
    (out,) = kernel(inputs=[x], output_shapes=[(10,)], output_dtypes=[mx.float32],
                    grid=(1, 1, 1), threadgroup=(1, 1, 1))
    p = (1 + 2j) * (3 - 4j) - (1 + 2j) + (3 - 4j)
    # elem 5 of shape (4, 3) is (1, 2): 1*1 + 2*4; uint3(1, 2, 0) is column 1, row 2.
    expected = [p.real, p.imag, np.float32(math.log1p(1e-7)), 0.40625, 3.0, 3.0,
                9.0, 1 * 4 + 2 * 1, 3 * 4, 1 * 4 + 2 * 1]
    np.testing.assert_array_equal(np.array(out), np.array(expected, np.float32))


LIMITS_SOURCE = """
out[0] = Limits<float>::max;
out[1] = Limits<float>::min;
out[2] = Limits<float>::finite_max;
out[3] = Limits<half>::finite_min;
out[4] = Limits<bfloat16_t>::finite_max;
out[5] = Limits<int>::min;
out[6] = Limits<uint>::finite_max;
out[7] = Limits<bool>::max;
"""


def test_a_kernel_without_mlxs_headers_gets_mlxs_limits():
    kernel = metalsim.metal_kernel("limits", ["x"], ["out"], LIMITS_SOURCE)
    (out,) = kernel(inputs=[mx.zeros(1)], output_shapes=[(8,)], output_dtypes=[mx.float32],
                    grid=(1, 1, 1), threadgroup=(1, 1, 1))
    expected = [np.inf, -np.inf, np.finfo(np.float32).max, -65504.0,
                ml_dtypes.finfo(ml_dtypes.bfloat16).max, -2.0**31, 2.0**32 - 1, 1.0]
    np.testing.assert_array_equal(np.array(out), np.array(expected, np.float32))


def items_of(header: str) -> list:
    """The parsed translation unit of `header` after the prelude, with MLX's includes."""
    text = PRELUDE + header
    source_map = SourceMap(text, [*PRELUDE_SECTIONS, ("header", len(PRELUDE), len(text))])
    preprocessed, parsed = launch.parsed_prelude(False)
    tokens = preprocess(text, source_map, after=preprocessed,
                        include_dirs=(str(metalsim.mlx_include_dir()),))
    return parse(tokens, source_map, after=parsed).items


@pytest.mark.parametrize(("header", "names"), [
    ("bf16.h", {"bfloat16_t"}),
    ("complex.h", {"bfloat16_t", "complex64_t"}),   # complex.h includes bf16.h
    ("utils.h", set(MLX_STAND_INS)),
])
def test_each_stand_in_gives_way_where_mlxs_header_declaring_its_name_is_included(header,
                                                                                   names):
    items = items_of(f'#include "{MLX_KERNELS}/{header}"\n')
    replaced = replaced_stand_ins(items)
    stand_ins = [item for item in items if item.coord.section == MLX_SECTION]
    assert {stand_in_of(item) for item in stand_ins} == set(MLX_STAND_INS)
    assert {stand_in_of(item) for item in stand_ins if id(item) in replaced} == names
    assert all(id(item) in replaced for item in stand_ins if stand_in_of(item) in names)


def test_a_kernels_own_declaration_of_an_mlx_name_replaces_no_stand_in():
    """Metal compiles it after MLX's utils.h, beside MLX's declaration."""
    items = items_of("inline half log1p(half x) { return x; }\ntypedef half float16_t;\n")
    assert replaced_stand_ins(items) == set()


MLX_UTILS_SOURCE = """
complex64_t a = complex64_t(1.0f, 2.0f), b = complex64_t(3.0f, -4.0f);
complex64_t q = a / b;        // complex.h's operator/: the stand-in has none
out[0] = q.real;
out[1] = q.imag;
complex64_t l = log1p(a);     // utils.h's complex log1p
out[2] = l.real;
out[3] = l.imag;
out[4] = log1p(1e-7f);        // beside a stand-in log1p(float), ambiguous
out[5] = float(ceildiv(10, 4));
out[6] = float(elem_to_loc(uint(5), x_shape, x_strides, x_ndim));
"""


def test_a_program_including_mlxs_utils_h_gets_mlxs_declarations_alone():
    kernel = metalsim.metal_kernel("mlx_utils_names", ["x"], ["out"], MLX_UTILS_SOURCE,
                                   header=f'#include "{MLX_KERNELS}/utils.h"\n',
                                   ensure_row_contiguous=False)
    kernel.include_dirs = (str(metalsim.mlx_include_dir()),)
    x = mx.zeros((3, 4)).T
    (out,) = kernel(inputs=[x], output_shapes=[(7,)], output_dtypes=[mx.float32],
                    grid=(1, 1, 1), threadgroup=(1, 1, 1))
    q, lg = (1 + 2j) / (3 - 4j), np.log1p(np.complex64(1 + 2j))
    np.testing.assert_allclose(np.array(out)[:4], [q.real, q.imag, lg.real, lg.imag],
                               rtol=2e-7)
    assert np.array(out)[4:].tolist() == [np.float32(math.log1p(1e-7)), 3.0, 9.0]


def test_a_kernels_own_log1p_overload_meets_mlxs_by_cxx_rules():
    header = "inline half log1p(half x) { return x + half(100); }"
    body = "out[0] = int(log1p(half(0.5f)) * 10); out[1] = int(log1p(0.5f) * 1000);"
    assert metalsim_outputs(header, body, 2) == [1005, int(math.log1p(0.5) * 1000)]


@pytest.mark.parametrize(("header", "error"), [
    ("inline float log1p(float x) { return 7; }", "call to 'log1p' is ambiguous"),
    ("template <typename T, typename U> T ceildiv(T n, U m) { return 5; }",
     "call to 'ceildiv' is ambiguous"),
    ("struct complex64_t { float re; };", "redefinition of 'complex64_t'"),
    ("typedef float bfloat16_t;", r"typedef redefinition with different types"),
    ("template <typename T> struct Limits { static constexpr constant T max = T(5); };",
     "redefinition of 'Limits'"),
])
def test_a_kernels_own_definition_of_an_mlx_name_is_refused_as_on_metal(header, error):
    """On Metal each is a redefinition of MLX's utils.h's; metalsim says so, or that a call
    cannot choose, never running either one silently."""
    body = ("out[0] = int(log1p(1.0f)) + ceildiv(7, 2); complex64_t c; bfloat16_t b = 1;"
            " out[1] = int(b);")
    with pytest.raises(metalsim.CompileError, match=error):
        metalsim_outputs(header, body, 2)
