"""Namespace aliases (`namespace st = mlx::steel;`, at file and block scope, of nested
namespaces and through other aliases) and using-declarations (`using na::f;`, `using ::g;`),
with g++ as the oracle."""

import pytest
from cxx_oracle import agree, metalsim_outputs, needs_gxx

import metalsim

pytestmark = needs_gxx

HEADER = """
namespace outer { namespace inner {
constant constexpr int K = 3;
inline int f(int x) { return x * K; }
struct P { int v; };
} }
namespace oi = outer::inner;
namespace o = outer;
namespace oi2 = o::inner;
using outer::inner::f;
"""


def test_alias_names_its_namespace_in_qualified_names_and_types():
    body = ("out[0] = oi::K; out[1] = oi::f(2); out[2] = oi2::K + o::inner::K;\n"
            "oi::P p{4}; out[3] = p.v;")
    assert agree(HEADER, body, 4) == [3, 6, 6, 4]


def test_alias_in_a_block_and_a_using_directive_through_an_alias():
    body = "namespace q = outer::inner; out[0] = q::f(5); using namespace oi; out[1] = K;"
    assert agree(HEADER, body, 2) == [15, 3]


def test_using_declarations_at_file_and_block_scope():
    body = "out[0] = f(7); using outer::inner::K; out[1] = K; using ::f; out[2] = f(1);"
    assert agree(HEADER, body, 3) == [21, 3, 3]


TWO = """
namespace na { constant constexpr int K = 2; }
namespace nb { constant constexpr int K = 3; }
namespace q = nb;
"""


def test_a_block_s_alias_ends_with_its_block():
    body = ("{ namespace q = na; out[0] = q::K; } out[1] = q::K;\n"
            "if (out[0] == 2) { namespace q = na; out[2] = q::K; } out[3] = q::K;\n"
            "for (int i = 0; i < 1; ++i) { namespace r = na; out[4] = r::K; }")
    assert agree(TWO, body, 5) == [2, 3, 2, 3, 2]


def test_a_function_s_alias_is_not_another_function_s():
    header = TWO + ("int g() { namespace q = na; { namespace q = nb; } return q::K; }\n"
                    "int h() { return q::K; }\n"
                    "struct S { int get() const { namespace q = na; return q::K; } };\n"
                    "template <typename T> T t() { namespace q = na; return T(q::K); }\n")
    body = ("auto l = []() { namespace q = na; return q::K; };\n"
            "out[0] = g(); out[1] = h(); out[2] = S{}.get(); out[3] = t<int>(); out[4] = l();"
            " out[5] = q::K;")
    assert agree(header, body, 6) == [2, 3, 2, 2, 2, 3]


def test_a_block_alias_names_a_namespace_through_another_alias_and_hides_a_namespace():
    header = TWO + "namespace na { namespace ni { constant constexpr int J = 7; } }\n"
    body = ("{ namespace nb = na; namespace i2 = nb::ni; out[0] = nb::K * 10 + i2::J;\n"
            "  using namespace i2; out[1] = J; }\n"
            "out[2] = nb::K;")
    assert agree(header, body, 3) == [27, 7, 3]


@pytest.mark.parametrize("header, body, message", [
    ("namespace a { constant constexpr int k = 1; }\nnamespace b = nowhere;\n", "out[0] = 1;",
     "expected namespace name"),
    ("namespace a { constant constexpr int k = 1; }\nusing a::nothing;\n", "out[0] = 1;",
     "no member named 'nothing' in namespace 'a'"),
    ("", "using ::nothing; out[0] = 1;", "no member named 'nothing' in the global namespace"),
    ("namespace a { constant constexpr int k = 1; }\nstruct S { using a::k; int v; };\n",
     "out[0] = 1;", "using-declaration of a namespace member is not allowed in a struct"),
])
def test_aliases_and_using_declarations_of_what_is_not_declared_are_errors(header, body,
                                                                            message):
    with pytest.raises(metalsim.CompileError, match=message):
        metalsim_outputs(header, body, 1)
