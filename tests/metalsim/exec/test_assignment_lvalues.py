"""Prefix `++`/`--`, `=` and compound assignments are lvalues in C++: they may be assigned,
incremented and bound to references again, with the side effect happening once. g++ is the
oracle."""

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

