"""The real kernels on an NVIDIA GPU (metalsim.cuda) against PyTorch on the same GPU.

Run (needs CuPy, PyTorch with CUDA, and a GPU):  python benchmarks/bench_gpu.py [--only NAME]

Each benchmark calls a real kernel's MLX function once under a recording CUDA back end, which
keeps every kernel launch the function makes (several for ops with a finishing pass); those
launches are then timed with their buffers resident on the GPU, with CUDA events: a few
warm-up runs, then the median of `REPS` timed runs. PyTorch's equivalent is timed the same way.
Achieved bandwidth is the ideal traffic (each input read once, each output written once)
divided by the median time, against the device-to-device copy bandwidth measured here.
For the point-cloud operators the Triton figures quoted in issue 13 (H100, medians of 20) are
printed beside ours. The output is checked against PyTorch's (max error relative to the
largest magnitude) so a fast wrong kernel cannot pass unnoticed.

To add a benchmark, append a `Bench` to `benches()`: a name, a `setup(rng)` returning the
operands, `ours(*operands)` calling the MLX function, `torch(*tensors)`, and optionally the
Triton figure.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import mlx.core as mx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import metalsim  # noqa: E402
import metalsim.cuda  # noqa: E402
from metalsim.cuda.api import CudaKernel  # noqa: E402

WARMUP, REPS = 5, 25


@dataclass
class Bench:
    name: str
    setup: Callable[[np.random.Generator], list[np.ndarray]]
    ours: Callable[..., mx.array]
    torch: Callable[..., object]
    triton_ms: float | None = None
    torch_quoted_ms: float | None = None   # the PyTorch figure quoted with the Triton one


# --- timing -------------------------------------------------------------------------------------

def time_gpu(enqueue: Callable[[], object]) -> float:
    """Median milliseconds of `enqueue()` over REPS runs after WARMUP, with CUDA events."""
    import cupy

    for _ in range(WARMUP):
        enqueue()
    cupy.cuda.Device().synchronize()
    times = []
    for _ in range(REPS):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        enqueue()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop))
    return statistics.median(times)


def copy_bandwidth() -> float:
    """Device-to-device copy bandwidth in GB/s (bytes read + bytes written, 1 GiB buffers)."""
    import cupy

    src = cupy.ones(1 << 28, dtype=cupy.float32)
    dst = cupy.empty_like(src)
    ms = time_gpu(lambda: dst.__setitem__(slice(None), src))
    return 2 * src.nbytes / (ms * 1e-3) / 1e9


class _Recording(CudaKernel):
    launches: list = []

    def __call__(self, *args: object, **kwargs: object) -> list[mx.array]:
        _Recording.launches.append((self, dict(kwargs)))
        return super().__call__(*args, **kwargs)


def record(thunk: Callable[[], mx.array]) -> tuple[mx.array, list]:
    """Run `thunk` with mx.fast.metal_kernel on the GPU; return its result and its launches."""
    _Recording.launches = []
    saved = mx.fast.metal_kernel
    mx.fast.metal_kernel = lambda *a, **k: _Recording(metalsim.metal_kernel(*a, **k).spec)
    mx.disable_compile()
    try:
        out = thunk()
        mx.eval(out)
    finally:
        mx.fast.metal_kernel = saved
        mx.enable_compile()
    return out, _Recording.launches


# --- the benchmarks -----------------------------------------------------------------------------

def _normal(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape, dtype=np.float32)


def _triplets(rng: np.random.Generator, k: int, t: int, n: int) -> list[np.ndarray]:
    """Sorted-by-output (a_idx, b_idx, o_idx) of a sparse convolution with n points."""
    o_idx = np.sort(rng.integers(0, n, t)).astype(np.int32)
    return [rng.integers(0, k, t).astype(np.int32), rng.integers(0, n, t).astype(np.int32),
            o_idx]


def _mvmr_setup(k: int, t: int, c: int, m: int) -> Callable:
    def setup(rng: np.random.Generator) -> list[np.ndarray]:
        n = max(1, t // 8)
        a_idx, b_idx, o_idx = _triplets(rng, k, t, n)
        return [_normal(rng, k, 1, c, m), a_idx, _normal(rng, n, 1, c), b_idx, o_idx]
    return setup


def _mvmr_ours(a, a_idx, b, b_idx, o_idx):
    from solutions import mvmr
    return mvmr.mvmr(a, a_idx, b, b_idx, o_idx, b.shape[0])


def _mvmr_torch(a, a_idx, b, b_idx, o_idx):
    """Gather, one matmul per kernel offset, scatter-add (the usual PyTorch sparse conv)."""
    import torch
    out = torch.zeros((b.shape[0], 1, a.shape[3]), device=a.device)
    for k in range(a.shape[0]):
        sel = (a_idx == k).nonzero().squeeze(1)
        out.index_add_(0, o_idx[sel], (b[b_idx[sel], 0] @ a[k, 0]).unsqueeze(1))
    return out


def _segment_setup(n: int, c: int, k: int) -> Callable:
    def setup(rng: np.random.Generator) -> list[np.ndarray]:
        segments = n // k
        cuts = np.sort(rng.integers(0, n + 1, segments - 1))
        return [_normal(rng, n, c), np.diff(np.r_[0, cuts, n]).astype(np.int32)]
    return setup


def _segment_torch(op: str) -> Callable:
    def run(x, lengths):
        import torch
        return torch.segment_reduce(x, op, lengths=lengths, axis=0, unsafe=True)
    return run


def _segment_ours(op: str) -> Callable:
    def run(x, lengths):
        from solutions import segment_reduce
        return segment_reduce.segment_reduce(x, lengths, op)
    return run


def _indexed_setup(pairs: int, n: int) -> Callable:
    def setup(rng: np.random.Generator) -> list[np.ndarray]:
        return [_normal(rng, n, 3), rng.integers(0, n, pairs).astype(np.int32),
                _normal(rng, n, 3), rng.integers(0, n, pairs).astype(np.int32)]
    return setup


def _indexed_ours(a, a_idx, b, b_idx):
    from solutions import distances
    return distances.indexed_distance(a, a_idx, b, b_idx)


def _indexed_torch(a, a_idx, b, b_idx):
    return (a[a_idx] - b[b_idx]).norm(dim=1)


def benches() -> list[Bench]:
    from solutions import axpby, conv1d, distances, gemm, row_reduce

    def torch_conv(x, w):
        import torch.nn.functional as F
        return F.conv1d(x[None, None], w[None, None], padding=15)[0, 0]

    return [
        Bench("axpby, 16M float32", lambda r: [_normal(r, 1 << 24), _normal(r, 1 << 24)],
              lambda x, y: axpby.axpby(x, y, 2.0, 3.0), lambda x, y: 2.0 * x + 3.0 * y),
        Bench("axpby, 4096x4096 + broadcast row",
              lambda r: [_normal(r, 4096, 4096), _normal(r, 4096)],
              lambda x, y: axpby.axpby(x, y, 2.0, 3.0), lambda x, y: 2.0 * x + 3.0 * y),
        Bench("conv1d, 1M x 31 taps", lambda r: [_normal(r, 1 << 20), _normal(r, 31)],
              lambda x, w: conv1d.conv1d(x, w, 15), torch_conv),
        Bench("row sum, 4096x4096", lambda r: [_normal(r, 4096, 4096)],
              row_reduce.row_sum, lambda x: x.sum(-1)),
        Bench("row max, 4096x4096", lambda r: [_normal(r, 4096, 4096)],
              row_reduce.row_max, lambda x: x.amax(-1)),
        Bench("gemm, 2048^3 float32", lambda r: [_normal(r, 2048, 2048), _normal(r, 2048, 2048)],
              gemm.gemm, lambda a, b: a @ b),
        Bench("gemm, 65536x64 @ 64x64 (point-cloud layer)",
              lambda r: [_normal(r, 1 << 16, 64), _normal(r, 64, 64)], gemm.gemm,
              lambda a, b: a @ b),
        Bench("MVMR K=27, T=6.5k, C=M=256", _mvmr_setup(27, 6500, 256, 256), _mvmr_ours,
              _mvmr_torch, 0.199, 1.31),
        Bench("MVMR K=27, T=25k, C=M=128", _mvmr_setup(27, 25000, 128, 128), _mvmr_ours,
              _mvmr_torch, 0.123),
        Bench("MVMR K=27, T=500k, C=M=32", _mvmr_setup(27, 500000, 32, 32), _mvmr_ours,
              _mvmr_torch, 0.373),
        Bench("segment sum N=1M, C=32, K=16", _segment_setup(1 << 20, 32, 16),
              _segment_ours("sum"), _segment_torch("sum"), 0.336, 1.59),
        Bench("segment max N=1M, C=32, K=16", _segment_setup(1 << 20, 32, 16),
              _segment_ours("max"), _segment_torch("max"), 0.327, 5.35),
        Bench("segment sum N=1M, C=256, K=32", _segment_setup(1 << 20, 256, 32),
              _segment_ours("sum"), _segment_torch("sum"), 0.569),
        Bench("segment max N=1M, C=256, K=32", _segment_setup(1 << 20, 256, 32),
              _segment_ours("max"), _segment_torch("max"), 0.551),
        Bench("indexed distance, 16.8M pairs", _indexed_setup(1 << 24, 1 << 20), _indexed_ours,
              _indexed_torch, 0.387, 1.11),
        Bench("pairwise distance, 4096 x 4096 points",
              lambda r: [_normal(r, 4096, 3), _normal(r, 4096, 3)],
              distances.pairwise_distance, lambda p, q: __import__("torch").cdist(p, q)),
    ]


def run(bench: Bench, copy_gbs: float) -> str:
    import torch

    rng = np.random.default_rng(0)
    operands = bench.setup(rng)
    result, launches = record(lambda: bench.ours(*[mx.array(o) for o in operands]))
    prepared = [metalsim.cuda.prepare(kernel, **kwargs)[0] for kernel, kwargs in launches]
    ours_ms = time_gpu(lambda: [launch.enqueue() for launch in prepared])
    tensors = [torch.from_numpy(o.astype(np.int64) if o.dtype == np.int32 else o).cuda()
               for o in operands]
    torch_out = bench.torch(*tensors)
    torch_ms = time_gpu(lambda: bench.torch(*tensors))
    want = torch_out.float().cpu().numpy()
    got = np.array(result.astype(mx.float32))
    got = got.reshape(want.shape)
    finite = np.isfinite(want)
    if not np.array_equal(got[~finite], want[~finite]):
        raise AssertionError("the kernel's infinities/NaNs differ from PyTorch's")
    err = float(np.abs(got - want)[finite].max(initial=0.0)
                / max(np.abs(want[finite]).max(initial=0.0), 1e-30))
    ideal = sum(o.nbytes for o in operands) + got.size * result.dtype.size
    gbs = ideal / (ours_ms * 1e-3) / 1e9
    line = (f"{bench.name:44s} ours {ours_ms:8.3f} ms ({len(prepared)} launch"
            f"{'es' if len(prepared) != 1 else ''}) | PyTorch {torch_ms:8.3f} ms | "
            f"{torch_ms / ours_ms:5.2f}x | {gbs:7.1f} GB/s = {100 * gbs / copy_gbs:5.1f}% of copy"
            f" | max rel err {err:.1e}")
    if bench.triton_ms is not None:
        quoted = f", PyTorch quoted {bench.torch_quoted_ms} ms" if bench.torch_quoted_ms else ""
        line += f"\n{'':44s} Triton (issue 13, H100): {bench.triton_ms} ms{quoted}"
    return line


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="")
    opts = parser.parse_args()
    if not metalsim.cuda.gpu_available():
        print("bench_gpu.py needs CuPy and an NVIDIA GPU")
        return 1
    copy_gbs = copy_bandwidth()
    print(f"GPU: {metalsim.cuda.gpu_name()}; device copy bandwidth {copy_gbs:.0f} GB/s; "
          f"medians of {REPS} after {WARMUP} warm-up runs, CUDA events")
    for bench in benches():
        if opts.only and opts.only.lower() not in bench.name.lower():
            continue
        try:
            print(run(bench, copy_gbs), flush=True)
        except Exception as error:  # noqa: BLE001 - report and go on to the next benchmark
            print(f"{bench.name:44s} FAILED: {type(error).__name__}: {str(error)[:600]}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
