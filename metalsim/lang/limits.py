"""Metal's `numeric_limits<T>` (<metal_limits>): each member's value for each scalar type.

The values are those C++'s `std::numeric_limits` gives for the same formats: the integers are
two's complement of their widths, `half` is IEEE binary16 and `bfloat` has float's exponent with
8 significant bits. The member functions of an integer type give 0 where it has no such value
(`numeric_limits<int>::infinity()`), as C++'s do. The simulator's builtins and the CUDA prelude
both take the values from here.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from metalsim.lang.types import ScalarType

# The static member functions, each giving a value of the type itself.
FUNCTIONS = ("min", "max", "lowest", "epsilon", "round_error", "infinity", "quiet_NaN",
             "signaling_NaN", "denorm_min")
# The static constexpr data members: the `bool` ones, then the `int` ones.
BOOL_CONSTANTS = ("is_specialized", "is_signed", "is_integer", "is_exact", "has_infinity",
                  "has_quiet_NaN", "has_signaling_NaN", "is_bounded")
INT_CONSTANTS = ("digits", "digits10", "max_digits10", "radix", "min_exponent",
                 "min_exponent10", "max_exponent", "max_exponent10")
# C++'s other members, whose values Metal leaves to its implementation (or whose types,
# `float_denorm_style` and `float_round_style`, metalsim does not declare): refused by name.
UNMODELLED = ("is_iec559", "is_modulo", "traps", "tinyness_before", "has_denorm",
              "has_denorm_loss", "round_style")

_LOG10_2 = math.log10(2)


def limit_functions(t: ScalarType) -> dict[str, np.ndarray]:
    """What each member function of `numeric_limits<t>` returns, as a 0-d array of `t`'s
    dtype (exact bits: a signaling NaN stays signaling)."""
    if t.kind != "float":
        info = np.iinfo(t.dtype) if t.kind == "int" else None
        low, high = (info.min, info.max) if info is not None else (False, True)
        values = dict.fromkeys(FUNCTIONS, 0) | {"min": low, "lowest": low, "max": high}
        return {name: np.asarray(v, t.dtype) for name, v in values.items()}
    info = ml_dtypes.finfo(t.dtype)   # numpy's finfo knows no bfloat
    exponent_ones = ((1 << (info.bits - 1)) - 1) & ~((1 << info.nmant) - 1)
    bits = np.dtype(f"uint{info.bits}")

    def from_bits(pattern: int) -> np.ndarray:
        return np.asarray(pattern, bits).view(t.dtype)
    big = np.asarray(info.max, t.dtype)
    return {"min": np.asarray(info.smallest_normal, t.dtype), "max": big, "lowest": -big,
            "epsilon": np.asarray(info.eps, t.dtype), "round_error": np.asarray(0.5, t.dtype),
            "infinity": from_bits(exponent_ones),
            "quiet_NaN": from_bits(exponent_ones | 1 << (info.nmant - 1)),
            "signaling_NaN": from_bits(exponent_ones | 1 << (info.nmant - 2)),
            "denorm_min": np.asarray(info.smallest_subnormal, t.dtype)}


def limit_constants(t: ScalarType) -> dict[str, bool | int]:
    """The static constexpr data members of `numeric_limits<t>`."""
    floating = t.kind == "float"
    values: dict[str, bool | int] = {
        "is_specialized": True, "is_signed": t.signed, "is_integer": not floating,
        "is_exact": not floating, "has_infinity": floating, "has_quiet_NaN": floating,
        "has_signaling_NaN": floating, "is_bounded": True, "radix": 2}
    if not floating:
        digits = 1 if t.kind == "bool" else t.size * 8 - t.signed
        return values | {"digits": digits, "digits10": math.floor(digits * _LOG10_2),
                         "max_digits10": 0, "min_exponent": 0, "min_exponent10": 0,
                         "max_exponent": 0, "max_exponent10": 0}
    info = ml_dtypes.finfo(t.dtype)
    digits = info.nmant + 1
    return values | {
        "digits": digits, "digits10": math.floor((digits - 1) * _LOG10_2),
        "max_digits10": math.ceil(1 + digits * _LOG10_2),
        "min_exponent": info.minexp + 1, "max_exponent": info.maxexp,
        "min_exponent10": math.ceil(math.log10(float(info.smallest_normal))),
        "max_exponent10": math.floor(math.log10(float(info.max)))}
