"""MLX's reduction and scan kernels (`reduce.h`: `all_reduce`, `row_reduce_simple` with
`reduction/ops.h`'s `Sum`/`Max`; `scan.h`: `contiguous_scan` with `CumSum`), run whole through
`metalsim.dispatch` with the buffers, grid and threadgroup MLX's host code gives them, against
MLX's CPU `mx.sum`, `mx.max` and `mx.cumsum` on the same inputs.

Launch shapes, as MLX sizes them: a threadgroup of ceil(n / 4) threads rounded up to whole
SIMD-groups (at most 1024); an all-reduce larger than 4 * 1024 elements in two passes (rows of
the input reduced into partials, then the partials); a row reduction with one threadgroup per
4 rows (`N_WRITES`); a contiguous scan with one threadgroup per row.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np
from block_case import EPSILON, LibraryCase, ceil_div, library_source

SOURCE = library_source("reduce_utils.h", "reduction/ops.h", "reduce.h", "scan.h",
                        instantiations="""
instantiate_kernel("all_reduce_sum_float32", all_reduce, float, float, Sum<float>)
instantiate_kernel("all_reduce_sum_int32", all_reduce, int, int, Sum<int>)
instantiate_kernel("all_reduce_max_float16", all_reduce, half, half, Max<half>)
instantiate_kernel("row_reduce_simple_sum_float32", row_reduce_simple, float, float, Sum<float>)
instantiate_kernel("row_reduce_simple_sum_float16", row_reduce_simple, half, float, Sum<float>)
instantiate_kernel("contig_scan_inclusive_sum_float32", contiguous_scan, float, float,
                   CumSum<float>, 4, true, false)
instantiate_kernel("contig_scan_exclusive_reverse_sum_float32", contiguous_scan, float, float,
                   CumSum<float>, 4, false, true)
instantiate_kernel("contig_scan_inclusive_sum_int32", contiguous_scan, int, int,
                   CumSum<int>, 4, true, false)
""")
N_READS, MAX_THREADS = 4, 1024


def _group(n: int) -> int:
    """Threads for `n` elements read 4 at a time: whole SIMD-groups, at most 1024."""
    return min(MAX_THREADS, 32 * ceil_div(ceil_div(n, N_READS), 32))


def _values(shape: tuple[int, ...], dtype: mx.Dtype) -> mx.array:
    rng = np.random.default_rng(sum(shape) * 31 + len(shape))
    if dtype == mx.int32:
        return mx.array(rng.integers(-1000, 1000, shape), dtype=dtype)
    return mx.array(rng.standard_normal(shape), dtype=dtype)


def _float_atol(x: mx.array, terms: int, mlx_cpu: mx.array, exact: np.ndarray) -> float:
    """Sums of `terms` values, ordered differently on each side: metalsim's kernel sums in a
    tree (N_READS sequentially per thread, then SIMD-group and threadgroup levels), within
    (log2(terms) + N_READS + 2) eps32 of the sum of magnitudes; MLX's CPU sums sequentially,
    and its own error against the exact (float64) result is measured and added."""
    magnitude = float(np.abs(np.array(x.astype(mx.float32))).sum(axis=-1).max())
    tree = (np.log2(max(terms, 2)) + N_READS + 2) * EPSILON[mx.float32] * magnitude
    cpu = np.array(mlx_cpu.astype(mx.float32)).astype(np.float64)
    return tree + float(np.abs(cpu - exact).max())


def all_reduce_case(n: int, dtype: mx.Dtype, op: str = "sum") -> LibraryCase:
    """The whole array to one value; past 4096 elements in MLX's two passes."""
    x = _values((n,), dtype)
    name = f"all_reduce_{op}_{str(dtype).split('.')[-1]}"
    partial = mx.zeros((1,), dtype=dtype)
    if n <= N_READS * MAX_THREADS:
        passes = [({0: x, 1: partial, 2: n, 3: n}, (_group(n), 1, 1))]
    else:   # rows of the input into partials, then the partials into one
        rows = ceil_div(n, N_READS * MAX_THREADS)
        row_size = ceil_div(n, rows)
        passes = [({0: x, 1: mx.zeros((rows,), dtype=dtype), 2: n, 3: row_size},
                   (MAX_THREADS, rows, 1))]
        passes.append(({1: partial, 2: rows, 3: rows}, (_group(rows), 1, 1)))   # reads 0

    def expected() -> list[mx.array]:
        with mx.stream(mx.cpu):
            return [(mx.sum if op == "sum" else mx.max)(x, keepdims=True)]

    xf = np.array(x.astype(mx.float32)).astype(np.float64)
    exact = xf.sum(keepdims=True) if op == "sum" else xf.max(keepdims=True)
    # int32 sums and maxima are exact on both sides; a float sum's order differs.
    atol = (_float_atol(x, n, expected()[0], exact)
            if dtype != mx.int32 and op == "sum" else 0.0)
    label = f"MLX {name} kernel, {n} elements ({len(passes)} pass{'es' * (len(passes) > 1)})"
    return LibraryCase(label, SOURCE, name, passes[0][0], passes[0][1], (passes[0][1][0], 1, 1),
                       (1,), expected, rtol=0.0, atol=atol, passes=passes[1:])


def row_reduce_case(rows: int, size: int, dtype: mx.Dtype) -> LibraryCase:
    """Each contiguous row to its sum (float accumulation for half input, as MLX's
    `row_reduce_simple_sum_float16` of `Sum<float>` does). Rows come 4 to a threadgroup; with
    a row count that is not a multiple of 4, MLX's kernel moves the last threadgroup back to
    overlap the one before (`out_idx = out_size - N_WRITES`), so two threadgroups write the
    same (equal) sums, which metalsim reports as a device-memory data race: these cases keep
    to multiples of 4."""
    x = _values((rows, size), dtype)
    name = f"row_reduce_simple_sum_{str(dtype).split('.')[-1]}"
    group = _group(size)
    out = mx.zeros((rows,), dtype=mx.float32)

    def expected() -> list[mx.array]:
        with mx.stream(mx.cpu):
            return [mx.sum(x.astype(mx.float32), axis=-1)]

    exact = np.array(x.astype(mx.float32)).astype(np.float64).sum(axis=-1)
    atol = _float_atol(x, size, expected()[0], exact)
    label = f"MLX {name} kernel, {rows} rows of {size}"
    return LibraryCase(label, SOURCE, name, {0: x, 1: out, 2: size, 3: rows},
                       (group, ceil_div(rows, 4), 1), (group, 1, 1), (1,), expected,
                       rtol=0.0, atol=atol)


def scan_case(rows: int, size: int, dtype: mx.Dtype, inclusive: bool = True,
              reverse: bool = False) -> LibraryCase:
    """Each row's running sum (`contiguous_scan`, one threadgroup per row)."""
    x = _values((rows, size), dtype)
    kind = f"{'inclusive' if inclusive else 'exclusive'}{'_reverse' if reverse else ''}"
    name = f"contig_scan_{kind}_sum_{str(dtype).split('.')[-1]}"
    group = _group(size)

    def expected() -> list[mx.array]:
        with mx.stream(mx.cpu):
            return [mx.cumsum(x, axis=-1, reverse=reverse, inclusive=inclusive)]

    xf = np.array(x.astype(mx.float32)).astype(np.float64)
    flipped = xf[:, ::-1] if reverse else xf
    exact = np.cumsum(flipped, axis=-1) - (0 if inclusive else flipped)
    exact = exact[:, ::-1] if reverse else exact
    atol = 0.0 if dtype == mx.int32 else _float_atol(x, size, expected()[0], exact)
    label = f"MLX {name} kernel, {rows} rows of {size}"
    return LibraryCase(label, SOURCE, name, {0: x, 1: mx.zeros_like(x), 2: size},
                       (group, rows, 1), (group, 1, 1), (1,), expected, rtol=0.0, atol=atol)


def cases() -> list[LibraryCase]:
    """Whole and partial blocks of reads, one and two passes, float, half and int."""
    return [
        all_reduce_case(1000, mx.float32),
        all_reduce_case(512, mx.float32),
        all_reduce_case(10_000, mx.float32),
        all_reduce_case(3001, mx.int32),
        all_reduce_case(777, mx.float16, op="max"),
        row_reduce_case(8, 300, mx.float32),
        row_reduce_case(12, 128, mx.float16),
        scan_case(3, 100, mx.float32),
        scan_case(2, 512, mx.float32, inclusive=False, reverse=True),
        scan_case(2, 1000, mx.int32),
    ]
