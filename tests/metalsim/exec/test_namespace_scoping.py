"""Namespaces as C++ scopes (issue 28), each lookup rule with g++ as the oracle: a name in an
inner namespace hides the outer or global one; an overload set comes from the innermost scope
that declares the name; using-directives add a namespace's names where the directive's scope
and the namespace meet; using-declarations declare (and hide); aliases, reopening,
`namespace a::b`, unnamed and inline namespaces; locals, parameters and members hide
namespace members; what C++ finds ambiguous is a CompileError."""

import pytest
from cxx_oracle import agree, gxx_rejects, metalsim_outputs, needs_gxx

import metalsim

pytestmark = needs_gxx

THREE_KS = """
constant constexpr int K = 1;
namespace na {
constant constexpr int K = 2;
namespace nb {
constant constexpr int K = 3;
int inner() { return K; }
}
int middle() { return K * 10 + nb::K; }
namespace nc { int outer_found() { return K; } }
}
"""


def test_the_innermost_namespace_declaring_a_name_hides_the_outer_ones():
    assert agree(THREE_KS, "out[0] = na::nb::inner(); out[1] = na::middle(); out[2] = K;",
                 3) == [3, 23, 1]


def test_a_name_an_inner_namespace_lacks_is_found_in_the_enclosing_one():
    assert agree(THREE_KS, "out[0] = na::nc::outer_found();", 1) == [2]


def test_qualified_names_name_each_namespace_and_the_global_one():
    assert agree(THREE_KS, "out[0] = ::K * 100 + na::K * 10 + na::nb::K;", 1) == [123]


def test_an_overload_set_comes_from_the_innermost_scope_only():
    header = ("int f(float x) { return int(x * 10.0f); }\n"
              "namespace na { int f(int x) { return x + 100; }\n"
              "int call() { return f(2.5f); } }\n")
    assert agree(header, "out[0] = na::call(); out[1] = f(2.5f);", 2) == [102, 25]


def test_a_block_using_directive_joins_the_overload_sets_of_both_namespaces():
    header = ("int f(float x) { return int(x * 10.0f); }\n"
              "namespace na { int f(int x) { return x + 100; } }\n")
    body = "{ using namespace na; out[0] = f(3); out[1] = f(1.5f); }"
    assert agree(header, body, 2) == [103, 15]


def test_a_using_directive_puts_names_where_its_scope_and_the_namespace_meet():
    header = ("namespace nb { constant constexpr int K = 5; }\n"
              "namespace nc { constant constexpr int K = 7;\n"
              "namespace inner { using namespace nb; int get() { return K; } } }\n")
    assert agree(header, "out[0] = nc::inner::get();", 1) == [7]


def test_qualified_lookup_follows_the_namespace_s_using_directives():
    header = ("namespace na { constant constexpr int K = 4; namespace deep { "
              "constant constexpr int D = 6; } }\n"
              "namespace nb { using namespace na; }\n")
    assert agree(header, "out[0] = nb::K; out[1] = nb::deep::D;", 2) == [4, 6]


def test_a_block_using_declaration_hides_the_outer_overloads():
    header = ("int f(float x) { return int(x * 10.0f); }\n"
              "namespace na { int f(int x) { return x + 100; } }\n")
    body = "out[0] = f(3.5f); { using na::f; out[1] = f(3.5f); }"
    assert agree(header, body, 2) == [35, 103]


def test_block_using_directives_and_declarations_end_with_their_block():
    header = ("int f(float x) { return int(x * 10.0f); }\n"
              "constant constexpr int K = 1;\n"
              "namespace na { int f(int x) { return x + 100; } constant constexpr int K = 2;\n"
              "  typedef short T; }\ntypedef int T;\n"
              "int g() { { using namespace na; } return f(3); }\n")
    body = ("{ using na::f; using na::K; using na::T; out[0] = f(3.5f) + K * 1000 + "
            "int(sizeof(T)) * 10000; }\nout[1] = f(3.5f) + K * 1000 + int(sizeof(T)) * 10000;\n"
            "out[2] = g();")
    assert agree(header, body, 3) == [22103, 41035, 30]


def test_a_namespace_scope_using_declaration_declares_the_name_there():
    header = ("int f(float x) { return int(x * 10.0f); }\n"
              "namespace na { int f(int x) { return x + 100; } }\n"
              "namespace nd { using na::f; int call() { return f(2.5f); } }\n")
    assert agree(header, "out[0] = nd::call(); out[1] = nd::f(7);", 2) == [102, 107]


def test_namespace_aliases_at_namespace_and_block_scope():
    body = "namespace deep = na::nb; out[0] = deep::K; out[1] = top::inner();"
    assert agree(THREE_KS + "namespace top = na::nb;\n", body, 2) == [3, 3]


def test_typedefs_of_one_name_in_two_namespaces_are_two_types():
    header = "typedef int T;\nnamespace na { typedef short T; T wrap(int x) { return T(x); } }\n"
    body = ("T a = 70000; na::T b = 70000; out[0] = a; out[1] = b; out[2] = sizeof(na::T);\n"
            "out[3] = na::wrap(70001);")
    assert agree(header, body, 4) == [70000, 4464, 2, 4465]


def test_structs_and_struct_templates_of_one_name_in_two_namespaces():
    header = ("struct S { int v; int get() const { return v + 1; } };\n"
              "template <typename U> struct W { U v; U get() const { return v * U(2); } };\n"
              "namespace na { struct S { int v; int get() const { return v * 10; } };\n"
              "template <typename U> struct W { U v; U get() const { return v * U(3); } };\n"
              "int both(int x) { S s{x}; W<int> w{x}; return s.get() + w.get(); } }\n")
    body = ("S a{4}; na::S b{4}; W<int> c{4}; na::W<int> d{4};\n"
            "out[0] = a.get(); out[1] = b.get(); out[2] = c.get(); out[3] = d.get();\n"
            "out[4] = na::both(2);")
    assert agree(header, body, 5) == [5, 40, 8, 12, 26]


def test_function_templates_of_one_name_in_two_namespaces():
    header = ("template <typename U> U tw(U x) { return x + U(1); }\n"
              "namespace na { template <typename U> U tw(U x) { return x * U(3); }\n"
              "int use(int x) { return tw(x) + tw<int>(x); } }\n")
    body = "out[0] = tw(5); out[1] = na::tw(5); out[2] = na::tw<int>(2); out[3] = na::use(2);"
    assert agree(header, body, 4) == [6, 15, 6, 12]


def test_reopened_and_nested_namespace_definitions():
    header = ("namespace na { constant constexpr int A = 1; }\n"
              "namespace na::nb { constant constexpr int B = A + 1; }\n"
              "namespace na { namespace nb { int sum() { return A + B; } } }\n")
    assert agree(header, "out[0] = na::nb::sum(); out[1] = na::nb::B;", 2) == [3, 2]


def test_an_unnamed_namespace_s_members_are_visible_in_the_enclosing_one():
    header = ("constant constexpr int K = 1;\n"
              "namespace { constant constexpr int Q = 9; constant constexpr int K = 2; }\n"
              "namespace na { namespace { constant constexpr int R = 4; } int get() "
              "{ return Q + R; } }\n")
    body = "out[0] = Q; out[1] = na::get(); out[2] = na::R; out[3] = ::K;"
    assert agree(header, body, 4) == [9, 13, 4, 1]


def test_an_inline_namespace_s_members_are_members_of_the_enclosing_one_too():
    header = ("namespace na { inline namespace v1 { constant constexpr int K = 3;\n"
              "int f(int x) { return x + K; } } }\n")
    assert agree(header, "out[0] = na::K; out[1] = na::f(1); out[2] = na::v1::K;",
                 3) == [3, 4, 3]


def test_locals_and_parameters_hide_namespace_members_but_not_qualified_names():
    header = THREE_KS + "namespace na { int p(int K) { return K * 100 + na::K * 10 + ::K; } }\n"
    body = "int K = 50; out[0] = K; out[1] = na::K; out[2] = ::K; out[3] = na::p(7);"
    assert agree(header, body, 4) == [50, 2, 1, 721]


def test_struct_members_hide_namespace_members_even_when_declared_after_the_use():
    header = ("namespace na { constant constexpr int K = 2;\n"
              "struct M { int get() const { return K + 1; } int K; };\n"
              "struct B { int K; }; struct D : B { int get() const { return K * 2; } }; }\n")
    body = "na::M m{7}; na::D d; d.K = 5; out[0] = m.get(); out[1] = d.get(); out[2] = na::K;"
    assert agree(header, body, 3) == [8, 10, 2]


def test_enumerators_are_members_of_their_enumeration_s_namespace():
    header = ("constant constexpr int KB = 100;\n"
              "namespace na { enum Kind { KA = 3, KB, KC = KB * 2 }; int get() { return KB; } }\n")
    body = ("out[0] = KB; out[1] = na::KB; out[2] = na::KC; out[3] = na::get();\n"
            "out[4] = na::Kind::KA;")
    assert agree(header, body, 5) == [100, 4, 8, 4, 3]


def test_an_operator_declared_in_a_struct_s_namespace_is_found_for_its_operands():
    header = ("namespace na { struct V { int x; };\n"
              "V operator+(V a, V b) { return V{a.x * 10 + b.x}; } }\n")
    assert agree(header, "na::V a{1}, b{2}; out[0] = (a + b).x;", 1) == [12]


@pytest.mark.parametrize("header, body", [
    ("constant constexpr int K = 1;\nnamespace na { constant constexpr int K = 2; }\n",
     "using namespace na; out[0] = K;"),
    ("namespace na { typedef int T; }\nnamespace nb { typedef short T; }\n",
     "using namespace na; using namespace nb; T x = 1; out[0] = x;"),
    ("struct S { int v; };\nnamespace na { struct S { int v; }; }\n",
     "using namespace na; S s{1}; out[0] = s.v;"),
    ("constant constexpr int K = 1;\nnamespace { constant constexpr int K = 2; }\n",
     "out[0] = K;"),
])
def test_a_name_two_using_directives_make_visible_at_once_is_ambiguous(header, body):
    assert "ambiguous" in gxx_rejects(header, body)
    with pytest.raises(metalsim.CompileError, match="reference to '(K|T|S)' is ambiguous"):
        metalsim_outputs(header, body, 1)


def test_a_qualified_name_a_namespace_does_not_declare_is_an_error():
    header = "namespace na { constant constexpr int K = 2; namespace nb { } }\n"
    body = "out[0] = na::nb::K;"
    assert "is not a member of" in gxx_rejects(header, body)
    with pytest.raises(metalsim.CompileError, match="no member named 'K' in namespace 'na::nb'"):
        metalsim_outputs(header, body, 1)
