"""The built-in operator as a candidate beside the program's operator functions (C++
[over.match.oper]): an operator on a struct or an enumeration picks the best of the member
and free `operator@` functions and the built-in operator, which takes a struct by its
conversion function and an unscoped enumeration by promotion, argument by argument; where
none is best the expression is ambiguous, as clang (Metal's compiler) and ISO C++ say. g++
is the oracle (with `-pedantic-errors` for what ISO C++ rejects and g++ alone resolves)."""

import pytest
from cxx_oracle import agree, gxx_rejects, metalsim_outputs, needs_gxx

import metalsim

pytestmark = needs_gxx

ENUM = "enum E { A = 1, B = 2 };\n"
CONVERTS = "struct S { int v; operator int() const { return v; } };\n"


def test_an_operator_function_on_an_enumeration_beats_the_built_in_one():
    header = ENUM + ("int operator+(E a, E b) { return 100 + a * 10 + b; }\n"
                     "int operator-(E a) { return 50; }\n"
                     "bool operator==(E a, E b) { return true; }\n")
    body = "out[0] = A + B; out[1] = -B; out[2] = A == B; out[3] = 1 + 2; out[4] = -A + 0;"
    assert agree(header, body, 5) == [112, 50, 1, 3, 50]


def test_the_built_in_operator_wins_where_it_converts_better():
    header = ENUM + ("int operator+(E a, int b) { return 100; }\n"
                     "bool operator==(E a, int b) { return true; }\n")
    # `5 + A`: the function takes E first, so only the built-in one fits; `A == B`: the
    # built-in `operator==(E, E)` matches exactly
    body = "out[0] = A + 5; out[1] = 5 + A; out[2] = A == B; out[3] = A == 2;"
    assert agree(header, body, 4) == [100, 6, 0, 1]


def test_a_free_function_is_a_candidate_only_where_a_parameter_takes_the_enumeration():
    header = ENUM + "template <typename T> int operator*(T a, E b) { return 42; }\n"
    body = "out[0] = A * 3; out[1] = 3 * B; out[2] = A * B;"
    assert agree(header, body, 3) == [3, 42, 42]
    header = ("enum class F { X = 1 };\nstruct Q { int q; Q(F f) : q(int(f)) {} };\n"
              "int operator+(Q a, Q b) { return 9; }\n")   # (Q from F is no candidate's)
    body = "out[0] = F::X + F::X;"
    assert "no match for" in gxx_rejects(header, body)
    with pytest.raises(metalsim.CompileError, match="invalid operand of type .F."):
        metalsim_outputs(header, body, 1)


def test_an_enum_class_s_operators_and_comparisons():
    header = ("enum class F : int { X = 1, Y = 2 };\n"
              "F operator|(F a, F b) { return F(int(a) | int(b) | 4); }\n"
              "bool operator<(F a, int b) { return false; }\n")
    body = "out[0] = int(F::X | F::Y); out[1] = F::X < F::Y; out[2] = F::Y < 5;"
    assert agree(header, body, 3) == [7, 1, 0]


def test_operator_functions_of_an_enumeration_in_a_namespace_or_a_struct():
    header = ("namespace na { enum K { P = 3 }; int operator*(K a, int b) { return 9; } }\n"
              "struct H { enum M { Q = 2 }; };\nint operator%(H::M a, H::M b) { return 8; }\n")
    body = "out[0] = na::P * 2; out[1] = H::Q % H::Q; out[2] = 7 % H::Q;"
    assert agree(header, body, 3) == [9, 8, 1]


def test_compound_assignment_to_an_enumeration_and_to_an_int():
    header = ENUM + "void operator|=(thread E& a, E b) { a = E(int(a) | int(b) | 16); }\n"
    body = "E e = A; e |= B; out[0] = e; int i = 1; i |= B; out[1] = i;"
    assert agree(header, body, 2) == [19, 3]


def test_a_struct_s_conversion_feeds_the_built_in_operator_beside_functions_that_do_not_fit():
    header = CONVERTS + "int operator+(S a, S b) { return 100; }\n"
    body = ("S s{3}; out[0] = s + s; out[1] = s * 2; out[2] = -s; out[3] = ~s;\n"
            "int x = 4; x += s; out[4] = x;")
    assert agree(header, body, 5) == [100, 6, -3, -4, 7]


def test_a_struct_s_conversion_to_bool_in_logical_operators_and_conditions():
    header = "struct T { int v; operator bool() const { return v != 0; } };\n"
    body = ("T s{3}; T t{0}; out[0] = s && t; out[1] = s || t; out[2] = !t;\n"
            "if (s) out[3] = 5; out[4] = t ? 1 : 2;")
    assert agree(header, body, 5) == [0, 1, 1, 5, 2]


@pytest.mark.parametrize("header, body", [
    (CONVERTS + "int operator+(S a, float b) { return 100; }\n", "S s{3}; out[0] = s + 2;"),
    (CONVERTS + "int operator+(S a, int b) { return 100; }\n", "S s{3}; out[0] = s + 2.5f;"),
    ("struct S { int v; operator int() const { return v; }\n"
     "  int operator+(float b) const { return 100; } };\n", "S s{3}; out[0] = s + 2;"),
    (ENUM + "int operator+(E a, float b) { return 100; }\n", "out[0] = A + 2;"),
    (ENUM + "int operator+(float a, E b) { return 100; }\n", "out[0] = 2 + A;"),
    (ENUM + "bool operator==(const thread E& a, const thread E& b) { return true; }\n",
     "out[0] = A == B;"),
    ("enum G : short { GA = 1 };\nint operator+(G a, short b) { return 5; }\n",
     "out[0] = GA + 3;"),
])
def test_where_neither_is_better_for_every_operand_the_operator_is_ambiguous(header, body):
    assert "ambiguous" in gxx_rejects(header, body, iso=True)
    with pytest.raises(metalsim.CompileError, match="use of overloaded operator .* is ambiguous"):
        metalsim_outputs(header, body, 1)


def test_the_same_with_a_member_operator_that_fits_exactly():
    header = CONVERTS.replace("};", "  int operator+(int b) const { return 100; } };")
    assert agree(header, "S s{3}; out[0] = s + 2; out[1] = 2 + s;", 2) == [100, 5]
