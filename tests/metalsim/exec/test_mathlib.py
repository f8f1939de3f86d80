"""metalsim.exec.mathlib: accuracy against float64 and exact references, overload resolution.

Transcendentals must lie within the ULP bounds of msl-semantics §7.5 (Table 8.1 for float; 1 ulp
for half and bfloat). Functions MSL requires to be correctly rounded or exact are checked bit for
bit against exact rational arithmetic, integer functions against plain Python integers.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from exact_rounding import FORMATS, round_exact
from hypothesis import given, settings
from hypothesis import strategies as st

from metalsim.exec import arith, mathlib
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
)

pytestmark = pytest.mark.filterwarnings("error")   # the library must never emit numpy warnings

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOAT_TYPES = (FLOAT, HALF, BFLOAT)
INTS = (CHAR, UCHAR, SHORT, USHORT, INT, UINT, LONG, ULONG)
LANES = 40


def call(name: str, *args: tuple[np.ndarray | float | int, Type],
         variant: str = "precise") -> np.ndarray:
    """Resolve and evaluate `name(args)` as the compiler would (converting the arguments)."""
    types = [t for _, t in args]
    params, result = mathlib.resolve(name, types)
    values = [arith.convert(np.asarray(a, dtype=_dtype(t)), t, p)
              for (a, t), p in zip(args, params)]
    out = mathlib.call(name, values, params, result, variant)
    assert out.dtype == _dtype(result)
    return out


def _dtype(t: Type) -> np.dtype:
    return t.elem.dtype if isinstance(t, VectorType) else t.dtype




def ordinal(x: np.ndarray) -> np.ndarray:
    """Floats mapped to integers in value order (adjacent floats differ by 1; ±0 map to 0)."""
    bits = np.ascontiguousarray(x).view(arith.unsigned_dtype(x.dtype)).astype(np.int64)
    sign = 1 << (8 * x.dtype.itemsize - 1)
    return np.where(bits >= sign, -(bits - sign), bits)


def floats(t: ScalarType, **kw: float) -> st.SearchStrategy[float]:
    """Values of float type `t`; keywords as for `st.floats` (bounds, allow_nan, ...)."""
    if t == FLOAT:
        return st.floats(width=32, **kw)
    if "min_value" in kw:   # bounded: float32 values rounded to the type
        return st.floats(width=32, **kw).map(lambda v: float(np.array([v]).astype(t.dtype)[0]))
    every = st.integers(0, 0xFFFF).map(
        lambda b: float(np.array([b], np.uint16).view(t.dtype)[0]))
    return every.filter(lambda v: math.isfinite(v) or (
        kw.get("allow_nan", True) and math.isnan(v)) or (
        kw.get("allow_infinity", True) and math.isinf(v)))


def lanes_of(t: ScalarType, **kw: float) -> st.SearchStrategy[list[float]]:
    return st.lists(floats(t, **kw), min_size=LANES, max_size=LANES)


# --- Transcendentals: within the ULP bounds ------------------------------------------------------

def _sinpi(x: float) -> float:
    """sin(πx) with exact reduction to |r| <= 1/2 (a float64 reference independent of mathlib)."""
    if not math.isfinite(x):
        return math.nan
    r = x - 2.0 * round(x / 2.0)            # exact: r in [-1, 1]
    if abs(r) > 0.5:
        r = math.copysign(1.0, r) - r       # sin(π(±1 - r)) = sin(πr), exactly reflected
    return math.sin(math.pi * r)


def _cospi(x: float) -> float:
    if not math.isfinite(x):
        return math.nan
    if abs(x) >= 2.0**52:                   # even integers, where x + 1/2 would not be exact
        return 1.0
    return _sinpi(x + 0.5)


def _tanpi(x: float) -> float:
    s, c = _sinpi(x), _cospi(x)
    return math.copysign(math.inf, s) if c == 0 else s / c


TRANSCENDENTALS: dict[str, tuple[Callable[..., float], int]] = {
    # name: (float64 reference, Table 8.1 ulp bound for float)
    "exp": (np.exp, 4), "exp2": (np.exp2, 4), "exp10": (lambda x: np.power(10.0, x), 4),
    "log": (np.log, 4), "log2": (np.log2, 4), "log10": (np.log10, 4), "sin": (np.sin, 4),
    "cos": (np.cos, 4), "sinh": (np.sinh, 4), "cosh": (np.cosh, 4), "asin": (np.arcsin, 4),
    "acos": (np.arccos, 4), "asinh": (np.arcsinh, 4), "acosh": (np.arccosh, 4),
    "sinpi": (_sinpi, 4), "cospi": (_cospi, 4), "atan": (np.arctan, 5),
    "atanh": (np.arctanh, 5), "tanh": (np.tanh, 5), "tan": (np.tan, 6), "tanpi": (_tanpi, 6),
    "atan2": (np.arctan2, 6), "pow": (np.power, 16),
}


@pytest.mark.parametrize("name", sorted(TRANSCENDENTALS))
@pytest.mark.parametrize("t", FLOAT_TYPES, ids=str)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_transcendentals_within_ulp_bounds(name: str, t: ScalarType,
                                           data: st.DataObject) -> None:
    reference, bound = TRANSCENDENTALS[name]
    bound = bound if t == FLOAT else 1
    arity = 2 if name in ("atan2", "pow") else 1
    small = name in ("pow", "exp", "exp2", "exp10", "sinh", "cosh")
    kw = {"min_value": -60.0, "max_value": 60.0} if small else {}
    args = [np.array(data.draw(lanes_of(t, **kw)), dtype=t.dtype) for _ in range(arity)]
    got = call(name, *((a, t) for a in args))
    with np.errstate(all="ignore"):
        ref = np.array([reference(*(float(a[i]) for a in args)) for i in range(LANES)])
    expected = np.array([round_exact(Fraction(r), t) if math.isfinite(r) else r for r in ref],
                        dtype=t.dtype)
    assert np.array_equal(np.isnan(got.astype(np.float64)), np.isnan(ref))
    finite = ~np.isnan(ref)
    distance = np.abs(ordinal(got) - ordinal(expected))[finite]
    assert distance.max(initial=0) <= bound, (name, args, got, expected)


# --- Correctly rounded and exact functions, bit for bit ------------------------------------------

def assert_same(got: np.ndarray, expected: list[float], context: object) -> None:
    """Equal values, equal signs of zero, NaN where NaN is expected."""
    for g, e in zip(got.astype(np.float64).tolist(), expected):
        if math.isnan(e):
            assert math.isnan(g), context
        else:
            assert g == e and math.copysign(1, g) == math.copysign(1, e), (context, g, e)


def _with_sign_of(x: float, value: float) -> float:
    """Integral results keep the argument's sign when they are zero (IEEE 754)."""
    return math.copysign(value, x) if value == 0 else value


def _rounding(fn: Callable[[Fraction], int]) -> Callable[[float], float]:
    def ref(x: float) -> float:
        return x if not math.isfinite(x) else _with_sign_of(x, float(fn(Fraction(x))))
    return ref


def _round_half_away(v: Fraction) -> int:
    return int(math.copysign(math.floor(abs(v) + Fraction(1, 2)), v))


EXACT_UNARY: dict[str, Callable[[float, ScalarType], float]] = {
    "floor": lambda x, t: _rounding(math.floor)(x),
    "ceil": lambda x, t: _rounding(math.ceil)(x),
    "trunc": lambda x, t: _rounding(math.trunc)(x),
    "rint": lambda x, t: _rounding(round)(x),    # round() on a Fraction: ties to even
    "round": lambda x, t: _rounding(_round_half_away)(x),
    "fabs": lambda x, t: abs(x),
    "fract": lambda x, t: (x if math.isnan(x) else 0.0 if math.isinf(x) else min(
        round_exact(Fraction(x) - math.floor(x), t), 1 - 2.0 ** -(FORMATS[t][0] + 1))),
}


@pytest.mark.parametrize("name", sorted(EXACT_UNARY))
@pytest.mark.parametrize("t", FLOAT_TYPES, ids=str)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_rounding_functions_are_exact(name: str, t: ScalarType, data: st.DataObject) -> None:
    xs = data.draw(st.lists(st.one_of(floats(t), floats(t, min_value=-8, max_value=8)),
                            min_size=LANES, max_size=LANES))
    got = call(name, (np.array(xs, t.dtype), t))
    assert_same(got, [EXACT_UNARY[name](x, t) for x in xs], (name, xs))


def _exact_or_special(exact: Callable[..., Fraction], special: Callable[..., float],
                      t: ScalarType) -> Callable[..., float]:
    """The exact result rounded once when all arguments are finite, else the IEEE special."""
    def ref(*args: float) -> float:
        if all(math.isfinite(a) for a in args):
            value = exact(*(Fraction(a) for a in args))
            if value is not None:
                return round_exact(value, t)
        return special(*args)
    return ref


def _divide_special(x: float, y: float) -> float:
    with np.errstate(all="ignore"):
        return float(np.float64(x) / np.float64(y))


def _fmod_special(x: float, y: float) -> float:
    return x if math.isfinite(x) and math.isinf(y) else math.nan


@pytest.mark.parametrize("t", FLOAT_TYPES, ids=str)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_binary_functions_are_correctly_rounded(t: ScalarType, data: st.DataObject) -> None:
    xs, ys = (data.draw(st.lists(st.one_of(floats(t), floats(t, min_value=-4, max_value=4)),
                                 min_size=LANES, max_size=LANES)) for _ in range(2))
    refs = {
        "divide": _exact_or_special(lambda x, y: x / y if y else None, _divide_special, t),
        "fmod": _exact_or_special(lambda x, y: x - y * math.trunc(x / y) if y else None,
                                  _fmod_special, t),
        "fdim": _exact_or_special(lambda x, y: x - y if x > y else Fraction(0),
                                  lambda x, y: math.nan if math.isnan(x) or math.isnan(y)
                                  else x - y if x > y else 0.0, t),
        "copysign": lambda x, y: math.copysign(x, y),
    }
    for name, ref in refs.items():
        got = call(name, (np.array(xs, t.dtype), t), (np.array(ys, t.dtype), t))
        expected = [ref(x, y) for x, y in zip(xs, ys)]
        if name == "fmod":   # an exact zero remainder has the dividend's sign
            expected = [_with_sign_of(x, e) for x, e in zip(xs, expected)]
        if name in ("divide", "fdim"):   # zero signs of those are plain IEEE: compare values
            expected = [e if e != 0 else float(g) for e, g in zip(expected, got)]
        assert_same(got, expected, (name, xs, ys))


@pytest.mark.parametrize("t", FLOAT_TYPES, ids=str)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_fma_rounds_once(t: ScalarType, data: st.DataObject) -> None:
    a, b, c = (data.draw(st.lists(floats(t, allow_nan=False, allow_infinity=False),
                                  min_size=LANES, max_size=LANES)) for _ in range(3))
    got = call("fma", *((np.array(v, t.dtype), t) for v in (a, b, c)))
    exact = [Fraction(x) * Fraction(y) + Fraction(z) for x, y, z in zip(a, b, c)]
    for g, e, args in zip(got.astype(np.float64).tolist(), exact, zip(a, b, c)):
        assert g == round_exact(e, t), args


@pytest.mark.parametrize(("t", "a", "b", "c"), [
    # a*b lies exactly halfway between two values of the type, and c is far too small to show up
    # after a first rounding to float64 (or float32): only an exact fma rounds up.
    (FLOAT, 1 + 2.0**-12, 1 + 2.0**-12, 2.0**-80),
    (FLOAT, 3.0, 1 + 2.0**-23, -(2.0**-80)),      # here the tie would go up, to even
    (HALF, 1 + 2.0**-6, 1 + 2.0**-5, 2.0**-24),
    (BFLOAT, 1 + 2.0**-4, 1 + 2.0**-4, 2.0**-60),
])
def test_fma_double_rounding_traps(t: ScalarType, a: float, b: float, c: float) -> None:
    got = call("fma", *((np.array([v], t.dtype), t) for v in (a, b, c)))
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    assert float(got[0]) == round_exact(exact, t) != float(
        np.array([float(exact)]).astype(np.float32).astype(t.dtype)[0])


def midpoints(r: np.ndarray) -> tuple[Fraction, Fraction]:
    """The halfway points below and above the positive finite value `r[0]` in its own type."""
    bits = np.ascontiguousarray(r[:1]).view(arith.unsigned_dtype(r.dtype))
    below, above = (float(b.view(r.dtype)[0]) for b in (bits - 1, bits + 1))
    value = Fraction(float(r[0]))
    return (value + Fraction(below)) / 2, (value + Fraction(above)) / 2


@pytest.mark.parametrize("t", FLOAT_TYPES, ids=str)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_sqrt_and_rsqrt_are_correctly_rounded(t: ScalarType, data: st.DataObject) -> None:
    xs = data.draw(lanes_of(t))
    x = np.array(xs, t.dtype)
    root, inverse = call("sqrt", (x, t)), call("rsqrt", (x, t))
    for i, v in enumerate(xs):
        if math.isnan(v) or v < 0:
            assert math.isnan(root[i]) and math.isnan(inverse[i])
        elif v == 0:     # sqrt(±0) = ±0, rsqrt(±0) = ±inf
            assert math.copysign(1, root[i]) == math.copysign(1, v) and root[i] == 0
            assert float(inverse[i]) == math.copysign(math.inf, v)
        elif math.isinf(v):
            assert float(root[i]) == math.inf and float(inverse[i]) == 0.0
        else:
            lo, hi = midpoints(root[i:i + 1])
            assert lo * lo <= Fraction(v) <= hi * hi, ("sqrt", v, root[i])
            lo, hi = midpoints(inverse[i:i + 1])
            assert lo * lo * Fraction(v) <= 1 <= hi * hi * Fraction(v), ("rsqrt", v, inverse[i])


def test_rsqrt_hardest_float32_case() -> None:
    # The only float32 in [1, 4) whose float64 1/sqrt lies within 2**-50 of a halfway point.
    x = float.fromhex("0x1.7431c6p+1")
    got = call("rsqrt", (np.array([x], np.float32), FLOAT))
    lo, hi = midpoints(got)
    assert lo * lo * Fraction(x) <= 1 <= hi * hi * Fraction(x)


@pytest.mark.parametrize("t", [HALF, BFLOAT], ids=str)
def test_rsqrt_exhaustive_for_16_bit_types(t: ScalarType) -> None:
    positive = np.arange(1, 0x7C00 if t == HALF else 0x7F80, dtype=np.uint16).view(t.dtype)
    got = call("rsqrt", (positive, t))
    bits = got.view(np.uint16)
    for x, r, lo_r, hi_r in zip(positive.astype(np.float64).tolist(),
                                got.astype(np.float64).tolist(),
                                (bits - 1).view(t.dtype).astype(np.float64).tolist(),
                                (bits + 1).view(t.dtype).astype(np.float64).tolist()):
        lo, hi = (Fraction(r) + Fraction(lo_r)) / 2, (Fraction(r) + Fraction(hi_r)) / 2
        assert lo * lo * Fraction(x) <= 1 <= hi * hi * Fraction(x), x


@pytest.mark.parametrize("t", FLOAT_TYPES, ids=str)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_ldexp_is_exact(t: ScalarType, data: st.DataObject) -> None:
    xs = data.draw(lanes_of(t))
    ks = data.draw(st.lists(st.integers(-320, 320), min_size=LANES, max_size=LANES))
    got = call("ldexp", (np.array(xs, t.dtype), t), (np.array(ks, np.int32), INT))
    expected = [x if not math.isfinite(x) else _with_sign_of(x, round_exact(
        Fraction(x) * Fraction(2) ** k, t)) for x, k in zip(xs, ks)]
    assert_same(got, expected, (xs, ks))


@pytest.mark.parametrize("t", FLOAT_TYPES, ids=str)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_nextafter_steps_one_value(t: ScalarType, data: st.DataObject) -> None:
    xs, ys = (data.draw(lanes_of(t)) for _ in range(2))
    x, y = np.array(xs, t.dtype), np.array(ys, t.dtype)
    got = call("nextafter", (x, t), (y, t))
    for i, (a, b) in enumerate(zip(xs, ys)):
        g = float(got[i])
        if math.isnan(a) or math.isnan(b):
            assert math.isnan(g)
        elif a == b:
            assert g == b and math.copysign(1, g) == math.copysign(1, b)
        else:
            assert (g - a) * (b - a) > 0 or math.isinf(a)
            assert abs(int(ordinal(got[i:i + 1])[0]) - int(ordinal(x[i:i + 1])[0])) == 1


# --- Selections, NaN handling and the common functions -------------------------------------------

def f32(*values: float) -> tuple[np.ndarray, ScalarType]:
    return np.array(values, np.float32), FLOAT


def test_fmin_fmax_return_the_non_nan_operand() -> None:
    nan = math.nan
    x, y = f32(nan, 1.0, nan, 2.0), f32(3.0, nan, nan, 1.0)
    for name in ("fmin", "min"):
        got = call(name, x, y).tolist()
        assert got[:2] == [3.0, 1.0] and math.isnan(got[2]) and got[3] == 1.0
    for name in ("fmax", "max"):
        got = call(name, x, y).tolist()
        assert got[:2] == [3.0, 1.0] and math.isnan(got[2]) and got[3] == 2.0
    # "y if y < x else x": equal zeros give x.
    assert math.copysign(1, call("fmin", f32(0.0), f32(-0.0))[0]) == 1
    assert math.copysign(1, call("fmax", f32(-0.0), f32(0.0))[0]) == -1
    assert call("fmin3", f32(nan), f32(5.0), f32(4.0)).tolist() == [4.0]
    assert call("fmedian3", f32(1.0), f32(nan), f32(nan)).tolist() == [1.0]
    assert call("median3", f32(3.0), f32(1.0), f32(2.0)).tolist() == [2.0]
    assert call("clamp", f32(nan, 5.0, -5.0), f32(0.0), f32(1.0)).tolist() == [0.0, 1.0, 0.0]
    assert call("saturate", f32(nan, 2.0, -1.0, 0.5)).tolist() == [0.0, 1.0, 0.0, 0.5]


def test_round_ties_and_rint_ties() -> None:
    x = f32(0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997)
    assert call("round", x).tolist() == [1.0, 2.0, 3.0, -1.0, -2.0, -3.0, 0.0]
    assert call("rint", x).tolist() == [0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 0.0]
    assert math.copysign(1, call("round", f32(-0.25))[0]) == -1


def test_common_functions() -> None:
    nan = math.nan
    sign = call("sign", f32(3.0, -2.0, 0.0, -0.0, nan)).tolist()
    assert sign == [1.0, -1.0, 0.0, 0.0, 0.0] and math.copysign(1, sign[3]) == -1
    assert call("step", f32(1.0), f32(0.5, 1.0, 2.0)).tolist() == [0.0, 1.0, 1.0]
    assert call("smoothstep", f32(0.0), f32(1.0), f32(-1.0, 0.5, 2.0)).tolist() == [0, 0.5, 1]
    assert call("mix", f32(1.0), f32(3.0), f32(0.25)).tolist() == [1.5]
    assert call("fract", f32(-1e-10, -0.25, 1.75)).tolist() == [
        float(np.nextafter(np.float32(1), np.float32(0))), 0.75, 0.75]
    assert call("powr", f32(-1.0, 0.0, 4.0, 1.0), f32(2.0, 0.0, 0.5, math.inf))[2] == 2.0
    assert np.isnan(call("powr", f32(-1.0, 0.0, 1.0), f32(2.0, 0.0, math.inf))).all()
    assert call("pow", f32(-2.0, 1.0), f32(3.0, nan)).tolist() == [-8.0, 1.0]
    assert call("exp", (np.array([-math.inf], np.float32), FLOAT)).tolist() == [0.0]


def test_sinpi_family_exact_points() -> None:
    x = f32(0.0, 0.5, 1.0, 1.5, 2.0, -1.0, 1e20)
    assert call("sinpi", x).tolist() == [0.0, 1.0, 0.0, -1.0, 0.0, 0.0, 0.0]
    assert call("cospi", x).tolist() == [1.0, 0.0, -1.0, 0.0, 1.0, -1.0, 1.0]
    assert call("tanpi", f32(0.25, 0.5, -0.25)).tolist() == [1.0, math.inf, -1.0]


# --- Relational, vector and geometric functions --------------------------------------------------

F3, F4 = VectorType(FLOAT, 3), VectorType(FLOAT, 4)


def test_relational_functions() -> None:
    h3 = VectorType(HALF, 3)
    x = np.array([[math.nan, math.inf, -0.0], [1e-6, 1.0, -2.0]], np.float16)
    assert call("isnan", (x, h3)).tolist() == [[True, False, False], [False] * 3]
    assert call("isinf", (x, h3)).tolist() == [[False, True, False], [False] * 3]
    assert call("isfinite", (x, h3)).tolist() == [[False, False, True], [True] * 3]
    assert call("isnormal", (x, h3)).tolist() == [[False, False, False], [False, True, True]]
    assert call("signbit", (x, h3)).tolist() == [[False, False, True], [False, False, True]]
    b3 = VectorType(BOOL, 3)
    flags = np.array([[True, False, True], [True, True, True]])
    assert call("all", (flags, b3)).tolist() == [False, True]
    assert call("any", (~flags, b3)).tolist() == [True, False]
    assert call("not", (flags, b3)).tolist() == (~flags).tolist()
    i3 = VectorType(INT, 3)
    a, b = np.zeros((2, 3), np.int32), np.ones((2, 3), np.int32)
    assert call("select", (a, i3), (b, i3), (flags, b3)).tolist() == flags.astype(int).tolist()
    assert call("select", f32(1.0), f32(2.0), (np.array([True]), BOOL)).tolist() == [2.0]
    assert call("isunordered", f32(1.0, math.nan), f32(2.0, 1.0)).tolist() == [False, True]


def test_geometric_functions() -> None:
    x = np.array([[3.0, 4.0, 0.0], [1.0, 2.0, 2.0]], np.float32)
    y = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], np.float32)
    assert call("dot", (x, F3), (y, F3)).tolist() == [0.0, 1.0]
    assert call("length", (x, F3)).tolist() == [5.0, 3.0]
    assert call("length_squared", (x, F3)).tolist() == [25.0, 9.0]
    assert call("distance", (x, F3), (x, F3)).tolist() == [0.0, 0.0]
    assert call("normalize", (x, F3))[0].tolist() == [0.6000000238418579, 0.800000011920929, 0]
    assert call("cross", (y, F3), (x, F3))[0].tolist() == [-4.0, 3.0, 0.0]
    assert call("reflect", (y, F3), (y, F3))[0].tolist() == [0.0, 0.0, -1.0]
    assert call("faceforward", (y, F3), (y, F3), (y, F3))[1].tolist() == [-1.0, 0.0, 0.0]
    eta = np.array([1.0, 1.0], np.float32)
    assert call("refract", (-y, F3), (y, F3), (eta, FLOAT)).tolist() == (-y).tolist()
    v = np.array([[1.0, -2.0, 3.0, 0.5]], np.float32)
    clamped = call("clamp", (v, F4), (np.float32(0), FLOAT), (np.float32(1), FLOAT))
    assert clamped.tolist() == [[1.0, 0.0, 1.0, 0.5]]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3, width=32), min_size=8, max_size=8))
def test_dot_and_length_match_float64(values: list[float]) -> None:
    x = np.array(values, np.float32).reshape(2, 4)
    expected = np.sum(x.astype(np.float64) ** 2, axis=-1)
    got = call("dot", (x, F4), (x, F4)).astype(np.float64)
    assert np.all(np.abs(got - expected) <= 1e-6 * expected + 1e-30)
    norm = call("length", (x, F4)).astype(np.float64)
    assert np.all(np.abs(norm - np.sqrt(expected)) <= 1e-6 * np.sqrt(expected) + 1e-30)


# --- Integer functions against Python integers ----------------------------------------------------

def _wrap(v: int, t: ScalarType) -> int:
    v %= 2 ** t.bits
    return v - 2 ** t.bits if t.signed and v >= 2 ** (t.bits - 1) else v


def _saturate_to(v: int, t: ScalarType) -> int:
    info = np.iinfo(t.dtype)
    return max(int(info.min), min(int(info.max), v))


def _reverse(x: int, t: ScalarType) -> int:
    return _wrap(int(format(x % 2 ** t.bits, f"0{t.bits}b")[::-1], 2), t)


def _ctz(x: int, t: ScalarType) -> int:
    u = x % 2 ** t.bits
    return t.bits if u == 0 else (u & -u).bit_length() - 1


def _rotate(x: int, s: int, t: ScalarType) -> int:
    u, s = x % 2 ** t.bits, s % t.bits
    return _wrap((u << s) | (u >> (t.bits - s)), t)


INTEGER_REFS: dict[str, Callable[..., int]] = {
    "clz": lambda t, x: t.bits - (x % 2 ** t.bits).bit_length(),
    "ctz": lambda t, x: _ctz(x, t),
    "popcount": lambda t, x: bin(x % 2 ** t.bits).count("1"),
    "reverse_bits": lambda t, x: _reverse(x, t),
    "abs": lambda t, x: _wrap(abs(x), t),
    "mulhi": lambda t, x, y: _wrap((x * y) >> t.bits, t),
    "madhi": lambda t, x, y, z: _wrap(((x * y) >> t.bits) + z, t),
    "madsat": lambda t, x, y, z: _saturate_to(x * y + z, t),
    "rotate": lambda t, x, y: _rotate(x, y, t),
    "absdiff": lambda t, x, y: abs(x - y),
    "addsat": lambda t, x, y: _saturate_to(x + y, t),
    "subsat": lambda t, x, y: _saturate_to(x - y, t),
    "hadd": lambda t, x, y: (x + y) >> 1,
    "rhadd": lambda t, x, y: (x + y + 1) >> 1,
    "min": lambda t, x, y: min(x, y),
    "max": lambda t, x, y: max(x, y),
    "clamp": lambda t, x, lo, hi: min(max(x, lo), hi),
    "min3": lambda t, x, y, z: min(x, y, z),
    "max3": lambda t, x, y, z: max(x, y, z),
    "median3": lambda t, x, y, z: sorted([x, y, z])[1],
}


def ints(t: ScalarType) -> st.SearchStrategy[int]:
    info = np.iinfo(t.dtype)
    return st.one_of(st.integers(int(info.min), int(info.max)),
                     st.sampled_from([0, 1, int(info.min), int(info.max)]),
                     st.integers(max(-9, int(info.min)), 9))


@pytest.mark.parametrize("name", sorted(INTEGER_REFS))
@pytest.mark.parametrize("t", INTS, ids=str)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_integer_functions_match_python(name: str, t: ScalarType, data: st.DataObject) -> None:
    ref = INTEGER_REFS[name]
    arity = ref.__code__.co_argcount - 1
    args = [data.draw(st.lists(ints(t), min_size=LANES, max_size=LANES)) for _ in range(arity)]
    got = call(name, *((np.array(a, t.dtype), t) for a in args))
    expected = [ref(t, *vals) for vals in zip(*args)]
    assert got.tolist() == expected, (name, t, args)


@pytest.mark.parametrize("t", INTS, ids=str)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_bit_field_functions(t: ScalarType, data: st.DataObject) -> None:
    w = t.bits
    fields = data.draw(st.lists(st.integers(0, w).flatmap(
        lambda n: st.tuples(st.integers(0, w - n), st.just(n))), min_size=LANES, max_size=LANES))
    base, insert = (data.draw(st.lists(ints(t), min_size=LANES, max_size=LANES)) for _ in "ab")
    offsets, counts = (np.array(col, np.uint32) for col in zip(*fields))
    extracted = call("extract_bits", (np.array(base, t.dtype), t), (offsets, UINT),
                     (counts, UINT))
    merged = call("insert_bits", (np.array(base, t.dtype), t), (np.array(insert, t.dtype), t),
                  (offsets, UINT), (counts, UINT))
    for i, ((off, n), b, ins) in enumerate(zip(fields, base, insert)):
        field = (b >> off) & ((1 << n) - 1)
        if t.signed and n and field >> (n - 1):
            field -= 1 << n          # signed types sign-extend the field
        assert int(extracted[i]) == field, (b, off, n)
        mask = ((1 << n) - 1) << off
        assert int(merged[i]) == _wrap((b & ~mask) | ((ins << off) & mask), t), (b, ins, off, n)


def test_integer_edge_cases() -> None:
    int_min = np.array([-(2**31)], np.int32)
    assert call("abs", (int_min, INT)).tolist() == [-(2**31)]     # wraps
    assert call("clz", (np.array([0, 1], np.uint8), UCHAR)).tolist() == [8, 7]
    assert call("ctz", (np.array([0], np.int64), LONG)).tolist() == [64]
    assert call("popcount", (np.array([-1], np.int16), SHORT)).tolist() == [16]
    assert call("mul24", (np.array([2**23 - 1], np.int32), INT),
                (np.array([-3], np.int32), INT)).tolist() == [-(2**23 - 1) * 3]
    assert call("mad24", (np.array([7], np.uint32), UINT), (np.array([6], np.uint32), UINT),
                (np.array([1], np.uint32), UINT)).tolist() == [43]
    diff = call("absdiff", (int_min, INT), (np.array([2**31 - 1], np.int32), INT))
    assert diff.dtype == np.uint32 and diff.tolist() == [2**32 - 1]


# --- Overload resolution -------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "args", "params", "result"), [
    ("sqrt", [INT], [FLOAT], FLOAT),
    ("pow", [HALF, INT], [HALF, HALF], HALF),
    ("max", [UINT, UINT], [UINT, UINT], UINT),
    ("max", [F4, FLOAT], [F4, F4], F4),
    ("clamp", [F4, FLOAT, FLOAT], [F4, F4, F4], F4),
    ("mix", [F4, F4, INT], [F4, F4, F4], F4),
    ("ldexp", [F4, INT], [F4, VectorType(INT, 4)], F4),
    ("absdiff", [CHAR, CHAR], [CHAR, CHAR], UCHAR),
    ("dot", [F3, F3], [F3, F3], FLOAT),
    ("isnan", [VectorType(HALF, 2)], [VectorType(HALF, 2)], VectorType(BOOL, 2)),
    ("all", [VectorType(BOOL, 4)], [VectorType(BOOL, 4)], BOOL),
    ("select", [INT, INT, BOOL], [INT, INT, BOOL], INT),
    ("extract_bits", [INT, INT, INT], [INT, UINT, UINT], INT),
    ("refract", [F3, F3, FLOAT], [F3, F3, FLOAT], F3),
    ("abs", [VectorType(BFLOAT, 2)], [VectorType(BFLOAT, 2)], VectorType(BFLOAT, 2)),
])
def test_resolve(name: str, args: list[Type], params: list[Type], result: Type) -> None:
    assert mathlib.resolve(name, args) == (params, result)


@pytest.mark.parametrize(("name", "args", "message"), [
    ("max", [INT, UINT], "no matching function for call to 'max(int, uint)'; cast one argument"),
    ("min", [FLOAT, INT], "cast one argument"),
    ("pow", [HALF, FLOAT], "different floating-point types"),
    ("sqrt", [VectorType(INT, 4)], "no implicit conversion between vector types"),
    ("max", [F4, VectorType(FLOAT, 2)], "different lengths"),
    ("cross", [F4, F4], "3-component"),
    ("dot", [FLOAT, FLOAT], "needs vector arguments"),
    ("clz", [FLOAT], "does not accept 'float'"),
    ("mul24", [LONG, LONG], "does not accept 'long'"),
    ("fmax", [FLOAT], "takes 2 argument"),
    ("select", [F4, F4, BOOL], "bool4"),
    ("ldexp", [FLOAT, FLOAT], "must be int"),
    ("frobnicate", [INT], "undeclared identifier 'frobnicate'"),
])
def test_overload_errors(name: str, args: list[Type], message: str) -> None:
    with pytest.raises(LookupError, match=message.replace("(", r"\(").replace(")", r"\)")):
        mathlib.resolve(name, args)


def test_variants() -> None:
    x = f32(0.5, 2.0)
    assert call("exp", x, variant="fast").tolist() == call("exp", x).tolist()
    with pytest.raises(ValueError, match="variant"):
        call("exp", x, variant="relaxed")


def test_every_function_runs_on_0d_constants() -> None:
    for name, fn in mathlib.FUNCTIONS.items():
        elem = sorted(fn.elems, key=str)[0]
        vector = fn.vector is not None     # geometric functions take 3-vectors
        roles = {"T": (np.zeros(3 if vector else (), elem.dtype),
                       VectorType(elem, 3) if vector else elem),
                 "Ti": (np.int32(1), INT), "u": (np.uint32(1), UINT),
                 "Tb": (np.zeros(3, bool), VectorType(BOOL, 3)) if vector else (True, BOOL),
                 "Ts": (np.zeros((), elem.dtype), elem)}
        out = call(name, *(roles[role] for role in fn.params))
        assert out.shape in ((), (3,)), name
