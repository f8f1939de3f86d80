"""The tests' exact rounding oracle: a rational rounded once to float, half or bfloat."""

from __future__ import annotations

import math
from fractions import Fraction

from metalsim.lang.types import BFLOAT, FLOAT, HALF, ScalarType

FORMATS = {FLOAT: (23, -126, 127), HALF: (10, -14, 15), BFLOAT: (7, -126, 127)}


def round_exact(v: Fraction, t: ScalarType) -> float:
    """`v` rounded to nearest even in the format of `t` (as a float; inf on overflow)."""
    mant, emin, emax = FORMATS[t]
    if v == 0:
        return 0.0
    a = abs(v)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    e += 1 if a >= Fraction(2) ** (e + 1) else -1 if a < Fraction(2) ** e else 0
    quantum = Fraction(2) ** (max(e, emin) - mant)
    n, rest = divmod(a, quantum)
    if rest > quantum / 2 or (rest == quantum / 2 and n % 2 == 1):
        n += 1
    result = n * quantum
    magnitude = math.inf if result >= Fraction(2) ** (emax + 1) else float(result)
    return math.copysign(magnitude, v)
