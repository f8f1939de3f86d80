"""Overloaded `operator++` and `operator--` (C++ [over.inc]): prefix `operator++()` and postfix
`operator++(int)`, as members and as free functions, on structs and enumerations, chosen by
overload resolution and running the program's own function (so a postfix one returns whatever
its definition returns, not an old value metalsim keeps). g++ is the oracle."""

import pytest
from cxx_oracle import agree, gxx_rejects, metalsim_outputs, needs_gxx

import metalsim

pytestmark = needs_gxx

COUNTER = """
struct Counter {
    int v; int calls;
    Counter& operator++() { v += 10; calls += 1; return *this; }
    Counter operator++(int) { Counter old = *this; v += 100; calls += 1; return old; }
    Counter& operator--() { v -= 1; return *this; }
    Counter operator--(int) { Counter old = *this; v -= 1000; return old; }
};
"""


def test_prefix_and_postfix_member_operators_call_the_programs_functions():
    body = ("Counter c = {1, 0}; Counter a = ++c; Counter b = c++;\n"
            "out[0] = a.v; out[1] = b.v; out[2] = c.v; out[3] = c.calls;\n"
            "Counter d = --c; Counter e = c--; out[4] = d.v; out[5] = e.v; out[6] = c.v;")
    assert agree(COUNTER, body, 7) == [11, 11, 111, 2, 110, 110, -890]


def test_a_prefix_operator_returning_a_reference_is_an_lvalue_of_the_object():
    body = ("Counter c = {0, 0}; ++(++c); out[0] = c.v;\n"
            "Counter& r = ++c; r.v += 5; out[1] = c.v; (++c).v = 7; out[2] = c.v;")
    assert agree(COUNTER, body, 3) == [20, 35, 7]


def test_a_postfix_operator_returns_what_its_definition_returns_not_the_old_value():
    header = """
    struct Odd {
        int v;
        Odd operator++(int) { v += 1; return {v * 3}; }
        Odd operator--(int k) { v -= 1; return {k + 40}; }
    };
    """
    body = "Odd o = {2}; out[0] = (o++).v; out[1] = o.v; out[2] = (o--).v; out[3] = o.v;"
    assert agree(header, body, 4) == [9, 3, 40, 2]


def test_free_prefix_and_postfix_operators_take_the_object_by_reference():
    header = """
    struct P { int x; };
    P& operator++(P& p) { p.x *= 2; return p; }
    P operator++(P& p, int) { P old = p; p.x += 3; return old; }
    int operator--(P& p) { return p.x - 1; }
    """
    body = ("P p = {5}; out[0] = (++p).x; out[1] = (p++).x; out[2] = p.x; out[3] = --p;"
            " out[4] = p.x;")
    assert agree(header, body, 5) == [10, 10, 13, 12, 13]


def test_member_and_free_operators_are_ranked_by_constness_of_the_object():
    header = """
    struct Q {
        int v;
        int operator++() const { return 1; }
    };
    int operator++(Q& q) { return 2; }
    """
    body = "Q q = {0}; const Q k = {0}; out[0] = ++q; out[1] = ++k;"
    assert agree(header, body, 2) == [2, 1]


def test_increment_operators_of_a_struct_template_and_a_loop_step():
    header = """
    template <typename T> struct Iter {
        T pos;
        Iter& operator++() { pos += T(2); return *this; }
        Iter operator++(int) { Iter old = *this; ++*this; return old; }
        bool operator!=(Iter o) const { return pos != o.pos; }
    };
    """
    body = ("int n = 0; for (Iter<int> it = {0}; it != Iter<int>{10}; ++it) n += it.pos;\n"
            "out[0] = n; Iter<int> j = {1}; j++; j++; out[1] = j.pos;\n"
            "int m = 0; for (Iter<int> it = {3}; it != Iter<int>{9}; it++) m += 1; out[2] = m;")
    assert agree(header, body, 3) == [20, 5, 3]


def test_an_enumeration_s_free_increment_operator_is_called():
    header = """
    enum Day { Mon, Tue, Wed };
    Day& operator++(Day& d) { d = d == Wed ? Mon : Day(d + 1); return d; }
    Day operator--(Day& d, int) { Day old = d; d = Mon; return old; }
    """
    body = ("Day d = Tue; ++d; out[0] = d; ++d; out[1] = d; d = Wed; out[2] = d--;"
            " out[3] = d;")
    assert agree(header, body, 4) == [2, 0, 2, 0]


def test_increments_run_per_thread_on_each_thread_s_own_object():
    body = ("Counter c = {int(tid), 0}; if (tid % 2) c++; else ++c; out[0] = c.v;"
            " out[1] = (c--).v;")
    from cxx_oracle import agree_per_thread
    assert agree_per_thread(COUNTER, body, 2, threads=4) == [[10, 10], [101, 101],
                                                              [12, 12], [103, 103]]


def test_operator_functions_called_by_name_and_from_a_template_on_a_struct_or_an_int():
    header = """
    struct P { int x; };
    P& operator--(thread P& p) { p.x -= 1; return p; }
    P operator--(thread P& p, int) { P old = p; p.x -= 5; return old; }
    template <typename T> T bump(T t) { ++t; t++; return t; }
    """
    body = ("Counter c = {1, 0}; c.operator++(); out[0] = c.operator++(0).v; out[1] = c.v;\n"
            "P p = {50}; operator--(p); out[2] = operator--(p, 0).x; out[3] = p.x;\n"
            "out[4] = bump(c).v; out[5] = bump(7);")
    assert agree(COUNTER + header, body, 6) == [11, 111, 49, 44, 221, 9]


# --- what is refused ----------------------------------------------------------------------

def test_increment_without_an_operator_is_refused_as_clang_does():
    header = "struct S { int v; S& operator++() { ++v; return *this; } };\n"
    body = "S s = {1}; s++; out[0] = s.v;"
    assert "declared for postfix" in gxx_rejects(header, body)
    with pytest.raises(metalsim.CompileError, match=r"cannot increment value of type 'S'") as e:
        metalsim_outputs(header, body, 1)
    assert "operator++(int)" in str(e.value)
    header = "struct T { int v; };\n"
    body = "T t = {1}; --t; out[0] = t.v;"
    gxx_rejects(header, body)
    with pytest.raises(metalsim.CompileError, match=r"cannot decrement value of type 'T'"):
        metalsim_outputs(header, body, 1)


def test_a_conversion_to_int_does_not_make_a_struct_incrementable():
    header = "struct C { int v; operator int() const { return v; } };\n"
    body = "C c = {1}; ++c; out[0] = c;"
    gxx_rejects(header, body)
    with pytest.raises(metalsim.CompileError, match=r"cannot increment value of type 'C'"):
        metalsim_outputs(header, body, 1)


def test_an_increment_of_a_const_object_needs_a_const_operator():
    header = "struct S { int v; S& operator++() { ++v; return *this; } };\n"
    body = "const S s = {1}; ++s; out[0] = s.v;"
    gxx_rejects(header, body)
    with pytest.raises(metalsim.CompileError, match=r"cannot increment value of type 'S'") as e:
        metalsim_outputs(header, body, 1)
    assert "not marked const" in str(e.value)


def test_ambiguous_increment_operators_are_reported():
    header = ("struct S { int v; int operator++() { return 1; } };\n"
              "int operator++(S& s) { return 2; }\n")
    body = "S s = {1}; out[0] = ++s;"
    assert "ambiguous" in gxx_rejects(header, body)
    with pytest.raises(metalsim.CompileError,
                       match=r"use of overloaded operator '\+\+' is ambiguous \(operand type "
                             r"'S'\)"):
        metalsim_outputs(header, body, 1)


@pytest.mark.parametrize("decl, message, column", [
    ("struct S { S operator++(float) { return *this; } };",
     r"parameter of overloaded post-increment operator must have type 'int' \(not 'float'\)",
     25),
    ("struct S { int v; }; S operator--(S& s, int& k) { return s; }",
     r"parameter of overloaded post-decrement operator must have type 'int' \(not 'int &'\)",
     41),
    ("struct S { S operator++(int a, int b) { return *this; } };",
     r"overloaded 'operator\+\+' must be a unary or binary operator \(has 3 parameters\)", 14),
])
def test_malformed_increment_operators_are_refused_with_clang_s_message(decl, message, column):
    gxx_rejects(decl, "")
    with pytest.raises(metalsim.CompileError, match=message) as e:
        metalsim_outputs(decl, "out[0] = 1;", 1)
    assert (e.value.line, e.value.column) == (1, column)


def test_an_enumeration_loop_counter_steps_by_its_increment_operator():
    header = """
    enum Step { S0 = 0, S3 = 3, S6 = 6, S9 = 9 };
    Step& operator++(Step& s) { s = Step(s + 3); return s; }
    """
    body = "int n = 0; for (Step s = S0; s != S9; ++s) n = n * 10 + s; out[0] = n;"
    assert agree(header, body, 1) == [36]
