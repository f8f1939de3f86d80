"""MVMR and VVOR (notebook 05's real kernels) against plain MLX, and against the naive kernel.

Run: python benchmarks/bench_mvmr.py

On Apple silicon (MLX with its Metal back end) `mvmr`, `vvor` and the MVMR backward are timed
on the GPU against plain-MLX references (`mx.gather_mm` plus a scatter-add, and a segmented
GEMM over k-sorted triplets) at the realistic sizes of `pointcloud-ops.md` 6, with triplets
sorted by output point. Everywhere, the simulator's device-traffic reports of the forward MVMR
are printed for the naive one-atomic-per-thread kernel of puzzle 23 and for the real kernel,
with the ideal (every input read once, every output written once), at a mid size and at a
realistic one.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import mlx.core as mx
import numpy as np
from timing import gpu_time

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from solutions.mvmr import mvmr, simulate_mvmr, simulate_naive_mvmr, vvor  # noqa: E402

# (label, K, N, C = M, T) with N_b = N_o = N; the encoder ladder of the original's benchmarks.
GPU_SIZES = [("enc3", 27, 800, 256, 6_500), ("enc2", 27, 3_000, 128, 25_000),
             ("enc1", 27, 11_000, 64, 90_000), ("enc0 production", 27, 328_326, 32, 1_641_630)]
SIMULATED_SIZES = [("mid", 27, 150, 32, 2_000), ("Shallow (realistic)", 27, 700, 64, 10_000)]


def problem(k: int, n: int, c: int, t: int, seed: int = 0) -> tuple:
    """Weights, features and triplets sorted by output point: 8 to 19 per point."""
    rng = np.random.default_rng(seed)
    per_point = rng.integers(8, 20, n)
    o_idx = np.repeat(np.arange(n), per_point)[:t]
    if o_idx.size < t:   # more triplets than 19 per point: spread them over the points
        o_idx = np.sort(rng.integers(0, n, t))
    a_idx = rng.integers(0, k, t)
    b_idx = rng.integers(0, n, t)
    as_int = [mx.array(x.astype(np.int32)) for x in (a_idx, b_idx, o_idx)]
    a = mx.array(rng.standard_normal((k, 1, c, c)).astype(np.float32) / np.sqrt(k * c))
    b = mx.array(rng.standard_normal((n, 1, c)).astype(np.float32))
    return a, as_int[0], b, as_int[1], as_int[2], n


def mvmr_mlx(a, a_idx, b, b_idx, o_idx, n_o):
    """Plain MLX: one (1 x C) @ (C x M) product per triplet with gather_mm, then scatter-add."""
    g = a.shape[1]
    lhs = b_idx.astype(mx.uint32)[:, None] * g + mx.arange(g, dtype=mx.uint32)
    rhs = a_idx.astype(mx.uint32)[:, None] * g + mx.arange(g, dtype=mx.uint32)
    rows = mx.gather_mm(b.reshape(-1, g, 1, b.shape[2]), a, lhs, rhs)
    return mx.zeros((n_o, g, a.shape[3])).at[o_idx].add(rows.reshape(-1, g, a.shape[3]))


def vvor_mlx(a, a_idx, b, b_idx, o_idx, n_o):
    """Plain MLX, G = 1: sort by o_idx, then one GEMM A_r^T B_r per run (segmented_mm)."""
    order = mx.argsort(o_idx)
    o = o_idx[order]
    bins = mx.arange(n_o, dtype=o.dtype)
    runs = mx.stack([mx.searchsorted(o, bins, side="left"),
                     mx.searchsorted(o, bins, side="right")], axis=1).astype(mx.uint32)
    out = mx.segmented_mm(a[a_idx[order], 0].T, b[b_idx[order], 0], runs)
    return out[:, None]


def comparisons(k: int, operands: tuple, cot: mx.array) -> list[tuple[str, Callable, Callable]]:
    """(name, ours, MLX's) for the forward MVMR, the weight gradient and the MVMR backward."""
    a, a_idx, b, b_idx, o_idx, n_o = operands

    def backward(op: Callable) -> Callable:
        return lambda: mx.vjp(lambda a, b: op(a, a_idx, b, b_idx, o_idx, n_o), [a, b],
                              [cot])[1]

    return [
        ("mvmr", lambda: mvmr(*operands), lambda: mvmr_mlx(*operands)),
        ("vvor (weight gradient)", lambda: vvor(b, b_idx, cot, o_idx, a_idx, k),
         lambda: vvor_mlx(b, b_idx, cot, o_idx, a_idx, k)),
        ("mvmr backward", backward(mvmr), backward(mvmr_mlx)),
    ]


def run_on_gpu() -> None:
    print(f"{'operator':34}{'ours':>11}{'MLX':>11}{'ours/MLX':>10}")
    for label, k, n, c, t in GPU_SIZES:
        operands = problem(k, n, c, t)
        cot = mx.random.normal((n, 1, c))
        mx.eval(*operands[:-1], cot)
        for name, ours, theirs in comparisons(k, operands, cot):
            t_ours, t_mlx = gpu_time(ours), gpu_time(theirs)
            print(f"{label + ' ' + name:34}{t_ours * 1e3:>9.3f}ms{t_mlx * 1e3:>9.3f}ms"
                  f"{t_ours / t_mlx:>10.2f}")


def report_traffic() -> None:
    for label, k, n, c, t in SIMULATED_SIZES:
        operands = problem(k, n, c, t)
        runs = np.unique(np.array(operands[4])).size
        print(f"=== {label}: K={k}, N={n}, C=M={c}, T={t}, sorted by output ({runs} runs)")
        reports = {}
        for name, simulate in (("naive (puzzle 23)", simulate_naive_mvmr),
                               ("real mvmr", simulate_mvmr)):
            start = time.perf_counter()
            reports[name] = simulate(*operands).report
            print(f"--- {name}, simulated in {time.perf_counter() - start:.1f} s")
            print(reports[name].summary())
        naive, ours = reports.values()
        atomics = (naive.totals()["atomics"], ours.totals()["atomics"])
        print(f"ideal {ours.ideal_bytes:,} bytes; bytes moved: naive {naive.bytes_moved:,}, "
              f"real {ours.bytes_moved:,} ({naive.bytes_moved / ours.bytes_moved:.1f}x fewer); "
              f"atomics: naive {atomics[0]:,}, real {atomics[1]:,} "
              f"({atomics[0] / atomics[1]:.1f}x fewer, {atomics[1] / (runs * c):.2f} per "
              f"output element)\n")


def main() -> None:
    if mx.metal.is_available():
        run_on_gpu()
    else:
        print("No Metal back end here: the GPU timings need Apple silicon.\n")
    report_traffic()


if __name__ == "__main__":
    main()
