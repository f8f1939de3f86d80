"""The MSL standard library's common, integer, math, relational and geometric functions.

`FUNCTIONS` maps each name to a `MathFunction`: its parameter roles, the element types it accepts,
its result rule and a vectorised implementation over lane arrays. `resolve` performs overload
resolution for a call (what the compiler needs) and `call` evaluates one.

Numerics (msl-semantics §7.5, §8): every float function is evaluated in float64 from the exact
arguments (float64 holds every half, bfloat and float exactly) and rounded once to the result type.
That makes sqrt, divide, floor/ceil/round/rint/trunc/fract, fmod, ldexp, fdim, copysign and the
selections correctly rounded or exact, and keeps the transcendentals far inside the ULP bounds of
Table 8.1 (float64 libm errs by < 1 float64 ulp). `fma` needs more care and `rsqrt` was verified
exhaustively; see their definitions. Only precise variants are computed: a fast variant may return
anything within its (looser) bounds, so the precise value is faithful for `variant="fast"` too.

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

import ml_dtypes
import numpy as np

from metalsim.exec import arith
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
    (T's element type), "Tu" (T with its element made unsigned), "Tint" (T with int elements) or
    "bool". `vector` is None when T
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
            return with_elem(t, _UNSIGNED_TYPES.get(scalar_of(t), scalar_of(t)))
        if self.result == "bool":
            return BOOL
        if self.result == "Tint":
            return with_elem(t, INT)
        return t


_UNSIGNED_TYPES = {CHAR: UCHAR, SHORT: USHORT, INT: UINT, LONG: ULONG}


# --- Helpers -------------------------------------------------------------------------------------

def _f64(x: np.ndarray) -> np.ndarray:
    """The values as float64 (exact for every MSL float and for integers below 2**53)."""
    return np.asarray(x).astype(np.float64)


def _rounded(x: np.ndarray, t: Type) -> np.ndarray:
    return round_from_float64(x, scalar_of(t).dtype)


def _float_fn(fn: Callable[..., np.ndarray]) -> Impl:
    """Evaluate `fn` on the float64 arguments and round once to the result type."""
    def impl(args: list[np.ndarray], params: list[Type], result: Type) -> np.ndarray:
        return _rounded(fn(*[_f64(a) for a in args]), result)
    return impl


def _predicate(fn: Callable[..., np.ndarray]) -> Impl:
    """A bool-valued function of the float64 arguments."""
    return lambda args, params, result: fn(*[_f64(a) for a in args])


def _fmin(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """MSL fmin: y if y < x else x, and the other operand if one is NaN (keeps x's exact bits)."""
    xf, yf = _f64(x), _f64(y)
    return np.where((yf < xf) | np.isnan(xf), y, x)


def _fmax(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """MSL fmax: y if x < y else x, and the other operand if one is NaN."""
    xf, yf = _f64(x), _f64(y)
    return np.where((xf < yf) | np.isnan(xf), y, x)


def _min_max(params: list[Type]) -> tuple[Callable, Callable]:
    """The min and max of the overload's element kind (integer or float rules)."""
    if scalar_of(params[0]).kind == "float":
        return _fmin, _fmax
    return np.minimum, np.maximum


def _uint(x: np.ndarray) -> np.ndarray:
    """The same bits as the unsigned type of equal width (two's complement)."""
    return x.astype(unsigned_dtype(x.dtype))


def _width(x: np.ndarray) -> int:
    return 8 * x.dtype.itemsize


# --- Common and math functions (float) -----------------------------------------------------------

def _clamp(args: list[np.ndarray], params: list[Type], result: Type) -> np.ndarray:
    lo, hi = _min_max(params)
    return lo(hi(args[0], args[1]), args[2])


def _saturate(args: list[np.ndarray], params: list[Type], result: Type) -> np.ndarray:
    dtype = scalar_of(result).dtype
    return _fmin(_fmax(args[0], np.zeros((), dtype)), np.ones((), dtype))


def _sign(x: np.ndarray) -> np.ndarray:
    """±1, keeping ±0; NaN gives 0."""
    return np.where(x > 0, 1.0, np.where(x < 0, -1.0, np.where(np.isnan(x), 0.0, x)))


def _smoothstep(e0: np.ndarray, e1: np.ndarray, x: np.ndarray) -> np.ndarray:
    t = np.clip((x - e0) / (e1 - e0), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def _round_half_away(x: np.ndarray) -> np.ndarray:
    """Round to integral, ties away from zero (C round); keeps the sign of zero."""
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.copysign(1.0, x), t)


def _fract(args: list[np.ndarray], params: list[Type], result: Type) -> np.ndarray:
    """x - floor(x), kept below 1 (a tiny negative x would otherwise round up to 1).

    fract(±inf) is unspecified; the simulator's choice is +0, the fractional part C's modf gives.
    """
    x = _f64(args[0])
    below_one = 1.0 - float(ml_dtypes.finfo(scalar_of(result).dtype).eps) / 2
    f = np.minimum(x - np.floor(x), below_one)
    return _rounded(np.where(np.isinf(x), 0.0, f), result)


def _sincospi(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sin(πx) and cos(πx) with exact argument reduction and IEEE 754 signs of zero.

    x = n/2 + r with |r| <= 1/4, exactly in float64 for every MSL float; the quadrant n mod 4 then
    selects ±sin(πr) or ±cos(πr), so integers and half-integers give exact zeros.
    """
    n = np.rint(2.0 * x)
    r = np.pi * (x - n / 2.0)
    s, c = np.sin(r), np.cos(r)
    quadrant = [np.mod(n, 4.0) == q for q in (0.0, 1.0, 2.0)]
    sin = np.select(quadrant, [s, c, -s], -c)
    cos = np.select(quadrant, [c, -s, -c], s)
    # sinpi(±n) = ±0 and cospi(n + 1/2) = +0 (IEEE 754-2008 §9.2.1).
    return np.where(sin == 0, np.copysign(0.0, x), sin), np.where(cos == 0, 0.0, cos)


def _powr(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """pow for x >= 0 with powr's special cases (as exp2(y*log2(x))): NaN for x < 0, 0**0,
    inf**0, 1**inf and any NaN operand; a zero base acts as +0."""
    invalid = ((x < 0) | np.isnan(x) | np.isnan(y) | ((x == 0) & (y == 0))
               | (np.isinf(x) & (y == 0)) | ((x == 1) & np.isinf(y)))
    return np.where(invalid, np.nan, np.power(np.abs(x), y))


def _fdim(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(x > y, x - y, np.where(np.isnan(x) | np.isnan(y), np.nan, 0.0))


def _fma(args: list[np.ndarray], params: list[Type], result: Type) -> np.ndarray:
    """a*b + c with a single rounding.

    The product of two MSL floats is exact in float64 (<= 48 bits). The sum is not, and rounding
    it to float64 and then to the type could round twice. TwoSum (Knuth) gives the exact error of
    the float64 sum; from it the sum is rounded to *odd* (take the neighbour toward the exact value
    when the rounded sum's last bit is even), and round-to-odd at 53 bits followed by one
    round-to-nearest-even to <= 24 bits is a correct single rounding (Boldo & Melquiond, 2008).
    """
    a, b, c = (_f64(v) for v in args)
    p = a * b
    s = p + c
    bb = s - p
    err = (p - (s - bb)) + (c - bb)
    even = (np.asarray(s).view(np.uint64) & np.uint64(1)) == 0
    fix = (err != 0) & np.isfinite(s) & even
    s = np.where(fix, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)
    return _rounded(s, result)


def _ldexp(args: list[np.ndarray], params: list[Type], result: Type) -> np.ndarray:
    # Exact in float64 for every result that is finite and non-zero in the type.
    return _rounded(np.ldexp(_f64(args[0]), args[1].astype(np.int32)), result)


def _nextafter(args: list[np.ndarray], params: list[Type], result: Type) -> np.ndarray:
    """The next value of x's own type toward y (y if equal; NaN if either is NaN)."""
    x, y = np.broadcast_arrays(*args)
    xf, yf = _f64(x), _f64(y)
    u = unsigned_dtype(x.dtype)
    bits = np.array(x).view(u)       # a contiguous copy (0-d stays 0-d)
    away_from_zero = (yf > xf) == (xf > 0)
    stepped = np.where(away_from_zero, bits + u.type(1), bits - u.type(1))
    smallest = np.where(yf > 0, u.type(1), u.type(1 | 1 << (_width(x) - 1)))
    out = np.where(xf == 0, smallest, stepped).astype(u).view(x.dtype)
    out = np.where((xf == yf) | np.isnan(yf), y, out)
    return np.where(np.isnan(xf), x, out)


def _isnormal(args: list[np.ndarray], params: list[Type], result: Type) -> np.ndarray:
    tiny = float(ml_dtypes.finfo(scalar_of(params[0]).dtype).tiny)
    x = np.abs(_f64(args[0]))
    return np.isfinite(x) & (x >= tiny)


# --- Geometric functions (float vectors; reduced along the last axis) ----------------------------

# ilogb of 0 and of NaN, and of an infinity: FP_ILOGB0, FP_ILOGBNAN and INT_MAX as in C's
# <math.h> on the usual targets (MSL names the constants without giving values we could confirm).
_FP_ILOGB0 = _FP_ILOGBNAN = np.iinfo(np.int32).min


def _ilogb(x: np.ndarray) -> np.ndarray:
    """The unbiased exponent of x as an int (subnormals give their true exponent)."""
    x = _f64(x)
    e = np.frexp(x)[1].astype(np.int64) - 1
    e = np.where(x == 0, _FP_ILOGB0, e)
    e = np.where(np.isinf(x), np.iinfo(np.int32).max, e)
    return np.where(np.isnan(x), _FP_ILOGBNAN, e).astype(np.int32)


def _dot(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.sum(x * y, axis=-1)


def _length(x: np.ndarray) -> np.ndarray:
    return np.sqrt(_dot(x, x))


def _cross(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.stack([x[..., 1] * y[..., 2] - x[..., 2] * y[..., 1],
                     x[..., 2] * y[..., 0] - x[..., 0] * y[..., 2],
                     x[..., 0] * y[..., 1] - x[..., 1] * y[..., 0]], axis=-1)


def _refract(i: np.ndarray, n: np.ndarray, eta: np.ndarray) -> np.ndarray:
    eta = eta[..., None]
    d = _dot(n, i)[..., None]
    k = 1.0 - eta * eta * (1.0 - d * d)
    return np.where(k < 0, 0.0, eta * i - (eta * d + np.sqrt(k)) * n)


# --- Integer functions ---------------------------------------------------------------------------

def _abs(args: list[np.ndarray], params: list[Type], result: Type) -> np.ndarray:
    if scalar_of(result).kind == "float":
        return _rounded(np.abs(_f64(args[0])), result)
    # abs(INT_MIN) is unconfirmed in MSL; the simulator's choice is the two's complement wrap.
    return np.abs(args[0])


def _clz(args: list[np.ndarray], params: list[Type], result: Type) -> np.ndarray:
    x = args[0]
    v, shift = _uint(x), 1
    while shift < _width(x):   # smear the highest set bit into every lower position
        v = v | (v >> shift)
        shift *= 2
    return (_width(x) - np.bitwise_count(v).astype(np.int64)).astype(x.dtype)


def _ctz(args: list[np.ndarray], params: list[Type], result: Type) -> np.ndarray:
    v = _uint(args[0])
    below_lowest_set = (v & (~v + 1)) - 1     # all ones (width bits) for zero
    return np.bitwise_count(below_lowest_set).astype(args[0].dtype)


def _popcount(args: list[np.ndarray], params: list[Type], result: Type) -> np.ndarray:
    # bitwise_count counts the bits of |x| for signed types, so count the unsigned bits instead.
    return np.bitwise_count(_uint(args[0])).astype(args[0].dtype)


_REVERSE_STEPS = tuple((np.uint64(s), np.uint64(m)) for s, m in (
    (1, 0x5555_5555_5555_5555), (2, 0x3333_3333_3333_3333), (4, 0x0F0F_0F0F_0F0F_0F0F),
    (8, 0x00FF_00FF_00FF_00FF), (16, 0x0000_FFFF_0000_FFFF), (32, 0x0000_0000_FFFF_FFFF)))


def _reverse_bits(args: list[np.ndarray], params: list[Type], result: Type) -> np.ndarray:
    x = args[0]
    v = _uint(x).astype(np.uint64)
    for shift, mask in _REVERSE_STEPS:
        v = ((v >> shift) & mask) | ((v & mask) << shift)
    return (v >> np.uint64(64 - _width(x))).astype(unsigned_dtype(x.dtype)).astype(x.dtype)


def _mulhi_u64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """High 64 bits of the 128-bit product of uint64 arrays, from 32-bit limbs."""
    low32, s32 = np.uint64(0xFFFF_FFFF), np.uint64(32)
    a0, a1, b0, b1 = a & low32, a >> s32, b & low32, b >> s32
    mid = ((a0 * b0) >> s32) + ((a1 * b0) & low32) + a0 * b1    # < 2**64: cannot wrap
    return a1 * b1 + ((a1 * b0) >> s32) + (mid >> s32)


def _mulhi(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    w = _width(a)
    if w < 64:
        wide = np.int64 if a.dtype.kind == "i" else np.uint64
        return ((a.astype(wide) * b.astype(wide)) >> w).astype(a.dtype)
    ua, ub = a.astype(np.uint64), b.astype(np.uint64)
    high = _mulhi_u64(ua, ub)
    if a.dtype.kind == "i":
        # signed(a) = a - 2**64 [a < 0], so the signed high word subtracts the other operand.
        zero = np.uint64(0)
        high = high - np.where(a < 0, ub, zero) - np.where(b < 0, ua, zero)
    return high.astype(a.dtype)


def _rotate(args: list[np.ndarray], params: list[Type], result: Type) -> np.ndarray:
    v, i = args
    w = _width(v)
    u = _uint(v)
    s = (i & (w - 1)).astype(u.dtype)          # a rotation count is taken modulo the width
    return ((u << s) | (u >> ((w - s) & (w - 1)))).astype(v.dtype)


def _absdiff(args: list[np.ndarray], params: list[Type], result: Type) -> np.ndarray:
    x, y = args
    ux, uy = _uint(x), _uint(y)
    return np.where(x > y, ux - uy, uy - ux)   # the wrapped difference is exact: |x-y| < 2**bits


def _saturating(x: np.ndarray, y: np.ndarray, subtract: bool) -> np.ndarray:
    """x ± y clamped to the type's range, via the wrapped result and an overflow test."""
    info = np.iinfo(x.dtype)
    ux, uy = _uint(x), _uint(y)
    wrapped = (ux - uy if subtract else ux + uy).astype(x.dtype)
    if x.dtype.kind == "u":
        overflow = (x < y) if subtract else (wrapped < x)
        return np.where(overflow, x.dtype.type(0 if subtract else info.max), wrapped)
    operands_agree = (x < 0) != (y < 0) if subtract else (x < 0) == (y < 0)
    overflow = operands_agree & ((wrapped < 0) != (x < 0))
    limit = np.where(x < 0, x.dtype.type(info.min), x.dtype.type(info.max))
    return np.where(overflow, limit, wrapped)


def _madsat(args: list[np.ndarray], params: list[Type], result: Type) -> np.ndarray:
    # Python integers (object arrays) hold the exact 128-bit value before saturation.
    a, b, c = (np.asarray(v).astype(object) for v in args)
    info = np.iinfo(args[0].dtype)
    return np.clip(a * b + c, int(info.min), int(info.max)).astype(args[0].dtype)


def _hadd(x: np.ndarray, y: np.ndarray, rounding: bool) -> np.ndarray:
    """(x + y [+ 1]) >> 1 without the intermediate overflowing."""
    carry = (x | y) & 1 if rounding else x & y & 1
    return (x >> 1) + (y >> 1) + carry


def _extract_bits(args: list[np.ndarray], params: list[Type], result: Type) -> np.ndarray:
    """Bits [offset, offset+bits) moved down; sign-extended for signed types, 0 if bits == 0."""
    x, offset, bits = args
    w = _width(x)
    off, n = offset.astype(np.int64), bits.astype(np.int64)
    # Counts past the width are undefined in MSL; clipping keeps them meaningful to numpy.
    left = np.clip(w - off - n, 0, w - 1).astype(unsigned_dtype(x.dtype))
    right = np.clip(w - n, 0, w - 1).astype(x.dtype)
    field = (_uint(x) << left).astype(x.dtype) >> right
    return np.where(n == 0, x.dtype.type(0), field)


def _insert_bits(args: list[np.ndarray], params: list[Type], result: Type) -> np.ndarray:
    base, insert, offset, bits = args
    n, off = bits.astype(np.uint64), offset.astype(np.uint64)
    one = np.uint64(1)
    ones = np.where(n >= 64, np.uint64(2**64 - 1), (one << np.minimum(n, np.uint64(63))) - one)
    mask = ones << off
    b, i = _uint(base).astype(np.uint64), _uint(insert).astype(np.uint64)
    merged = (b & ~mask) | ((i << off) & mask)
    return merged.astype(unsigned_dtype(base.dtype)).astype(base.dtype)


# --- Relational functions ------------------------------------------------------------------------

def _reduce(fn: Callable) -> Impl:
    """all/any: a bool vector reduced over its components; a scalar bool is its own answer."""
    def impl(args: list[np.ndarray], params: list[Type], result: Type) -> np.ndarray:
        x = args[0]
        return fn(x, axis=-1) if isinstance(params[0], VectorType) else x.copy()
    return impl


# --- The registry --------------------------------------------------------------------------------

FUNCTIONS: dict[str, MathFunction] = {}


def _define(names: str, params: str, elems: frozenset[ScalarType], result: str, impl: Impl,
            vector: int | None = None) -> None:
    for name in names.split():
        FUNCTIONS[name] = MathFunction(name, tuple(params.split()), elems, result, impl, vector)


_UNARY_F64 = {
    "exp": np.exp, "exp2": np.exp2, "exp10": lambda x: np.power(10.0, x), "log": np.log,
    "log2": np.log2, "log10": np.log10, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh,
    "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh,
    "atanh": np.arctanh, "sinpi": lambda x: _sincospi(x)[0], "cospi": lambda x: _sincospi(x)[1],
    "tanpi": lambda x: np.divide(*_sincospi(x)), "floor": np.floor, "ceil": np.ceil,
    "round": _round_half_away, "rint": np.rint, "trunc": np.trunc, "fabs": np.abs,
    "sign": _sign,
}
_BINARY_F64 = {
    "pow": np.power, "powr": _powr, "atan2": np.arctan2, "fmod": np.fmod,
    "copysign": np.copysign, "fdim": _fdim, "divide": np.divide,
    "step": lambda edge, x: np.where(x < edge, 0.0, 1.0),
}
for _name, _fn in _UNARY_F64.items():
    _define(_name, "T", FLOATS, "T", _float_fn(_fn))
for _name, _fn in _BINARY_F64.items():
    _define(_name, "T T", FLOATS, "T", _float_fn(_fn))

# Common functions.
_define("clamp", "T T T", NUMBERS, "T", _clamp)
_define("mix", "T T T", FLOATS, "T", _float_fn(lambda x, y, a: x + (y - x) * a))
_define("saturate", "T", FLOATS, "T", _saturate)
_define("smoothstep", "T T T", FLOATS, "T", _float_fn(_smoothstep))

# Math functions with special care.
# 1/sqrt(x) rounded twice in float64 errs by < 2**-51; that this still rounds correctly to the type
# was verified exhaustively: every float32 in [1, 4) (other binades scale by powers of 4 and round
# identically; subnormals included), every half and every bfloat.
_define("rsqrt", "T", FLOATS, "T", _float_fn(lambda x: 1.0 / np.sqrt(x)))
_define("fract", "T", FLOATS, "T", _fract)
_define("fma", "T T T", FLOATS, "T", _fma)
_define("ldexp", "T Ti", FLOATS, "T", _ldexp)
_define("nextafter", "T T", FLOATS, "T", _nextafter)

_define("ilogb", "T", FLOATS, "Tint", lambda a, p, r: _ilogb(a[0]))
# frexp's two results, for the prelude's `frexp(x, thread int& exponent)`.
_define("__frexp_mantissa", "T", FLOATS, "T", _float_fn(lambda x: np.frexp(x)[0]))
_define("__frexp_exponent", "T", FLOATS, "Tint",
        lambda a, p, r: np.where(np.isfinite(a[0]), np.frexp(_f64(a[0]))[1], 0).astype(np.int32))


# Minimum and maximum: the float versions return the non-NaN operand (Table 6.4); the unprefixed
# spellings also have integer overloads.
def _min2(args: list[np.ndarray], params: list[Type], result: Type) -> np.ndarray:
    return _min_max(params)[0](args[0], args[1])


def _max2(args: list[np.ndarray], params: list[Type], result: Type) -> np.ndarray:
    return _min_max(params)[1](args[0], args[1])


def _min3(args: list[np.ndarray], params: list[Type], result: Type) -> np.ndarray:
    lo = _min_max(params)[0]
    return lo(args[0], lo(args[1], args[2]))


def _max3(args: list[np.ndarray], params: list[Type], result: Type) -> np.ndarray:
    hi = _min_max(params)[1]
    return hi(args[0], hi(args[1], args[2]))


def _median3(args: list[np.ndarray], params: list[Type], result: Type) -> np.ndarray:
    """The middle value. For floats the NaN-ignoring min/max make NaNs count as missing values
    (with one NaN, the result is one of the other two, which MSL permits)."""
    lo, hi = _min_max(params)
    x, y, z = args
    return hi(lo(x, y), lo(hi(x, y), z))


for _names, _params, _impl in (("fmin min", "T T", _min2), ("fmax max", "T T", _max2),
                               ("fmin3 min3", "T T T", _min3), ("fmax3 max3", "T T T", _max3),
                               ("fmedian3 median3", "T T T", _median3)):
    _float_name, _name = _names.split()
    _define(_float_name, _params, FLOATS, "T", _impl)
    _define(_name, _params, NUMBERS, "T", _impl)
_define("abs", "T", NUMBERS, "T", _abs)

# Integer functions.
_define("clz", "T", INTEGERS, "T", _clz)
_define("ctz", "T", INTEGERS, "T", _ctz)
_define("popcount", "T", INTEGERS, "T", _popcount)
_define("reverse_bits", "T", INTEGERS, "T", _reverse_bits)
_define("mulhi", "T T", INTEGERS, "T", lambda a, p, r: _mulhi(a[0], a[1]))
_define("madhi", "T T T", INTEGERS, "T", lambda a, p, r: _mulhi(a[0], a[1]) + a[2])
_define("madsat", "T T T", INTEGERS, "T", _madsat)
_define("rotate", "T T", INTEGERS, "T", _rotate)
_define("absdiff", "T T", INTEGERS, "Tu", _absdiff)
_define("addsat", "T T", INTEGERS, "T", lambda a, p, r: _saturating(a[0], a[1], subtract=False))
_define("subsat", "T T", INTEGERS, "T", lambda a, p, r: _saturating(a[0], a[1], subtract=True))
_define("hadd", "T T", INTEGERS, "T", lambda a, p, r: _hadd(a[0], a[1], rounding=False))
_define("rhadd", "T T", INTEGERS, "T", lambda a, p, r: _hadd(a[0], a[1], rounding=True))
_define("extract_bits", "T u u", INTEGERS, "T", _extract_bits)
_define("insert_bits", "T T u u", INTEGERS, "T", _insert_bits)
# mul24/mad24 are exact for 24-bit operands; beyond that MSL leaves them implementation-defined,
# and the simulator's choice is the full 32-bit wrapped product.
_define("mul24", "T T", INT32, "T", lambda a, p, r: a[0] * a[1])
_define("mad24", "T T T", INT32, "T", lambda a, p, r: a[0] * a[1] + a[2])

# Relational functions.
_define("isnan", "T", FLOATS, "Tb", _predicate(np.isnan))
_define("isinf", "T", FLOATS, "Tb", _predicate(np.isinf))
_define("isfinite", "T", FLOATS, "Tb", _predicate(np.isfinite))
_define("isnormal", "T", FLOATS, "Tb", _isnormal)
_define("signbit", "T", FLOATS, "Tb", _predicate(np.signbit))
_define("isordered", "T T", FLOATS, "Tb", _predicate(lambda x, y: (x == x) & (y == y)))
_define("isunordered", "T T", FLOATS, "Tb", _predicate(lambda x, y: np.isnan(x) | np.isnan(y)))
_define("all", "T", BOOLS, "bool", _reduce(np.all))
_define("any", "T", BOOLS, "bool", _reduce(np.any))
_define("not", "T", BOOLS, "T", lambda a, p, r: np.logical_not(a[0]))
_define("select", "T T Tb", NUMBERS | BOOLS, "T", lambda a, p, r: np.where(a[2], a[1], a[0]))

# Geometric functions.
_define("dot", "T T", FLOATS, "Ts", _float_fn(_dot), vector=0)
_define("length", "T", FLOATS, "Ts", _float_fn(_length), vector=0)
_define("length_squared", "T", FLOATS, "Ts", _float_fn(lambda x: _dot(x, x)), vector=0)
_define("distance", "T T", FLOATS, "Ts", _float_fn(lambda x, y: _length(x - y)), vector=0)
_define("distance_squared", "T T", FLOATS, "Ts",
        _float_fn(lambda x, y: _dot(x - y, x - y)), vector=0)
_define("normalize", "T", FLOATS, "T", _float_fn(lambda x: x / _length(x)[..., None]), vector=0)
_define("cross", "T T", FLOATS, "T", _float_fn(_cross), vector=3)
_define("faceforward", "T T T", FLOATS, "T",
        _float_fn(lambda n, i, nref: np.where((_dot(nref, i) < 0)[..., None], n, -n)), vector=0)
_define("reflect", "T T", FLOATS, "T",
        _float_fn(lambda i, n: i - 2.0 * _dot(n, i)[..., None] * n), vector=0)
_define("refract", "T T Ts", FLOATS, "T", _float_fn(_refract), vector=0)


def resolve(name: str, arg_types: list[Type]) -> tuple[list[Type], Type]:
    """Overload resolution for `name(args...)`: (parameter types, result type).

    Convert each argument to its parameter type (`arith.convert`, which also splats scalars into
    vectors) before `call`. Raises LookupError with a compiler-style message if nothing matches.
    """
    fn = FUNCTIONS.get(name)
    if fn is None:
        raise LookupError(f"use of undeclared identifier '{name}'")
    return fn.resolve(list(arg_types))


def call(name: str, args: list[np.ndarray], param_types: list[Type], result_type: Type,
         variant: str = "precise") -> np.ndarray:
    """Evaluate `name` on arguments already converted to `param_types` (from `resolve`).

    `variant` is "precise" or "fast" (`metal::precise::`/`metal::fast::` or the compile mode).
    Both compute the precise value, which lies within every fast-variant error bound.
    """
    if variant not in ("precise", "fast"):
        raise ValueError(f"unknown math variant '{variant}'")
    if not arith.is_quiet():
        with arith.quiet_numpy():
            return call(name, args, param_types, result_type, variant)
    return np.asarray(FUNCTIONS[name].impl([np.asarray(a) for a in args], list(param_types),
                                           result_type))
