"""Non-type template parameters whose type is an earlier parameter (`template <typename T, T v>`,
MLX steel's `integral_constant`), in struct and function templates; g++ is the oracle."""

from cxx_oracle import agree, needs_gxx

HEADER = """
template <typename T, T v>
struct constant_of {
  static constexpr constant T value = v;
};
template <typename T, T v>
T get_value() { return v + 1; }
template <typename T, int N = sizeof(T), T fill = T(N)>
struct Filled {
  static constexpr constant T value = fill * 2;
};
"""


@needs_gxx
def test_parameters_typed_by_earlier_parameters_agree_with_gxx():
    body = """
  out[0] = constant_of<short, -3>::value;
  out[1] = constant_of<unsigned char, 200>::value;
  out[2] = constant_of<bool, true>::value;
  out[3] = get_value<char, 127>();
  out[4] = get_value<int, 41>();
  out[5] = Filled<short>::value + Filled<int, 3>::value;
"""
    assert agree(HEADER, body, 6) == [-3, 200, 1, -128, 42, 10]
