"""metalsim.exec.arith against gcc: the same C operations on <stdint.h> types, bit for bit.

Each gcc test generates one C program covering all its type pairs and operators, compiles it once
(cached in a temp dir keyed by the source hash) and feeds it every case of a hypothesis example on
stdin in one run. Behaviour that is undefined in C (integer division by zero, INT_MIN / -1,
out-of-range float -> int) is skipped on the C side and checked against MSL's rules here instead.
bfloat has no gcc 12 arithmetic, so it is checked against exact rational arithmetic.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from exact_rounding import round_exact
from hypothesis import given, settings
from hypothesis import strategies as st

from metalsim.exec import arith
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
    VectorType,
    common_type,
    promote,
)

GCC = shutil.which("gcc")
pytestmark = [pytest.mark.skipif(GCC is None, reason="gcc is the oracle for these tests"),
              pytest.mark.filterwarnings("error")]   # arith must never emit numpy warnings

FLAGS = ("-O0", "-ffp-contract=off", "-fno-strict-overflow", "-fwrapv")
CACHE = Path(tempfile.gettempdir()) / "metalsim-gcc-oracle"
INTS = (CHAR, UCHAR, SHORT, USHORT, INT, UINT, LONG, ULONG)
C_NAMES = {BOOL: "_Bool", CHAR: "int8_t", UCHAR: "uint8_t", SHORT: "int16_t",
           USHORT: "uint16_t", INT: "int32_t", UINT: "uint32_t", LONG: "int64_t",
           ULONG: "uint64_t", HALF: "_Float16", FLOAT: "float"}
INT_OPS = ("+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "<", ">", "<=", ">=", "==", "!=")
FLOAT_OPS = ("+", "-", "*", "/", "<", ">", "<=", ">=", "==", "!=")
LANES = 6   # values per type pair and operator in one hypothesis example

PRELUDE = r"""
#include <stdint.h>
#include <stdio.h>
#include <string.h>
/* Print a value's bytes, size and kind (2 float, 1 signed, 0 unsigned) so Python can check the
   C result type as well as the value. */
#define KIND(v) _Generic((v), float: 2, _Float16: 2, default: ((__typeof__(v))-1 < 0))
#define EMIT(x) do { __typeof__(x) r_ = (x); unsigned long long u_ = 0; memcpy(&u_, &r_, \
    sizeof r_); printf("%llx %d %d\n", u_, (int)sizeof r_, (int)KIND(r_)); } while (0)
#define LOAD(T, v, raw) T v; memcpy(&v, &raw, sizeof v)
#define MINOF(v) ((__typeof__(v))(1ULL << (8 * sizeof(v) - 1)))
/* Integer division by zero and MIN / -1 are undefined in C: the oracle skips them. */
#define DIV_UB(a, b) ({ __typeof__((a) + (b)) ca_ = (a), cb_ = (b); \
    cb_ == 0 || ((__typeof__(ca_))-1 < 0 && cb_ == -1 && ca_ == MINOF(ca_)); })
int main(void) {
    int k, op;
    unsigned long long ra, rb;
    while (scanf("%d %d %llx %llx", &k, &op, &ra, &rb) == 4) {
        switch (k) {
"""
EPILOGUE = "        }\n    }\n    return 0;\n}\n"


@functools.cache
def build(cases: str) -> Path:
    """Compile the oracle program with these switch cases (once per source, cached on disk)."""
    source = PRELUDE + cases + EPILOGUE
    key = hashlib.sha256((source + " ".join(FLAGS)).encode()).hexdigest()[:20]
    exe = CACHE / f"oracle-{key}"
    if not exe.exists():
        CACHE.mkdir(exist_ok=True)
        c_file = CACHE / f"oracle-{key}.c"
        c_file.write_text(source)
        tmp = CACHE / f"oracle-{key}.{os.getpid()}.tmp"   # rename: safe for parallel runs
        subprocess.run([GCC, *FLAGS, str(c_file), "-o", str(tmp)], check=True,
                       capture_output=True)
        tmp.replace(exe)
    return exe


def run(exe: Path, records: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int] | None]:
    """Feed (case, op, raw a, raw b) records; one (bits, size, kind) or None (skipped) each."""
    text = "".join(f"{k} {op} {a:x} {b:x}\n" for k, op, a, b in records)
    out = subprocess.run([str(exe)], input=text, capture_output=True, text=True, check=True)
    results: list[tuple[int, int, int] | None] = []
    for line in out.stdout.splitlines():
        if line == "skip":
            results.append(None)
        else:
            bits, size, kind = line.split()
            results.append((int(bits, 16), int(size), int(kind)))
    assert len(results) == len(records)
    return results


def c_kind(dtype: np.dtype) -> int:
    return 2 if dtype.kind == "f" else int(dtype.kind == "i")


def raw_bits(a: np.ndarray) -> list[int]:
    """Each element's bit pattern as a non-negative int."""
    a = np.ascontiguousarray(a)
    if a.dtype == np.bool_:
        return [int(v) for v in a.reshape(-1)]
    return [int(v) for v in a.view(arith.unsigned_dtype(a.dtype)).reshape(-1)]


def from_raw(raw: list[int], t: ScalarType) -> np.ndarray:
    """Values of type `t` from their bit patterns (the low bytes of each int)."""
    if t == BOOL:
        return np.array(raw, dtype=bool)
    bits = np.array([r % 2**64 for r in raw], dtype=np.uint64)
    return bits.astype(arith.unsigned_dtype(t.dtype)).view(t.dtype)


def float_bits(x: float, dtype: type) -> int:
    return raw_bits(np.array([x], dtype=dtype))[0]


def values(t: ScalarType) -> st.SearchStrategy[int]:
    """Bit patterns of interesting values of type `t`: edges, small numbers and anything."""
    if t == BOOL:
        return st.integers(0, 1)
    if t.kind == "int":
        info = np.iinfo(t.dtype)
        edges = [v for v in (0, 1, 2, 7, -1, -2, -7, info.min, info.max, info.min + 1,
                             info.max - 1, 2**53 + 1, 2**60 + 2**36 + 1, 2**63 + 2**39 + 1)
                 if info.min <= v <= info.max]
        anything = st.one_of(st.sampled_from(edges), st.integers(max(-70, int(info.min)), 70),
                             st.integers(int(info.min), int(info.max)))
        return anything.map(lambda v: v % 2**64)
    if t == HALF:
        floats = st.one_of(st.floats(width=16), st.floats(-300, 300, width=16),
                           st.sampled_from([0.5, 1.5, 2.5, -0.5, 2.0**-24, 65504.0]))
        return floats.map(lambda x: float_bits(x, np.float16))
    floats = st.one_of(st.floats(width=32), st.floats(-300, 300, width=32),
                       st.floats(-2.0**65, 2.0**65, width=32),
                       st.sampled_from([0.5, 1.5, 2.5, -0.5, 1e-45, 2.0**31, 2.0**63, -2.0**63,
                                        2.0**64 - 2.0**40]))
    return floats.map(lambda x: float_bits(x, np.float32))


def check(expected: np.ndarray, got: list[tuple[int, int, int] | None], context: str,
          *, comparison: bool = False, on_skip: Callable[[int], None] | None = None) -> None:
    """Compare Python's lanes with gcc's lines bit for bit (any NaN matches any NaN)."""
    exp_bits = raw_bits(expected)
    for lane, line in enumerate(got):
        where = f"{context}, lane {lane}"
        if line is None:
            assert on_skip is not None, f"{where}: unexpected skip"
            on_skip(lane)
            continue
        bits, size, kind = line
        if comparison:
            assert bits == int(expected[lane]), where
            continue
        assert (size, kind) == (expected.dtype.itemsize, c_kind(expected.dtype)), \
            f"{where}: C result type differs from {expected.dtype}"
        if expected.dtype.kind == "f" and np.isnan(expected[lane]):
            nan_c = np.array([bits], dtype=np.uint64).astype(
                arith.unsigned_dtype(expected.dtype)).view(expected.dtype)[0]
            assert np.isnan(nan_c), f"{where}: expected NaN, got {bits:#x}"
        else:
            assert bits == exp_bits[lane], f"{where}: expected {exp_bits[lane]:#x}, gcc {bits:#x}"


def c_binary(op: str, ints: bool) -> str:
    """A C statement printing `a op b` computed as MSL does."""
    if op in ("<<", ">>"):    # MSL masks the count to the promoted left type's width
        return f"EMIT(a {op} (b & (8 * (int)sizeof(+a) - 1)));"
    # Convert the operands explicitly: C may otherwise evaluate _Float16 operations on ints with
    # excess precision (the int never rounded to half), which MSL does not do.
    emit = f"EMIT(ca {op} cb);"
    if op in ("/", "%") and ints:
        emit = f'if (DIV_UB(ca, cb)) puts("skip"); else {emit}'
    return f"{{ __typeof__(a + b) ca = a, cb = b; {emit} }}"


def binary_program(pairs: list[tuple[ScalarType, ScalarType]], ops: tuple[str, ...]) -> str:
    cases = []
    for k, (ta, tb) in enumerate(pairs):
        ints = ta.kind == tb.kind == "int"
        body = " ".join(f"case {j}: {c_binary(op, ints)} break;" for j, op in enumerate(ops))
        cases.append(f"case {k}: {{ LOAD({C_NAMES[ta]}, a, ra); LOAD({C_NAMES[tb]}, b, rb); "
                     f"switch (op) {{ {body} }} break; }}\n")
    return "".join(cases)


def msl_binary(op: str, ta: ScalarType, tb: ScalarType, x: np.ndarray,
               y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What MSL computes for `x op y`: (result, the right operand as converted)."""
    if op in ("<<", ">>"):
        t = promote(ta)
        return arith.binary(op, arith.convert(x, ta, t), y, t), y
    t = common_type(ta, tb)
    cy = arith.convert(y, tb, t)
    return arith.binary(op, arith.convert(x, ta, t), cy, t), cy


def check_binary_batch(data: st.DataObject, pairs: list[tuple[ScalarType, ScalarType]],
                       ops: tuple[str, ...]) -> None:
    exe = build(binary_program(pairs, ops))
    types = {t for pair in pairs for t in pair}
    xs = {t: data.draw(st.lists(values(t), min_size=LANES, max_size=LANES)) for t in types}
    ys = {t: data.draw(st.lists(values(t), min_size=LANES, max_size=LANES)) for t in types}
    records = [(k, j, a, b) for k, (ta, tb) in enumerate(pairs) for j in range(len(ops))
               for a, b in zip(xs[ta], ys[tb])]
    got = run(exe, records)
    pos = 0
    for ta, tb in pairs:
        x, y = from_raw(xs[ta], ta), from_raw(ys[tb], tb)
        for op in ops:
            result, cy = msl_binary(op, ta, tb, x, y)

            def undefined_in_c(lane: int, op: str = op, result: np.ndarray = result,
                               cy: np.ndarray = cy) -> None:
                # MSL: 0 for a zero divisor (simulator's choice); MIN / -1 wraps, MIN % -1 is 0.
                wrapped_min = np.iinfo(result.dtype).min if op == "/" else 0
                assert result[lane] == (0 if cy[lane] == 0 else wrapped_min)

            check(result, got[pos:pos + LANES], f"{ta} {op} {tb} with {x}, {y}",
                  comparison=op in arith.COMPARISONS, on_skip=undefined_in_c)
            pos += LANES


@settings(max_examples=12, deadline=None)
@given(st.data())
def test_integer_operators_match_gcc(data: st.DataObject) -> None:
    check_binary_batch(data, [(a, b) for a in INTS for b in INTS], INT_OPS)


FLOAT_PAIRS = [(FLOAT, FLOAT), (HALF, HALF), (HALF, FLOAT), (FLOAT, HALF)] + [
    pair for t in INTS for pair in ((FLOAT, t), (t, FLOAT), (HALF, t), (t, HALF))]


@settings(max_examples=15, deadline=None)
@given(st.data())
def test_float_and_half_operators_match_gcc(data: st.DataObject) -> None:
    check_binary_batch(data, FLOAT_PAIRS, FLOAT_OPS)


CONVERTIBLE = (BOOL, *INTS, HALF, FLOAT)


def in_c_range(raw: int, src: ScalarType, dst: ScalarType) -> bool:
    """Whether C defines the conversion (float -> int needs the truncated value in range)."""
    if src.kind != "float" or dst.kind != "int":
        return True
    value = float(from_raw([raw], src)[0])
    info = np.iinfo(dst.dtype)
    return math.isfinite(value) and info.min <= math.trunc(value) <= info.max


def conversion_program(pairs: list[tuple[ScalarType, ScalarType]]) -> Path:
    return build("".join(f"case {k}: {{ LOAD({C_NAMES[s]}, a, ra); EMIT(({C_NAMES[d]})a); "
                         "break; }\n" for k, (s, d) in enumerate(pairs)))


@settings(max_examples=15, deadline=None)
@given(st.data())
def test_conversions_match_gcc(data: st.DataObject) -> None:
    pairs = [(s, d) for s in CONVERTIBLE for d in CONVERTIBLE]
    inputs = {t: data.draw(st.lists(values(t), min_size=3 * LANES, max_size=3 * LANES))
              for t in CONVERTIBLE}
    defined = [[r for r in inputs[s] if in_c_range(r, s, d)] for s, d in pairs]
    got = run(conversion_program(pairs),
              [(k, 0, r, 0) for k, raw in enumerate(defined) for r in raw])
    pos = 0
    for (s, d), raw in zip(pairs, defined):
        x = from_raw(raw, s)
        check(arith.convert(x, s, d), got[pos:pos + len(raw)], f"({d}){s} of {x}")
        pos += len(raw)


def test_int64_to_float_rounds_once() -> None:
    # Through float64 these would round twice: each is just above a float32 halfway point.
    signed = [2**60 + 2**36 + 1, -(2**60 + 2**36 + 1), 2**63 - 1, -(2**63), 2**54 + 2**30 + 1]
    unsigned = [2**64 - 1, 2**63 + 2**39 + 1, 2**64 - 2**39 - 1, 2**53 + 1]
    exe = conversion_program([(LONG, FLOAT), (ULONG, FLOAT)])
    for k, (t, vals) in enumerate(((LONG, signed), (ULONG, unsigned))):
        raw = [v % 2**64 for v in vals]
        x = from_raw(raw, t)
        check(arith.convert(x, t, FLOAT), run(exe, [(k, 0, r, 0) for r in raw]), f"{t}")


UNARY = {"-": "-a", "+": "+a", "~": "~a", "!": "!a"}
UNARY_TYPES = (*INTS, HALF, FLOAT)


def unary_ops(t: ScalarType) -> list[str]:
    return [op for op in UNARY if op != "~" or t.kind == "int"]


@settings(max_examples=10, deadline=None)
@given(st.data())
def test_unary_operators_match_gcc(data: st.DataObject) -> None:
    cases = []
    for k, t in enumerate(UNARY_TYPES):
        body = " ".join(f"case {j}: EMIT({UNARY[op]}); break;" for j, op in enumerate(unary_ops(t)))
        cases.append(f"case {k}: {{ LOAD({C_NAMES[t]}, a, ra); switch (op) {{ {body} }} "
                     "break; }\n")
    inputs = {t: data.draw(st.lists(values(t), min_size=LANES, max_size=LANES))
              for t in UNARY_TYPES}
    got = run(build("".join(cases)), [(k, j, r, 0) for k, t in enumerate(UNARY_TYPES)
                                      for j in range(len(unary_ops(t))) for r in inputs[t]])
    pos = 0
    for t in UNARY_TYPES:
        x, rt = from_raw(inputs[t], t), promote(t)
        for op in unary_ops(t):
            result = arith.unary(op, arith.convert(x, t, rt), rt)
            check(result, got[pos:pos + LANES], f"{op}({t}) of {x}", comparison=op == "!")
            pos += LANES


# --- bfloat: exact rational reference ------------------------------------------------------------



BF16 = np.dtype(ml_dtypes.bfloat16)


def bfloat_values() -> st.SearchStrategy[float]:
    """Finite bfloat values of every magnitude, subnormals included."""
    return st.integers(0, 0xFFFF).map(
        lambda b: float(np.array([b], np.uint16).view(BF16)[0])).filter(math.isfinite)


@settings(max_examples=80, deadline=None)
@given(st.lists(bfloat_values(), min_size=2, max_size=2), st.sampled_from(["+", "-", "*", "/"]))
def test_bfloat_arithmetic_is_correctly_rounded(xy: list[float], op: str) -> None:
    x, y = (np.array([v], BF16) for v in xy)
    got = float(arith.binary(op, x, y, BFLOAT)[0])
    if op == "/" and xy[1] == 0:
        assert math.isnan(got) if xy[0] == 0 else math.isinf(got)
        return
    a, b = Fraction(xy[0]), Fraction(xy[1])
    exact = {"+": a + b, "-": a - b, "*": a * b, "/": a / b if b else a}[op]
    # An exact zero takes its IEEE sign, which float64 arithmetic reproduces exactly.
    expected = round_exact(exact, BFLOAT) if exact else float(
        arith.binary(op, np.float64(xy[0]), np.float64(xy[1]), FLOAT))
    assert (got, math.copysign(1, got)) == (expected, math.copysign(1, expected)), \
        f"{xy[0]} {op} {xy[1]}"


def expected_float(value: float | int, dst: ScalarType) -> float:
    """The correctly rounded conversion of a number (infinities stay infinite)."""
    if isinstance(value, float) and math.isinf(value):
        return value
    return round_exact(Fraction(value), dst)


SOURCES = {FLOAT: st.floats(width=32, allow_nan=False), HALF: st.floats(width=16, allow_nan=False),
           BFLOAT: bfloat_values(), LONG: st.integers(-2**63, 2**63 - 1),
           ULONG: st.integers(0, 2**64 - 1), INT: st.integers(-2**31, 2**31 - 1)}


@settings(max_examples=150, deadline=None)
@given(st.data(), st.sampled_from(list(SOURCES)), st.sampled_from([FLOAT, HALF, BFLOAT]))
def test_conversions_to_floats_round_once(data: st.DataObject, src: ScalarType,
                                          dst: ScalarType) -> None:
    value = data.draw(SOURCES[src])
    x = np.array([value], src.dtype)
    assert float(arith.convert(x, src, dst)[0]) == expected_float(value, dst)
    for other in (FLOAT, HALF, BFLOAT):   # and through each float type in between
        middle = arith.convert(x, src, other)
        assert float(arith.convert(middle, other, dst)[0]) == expected_float(
            float(middle[0]), dst)


def test_int_to_bfloat_rounds_once() -> None:
    # Each value is just above a bfloat halfway point; a float32 on the way would round it onto
    # the halfway point, and the second rounding would then go to even (down).
    for t, value, expected in ((INT, 2**30 + 2**22 + 1, 2**30 + 2**23),
                               (LONG, -(2**40 + 2**32 + 1), -(2**40 + 2**33)),
                               (ULONG, 2**63 + 2**55 + 1, 2**63 + 2**56)):
        got = arith.convert(np.array([value], t.dtype), t, BFLOAT)
        assert float(got[0]) == expected


def test_float32_to_bfloat_ties_to_even() -> None:
    bits = np.array([0x3F808000, 0x3F818000, 0x3F808001, 0x7F7FFFFF, 0x00008000],
                    dtype=np.uint32)
    got = arith.convert(bits.view(np.float32), FLOAT, BFLOAT).view(np.uint16)
    assert [hex(b) for b in got] == ["0x3f80", "0x3f82", "0x3f81", "0x7f80", "0x0"]


# --- MSL rules beyond C ---------------------------------------------------------------------------

def test_classic_traps() -> None:
    u = arith.binary("-", np.array([0], np.uint32), np.array([1], np.uint32), UINT)
    assert u.dtype == np.uint32 and u[0] == 4294967295
    seven, two = np.array([-7], np.int32), np.array([2], np.int32)
    assert arith.binary("/", seven, two, INT)[0] == -3
    assert arith.binary("%", seven, two, INT)[0] == -1
    t = common_type(INT, UINT)
    assert t == UINT
    q = arith.binary("/", arith.convert(np.array([-1], np.int32), INT, t),
                     np.array([4], np.uint32), t)
    assert q.dtype == np.uint32 and q[0] == 1073741823
    assert common_type(SHORT, SHORT) == INT
    s = np.array([30000], np.int16)
    total = arith.binary("+", arith.convert(s, SHORT, INT), arith.convert(s, SHORT, INT), INT)
    assert total[0] == 60000
    one = np.array([1], np.int32)
    assert arith.binary("<<", one, np.array([33], np.int32), INT)[0] == 2
    assert arith.binary("<<", np.array([1], np.int64), np.array([65], np.int32), LONG)[0] == 2
    assert arith.binary(">>", np.array([-8], np.int32), np.array([1], np.int32), INT)[0] == -4
    # uchar << 9 happens in int after promotion, so nothing is lost.
    promoted = arith.convert(np.array([1], np.uint8), UCHAR, INT)
    assert arith.binary("<<", promoted, np.array([9], np.int32), INT)[0] == 512


def test_scalars_and_0d_wrap_without_warnings() -> None:
    assert arith.binary("+", np.int32(2**31 - 1), np.int32(1), INT) == -(2**31)
    assert arith.binary("*", np.asarray(np.uint8(200)), np.uint8(2), UCHAR) == 144
    assert arith.binary("-", np.int64(-(2**63)), np.int64(1), LONG) == 2**63 - 1
    assert arith.unary("-", np.int32(-(2**31)), INT) == -(2**31)
    assert arith.binary("/", np.int32(-(2**31)), np.int32(-1), INT) == -(2**31)
    assert arith.binary("%", np.int32(-(2**31)), np.int32(-1), INT) == 0
    assert arith.binary("/", np.int32(5), np.int32(0), INT) == 0
    assert arith.binary("/", np.float32(1), np.float32(0), FLOAT) == np.inf
    assert np.isnan(arith.binary("/", np.float32(0), np.float32(0), FLOAT))


def test_float_to_int_saturates_and_nan_is_zero() -> None:
    x = np.array([np.nan, 3e9, -3e9, np.inf, -np.inf, -0.9, 2.9], np.float32)
    assert arith.convert(x, FLOAT, INT).tolist() == [0, 2**31 - 1, -(2**31), 2**31 - 1,
                                                      -(2**31), 0, 2]
    assert arith.convert(x, FLOAT, UINT).tolist() == [0, 3000000000, 0, 2**32 - 1, 0, 0, 2]
    big = np.array([1e30, -1e30], np.float32)
    assert arith.convert(big, FLOAT, LONG).tolist() == [2**63 - 1, -(2**63)]
    assert arith.convert(big, FLOAT, ULONG).tolist() == [2**64 - 1, 0]
    assert arith.convert(np.array([np.nan, -0.0, 0.5], np.float32), FLOAT, BOOL).tolist() == [
        True, False, True]


def test_vectors_and_splat() -> None:
    f4 = VectorType(FLOAT, 4)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    assert arith.binary("*", x, x, f4).shape == (2, 4)
    splat = arith.convert(np.array([1, 2], np.int32), INT, f4)
    assert splat.dtype == np.float32 and splat.tolist() == [[1.0] * 4, [2.0] * 4]
    i4 = arith.convert(x, f4, VectorType(INT, 4))
    assert i4.dtype == np.int32 and i4[1].tolist() == [4, 5, 6, 7]
    with pytest.raises(TypeError):
        arith.convert(x, f4, FLOAT)
    with pytest.raises(TypeError):
        arith.convert(x, f4, VectorType(FLOAT, 2))


def test_masks() -> None:
    assert arith.zero_divisor_mask(np.array([1, 2], np.int32)) is None
    assert arith.zero_divisor_mask(np.array([0.0], np.float32)) is None
    assert arith.zero_divisor_mask(np.array([1, 0], np.uint8)).tolist() == [False, True]
    assert arith.shift_out_of_range_mask(np.array([0, 31], np.int32), INT) is None
    assert arith.shift_out_of_range_mask(np.array([-1, 32, 5], np.int32), INT).tolist() == [
        True, True, False]
    assert arith.shift_out_of_range_mask(np.array([40], np.uint32), LONG) is None


def test_invalid_operations_raise() -> None:
    one = np.array([1.0], np.float32)
    with pytest.raises(ValueError, match="fmod"):
        arith.binary("%", one, one, FLOAT)
    with pytest.raises(ValueError):
        arith.binary("<<", one, one, FLOAT)
    with pytest.raises(ValueError):
        arith.unary("~", one, FLOAT)


@pytest.mark.parametrize(("value", "suffix", "hex_or_octal", "expected"), [
    (0, "", False, INT), (2**31 - 1, "", False, INT), (2**31, "", False, LONG),
    (2**31, "", True, UINT), (2**32, "", True, LONG), (2**63, "", True, ULONG),
    (1, "u", False, UINT), (2**32, "U", False, ULONG), (1, "l", False, LONG),
    (2**63, "L", True, ULONG), (1, "ul", False, ULONG), (1, "LU", True, ULONG),
])
def test_int_literal_types(value: int, suffix: str, hex_or_octal: bool,
                           expected: ScalarType) -> None:
    assert arith.parse_int_literal_type(value, suffix, hex_or_octal) == expected


@pytest.mark.parametrize(("value", "suffix", "hex_or_octal"), [
    (2**63, "", False), (2**63, "l", False), (2**64, "ul", True), (1, "ll", False),
    (1, "x", False)])
def test_int_literals_that_fit_no_type(value: int, suffix: str, hex_or_octal: bool) -> None:
    with pytest.raises(ValueError):
        arith.parse_int_literal_type(value, suffix, hex_or_octal)


# --- binary_fn: the ufunc picked at compile time is `binary` exactly --------------------------

SCALARS = (BOOL, CHAR, UCHAR, SHORT, USHORT, INT, UINT, LONG, ULONG, HALF, BFLOAT, FLOAT)
SPECIAL_FLOATS = (0.0, -0.0, 1.0, -1.5, 3.0e38, -3.0e38, 1e-45, float("inf"), float("-inf"),
                  float("nan"))


def _operands(t: ScalarType, draw_bytes: bytes) -> np.ndarray:
    """Lane values of type `t` from raw bytes (every bit pattern), plus special floats."""
    width = t.dtype.itemsize
    raw = np.frombuffer(draw_bytes[:len(draw_bytes) // width * width], np.uint8)
    values = raw.view(t.dtype) if t != BOOL else raw.astype(bool)
    if t.kind == "float":
        with np.errstate(over="ignore"):   # 3e38 is infinite in half and bfloat
            specials = np.array(SPECIAL_FLOATS).astype(t.dtype)
        values = np.concatenate([values, specials])
    return values


@settings(max_examples=25, deadline=None)
@given(st.binary(min_size=96, max_size=96), st.binary(min_size=96, max_size=96))
def test_binary_fn_gives_exactly_what_binary_gives_for_every_operator_and_type(xs, ys):
    for t in SCALARS + (VectorType(FLOAT, 4),):
        e = t.elem if isinstance(t, VectorType) else t
        x, y = _operands(e, xs), _operands(e, ys)
        if isinstance(t, VectorType):
            x, y = x[:len(x) // 4 * 4].reshape(-1, 4), y[:len(y) // 4 * 4].reshape(-1, 4)
        ops = (FLOAT_OPS if e.kind == "float" else
               ("&", "|", "^", "==", "!=", "<") if e == BOOL else ("+", "-", "*", "&", "|", "^")
               + ("<", ">", "<=", ">=", "==", "!="))
        for op in ops:
            for quiet in (True, False):
                context = arith.quiet_numpy() if quiet else contextlib.nullcontext()
                with context:
                    want = arith.binary(op, x, y, t)
                    got = arith.binary_fn(op, t)(x, y)
                assert got.dtype == want.dtype, (op, t)
                np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8),
                                              err_msg=f"{op} on {t}")
