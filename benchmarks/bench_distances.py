"""The distance kernels of notebook 07 against plain MLX, at realistic sizes (pointcloud-ops.md
§5-§6: radius searches filter 2^20 to 2^26 candidate pairs; 1.6M pairs for the dense matrix).

Run: python benchmarks/bench_distances.py

On Apple silicon (MLX with its Metal back end) each kernel, forward and forward + backward, is
timed on the GPU against the plain-MLX code it replaces (median of 20 runs). Anywhere else
those timings cannot be taken: the script says so, and prints instead the simulator's traffic
report for the same launches (bytes moved per buffer against the ideal of touching each once,
and atomics per pair for the backward scatter) and how long each simulation took.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import mlx.core as mx
from timing import compare_on_gpu

from solutions import distances

N_PAIRS = 1 << 20             # candidate pairs of a radius search
N_A, N_B = 50_000, 200_000    # query points and searched points (benchmark_ball_query sizes)
N_P = N_Q = 1280              # 1,638,400 pairs in the dense matrix


def indexed_mlx(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array,
                kind: str) -> mx.array:
    diff = a[a_idx] - b[b_idx]
    if kind == "ball":
        return mx.sqrt(mx.sum(diff * diff, axis=-1))
    return mx.max(mx.abs(diff), axis=-1)


def pairwise_mlx(p: mx.array, q: mx.array) -> mx.array:
    diff = p[:, None, :] - q[None, :, :]
    return mx.sqrt(mx.sum(diff * diff, axis=-1))


@dataclass
class Bench:
    """One comparison: our kernel and plain MLX on the same operands, and the launch the
    simulator reports on."""

    label: str
    ours: Callable[[], object]
    mlx: Callable[[], object]
    simulate: Callable[[], object]
    pairs: int = 0          # candidate pairs, to report bytes and atomics per pair
    simulated: str = ""     # what the simulator runs, where it is not the whole of `ours`


def benches() -> list[Bench]:
    mx.random.seed(0)
    a, b = mx.random.uniform(0, 10, (N_A, 3)), mx.random.uniform(0, 10, (N_B, 3))
    a_idx = mx.random.randint(0, N_A, (N_PAIRS,), dtype=mx.int32)
    b_idx = mx.random.randint(0, N_B, (N_PAIRS,), dtype=mx.int32)
    cot = mx.random.normal((N_PAIRS,))
    p, q = mx.random.normal((N_P, 3)), mx.random.normal((N_Q, 3))
    mx.eval(a, b, a_idx, b_idx, cot, p, q)
    pairs = f"{N_PAIRS:,} pairs"
    out = []
    for kind in distances.KINDS:
        out.append(Bench(
            f"indexed distance {kind}, {pairs}",
            lambda kind=kind: distances.indexed_distance(a, a_idx, b, b_idx, kind),
            lambda kind=kind: indexed_mlx(a, a_idx, b, b_idx, kind),
            lambda kind=kind: distances.simulate_indexed(a, a_idx, b, b_idx, kind), N_PAIRS))
    out.append(Bench(
        f"within radius 0.5 (ball), {pairs}",
        lambda: distances.within_radius(a, a_idx, b, b_idx, 0.5),
        lambda: indexed_mlx(a, a_idx, b, b_idx, "ball") <= 0.5,
        lambda: distances.simulate_within(a, a_idx, b, b_idx, 0.5), N_PAIRS))
    for kind in distances.KINDS:
        out.append(Bench(
            f"indexed distance {kind} fwd+bwd, {pairs}",
            lambda kind=kind: _grad(distances.indexed_distance, a, a_idx, b, b_idx, cot, kind),
            lambda kind=kind: _grad(indexed_mlx, a, a_idx, b, b_idx, cot, kind),
            lambda kind=kind: distances.simulate_indexed_vjp(a, a_idx, b, b_idx, cot, kind),
            N_PAIRS, "the backward launch"))
    out.append(Bench(
        f"pairwise distance {N_P}x{N_Q}", lambda: distances.pairwise_distance(p, q),
        lambda: pairwise_mlx(p, q), lambda: distances.simulate_pairwise(p, q)))
    out.append(Bench(
        f"pairwise distance {N_P}x{N_Q} fwd+bwd",
        lambda: mx.grad(lambda p, q: distances.pairwise_distance(p, q).sum(), (0, 1))(p, q),
        lambda: mx.grad(lambda p, q: pairwise_mlx(p, q).sum(), (0, 1))(p, q),
        lambda: _simulate_pairwise_vjp(p, q), simulated="the backward launches: grad_p, grad_q"))
    return out


def _grad(fn: Callable, a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array,
          cot: mx.array, kind: str) -> tuple[mx.array, mx.array]:
    return mx.grad(lambda a, b: mx.sum(fn(a, a_idx, b, b_idx, kind) * cot), (0, 1))(a, b)


def _simulate_pairwise_vjp(p: mx.array, q: mx.array) -> list:
    """Both backward launches (grad_p, then grad_q) in the simulator."""
    import metalsim

    d, cot = pairwise_mlx(p, q), mx.ones((p.shape[0], q.shape[0]))
    runs = []
    for side in ("p", "q"):
        kernel, args = distances.pairwise_vjp_launch(p, q, d, cot, side, metalsim.metal_kernel)
        runs.append(metalsim.simulate(kernel, **args))
    return runs


def run_on_gpu() -> None:
    compare_on_gpu([(b.label, b.ours, b.mlx) for b in benches()])


def run_in_simulator() -> None:
    print("These benchmarks time the kernels on an Apple GPU and need MLX's Metal back end,")
    print("which this machine does not have. Showing the simulator's device-traffic report for")
    print("the same launches instead (bytes moved against touching each buffer once).\n")
    for b in benches():
        start = time.perf_counter()
        result = b.simulate()
        seconds = time.perf_counter() - start
        runs = result if isinstance(result, list) else [result]
        what = f" ({b.simulated})" if b.simulated else ""
        print(f"== {b.label}{what}: simulated in {seconds:.1f} s")
        for run in runs:
            report = run.report
            ratio = report.bytes_moved / report.ideal_bytes
            print(f"   {report.bytes_moved:>14,} bytes moved, {ratio:.2f}x ideal, "
                  f"{len(report.errors)} errors")
            for t in report.traffic:
                print(f"   {t.name:>7}: {t.bytes_moved:>14,} bytes, ideal {t.ideal_bytes:>12,}")
            if b.pairs:
                atomics = report.totals()["atomics"]
                print(f"   {report.bytes_moved / b.pairs:.0f} bytes and {atomics / b.pairs:.0f} "
                      "atomics per pair (the ideal counts each point once; a gather reads it "
                      "once per pair, less what the caches keep)")


def main() -> None:
    if mx.metal.is_available():
        run_on_gpu()
    else:
        run_in_simulator()


if __name__ == "__main__":
    main()
