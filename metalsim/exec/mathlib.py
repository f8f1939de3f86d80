"""The MSL standard library's common, integer, math, relational and geometric functions.

`FUNCTIONS` maps each name to a `MathFunction`: its parameter roles, the element types it accepts,
its result rule and a vectorised implementation over lane arrays. `resolve` performs overload
resolution for a call (what the compiler needs) and `call` evaluates one.

Numerics (msl-semantics §7.5, §8): every float function is evaluated in float64 from the exact
arguments (float64 holds every half, bfloat and float exactly) and rounded once to the result type.
That makes sqrt, divide, floor/ceil/round/rint/trunc/fract, fmod, ldexp, fdim, copysign and the
selections correctly rounded or exact, and keeps the transcendentals far inside the ULP bounds of
Table 8.1 (float64 libm errs by < 1 float64 ulp). `fma` and `rsqrt` need more care; see their
implementations. The precise variants are computed; a fast variant may return anything within its
(looser) bounds, so the precise value is a faithful result for `variant="fast"` as well.

Overload resolution (simulator's rules, matching what Metal's headers accept as far as known):
- Arguments that fix the generic type `T` must agree exactly; there is no implicit vector-to-vector
  conversion, and a scalar of T's element type is splatted where T is a vector.
- Float-only functions also accept integer (and bool) scalars, which convert to the float type of
  the other arguments, or to `float` if all are integers (so `sqrt(2)` is `sqrt(2.0f)`).
- Functions with both integer and float overloads (abs, min, max, clamp, ...) need identical
  argument types: `max(int, uint)` is an error in Metal, as is mixing half and float.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import ml_dtypes
import numpy as np

from metalsim.exec.arith import round_from_float64, unsigned_dtype
from metalsim.lang.types import (
    BFLOAT,
    BOOL,
    CHAR,
    FLOAT,
    HALF,
    INT,
    LONG,
    SHORT,
    UCHAR,
    UINT,
    ULONG,
    USHORT,
    ScalarType,
    Type,
    VectorType,
    bool_like,
    scalar_of,
    with_elem,
)

FLOATS = frozenset({HALF, BFLOAT, FLOAT})
INTEGERS = frozenset({CHAR, UCHAR, SHORT, USHORT, INT, UINT, LONG, ULONG})
INT32 = frozenset({INT, UINT})
BOOLS = frozenset({BOOL})
NUMBERS = FLOATS | INTEGERS

Impl = Callable[[list[np.ndarray], list[Type], Type], np.ndarray]


class _NoMatch(Exception):
    """Overload resolution failed; the message is a hint for the user."""


@dataclass(frozen=True)
class MathFunction:
    """One built-in function (all its overloads).

    `params` gives each parameter's role: "T" the generic scalar-or-vector type, "Ti" an int (or
    intN matching T), "u" a uint scalar, "Tb" a bool (or boolN matching T), "Ts" T's element type.
    `elems` are the element types T may have. `result` is "T", "Tb" (bool/boolN like T), "Ts"
    (T's element type), "Tu" (T with its element made unsigned) or "bool". `vector` is None when T
    may be scalar or vector, 0 when it must be a vector, and n when it must have n components.
    """

    name: str
    params: tuple[str, ...]
    elems: frozenset[ScalarType]
    result: str
    impl: Impl
    vector: int | None = None

    @property
    def arity(self) -> int:
        return len(self.params)

    def resolve(self, arg_types: list[Type]) -> tuple[list[Type], Type]:
        """(parameter types to convert the arguments to, result type); LookupError if none."""
        try:
            if len(arg_types) != self.arity:
                raise _NoMatch(f"'{self.name}' takes {self.arity} argument(s)")
            t = self._generic([a for a, r in zip(arg_types, self.params) if r == "T"])
            params = [self._param(role, a, t) for role, a in zip(self.params, arg_types)]
        except _NoMatch as e:
            call = f"{self.name}({', '.join(str(a) for a in arg_types)})"
            hint = f"; {e}" if str(e) else ""
            raise LookupError(f"no matching function for call to '{call}'{hint}") from None
        return params, self._result(t)

    def _generic(self, args: list[Type]) -> Type:
        if not all(isinstance(a, ScalarType | VectorType) for a in args):
            raise _NoMatch("")
        widths = {a.n for a in args if isinstance(a, VectorType)}
        if len(widths) > 1:
            raise _NoMatch("vector arguments have different lengths")
        elems = [scalar_of(a) for a in args]
        if self.elems <= FLOATS:
            floats = {e for e in elems if e.kind == "float"}
            if len(floats) > 1:
                raise _NoMatch("arguments of different floating-point types; cast one argument")
            elem = floats.pop() if floats else FLOAT
            if any(isinstance(a, VectorType) and a.elem != elem for a in args):
                raise _NoMatch("no implicit conversion between vector types")
        else:
            if len(set(elems)) > 1:
                raise _NoMatch("cast one argument")
            elem = elems[0]
        if elem not in self.elems:
            raise _NoMatch(f"'{self.name}' does not accept '{elem}'")
        if not widths:
            if self.vector is not None:
                raise _NoMatch(f"'{self.name}' needs vector arguments")
            return elem
        n = widths.pop()
        if self.vector and n != self.vector:
            raise _NoMatch(f"'{self.name}' needs {self.vector}-component vectors")
        return VectorType(elem, n)

    def _param(self, role: str, arg: Type, t: Type) -> Type:
        if role == "T":
            return t
        if not isinstance(arg, ScalarType | VectorType):
            raise _NoMatch("")
        if isinstance(arg, VectorType) and not (
                isinstance(t, VectorType) and arg.n == t.n and role in ("Ti", "Tb")):
            raise _NoMatch(f"unexpected vector argument '{arg}'")
        if role == "Ti":
            if scalar_of(arg) not in INTEGERS | BOOLS or (
                    isinstance(arg, VectorType) and arg.elem != INT):
                raise _NoMatch(f"the exponent must be int, not '{arg}'")
            return with_elem(t, INT)
        if role == "Tb":
            if isinstance(t, VectorType) and arg != VectorType(BOOL, t.n):
                raise _NoMatch(f"the condition must be '{bool_like(t)}'")
            return bool_like(t)
        if role == "u":
            if arg.kind == "float":
                raise _NoMatch(f"expected an integer, not '{arg}'")
            return UINT
        if arg.kind == "float" and arg != scalar_of(t):          # role "Ts"
            raise _NoMatch(f"expected '{scalar_of(t)}', not '{arg}'")
        return scalar_of(t)

    def _result(self, t: Type) -> Type:
        if self.result == "Tb":
            return bool_like(t)
        if self.result == "Ts":
            return scalar_of(t)
        if self.result == "Tu":
            return with_elem(t, ScalarType.__new__(ScalarType) if False else _unsigned_type(t))
        if self.result == "bool":
            return BOOL
        return t


def _unsigned_type(t: Type) -> ScalarType:
    e = scalar_of(t)
    return {CHAR: UCHAR, SHORT: USHORT, INT: UINT, LONG: ULONG}.get(e, e)
