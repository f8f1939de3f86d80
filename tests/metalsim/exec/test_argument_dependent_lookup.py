"""Argument-dependent lookup (C++ [basic.lookup.argdep]): a call `f(args)` written without
a qualifier also finds the functions named `f` in its arguments' associated namespaces, those
enclosing each argument's class or enumeration (through pointers), its base classes and a
class template instance's type arguments, beside what unqualified lookup finds; a local
function object of the name, a member function or a qualified name stops it. g++ is the
oracle."""

import pytest
from cxx_oracle import agree, gxx_rejects, metalsim_outputs, needs_gxx

import metalsim

pytestmark = needs_gxx

S = "namespace na { struct S { int v; }; int f(S s) { return s.v * 100; } }\n"


def test_a_function_only_the_argument_s_namespace_declares():
    assert agree(S, "na::S s{4}; out[0] = f(s);", 1) == [400]


def test_it_joins_a_global_template_unqualified_lookup_finds_and_wins_as_a_non_template():
    header = S + "template <typename T> int f(T x) { return 1; }\n"
    assert agree(header, "na::S s{4}; out[0] = f(s); out[1] = f(3);", 2) == [400, 1]


def test_a_nearer_namespace_s_function_does_not_hide_it():
    header = S + "namespace nb { int f(int x) { return 99; }\n" \
                 "int g() { na::S s{6}; return f(s) + f(1); } }\n"
    assert agree(header, "out[0] = nb::g();", 1) == [699]


def test_enumerations_pointers_and_nested_namespaces():
    header = ("namespace na { namespace nb { enum E { EA = 2 }; struct P { int v; };\n"
              "  int h(E e) { return 40 + e; } int h(thread P* p) { return p->v * 3; } } }\n"
              "int h(int x) { return 1; }\n")
    body = "na::nb::P p{5}; out[0] = h(na::nb::EA); out[1] = h(&p); out[2] = h(7);"
    assert agree(header, body, 3) == [42, 15, 1]


def test_a_template_argument_s_namespace_and_a_base_class_s_namespace():
    header = ("namespace na { struct T {}; struct Base { int v; };\n"
              "  int f(Base b) { return 5; } }\n"
              "namespace nb { template <typename U> struct Box { int v; }; }\n"
              "namespace na { int f(nb::Box<T> b) { return 77; } }\n"
              "struct D : na::Base { };\n"
              "template <typename X> int f(X x) { return 1; }\n"
              "int f(int x) { return 2; }\n")
    body = ("nb::Box<na::T> b{1}; out[0] = f(b); nb::Box<int> c{1}; out[1] = f(c);\n"
            "D d; d.v = 1; out[2] = f(d);")
    assert agree(header, body, 3) == [77, 1, 1]


def test_a_function_template_in_the_argument_s_namespace_inside_a_template():
    header = ("namespace na { struct S { int v; };\n"
              "  template <typename T> int twice(T x) { return x.v * 2; } }\n"
              "template <typename T> int call(T x) { return twice(x); }\n")
    assert agree(header, "na::S s{21}; out[0] = call(s);", 1) == [42]


def test_a_local_function_object_a_member_function_or_a_qualified_name_is_not_extended():
    header = S + ("int f(int x) { return 3; }\n"
                  "struct W { int f(na::S s) { return 8; } int use(na::S s) { return f(s); } };\n")
    body = ("na::S s{1}; auto f = [](na::S x) { return 9; }; out[0] = f(s);\n"
            "W w; out[1] = w.use(s); out[2] = ::f(2);")
    assert agree(header, body, 3) == [9, 8, 3]


def test_the_same_function_in_two_associated_namespaces_is_ambiguous():
    header = S + "int f(na::S s) { return 3; }\n"
    body = "na::S s{1}; out[0] = f(s);"
    assert "ambiguous" in gxx_rejects(header, body)
    with pytest.raises(metalsim.CompileError, match="call to 'f' is ambiguous"):
        metalsim_outputs(header, body, 1)
