"""C++/MSL arithmetic on typed lane arrays, bit-exact.

A value is a numpy array holding one element per lane in exactly its MSL type's dtype (a vector
adds a trailing axis of its width; constants may be 0-d and broadcast). Every operation here
computes what MSL computes, never in a wider type when that would change the result: `float` stays
float32, and `half`/`bfloat` results are rounded to their type after every operation. Semantics
follow `msl-semantics.md` §7; where MSL leaves a result undefined, the choice made here is marked
"simulator's choice". No function emits numpy warnings: overflow, wrap-around and NaN are the
subject matter, not accidents.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

import numpy as np

from metalsim.lang.types import (
    BOOL,
    INT,
    LONG,
    UINT,
    ULONG,
    ScalarType,
    Type,
    VectorType,
    scalar_of,
)

COMPARISONS = frozenset({"<", ">", "<=", ">=", "==", "!="})
_COMPARE_UFUNCS = {"<": np.less, ">": np.greater, "<=": np.less_equal, ">=": np.greater_equal,
                   "==": np.equal, "!=": np.not_equal}
_ARITH_UFUNCS = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}
_BITWISE_UFUNCS = {"&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor}
_UNSIGNED = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32),
             8: np.dtype(np.uint64)}

# Integer magnitudes at or above 2**53 are not exact in float64; see _int_to_float64.
_EXACT_LIMIT = np.uint64(2**53)
_STICKY_MASK = np.uint64(0x7FF)
_KEEP_MASK = np.uint64(0xFFFF_FFFF_FFFF_F800)


# Whether numpy's floating-point error handling is already off (`quiet_numpy`) in this context:
# the functions below then compute directly, instead of entering `np.errstate` themselves (a
# context manager per operation was a tenth of a small launch).
_QUIET = contextvars.ContextVar("metalsim_quiet_numpy", default=False)


@contextlib.contextmanager
def quiet_numpy() -> Iterator[None]:
    """Run a block with numpy's floating-point warnings and errors off (overflow, wrap-around
    and NaN are what the simulator computes on purpose). A launch runs inside one, so that the
    operations here need not each enter `np.errstate`; outside one, each enters it itself."""
    if _QUIET.get():
        yield
        return
    token = _QUIET.set(True)
    try:
        with np.errstate(all="ignore"):
            yield
    finally:
        _QUIET.reset(token)


def is_quiet() -> bool:
    """Whether this runs inside `quiet_numpy`."""
    return _QUIET.get()


def _elem(t: Type) -> ScalarType:
    s = scalar_of(t)
    if not isinstance(s, ScalarType):
        raise TypeError(f"'{t}' is not an arithmetic type")
    return s


def unsigned_dtype(dtype: np.dtype) -> np.dtype:
    """The unsigned integer dtype of the same width (used to do bit manipulation without UB)."""
    return _UNSIGNED[np.dtype(dtype).itemsize]


def round_from_float64(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Round float64 values to float32, float16 or bfloat16 exactly once (round to nearest even).

    float64 -> float32 is a single correct rounding in numpy. Narrower formats must not go through
    a float32 rounded to nearest (that double-rounds, and ml_dtypes' own float64 -> bfloat16 does
    exactly that), so the value is first rounded to *odd* at float32 precision: with at least two
    more bits than the target, round-to-odd followed by round-to-nearest-even equals one direct
    rounding (Boldo & Melquiond, 2008).
    """
    x = np.asarray(x, dtype=np.float64)
    if not _QUIET.get():
        with quiet_numpy():
            return round_from_float64(x, dtype)
    nearest = x.astype(np.float32)
    if np.dtype(dtype) == np.float32:
        return nearest
    back = nearest.astype(np.float64)
    bits = nearest.view(np.uint32)
    # Truncate toward zero: step back one ulp where rounding went outward (this also turns an
    # overflow to inf into FLT_MAX), then set the sticky last bit where the value was inexact.
    bits = np.where(np.abs(back) > np.abs(x), bits - np.uint32(1), bits)
    bits = np.where((back != x) & np.isfinite(x), bits | np.uint32(1), bits)
    return np.asarray(bits, dtype=np.uint32).view(np.float32).astype(dtype)


def _int_to_float64(x: np.ndarray) -> np.ndarray:
    """Integers as float64, exactly or (for |x| >= 2**53) with the same rounding to <= 24 bits.

    A 64-bit integer may not fit float64; converting it there and then to float32 would round
    twice. Instead the bits below bit 11 collapse into one sticky bit: the result has at most 53
    significant bits (exact in float64) and rounds to any format of <= 51 bits exactly as `x` does.
    """
    if x.dtype.itemsize < 8:
        return x.astype(np.float64)
    negative = x < 0 if x.dtype.kind == "i" else np.zeros(x.shape, dtype=bool)
    magnitude = x.astype(np.uint64)
    magnitude = np.where(negative, np.uint64(0) - magnitude, magnitude)
    sticky = ((magnitude & _STICKY_MASK) != 0).astype(np.uint64) << np.uint64(11)
    reduced = np.where(magnitude >= _EXACT_LIMIT, (magnitude & _KEEP_MASK) | sticky, magnitude)
    as_float = reduced.astype(np.float64)
    return np.where(negative, -as_float, as_float)


def _float_to_int(x: np.ndarray, dst: ScalarType) -> np.ndarray:
    """Round toward zero; NaN -> 0 (MSL §8.6); out-of-range values saturate.

    Out-of-range float -> int is undefined in C++ and unspecified by MSL. Apple GPUs saturate
    (like most GPUs), so the simulator's choice is to saturate to the destination's min/max; this
    also avoids the INT_MIN garbage that a raw x86 conversion produces.
    """
    info = np.iinfo(dst.dtype)
    t = np.trunc(x.astype(np.float64))
    below = t < float(info.min)           # min is 0 or -2**(bits-1): exact in float64
    above = t >= float(info.max) + 1.0    # rounds to 2**bits or 2**(bits-1): exact
    inside = ~(below | above | np.isnan(t))
    out = np.where(inside, t, 0.0).astype(dst.dtype)
    out = np.where(below, dst.dtype.type(info.min), out)
    return np.where(above, dst.dtype.type(info.max), out)


def _truth(x: np.ndarray, src: ScalarType) -> np.ndarray:
    """C++ conversion to bool: `x != 0`, so NaN is true."""
    if src.kind == "float":
        return x.astype(np.float64) != 0
    return x != 0


def _convert_scalar(x: np.ndarray, src: ScalarType, dst: ScalarType) -> np.ndarray:
    if dst == BOOL:
        return _truth(x, src)
    if src == BOOL:
        x, src = x.astype(np.int32), INT    # bool -> 0/1, then an ordinary integer conversion
    if dst.kind == "int":
        return _float_to_int(x, dst) if src.kind == "float" else x.astype(dst.dtype)
    if src.kind == "int":
        return round_from_float64(_int_to_float64(x), dst.dtype)
    if src == dst:
        return x.astype(dst.dtype)
    # Every MSL float is exact in float64, so this is the single rounding C++ specifies.
    return round_from_float64(x.astype(np.float64), dst.dtype)


def convert(x: np.ndarray, src: Type, dst: Type) -> np.ndarray:
    """Convert values of type `src` to `dst` as a C++ value conversion / `static_cast` does.

    Scalar types, same-width vectors, and a scalar to a vector (splat, as MSL allows for scalar
    operands) are supported. See msl-semantics §7.3: int -> narrower int wraps modulo 2**n,
    anything -> bool is `!= 0`, float -> int truncates (NaN -> 0, saturating out of range), and
    conversions to a float type round to nearest even exactly once.
    """
    if src is dst or src == dst:  # the common case: a copy, nothing to round or wrap
        return np.array(x, dtype=_elem(dst).dtype)
    s, d = _elem(src), _elem(dst)
    x = np.asarray(x)
    if isinstance(src, VectorType) != isinstance(dst, VectorType):
        if isinstance(src, VectorType):
            raise TypeError(f"cannot convert vector '{src}' to scalar '{dst}'")
        x = np.broadcast_to(x[..., None], (*x.shape, dst.n))
    elif isinstance(src, VectorType) and src.n != dst.n:
        raise TypeError(f"cannot convert between vector types '{src}' and '{dst}'")
    if s.kind == "int" and d.kind == "int":  # wraps modulo 2**n, never warns (indexing)
        return x.astype(d.dtype)
    if _QUIET.get():
        return np.asarray(_convert_scalar(x, s, d))
    with quiet_numpy():
        return np.asarray(_convert_scalar(x, s, d))


def zero_divisor_mask(y: np.ndarray) -> np.ndarray | None:
    """The lanes of an integer divisor that are zero, or None if there are none (floats: None)."""
    y = np.asarray(y)
    if y.dtype.kind not in "iu":
        return None
    zero = y == 0
    return zero if zero.any() else None


def shift_out_of_range_mask(count: np.ndarray, t: Type) -> np.ndarray | None:
    """Lanes whose shift count is negative or >= the bit width of `t`, or None if there are none.

    MSL masks such counts (§7.4), so the result is defined, but it is rarely what was meant.
    """
    count = np.asarray(count)
    bits = _elem(t).bits
    # an integer count: comparing it with small ints raises no floating-point error
    bad = (count < 0) | (count >= bits)
    return bad if bad.any() else None


def _compare(op: str, x: np.ndarray, y: np.ndarray, e: ScalarType) -> np.ndarray:
    if e.kind == "float":
        # float32 holds half and bfloat exactly, and numpy compares it natively with IEEE rules.
        x, y = x.astype(np.float32), y.astype(np.float32)
    return _COMPARE_UFUNCS[op](x, y)


def _float_binary(op: str, x: np.ndarray, y: np.ndarray, e: ScalarType) -> np.ndarray:
    if op == "%":
        raise ValueError(f"invalid operands to binary expression ('{e}' % '{e}'); use fmod()")
    if op not in _ARITH_UFUNCS:
        raise ValueError(f"invalid operands to binary expression ('{e}' {op} '{e}')")
    ufunc = _ARITH_UFUNCS[op]
    if e.dtype == np.float32:
        return ufunc(x, y)
    # half/bfloat: the exact result rounded once. float64 is exact for + - * of these formats
    # except sums of very distant magnitudes, and 53 >= 2*p + 2 makes the float64 rounding
    # harmless for + - * / (Figueroa, 1995), so rounding once more to the type is correct rounding.
    return round_from_float64(ufunc(x.astype(np.float64), y.astype(np.float64)), e.dtype)


def _divide(op: str, x: np.ndarray, y: np.ndarray, e: ScalarType) -> np.ndarray:
    """C division: the quotient truncates toward zero and `%` takes the dividend's sign.

    Division by zero is undefined in MSL; the simulator's choice is 0 for those lanes (the compiler
    reports them through `zero_divisor_mask`). INT_MIN / -1 wraps to INT_MIN, INT_MIN % -1 is 0.
    """
    zero = y == 0
    if e.signed:
        overflow = (x == np.iinfo(e.dtype).min) & (y == -1)
        safe = np.where(zero | overflow, e.dtype.type(1), y)
        rem = np.fmod(x, safe)                 # C remainder on integers: sign of the dividend
        if op == "%":
            return np.where(zero, e.dtype.type(0), rem)
        # x - rem is an exact multiple of safe, so flooring division is exact here.
        return np.where(zero, e.dtype.type(0), (x - rem) // safe)
    safe = np.where(zero, e.dtype.type(1), y)
    result = x % safe if op == "%" else x // safe
    return np.where(zero, e.dtype.type(0), result)


def _shift(op: str, x: np.ndarray, count: np.ndarray, e: ScalarType) -> np.ndarray:
    """Shift with the count masked to its low log2(bits) bits (MSL §7.4); `>>` is arithmetic for
    signed types. Left shifts go through the unsigned type, where they cannot overflow."""
    if count.dtype == np.bool_:
        count = count.astype(np.int32)
    count = count & (e.bits - 1)
    if op == "<<":
        u = unsigned_dtype(e.dtype)
        return np.left_shift(x.astype(u), count.astype(u)).astype(e.dtype)
    return np.right_shift(x, count.astype(e.dtype))


def _int_binary(op: str, x: np.ndarray, y: np.ndarray, e: ScalarType) -> np.ndarray:
    if op in _BITWISE_UFUNCS:
        return _BITWISE_UFUNCS[op](x, y)
    if e == BOOL:
        raise ValueError(f"operator {op} on bool operands: promote them to int first")
    if op in ("+", "-", "*"):
        return _ARITH_UFUNCS[op](x, y)      # numpy array arithmetic wraps modulo 2**bits
    if op in ("/", "%"):
        return _divide(op, x, y, e)
    if op in ("<<", ">>"):
        return _shift(op, x, y, e)
    raise ValueError(f"unknown binary operator '{op}'")


def binary_fn(op: str, t: ScalarType | VectorType):
    """`lambda x, y: binary(op, x, y, t)`, chosen once where an expression is compiled: where
    `binary` would only call one numpy ufunc (comparisons of integers and floats, `float`
    arithmetic, integer `+ - *` and bitwise operators), that ufunc, without looking up the
    operation again for every evaluation."""
    e = scalar_of(t)
    ufunc = None
    if isinstance(e, ScalarType):
        if op in COMPARISONS and (e.kind != "float" or e.dtype == np.float32):
            ufunc = _COMPARE_UFUNCS[op]
        elif op in _BITWISE_UFUNCS and e.kind != "float":
            ufunc = _BITWISE_UFUNCS[op]
        elif ((op in ("+", "-", "*") and e.kind == "int")
              or (op in _ARITH_UFUNCS and e.dtype == np.float32)):
            ufunc = _ARITH_UFUNCS[op]
    if ufunc is None:
        return lambda x, y: binary(op, x, y, t)

    def apply(x, y):
        if not _QUIET.get():
            return binary(op, x, y, t)
        return np.asarray(ufunc(np.asarray(x), np.asarray(y)))
    return apply


def binary(op: str, x: np.ndarray, y: np.ndarray, t: ScalarType | VectorType) -> np.ndarray:
    """`x op y` where both operands already have the operation type `t` (after the usual
    arithmetic conversions; for shifts, `t` is the promoted left type and `y` any integer type).

    Vector operands must both have the vector shape (splat scalars with `convert` first).
    Comparisons return bool arrays.
    """
    if not _QUIET.get():
        with quiet_numpy():
            return binary(op, x, y, t)
    e = _elem(t)
    x, y = np.asarray(x), np.asarray(y)
    if op in COMPARISONS:
        result = _compare(op, x, y, e)
    elif e.kind == "float":
        result = _float_binary(op, x, y, e)
    else:
        result = _int_binary(op, x, y, e)
    return np.asarray(result)


def unary(op: str, x: np.ndarray, t: ScalarType | VectorType) -> np.ndarray:
    """`op x` for "-", "+", "~" and "!" on a value of (already promoted) type `t`."""
    if not _QUIET.get():
        with quiet_numpy():
            return unary(op, x, t)
    e = _elem(t)
    x = np.asarray(x)
    if op == "!":
        return np.asarray(~_truth(x, e))
    if e == BOOL:
        raise ValueError(f"operator {op} on bool: promote the operand to int first")
    if op == "+":
        return x.copy()
    if op == "-":
        return np.asarray(np.negative(x))   # exact for floats, wraps for integers
    if op == "~" and e.kind == "int":
        return np.asarray(np.invert(x))
    raise ValueError(f"invalid argument type '{t}' to unary expression '{op}'")


_LITERAL_CANDIDATES = {
    # (suffix, hex or octal) -> the types C++ tries in order ([lex.icon], no `long long` in MSL)
    ("", False): (INT, LONG),
    ("", True): (INT, UINT, LONG, ULONG),
    ("u", False): (UINT, ULONG),
    ("u", True): (UINT, ULONG),
    ("l", False): (LONG,),
    ("l", True): (LONG, ULONG),
    ("ul", False): (ULONG,),
    ("ul", True): (ULONG,),
}


def parse_int_literal_type(value: int, suffix: str, hex_or_octal: bool) -> ScalarType:
    """The type of an integer literal with (non-negative) `value` and `suffix` under C++ rules."""
    key = "".join(sorted(suffix.lower(), reverse=True))   # "lu" and "ul" are the same suffix
    candidates = _LITERAL_CANDIDATES.get((key, hex_or_octal))
    if candidates is None:
        raise ValueError(f"invalid suffix '{suffix}' on integer constant")
    for t in candidates:
        if 0 <= value <= np.iinfo(t.dtype).max:
            return t
    raise ValueError(f"integer literal {value} is too large for any type it may have")
