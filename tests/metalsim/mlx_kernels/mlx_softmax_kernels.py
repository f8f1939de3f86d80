"""MLX's softmax and logsumexp kernels (`softmax.h`, `logsumexp.h`), run whole through
`metalsim.dispatch` with the buffers, grid and threadgroup MLX's host code gives them: one
threadgroup per row, of ceil(axis / 4) threads rounded up to whole SIMD-groups for the
single-row kernels (`in`, `out`, `axis_size` at buffers 0, 1, 2), of 1024 threads for the
looped ones MLX uses past 4096 elements. Checked against MLX's CPU `mx.softmax` and
`mx.logsumexp` on the same inputs."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
from block_case import EPSILON, LibraryCase, ceil_div, library_source

# MLX's names: `block_`/`looped_` kernels; `precise` accumulates half in float.
SOURCE = library_source("softmax.h", "logsumexp.h", instantiations="""
instantiate_kernel("block_softmax_float32", softmax_single_row, float)
instantiate_kernel("looped_softmax_float32", softmax_looped, float)
instantiate_kernel("block_softmax_float16", softmax_single_row, half)
instantiate_kernel("block_softmax_precise_float16", softmax_single_row, half, float)
instantiate_kernel("looped_softmax_precise_float16", softmax_looped, half, float)
instantiate_kernel("block_logsumexp_float32", logsumexp, float)
instantiate_kernel("looped_logsumexp_float32", logsumexp_looped, float)
instantiate_kernel("block_logsumexp_float16", logsumexp, half)
""")
N_READS, LOOPED_THREADS = 4, 1024


Dims = tuple[int, int, int]


def _launch(rows: int, axis: int, looped: bool) -> tuple[Dims, Dims]:
    threads = LOOPED_THREADS if looped else 32 * ceil_div(ceil_div(axis, N_READS), 32)
    return (rows * threads, 1, 1), (threads, 1, 1)


def _inputs(rows: int, axis: int, dtype: mx.Dtype) -> mx.array:
    rng = np.random.default_rng(rows * 7919 + axis)
    return mx.array(3 * rng.standard_normal((rows, axis)), dtype=dtype)


def softmax_case(rows: int, axis: int, dtype: mx.Dtype, looped: bool = False,
                 precise: bool = False) -> LibraryCase:
    x = _inputs(rows, axis, dtype)
    kind = "looped" if looped else "block"
    name = f"{kind}_softmax_{'precise_' if precise else ''}{str(dtype).split('.')[-1]}"
    grid, group = _launch(rows, axis, looped)

    def expected() -> list[mx.array]:
        with mx.stream(mx.cpu):
            return [mx.softmax(x, axis=-1, precise=precise)]

    exact = _exact_softmax(x)
    if dtype == mx.float32:
        # fp32 accumulation on both sides in different orders (a tree of log2(axis) levels
        # here), exp, reciprocal and product: (2 log2(axis) + 8) eps32 relative.
        allowance = (2 * np.log2(axis) + 8) * EPSILON[mx.float32]
    elif precise:
        allowance = 2 * EPSILON[mx.float16] + 8 * EPSILON[mx.float32]   # one half rounding
    else:
        # AccT = half: every exp is rounded to half and summed in half (axis terms), where
        # MLX's CPU accumulates in float: the sequential-sum bound (axis + 2) eps16.
        allowance = (axis + 2) * EPSILON[mx.float16]
    rtol, atol = _tolerance(expected()[0], exact, allowance, dtype)
    label = f"MLX {name} kernel, {rows} rows of {axis} ({'partial' if axis % 128 else 'full'})"
    return LibraryCase(label, SOURCE, name, {0: x, 1: mx.zeros_like(x), 2: axis}, grid, group,
                       (1,), expected, rtol=rtol, atol=atol)


def logsumexp_case(rows: int, axis: int, dtype: mx.Dtype, looped: bool = False) -> LibraryCase:
    x = _inputs(rows, axis, dtype)
    kind = "looped" if looped else "block"
    name = f"{kind}_logsumexp_{str(dtype).split('.')[-1]}"
    grid, group = _launch(rows, axis, looped)

    def expected() -> list[mx.array]:
        with mx.stream(mx.cpu):
            return [mx.logsumexp(x, axis=-1)]

    xf = np.array(x.astype(mx.float32)).astype(np.float64)
    peak = xf.max(axis=-1)
    exact = peak + np.log(np.exp(xf - peak[:, None]).sum(axis=-1))
    # max + log(sum exp(x - max)), accumulated in float on both sides (AccT = float): the
    # sum's order and the exp/log ulps, 16 eps32 of the result; a half result is rounded once.
    allowance = 16 * EPSILON[mx.float32] if dtype == mx.float32 else 2 * EPSILON[dtype]
    rtol, atol = _tolerance(expected()[0], exact, allowance, dtype)
    label = f"MLX {name} kernel, {rows} rows of {axis} ({'partial' if axis % 128 else 'full'})"
    return LibraryCase(label, SOURCE, name, {0: x, 1: mx.zeros((rows,), dtype=dtype), 2: axis},
                       grid, group, (1,), expected, rtol=rtol, atol=atol)


def _exact_softmax(x: mx.array) -> np.ndarray:
    xf = np.array(x.astype(mx.float32)).astype(np.float64)
    e = np.exp(xf - xf.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# The spacing of each type's subnormals: a value that small or smaller has no relative
# precision left (a half softmax's tiny probabilities).
TINY = {mx.float32: 2.0**-149, mx.float16: 2.0**-24}


def _tolerance(mlx_cpu: mx.array, exact: np.ndarray, allowance: float,
               dtype: mx.Dtype) -> tuple[float, float]:
    """(rtol, atol) for metalsim against MLX's CPU result: metalsim's own `allowance` (relative
    to the exact value, argued where the case is made) plus how far MLX's CPU operation itself
    is from the exact value on these inputs, measured (its exp is a fast approximation: some
    1e-6 relative in float32), with `TINY` absolute for values past the subnormal range."""
    cpu = np.array(mlx_cpu.astype(mx.float32)).astype(np.float64)
    floor = 2 * TINY[dtype]
    cpu_error = float((np.maximum(np.abs(cpu - exact) - floor, 0) / np.abs(exact)).max())
    return allowance + cpu_error, 2 * floor


def cases() -> list[LibraryCase]:
    """Whole and partial reads, single-row and looped kernels, float, half and precise half."""
    return [
        softmax_case(3, 128, mx.float32),
        softmax_case(4, 70, mx.float32),
        softmax_case(2, 4500, mx.float32, looped=True),
        softmax_case(3, 33, mx.float16),
        softmax_case(3, 100, mx.float16, precise=True),
        softmax_case(2, 300, mx.float16, looped=True, precise=True),
        logsumexp_case(4, 128, mx.float32),
        logsumexp_case(3, 77, mx.float32),
        logsumexp_case(2, 4500, mx.float32, looped=True),
        logsumexp_case(3, 50, mx.float16),
    ]
