"""The CUDA prelude's scalar conversions, compiled with g++ (the prelude's conversion helpers are
plain C++ once `__device__` and two bit casts are defined) and compared with an exact
round-to-nearest-even written here and with the simulator."""

from __future__ import annotations

import re
import shutil
import subprocess
from fractions import Fraction

import mlx.core as mx
import numpy as np
import pytest

import metalsim
from metalsim.cuda.prelude import PRELUDE

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

SHIMS = """\
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#define __device__
static unsigned int __float_as_uint(float f) { unsigned int u; std::memcpy(&u, &f, 4); return u; }
static float __uint_as_float(unsigned int u) { float f; std::memcpy(&f, &u, 4); return f; }
"""

MAIN = """\
int main(int argc, char** argv) {
  char line[64];
  while (std::fgets(line, sizeof line, stdin)) {
    if (line[0] == 'u') std::printf("%u\\n", uint_to_bfloat_bits(std::strtoull(line + 1, 0, 10)));
    else std::printf("%u\\n", int_to_bfloat_bits(std::strtoll(line + 1, 0, 10)));
  }
}
"""


def prelude_function(name: str) -> str:
    """The text of one `__device__ inline` (or `constexpr`) function of the prelude."""
    match = re.search(r"__device__ (?:inline|constexpr) [\w ]+ " + name + r"\(.*?\n}\n",
                      PRELUDE, re.S)
    assert match, name
    return match.group(0)


@pytest.fixture(scope="module")
def prelude_converter(tmp_path_factory):
    folder = tmp_path_factory.mktemp("prelude")
    source = SHIMS + "".join(prelude_function(n) for n in (
        "float_to_bfloat_bits", "magnitude_to_float_round_to_odd", "int_to_bfloat_bits",
        "uint_to_bfloat_bits")) + MAIN
    (folder / "convert.cpp").write_text(source)
    subprocess.run(["g++", "-O1", "-o", str(folder / "convert"), str(folder / "convert.cpp")],
                   check=True)

    def convert(values: list[int], unsigned: bool) -> list[int]:
        lines = "".join(f"{'u' if unsigned else 's'}{v}\n" for v in values)
        out = subprocess.run([str(folder / "convert")], input=lines, capture_output=True,
                             text=True, check=True).stdout
        return [int(x) for x in out.split()]

    return convert


def exact_bfloat_bits(v: int) -> int:
    """`v` rounded once to bfloat's 8 significant bits, ties to even, as bfloat16 bits."""
    m = abs(v)
    exponent = max(m.bit_length() - 8, 0)
    rounded = round(Fraction(m, 2 ** exponent)) * 2 ** exponent  # round(): ties to even
    bits = int(np.array([float(rounded)], np.float32).view(np.uint32)[0]) >> 16
    return bits | (0x8000 if v < 0 else 0)


EDGES = [0, 1, -1, 255, 256, 257, 16777216, 16777217, 16842753, -16842753, 16908287,
         2 ** 31 - 1, -2 ** 31, 2 ** 24 + 2 ** 16, 2 ** 24 + 3 * 2 ** 16, 2 ** 24 + 2 ** 16 + 1]


def test_integers_convert_to_bfloat_in_one_rounding_like_the_exact_reference(prelude_converter):
    rng = np.random.default_rng(7)
    signed = EDGES + [int(x) for x in rng.integers(-2 ** 63, 2 ** 63 - 1, 2000, dtype=np.int64)]
    signed += [int(x) for x in rng.integers(-2 ** 31, 2 ** 31 - 1, 2000, dtype=np.int64)]
    unsigned = [2 ** 64 - 1, 2 ** 63, 2 ** 32 + 2 ** 24 + 1] + [
        int(x) for x in rng.integers(0, 2 ** 64 - 1, 2000, dtype=np.uint64)]
    assert prelude_converter(signed, unsigned=False) == [exact_bfloat_bits(v) for v in signed]
    assert prelude_converter(unsigned, unsigned=True) == [exact_bfloat_bits(v) for v in unsigned]


def test_the_prelude_and_the_simulator_convert_int_to_bfloat_alike(prelude_converter):
    values = EDGES[:-1] + [int(x) for x in np.random.default_rng(3).integers(
        -2 ** 31, 2 ** 31 - 1, 500, dtype=np.int64)]
    kernel = metalsim.metal_kernel(
        name="to_bfloat", input_names=["a"], output_names=["out"],
        source="uint i = thread_position_in_grid.x;\n"
               "out[i] = as_type<ushort>(bfloat(a[i]));\n")
    [out] = kernel(inputs=[mx.array(values, dtype=mx.int32)], grid=(len(values), 1, 1),
                   threadgroup=(64, 1, 1), output_shapes=[(len(values),)],
                   output_dtypes=[mx.uint16])
    assert np.array(out).tolist() == prelude_converter(values, unsigned=False)


HALF_MAIN = """\
// Evaluated as C++ constant expressions too: the path complex.h's static_asserts take.
static_assert(float_to_half_bits_exact(65519.996f) == 0x7bff, "");
static_assert(half_bits_to_float_exact(0x3555) == 0x1.554p-2f, "");
int main() {
  unsigned int u;
  while (std::scanf("%u", &u) == 1) {
    float f = __builtin_bit_cast(float, u);
    std::printf("%u %u\\n", float_to_half_bits_exact(f),
                __builtin_bit_cast(unsigned int, half_bits_to_float_exact(u & 0xffffu)));
  }
}
"""


@pytest.fixture(scope="module")
def half_converter(tmp_path_factory):
    folder = tmp_path_factory.mktemp("half")
    source = SHIMS + "".join(prelude_function(n) for n in (
        "float_to_half_bits_exact", "half_bits_to_float_exact")) + HALF_MAIN
    (folder / "half.cpp").write_text(source)
    subprocess.run(["g++", "-std=c++17", "-O1", "-o", str(folder / "half"),
                    str(folder / "half.cpp")], check=True)

    def convert(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lines = "".join(f"{w}\n" for w in words.tolist())
        out = subprocess.run([str(folder / "half")], input=lines, capture_output=True,
                             text=True, check=True).stdout
        pairs = np.array(out.split(), dtype=np.uint64).reshape(-1, 2)
        return pairs[:, 0].astype(np.uint16), pairs[:, 1].astype(np.uint32)

    return convert


def test_constant_half_conversions_round_like_numpy(half_converter):
    """The integer-arithmetic conversions C++ constant expressions use (the GPU's cvt
    instructions elsewhere): float -> half to nearest even at every exponent (subnormals,
    overflow, the ties), half -> float exactly for all 65,536 halves."""
    rng = np.random.default_rng(11)
    floats = np.concatenate([
        np.arange(0, 1 << 16, dtype=np.uint32),                  # every half, as low bits
        rng.integers(0, 1 << 32, 200_000, dtype=np.uint64).astype(np.uint32),
        # around each half's rounding boundaries: halfway points and their neighbours
        (np.arange(0x33000000, 0x47800000, 0x1000, dtype=np.uint32)[:, None]
         + np.array([0, 1, 0xfff, 0x1000, 0x1001], dtype=np.uint32)).ravel(),
    ])
    halves, back = half_converter(floats)
    f = floats.view(np.float32)
    with np.errstate(over="ignore"):
        want = f.astype(np.float16).view(np.uint16)
    nan = np.isnan(f)
    assert np.array_equal(halves[~nan], want[~nan])
    assert np.isnan(halves[nan].view(np.float16)).all()
    h = (floats & 0xffff).astype(np.uint16).view(np.float16)
    exact = h.astype(np.float32).view(np.uint32)
    finite = ~np.isnan(h)
    assert np.array_equal(back[finite], exact[finite])
    assert np.isnan(back[~finite].view(np.float32)).all()


SPLIT_MAIN = """\
int main() {
  unsigned int u, hi, lo;
  while (std::scanf("%u", &u) == 1) {
    tf32_split(__uint_as_float(u), hi, lo);
    std::printf("%u %u\\n", hi, lo);
  }
}
"""


@pytest.fixture(scope="module")
def tf32_splitter(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tf32")
    (folder / "split.cpp").write_text(SHIMS + prelude_function("tf32_split") + SPLIT_MAIN)
    subprocess.run(["g++", "-O1", "-o", str(folder / "split"), str(folder / "split.cpp")],
                   check=True)

    def split(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        out = subprocess.run([str(folder / "split")], input="".join(f"{w}\n" for w in words),
                             capture_output=True, text=True, check=True).stdout
        pairs = np.array(out.split(), dtype=np.uint64).reshape(-1, 2).astype(np.uint32)
        return pairs[:, 0], pairs[:, 1]

    return split


TF32_MASK = 0xFFFFE000


def _value(bits: int) -> Fraction:
    return Fraction(float(np.array([bits], np.uint32).view(np.float32)[0]))


def truncated_tf32_bits(bits: int) -> int:
    """The float32 bits of the TF32 value nearest to finite `bits` towards zero, found by exact
    comparison among the TF32 values of its binade (not by the mask the prelude uses)."""
    x = _value(bits)
    if x == 0:
        return bits
    exponent = max((bits >> 23) & 0xFF, 1) - 127        # subnormals: the least exponent
    step = Fraction(2) ** (exponent - 10)               # a TF32 ulp at x's exponent
    kept = (abs(x) // step) * step
    kept_bits = int(np.array([float(kept)], np.float32).view(np.uint32)[0])
    return kept_bits | (bits & 0x80000000)


def test_the_tf32_split_truncates_and_keeps_the_exact_rest(tf32_splitter):
    """3xTF32's split of x into hi + lo (prelude `tf32_split`): hi is x truncated to TF32
    (towards zero) and lo the rest x - hi, exact; an infinity's hi is itself (its lo NaN, which
    the products keep out of the result), a NaN's hi a NaN or an infinity with its 13 low bits
    dropped. Checked against exact rational arithmetic on every exponent with the mantissas
    around TF32's last bit, subnormals, FLT_MAX and random bit patterns."""
    rng = np.random.default_rng(5)
    exponents = np.arange(0, 0x100, dtype=np.uint32) << 23
    near = np.array([0, 1, 0xFFF, 0x1000, 0x1001, 0x1FFF, 0x2000, 0x3000, 0x7FF000, 0x7FFFFF],
                    dtype=np.uint32)
    words = np.concatenate([
        (exponents[:, None] | near[None, :]).ravel(),
        np.array([0x7F7FE000, 0x7F7FEFFF, 0x7F7FF000, 0x7F7FF001, 0x7F7FFFFF, 0x7F800000,
                  0x7F800001, 0x7FC00000, 0x7FFFFFFF, 0x00000001, 0x007FFFFF], dtype=np.uint32),
        rng.integers(0, 1 << 32, 3000, dtype=np.uint64).astype(np.uint32),
    ])
    words = np.concatenate([words, words | np.uint32(0x80000000)])    # both signs
    hi, lo = tf32_splitter(words)
    for w, h, low in zip(words.tolist(), hi.tolist(), lo.tolist()):
        if (w & 0x7FFFFFFF) >= 0x7F800000:
            assert h == w & TF32_MASK, hex(w)
            assert np.isnan(np.array([low], np.uint32).view(np.float32)[0]), hex(w)
            continue
        assert h == truncated_tf32_bits(w), hex(w)
        assert _value(low) == _value(w) - _value(h), hex(w)      # the rest, exact
        if (w >> 23) & 0xFF:                    # normal: lo is under 2^-10 of x
            assert abs(_value(low)) < abs(_value(w)) * Fraction(1, 1 << 10), hex(w)
