"""`decltype(e)` as a type (also `decltype(x)::k`) and functions whose return type is `auto`,
deduced from their return statements, as MLX steel's integral_constant operators and BlockMMA
use them; g++ is the oracle."""

import pytest
from cxx_oracle import gxx_outputs, metalsim_outputs, needs_gxx

import metalsim

HEADER = """
template <typename T, T v>
struct integral_constant {
  static constexpr constant T value = v;
  METAL_FUNC constexpr operator T() const thread noexcept { return value; }
};
template <typename T, T tv, typename U, U uv>
METAL_FUNC constexpr auto operator+(integral_constant<T, tv>, integral_constant<U, uv>) {
  constexpr auto res = tv + uv;
  using res_t = metal::remove_addrspace_t<decltype(res)>;
  return integral_constant<res_t, res>{};
}
struct Tile {
  static constexpr constant int kElems = 6;
  float v[kElems];
};
template <typename T>
auto twice(T x) { return x + x; }
auto nothing() { return; }
"""


@needs_gxx
def test_decltype_and_auto_return_types_agree_with_gxx():
    body = """
  auto s = integral_constant<int, 3>{} + integral_constant<short, 4>{};
  out[0] = decltype(s)::value;
  out[1] = sizeof(decltype(integral_constant<char, 1>{} + integral_constant<char, 1>{})::value);
  Tile t;
  out[2] = decltype(t)::kElems + sizeof(decltype(t.v[0]));
  decltype(twice(short(2))) w = twice(short(20000));
  out[3] = w;
  out[4] = sizeof(twice(1.5f)) * 10 + sizeof(twice(char(1)));
  nothing();
  int i = s;
  out[5] = i;
"""
    cxx = HEADER.replace("metal::remove_addrspace_t<decltype(res)>",
                         "std::remove_cv_t<decltype(res)>")
    assert gxx_outputs("#include <type_traits>\n" + cxx, body, 6) == metalsim_outputs(
        HEADER, body, 6) == [7, 4, 10, 40000, 44, 7]


def test_return_statements_deducing_different_types_are_an_error():
    header = "auto f(int x) { if (x > 0) return 1; return 2.0f; }"
    with pytest.raises(metalsim.CompileError, match="'auto' in return type deduced as 'float' "
                                                    "here but deduced as 'int'"):
        metalsim_outputs(header, "out[0] = f(1);", 1)
