"""Friend functions defined in a struct ("hidden friends", C++ [namespace.memdef]/3):
functions of the struct's namespace that only argument-dependent lookup finds, through an
argument of the struct (or of a class derived from it), operators included, competing with
the built-in operator; a later declaration in the namespace makes one visible. A friend
declaration grants access (`test_member_access_control.py`). g++ is the oracle."""

import pytest
from cxx_oracle import agree, gxx_rejects, metalsim_outputs, needs_gxx

import metalsim

pytestmark = needs_gxx


def test_a_hidden_friend_is_found_through_its_struct_argument_and_a_derived_one():
    header = ("struct B { int v; friend int peek(const thread B& b) { return b.v + 7; }\n"
              "  friend int twice(B b) { return b.v * 2; } };\nstruct D : B { int w; };\n")
    assert agree(header, "D d; d.v = 2; d.w = 1; B b{5}; out[0] = peek(d); out[1] = twice(b);",
                 2) == [9, 10]


def test_hidden_friend_operators_compete_with_the_built_in_one():
    header = ("struct S { int v; operator int() const { return v; }\n"
              "  friend int operator+(S a, S b) { return 500 + a.v; }\n"
              "  friend bool operator==(const thread S& a, const thread S& b) "
              "{ return a.v == b.v + 1; } };\n")
    assert agree(header, "S s{2}; S t{1}; out[0] = s + s; out[1] = s + 1.5f; out[2] = s == t;",
                 3) == [502, 3, 1]


def test_ordinary_lookup_does_not_find_it_so_an_outer_function_is_called():
    header = ("int g(int x) { return x + 1000; }\n"
              "namespace na { struct S { int v; S(int x) : v(x) {} "
              "friend int g(S s) { return s.v * 2; } };\n"
              "  int h() { return g(3); } }\n")
    assert agree(header, "out[0] = na::h(); na::S s(5); out[1] = g(s);", 2) == [1003, 10]


def test_a_declaration_in_its_namespace_makes_it_visible_and_another_overload_does_not():
    header = ("namespace na { struct S { int v; operator int() const { return v; }\n"
              "  friend int tw(S s) { return s.v + 10; }\n"
              "  friend int other(S s) { return 100; } };\n"
              "  int tw(S s); int other(int x) { return x + 1; } }\n")
    body = "na::S s{2}; out[0] = na::tw(s); out[1] = na::other(s); out[2] = other(s);"
    assert agree(header, body, 3) == [12, 3, 100]


def test_friend_declarations_that_only_grant_access():
    header = ("struct S { int v; friend int peek(S s); friend struct Peeker; };\n"
              "int peek(S s) { return s.v + 1; }\n")
    assert agree(header, "S s{4}; out[0] = peek(s);", 1) == [5]


def test_a_hidden_friend_named_without_its_struct_is_undeclared():
    header = "namespace na { struct S { int v; friend int tw(S s) { return 1; } }; }\n"
    for body, message in (("out[0] = tw(2);", "use of undeclared identifier 'tw'"),
                          ("na::S s{3}; out[0] = na::tw(s);", "no member named 'tw'")):
        gxx_rejects(header, body)
        with pytest.raises(metalsim.CompileError, match=message):
            metalsim_outputs(header, body, 1)


def test_a_struct_template_s_hidden_friend_is_a_function_of_each_instance():
    """Not a template: its parameters convert (`w * 2.5f` for a `W<int>`), and the template's
    name in it is the instance (in a namespace too)."""
    header = ("namespace na { template <typename T> struct W { T v;\n"
              "  friend W operator*(W a, T k) { return W{a.v * k}; }\n"
              "  friend T peek(const thread W<T>& w) { return w.v + T(1); } }; }\n"
              "int peek(int x) { return x; }\n")
    body = ("na::W<int> w{3}; na::W<float> f{1.5f}; out[0] = (w * 5).v; out[1] = (w * 2.5f).v;\n"
            "out[2] = peek(w) * 10 + int(peek(f) * 2.0f) + peek(1000);")
    assert agree(header, body, 3) == [15, 6, 1045]


def test_a_friend_function_defined_in_a_specialisation_is_refused_by_name():
    header = ("template <typename T> struct W { T v; };\n"
              "template <typename T> struct W<T*> { T* p; friend int kind(W w) { return 1; } };\n")
    with pytest.raises(metalsim.CompileError,
                       match="a friend function defined in a struct template's specialisation"):
        metalsim_outputs(header, "W<int> w{3}; out[0] = w.v;", 1)


def test_a_friend_declared_in_its_namespace_before_its_struct_is_defined_is_the_same_function():
    header = ("namespace na { struct B; int g(B b);\n"
              "  struct B { int v; friend int g(B b) { return b.v * 100; } };\n"
              "  int use(B b) { return g(b) + na::g(b); } }\n")
    assert agree(header, "na::B b{2}; out[0] = na::g(b); out[1] = g(b); out[2] = na::use(b);",
                 3) == [200, 200, 400]
