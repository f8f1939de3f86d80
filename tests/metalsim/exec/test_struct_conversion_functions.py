"""Conversion functions (`operator T() const`): used in the implicit conversions of
initialisation, assignment, return, function arguments and built-in operators, and in casts;
`explicit` ones only in casts. MLX steel's `integral_constant` converts this way (`Int<4>{}`
used as an int). g++ is the oracle."""

import pytest
from cxx_oracle import agree, metalsim_outputs, needs_gxx

import metalsim

HEADER = """
template <typename T, T v>
struct integral_constant {
  static constexpr constant T value = v;
  using value_type = T;
  METAL_FUNC constexpr operator value_type() const thread noexcept { return value; }
};
template <int val>
using Int = integral_constant<int, val>;

struct Celsius {
  float deg;
  operator float() const thread { return deg * 1.8f + 32.0f; }
};
struct Flag {
  int bits;
  explicit operator int() const thread { return bits * 10; }
};
struct Derived : Celsius {
  int tag;
};
float half_of(float x) { return x / 2; }
int offset_of(int i, int stride) { return i * stride + 1; }
"""


@needs_gxx
def test_conversion_functions_agree_with_gxx():
    body = """
  Int<4> four;
  int a = four;
  out[0] = a + Int<3>{} * 2;
  out[1] = offset_of(Int<5>{}, four);
  Celsius c = {100.0f};
  float f = c;
  out[2] = int(f) + int(half_of(c));
  Flag g = {7};
  out[3] = static_cast<int>(g) + int(g);
  Derived d;
  d.deg = 0.0f; d.tag = 1;
  out[4] = int(float(d)) + d.tag;
  out[5] = (Int<6>{} < 7) + (Int<2>{} == 2) * 10;
  short s = Int<40000>{};
  out[6] = s;
"""
    assert agree(HEADER, body, 7) == [10, 21, 212 + 106, 140, 33, 11, 40000 - 65536]


def test_an_explicit_conversion_function_takes_no_part_in_implicit_conversions():
    with pytest.raises(metalsim.CompileError, match="cannot convert 'Flag' to 'int'"):
        metalsim_outputs(HEADER, "Flag g = {7};\nint i = g;\nout[0] = i;", 1)


def test_a_conversion_function_takes_no_parameters():
    with pytest.raises(metalsim.CompileError, match="a conversion function takes no parameters"):
        metalsim_outputs("struct S { operator int(int x) const { return x; } };", "out[0] = 1;",
                         1)
