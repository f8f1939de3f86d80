"""Explicit specialisations of member function templates written in the struct's body, as
MLX's binary_ops.h does (`template <> complex64_t operator()(...)`): clang, and so Metal,
accepts them there (CWG 727); g++ does not, so the oracle is g++ on the same specialisations
written after the struct (`template <> int Op::f(int)`), which C++ defines to mean the same."""

import pytest
from cxx_oracle import gxx_outputs, metalsim_outputs, needs_gxx

import metalsim

pytestmark = needs_gxx

IN_CLASS = """
struct Op {
  int k;
  template <typename T> T f(T x) const thread { return T(x + T(k)); }
  template <> int f(int x) const thread { return x * k; }
  template <typename T> T operator()(T x, T y) thread { return x - y; }
  template <> float operator()(float x, float y) thread { return x * y; }
};
template <typename T> struct W {
  T base;
  template <int N> T get() const thread { return base + T(N); }
  template <> T get<0>() const thread { return base * T(100); }
};
"""

OUT_OF_CLASS = """
struct Op {
  int k;
  template <typename T> T f(T x) const thread { return T(x + T(k)); }
  template <typename T> T operator()(T x, T y) thread { return x - y; }
};
template <> int Op::f(int x) const thread { return x * k; }
template <> float Op::operator()(float x, float y) thread { return x * y; }
template <typename T> struct W {
  T base;
  template <int N> T get() const thread { return base + T(N); }
};
template <> template <> int W<int>::get<0>() const thread { return base * int(100); }
template <> template <> float W<float>::get<0>() const thread { return base * float(100); }
"""


@pytest.mark.parametrize("body, n", [
    ("Op op{3}; out[0] = op.f(5); out[1] = op.f<int>(6); out[2] = int(op.f(2.0f));\n"
     "out[3] = op.f<short>(7);", 4),
    ("Op op{3}; out[0] = int(op(2.0f, 4.0f)); out[1] = op(9, 4);", 2),
    ("W<int> w{7}; out[0] = w.get<0>() + w.get<2>(); W<float> wf{0.5f};\n"
     "out[1] = int(wf.get<0>()); out[2] = int(wf.get<1>() * 2.0f);", 3),
])
def test_member_specialisation_replaces_the_template_for_its_arguments(body, n):
    assert metalsim_outputs(IN_CLASS, body, n) == gxx_outputs(OUT_OF_CLASS, body, n)


def test_member_specialisation_matching_no_member_template_is_an_error():
    header = ("struct S {\n  template <typename T> T f(T x) thread { return x; }\n"
              "  template <> int f(int x, int y) thread { return x; }\n};\n")
    with pytest.raises(metalsim.CompileError,
                       match="no function template matches function template specialization"):
        metalsim_outputs(header, "S s; out[0] = s.f(1.0f);", 1)
