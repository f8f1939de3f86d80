"""Prefix `++`/`--`, `=` and compound assignments are lvalues in C++: they may be assigned,
incremented and bound to references again, with the side effect happening once. g++ is the
oracle."""

import mlx.core as mx
import numpy as np
import pytest
from cxx_oracle import agree, metalsim_outputs, needs_gxx

import metalsim

pytestmark = needs_gxx


def test_prefix_increment_of_a_prefix_increment_adds_two():
    assert agree("", "int a = 3; ++(++a); --(--(--a)); out[0] = a; out[1] = ++(++a) * 10;",
                 2) == [2, 40]


def test_compound_assignment_result_is_assigned_again():
    body = ("int a = 5; int b = 12; (a += 3) ^= b; out[0] = a;\n"
            "(b -= 2) |= 1; out[1] = b; (a = b) += 4; out[2] = a; --(a -= 3); out[3] = a;")
    assert agree("", body, 4) == [4, 11, 15, 11]


def test_reference_binds_to_an_incremented_or_assigned_variable():
    body = ("int a = 1; thread int& r = ++a; r += 10; out[0] = a;\n"
            "int b = 2; thread int& s = (b *= 7); s -= 1; out[1] = b; out[2] = s;")
    assert agree("", body, 3) == [12, 13, 13]


def test_assignment_lvalue_in_device_memory():
    assert agree("", "out[1] = 2; (out[1] += 3) *= 4; ++(++out[0]);", 2) == [2, 20]


def test_assignment_lvalue_of_a_vector_component():
    """(g++ has no Metal vectors: the values are those of the same steps on ints above.)"""
    body = "int4 v = int4(1, 2, 3, 4); (v.y += 5) *= 2; ++(++v.w); out[0] = v.y; out[1] = v.w;"
    assert metalsim_outputs("", body, 2) == [14, 6]


def test_the_side_effect_of_an_lvalue_assignment_happens_once():
    header = "int bump(thread int& x) { return ++x; }\n"
    body = "int a = 0; int n = 0; (a += bump(n)) += bump(n); out[0] = a; out[1] = n;"
    assert agree(header, body, 2) == [3, 2]


def test_postfix_increment_and_arithmetic_remain_unassignable():
    for body in ("int a = 1; (a++) = 2; out[0] = a;", "int a = 1; (a + 1) = 2; out[0] = a;"):
        with pytest.raises(metalsim.CompileError, match="expression is not assignable"):
            metalsim_outputs("", body, 1)



def test_a_comma_expression_is_the_lvalue_of_its_right_operand():
    header = "int bump(thread int& x) { return ++x; }\n"
    body = ("int a = 1; int b = 2; int n = 0; (a, b) = 7; (bump(n), a) += 5; ++(bump(n), b);\n"
            "out[0] = a; out[1] = b; out[2] = n; out[3] = (bump(n), n) * 10;")
    assert agree(header, body, 4) == [6, 8, 2, 30]


def test_the_address_of_an_incremented_or_assigned_variable():
    body = ("int a = 1; thread int* p = &(++a); *p += 10; out[0] = a;\n"
            "int b = 2; thread int* q = &(b = 5); *q *= 3; out[1] = b;\n"
            "int c = 3; thread int* s = &(c += 1); out[2] = *s + c;")
    assert agree("", body, 3) == [12, 15, 8]


def test_assignment_chains_through_pointers_members_and_elements():
    header = "struct P { int x; int y; };\n"
    body = ("P p = {1, 2}; int arr[2] = {3, 4}; thread P* pp = &p; device int* o = out + 3;\n"
            "pp->x = arr[1] = o[0] = 6; (pp->y += arr[0]) *= 2; ++(++arr[0]);\n"
            "(o[1] = pp->y) -= 1; out[0] = p.x; out[1] = p.y; out[2] = arr[0] * 10 + arr[1];")
    assert agree(header, body, 5) == [6, 10, 56, 6, 9]


def test_device_accesses_of_lvalue_assignments_are_counted_once_each():
    source = ("uint t = thread_position_in_grid.x;\n"
              "(out[t] += 3) *= 2; ++(++out[t]); device int& r = (out[t] = out[t] + 1); r += 1;")
    kernel = metalsim.metal_kernel("lv", ["a"], ["out"], source)
    result = metalsim.simulate(kernel, inputs=[mx.zeros(1)], output_shapes=[(4,)],
                               output_dtypes=[mx.int32], grid=(4, 1, 1), threadgroup=(4, 1, 1),
                               init_value=0)
    counts = result.report.counts
    # (out[t] += 3): read, write; *= 2: read, write; ++ twice: 2 reads, 2 writes;
    # out[t] + 1: read; = : write; r += 1: read, write
    np.testing.assert_array_equal(counts["global_reads"].ravel(), np.full(4, 6))
    np.testing.assert_array_equal(counts["global_writes"].ravel(), np.full(4, 6))
    assert np.array(result.outputs[0]).tolist() == [10, 10, 10, 10]


def test_a_struct_assignment_is_the_assigned_object():
    header = "struct S { int x; int y; int get() const { return x * 2 + y; } };\n"
    body = ("S a{1, 2}; S b{3, 4}; S c{5, 6}; (a = b).x = 9; out[0] = a.x * 10 + a.y;\n"
            "a = b = c; out[1] = a.x + b.y; thread S& r = (a = c); r.y = 7; out[2] = a.y;\n"
            "out[3] = (b = a).get();")
    assert agree(header, body, 4) == [94, 11, 7, 17]
