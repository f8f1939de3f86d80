"""Variable templates (`template <typename T> constexpr constant bool is_x_v = ...;`), as MLX
steel's `is_integral_v` is declared, used in expressions, template arguments and SFINAE
defaults; g++ is the oracle."""

import pytest
from cxx_oracle import gxx_outputs, metalsim_outputs, needs_gxx

import metalsim

HEADER = """
template <typename T>
struct is_small { static constexpr constant bool value = sizeof(T) <= 2; };
template <typename T>
constexpr constant bool is_small_v = is_small<T>::value;
template <typename T, int N>
constexpr constant int bytes_v = sizeof(T) * N;
template <int N>
struct Holder { static constexpr constant int k = N; };
template <typename T, typename = metal::enable_if_t<is_small_v<T>>>
int pick(T x) { return 1; }
"""


@needs_gxx
def test_variable_templates_agree_with_gxx():
    body = """
  out[0] = is_small_v<short> * 10 + is_small_v<float>;
  out[1] = bytes_v<int, 3> + bytes_v<char, 5>;
  out[2] = Holder<bytes_v<short, 4>>::k;
  out[3] = pick(short(3));
"""
    header = HEADER.replace("metal::enable_if_t", "std::enable_if_t")
    expected = gxx_outputs("#include <type_traits>\n" + header, body, 4)
    assert metalsim_outputs(HEADER, body, 4) == expected == [10, 17, 8, 1]


def test_a_variable_template_needs_its_arguments():
    with pytest.raises(metalsim.CompileError,
                       match="use of variable template 'is_small_v' requires template"):
        metalsim_outputs(HEADER, "out[0] = is_small_v;", 1)


def test_sfinae_on_a_variable_template_removes_the_candidate():
    with pytest.raises(metalsim.CompileError, match="no matching function for call to 'pick'"):
        metalsim_outputs(HEADER, "out[0] = pick(1.0f);", 1)

