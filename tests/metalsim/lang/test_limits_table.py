"""Metal's `numeric_limits<T>` members (`metalsim.lang.limits`): for the types C++ shares with
Metal, every constant and the bits of every function's value are g++'s `std::numeric_limits`;
`half` and `bfloat` are checked against the facts of their formats (IEEE binary16; float's
exponent with 8 significant bits)."""

import shutil
import subprocess

import numpy as np
import pytest

from metalsim.lang import limits
from metalsim.lang import types as ty

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

# Metal's scalar types and their C++ spellings (Metal's `char` is signed, `long` 64 bits).
SHARED = {ty.BOOL: "bool", ty.CHAR: "signed char", ty.UCHAR: "unsigned char",
          ty.SHORT: "short", ty.USHORT: "unsigned short", ty.INT: "int", ty.UINT: "unsigned",
          ty.LONG: "long", ty.ULONG: "unsigned long", ty.FLOAT: "float"}
MEMBERS = limits.BOOL_CONSTANTS + limits.INT_CONSTANTS


def _bits(value: np.ndarray) -> int:
    return int(value.view(f"uint{value.dtype.itemsize * 8}"))


@pytest.fixture(scope="module")
def gxx_limits(tmp_path_factory):
    """Each shared type's constants and function values' bits, as g++ prints them."""
    lines = ["#include <cstdio>", "#include <cstring>", "#include <limits>",
             "template <class T> unsigned long long bits(T v) {",
             "  unsigned long long b = 0; std::memcpy(&b, &v, sizeof v); return b; }",
             "int main() {"]
    for cxx in SHARED.values():
        for m in MEMBERS:
            lines.append(f'  std::printf("%lld\\n", (long long)std::numeric_limits<{cxx}>::{m});')
        for f in limits.FUNCTIONS:
            lines.append(f'  std::printf("%llu\\n", bits(std::numeric_limits<{cxx}>::{f}()));')
    lines.append("}")
    tmp = tmp_path_factory.mktemp("limits")
    (tmp / "t.cpp").write_text("\n".join(lines))
    subprocess.run(["g++", "-std=c++17", "-o", str(tmp / "t"), str(tmp / "t.cpp")], check=True)
    printed = iter(subprocess.run([str(tmp / "t")], check=True, capture_output=True,
                                  text=True).stdout.split())
    return {t: ({m: int(next(printed)) for m in MEMBERS},
                {f: int(next(printed)) for f in limits.FUNCTIONS}) for t in SHARED}


@needs_gxx
@pytest.mark.parametrize("t", list(SHARED), ids=str)
def test_the_constants_of_a_type_cxx_shares_are_gxx_s(t, gxx_limits):
    ours = limits.limit_constants(t)
    assert {m: int(ours[m]) for m in MEMBERS} == gxx_limits[t][0]
    assert all(isinstance(ours[m], bool) for m in limits.BOOL_CONSTANTS)


@needs_gxx
@pytest.mark.parametrize("t", list(SHARED), ids=str)
def test_the_function_values_of_a_type_cxx_shares_are_gxx_s_bit_for_bit(t, gxx_limits):
    ours = limits.limit_functions(t)
    assert {f: _bits(ours[f]) for f in limits.FUNCTIONS} == gxx_limits[t][1]
    assert all(v.dtype == t.dtype for v in ours.values())


def test_integer_types_give_zero_for_infinity_and_nan():
    values = limits.limit_functions(ty.INT)
    assert [int(values[f]) for f in ("infinity", "quiet_NaN", "signaling_NaN", "denorm_min",
                                     "epsilon", "round_error")] == [0] * 6


# IEEE 754 binary16 and bfloat16 (1 sign, 8 exponent, 7 stored significand bits).
HALF_AND_BFLOAT = [
    (ty.HALF, {"digits": 11, "digits10": 3, "max_digits10": 5, "min_exponent": -13,
               "min_exponent10": -4, "max_exponent": 16, "max_exponent10": 4},
     {"min": 0x0400, "max": 0x7bff, "lowest": 0xfbff, "epsilon": 0x1400, "round_error": 0x3800,
      "infinity": 0x7c00, "quiet_NaN": 0x7e00, "signaling_NaN": 0x7d00, "denorm_min": 0x0001}),
    (ty.BFLOAT, {"digits": 8, "digits10": 2, "max_digits10": 4, "min_exponent": -125,
                 "min_exponent10": -37, "max_exponent": 128, "max_exponent10": 38},
     {"min": 0x0080, "max": 0x7f7f, "lowest": 0xff7f, "epsilon": 0x3c00, "round_error": 0x3f00,
      "infinity": 0x7f80, "quiet_NaN": 0x7fc0, "signaling_NaN": 0x7fa0, "denorm_min": 0x0001}),
]


@pytest.mark.parametrize("t, constants, bits", HALF_AND_BFLOAT, ids=["half", "bfloat"])
def test_half_and_bfloat_limits_are_those_of_their_formats(t, constants, bits):
    ours = limits.limit_constants(t)
    assert {m: ours[m] for m in constants} == constants
    assert {m: ours[m] for m in limits.BOOL_CONSTANTS} == {
        "is_specialized": True, "is_signed": True, "is_integer": False, "is_exact": False,
        "has_infinity": True, "has_quiet_NaN": True, "has_signaling_NaN": True,
        "is_bounded": True}
    assert ours["radix"] == 2
    values = limits.limit_functions(t)
    assert {f: _bits(values[f]) for f in limits.FUNCTIONS} == bits
