"""Overload ranking (metalsim.exec.ranking): `T&` beats `const T&` for a modifiable lvalue,
whichever of them is a template; by-value against either reference is ambiguous, as g++ says;
`const T&` binds a converted temporary where `T&` cannot bind. g++ is the oracle."""

import pytest
from cxx_oracle import agree, metalsim_outputs, needs_gxx

import metalsim
from metalsim.exec.ranking import CONST_REF, REF, Rank, best, better

pytestmark = needs_gxx


def test_reference_qualification_breaks_a_tie_of_conversions_only():
    ref, const_ref, value = Rank(0, (REF,)), Rank(0, (CONST_REF,)), Rank(0, ("",))
    assert better(ref, const_ref) and not better(const_ref, ref)
    assert not better(value, const_ref) and not better(const_ref, value)
    assert better(Rank(0, (CONST_REF,)), Rank(1, (REF,)))          # conversions first
    assert better(Rank(0, (REF,), 0.6), Rank(0, (CONST_REF,), 0))  # before templates
    assert better(Rank(0, ("",), 0), Rank(0, ("",), 0.5))


def test_best_is_the_candidate_better_than_every_other_else_the_unbeaten():
    r, c, v = (Rank(0, (REF,)), "r"), (Rank(0, (CONST_REF,)), "c"), (Rank(0, ("",)), "v")
    assert best([c, r]) == [r]
    assert best([r, c, v]) == [r, v]   # f(int&), f(const int&), f(int): ambiguous
    assert best([(Rank(1), "x"), (Rank(2), "y")]) == [(Rank(1), "x")]


def test_a_template_binding_t_ref_beats_a_non_template_binding_const_ref():
    header = """
int f(const thread int& x) { return 1; }
template <typename T> int f(thread T& x) { return 2; }
struct S {
  int v;
  int g(const thread int& x) const { return 1; }
  template <typename T> int g(thread T& x) const { return 2; }
};
int operator+(const thread S& a, const thread S& b) { return 1; }
template <typename T> int operator+(thread T& a, thread T& b) { return 2; }
"""
    body = ("int a = 1; const int b = 2; out[0] = f(a) * 10 + f(b); S s{1}; S t{2};\n"
            "out[1] = s.g(a) * 10 + s.g(3); out[2] = s + t; const S u{3}; out[3] = u + u;")
    assert agree(header, body, 4) == [21, 21, 2, 1]


def test_a_non_const_object_prefers_the_non_const_member_even_from_a_template():
    header = """
struct S {
  int v;
  int h() const { return 1; }
  int h() { return 2; }
  int k(int x) const { return 1; }
  template <typename T> int k(T x) { return 2; }
};
"""
    body = "S s{1}; const S c{2}; out[0] = s.h() * 10 + c.h(); out[1] = s.k(1) * 10 + c.k(1);"
    assert agree(header, body, 2) == [21, 21]


def test_a_const_reference_binds_a_converted_temporary():
    header = ("int f(thread int& x) { return 1; }\nint f(const thread int& x) { return x * 10; }\n"
              "int g(const thread float& x) { return int(x * 2.0f); }\n")
    body = "short s = 3; out[0] = f(s); int i = 4; out[1] = g(i) + f(i);"
    assert agree(header, body, 2) == [30, 9]


@pytest.mark.parametrize("header, body", [
    ("int f(int x) { return 1; }\nint f(const thread int& x) { return 2; }",
     "int a = 1; out[0] = f(a);"),
    ("int f(int x) { return 1; }\nint f(thread int& x) { return 2; }",
     "int a = 1; out[0] = f(a);"),
    ("int f(int x) { return 1; }\nint f(const thread int& x) { return 2; }", "out[0] = f(3);"),
    ("struct S { int v; };\nint f(S x) { return 1; }\nint f(const thread S& x) { return 2; }",
     "S s{1}; out[0] = f(s);"),
    ("template <typename T> int f(T x) { return 1; }\n"
     "template <typename T> int f(const thread T& x) { return 2; }", "int a = 1; out[0] = f(a);"),
])
def test_by_value_against_a_reference_is_ambiguous_as_in_cxx(header, body):
    with pytest.raises(metalsim.CompileError, match="is ambiguous"):
        metalsim_outputs(header, body, 1)
