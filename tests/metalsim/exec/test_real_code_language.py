"""Valid Metal that real kernels use and metalsim once refused, each against a known answer:
logical operators on bool vectors, brace elision, type traits, MLX's log1p and the math
functions with output arguments, and a constant division by zero in code that never runs."""

import math

import mlx.core as mx
import numpy as np
import pytest

import metalsim


def run(source, a, header="", template=None, out_shape=None, dtype=mx.float32, threads=None):
    kernel = metalsim.metal_kernel("k", ["a"], ["out"], source, header=header)
    a = mx.array(np.asarray(a, np.float32))
    result = metalsim.simulate(kernel, inputs=[a], output_shapes=[out_shape or a.shape],
                               output_dtypes=[dtype], grid=(threads or a.size, 1, 1),
                               threadgroup=(threads or a.size, 1, 1), template=template)
    assert result.report.errors == [], result.report.summary()
    return np.array(result.outputs[0])


def test_not_on_a_bool_vector_is_component_wise_so_any_of_not_works():
    source = """
    uint i = thread_position_in_grid.x;
    bool4 b = bool4(a[i] > 0, true, a[i] > 1, true);
    bool4 n = !b;
    out[i] = any(!b) * 10 + n.x + 2 * n.z;
    """
    np.testing.assert_array_equal(run(source, [-1, 0.5, 2, 3]), [13, 12, 0, 0])


def test_not_on_a_float_vector_gives_the_bool_vector_of_zero_components():
    source = """
    uint i = thread_position_in_grid.x;
    bool2 n = !float2(a[i], 1.0f);
    out[i] = n.x + 2 * n.y;
    """
    np.testing.assert_array_equal(run(source, [0, 2]), [1, 0])


def test_and_or_on_bool_vectors_are_component_wise_with_scalars_splatted():
    source = """
    uint i = thread_position_in_grid.x;
    bool2 x = bool2(a[i] > 0, a[i] > 1);
    bool2 both = x && bool2(true, false);
    bool2 either = x || (a[i] < 0);
    out[i] = both.x + 2 * both.y + 4 * either.x + 8 * either.y;
    """
    # a = -1: x = (F, F), either = (T, T); a = 0.5: x = (T, F); a = 2: x = (T, T)
    np.testing.assert_array_equal(run(source, [-1, 0.5, 2]), [12, 5, 13])


def test_vector_logical_operators_evaluate_both_sides():
    source = """
    uint i = thread_position_in_grid.x;
    int calls = 0;
    bool2 x = bool2(false) && bool2(++calls > 0);
    out[i] = calls + x.x;
    """
    np.testing.assert_array_equal(run(source, [0]), [1])


@pytest.mark.parametrize("decl, expr, expected", [
    ("float2 m[2] = {1.0f, 2.0f, 3.0f, 4.0f};", "m[1].y", 4.0),
    ("float m[2][2] = {1, 2, 3, 4};", "m[1][0] * 10 + m[1][1]", 34.0),
    ("float m[2][3] = {1, 2, 3, 4};", "m[1][0] * 10 + m[1][2]", 40.0),
    ("P ps[2] = {1.0f, 2.0f, 3, 4.0f, 5.0f, 6};", "ps[1].v.y * 10 + ps[1].n + ps[0].n * 100",
     356.0),
    ("float4 v = float4(2.0f); float4 w[2] = {v, 7};", "w[0].x + w[1].x * 10 + w[1].y", 72.0),
    ("Q q = {1, 2, 3};", "q.p[0] * 100 + q.p[1] * 10 + q.p[2]", 123.0),
], ids=["vectors", "2d", "2d-partial", "structs", "vector-item-then-scalars", "struct-array"])
def test_braces_may_be_elided_in_aggregate_initialisers(decl, expr, expected):
    header = "struct P { float2 v; int n; };\nstruct Q { int p[3]; };"
    out = run(f"{decl}\nout[thread_position_in_grid.x] = {expr};", [0], header=header)
    assert out[0] == expected


def test_elided_braces_in_a_program_scope_constant_table():
    header = "constant float2 table[2] = {1.0f, 2.0f, 3.0f, 4.0f};"
    assert run("out[0] = table[1].x * 10 + table[0].y;", [0], header=header)[0] == 32


def test_an_initialiser_with_too_many_elements_for_the_elided_aggregate_is_an_error():
    with pytest.raises(metalsim.CompileError, match="excess elements in array initializer"):
        run("float m[2][2] = {1, 2, 3, 4, 5};\nout[0] = m[0][0];", [0])


@pytest.mark.parametrize("dtype, expected", [
    (mx.float32, [1, 0, 1, 1, 0, 1]),
    (mx.float16, [0, 0, 1, 1, 0, 1]),
    (mx.int32, [0, 1, 0, 1, 0, 1]),
    (mx.uint8, [0, 1, 0, 0, 1, 1]),
])
def test_type_traits_as_metal_defines_them(dtype, expected):
    source = """
    out[0] = metal::is_same_v<T, float>;
    out[1] = is_integral_v<T>;
    out[2] = metal::is_floating_point_v<T>;
    out[3] = is_signed_v<T>;
    out[4] = metal::is_unsigned<T>::value;
    out[5] = is_arithmetic_v<T> && metal::is_same<T, T>::value;
    """
    out = run(source, [0] * 6, template=[("T", dtype)], threads=1)
    np.testing.assert_array_equal(out, expected)


def test_type_traits_choose_a_branch_at_compile_time():
    source = """
    uint i = thread_position_in_grid.x;
    if constexpr (is_floating_point_v<T>) { out[i] = a[i] * 0.5f; } else { out[i] = -1; }
    static_assert(!metal::is_same_v<T, half> || sizeof(T) == 2, "half is 2 bytes");
    """
    np.testing.assert_array_equal(run(source, [2, 4], template=[("T", mx.float16)]), [1, 2])
    np.testing.assert_array_equal(run(source, [2, 4], template=[("T", mx.int32)]), [-1, -1])


def test_log1p_is_mlx_s_log1p_and_accurate_near_zero():
    x = np.array([1e-8, -1e-6, 0.5, 3.0, -0.999, 1e30], np.float32)
    out = run("uint i = thread_position_in_grid.x;\nout[i] = log1p(a[i]);", x)
    np.testing.assert_allclose(out, np.log1p(x.astype(np.float64)), rtol=2e-7)
    assert out[0] == np.float32(1e-8)   # log(1 + x) in float would give 0


def test_log1p_on_bfloat_returns_bfloat():
    source = "uint i = thread_position_in_grid.x;\nout[i] = log1p(bfloat(a[i]));"
    kernel = metalsim.metal_kernel("k", ["a"], ["out"], source)
    out = kernel(inputs=[mx.array([0.5, 2.0])], output_shapes=[(2,)],
                 output_dtypes=[mx.bfloat16], grid=(2, 1, 1), threadgroup=(2, 1, 1))[0]
    assert out.dtype == mx.bfloat16
    np.testing.assert_allclose(np.array(out.astype(mx.float32)), np.log1p([0.5, 2.0]),
                               rtol=1e-2)


def test_frexp_returns_the_mantissa_and_writes_the_exponent():
    x = np.array([1.5, -12.0, 0.0, 1e-40, 3e38], np.float32)
    source = """
    uint i = thread_position_in_grid.x;
    int e;
    float m = frexp(a[i], e);
    out[2 * i] = m;
    out[2 * i + 1] = e;
    """
    out = run(source, x, out_shape=(10,))
    m, e = np.frexp(x)
    np.testing.assert_array_equal(out[0::2], m)
    np.testing.assert_array_equal(out[1::2], e)


def test_frexp_on_vectors_writes_an_int_vector():
    source = """
    int2 e;
    float2 m = frexp(float2(a[0], 8.0f), e);
    out[0] = m.x; out[1] = m.y; out[2] = e.x; out[3] = e.y;
    """
    np.testing.assert_array_equal(run(source, [3, 0, 0, 0], threads=1), [0.75, 0.5, 2, 4])


def test_modf_splits_integral_and_fractional_parts_with_their_signs():
    x = np.array([2.75, -2.75, 5.0, -5.0, np.inf, -np.inf], np.float32)
    source = """
    uint i = thread_position_in_grid.x;
    float ip;
    out[2 * i] = modf(a[i], ip);
    out[2 * i + 1] = ip;
    """
    out = run(source, x, out_shape=(12,))
    frac, whole = np.modf(x)
    np.testing.assert_array_equal(out[0::2], frac)
    np.testing.assert_array_equal(np.signbit(out[0::2]), np.signbit(frac))
    np.testing.assert_array_equal(out[1::2], whole)


def test_sincos_returns_the_sine_and_writes_the_cosine():
    x = np.array([0.0, 0.5, 2.0, -3.0], np.float32)
    source = """
    uint i = thread_position_in_grid.x;
    float c;
    out[2 * i] = sincos(a[i], c);
    out[2 * i + 1] = c;
    """
    out = run(source, x, out_shape=(8,))
    np.testing.assert_allclose(out[0::2], np.sin(x), atol=1e-7)
    np.testing.assert_allclose(out[1::2], np.cos(x), atol=1e-7)


def test_ilogb_gives_the_unbiased_exponent_as_int():
    x = np.array([1.0, 1.5, 0.25, 1000.0, -8.0, 1e-40], np.float32)
    source = """
    uint i = thread_position_in_grid.x;
    int e = ilogb(a[i]);
    out[i] = e;
    """
    out = run(source, x)
    np.testing.assert_array_equal(out, [math.frexp(float(v))[1] - 1 for v in x])


def test_a_constant_division_by_zero_in_code_that_never_runs_compiles():
    assert run("if (a[0] > 1) { out[0] = 5 / 0; } else { out[0] = 1; }", [0])[0] == 1
    assert run("if (false) { out[0] = 5 % 0; }\nout[0] = 2;", [0])[0] == 2


def test_a_constant_division_by_zero_that_runs_is_reported_as_it_is_on_every_division():
    kernel = metalsim.metal_kernel("k", ["a"], ["out"], "out[0] = 5 / 0;")
    run_ = metalsim.simulate(kernel, inputs=[mx.zeros(1)], output_shapes=[(1,)],
                             output_dtypes=[mx.float32], grid=(1, 1, 1), threadgroup=(1, 1, 1))
    assert [d.kind for d in run_.report.diagnostics] == ["division-by-zero"]


def test_a_constant_division_by_zero_where_a_constant_is_needed_is_an_error():
    with pytest.raises(metalsim.CompileError, match="constant expression"):
        run("constexpr int z = 5 / 0;\nout[0] = z;", [0])


@pytest.mark.parametrize("dtype, expected", [(mx.float16, 143.5), (mx.int32, 43)])
def test_conditional_t_and_remove_cv_t_name_types(dtype, expected):
    source = """
    using Acc = metal::conditional_t<sizeof(T) == 2, float, T>;
    Acc x = 1.5;
    metal::remove_cv_t<const int> y = 2;
    out[0] = sizeof(Acc) * 10 + y + x
             + 100 * is_same_v<metal::conditional_t<is_floating_point_v<T>, T, float>, T>;
    """
    assert run(source, [0], template=[("T", dtype)], threads=1)[0] == expected


SFINAE = """
template <typename T, typename = metal::enable_if_t<metal::is_floating_point_v<T>>>
inline float kind(T x) { return 1; }
template <typename T, typename = metal::enable_if_t<metal::is_integral_v<T>>, typename = void>
inline float kind(T x) { return 2; }
template <typename T>
metal::enable_if_t<is_same_v<T, half>, float> which(T x) { return 3; }
template <typename T>
metal::enable_if_t<!is_same_v<T, half>, float> which(T x) { return 4; }
"""


def test_enable_if_t_removes_overloads_as_sfinae_does():
    source = "out[0] = kind(1.5f) * 10 + kind(3) + which(half(1)) * 100 + which(1) * 1000;"
    assert run(source, [0], header=SFINAE, threads=1)[0] == 4312


def test_a_call_no_overload_survives_enable_if_for_says_why():
    header = "template <typename T>\nmetal::enable_if_t<is_same_v<T, half>, T> h(T x) { return x; }"
    with pytest.raises(metalsim.CompileError, match="no matching function for call to 'h'") as e:
        run("out[0] = h(1.0f);", [0], header=header, threads=1)
    assert "enable_if<false>" in e.value.diagnostic.hint


def test_enable_if_t_false_outside_a_template_is_an_error():
    with pytest.raises(metalsim.CompileError, match="no type named 'type' in 'enable_if<false>'"):
        run("metal::enable_if_t<false, int> z = 1;\nout[0] = z;", [0], threads=1)


def test_a_thread_qualified_constructor_as_mlx_headers_write_it():
    header = "struct Add { float b; Add(float b_) thread : b(b_) {} };"
    assert run("Add op(2.5f);\nout[0] = op.b;", [0], header=header, threads=1)[0] == 2.5


def test_mlx_complex64_t_has_its_parts_constructors_and_arithmetic():
    source = """
    complex64_t x(1.0f, 2.0f), y(3.0f, -4.0f), zero;
    complex64_t p = x * y + x - y;
    out[0] = p.real; out[1] = p.imag; out[2] = zero.real + zero.imag;
    """
    kernel = metalsim.metal_kernel("cplx", ["a"], ["out"], source)
    out = kernel(inputs=[mx.zeros(1)], output_shapes=[(3,)], output_dtypes=[mx.float32],
                 grid=(1, 1, 1), threadgroup=(1, 1, 1))[0]
    z = (1 + 2j) * (3 - 4j) + (1 + 2j) - (3 - 4j)
    assert np.array(out).tolist() == [z.real, z.imag, 0.0]
