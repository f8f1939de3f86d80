"""`metal::numeric_limits<T>` in kernels: the static constexpr members (`has_infinity`,
`is_signed`, `digits`, ...) and the member functions, integers' `infinity()` included, as
constant expressions (static_assert, `if constexpr`, template arguments). g++'s
`std::numeric_limits` is the oracle; misuse gets clang's messages."""

import pytest
from cxx_oracle import agree, metalsim_outputs, needs_gxx

import metalsim

pytestmark = needs_gxx

# g++ finds C++'s numeric_limits where Metal's is built in.
LIMITS = """
#ifndef __METAL_VERSION__
#include <limits>
using std::numeric_limits;
namespace metal { using std::numeric_limits; }
typedef unsigned char uchar;
typedef unsigned short ushort;
#endif
"""


def test_the_constant_members_of_integer_float_and_bool_types():
    body = """
    out[0] = numeric_limits<float>::has_infinity; out[1] = numeric_limits<int>::has_infinity;
    out[2] = numeric_limits<uint>::is_signed; out[3] = numeric_limits<char>::is_signed;
    out[4] = numeric_limits<short>::is_integer; out[5] = numeric_limits<float>::is_integer;
    out[6] = numeric_limits<float>::has_quiet_NaN; out[7] = numeric_limits<bool>::digits;
    out[8] = numeric_limits<int>::digits; out[9] = numeric_limits<uchar>::digits;
    out[10] = metal::numeric_limits<float>::digits; out[11] = numeric_limits<float>::digits10;
    out[12] = numeric_limits<float>::max_exponent10; out[13] = numeric_limits<ushort>::radix;
    out[14] = numeric_limits<float>::min_exponent; out[15] = numeric_limits<bool>::is_signed;
    """
    assert agree(LIMITS, body, 16) == [1, 0, 0, 1, 1, 0, 1, 1, 31, 8, 24, 6, 38, 2, -125, 0]


def test_an_integer_type_s_infinity_and_nan_are_zero():
    body = ("out[0] = numeric_limits<int>::infinity(); out[1] = numeric_limits<uint>::quiet_NaN();"
            " out[2] = numeric_limits<short>::epsilon(); out[3] = numeric_limits<int>::min();")
    assert agree(LIMITS, body, 4) == [0, 0, 0, -2147483648]


def test_the_members_are_constant_expressions_in_templates():
    header = LIMITS + """
    template <typename T> T biggest() {
        if constexpr (numeric_limits<T>::has_infinity) return numeric_limits<T>::infinity();
        else return numeric_limits<T>::max();
    }
    template <int N> struct Bits { static constexpr constant int value = N; };
    static_assert(numeric_limits<int>::digits == 31, "int has 31 value bits");
    template <typename T> int sign_bit() { return Bits<numeric_limits<T>::digits>::value; }
    """
    body = ("out[0] = biggest<int>(); out[1] = biggest<float>() > 3e38f;"
            " out[2] = biggest<float>() == biggest<float>() + 1.0f;"
            " out[3] = sign_bit<int>(); out[4] = sign_bit<uint>();")
    assert agree(header, body, 5) == [2147483647, 1, 1, 31, 32]


def test_half_and_bfloat_members_follow_their_formats():
    body = ("out[0] = numeric_limits<half>::digits; out[1] = numeric_limits<bfloat>::digits;"
            " out[2] = numeric_limits<half>::has_infinity;"
            " out[3] = numeric_limits<half>::is_signed;"
            " out[4] = numeric_limits<half>::max_exponent;"
            " out[5] = isinf(numeric_limits<bfloat>::infinity());")
    assert metalsim_outputs("", body, 6) == [11, 8, 1, 1, 16, 1]


@pytest.mark.parametrize("body, message, hint", [
    ("out[0] = numeric_limits<int>::digits();",
     "called object type 'const int' is not a function or function pointer", "drop the '()'"),
    ("out[0] = numeric_limits<float>::has_infinity();",
     "called object type 'const bool' is not a function or function pointer", "drop the '()'"),
    ("out[0] = numeric_limits<int>::max;",
     "reference to non-static member function 'max' must be called",
     "numeric_limits<int>::max()"),
    ("out[0] = numeric_limits<int>::is_iec;", "no member named 'is_iec' in 'numeric_limits<int>'",
     ""),
    ("out[0] = numeric_limits<float>::is_iec559;",
     "'numeric_limits<float>::is_iec559' is not supported by metalsim", "has_infinity"),
])
def test_misused_members_are_refused_with_clang_s_message(body, message, hint):
    with pytest.raises(metalsim.CompileError) as e:
        metalsim_outputs("", body, 1)
    assert e.value.diagnostic.message == message
    assert hint in e.value.diagnostic.hint
