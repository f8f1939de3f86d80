"""SFINAE in a member function template's return type: `enable_if_t<false, T>` removes the
candidate (MLX's reduction `Max::operator()` has an integral and a non-integral overload
told apart this way). g++ is the oracle."""

from cxx_oracle import gxx_outputs, metalsim_outputs, needs_gxx

GXX_TRAITS = """
#include <type_traits>
namespace metal { using std::enable_if_t; template <class T>
  constexpr bool is_integral_v = std::is_integral<T>::value; }
"""
HEADER = """
struct Pick {
  template <typename T>
  metal::enable_if_t<metal::is_integral_v<T>, T> operator()(T a, T b) thread { return a + b; }
  template <typename T>
  metal::enable_if_t<!metal::is_integral_v<T>, T> operator()(T a, T b) thread {
    return a * b;
  }
  template <typename T>
  static metal::enable_if_t<(sizeof(T) > 2), int> size(T) { return 4; }
  template <typename T>
  static metal::enable_if_t<(sizeof(T) <= 2), int> size(T) { return 2; }
};
"""
BODY = """
  Pick op;
  out[0] = op(3, 4);
  out[1] = int(op(3.0f, 4.0f));
  out[2] = Pick::size(short(1)) * 10 + Pick::size(1);
"""


@needs_gxx
def test_member_templates_whose_return_type_fails_to_substitute_are_not_candidates():
    expected = gxx_outputs(GXX_TRAITS + HEADER, BODY, 3)
    assert metalsim_outputs(HEADER, BODY, 3) == expected == [7, 12, 24]
