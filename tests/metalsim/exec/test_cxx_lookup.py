"""C++ name lookup that once gave quiet wrong values (issue 28), with g++ as the oracle:
explicit specialisations of function templates named with template arguments, `g<>(a)`,
namespace-qualified names next to locals, and a global name beside a namespace member."""

import pytest
from cxx_oracle import agree, metalsim_outputs, needs_gxx

import metalsim

pytestmark = needs_gxx

SPECIALISED = """
template <typename T> T ft(T x) { return T(x + T(1)); }
template <> int ft(int x) { return x * 100; }
template <typename T> T outer(T x) { return ft<T>(x); }
template <typename T, typename U> T fu(T x, U y) { return T(x + y); }
template <> int fu(int x, char y) { return x * 1000 + y; }
"""


def test_explicit_specialisation_is_used_when_the_call_names_the_template_arguments():
    assert agree(SPECIALISED, "out[0] = ft<int>(5); out[1] = ft(5); out[2] = ft<float>(1.0f);",
                 3) == [500, 500, 2]


def test_explicit_specialisation_is_used_for_ft_of_T_inside_another_template():
    assert agree(SPECIALISED, "out[0] = outer(5); out[1] = outer<int>(6);", 2) == [500, 600]


def test_explicit_specialisation_is_used_with_partly_given_template_arguments():
    assert agree(SPECIALISED, "out[0] = fu<int>(5, char(2)); out[1] = fu<int>(5, 2);",
                 2) == [5002, 7]


def test_explicit_specialisation_naming_its_arguments_ends_a_template_recursion():
    header = ("template <int N> int tri() { return N + tri<N - 1>(); }\n"
              "template <> int tri<0>() { return 100; }\n"
              "template <typename T> T twice(T x) { return x + x; }\n"
              "template <> int twice<int>(int x) { return -x; }\n")
    assert agree(header, "out[0] = tri<3>(); out[1] = tri<0>(); out[2] = twice(4);\n"
                         "out[3] = int(twice(1.5f));", 4) == [106, 100, -4, 3]


def test_explicit_specialisation_takes_its_template_from_return_pointer_and_reference_types():
    header = ("template <typename T> int h(T x) { return 1; }\n"
              "template <typename T> int h(thread T* x) { return 2; }\n"
              "template <> int h(thread int* x) { return 3; }\n"
              "template <typename T> int r(const thread T& x) { return int(x) + 1; }\n"
              "template <> int r(const thread int& x) { return x * 3; }\n"
              "template <typename T> T make() { return T(1); }\n"
              "template <> int make() { return 9; }\n")
    body = ("int a = 5; float b = 2.0f;\nout[0] = h(&a); out[1] = h(a); out[2] = h(&b);\n"
            "out[3] = r(a); out[4] = r(b); out[5] = make<int>(); out[6] = int(make<float>());")
    assert agree(header, body, 7) == [3, 1, 2, 15, 3, 9, 1]


def test_explicit_specialisation_of_an_operator_template_is_used():
    header = ("struct S { int v; };\n"
              "template <typename T> int operator+(S a, T b) { return a.v + int(b); }\n"
              "template <> int operator+(S a, int b) { return 1000; }\n")
    assert agree(header, "S s{3}; out[0] = s + 4; out[1] = s + 2.0f;", 2) == [1000, 5]


def test_explicit_specialisation_matching_no_template_is_an_error():
    header = ("template <typename T> T ft(T x) { return x; }\n"
              "template <> int ft(int x, int y) { return x; }\n")
    with pytest.raises(metalsim.CompileError,
                       match="no function template matches function template specialization"):
        metalsim_outputs(header, "out[0] = ft(1);", 1)


def test_empty_template_argument_list_rules_out_the_non_template():
    header = ("int g(int x) { return x + 1; }\n"
              "template <typename T> T g(T x) { return x * 10; }\n"
              "struct M {\n  int g(int x) { return x + 2; }\n"
              "  template <typename T> T g(T x) { return x * 20; }\n};\n")
    body = "int a = 3; M m; out[0] = g<>(a); out[1] = g(a); out[2] = m.g<>(a); out[3] = m.g(a);"
    assert agree(header, body, 4) == [30, 4, 60, 5]


NAMESPACED = """
namespace na { constant constexpr int K = 2; typedef short Narrow; }
constant constexpr int G = 7;
int h(int K) { return na::K * 10 + K; }
"""


def test_namespace_qualified_name_does_not_find_a_local():
    assert agree(NAMESPACED, "int K = 5; out[0] = na::K; out[1] = K;", 2) == [2, 5]


def test_global_qualified_name_does_not_find_a_local():
    assert agree(NAMESPACED, "int G = 9; out[0] = ::G; out[1] = G;", 2) == [7, 9]


def test_parameter_does_not_hide_the_namespace_member_it_shares_a_name_with():
    assert agree(NAMESPACED, "out[0] = h(4);", 1) == [24]


def test_namespace_qualified_type_does_not_find_a_local_typedef():
    body = "typedef int Narrow; na::Narrow x = 70000; Narrow y = 70000; out[0] = x; out[1] = y;"
    assert agree(NAMESPACED, body, 2) == [4464, 70000]


@pytest.mark.parametrize("header, body, expected", [
    ("constant constexpr int K = 1;\nnamespace na { constant constexpr int K = 2; }\n",
     "out[0] = K; out[1] = na::K;", [1, 2]),
    ("typedef int TT;\nnamespace na { typedef short TT; }\n",
     "TT x = 70000; out[0] = x; out[1] = sizeof(TT);", [70000, 4]),
    ("int f(int x) { return x + 1; }\nnamespace na { int f(float x) { return 100 + int(x); } }\n",
     "out[0] = f(2.0f); out[1] = na::f(2.0f);", [3, 102]),
    ("namespace na { constant constexpr int K = 2; }\nconstant constexpr int K = 1;\n",
     "out[0] = K; out[1] = na::K;", [1, 2]),
])
def test_global_name_beside_a_namespace_member_stays_apart_from_it(header, body, expected):
    assert agree(header, body, 2) == expected
