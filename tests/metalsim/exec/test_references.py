"""Functions returning references (C++14): free functions and member functions (operators
included) returning `T&` are lvalues naming the caller's memory or variables, so accesses
through them are counted, bounds-checked and race-checked; a reference to the callee's own
locals (which would dangle) and other ill-formed returns are compile errors in clang's words."""

import numpy as np
import pytest
from struct_kernels import Kernels, kinds

HEADER = """
thread float& at(thread float* p, int i) { return p[i]; }
device float& dat(device float* p, uint i) { return p[i]; }
threadgroup float& tat(threadgroup float* p, uint i) { return p[i]; }
thread float& same(thread float& x) { return x; }
thread float& lane(thread float4& v, uint i) { return v[i]; }
const thread float& larger(const thread float* p) { if (p[0] < p[1]) return p[1]; return p[0]; }
struct Vec3 {
    float v[3];
    thread float& operator[](int i) { return v[i]; }
    float operator[](int i) const { return v[i]; }
    thread Vec3& operator+=(Vec3 o) { for (int i = 0; i < 3; i++) v[i] += o.v[i]; return *this; }
    thread Vec3& scale(float k) { for (int i = 0; i < 3; i++) v[i] *= k; return *this; }
    thread float& first() { return v[0]; }
};
"""
KERNELS = Kernels(HEADER)
run, simulate, compile_error = KERNELS.run, KERNELS.simulate, KERNELS.compile_error

TID = "uint t = thread_position_in_threadgroup.x;\n"


def test_free_function_reference_to_a_thread_array_element_is_assignable():
    out = run(TID + "float a[4] = {0, 1, 2, 3}; at(a, 2) = 5; at(a, 1) += 2; at(a, 3)++; "
                    "out[t] = a[t];")
    assert out.tolist() == [0, 3, 5, 4]


def test_reference_to_a_device_element_is_written_and_read_back():
    x = np.arange(4, dtype=np.float32)
    out = run(TID + "dat(out, t) = in0[t] * 2; dat(out, t) += 1; out[t] = dat(out, t) * 10;",
              [x])
    np.testing.assert_array_equal(out, (x * 2 + 1) * 10)


def test_reference_to_a_plain_variable_and_to_a_vector_component():
    out = run(TID + "float x = 1; same(x) = t; same(same(x)) += 1; float4 q = 0; "
                    "lane(q, t) = 9; out[t] = x + q[t] + q.x;")
    assert out.tolist() == [19, 11, 12, 13]


def test_reference_variable_bound_to_a_returned_reference():
    out = run(TID + "float a[2] = {1, 2}; thread float& r = at(a, 1); r *= 4; out[t] = a[1];")
    assert out.tolist() == [8] * 4


def test_member_subscript_and_compound_assignment_returning_references_chain():
    out = run(TID + "Vec3 a = {{1, 2, 3}}; Vec3 b = {{10, 20, 30}}; a[1] += 2; "
                    "(a += b) += b; a.scale(2).first() = 7; out[t] = t < 3 ? a[t] : 0;")
    assert out.tolist() == [7, 88, 126, 0]


def test_const_object_uses_the_const_subscript_by_value():
    out = run(TID + "const Vec3 a = {{1, 2, 3}}; out[t] = t < 3 ? a[t] : 0;")
    assert out.tolist() == [1, 2, 3, 0]


def test_const_reference_return_reads_the_chosen_argument():
    out = run(TID + "float a[2] = {float(t), 2}; out[t] = larger(a);")
    assert out.tolist() == [2, 2, 2, 3]


def test_accesses_through_a_returned_reference_are_counted():
    result = simulate(TID + "dat(out, t) = 1; dat(out, t) += 1;")
    counts = result.report.max_per_thread()
    assert (counts["global_reads"], counts["global_writes"]) == (1, 2)


def test_out_of_bounds_write_through_a_returned_reference_is_reported():
    result = simulate(TID + "dat(out, t + 1) = 1;")
    assert kinds(result) == ["out-of-bounds"]
    assert result.report.diagnostics[0].threads[0] == (3, 0, 0)


def test_race_through_a_returned_threadgroup_reference_is_reported():
    result = simulate(TID + "threadgroup float s[4]; tat(s, t) = t; out[t] = tat(s, 3 - t);")
    assert "race" in kinds(result)


def only_error(result):
    """The one error of a launch (found while threads ran: never a compile error then)."""
    [d] = result.report.errors
    return d


def test_different_objects_returned_to_different_threads_are_refused_while_running():
    header = "thread float& pick(thread float& a, thread float& b, uint i) { " \
             "if (i % 2) return a; return b; }"
    d = only_error(simulate(TID + "float a = 1, b = 2; pick(a, b, t) = 3;", header=header))
    assert d.kind == "unsupported"
    assert d.message == "metalsim cannot follow a returned reference that names different " \
                        "objects in different threads of one call"


def test_address_of_a_returned_reference_to_a_register_variable_is_refused_while_running():
    d = only_error(simulate("float a = 1; thread float* p = &same(a); *p = 2;"))
    assert (d.kind, d.message) == ("unsupported", "cannot take the address of this local variable")


@pytest.mark.parametrize("header, call, message", [
    ("thread float& f() { float x = 1; return x; }", "f();",
     "reference to stack memory associated with local variable 'x' returned"),
    ("thread float& f(float x) { return x; }", "f(1);",
     "reference to stack memory associated with parameter 'x' returned"),
    ("thread float& f() { float a[2] = {1, 2}; return a[1]; }", "f();",
     "reference to stack memory associated with local variable 'a' returned"),
    ("struct S { float a[2]; thread S& f() { S s = *this; return s; } };", "",
     "reference to stack memory associated with local variable 's' returned"),
    ("thread float& f(thread float* p) { return p[0] + 1; }", "float z[2]; f(z);",
     "non-const lvalue reference to type 'float' cannot bind to a temporary of type 'float'"),
    ("const thread float& f(thread float* p) { return p[0] + 1; }", "float z[2]; f(z);",
     "returning reference to local temporary object"),
    ("thread float& f(thread int* p) { return p[0]; }", "int z[2]; f(z);",
     "non-const lvalue reference to type 'float' cannot bind to a value of unrelated type "
     "'int'"),
    ("thread float& f(const thread float* p) { return p[0]; }", "float z[2]; f(z);",
     "binding reference of type 'float' to value of type 'const float' drops 'const' "
     "qualifier"),
    ("thread float& f(device float* p) { return p[0]; }", "f(out);",
     "a 'thread float&' cannot bind to an object in the device address space"),
    ("struct S { float a; thread float& f() const { return a; } };", "",
     "binding reference of type 'float' to value of type 'const float' drops 'const' "
     "qualifier"),
])
def test_ill_formed_reference_returns_are_compile_errors(header, call, message):
    assert compile_error(call + " out[0] = 1;", header=header).message == message


def test_ending_without_returning_a_reference_is_reported_while_running():
    header = "device float& f(device float* p) { if (p[0] > 1) return p[0]; }"
    d = only_error(simulate("f(out); out[0] = 1;", init_value=0, header=header))
    assert (d.kind, d.message) == ("missing-return",
                                   "'f' ended without returning a reference (undefined behaviour)")
