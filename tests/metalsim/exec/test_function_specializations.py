"""Explicit specialisations of function templates (`metalsim.exec.function_specializations`)
in the forms MLX's atomic.h writes them: primaries with an unnamed defaulted parameter
(`enable_if_t<..., bool> = true`), and what is said when none fits. g++ is the oracle."""

import pytest
from cxx_oracle import agree, metalsim_outputs, needs_gxx

import metalsim

TRAITS = """
template <bool B, typename T = void> struct en_if {};
template <typename T> struct en_if<true, T> { typedef T type; };
template <bool B, typename T = void> using en_if_t = typename en_if<B, T>::type;
template <typename T, typename U> struct same { static constexpr constant bool value = false; };
template <typename T> struct same<T, T> { static constexpr constant bool value = true; };
template <typename T>
constexpr constant bool is_ok = same<T, int>::value || same<T, float>::value;
"""


@needs_gxx
def test_a_specialisation_of_a_template_with_an_unnamed_defaulted_parameter_is_used():
    header = TRAITS + """
template <typename T, en_if_t<is_ok<T>, bool> = true> T f(T x) { return x + T(1); }
template <typename T, en_if_t<!is_ok<T>, bool> = true> T f(T x) { return x + T(2); }
template <> float f<float>(float x) { return x * 10.0f; }
template <typename T, typename = void> T g(T x) { return x + 2; }
template <> int g<int>(int x) { return x * 3; }
"""
    body = ("out[0] = f(3); out[1] = int(f(2.0f)); out[2] = f(short(5)); out[3] = g(4);\n"
            "out[4] = g<int>(5); out[5] = int(g(1.5f));")
    assert agree(header, body, 6) == [4, 20, 7, 12, 15, 3]


def test_a_template_whose_types_fail_is_named_when_no_template_matches():
    """The error met inside the only candidate's parameter types is what to fix (MLX's
    atomic.h stopped so while a struct could not hold an atomic)."""
    header = ("template <typename T> struct bad { T v[0 - 1]; };\n"
              "template <typename T> void f(device bad<T>* p) {}\n"
              "template <> void f<float>(device bad<float>* p) {}\n")
    with pytest.raises(metalsim.CompileError, match="no function template matches") as info:
        metalsim_outputs(header, "out[0] = 1;", 1)
    assert ("the template at line 2 did not fit: array size must be positive (it is -1)"
            in str(info.value))
