"""Explicit specialisations of member function templates written in the struct's body, as
MLX's binary_ops.h does (`template <> complex64_t operator()(...)`): clang, and so Metal,
accepts them there (CWG 727); g++ does not, so the oracle is g++ on the same specialisations
written after the struct (`template <> int Op::f(int)`), which C++ defines to mean the same.
Written after the struct, they run in metalsim too, as does the specialisation of a class
template's member function for one instance (`template <> bool S<float, float2>::f()`, MLX's
fft/readwrite.h)."""

import pytest
from cxx_oracle import agree, gxx_outputs, metalsim_outputs, needs_gxx

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


@pytest.mark.parametrize("body, n", [
    ("Op op{3}; out[0] = op.f(5); out[1] = op.f<int>(6); out[2] = int(op.f(2.0f));\n"
     "out[3] = op.f<short>(7); out[4] = int(op(2.0f, 4.0f)); out[5] = op(9, 4);", 6),
    ("W<int> w{7}; out[0] = w.get<0>() + w.get<2>(); W<float> wf{0.5f};\n"
     "out[1] = int(wf.get<0>()); out[2] = int(wf.get<1>() * 2.0f);", 3),
])
def test_member_template_specialisations_written_after_the_struct_agree_with_gxx(body, n):
    agree(OUT_OF_CLASS, body, n)


INSTANCE_MEMBERS = """
template <typename T, typename U> struct RW {
  T base;
  U scale;
  int f() const thread { return int(base) + 1; }
  int g(int k = 3) thread { return k * int(scale); }
  template <int N> int h() const thread { return N + int(base); }
};
template <> int RW<float, int>::f() const thread { return int(base) * 100; }
template <> int RW<int, int>::g(int j) thread { return j + 1000; }
template <> template <> int RW<int, int>::h<2>() const thread { return -7; }
"""


def test_a_class_template_member_specialised_for_one_instance_changes_only_that_instance():
    """The specialised `g` keeps the declaration's default argument; `h<2>` of `RW<int, int>`
    is a member template's specialisation for one instance."""
    body = ("RW<float, int> a{2.0f, 3}; RW<int, int> b{5, 4}; RW<int, float> c{6, 2.0f};\n"
            "out[0] = a.f(); out[1] = b.f(); out[2] = c.f(); out[3] = a.g(); out[4] = b.g();\n"
            "out[5] = b.g(7); out[6] = c.g(); out[7] = b.h<2>(); out[8] = b.h<3>();\n"
            "out[9] = a.h<2>();")
    assert agree(INSTANCE_MEMBERS, body, 10) == [200, 6, 7, 9, 1003, 1007, 6, -7, 8, 4]


@pytest.mark.parametrize("header, message", [
    ("template <typename T> struct S { int f() thread { return 1; } };\n"
     "template <> int S<int>::f(int x) thread { return x; }",
     "out-of-line definition of 'f' does not match any declaration in 'S<int>'"),
    ("struct P { int f() thread { return 1; } };\n"
     "template <> int P<int>::f() thread { return 2; }",
     "explicit specialization of non-template struct 'P'"),
    ("struct P { template <typename T> T f(T x) thread { return x; } };\n"
     "template <> template <> int P::f<int>(int x) thread { return 2; }",
     "'P' is not a class template"),
    ("struct P { int f(int x) thread { return x; } };\n"
     "template <> int P::f(int x) thread { return 2; }",
     "no member function template named 'f' in 'P'"),
    ("template <typename T> struct S { int f() thread { return 1; } };\n"
     "struct User { int run() thread { S<int> s; return s.f(); } };\n"
     "template <> int S<int>::f() thread { return 2; }",
     "explicit specialization of 'S<int>::f' after instantiation"),
    ("struct P { template <typename T> T f(T x) thread { return x; } };\n"
     "struct User { int run() thread { P p; return p.f(1); } };\n"
     "template <> int P::f(int x) thread { return 2; }",
     "explicit specialization of 'f' after instantiation"),
])
def test_a_member_specialisation_that_specialises_nothing_is_an_error(header, message):
    with pytest.raises(metalsim.CompileError, match=message.replace("(", "\\(")):
        metalsim_outputs(header, "out[0] = 1;", 1)
