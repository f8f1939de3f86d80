"""Struct templates (C++14): type, int and bool parameters with defaults, member functions,
constructors and `operator()` inside them, nested instances, instances cached per argument list
and instantiated lazily; member function templates deduced like free ones (MLX's reduction
functors); deduction through a template instance; and what is refused."""

import mlx.core as mx
import numpy as np
import pytest
from struct_kernels import Kernels

HEADER = """
template <typename T> struct Acc {
    T sum;
    void add(T x) { sum += x; }
    T get() const { return sum; }
};
template <typename T, int N = 4> struct Buf {
    T v[N];
    T get(int i) const { return v[i]; }
    Buf<T, N> twice() const { Buf r; for (int i = 0; i < N; i++) r.v[i] = 2 * v[i]; return r; }
};
template <typename T> struct Max { T operator()(T a, T b) const { return a > b ? a : b; } };
template <typename T> struct Box { T a; Box(T x) : a(x) {} T get() const { return a; } };
template <typename T, bool Neg> struct Sign { T x; T get() const { return Neg ? -x : x; } };
struct Min { template <typename T> T operator()(T a, T b) const { return a < b ? a : b; } };
"""

KERNELS = Kernels(HEADER)
simulate = KERNELS.simulate
run = KERNELS.run
compile_error = KERNELS.compile_error


# --- instances ---------------------------------------------------------------------------------

def test_type_parameter_accumulates_in_its_own_type_matching_numpy():
    x = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32)
    out = run("""
    uint i = thread_position_in_grid.x;
    Acc<float> a = {0};
    for (int k = 0; k < 8; k++) a.add(in0[i * 8 + k]);
    out[i] = a.get();
    """, [mx.array(x)])
    expected = np.zeros(4, np.float32)
    for k in range(8):
        expected += x[:, k]
    assert out.tolist() == expected.tolist()


def test_half_instance_rounds_in_half():
    out = run("Acc<half> b; b.sum = 2048; b.add(half(1)); "
              "out[thread_position_in_grid.x] = b.get();")
    assert out.tolist() == [2048] * 4  # 2049 is not a half


def test_int_parameter_sizes_an_array_and_its_default_applies():
    out = run("""
    Buf<float, 2> c = {{1, 2}};
    Buf<int> d = {{1, 2, 3, 4}};
    out[thread_position_in_grid.x] = c.twice().get(1) + d.get(3) + sizeof(c) + sizeof(d);
    """)
    assert out.tolist() == [4 + 4 + 8 + 16] * 4


def test_bool_parameter_is_a_compile_time_constant():
    out = run("Sign<float, true> a = {3}; Sign<float, false> b = {5}; "
              "out[thread_position_in_grid.x] = a.get() + b.get();")
    assert out.tolist() == [2] * 4


def test_constructor_inside_a_template():
    out = run("Box<int> p(7); Box<float> q = Box<float>(1.5f); "
              "out[thread_position_in_grid.x] = p.get() + q.get();")
    assert out.tolist() == [8.5] * 4


def test_call_operator_of_a_template_instance_on_a_temporary():
    out = run("out[thread_position_in_grid.x] = Max<float>()(1.0f, 3.0f) + Max<int>()(7, -2);")
    assert out.tolist() == [10] * 4


def test_nested_instance_and_alias():
    out = run("""
    using AccF = Acc<float>;
    Acc<Acc<float>> e = {{5}};
    AccF f = {1};
    f.add(e.sum.get());
    out[thread_position_in_grid.x] = f.get();
    """)
    assert out.tolist() == [6] * 4


def test_one_instance_per_argument_list():
    # Acc<float> named twice is one type (assignable); Buf<int, 4> is Buf<int> by default.
    out = run("""
    Acc<float> a = {1}; Acc<float> b = a;
    Buf<int, 4> c = {{1, 2, 3, 4}}; Buf<int> d = c;
    out[thread_position_in_grid.x] = b.get() + d.get(3);
    """)
    assert out.tolist() == [5] * 4


def test_different_arguments_make_different_types():
    d = compile_error("Acc<float> a = {1}; Acc<int> b = a; out[0] = 0;")
    assert (d.message, d.column) == ("cannot convert 'Acc<float>' to 'Acc<int>'", 34)


def test_injected_class_name_with_other_arguments_names_another_instance():
    header = HEADER + """
    template <typename T> struct W {
        T v;
        W<int> as_int() const { W<int> r = {int(v)}; return r; }
    };
    """
    out = run("W<float> w = {2.75f}; out[thread_position_in_grid.x] = w.as_int().v;",
              header=header)
    assert out.tolist() == [2] * 4


def test_default_argument_sees_earlier_parameters():
    header = "template <typename T, typename U = T> struct Two { T a; U b; };"
    out = run("Two<int> t = {1, 2}; out[thread_position_in_grid.x] = sizeof(t) + t.b;",
              header=header)
    assert out.tolist() == [10] * 4


def test_member_functions_are_instantiated_only_when_used():
    header = "template <typename T> struct Bad { T x; T f() const { return x.nope; } };"
    assert run("Bad<float> b = {1}; out[thread_position_in_grid.x] = b.x;",
               header=header).tolist() == [1] * 4


def test_instance_in_threadgroup_memory():
    x = np.arange(4, dtype=np.float32)
    out = run("""
    uint i = thread_position_in_grid.x;
    threadgroup Buf<float, 4> shared;
    shared.v[i] = in0[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    Buf<float, 4> mine = shared;
    out[i] = mine.get(3 - i);
    """, [mx.array(x)])
    assert out.tolist() == x[::-1].tolist()


def test_function_template_deduces_through_an_instance():
    header = HEADER + """
    template <typename T> T total(Acc<T> a) { return a.sum; }
    template <typename T, int N> T last(thread const Buf<T, N>& b) { return b.v[N - 1]; }
    """
    out = run("Acc<float> a = {2}; Buf<float, 3> b = {{1, 2, 3}}; "
              "out[thread_position_in_grid.x] = total(a) + last(b);", header=header)
    assert out.tolist() == [5] * 4


# --- member function templates -----------------------------------------------------------------

def test_member_function_template_deduces_from_its_arguments():
    out = run("Min m; out[thread_position_in_grid.x] = m(1.5f, 2.5f) + Min()(4, 9);")
    assert out.tolist() == [5.5] * 4


def test_non_template_member_is_preferred_over_a_member_template():
    header = """
    struct F {
        template <typename T> int f(T x) const { return 1; }
        int f(float x) const { return 2; }
    };"""
    out = run("F g; out[thread_position_in_grid.x] = g.f(1.0f) * 10 + g.f(3);", header=header)
    assert out.tolist() == [21] * 4


def test_member_function_template_of_a_struct_template():
    header = """
    template <typename T> struct Scale {
        T k;
        template <typename U> U apply(U x) const { return U(k) * x; }
    };"""
    out = run("Scale<int> s = {3}; out[thread_position_in_grid.x] = s.apply(1.5f) + s.apply(2);",
              header=header)
    assert out.tolist() == [10.5] * 4


MLX_REDUCE = """
struct Sum { template <typename T> T operator()(T a, T b) const { return a + b; } };
struct MaxOp { template <typename T> T operator()(T a, T b) const { return metal::max(a, b); } };
template <typename Op>
void tree_reduce(threadgroup float* shared, uint lid, uint n) {
    Op op;
    for (uint s = n / 2; s > 0; s >>= 1) {
        if (lid < s) shared[lid] = op(shared[lid], shared[lid + s]);
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
}
"""


@pytest.mark.parametrize("op, reference", [("Sum", np.sum), ("MaxOp", np.max)])
def test_mlx_style_threadgroup_tree_reduction_with_templated_functors(op, reference):
    x = np.random.default_rng(5).integers(-50, 50, (4, 32)).astype(np.float32)
    out = run(f"""
    uint lid = thread_position_in_threadgroup.x;
    uint g = threadgroup_position_in_grid.x;
    threadgroup float shared[32];
    shared[lid] = in0[g * 32 + lid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    tree_reduce<{op}>(shared, lid, 32);
    if (lid == 0) out[g] = shared[0];
    """, [mx.array(x)], header=MLX_REDUCE, grid=(128, 1, 1), tg=(32, 1, 1))
    assert out.tolist() == reference(x, axis=1).tolist()


# --- errors ------------------------------------------------------------------------------------

@pytest.mark.parametrize("source, message, hint", [
    ("Acc a; out[0] = 1;", "use of class template 'Acc' requires template arguments",
     "write them out: 'Acc<...>'"),
    ("Acc<float, 2> a; out[0] = 1;", "too many template arguments for class template 'Acc'",
     ""),
    ("Sign<float> a; out[0] = 1;", "too few template arguments for class template 'Sign'",
     "'Sign' has 2 template parameters: T, Neg"),
    ("Acc<3> a; out[0] = 1;",
     "template argument for template type parameter 'T' must be a type", ""),
    ("Buf<float, float> a; out[0] = 1;",
     "template argument for non-type template parameter 'N' must be an expression", ""),
    ("int n = 2; Buf<float, n> a; out[0] = 1;", "template argument for 'N' must be a constant",
     ""),
    ("Min m; out[0] = m(1.0f);", "no matching member function for call to 'operator()(float)'",
     ""),
])
def test_misuse_is_a_compile_error_at_the_use(source, message, hint):
    d = compile_error(source)
    assert (d.message, d.hint, d.section, d.line) == (message, hint, "source", 1)


def test_error_in_an_instance_points_at_the_template_naming_the_instance():
    d = compile_error("Buf<float, -1> a; out[0] = 1;")
    assert (d.message, d.hint, d.section, d.line) == (
        "array size must be positive (it is -1)", "in instantiation of 'Buf<float, -1>'",
        "header", 8)


def test_error_in_a_member_function_names_the_member_of_the_instance():
    header = "template <typename T> struct Bad { T x; T f() const { return x.nope; } };"
    d = compile_error("Bad<float> b = {1}; out[0] = b.f();", header=header)
    assert (d.message, d.hint, d.section, d.line, d.column) == (
        "member reference base type 'float' is not a vector",
        "in instantiation of member function 'Bad<float>::f'", "header", 1, 62)


def test_member_template_in_a_local_struct_is_refused():
    d = compile_error("struct L { template <typename T> T f(T x) const { return x; } }; "
                      "out[0] = 1;", header="")
    assert (d.message, d.line) == ("templates cannot be declared inside of a local class", 1)


def test_redefining_a_struct_template_is_refused():
    d = compile_error("out[0] = 1;", header="template <typename T> struct A { T x; };\n"
                                          "template <typename T> struct A { T y; };")
    assert (d.message, d.line) == ("redefinition of 'A'", 2)


def test_member_function_template_with_conflicting_deductions_is_not_viable():
    header = "struct P { float v; template <typename T> P scaled(T a, T b) const { return {v}; } };"
    d = compile_error("P p = {1}; out[0] = p.scaled(1.0f, 2).v;", header=header)
    assert d.message == "no matching member function for call to 'scaled'"
    assert d.hint == ("candidate template ignored: deduced conflicting types for parameter 'T' "
                      "('float' vs. 'int')")


def test_function_template_deducing_two_instances_of_one_template_must_agree():
    header = HEADER + "template <typename T> T both(Acc<T> a, Acc<T> b) { return a.sum; }"
    d = compile_error("Acc<float> a = {1}; Acc<int> b = {2}; out[0] = both(a, b);",
                      header=header)
    assert d.message == "no matching function for call to 'both'"
    assert d.hint == ("candidate template ignored: deduced conflicting types for parameter 'T' "
                      "('float' vs. 'int')")
