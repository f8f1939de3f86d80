"""Metal's `integral_constant` / `bool_constant` / `true_type` / `false_type`, clang's
`__is_empty`, overloaded `&&` / `||` (both operands evaluated, as C++ does for class
operands), `S<T>::value` as a template argument, and variadic templates refused with a precise
error: what MLX steel's type_traits.h and integral_constant.h need. g++ is the oracle."""

import pytest
from cxx_oracle import gxx_outputs, metalsim_outputs, needs_gxx

import metalsim

# g++ spells Metal's <metal_type_traits> as <type_traits>.
GXX = ("#include <type_traits>\nnamespace metal = std;\n"
       "#define __is_empty(T) std::is_empty<T>::value\n")

HEADER = """
struct Nothing {};
struct Something { int x; };
struct DerivedNothing : Nothing {};
template <typename T>
struct is_empty_class : metal::bool_constant<__is_empty(T)> {};
template <typename T>
struct is_small : metal::bool_constant<(sizeof(T) <= 2)> {};
template <typename T>
struct both : metal::bool_constant<is_small<T>::value && is_empty_class<T>::value> {};
struct Flag {
  bool on;
};
inline bool operator&&(Flag a, Flag b) { return a.on && b.on; }
inline int operator||(Flag a, int b) { return a.on ? 10 : b; }
"""


@needs_gxx
def test_integral_constants_traits_and_overloaded_logical_operators_agree_with_gxx():
    body = """
  out[0] = metal::true_type::value * 10 + metal::false_type::value;
  out[1] = metal::integral_constant<int, 7>::value + metal::integral_constant<short, 3>{};
  out[2] = is_empty_class<Nothing>::value * 100 + is_empty_class<Something>::value * 10
           + is_empty_class<DerivedNothing>::value;
  out[3] = is_small<char>::value * 10 + is_small<int>::value + both<Nothing>::value * 100;
  Flag t = {true}, f = {false};
  out[4] = (t && t) * 100 + (t && f) * 10 + (f || 3);
  int evaluated = 0;
  Flag g = {(evaluated += 1) > 5};
  out[5] = (g || (evaluated += 2)) + evaluated * 100;
  out[6] = metal::bool_constant<true>::type::value + sizeof(metal::true_type::value_type);
"""
    expected = gxx_outputs(GXX + HEADER, body, 7)
    assert metalsim_outputs(HEADER, body, 7) == expected == [10, 10, 101, 110, 103, 303, 2]


def test_a_program_may_define_its_own_integral_constant_as_mlx_steel_does():
    header = """
namespace mine {
template <typename T, T v>
struct integral_constant {
  static constexpr constant T value = v * 2;
};
template <bool B>
using bool_constant = integral_constant<bool, B>;
}
using namespace mine;
"""
    assert metalsim_outputs(header, "out[0] = integral_constant<int, 4>::value;", 1) == [8]


def test_instantiating_a_variadic_template_is_a_precise_error():
    header = """
template <typename... Ts>
struct make_void { typedef void type; };
template <typename T, typename... Us>
int count(T x, Us... us) { return 1 + count(us...); }
"""
    with pytest.raises(metalsim.CompileError, match="variadic templates are not supported by "
                                                    "metalsim: 'make_void' has the parameter "
                                                    "pack 'Ts'"):
        metalsim_outputs(header, "make_void<int, float> m;\nout[0] = 1;", 1)
    with pytest.raises(metalsim.CompileError, match="variadic templates are not supported"):
        metalsim_outputs(header, "out[0] = count(1, 2);", 1)
    assert metalsim_outputs(header, "out[0] = 5;", 1) == [5]  # declaring them is fine
