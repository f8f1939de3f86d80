"""gcc as the oracle: random MSL-compatible C code runs in metalsim and natively, bit for bit.

Every program is one body text, embedded in a Metal kernel (64 threads, one per data element)
and compiled by gcc as the body of a C function called once per thread with the same inputs.
C with `-fwrapv` is the reference for integer arithmetic; the generator (`cgen`) writes only
code whose C meaning is defined and equal to its MSL meaning (guarded divisors, masked shift
counts, clamped float -> int casts, `f`-suffixed float literals). Needs gcc on PATH.
"""

from __future__ import annotations

import shutil

import cgen
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")

# No shrinking: each step compiles a C program, and hypothesis would spend minutes on a
# kernel. `cgen.compare` instead reduces a failing body itself, within a few seconds.
ORACLE_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@st.composite
def pure_programs(draw: st.DrawFn) -> cgen.Program:
    """Straight-line typed declarations and assignments of random expressions and casts."""
    ch = cgen.DrawChooser(draw)
    return cgen.expression_program(ch, ch.integer(1, 5), cgen.PURE_STATEMENTS)


@st.composite
def side_effect_programs(draw: st.DrawFn) -> cgen.Program:
    """Compound assignments, ++/--, effects under ?: && || and the comma operator."""
    ch = cgen.DrawChooser(draw)
    return cgen.expression_program(ch, ch.integer(1, 5), cgen.SIDE_EFFECT_STATEMENTS)


@st.composite
def loop_programs(draw: st.DrawFn) -> cgen.Program:
    """Kernels with nested loops, switch, break/continue, early returns, block-scoped and
    shadowing locals, per-lane indexed local arrays and calls of helper functions."""
    ch = cgen.DrawChooser(draw)
    n_functions = ch.integer(0, 2)
    return cgen.loop_program(ch, ch.integer(1, 4), n_functions=n_functions)


seeds = st.integers(0, 2**32 - 1)


@ORACLE_SETTINGS
@given(prog=pure_programs(), seed=seeds)
def test_random_expressions_over_all_scalar_types_match_gcc_bit_for_bit(
    prog: cgen.Program, seed: int
) -> None:
    """Every operator, literal spelling, promotion and conversion agrees with gcc."""
    cgen.compare(prog, cgen.make_inputs(seed))


@settings(ORACLE_SETTINGS, max_examples=50)
@given(prog=side_effect_programs(), seed=seeds)
def test_random_compound_assignments_and_increments_match_gcc(
    prog: cgen.Program, seed: int
) -> None:
    """Compound assignments narrow like C; ++/-- yield the right value; lazy operands and
    the comma operator perform their side effects exactly when C does."""
    cgen.compare(prog, cgen.make_inputs(seed))


@settings(ORACLE_SETTINGS, max_examples=50)
@given(prog=loop_programs(), seed=seeds)
def test_random_loop_kernels_with_divergent_control_flow_match_gcc(
    prog: cgen.Program, seed: int
) -> None:
    """Divergent loops, break/continue, switch fallthrough, early returns (from the kernel
    and from helper functions), scopes and local arrays agree with gcc."""
    cgen.compare(prog, cgen.make_inputs(seed))


# --- hand-written classics -------------------------------------------------------------------


def run_case(msl: str, out_type: str, c: str | None = None,
             n: int = 1) -> tuple[list[list], list[list]]:
    """Run a body writing `n` values of `out_type` per thread on both sides; every thread's.

    The body writes `o_<out_type>[i * n + k]`; `c`, when given, is the C spelling of the body.
    """
    prog = cgen.Program(msl, {out_type: n}, c_body=c)
    inputs = cgen.make_inputs(0)
    sim = cgen.run_sim(prog, inputs)[out_type]
    gcc = cgen.run_c(prog, inputs)[out_type]
    return sim.tolist(), gcc.tolist()


def assert_case(msl: str, out_type: str, expected: list, c: str | None = None) -> None:
    """Both sides give `expected` on every thread (the bodies ignore the inputs)."""
    sim, gcc = run_case(msl, out_type, c, len(expected))
    assert all(row == expected for row in gcc), f"gcc disagrees with the expected: {gcc[0]}"
    bad = [row for row in sim if row != expected]
    assert not bad, f"metalsim {bad[0]}, gcc and expected {expected}"


def test_unsigned_zero_minus_one_wraps_to_uint_max() -> None:
    """`uint(0) - 1`: the int 1 converts to uint and the subtraction wraps."""
    assert_case("o_uint[i] = uint(0) - 1;", "uint", [4294967295],
                c="o_uint[i] = (uint)0 - 1;")


def test_signed_division_and_remainder_truncate_toward_zero() -> None:
    """`-7 / 2 == -3` and `-7 % 2 == -1` (the remainder takes the dividend's sign)."""
    body = ("int a = -7; int b = 2; int c = -2;\n"
            "o_int[i * 6] = a / b; o_int[i * 6 + 1] = a % b; o_int[i * 6 + 2] = 7 % c;\n"
            "o_int[i * 6 + 3] = a / c; o_int[i * 6 + 4] = a % c; o_int[i * 6 + 5] = -7 / 2;\n")
    assert_case(body, "int", [-3, -1, 1, 3, -1, -3])


def test_negative_int_divided_by_unsigned_divides_unsigned() -> None:
    """`int(-1) / 4u`: -1 converts to 0xFFFFFFFF before dividing."""
    assert_case("o_uint[i] = int(-1) / 4u;", "uint", [1073741823],
                c="o_uint[i] = (int)(-1) / 4u;")


def test_short_plus_short_is_computed_in_int() -> None:
    """Both shorts promote to int: 30000 + 30000 does not wrap, and neither does 65535u16^2."""
    body = ("short a = 30000; short b = 30000; ushort m = 65535;\n"
            "o_int[i * 3] = a + b; o_int[i * 3 + 1] = (a + b) / 2; o_int[i * 3 + 2] = m * m;\n")
    # 65535 * 65535 overflows int: it wraps (-fwrapv; MSL hardware wraps too).
    assert_case(body, "int", [60000, 30000, -131071])


def test_uchar_compound_assignment_wraps_modulo_256() -> None:
    """`u += 10` computes in int, then converts back to uchar; `u--` from 0 gives 255."""
    body = ("uchar u = 250; u += 10; o_uchar[i * 3] = u; uchar z = 0; z--;\n"
            "o_uchar[i * 3 + 1] = z; uchar m = 16; m *= 17; o_uchar[i * 3 + 2] = m;\n")
    assert_case(body, "uchar", [4, 255, 16])


def test_narrowing_casts_wrap_modulo_the_width() -> None:
    """`(char)200 == -56`, `(short)70000 == 4464`, `(uchar)-1 == 255`."""
    body = ("o_int[i * 4] = (char)200; o_int[i * 4 + 1] = (short)70000;\n"
            "o_int[i * 4 + 2] = (uchar)-1; o_int[i * 4 + 3] = (char)(37 * 7);\n")
    assert_case(body, "int", [-56, 4464, 255, 3])


def test_shift_counts_are_masked_by_the_hardware() -> None:
    """MSL masks `x << 33` to `x << 1` (C leaves it undefined, so C masks in the text)."""
    msl = ("int s = 33; long t = 65; uint one = 1u;\n"
           "o_ulong[i * 3] = one << s; o_ulong[i * 3 + 1] = 1L << t;\n"
           "o_ulong[i * 3 + 2] = 0x80000000u >> s;\n")
    c = ("int s = 33; long t = 65; uint one = 1u;\n"
         "o_ulong[i * 3] = one << (s & 31); o_ulong[i * 3 + 1] = 1L << (t & 63);\n"
         "o_ulong[i * 3 + 2] = 0x80000000u >> (s & 31);\n")
    assert_case(msl, "ulong", [2, 2, 0x40000000], c=c)


def test_right_shift_is_logical_for_unsigned_and_arithmetic_for_signed() -> None:
    """`1u << 31 >> 31 == 1`, but `1 << 31 >> 31 == -1` (wrapped to INT_MIN, sign-filled)."""
    body = ("o_int[i * 3] = 1u << 31 >> 31; o_int[i * 3 + 1] = 1 << 31 >> 31;\n"
            "char c = -128; o_int[i * 3 + 2] = c >> 7;\n")
    assert_case(body, "int", [1, -1, -1])


def test_int_to_float_rounds_to_nearest_even() -> None:
    """16777217 is not a float: it rounds (tie) to 16777216; 16777219 rounds up to 16777220."""
    body = ("int a = 16777217; int b = 16777219; long c = 9007199791611905L;\n"
            "o_float[i * 4] = (float)a; o_float[i * 4 + 1] = (float)b;\n"
            "o_float[i * 4 + 2] = (float)c; o_float[i * 4 + 3] = (float)(ulong)-1;\n")
    expected = np.array([16777216.0, 16777220.0, 9007200328482816.0, 18446744073709551616.0],
                        dtype=np.float32).tolist()
    assert_case(body, "float", expected)


def test_signed_unsigned_comparisons_follow_the_usual_conversions() -> None:
    """`-1 < 0u` is false (uint compare) but `(long)-1 < 0u` is true (long holds every uint)."""
    body = ("o_bool[i * 4] = -1 < 0u; o_bool[i * 4 + 1] = (long)-1 < 0u;\n"
            "o_bool[i * 4 + 2] = (char)-1 < (uchar)1; o_bool[i * 4 + 3] = -1L < 0ul;\n")
    assert_case(body, "bool", [False, True, True, False])


def test_postfix_increment_yields_the_old_value() -> None:
    """`a++` evaluates to the value before the increment, `--a` to the one after."""
    body = ("int a = 5; int b = a++; int c = --a; int d = (a--) * 10;\n"
            "o_int[i * 4] = b; o_int[i * 4 + 1] = c; o_int[i * 4 + 2] = d; o_int[i * 4 + 3] = a;\n")
    assert_case(body, "int", [5, 5, 50, 4])


def test_division_edge_cases_wrap_like_c() -> None:
    """`INT_MIN / 1`, `LONG_MIN % 3`, `uint` division of values above INT_MAX."""
    body = ("int m = -2147483647 - 1; long lm = -9223372036854775807L - 1L;\n"
            "uint big = 4000000000u;\n"
            "o_long[i * 4] = m / 1; o_long[i * 4 + 1] = lm % 3; o_long[i * 4 + 2] = big / 3u;\n"
            "o_long[i * 4 + 3] = -m;\n")
    assert_case(body, "long", [-2147483648, -2, 1333333333, -2147483648])


def test_switch_without_default_lets_unmatched_lanes_continue_after_it() -> None:
    """Lanes whose value matches no case skip the switch body and run what follows."""
    body = ("int x = int(i & 3);\nint r = 100;\n"
            "switch (x) {\ncase 0: r = 1; break;\ncase 2: r = 2; break;\n}\n"
            "o_int[i] = r + 10;\n")
    c = body.replace("int(i & 3)", "(int)(i & 3)")
    prog = cgen.Program(body, {"int": 1}, c_body=c)
    inputs = cgen.make_inputs(0)
    gcc = cgen.run_c(prog, inputs)["int"][:4, 0].tolist()
    assert gcc == [11, 110, 12, 110]
    assert cgen.run_sim(prog, inputs)["int"][:4, 0].tolist() == gcc


def test_float_literals_round_once_from_decimal() -> None:
    """`1.0000000596046448f` is just above the midpoint 1 + 2**-24: it rounds up. (Rounding
    to double first lands exactly on the midpoint, which then rounds to even, down to 1.)"""
    body = ("o_float[i * 3] = 1.0000000596046448f; o_float[i * 3 + 1] = 16777217.000000001f;\n"
            "o_float[i * 3 + 2] = 0.1f;\n")
    expected = np.array([1.0000001192092896, 16777218.0, 0.1], dtype=np.float32).tolist()
    assert_case(body, "float", expected)


def test_character_literals_are_signed_chars() -> None:
    """`'\\xff'` and `'\\377'` are the char -1, `'\\x80'` is -128 (char is signed)."""
    body = ("o_int[i * 5] = '\\xff'; o_int[i * 5 + 1] = '\\377'; o_int[i * 5 + 2] = '\\x80';\n"
            "o_int[i * 5 + 3] = 'a' + 1; o_int[i * 5 + 4] = '\\n';\n")
    assert_case(body, "int", [-1, -1, -128, 98, 10])


def test_character_literal_has_type_char_in_msl() -> None:
    """MSL is C++: `sizeof('a') == sizeof(char)`, where C would say `sizeof(int)`."""
    assert_case("o_int[i] = sizeof('a');", "int", [1], c="o_int[i] = sizeof(char);")


def test_conditional_of_two_same_type_operands_keeps_that_type() -> None:
    """In C++ (unlike C) `c ? char : char` is a char and `c ? bool : bool` a bool: no promotion.
    (So `as_type<uchar>(c ? a : b)` compiles in Metal.)"""
    msl = ("char a = 1; char b = 2; short s = 3;\n"
           "o_int[i * 3] = sizeof(i == 0 ? a : b); o_int[i * 3 + 1] = sizeof(a ? true : false);\n"
           "o_int[i * 3 + 2] = sizeof(a ? a : s);\n")
    c = ("o_int[i * 3] = sizeof(char); o_int[i * 3 + 1] = sizeof(bool);\n"
         "o_int[i * 3 + 2] = sizeof(int);\n")
    assert_case(msl, "int", [1, 1, 4], c=c)
