"""Struct member functions: implicit member access and `this`, const member functions,
calls on thread, threadgroup and device objects (Metal's address-space-qualified member
functions), through pointers and on temporaries; the memory checks seen through a call; and
what is refused."""

import mlx.core as mx
import numpy as np
import pytest
from struct_kernels import Kernels, kinds

import metalsim

WELFORD = """
struct Welford {
    float mean; float m2; int n;
    void reset() { mean = 0; m2 = 0; n = 0; }
    void add(float x) { n++; float d = x - mean; mean += d / n; m2 += d * (x - this->mean); }
    float variance() const { return m2 / n; }
};
"""

KERNELS = Kernels(WELFORD)
simulate = KERNELS.simulate
run = KERNELS.run


# --- thread objects --------------------------------------------------------------------------

def test_welford_variance_per_thread_matches_numpy_var():
    x = np.random.default_rng(1).standard_normal((8, 16)).astype(np.float32)
    out = run("""
    uint i = thread_position_in_grid.x;
    Welford w;
    w.reset();
    for (int k = 0; k < 16; k++) w.add(in0[i * 16 + k]);
    out[i] = w.variance();
    """, [mx.array(x)], out_shape=(8,), grid=(8, 1, 1), tg=(8, 1, 1))
    np.testing.assert_allclose(out, x.var(axis=1), rtol=1e-5)


def test_member_functions_call_each_other_implicitly_and_through_this():
    header = """
    struct Acc {
        float s; int n;
        void add(float x) { s += x; n++; }
        void add_twice(float x) { add(x); this->add(x); }
        float mean() const { return s / count(); }
        int count() const { return n; }
    };"""
    out = run("""
    uint i = thread_position_in_grid.x;
    Acc a = {0, 0};
    a.add_twice(float(i));
    a.add(10);
    out[i] = a.mean() * 100 + a.count();
    """, header=header)
    i = np.arange(4)
    np.testing.assert_allclose(out, (2 * i + 10) / 3 * 100 + 3, rtol=1e-6)


def test_a_parameter_hides_a_member_and_this_still_reaches_it():
    header = "struct P { float mean; void set(float mean) { this->mean = mean * 2; } };"
    out = run("P p; p.set(float(thread_position_in_grid.x)); "
              "out[thread_position_in_grid.x] = p.mean;", header=header)
    assert out.tolist() == [0, 2, 4, 6]


def test_const_member_functions_on_const_objects_and_const_references():
    header = WELFORD + """
    float spread(const thread Welford& w) { return w.variance() * 2; }"""
    out = run("""
    const Welford w = {1.0f, 8.0f, 4};
    const thread Welford& r = w;
    out[thread_position_in_grid.x] = w.variance() + r.variance() + spread(w);
    """, header=header)
    assert out.tolist() == [8.0] * 4


def test_a_non_const_object_prefers_the_non_const_overload():
    header = """
    struct S {
        int n;
        int which() { return 1; }
        int which() const { return 2; }
    };"""
    out = run("""
    S s = {0};
    const thread S& c = s;
    out[thread_position_in_grid.x] = s.which() * 10 + c.which();
    """, header=header)
    assert out.tolist() == [12] * 4


def test_member_function_overloads_by_argument_type_and_default_arguments():
    header = """
    struct S {
        float base;
        float f(float x) { return base + x; }
        float f(int x) { return base - x; }
        float g(float x, float y = 100.0f) { return x + y; }
    };"""
    out = run("""
    S s = {10};
    out[thread_position_in_grid.x] = s.f(1.5f) + s.f(1) * 10 + s.g(1) * 1000;
    """, header=header)
    assert out.tolist() == [11.5 + 90 + 101000] * 4


def test_member_function_returns_a_struct_made_from_this():
    header = """
    struct V {
        float x, y;
        V scaled(float k) const { V r = *this; r.x *= k; r.y = y * k; return r; }
        V swapped() const { return {y, x}; }
    };"""
    out = run("""
    uint i = thread_position_in_grid.x;
    V v = {float(i), 1.0f};
    V w = v.scaled(3).swapped();
    out[i] = w.x * 100 + w.y + v.x;
    """, header=header)
    i = np.arange(4)
    assert out.tolist() == (300 + 3 * i + i).tolist()


def test_calls_through_a_pointer_with_arrow_and_through_a_dereference():
    out = run("""
    uint i = thread_position_in_grid.x;
    Welford w;
    thread Welford* p = &w;
    p->reset();
    p->add(float(i));
    (*p).add(float(i) + 2);
    out[i] = w.variance() + p->mean * 10;
    """)
    i = np.arange(4)
    assert out.tolist() == (1 + (i + 1) * 10).tolist()


def test_calls_on_temporaries_a_returned_struct_and_a_braced_one():
    header = WELFORD + "Welford make(float m) { return {m, 6.0f, 3}; }"
    out = run("out[thread_position_in_grid.x] = make(1).variance() + Welford{0, 8, 2}.variance();",
              header=header)
    assert out.tolist() == [6.0] * 4


def test_a_struct_local_to_the_kernel_uses_enclosing_constants_and_types():
    out = run("""
    const float k = 3;
    typedef float real;
    struct L { real v; real f() const { return v * k; } };
    L l = {real(thread_position_in_grid.x)};
    out[thread_position_in_grid.x] = l.f();
    """, header="")
    assert out.tolist() == [0, 3, 6, 9]


def test_uninitialised_member_read_through_a_method_is_reported_where_it_reaches_out():
    result = simulate("Welford w;\nw.add(1.0f);\nout[thread_position_in_grid.x] = w.mean;")
    assert kinds(result) == ["uninitialized-read"]
    [d] = result.report.errors
    assert d.line == 3 and "'out'" in d.message and "of the header" in d.message
    unused = simulate("Welford w; w.add(1.0f); out[thread_position_in_grid.x] = 0;")
    assert kinds(unused) == []


# --- threadgroup and device objects ----------------------------------------------------------

TG_WELFORD = """
struct Welford {
    float mean; float m2; int n;
    void reset() threadgroup { mean = 0; m2 = 0; n = 0; }
    void add(float x) threadgroup { n++; float d = x - mean; mean += d / n; m2 += d * (x - mean); }
    float variance() const threadgroup { return m2 / n; }
};
"""


def test_threadgroup_member_functions_on_a_threadgroup_array_of_structs():
    out = run("""
    uint i = thread_position_in_threadgroup.x;
    threadgroup Welford tw[4];
    tw[i].reset();
    tw[i].add(float(i));
    tw[i].add(float(i) * 3);
    out[i] = tw[i].variance();
    """, header=TG_WELFORD)
    assert out.tolist() == [0, 1, 4, 9]


def test_each_member_access_in_a_threadgroup_method_counts_as_one_threadgroup_access():
    result = simulate("""
    uint i = thread_position_in_threadgroup.x;
    threadgroup Welford tw[4];
    tw[i].reset();
    tw[i].add(1.0f);
    out[i] = tw[i].variance();
    """, header=TG_WELFORD)
    counts = result.report.max_per_thread()
    # reset writes 3; add reads n, mean, mean, n, m2, mean and writes n, mean, m2;
    # variance reads m2 and n.
    assert (counts["threadgroup_reads"], counts["threadgroup_writes"]) == (8, 6)
    assert counts["global_reads"] == 0


def test_overloads_on_address_space_choose_the_objects_space():
    header = """
    struct S {
        int n;
        int where() const thread { return 1; }
        int where() const threadgroup { return 2; }
    };"""
    out = run("""
    threadgroup S t;
    S s = {0};
    out[thread_position_in_grid.x] = s.where() * 10 + t.where();
    """, header=header)
    assert out.tolist() == [12] * 4


def test_const_device_member_function_on_structs_in_an_input_buffer_counts_global_reads():
    header = """
    struct Pt {
        float x; float y; float w;
        float norm2() const device { return x * x + y * y; }
    };"""
    pts = np.arange(12, dtype=np.float32).reshape(4, 3)
    result = simulate("""
    uint i = thread_position_in_grid.x;
    device const Pt* ps = (device const Pt*)in0;
    out[i] = ps[i].norm2() + (ps + i)->norm2();
    """, [mx.array(pts)], header=header)
    assert result.report.errors == []
    np.testing.assert_array_equal(np.array(result.outputs[0]),
                                  2 * (pts[:, 0] ** 2 + pts[:, 1] ** 2))
    assert result.report.max_per_thread()["global_reads"] == 8  # x, x, y, y per call


def test_device_member_function_writes_structs_of_an_output_buffer():
    header = "struct Pair { int a; int b; void set(int v) device { a = v; b = -v; } };"
    out = run("((device Pair*)out)[thread_position_in_grid.x].set(int(thread_position_in_grid.x));",
              out_shape=(8,), dtype=mx.int32, header=header)
    assert out.tolist() == [0, 0, 1, -1, 2, -2, 3, -3]


def test_race_through_a_method_call_on_a_threadgroup_object_is_reported():
    header = """
    struct Box {
        int v;
        void put(int x) threadgroup { v = x; }
        int get() const threadgroup { return v; }
    };"""
    racy = simulate("""
    threadgroup Box box;
    uint i = thread_position_in_threadgroup.x;
    if (i == 0) box.put(5);
    out[i] = box.get();
    """, header=header)
    assert kinds(racy) == ["race"]
    assert racy.report.errors[0].line == 5  # the member access inside get()
    fenced = simulate("""
    threadgroup Box box;
    uint i = thread_position_in_threadgroup.x;
    if (i == 0) box.put(5);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = box.get();
    """, header=header)
    assert fenced.report.diagnostics == []
    assert np.array(fenced.outputs[0]).tolist() == [5] * 4


# --- errors ------------------------------------------------------------------------------------

CONST_ASSIGN = "cannot assign to non-static data member within const member function"


@pytest.mark.parametrize("source, header, message, hint", [
    ("const Welford w = {0, 0, 1}; w.add(1);", WELFORD,
     "'this' argument to member function 'add' has type 'const Welford', but function is not "
     "marked const", ""),
    ("Welford w; const thread Welford& r = w; r.reset();", WELFORD, "not marked const", ""),
    ("out[0] = 1;", "struct S { int n; void f() const { n = 1; } };", CONST_ASSIGN, "const"),
    ("out[0] = 1;", "struct S { int n; void f() const { this->n++; } };", CONST_ASSIGN, ""),
    ("out[0] = 1;", "struct S { int a[2]; void f() const { a[1] += 2; } };", CONST_ASSIGN, ""),
    ("out[0] = 1;", "struct S { int n; void f() const { (*this).n = 1; } };", CONST_ASSIGN, ""),
    ("out[0] = 1;", "struct S { int n; void g() {} void f() const { g(); } };",
     "'this' argument to member function 'g' has type 'const S'", ""),
    ("Welford w; w.ad(1);", WELFORD, "no member named 'ad' in 'struct Welford'",
     "did you mean 'add'?"),
    ("Welford w; thread Welford* p = &w; p.add(1);", WELFORD, "is a pointer",
     "did you mean to use '->'?"),
    ("Welford w; w->add(1);", WELFORD, "is not a pointer", "use '.'"),
    ("Welford w; float v = w.variance;", WELFORD,
     "reference to non-static member function 'variance' must be called", "variance(...)"),
    ("Welford w; w.mean(1);", WELFORD, "called object type 'float' is not a function", ""),
    ("Welford w; w.add(1, 2);", WELFORD,
     "no matching member function for call to 'add\\(int, int\\)'", ""),
    ("threadgroup Welford t; t.add(1);", WELFORD,
     "'this' argument to member function 'add' is in the threadgroup address space, but the "
     "function is not marked 'threadgroup'", "add(...) threadgroup"),
    ("Welford w = {0, 0, 1}; w.add(1);", TG_WELFORD,
     "is in the thread address space, but the function is not marked 'thread'", ""),
    ("threadgroup Welford t; out[0] = t.variance();", WELFORD, "not marked 'threadgroup'",
     "variance(...) const threadgroup"),
    ("device const Welford* p = (device const Welford*)out; p->variance();", WELFORD,
     "not marked 'device'", "const device"),
    ("out[0] = this->n;", WELFORD,
     "invalid use of 'this' outside of a non-static member function", ""),
    ("float k = 2; struct L { float v; float f() { return v * k; } };", "",
     "reference to local variable 'k' declared in enclosing function", "argument"),
    ("out[0] = 1;", "struct S { int n; int n() { return 1; } };", "duplicate member 'n'", ""),
    ("out[0] = 1;", "struct S { int a; thread int& f() { int b = a; return b; } };",
     "reference to stack memory associated with local variable 'b' returned", "destroyed"),
    ("S s; s.f();", "struct S { int a; void f() {} void f() {} };",
     "call to member function 'f' is ambiguous", ""),
    ("threadgroup Welford t; bump(t);", WELFORD + "void bump(thread Welford& w) { w.n++; }",
     "cannot bind to an object in the threadgroup address space", ""),
    ("out[0] = 1;", "struct S { int n; void f() { n = undefined_name; } };",
     "use of undeclared identifier 'undefined_name'", ""),
])
def test_member_function_misuse_is_a_compile_error(source, header, message, hint):
    with pytest.raises(metalsim.CompileError, match=message) as info:
        simulate(source, header=header)
    assert hint in str(info.value)
    assert info.value.line is not None


def test_a_member_function_never_called_is_still_compiled():
    with pytest.raises(metalsim.CompileError, match=CONST_ASSIGN):
        simulate("out[0] = 1;", header="struct S { int n; void unused() const { n = 2; } };")


def test_break_in_a_function_called_from_a_loop_is_a_compile_error():
    with pytest.raises(metalsim.CompileError, match="'break' statement not in loop"):
        simulate("for (int i = 0; i < 2; i++) { f(); }", header="void f() { break; }")
