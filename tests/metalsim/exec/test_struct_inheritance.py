"""Inheritance: base class subobjects laid out first (an empty base taking no room), data
members, member functions, static members and member types found in base classes, and the
type-trait pattern of MLX's steel headers (`struct is_x : bool_constant<...> {}`); g++ is the
oracle for values and layouts."""

import pytest
from cxx_oracle import agree, metalsim_outputs, needs_gxx

import metalsim

HEADER = """
template <typename T, T v>
struct constant_of {
  static constexpr constant T value = v;
  typedef T value_type;
};
template <bool B>
struct flag : constant_of<bool, B> {};
template <typename T>
struct is_small : flag<sizeof(T) <= 2> {};

struct Base {
  int a;
  short s;
  int get_a() const thread { return a; }
  int twice() const thread { return 2 * a + s; }
  static int seven() { return 7; }
};
struct Mid : Base {
  char c;
  int twice() const thread { return 1000 + a; }   // hides Base::twice
};
struct Derived : public Mid {
  float f;
  int sum() const thread { return a + s + c + int(f) + get_a() + twice(); }
};
struct Empty {
  static constexpr constant int k = 3;
  int k_plus(int x) const thread { return k + x; }
};
struct WithEmpty : Empty {
  int x;
};
struct Two : Base, Empty {
  char last;
};
"""


@needs_gxx
def test_inherited_members_and_layouts_agree_with_gxx():
    body = """
  Derived d;
  d.a = 5; d.s = 2; d.c = 3; d.f = 4.5f;
  out[0] = d.sum();
  out[1] = d.twice();
  out[2] = sizeof(Mid) * 100 + sizeof(Derived);
  out[3] = sizeof(WithEmpty) * 100 + sizeof(Two);
  WithEmpty w; w.x = 9;
  out[4] = w.k_plus(w.x) + WithEmpty::k;
  out[5] = is_small<short>::value * 10 + is_small<float>::value;
  typename is_small<char>::value_type yes = true;
  out[6] = yes + Derived::seven();
  Two t; t.a = 11; t.s = 1; t.last = 4;
  out[7] = t.get_a() + t.k_plus(t.last);
"""
    assert agree(HEADER, body, 8) == [5 + 2 + 3 + 4 + 5 + 1005, 1005, 1216, 412, 15, 10,
                                      8, 18]


def test_a_member_no_class_in_the_hierarchy_declares_is_an_error():
    with pytest.raises(metalsim.CompileError, match="no member named 'nothing'"):
        metalsim_outputs(HEADER, "Derived d;\nd.a = 1;\nout[0] = d.nothing;", 1)


def test_a_base_that_is_not_a_class_is_an_error():
    with pytest.raises(metalsim.CompileError, match="base specifier must name a class"):
        metalsim_outputs("struct S : float {};", "out[0] = 1;", 1)


def test_virtual_bases_are_refused_with_a_clear_message():
    with pytest.raises(metalsim.CompileError, match="virtual base classes are not supported"):
        metalsim_outputs("struct B {};\nstruct S : virtual B {};", "out[0] = 1;", 1)
