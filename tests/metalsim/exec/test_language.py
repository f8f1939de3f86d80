"""The MSL language features kernels use, each run in the simulator against a known answer."""

import ml_dtypes
import mlx.core as mx
import numpy as np
import pytest

import metalsim


def run1(source, inputs=(), out_shape=(8,), dtype=mx.float32, grid=(8, 1, 1), tg=(8, 1, 1),
         header="", names=None, template=None, init_value=None, **kw):
    names = names or [f"in{i}" for i in range(len(inputs))]
    kernel = metalsim.metal_kernel("k", names, ["out"], source, header=header, **kw)
    result = metalsim.simulate(kernel, inputs=list(inputs), output_shapes=[out_shape],
                               output_dtypes=[dtype], grid=grid, threadgroup=tg,
                               template=template, init_value=init_value)
    assert result.report.errors == [], result.report.summary()
    out = result.outputs[0]
    return np.array(out.astype(mx.float32) if out.dtype == mx.bfloat16 else out)


def test_vector_constructors_swizzles_and_component_writes():
    source = """
    uint i = thread_position_in_grid.x;
    float4 v = float4(1.0f, float2(2.0f, 3.0f), float(i));
    v.yx = v.xy;
    float3 w = v.zyx + 1.0f;
    w.z *= 10;
    out[i] = w.x + w.y + w.z + v[1] + dot(v.xy, float2(1.0f));
    """
    out = run1(source)
    i = np.arange(8)
    np.testing.assert_array_equal(out, (3 + 1) + (1 + 1) + (2 + 1) * 10 + 1 + 3 + 0 * i)


def test_vector_loads_through_a_cast_pointer():
    source = """
    uint i = thread_position_in_grid.x;
    const device float4* v = (const device float4*)in0;
    float4 x = v[i];
    out[i] = x.x + x.y + x.z + x.w;
    """
    data = mx.arange(32, dtype=mx.float32)
    out = run1(source, [data])
    np.testing.assert_array_equal(out, np.arange(32).reshape(8, 4).sum(1))


def test_vector_comparison_gives_bool_vector_for_all_and_any():
    source = """
    uint i = thread_position_in_grid.x;
    int2 p = int2(i, 7 - i);
    out[i] = all(p > int2(2)) ? 2 : (any(p == int2(0)) ? 1 : 0);
    """
    out = run1(source, dtype=mx.int32)
    assert out.tolist() == [1, 0, 0, 2, 2, 0, 0, 1]


def test_half_arithmetic_rounds_to_half_after_each_operation():
    source = """
    uint i = thread_position_in_grid.x;
    half x = in0[i];
    half y = x + 0.0001h;   // below half's resolution at 1.0: no change
    out[i] = y * 3.0h;
    """
    data = mx.array(np.full(8, 1.0, np.float16))
    out = run1(source, [data], dtype=mx.float16)
    expected = (np.float16(1.0) + np.float16(0.0001)) * np.float16(3.0)
    np.testing.assert_array_equal(out, np.full(8, expected, np.float16))


def test_bfloat_values_round_to_nearest_even():
    source = "uint i = thread_position_in_grid.x;\nout[i] = bfloat(in0[i]) + bfloat(1.0f);"
    data = mx.array(np.linspace(0, 3, 8).astype(np.float32))
    out = run1(source, [data], dtype=mx.bfloat16)
    expected = (np.linspace(0, 3, 8).astype(np.float32).astype(ml_dtypes.bfloat16)
                + ml_dtypes.bfloat16(1.0)).astype(np.float32)
    np.testing.assert_array_equal(out, expected)


def test_mixing_half_and_bfloat_is_a_compile_error():
    with pytest.raises(metalsim.CompileError, match="half.*bfloat|bfloat.*half"):
        run1("out[0] = half(1) + bfloat(1);", dtype=mx.float32)


def test_as_type_reinterprets_bits():
    source = """
    uint i = thread_position_in_grid.x;
    out[i] = as_type<uint>(float(i));
    """
    out = run1(source, dtype=mx.uint32)
    np.testing.assert_array_equal(out, np.arange(8, dtype=np.float32).view(np.uint32))


def test_helper_function_template_and_references_in_header():
    header = """
    template <typename T>
    inline T square(T x) { return x * x; }
    inline void bump(thread float& acc, float v) { acc += v; }
    """
    source = """
    uint i = thread_position_in_grid.x;
    float acc = 1.0f;
    bump(acc, square(float(i)));
    out[i] = acc + square(int(i));
    """
    out = run1(source, header=header)
    np.testing.assert_array_equal(out, 1 + 2 * np.arange(8) ** 2)


def test_switch_with_fallthrough_and_default():
    source = """
    uint i = thread_position_in_grid.x;
    int r = 0;
    switch (i % 4) {
        case 0: r += 1;
        case 1: r += 10; break;
        case 2: { r = 5; break; }
        default: r = -1;
    }
    out[i] = r;
    """
    out = run1(source, dtype=mx.int32)
    assert out.tolist() == [11, 10, 5, -1] * 2


def test_do_while_and_continue_and_break_in_divergent_loops():
    source = """
    uint i = thread_position_in_grid.x;
    int s = 0, k = 0;
    do {
        k++;
        if (k % 2 == 0) continue;
        if (k > int(i)) break;
        s += k;
    } while (k < 10);
    out[i] = s * 100 + k;
    """
    out = run1(source, dtype=mx.int32)
    expected = []
    for i in range(8):
        s = k = 0
        while True:
            k += 1
            if k % 2 == 0:
                if not k < 10:
                    break
                continue
            if k > i:
                break
            s += k
            if not k < 10:
                break
        expected.append(s * 100 + k)
    assert out.tolist() == expected


def test_continue_and_break_deep_in_a_loop_body_reach_their_loop():
    """A `continue` inside a switch and an if, and a `break` of an inner loop: each loop
    collects the lanes that jump wherever in its body the jump sits (a loop with no jump in
    its body skips that bookkeeping)."""
    source = """
    uint i = thread_position_in_grid.x;
    int s = 0;
    for (int k = 0; k < 6; ++k) {
        if (k > 0) {
            switch (k % 3) {
                case 0: continue;
                default: break;
            }
        }
        for (int j = 0; j < 5; ++j) {
            if (j > int(i) % 3) break;
            s += j;
        }
        s += 10 * k;
        if (k == int(i)) break;
    }
    for (int k = 0; k < 3; ++k) s += 1000;
    out[i] = s;
    """
    out = run1(source, dtype=mx.int32)
    expected = []
    for i in range(8):
        s = 0
        for k in range(6):
            if k > 0 and k % 3 == 0:
                continue
            s += sum(range(i % 3 + 1)) + 10 * k
            if k == i:
                break
        expected.append(s + 3000)
    assert out.tolist() == expected


def test_multidimensional_thread_array_with_initializer():
    source = """
    uint i = thread_position_in_grid.x;
    int m[2][3] = {{1, 2, 3}, {4, 5, 6}};
    out[i] = m[i % 2][i % 3];
    """
    out = run1(source, dtype=mx.int32)
    m = [[1, 2, 3], [4, 5, 6]]
    assert out.tolist() == [m[i % 2][i % 3] for i in range(8)]


def test_program_scope_constant_array_and_static_assert():
    header = """
    constant int WEIGHTS[4] = {1, -2, 3, -4};
    constexpr constant int N = 4;
    static_assert(N == 4, "four weights");
    """
    source = "uint i = thread_position_in_grid.x;\nout[i] = WEIGHTS[i % N] * 2;"
    assert run1(source, header=header, dtype=mx.int32).tolist() == [2, -4, 6, -8] * 2


def test_failed_static_assert_is_a_compile_error():
    with pytest.raises(metalsim.CompileError, match="static assertion failed: too big"):
        run1('static_assert(sizeof(float4) == 12, "too big");\nout[0] = 0;')


def test_pointer_arithmetic_and_dereference():
    source = """
    uint i = thread_position_in_grid.x;
    const device float* p = in0 + i;
    p += 1;
    out[i] = *p - *(p - 1) + p[-1];
    """
    data = mx.arange(9, dtype=mx.float32)
    np.testing.assert_array_equal(run1(source, [data]), 1 + np.arange(8))


def test_templates_with_type_int_and_bool_arguments():
    source = """
    uint i = thread_position_in_grid.x;
    T v = T(i) * T(SCALE);
    if (NEGATE) v = -v;
    out[i] = v;
    """
    out = run1(source, dtype=mx.float32,
               template=[("T", mx.float32), ("SCALE", -3), ("NEGATE", True)])
    np.testing.assert_array_equal(out, np.arange(8) * 3)


def test_zero_dimensional_and_python_scalar_inputs_are_values():
    source = "uint i = thread_position_in_grid.x;\nout[i] = in0[i] * s + n;"
    out = run1(source, [mx.arange(8, dtype=mx.float32), 2.0, 3], names=["in0", "s", "n"])
    np.testing.assert_array_equal(out, np.arange(8) * 2 + 3)


def test_strided_input_with_elem_to_loc_when_not_row_contiguous():
    source = """
    uint elem = thread_position_in_grid.x;
    uint loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
    out[elem] = inp[loc];
    """
    base = mx.arange(24, dtype=mx.float32).reshape(4, 6)
    view = base.T[::2]  # a non-contiguous, strided view
    out = run1(source, [view], names=["inp"], out_shape=(view.size,), grid=(view.size, 1, 1),
               tg=(4, 1, 1), ensure_row_contiguous=False)
    np.testing.assert_array_equal(out, np.array(view).ravel())


def test_row_contiguous_copy_by_default_makes_plain_indexing_work():
    source = "uint i = thread_position_in_grid.x;\nout[i] = inp[i];"
    view = mx.arange(12, dtype=mx.float32).reshape(3, 4).T
    out = run1(source, [view], names=["inp"], out_shape=(12,), grid=(12, 1, 1), tg=(12, 1, 1))
    np.testing.assert_array_equal(out, np.array(view).ravel())


def test_math_functions_compute_in_float32():
    source = """
    uint i = thread_position_in_grid.x;
    float x = float(i) * 0.5f;
    out[i] = metal::exp(-x) + sqrt(x) + max(x, 1.0f) + clamp(x, 0.5f, 2.0f) + floor(x);
    """
    x = np.arange(8, dtype=np.float32) * np.float32(0.5)
    expected = (np.exp(-x.astype(np.float64)).astype(np.float32) + np.sqrt(x)
                + np.maximum(x, 1) + np.clip(x, 0.5, 2) + np.floor(x))
    np.testing.assert_allclose(run1(source), expected, rtol=1e-6)


def test_unsuffixed_float_literal_is_float_not_double():
    source = "uint i = thread_position_in_grid.x;\nout[i] = float(i) * 0.1;"
    expected = np.arange(8, dtype=np.float32) * np.float32(0.1)
    np.testing.assert_array_equal(run1(source), expected)


def test_macros_and_conditional_compilation_in_header():
    header = """
    #define TWICE(x) ((x) * 2)
    #if __METAL_VERSION__ >= 300
    #define BONUS 1
    #else
    #define BONUS 100
    #endif
    """
    source = "uint i = thread_position_in_grid.x;\nout[i] = TWICE(int(i)) + BONUS;"
    assert run1(source, header=header, dtype=mx.int32).tolist() == [2 * i + 1 for i in range(8)]


def test_attributes_of_a_3d_dispatch():
    source = """
    uint3 p = thread_position_in_grid;
    uint idx = (p.z * threads_per_grid.y + p.y) * threads_per_grid.x + p.x;
    out[idx] = thread_index_in_threadgroup * 1000 + simdgroup_index_in_threadgroup * 100
             + threadgroups_per_grid.x * 10 + thread_index_in_simdgroup % 10;
    """
    out = run1(source, out_shape=(2, 4, 8), grid=(8, 4, 2), tg=(8, 4, 2), dtype=mx.int32)
    lin = np.arange(64).reshape(2, 4, 8)
    np.testing.assert_array_equal(out, lin * 1000 + (lin // 32) * 100 + 10 + (lin % 32) % 10)


def test_numeric_limits_and_mlx_limits():
    source = """
    out[0] = numeric_limits<int>::max();
    out[1] = metal::numeric_limits<uint>::max() == 4294967295u ? 1 : 0;
    out[2] = isinf(Limits<float>::min) && Limits<float>::min < 0 ? 1 : 0;
    out[3] = numeric_limits<half>::max();
    out[4] = numeric_limits<float>::lowest() == -FLT_MAX ? 1 : 0;
    """
    out = run1(source, out_shape=(5,), grid=(1, 1, 1), tg=(1, 1, 1))
    assert out.tolist() == [2147483648.0, 1, 1, 65504, 1]


def test_numeric_limits_of_bfloat():
    source = """
    out[0] = numeric_limits<bfloat>::max();
    out[1] = numeric_limits<bfloat>::epsilon();
    out[2] = numeric_limits<bfloat>::min();
    """
    out = run1(source, out_shape=(3,), grid=(1, 1, 1), tg=(1, 1, 1))
    info = ml_dtypes.finfo(ml_dtypes.bfloat16)
    assert out.tolist() == [float(info.max), float(info.eps), float(info.smallest_normal)]


def test_fast_and_precise_math_namespaces_and_math_modes():
    source = """
    uint i = thread_position_in_grid.x;
    float x = float(i) + 0.5f;
    out[i] = metal::fast::exp(x) - metal::precise::exp(x) + fast::sqrt(x) - precise::sqrt(x)
             + metal::exp(x) - exp(x);
    """
    for mode in ("safe", "relaxed", "fast"):
        out = run1(source, compile_options={"math_mode": mode})
        np.testing.assert_allclose(out, np.zeros(8), atol=1e-3)


def test_fast_math_mode_defines_the_fast_math_macro():
    source = """
    #ifdef __FAST_MATH__
    out[0] = 1;
    #else
    out[0] = 0;
    #endif
    """
    assert run1(source, out_shape=(1,), grid=(1, 1, 1), tg=(1, 1, 1),
                compile_options={"math_mode": "fast"}).tolist() == [1]
    assert run1(source, out_shape=(1,), grid=(1, 1, 1), tg=(1, 1, 1)).tolist() == [0]


def test_integer_math_and_select_and_vector_relational_functions():
    source = """
    uint i = thread_position_in_grid.x;
    uint x = i * 0x01010101u;
    float4 v = float4(float(i), -1.0f, NAN, INFINITY);
    bool4 bad = isnan(v) | isinf(v);
    out[i] = popcount(x) * 1000 + clz(i + 1) * 10 + (any(bad) ? 1 : 0)
             + select(0, 5, all(bad.zw)) * 100 + int(select(float4(0.0f), v, v > 0.0f).x);
    """
    out = run1(source, dtype=mx.int32)
    expected = [bin(i * 0x01010101).count("1") * 1000 + (32 - (i + 1).bit_length()) * 10 + 1
                + 500 + i for i in range(8)]
    assert out.tolist() == expected


def test_simd_vote_holds_the_ballot_bits():
    source = """
    simd_vote v = simd_ballot(thread_index_in_simdgroup < 3);
    out[thread_position_in_grid.x] = ulong(v);
    """
    out = run1(source, out_shape=(4,), grid=(4, 1, 1), tg=(4, 1, 1), dtype=mx.uint64)
    assert out.tolist() == [7, 7, 7, 7]


def test_packed_vectors_convert_to_aligned_ones_and_compute():
    source = """
    uint i = thread_position_in_grid.x;
    packed_float4 p = ((const device packed_float4*)in0)[i];
    float4 v = p * 2.0f;
    out[i] = v.x + v.w;
    """
    out = run1(source, [mx.arange(32, dtype=mx.float32)])
    np.testing.assert_array_equal(out, (np.arange(0, 32, 4) + np.arange(3, 32, 4)) * 2)


def test_type_aliases_inside_a_kernel_body():
    source = """
    typedef float real;
    using index_t = uint;
    index_t i = thread_position_in_grid.x;
    real x = real(i) / 2;
    out[i] = x;
    """
    np.testing.assert_array_equal(run1(source), np.arange(8) / 2)


def test_overloads_prefer_the_more_specialized_function_and_deduce_pointers():
    header = """
    template <typename T> inline int which(T x) { return 1; }
    template <typename T> inline int which(vec<T, 3> x) { return 3; }
    template <typename P> inline float first(P p) { return p[0]; }
    """
    source = """
    uint i = thread_position_in_grid.x;
    uint3 p = thread_position_in_grid;
    out[i] = which(p) * 100 + which(i) * 10 + first(in0 + i)
             + float(elem_to_loc(p, in0_shape, in0_strides, in0_ndim) - i);
    """
    out = run1(source, [mx.arange(8, dtype=mx.float32).reshape(2, 4)], header=header)
    np.testing.assert_array_equal(out, 310 + np.arange(8))


def test_const_reference_parameter_binds_to_a_temporary():
    header = "inline float twice(const thread float& x) { return x * 2; }"
    out = run1("uint i = thread_position_in_grid.x; out[i] = twice(float(i) + 1);",
               header=header)
    np.testing.assert_array_equal(out, 2 * (np.arange(8) + 1))


MAX2 = "template <typename T> T max2(T a, T b) { return a > b ? a : b; }"


def test_template_arguments_deduced_differently_are_a_compile_error():
    with pytest.raises(metalsim.CompileError) as info:
        run1("out[0] = max2(1.0f, 2);", header=MAX2)
    d = info.value.diagnostic
    assert d.message == "no matching function for call to 'max2'"
    assert d.hint == ("candidate template ignored: deduced conflicting types for parameter 'T' "
                      "('float' vs. 'int')")


def test_conflicting_vector_sizes_are_deduced_conflicting_values():
    header = "template <typename T, int N> T dot2(vec<T, N> a, vec<T, N> b) { return a[0]; }"
    with pytest.raises(metalsim.CompileError) as info:
        run1("out[0] = dot2(float4(1), float2(1));", header=header)
    assert info.value.diagnostic.hint == ("candidate template ignored: deduced conflicting "
                                          "values for parameter 'N' (4 vs. 2)")


def test_an_explicit_template_argument_is_not_deduced_so_arguments_convert():
    out = run1("uint i = thread_position_in_grid.x; out[i] = max2<float>(1.5f, int(i));",
               header=MAX2)
    np.testing.assert_array_equal(out, np.maximum(1.5, np.arange(8)))


def test_a_conflict_in_one_overload_leaves_the_others_viable():
    header = MAX2 + "\ninline float max2(float a, float b) { return a + b; }"
    out = run1("out[thread_position_in_grid.x] = max2(1.0f, 2);", header=header)
    np.testing.assert_array_equal(out, np.full(8, 3.0))


OVERLOADS = "inline float f(int x) { return 1; }\ninline float f(float x) { return 2; }"


@pytest.mark.parametrize("arg, chosen", [
    ("1", 1), ("1.0f", 2), ("short(1)", 1), ("true", 1), ("half(1)", 2)])
def test_exact_matches_and_promotions_win_overload_resolution(arg, chosen):
    out = run1(f"out[thread_position_in_grid.x] = f({arg});", header=OVERLOADS)
    np.testing.assert_array_equal(out, np.full(8, chosen))


@pytest.mark.parametrize("arg", ["1u", "1l", "int2(1).x + 1u"])
def test_conversions_of_equal_rank_make_a_call_ambiguous(arg):
    with pytest.raises(metalsim.CompileError) as info:
        run1(f"out[0] = f({arg});", header=OVERLOADS)
    assert info.value.diagnostic.message == "call to 'f' is ambiguous"
