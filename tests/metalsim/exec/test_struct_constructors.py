"""Struct constructors (C++14): member initializer lists and bodies, default construction of
variables, members and array elements, overloads, delegation, converting and explicit
constructors, braces calling a constructor once a struct has one; memory checks seen through a
constructor; and what is refused."""

import mlx.core as mx
import numpy as np
import pytest
from struct_kernels import Kernels, kinds

import metalsim

WELFORD = """
struct Welford {
    float mean; float m2; int n;
    Welford() : mean(0), m2(0), n(0) {}
    explicit Welford(float first) : mean(first), m2(0), n(1) {}
    void add(float x) { n++; float d = x - mean; mean += d / n; m2 += d * (x - mean); }
    float variance() const { return m2 / n; }
};
struct P {
    float a; float b;
    P(float x) : a(x), b(2 * x) {}
    P(float x, float y) : a(x), b(y) {}
    P(int k) : a(100), b(k) {}
};
"""

KERNELS = Kernels(WELFORD)
simulate = KERNELS.simulate
run = KERNELS.run


# --- declarations --------------------------------------------------------------------------

def test_default_constructor_runs_for_a_plain_declaration_welford_matches_numpy_var():
    x = np.random.default_rng(2).standard_normal((8, 16)).astype(np.float32)
    out = run("""
    uint i = thread_position_in_grid.x;
    Welford w;
    for (int k = 0; k < 16; k++) w.add(in0[i * 16 + k]);
    out[i] = w.variance();
    """, [mx.array(x)], out_shape=(8,), grid=(8, 1, 1), tg=(8, 1, 1))
    np.testing.assert_allclose(out, x.var(axis=1), rtol=1e-5)


def test_direct_copy_and_list_initialization_call_the_constructor():
    out = run("""
    uint i = thread_position_in_grid.x;
    P p(float(i));          // P(float)
    P q = P(1.0f, 5.0f);    // a temporary, copied
    P r{3.0f};              // braces call P(float): P is no aggregate
    P s = {2.0f, 7.0f};     // copy-list-initialization
    out[i] = p.b + q.b + r.b + s.b;
    """)
    assert out.tolist() == [18, 20, 22, 24]


def test_temporaries_built_by_a_constructor():
    out = run("out[thread_position_in_grid.x] = P(1.0f, 7.0f).b + P{2.0f}.b + P(3).a;")
    assert out.tolist() == [111] * 4


def test_overloads_are_chosen_by_argument_type():
    out = run("""
    P f(1.5f); P k(4); P two(1.0f, 2.0f);
    out[thread_position_in_grid.x] = f.b * 100 + k.a + k.b + two.b;
    """)
    assert out.tolist() == [406] * 4


def test_members_are_initialized_in_declaration_order_then_the_body_runs():
    header = """
    struct O {
        float a; float b; float c;
        O(float x) : b(a * 2), a(x) { c = a + b; }
    };"""
    out = run("O o(float(thread_position_in_grid.x)); out[thread_position_in_grid.x] = o.c;",
              header=header)
    assert out.tolist() == [0, 3, 6, 9]


def test_member_initializers_give_vectors_arrays_and_value_initialization():
    header = """
    struct V {
        float2 v; float arr[3]; int z; float w;
        V(float x) : v(x, 2 * x), arr{x, x + 1}, z(), w{x} {}
    };"""
    out = run("""
    V s(5.0f);
    out[0] = s.v.y; out[1] = s.arr[1] + s.arr[2]; out[2] = s.z; out[3] = s.w;
    """, header=header, grid=(1, 1, 1), tg=(1, 1, 1))
    assert out.tolist() == [10, 6, 0, 5]


def test_a_struct_member_is_default_constructed_unless_initialized():
    header = WELFORD + """
    struct Pair {
        Welford w; P p; float k;
        Pair(float x) : p(x) { k = w.mean + 1; }
    };"""
    out = run("Pair q(3.0f); out[thread_position_in_grid.x] = q.k + q.p.b + q.w.n;",
              header=header)
    assert out.tolist() == [7] * 4


def test_an_aggregate_holding_a_struct_with_constructors_calls_them():
    header = WELFORD + "struct Agg { Welford w; float x; };"
    out = run("""
    Agg a;                          // a.w default-constructed, a.x indeterminate
    a.x = 1;
    Agg b = {Welford(4.0f), 2};
    Agg c = {};                     // value-initialization: Welford() for c.w
    out[thread_position_in_grid.x] = a.w.n + a.x + b.w.mean + b.x + c.w.n + c.w.mean;
    """, header=header)
    assert out.tolist() == [7] * 4


def test_array_elements_are_each_default_constructed_or_built_from_braces():
    out = run("""
    Welford ws[3];
    ws[1].add(5);
    P ps[3] = {P(1.0f), {2.0f, 3.0f}, 4};
    out[thread_position_in_grid.x] = ws[1].mean + ws[2].n + ps[0].b + ps[1].b + ps[2].b;
    """)
    assert out.tolist() == [14] * 4


def test_delegating_constructor_runs_the_target_then_its_body():
    header = """
    struct D {
        float a; int n;
        D(float x, int k) : a(x), n(k) {}
        D() : D(2.0f, 3) { n += 10; }
    };"""
    out = run("D d; out[thread_position_in_grid.x] = d.a * d.n;", header=header)
    assert out.tolist() == [26] * 4


def test_converting_constructor_in_copy_initialization_and_argument_passing():
    header = WELFORD + "float twice(P p) { return p.b; }"
    out = run("""
    P p = 2.5f;
    out[thread_position_in_grid.x] = p.b + twice(1.0f);
    """, header=header)
    assert out.tolist() == [7] * 4


def test_explicit_constructor_is_called_by_a_cast_but_not_by_a_conversion():
    out = run("Welford w = (Welford)3.0f; out[thread_position_in_grid.x] = w.mean + w.n;")
    assert out.tolist() == [4] * 4
    with pytest.raises(metalsim.CompileError,
                       match="no viable conversion from 'float' to 'Welford'") as info:
        simulate("Welford w = 3.0f;")
    assert "its constructor is 'explicit'" in str(info.value)


def test_returning_a_braced_list_calls_the_constructor():
    header = WELFORD + "P make(float x) { return {x, x + 1}; }"
    out = run("out[thread_position_in_grid.x] = make(float(thread_position_in_grid.x)).b;",
              header=header)
    assert out.tolist() == [1, 2, 3, 4]


def test_an_empty_destructor_is_accepted():
    header = "struct E { float v; E(float x) : v(x) {} ~E() {} };"
    assert run("E e(2.0f); out[thread_position_in_grid.x] = e.v;", header=header).tolist() == [
        2] * 4


def test_const_object_is_constructed_then_read_only():
    out = run("const P p(2.0f); out[thread_position_in_grid.x] = p.b;")
    assert out.tolist() == [4] * 4
    with pytest.raises(metalsim.CompileError, match="read-only|const"):
        simulate("const P p(2.0f); p.a = 1;")


def test_a_constructed_struct_stored_to_device_memory():
    header = "struct Pair { int a; int b; Pair(int v) : a(v), b(-v) {} };"
    out = run("((device Pair*)out)[thread_position_in_grid.x] = Pair(int(thread_position_in_grid"
              ".x));", out_shape=(8,), dtype=mx.int32, header=header)
    assert out.tolist() == [0, 0, 1, -1, 2, -2, 3, -3]


# --- memory checks through a constructor ---------------------------------------------------

def test_a_member_the_constructor_leaves_uninitialized_is_reported_when_read():
    header = "struct U { float a; float b; U(float x) : a(x) {} };"
    result = simulate("U u(1.0f); out[thread_position_in_grid.x] = u.b;", header=header)
    assert kinds(result) == ["uninitialized-read"]


def test_race_through_a_constructor_writing_device_memory_is_reported_with_its_line():
    header = """
    struct Logger {
        int id;
        Logger(device int* log, int i) : id(i) {
            log[0] = i;
        }
    };"""
    result = simulate("Logger l(out, int(thread_position_in_grid.x));", header=header,
                      dtype=mx.int32)
    assert kinds(result) == ["race"]
    assert result.report.errors[0].line == 5  # the store inside the constructor body
    counts = result.report.max_per_thread()
    assert (counts["global_reads"], counts["global_writes"]) == (0, 1)


def test_constructor_reading_device_memory_counts_each_read():
    header = """
    struct Sum { float s; Sum(const constant float* x, int n) : s(0) {
        for (int k = 0; k < n; k++) s += x[k]; } };"""
    result = simulate("Sum t(in0, 4); out[thread_position_in_grid.x] = t.s;",
                      [mx.array(np.arange(4, dtype=np.float32))], header=header)
    assert np.array(result.outputs[0]).tolist() == [6] * 4
    assert result.report.max_per_thread()["global_reads"] == 4


# --- errors --------------------------------------------------------------------------------

@pytest.mark.parametrize("source, header, message, hint", [
    ("P p; out[0] = p.a;", WELFORD,
     r"no matching constructor for initialization of 'P' from \(\)",
     "candidates: P(float); P(float, float); P(int)"),
    ("P p(1.0f, 2.0f, 3.0f);", WELFORD, "no matching constructor for initialization of 'P'",
     ""),
    ("C c(1, 1);", "struct C { float v; C(float x, int k) {} C(int k, float x) {} };",
     "call to constructor of 'C' is ambiguous", ""),
    ("out[0] = 1;", "struct C { const float k; float v; C(float x) : v(x) {} };",
     "constructor for 'C' must explicitly initialize the const member 'k'", ""),
    ("out[0] = 1;", "struct C { float mean; C() : maen(0) {} };",
     "member initializer 'maen' does not name a non-static data member", "did you mean 'mean'"),
    ("out[0] = 1;", "struct C { float v; C() : v(0), v(1) {} };",
     "multiple initializations given for non-static member 'v'", ""),
    ("out[0] = 1;", "struct C { float v; C(float x) : v(x) {} C() : C(1.0f), v(0) {} };",
     "an initializer for a delegating constructor must appear alone", ""),
    ("out[0] = 1;", "struct C { const float k; C(float x) : k(x) { k = 2; } };", "const", ""),
    ("out[0] = 1;", "struct C { float v[2]; C() : v(1, 2) {} };",
     "no matching constructor for initialization of 'float\\[2\\]'", "braces"),
    ("out[0] = 1;", "struct C { float v; C() : v(1, 2) {} };", "excess elements", ""),
    ("threadgroup Welford w[4]; out[0] = 1;", WELFORD,
     "threadgroup variable 'w' of type 'Welford\\[4\\]' needs a constructor", "'threadgroup'"),
    ("threadgroup P p; out[0] = 1;", WELFORD, "threadgroup variable 'p'", "threadgroup_barrier"),
    ("out[0] = 1;", WELFORD + "struct Agg { Welford w; }; constant Agg g = {};",
     "does not run constructors at compile time", "without constructors"),
    ("Welford w = {1.0f}; out[0] = w.mean;", WELFORD.replace("explicit ", ""), "", ""),
])
def test_constructor_misuse_is_a_compile_error(source, header, message, hint):
    if not message:  # the control: without `explicit` the same source compiles
        simulate(source, header=header)
        return
    with pytest.raises(metalsim.CompileError, match=message) as info:
        simulate(source, header=header)
    assert hint in str(info.value)
    assert info.value.line is not None
