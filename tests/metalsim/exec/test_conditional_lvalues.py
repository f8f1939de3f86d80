"""`c ? a : b` is an lvalue where both operands are lvalues of one type (C++ [expr.cond]/4):
it may be assigned, incremented, bound to a reference, have its address taken, be returned by
reference and have members called, the side effects happening once, in each thread the
operand its condition picked. g++ is the oracle (per thread where threads pick differently)."""

import mlx.core as mx
import numpy as np
import pytest
from cxx_oracle import agree, agree_per_thread, metalsim_outputs, needs_gxx

import metalsim

pytestmark = needs_gxx


def test_assignment_compound_assignment_and_increment_of_a_conditional():
    body = ("int a = 1; int b = 2; int c = 1; (c ? a : b) = 5; (c ? a : b) += 2; out[0] = a;\n"
            "c = 0; (c ? a : b) = 9; ++(c ? a : b); out[1] = b; (c ? a : b)++; out[2] = b;\n"
            "((c ? a : b) *= 2) ^= 3; out[3] = b; a = b = (c ? a : b) = 4; out[4] = a;")
    assert agree("", body, 5) == [7, 10, 11, 21, 4]


def test_threads_that_pick_different_operands_write_each_their_own():
    body = ("int a = int(tid); int b = 100; (tid % 2 ? a : b) += 5; ++(tid % 3 ? b : a);\n"
            "out[0] = a; out[1] = b; thread int& r = tid < 2 ? a : b; r *= 2; out[2] = a * 1000 "
            "+ b;")
    assert agree_per_thread("", body, 3, 8)[:4] == [[1, 105, 2105], [6, 101, 12101],
                                                    [2, 106, 2212], [9, 100, 9200]]


def test_references_and_addresses_name_the_chosen_object():
    header = "void bump(thread int& x) { x += 10; }\nint peek(const thread int& x) { return x; }\n"
    body = ("int a = 1; int b = 2; int c = 0; thread int& r = c ? a : b; r = 7; out[0] = b;\n"
            "bump(c ? a : b); bump(c ? b : a); out[1] = a * 100 + b; b = 3;\n"
            "out[2] = peek(c ? a : b); thread int* p = &(c ? a : b); *p = 40; out[3] = b;")
    assert agree(header, body, 4) == [7, 1117, 3, 40]


def test_a_function_returns_a_conditional_by_reference():
    header = ("thread int& pick(thread int& a, thread int& b, bool first) "
              "{ return first ? a : b; }\n")
    body = ("int a = 1; int b = 2; pick(a, b, false) = 5; ++pick(a, b, true);\n"
            "pick(a, b, true) += pick(a, b, false); out[0] = a; out[1] = b;")
    assert agree(header, body, 2) == [7, 5]


def test_struct_members_array_elements_and_nested_conditionals():
    header = "struct S { int x; int y; void set(int v) { x = v; y = v * 2; } };\n"
    body = ("S s{1, 2}; S t{3, 4}; int c = 1; (c ? s.x : t.y) = 5; (c ? s : t).y = 8;\n"
            "(c ? t : s).set(6); out[0] = s.x * 100 + s.y; out[1] = t.x * 100 + t.y;\n"
            "int v[3] = {1, 2, 3}; int k = 0; (c ? v[2] : v[k]) += 4; (k ? v[0] : (c ? v[1] : "
            "k)) = 9;\nout[2] = v[0] * 100 + v[1] * 10 + v[2]; (c ? s : t) = S{7, 7};\n"
            "out[3] = s.x + s.y;")
    assert agree(header, body, 4) == [508, 612, 197, 14]


def test_device_and_threadgroup_elements_through_a_conditional():
    body = ("threadgroup int tg[4]; tg[2 * tid] = 1; tg[2 * tid + 1] = 2; device int* p = out + 2;"
            "\nout[0] = 3; out[1] = 4; (tid % 2 ? out[0] : out[1]) += 10;\n"
            "(tid % 2 ? tg[2 * tid] : tg[2 * tid + 1]) *= 5;\n"
            "(tid % 2 ? p[0] : *(p + 1)) = tg[2 * tid] * 10 + tg[2 * tid + 1];")
    # (each thread touches its own elements, so g++ running the threads one by one with a
    # threadgroup array of its own each time computes the same)
    per_thread = agree_per_thread("", body.replace("threadgroup int", "int"), 4, 2)
    assert per_thread == [[3, 14, 0, 20], [13, 4, 52, 0]]


def test_accesses_through_a_conditional_lvalue_are_counted_once_per_thread():
    source = ("uint t = thread_position_in_grid.x;\n"
              "(t % 2 ? out[t] : out[t + 4]) += 1;")
    kernel = metalsim.metal_kernel("cond", ["a"], ["out"], source)
    result = metalsim.simulate(kernel, inputs=[mx.zeros(1)], output_shapes=[(8,)],
                               output_dtypes=[mx.int32], grid=(4, 1, 1), threadgroup=(4, 1, 1),
                               init_value=0)
    counts = result.report.counts
    np.testing.assert_array_equal(counts["global_reads"].ravel(), np.ones(4))
    np.testing.assert_array_equal(counts["global_writes"].ravel(), np.ones(4))
    assert np.array(result.outputs[0]).tolist() == [0, 1, 0, 1, 1, 0, 1, 0]


def test_an_out_of_bounds_element_picked_by_some_threads_is_reported_for_them():
    source = ("uint t = thread_position_in_grid.x;\n"
              "(t < 2 ? out[t] : out[t + 8]) = 1;")
    kernel = metalsim.metal_kernel("cond", ["a"], ["out"], source)
    result = metalsim.simulate(kernel, inputs=[mx.zeros(1)], output_shapes=[(8,)],
                               output_dtypes=[mx.int32], grid=(4, 1, 1), threadgroup=(4, 1, 1),
                               init_value=0)
    [bad] = [d for d in result.report.diagnostics if d.kind == "out-of-bounds"]
    assert bad.line == 2


def test_a_vector_component_picked_by_a_conditional():
    """(g++ has no Metal vectors: the values are those of the same steps on ints.)"""
    body = ("int4 v = int4(1, 2, 3, 4); int c = 1; (c ? v.y : v.w) += 5; (c ? v : v).x = 9;\n"
            "out[0] = v.x; out[1] = v.y; out[2] = v.w;")
    assert metalsim_outputs("", body, 3) == [9, 7, 4]


@pytest.mark.parametrize("body, message", [
    ("int a = 1; float b = 2; int c = 1; (c ? a : b) = 5; out[0] = a;",
     "assignable only where both operands are lvalues of one type"),
    ("int a = 1; int c = 1; (c ? a : 2) = 5; out[0] = a;",
     "assignable only where both operands are lvalues of one type"),
    ("const int a = 1; int b = 2; int c = 1; (c ? a : b) = 5; out[0] = a;",
     "cannot assign to a read-only location"),
])
def test_a_conditional_that_is_not_a_modifiable_lvalue_is_refused(body, message):
    with pytest.raises(metalsim.CompileError, match=message):
        metalsim_outputs("", body, 1)


def test_the_trace_follows_values_through_a_conditional_lvalue():
    """Each write is recorded at the element the thread's condition picked, with the input
    cell its value came from, also through the local variable it picked."""
    source = ("uint i = thread_position_in_grid.x;\nfloat x = 0; float y = 0;\n"
              "(i % 2 ? x : y) = a[i];\n(i < 2 ? out[i] : out[i + 4]) = x + y;")
    kernel = metalsim.metal_kernel("cond", ["a"], ["out"], source)
    run = metalsim.simulate(kernel, inputs=[mx.arange(4, dtype=mx.float32)],
                            output_shapes=[(8,)], output_dtypes=[mx.float32], grid=(4, 1, 1),
                            threadgroup=(4, 1, 1), init_value=0, trace=True)
    writes = {int(element): sources for event in run.report.trace
              if event["kind"] == "write" and event["buffer"] == "out"
              for element, sources in zip(event["element"], event["sources"])}
    assert writes == {0: {("a", -1, 0)}, 1: {("a", -1, 1)}, 6: {("a", -1, 2)},
                      7: {("a", -1, 3)}}
    assert np.array(run.outputs[0]).tolist() == [0, 1, 0, 0, 0, 0, 2, 3]


def test_threads_picking_different_register_variables_through_references_are_reported():
    """What metalsim cannot follow (references to a caller's variables kept in registers,
    picked differently by threads of one call) stops with the line, threads and a hint."""
    header = "void sw(thread int& a, thread int& b, bool c) { (c ? a : b) = 1; }"
    source = ("uint t = thread_position_in_grid.x; int x = 0; int y = 0; sw(x, y, t % 2);\n"
              "out[t] = x * 10 + y;")
    kernel = metalsim.metal_kernel("cond", ["a"], ["out"], source, header=header)
    with pytest.raises(metalsim.KernelFault, match="cannot follow a conditional lvalue") as err:
        kernel(inputs=[mx.zeros(1)], output_shapes=[(4,)], output_dtypes=[mx.int32],
               grid=(4, 1, 1), threadgroup=(4, 1, 1), init_value=0)
    assert "header:1:50" in str(err.value) and "hint: assign in an 'if'" in str(err.value)
    # The same with one choice for every thread runs.
    uniform = metalsim.metal_kernel("cond", ["a"], ["out"], source.replace("t % 2", "true"),
                                    header=header)
    out = uniform(inputs=[mx.zeros(1)], output_shapes=[(4,)], output_dtypes=[mx.int32],
                  grid=(4, 1, 1), threadgroup=(4, 1, 1), init_value=0)[0]
    assert np.array(out).tolist() == [10, 10, 10, 10]
