"""Constructor templates and conversion function templates, with SFINAE in their default
template arguments (`template <typename U, typename = typename enable_if<...>::type>`), and
constructors qualified with an address space: how MLX's complex.h writes `complex_t`. g++ is the
oracle."""

import pytest
from cxx_oracle import gxx_outputs, metalsim_outputs, needs_gxx

import metalsim

# g++ spells Metal's <metal_type_traits> as <type_traits>.
GXX = "#include <type_traits>\nusing namespace std;\n"

HEADER = """
struct Num {
  int v;
  Num(int x) thread : v(x * 10) {}
  template <typename U, typename = typename enable_if<is_floating_point_v<U>>::type>
  Num(U x) thread : v(int(x) + 1000) {}
};
int value_of(Num n) { return n.v; }

template <typename T>
struct Box {
  T v;
  Box(T x) thread : v(x) {}
  template <typename U, typename = typename enable_if<is_convertible_v<T, U>>::type>
  operator U() const thread { return static_cast<U>(v) + static_cast<U>(2); }
};
float twice(float x) { return 2 * x; }
"""


@needs_gxx
def test_constructor_and_conversion_templates_agree_with_gxx():
    body = """
  Num a(3);
  Num b(2.5f);
  Num c = 4.0f;
  short s = 7;
  Num d(s);
  out[0] = a.v;
  out[1] = b.v;
  out[2] = c.v;
  out[3] = d.v;
  out[4] = value_of(6.0f);
  Box<int> box(5);
  int i = box;
  float f = box;
  out[5] = i;
  out[6] = int(f * 10);
  out[7] = int(twice(box));
"""
    expected = gxx_outputs(GXX + HEADER, body, 8)
    assert metalsim_outputs(HEADER, body, 8) == expected == [30, 1002, 1004, 70, 1006, 7, 70,
                                                              14]


def test_a_constructor_template_whose_default_argument_fails_is_not_a_candidate():
    header = """
struct OnlyFloats {
  int v;
  template <typename U, typename = typename enable_if<is_floating_point_v<U>>::type>
  OnlyFloats(U x) thread : v(int(x)) {}
};
"""
    with pytest.raises(metalsim.CompileError,
                       match="no matching constructor for initialization of 'OnlyFloats'"):
        metalsim_outputs(header, "OnlyFloats o(3); out[0] = o.v;", 1)


def test_a_conversion_template_whose_default_argument_fails_does_not_convert():
    header = """
struct ToInts {
  template <typename U, typename = typename enable_if<is_integral_v<U>>::type>
  operator U() const thread { return U(9); }
};
"""
    assert metalsim_outputs(header, "ToInts t; int i = t; out[0] = i;", 1) == [9]
    with pytest.raises(metalsim.CompileError, match="'ToInts' to 'float'"):
        metalsim_outputs(header, "ToInts t; float f = t; out[0] = int(f);", 1)


def test_a_thread_object_is_built_by_its_thread_constructor_not_a_threadgroup_one():
    header = """
struct Pair {
  int a;
  Pair() thread : a(1) {}
  Pair() threadgroup : a(2) {}
  Pair(int x) device : a(x) {}
};
"""
    assert metalsim_outputs(header, "Pair p; out[0] = p.a;", 1) == [1]
    with pytest.raises(metalsim.CompileError, match="no matching constructor"):
        metalsim_outputs(header, "Pair p(5); out[0] = p.a;", 1)


def test_a_const_qualified_constructor_is_refused():
    with pytest.raises(metalsim.CompileError,
                       match="'const' qualifier is not allowed on a constructor"):
        metalsim_outputs("struct C { int a; C() const : a(1) {} };", "out[0] = 1;", 1)
