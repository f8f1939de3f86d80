"""Overloaded operators on structs (C++14): member binary, comparison, unary, compound assignment
and subscript operators, free operator functions, operators of struct template instances and
member operator templates, chosen by C++ overload rules on the operands' types; `this` in
threadgroup and device memory; and what is refused, with clang's messages."""

import mlx.core as mx
import numpy as np
import pytest
from struct_kernels import Kernels

COMPLEX = """
struct C {
    float re; float im;
    C operator*(C o) const { return {re * o.re - im * o.im, re * o.im + im * o.re}; }
    C operator+(C o) const { return {re + o.re, im + o.im}; }
    C operator-(C o) const { return {re - o.re, im - o.im}; }
    C operator-() const { return {-re, -im}; }
    C operator*(float k) const { return {re * k, im * k}; }
    bool operator==(C o) const { return re == o.re && im == o.im; }
    bool operator<(C o) const { return re * re + im * im < o.re * o.re + o.im * o.im; }
    void operator+=(C o) { re += o.re; im += o.im; }
    float operator[](int i) const { return i == 0 ? re : im; }
};
inline C operator*(float k, C c) { return c * k; }
"""

KERNELS = Kernels(COMPLEX, threads=8)
simulate = KERNELS.simulate
run = KERNELS.run
compile_error = KERNELS.compile_error


def complex_inputs(n=8, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, 2)).astype(np.float32) for _ in range(3)]


# --- member operators ---------------------------------------------------------------------

def test_complex_product_plus_sum_per_thread_matches_numpy_complex64():
    a, b, c = complex_inputs()
    out = run("""
    uint i = thread_position_in_grid.x;
    C x = {in0[2 * i], in0[2 * i + 1]}, y = {in1[2 * i], in1[2 * i + 1]};
    C z = {in2[2 * i], in2[2 * i + 1]};
    C r = x * y + z;
    out[2 * i] = r.re; out[2 * i + 1] = r.im;
    """, [mx.array(a), mx.array(b), mx.array(c)], out_shape=(16,))
    want = (a.view(np.complex64) * b.view(np.complex64) + c.view(np.complex64)).ravel()
    np.testing.assert_allclose(out.view(np.complex64), want, rtol=1e-6, atol=1e-6)


def test_operators_chain_on_temporaries_with_cpp_precedence():
    a, b, c = complex_inputs(seed=1)
    out = run("""
    uint i = thread_position_in_grid.x;
    C x = {in0[2 * i], in0[2 * i + 1]}, y = {in1[2 * i], in1[2 * i + 1]};
    C z = {in2[2 * i], in2[2 * i + 1]};
    C r = x + y * z - (x - z) * y;
    out[2 * i] = r.re; out[2 * i + 1] = r.im;
    """, [mx.array(a), mx.array(b), mx.array(c)], out_shape=(16,))
    x, y, z = (v.view(np.complex64).ravel() for v in (a, b, c))
    np.testing.assert_allclose(out.view(np.complex64), x + y * z - (x - z) * y, rtol=1e-5,
                               atol=1e-5)


def test_unary_minus_and_binary_minus_are_told_apart_by_their_parameters():
    out = run("""
    uint i = thread_position_in_grid.x;
    C x = {float(i), 1.0f};
    C r = -x - C{1.0f, 2.0f};
    out[i] = r.re * 10 + r.im;
    """)
    np.testing.assert_array_equal(out, (-np.arange(8) - 1) * 10 - 3)


def test_scalar_right_operand_calls_the_member_and_scalar_left_the_free_function():
    out = run("""
    uint i = thread_position_in_grid.x;
    C x = {float(i), 2.0f};
    C r = x * 3.0f + 0.5f * x;
    out[i] = r.re + r.im;
    """)
    np.testing.assert_array_equal(out, np.arange(8) * 3.5 + 7)


def test_comparison_operators_return_bool_for_if_and_conditional():
    out = run("""
    uint i = thread_position_in_grid.x;
    C x = {float(i), 0.0f}, y = {3.0f, 0.0f};
    float r = x < y ? 1.0f : 0.0f;
    if (x == y) r = 7.0f;
    out[i] = r;
    """)
    np.testing.assert_array_equal(out, [1, 1, 1, 7, 0, 0, 0, 0])


def test_void_compound_assignment_updates_the_object():
    out = run("""
    uint i = thread_position_in_grid.x;
    C acc = {0.0f, 0.0f};
    for (int k = 0; k <= int(i); k++) acc += C{1.0f, float(k)};
    out[i] = acc.re * 100 + acc.im;
    """)
    n = np.arange(8)
    np.testing.assert_array_equal(out, (n + 1) * 100 + n * (n + 1) / 2)


def test_subscript_operator_returns_a_value_and_takes_any_integer_index():
    out = run("""
    uint i = thread_position_in_grid.x;
    C x = {float(i), -float(i)};
    out[i] = x[0] * 10 + x[i % 2u];
    """)
    n = np.arange(8)
    np.testing.assert_array_equal(out, n * 10 + np.where(n % 2 == 0, n, -n))


def test_operator_on_a_threadgroup_object_needs_a_threadgroup_qualified_overload():
    header = """
    struct Acc {
        float s;
        void operator+=(float x) threadgroup { s += x; }
        float operator[](int) const threadgroup { return s; }
    };
    """
    out = run("""
    threadgroup Acc acc;
    uint i = thread_position_in_grid.x;
    if (i == 0) { acc.s = 1.0f; acc += 2.0f; }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = acc[0];
    """, header=header)
    np.testing.assert_array_equal(out, np.full(8, 3.0))


def test_operator_on_a_device_object_not_marked_device_is_refused_with_the_reason():
    d = compile_error("""
    uint i = thread_position_in_grid.x;
    const device C* cs = (const device C*)in0;
    C r = cs[i] + cs[i];
    out[i] = r.re;
    """.replace("in0", "out"))
    assert d.message == "invalid operands to binary expression ('C' and 'C')"
    assert d.hint == ("candidate function not viable: 'this' argument is in the device address "
                      "space, but 'operator+' is not marked 'device'")


def test_const_object_needs_a_const_operator():
    header = "struct P { float v; P operator+(P o) { return {v + o.v}; } };"
    d = compile_error("const P p = {1.0f}; P q = p + p; out[0] = q.v;", header=header)
    assert d.message == "invalid operands to binary expression ('P' and 'P')"
    assert d.hint == ("candidate function not viable: 'this' argument has type 'const P', but "
                      "'operator+' is not marked const")


def test_non_const_object_prefers_the_non_const_overload():
    header = """
    struct P {
        float v;
        float operator[](int) const { return 1.0f; }
        float operator[](int) { return 2.0f; }
    };
    """
    out = run("P p = {0.0f}; const P q = {0.0f}; out[thread_position_in_grid.x] = p[0] * 10 "
              "+ q[0];", header=header)
    np.testing.assert_array_equal(out, np.full(8, 21.0))


# --- free operators and templates ---------------------------------------------------------

def test_free_operator_functions_on_two_structs():
    header = """
    struct V { float x; float y; };
    inline V operator+(V a, V b) { return {a.x + b.x, a.y + b.y}; }
    inline bool operator!=(V a, V b) { return a.x != b.x || a.y != b.y; }
    """
    out = run("""
    uint i = thread_position_in_grid.x;
    V a = {float(i), 1.0f};
    V s = a + a + V{0.5f, 0.5f};
    out[i] = (s != a) ? s.x + s.y : -1.0f;
    """, header=header)
    np.testing.assert_array_equal(out, 2 * np.arange(8) + 3)


def test_a_declared_then_defined_free_operator_is_one_candidate():
    header = """
    struct V { float x; };
    V operator*(V a, V b);
    V operator*(V a, V b) { return {a.x * b.x}; }
    """
    out = run("V a = {float(thread_position_in_grid.x)}; out[thread_position_in_grid.x] = "
              "(a * a).x;", header=header)
    np.testing.assert_array_equal(out, np.arange(8) ** 2)


def test_operators_of_struct_template_instances():
    header = """
    template <typename T> struct V2 {
        T x; T y;
        V2 operator+(V2 o) const { return {x + o.x, y + o.y}; }
        V2<T> operator*(T k) const { return {x * k, y * k}; }
    };
    """
    out = run("""
    uint i = thread_position_in_grid.x;
    V2<int> a = {int(i), 7};
    V2<float> b = {0.5f, 0.25f};
    V2<int> c = a + a * 2;
    V2<float> d = b * 2.0f + b;
    out[i] = float(c.x + c.y) + d.x + d.y;
    """, header=header)
    np.testing.assert_array_equal(out, 3 * np.arange(8) + 21 + 2.25)


def test_free_operator_template_deduces_from_an_instance():
    header = """
    template <typename T> struct W { T v; };
    template <typename T> W<T> operator+(W<T> a, W<T> b) { return {a.v + b.v}; }
    """
    out = run("W<int> a = {int(thread_position_in_grid.x)}; out[a.v] = (a + a).v;",
              header=header)
    np.testing.assert_array_equal(out, 2 * np.arange(8))


def test_member_operator_template_scales_by_any_arithmetic_type():
    header = """
    struct P {
        float v;
        template <typename U> P operator*(U k) const { return {v * k}; }
    };
    """
    out = run("P p = {1.5f}; out[thread_position_in_grid.x] = (p * 2).v + (p * 2.0f).v;",
              header=header)
    np.testing.assert_array_equal(out, np.full(8, 6.0))


def test_builtin_operators_on_members_are_unaffected():
    out = run("C x = {2.0f, 3.0f}; x.re += x.im * 2; out[thread_position_in_grid.x] = -x.re;")
    np.testing.assert_array_equal(out, np.full(8, -8.0))


# --- errors -----------------------------------------------------------------------------------

@pytest.mark.parametrize("source, message", [
    ("C x = {1, 2}; C y = x / x; out[0] = y.re;",
     "invalid operands to binary expression ('C' and 'C')"),
    ("C x = {1, 2}; x -= x; out[0] = x.re;", "no viable overloaded '-='"),
    ("C x = {1, 2}; float f = 1; f += x; out[0] = f;",
     "invalid operands to binary expression ('float' and 'C')"),
    ("C x = {1, 2}; C y = ~x; out[0] = y.re;", "invalid argument type 'C' to unary expression"),
    ("struct Q { int a; }; Q q = {1}; out[0] = q[0];",
     "type 'Q' does not provide a subscript operator"),
])
def test_an_operator_no_function_provides_is_reported_in_clangs_words(source, message):
    assert compile_error(source).message == message


def test_member_and_free_operator_of_equal_rank_are_ambiguous():
    header = COMPLEX + "inline C operator+(C a, C b) { return a; }"
    d = compile_error("C x = {1, 2}; C y = x + x; out[0] = y.re;", header=header)
    assert d.message == "use of overloaded operator '+' is ambiguous (with operand types 'C' " \
                        "and 'C')"


def test_compound_assignment_returning_this_by_reference_chains():
    header = "struct P {\n float v;\n P& operator+=(P o) { v += o.v; return *this; }\n};"
    out = run("P a = {1}; P b = {10}; (a += b) += b; out[thread_position_in_grid.x] = a.v;",
              header=header)
    assert out.tolist() == [21.0] * 8


def test_subscript_returning_a_reference_is_assignable():
    header = "struct P { float v[2]; thread float& operator[](int i) { return v[i]; } };"
    out = run("P p = {{1, 2}}; p[1] += 5; p[0] = 3; out[thread_position_in_grid.x] = p.v[0] + "
              "p.v[1];", header=header)
    assert out.tolist() == [10.0] * 8

