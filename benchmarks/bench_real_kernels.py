"""The real kernels of notebooks 01-04 against MLX's built-in ops.

Run: python benchmarks/bench_real_kernels.py

On Apple silicon (MLX with its Metal back end) each kernel is timed on the GPU against the
MLX op it replaces, at realistic sizes (median of 20 runs). Anywhere else
the GPU timings cannot be taken: the script says so and prints, instead, the simulator's
device-traffic report for the same launches (bytes moved against the ideal of reading each
input once and writing each output once) and how long the simulation took.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import mlx.core as mx
from timing import compare_on_gpu

from solutions import axpby, conv1d, gemm, row_reduce

GEMM_NOTE = ("64x64 tiles: every tile column re-reads a, every tile row re-reads b "
             "(8x each at 512), so (8 + 8 + 1) / 3 = 5.67x; see solutions/gemm.py")
LAYER_NOTE = ("256x64 tiles: the points (a) are read once, the 64x64 weights (b) once per "
              "tile row")
WEIGHT_GRAD_NOTE = ("one 64x64 tile, so K (the points) is split in 64 slices: inputs read once, "
                    "out = the float32 partial products that finish() sums")


@dataclass
class Bench:
    """One comparison: our kernel and MLX's op on the same operands."""

    label: str
    ours: Callable[[], mx.array]
    mlx: Callable[[], mx.array]
    simulate: Callable[[], object]
    simulated_label: str = ""   # a smaller launch for the simulator, when the full one is slow
    note: str = ""


def benches() -> list[Bench]:
    mx.random.seed(0)
    n = 1 << 24
    x, y = mx.random.normal((n,)), mx.random.normal((n,))
    rows, cols = mx.random.normal((4096, 4096)), mx.random.normal((4096,))
    signal, taps = mx.random.normal((1 << 20,)), mx.random.normal((31,))
    reduce_in = mx.random.normal((4096, 4096))
    a32, b32 = mx.random.normal((2048, 2048)), mx.random.normal((2048, 2048))
    a16, b16 = a32.astype(mx.float16), b32.astype(mx.float16)
    small_a, small_b = mx.random.normal((512, 512)), mx.random.normal((512, 512))
    points, weights = mx.random.normal((1 << 16, 64)), mx.random.normal((64, 64))
    grads = mx.random.normal((1 << 16, 64))
    mx.eval(x, y, rows, cols, signal, taps, reduce_in, a32, b32, a16, b16, small_a, small_b,
            points, weights, grads)
    weight_grad = gemm._gemm_op(True, False)   # x^T @ dy, x read transposed in place

    def simulate_weight_grad() -> object:
        import metalsim

        kernel, args = gemm.launch(points[:16384], grads[:16384], metalsim.metal_kernel,
                                   transpose_a=True)
        return metalsim.simulate(kernel, **args)

    def conv_mlx() -> mx.array:
        return mx.conv1d(signal[None, :, None], taps[None, :, None], padding=15)[0, :, 0]

    return [
        Bench("axpby, 16M float32", lambda: axpby.axpby(x, y, 2.0, 3.0),
              lambda: 2.0 * x + 3.0 * y, lambda: axpby.simulate(x, y, 2.0, 3.0)),
        Bench("axpby, 4096x4096 + broadcast row", lambda: axpby.axpby(rows, cols, 2.0, 3.0),
              lambda: 2.0 * rows + 3.0 * cols, lambda: axpby.simulate(rows, cols, 2.0, 3.0)),
        Bench("conv1d, 1M x 31 taps", lambda: conv1d.conv1d(signal, taps, 15), conv_mlx,
              lambda: conv1d.simulate(signal, taps, 15)),
        Bench("row sum, 4096x4096", lambda: row_reduce.row_sum(reduce_in),
              lambda: mx.sum(reduce_in, axis=-1), lambda: row_reduce.simulate(reduce_in, "sum")),
        Bench("row max, 4096x4096", lambda: row_reduce.row_max(reduce_in),
              lambda: mx.max(reduce_in, axis=-1), lambda: row_reduce.simulate(reduce_in, "max")),
        Bench("gemm, 2048^3 float32", lambda: gemm.gemm(a32, b32), lambda: a32 @ b32,
              lambda: gemm.simulate(small_a, small_b), "512^3 float32", GEMM_NOTE),
        Bench("gemm, 2048^3 float16", lambda: gemm.gemm(a16, b16), lambda: a16 @ b16,
              lambda: gemm.simulate(small_a.astype(mx.float16), small_b.astype(mx.float16)),
              "512^3 float16", GEMM_NOTE),
        Bench("gemm, point-cloud layer 65536 x 64 @ 64 x 64", lambda: gemm.gemm(points, weights),
              lambda: points @ weights, lambda: gemm.simulate(points[:16384], weights),
              "16384 points", LAYER_NOTE),
        Bench("gemm, its weight gradient x^T @ dy over 65536 points",
              lambda: weight_grad(points, grads), lambda: points.T @ grads,
              simulate_weight_grad, "16384 points", WEIGHT_GRAD_NOTE),
    ]


def run_on_gpu() -> None:
    compare_on_gpu([(b.label, b.ours, b.mlx) for b in benches()])


def run_in_simulator() -> None:
    print("These benchmarks time the kernels on an Apple GPU and need MLX's Metal back end,")
    print("which this machine does not have. Showing the simulator's device-traffic report for")
    print("the same launches instead (bytes moved against reading each input once and writing")
    print("each output once).\n")
    for b in benches():
        label = f"{b.label} (simulated at {b.simulated_label})" if b.simulated_label else b.label
        start = time.perf_counter()
        run = b.simulate()
        seconds = time.perf_counter() - start
        report = run.report
        ratio = report.bytes_moved / report.ideal_bytes
        print(f"== {label}: {ratio:.3f}x ideal, {len(report.errors)} errors, "
              f"simulated in {seconds:.1f} s")
        for t in report.traffic:
            print(f"   {t.name:>5}: {t.bytes_moved:>14,} bytes moved, ideal {t.ideal_bytes:>12,}")
        if b.note:
            print(f"   {b.note}")


def main() -> None:
    if mx.metal.is_available():
        run_on_gpu()
    else:
        run_in_simulator()


if __name__ == "__main__":
    main()
