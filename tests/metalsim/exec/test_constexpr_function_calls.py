"""A constexpr function called with constant arguments is a constant expression: it can
initialize a constexpr variable, size an array, or be a template argument (MLX's quantized.h:
`constexpr int pack_factor = get_pack_factor<bits, 32>();`). g++ is the oracle."""

from cxx_oracle import agree, needs_gxx

HEADER = """
template <int bits, int wsize = 8>
inline constexpr short pack_factor() {
  return (bits == 3 || bits == 5) ? 8 : (bits == 6 ? 4 : wsize / bits);
}
template <int bits, int wsize = 8>
inline constexpr short bytes_per_pack() {
  constexpr int power_of_2_bits = (bits & (bits - 1)) == 0;
  return power_of_2_bits ? (wsize / 8) : (bits == 5 ? 5 : 3);
}
constexpr int twice(int x) { return 2 * x; }
template <int N> struct Box { int v[N]; };
"""
BODY = """
  constexpr int p4 = pack_factor<4, 32>();
  constexpr int b3 = bytes_per_pack<3>();
  int arr[twice(3)] = {0};
  Box<pack_factor<6>()> box;
  out[0] = p4;
  out[1] = b3 * 10 + bytes_per_pack<8, 32>();
  out[2] = int(sizeof(arr) / sizeof(int));
  out[3] = int(sizeof(box) / sizeof(int));
  int n = out[0];
  out[4] = twice(n);   // a variable argument: an ordinary call
"""


@needs_gxx
def test_constexpr_calls_are_constant_expressions_and_agree_with_gxx():
    assert agree(HEADER, BODY, 5) == [8, 34, 6, 4, 16]
