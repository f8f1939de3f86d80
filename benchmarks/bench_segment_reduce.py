"""The segment-reduce real kernels of notebook 06 against plain-MLX scatter ops.

Run: python benchmarks/bench_segment_reduce.py

On Apple silicon (MLX with its Metal back end) `segment_reduce` and `indexed_segment_reduce`
are timed on the GPU, forward and forward + backward (`mx.grad`), against the plain-MLX
reference of `pointcloud-ops.md` §8 (`mx.zeros(...).at[seg].add(x)`, `.at[seg].maximum(x)`,
differentiated by MLX), at the realistic sizes of §6 (median of 20 runs). The GPU timings need
Metal: anywhere else the script says so and prints, instead, the simulator's device-traffic
report of the same launches (bytes moved against the read-once ideal and, for the gathers,
against one read of every gathered row; atomics per output element). The simulator runs a few
of the largest launches at a smaller size, and says which.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import mlx.core as mx
import numpy as np
from timing import gpu_time

from solutions import segment_reduce as sr


def segment_ids(lengths: mx.array, total: int) -> mx.array:
    """The segment of each of `total` rows (the reference's repeat-interleave)."""
    return mx.searchsorted(mx.cumsum(lengths), mx.arange(total, dtype=mx.int32), side="right")


def mlx_reduce(rows: mx.array, lengths: mx.array, op: str) -> mx.array:
    """The plain-MLX reference: a scatter op from the identity, then the mean's division."""
    seg = segment_ids(lengths, rows.shape[0])
    shape = (lengths.size, rows.shape[1])
    if op == "max":
        return mx.full(shape, -mx.inf).at[seg].maximum(rows)
    out = mx.zeros(shape).at[seg].add(rows)
    if op == "mean":
        out = out / mx.maximum(lengths, 1)[:, None]
    return out


@dataclass
class Case:
    """One realistic launch, contiguous (`indices is None`) or indexed."""

    label: str
    x: mx.array
    lengths: mx.array
    op: str
    indices: mx.array | None = None
    simulated_at: tuple[int, int] | None = None   # (rows or T_x, segments) in the simulator

    def ours(self, x: mx.array) -> mx.array:
        if self.indices is None:
            return sr.segment_reduce(x, self.lengths, self.op)
        return sr.indexed_segment_reduce(x, self.indices, None, self.lengths, self.op)

    def reference(self, x: mx.array) -> mx.array:
        rows = x if self.indices is None else x[self.indices]
        return mlx_reduce(rows, self.lengths, self.op)


def contiguous(rows: int, segments: int, columns: int, op: str,
               simulated_at: tuple[int, int] | None = None) -> Case:
    x = mx.random.normal((rows, columns))
    lengths = mx.full((segments,), rows // segments, dtype=mx.int32)
    return Case(f"segment_reduce {op}, N={rows:,} K={segments} C={columns}", x, lengths, op,
                simulated_at=simulated_at)


def indexed(rows: int, segments: int, columns: int, op: str,
            simulated_at: tuple[int, int] | None = None) -> Case:
    """§4.4's benchmark: lengths in [15, 25), random indices with repeats."""
    rng = np.random.default_rng(0)
    lengths = rng.integers(15, 25, segments).astype(np.int32)
    indices = rng.integers(0, rows, int(lengths.sum())).astype(np.int32)
    return Case(f"indexed_segment_reduce {op}, T_x={rows:,} K={segments:,} C={columns}",
                mx.random.normal((rows, columns)), mx.array(lengths), op, mx.array(indices),
                simulated_at)


def cases() -> list[Case]:
    mx.random.seed(0)
    return [
        contiguous(1_000_000, 8, 1, "mean"),
        contiguous(1_000_000, 8, 32, "sum"),
        contiguous(1_000_000, 32, 32, "max"),
        contiguous(1_000_000, 16, 256, "max", simulated_at=(250_000, 16)),
        indexed(50_000, 250_000, 16, "max"),
        indexed(50_000, 250_000, 64, "sum", simulated_at=(50_000, 50_000)),
        indexed(50_000, 250_000, 256, "max", simulated_at=(50_000, 10_000)),
    ]


def time_case(c: Case) -> None:
    """Print ours and the reference's median times, forward and forward + backward."""
    mx.eval(c.x, c.lengths)
    cot = mx.random.normal((c.lengths.size, c.x.shape[1]))

    def loss(f: Callable[[mx.array], mx.array]) -> Callable[[mx.array], mx.array]:
        return lambda x: (mx.clip(f(x), -1e4, 1e4) * cot).sum()   # clip: ±inf of empties

    rows = (("fwd", lambda: c.ours(c.x), lambda: c.reference(c.x)),
            ("+bwd", lambda: mx.grad(loss(c.ours))(c.x), lambda: mx.grad(loss(c.reference))(c.x)))
    for what, ours_fn, ref_fn in rows:
        ours, theirs = gpu_time(ours_fn), gpu_time(ref_fn)
        print(f"{c.label:58}{what:>6}{ours * 1e3:>9.3f}ms{theirs * 1e3:>9.3f}ms"
              f"{ours / theirs:>10.2f}")


def run_on_gpu() -> None:
    print(f"{'operation':58}{'':>6}{'ours':>11}{'MLX':>11}{'ours/MLX':>10}")
    for c in cases():
        time_case(c)


def shrink(c: Case) -> Case:
    """The simulator's copy of a case: smaller where `simulated_at` says so."""
    if c.simulated_at is None:
        return c
    rows, segments = c.simulated_at
    make = contiguous if c.indices is None else indexed
    small = make(rows, segments, c.x.shape[1], c.op)
    small.label = f"{c.label} (simulated at {rows:,} x {segments:,} segments)"
    return small


def report_lines(c: Case) -> list[str]:
    """Simulate the forward launch (and the indexed backward) and describe its traffic."""
    lines = []
    start = time.perf_counter()
    if c.indices is None:
        run = sr.simulate(c.x, c.lengths, c.op)
    else:
        run = sr.simulate_indexed(c.x, c.indices, None, c.lengths, c.op)
    seconds = time.perf_counter() - start
    report = run.report
    lines.append(f"== {c.label}: {report.bytes_moved / report.ideal_bytes:.3f}x the read-once "
                 f"ideal, {report.totals()['atomics']} atomics, {len(report.errors)} errors, "
                 f"simulated in {seconds:.1f} s")
    for t in report.traffic:
        lines.append(f"   {t.name:>8}: {t.bytes_moved:>14,} bytes moved, "
                     f"ideal {t.ideal_bytes:>13,}")
    if c.indices is not None:
        gathered = c.indices.size * c.x.shape[1] * c.x.itemsize
        lines.append(f"   every position gathers its row: x {gathered:,} bytes at best, so "
                     f"{report.bytes_moved / (report.ideal_bytes - c.x.nbytes + gathered):.3f}x "
                     "the gather ideal")
        y = run.outputs[0]
        back = sr.simulate_indexed_backward(c.x, c.indices, None, c.lengths, y,
                                            mx.ones(y.shape), c.op).report
        atomics = back.totals()["atomics"]
        lines.append(f"   backward (scatter-add): {atomics:,} atomics = "
                     f"{atomics / y.size:.2f} per output element, "
                     f"{atomics / c.x.size:.2f} per element of dx, {len(back.errors)} errors")
    return lines


def run_in_simulator() -> None:
    print("These benchmarks time the kernels on an Apple GPU and need MLX's Metal back end,")
    print("which this machine does not have. Showing the simulator's device-traffic report for")
    print("the same launches instead.\n")
    for c in cases():
        print("\n".join(report_lines(shrink(c))))


def main() -> None:
    if mx.metal.is_available():
        run_on_gpu()
    else:
        run_in_simulator()


if __name__ == "__main__":
    main()
