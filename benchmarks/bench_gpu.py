"""The real kernels on an NVIDIA GPU (metalsim.cuda) against PyTorch on the same GPU.

Run (needs CuPy, PyTorch with CUDA, and a GPU):
    python benchmarks/bench_gpu.py [--only NAME,NAME] [--pointelligence DIR] [--exact-products]
                                   [--variant LABEL[@PART]:MODULE.NAME=VALUE;...]
                                   [--peers LABEL,LABEL]

Each benchmark calls a real kernel's MLX function once under a recording CUDA back end, which
keeps every kernel launch the function makes (several for ops with a finishing pass); those
launches are then timed with their buffers resident on the GPU: a few warm-up runs, then the
median over `REPS` runs of their summed kernel time (PyTorch's profiler; the output fill of
`init_value` is not re-run). PyTorch's equivalent is timed with CUDA events.
Achieved bandwidth is the ideal traffic (each input read once, each output written once)
divided by the median time, against the device-to-device copy bandwidth measured here.
For the point-cloud operators, `--pointelligence DIR` names a checkout of
ant-research/pointelligence (its `sparse_engines` package, not part of this project): its
Triton kernels then run in this process on the same operands, and both sides are timed as
kernel time only with PyTorch's profiler (the median over `REPS` calls of the summed
durations of the GPU kernels a call launches: all of ours; for Triton the op's own Triton
kernel, not the output fill or the segment-id pass of its wrapper). Without it the Triton
figures quoted in issue 13 are printed instead. For MVMR and VVOR its TIG engine (triplet
implicit GEMM, `sparse_engines.tig`) runs too: MVMR with its "flat" and its default ("auto")
structure, VVOR with its one weight-gradient routing; its index (`TigIndex`, built once per
triplet list and reused across layers) is built before timing, and its kernels (names with
`_tig_`) are timed like Triton's. Each such row ends with ours over the fastest of
pointelligence's engines. Ours is timed the same way: the slot runs of the triplet list
(`solutions.mvmr.slot_runs`, one tiny kernel), which the layers and gradients sharing a list
reuse, are built before timing and passed in (`Bench.index`), and their own kernel time is
printed on the next line. The MVMR triplets come sorted by slot, as production triplet lists
are (Triton's grouped kernel needs it; ours is told so with `slot_sorted=True`). Every output is
checked against PyTorch's on the operands in float64 (max error relative to the largest
magnitude), so a fast wrong kernel cannot pass unnoticed and the error is the kernel's own.
`--exact-products` runs our kernels with `metalsim.cuda.exact_matrix_products()`: their
`simdgroup_matrix` products on CUDA-core fused multiply-adds instead of tensor cores (3xTF32
for float). The header says which precision pointelligence's `tl.dot` engines resolve to for
float32 (its default follows PyTorch's TF32 switch: IEEE float products unless it is on).

A/B in one process: `--variant` (repeatable) records and compiles ours again with module-level
tuning values set (VALUE a Python literal, the old value put back after) and times it beside
ours on the same operands; `@` limits it to the benchmarks whose names contain that part, e.g.
    --variant "128 threads@MVMR K=27, T=6.5k:solutions.mvmr_grouped.MVMR_WIDE_TILE=(64,64,16,128)"
Each prints its kernel time, ours over it, and its error. `--peers "TIG flat,Triton"` runs only
those of pointelligence's engines.

To add a benchmark, append a `Bench` to `benches()`: a name, a `setup(rng)` returning the
operands, `ours(*operands)` calling the MLX function, `torch(*tensors)`, and optionally the
Triton figure.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import statistics
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import mlx.core as mx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import metalsim  # noqa: E402
import metalsim.cuda  # noqa: E402
from metalsim.cuda.api import CudaKernel  # noqa: E402

WARMUP, REPS = 5, 20


@dataclass
class Peer:
    """One of pointelligence's engines: `make(*tensors)` does its untimed setup and returns
    the call to time; `kernel` is what the names of the GPU kernels to time contain."""

    label: str
    make: Callable[..., Callable[[], object]]
    kernel: str


@dataclass
class Bench:
    name: str
    setup: Callable[[np.random.Generator], list[np.ndarray]]
    ours: Callable[..., mx.array]
    torch: Callable[..., object]
    triton_ms: float | None = None
    torch_quoted_ms: float | None = None   # the PyTorch figure quoted with the Triton one
    peers: tuple[Peer, ...] = ()           # pointelligence's engines on the same operands
    # What ours computes from the triplet list alone (the slot runs), which the layers and
    # gradients sharing a list reuse: built before timing, as TIG's index is, and passed to
    # `ours` as its last argument; its own kernel time is printed beside ours.
    index: Callable[..., mx.array] | None = None


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


def kernel_ms(call: Callable[[], object], name_part: str = "") -> float:
    """Median milliseconds of GPU kernel time per `call()` over REPS calls after WARMUP, from
    PyTorch's profiler: the summed durations of the kernels one call launches (only those
    whose name contains `name_part`, when given)."""
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    for _ in range(WARMUP):
        call()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(REPS):
            call()
        torch.cuda.synchronize()
    kernels = sorted((e for e in prof.events() if e.device_type == DeviceType.CUDA
                      and name_part in e.name), key=lambda e: e.time_range.start)
    if not kernels or len(kernels) % REPS:
        raise RuntimeError(f"the profiler saw {len(kernels)} kernels for {REPS} calls")
    per_call = len(kernels) // REPS
    return statistics.median(
        sum(e.time_range.elapsed_us() for e in kernels[i:i + per_call]) / 1e3
        for i in range(0, len(kernels), per_call))


def copy_bandwidth() -> tuple[float, float]:
    """Device-to-device copy of 1 GiB of float32: (milliseconds, GB/s counting the bytes read
    and the bytes written)."""
    import cupy

    src = cupy.ones(1 << 28, dtype=cupy.float32)
    dst = cupy.empty_like(src)
    ms = time_gpu(lambda: dst.__setitem__(slice(None), src))
    return ms, 2 * src.nbytes / (ms * 1e-3) / 1e9


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


def prepared_launches(bench: Bench, operands: list[np.ndarray]) -> tuple[mx.array, list, list]:
    """Our function's result on `operands`, its launches and those of its index (`Bench.index`),
    compiled and resident on the GPU."""
    arrays = [mx.array(o) for o in operands]
    built, index_launches = (), []
    if bench.index is not None:
        runs, index_launches = record(lambda: bench.index(*arrays))
        built = (runs,)
    result, launches = record(lambda: bench.ours(*arrays, *built))

    def compiled(found: list) -> list:
        return [metalsim.cuda.prepare(kernel, **kwargs)[0] for kernel, kwargs in found]
    return result, compiled(launches), compiled(index_launches)


@contextlib.contextmanager
def settings(assignments: str) -> Iterator[None]:
    """`MODULE.NAME=VALUE;...` (VALUE a Python literal) set inside the block, then restored."""
    undo = []
    try:
        for assignment in filter(None, assignments.split(";")):
            target, value = assignment.split("=", 1)
            module_name, name = target.strip().rsplit(".", 1)
            module = importlib.import_module(module_name)
            undo.append((module, name, getattr(module, name)))
            setattr(module, name, ast.literal_eval(value.strip()))
        yield
    finally:
        for module, name, value in reversed(undo):
            setattr(module, name, value)


# --- the benchmarks -----------------------------------------------------------------------------

def _normal(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape, dtype=np.float32)


def _triplets(rng: np.random.Generator, k: int, t: int, n: int) -> list[np.ndarray]:
    """(a_idx, b_idx, o_idx) of a sparse convolution with n points, sorted by slot and then
    by output point, as production triplet lists are."""
    a_idx, b_idx, o_idx = (rng.integers(0, bound, t).astype(np.int32) for bound in (k, n, n))
    order = np.lexsort((o_idx, a_idx))
    return [a_idx[order], b_idx[order], o_idx[order]]


def _mvmr_setup(k: int, t: int, c: int, m: int) -> Callable:
    def setup(rng: np.random.Generator) -> list[np.ndarray]:
        n = max(1, t // 8)
        a_idx, b_idx, o_idx = _triplets(rng, k, t, n)
        return [_normal(rng, k, 1, c, m), a_idx, _normal(rng, n, 1, c), b_idx, o_idx]
    return setup


def _mvmr_ours(a, a_idx, b, b_idx, o_idx, runs=None):
    from solutions import mvmr
    return mvmr.mvmr(a, a_idx, b, b_idx, o_idx, b.shape[0], slot_sorted=True, runs=runs)


def _mvmr_index(a, a_idx, b, b_idx, o_idx):
    from solutions import mvmr
    return mvmr.slot_runs(a_idx, a.shape[0])


def _mvmr_triton(a, a_idx, b, b_idx, o_idx):
    from sparse_engines.mvmr_triton import sparse_matrix_vector_multiplication_reduction
    return sparse_matrix_vector_multiplication_reduction(
        a, a_idx.int(), b, b_idx.int(), o_idx.int(), b.shape[0])


def _tig_index(out_idx, in_idx, slot, n):
    from sparse_engines.tig import TigIndex
    return TigIndex(out_idx, in_idx, slot, n, num_kernel_offsets=27, assume_sorted=True)


def _mvmr_tig(mode: str) -> Callable:
    """TIG's forward, `out[i] += feat[j] @ W[k]`, on MVMR's operands."""
    def make(a, a_idx, b, b_idx, o_idx):
        from sparse_engines.tig import tig_forward
        index = _tig_index(o_idx, b_idx, a_idx, b.shape[0])
        feat = b.reshape(b.shape[0], -1).contiguous()
        return lambda: tig_forward(a, feat, index, mode=mode)
    return make


def _vvor_tig(x, x_idx, y, y_idx, slot):
    """TIG's weight gradient, `grad_W[k] += feat[j]^T grad_out[i]`, on VVOR's operands."""
    from sparse_engines.tig import tig_grad_weight
    index = _tig_index(y_idx, x_idx, slot, x.shape[0])
    feat, grad = x.reshape(x.shape[0], -1), y.reshape(y.shape[0], -1)
    shape = (27, 1, feat.shape[1], grad.shape[1])
    return lambda: tig_grad_weight(feat, grad, index, shape)


def _call(op: Callable) -> Callable:
    """A Peer's `make` for an op that needs no setup."""
    return lambda *tensors: lambda: op(*tensors)


def _segment_triton(op: str) -> Callable:
    def run(x, lengths):
        from sparse_engines.large_segment_reduce_triton import large_segment_reduce
        return large_segment_reduce(x, op, lengths=lengths)
    return run


def _mvmr_torch(a, a_idx, b, b_idx, o_idx):
    """Gather, one matmul per kernel offset, scatter-add (the usual PyTorch sparse conv)."""
    import torch
    out = torch.zeros((b.shape[0], 1, a.shape[3]), device=a.device, dtype=a.dtype)
    for k in range(a.shape[0]):
        sel = (a_idx == k).nonzero().squeeze(1)
        out.index_add_(0, o_idx[sel], (b[b_idx[sel], 0] @ a[k, 0]).unsqueeze(1))
    return out


def _vvor_setup(k: int, t: int, c: int, m: int) -> Callable:
    """MVMR's weight gradient: features (N, 1, C), gradients (N, 1, M), triplets by slot."""
    def setup(rng: np.random.Generator) -> list[np.ndarray]:
        n = max(1, t // 8)
        a_idx, b_idx, o_idx = _triplets(rng, k, t, n)
        return [_normal(rng, n, 1, c), b_idx, _normal(rng, n, 1, m), o_idx, a_idx]
    return setup


def _vvor_ours(x, x_idx, y, y_idx, slot, runs=None):
    from solutions import mvmr
    return mvmr.vvor(x, x_idx, y, y_idx, slot, 27, slot_sorted=True, runs=runs)


def _vvor_index(x, x_idx, y, y_idx, slot):
    from solutions import mvmr
    return mvmr.slot_runs(slot, 27)


def _vvor_torch(x, x_idx, y, y_idx, slot):
    import torch
    out = torch.zeros((27, 1, x.shape[2], y.shape[2]), device=x.device, dtype=x.dtype)
    return out.index_add_(0, slot, x[x_idx][..., :, None] * y[y_idx][..., None, :])


def _vvor_triton(x, x_idx, y, y_idx, slot):
    from sparse_engines.vvor_triton import sparse_vector_vector_outer_product_reduction
    return sparse_vector_vector_outer_product_reduction(
        x, x_idx.int(), y, y_idx.int(), slot.int(), 27)


def _segment_setup(n: int, c: int, k: int, equal: bool = True) -> Callable:
    """x (n, c) and the lengths of k segments: equal (PointCNN++'s benchmark: K segments,
    the batch size, of N / K rows), or cut at random."""
    def setup(rng: np.random.Generator) -> list[np.ndarray]:
        cuts = (np.arange(1, k) * (n // k) if equal
                else np.sort(rng.integers(0, n + 1, k - 1)))
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


MVMR_PEERS = (Peer("Triton", _call(_mvmr_triton),
                   "sparse_matrix_vector_multiplication_reduction"),   # PT and FSG kernels
              Peer("TIG flat", _mvmr_tig("flat"), "_tig_"),
              Peer("TIG auto", _mvmr_tig("auto"), "_tig_"))
VVOR_PEERS = (Peer("Triton", _call(_vvor_triton), "sparse_vector_vector_outer_product_reduction"),
              Peer("TIG", _vvor_tig, "_tig_"))


def _segment_peers(op: str) -> tuple[Peer, ...]:
    return (Peer("Triton", _call(_segment_triton(op)), "large_segment_reduce_kernel"),)


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
              _mvmr_torch, 0.199, 1.31, MVMR_PEERS, _mvmr_index),
        Bench("MVMR K=27, T=25k, C=M=128", _mvmr_setup(27, 25000, 128, 128), _mvmr_ours,
              _mvmr_torch, 0.123, None, MVMR_PEERS, _mvmr_index),
        Bench("MVMR K=27, T=500k, C=M=32", _mvmr_setup(27, 500000, 32, 32), _mvmr_ours,
              _mvmr_torch, 0.373, None, MVMR_PEERS, _mvmr_index),
        Bench("VVOR (weight grad) K=27, T=6.5k, C=M=256", _vvor_setup(27, 6500, 256, 256),
              _vvor_ours, _vvor_torch, None, None, VVOR_PEERS, _vvor_index),
        Bench("VVOR (weight grad) K=27, T=25k, C=M=128", _vvor_setup(27, 25000, 128, 128),
              _vvor_ours, _vvor_torch, None, None, VVOR_PEERS, _vvor_index),
        Bench("VVOR (weight grad) K=27, T=500k, C=M=32", _vvor_setup(27, 500000, 32, 32),
              _vvor_ours, _vvor_torch, None, None, VVOR_PEERS, _vvor_index),
        Bench("segment sum N=1M, C=32, K=16", _segment_setup(1 << 20, 32, 16),
              _segment_ours("sum"), _segment_torch("sum"), 0.336, 1.59,
              _segment_peers("sum")),
        Bench("segment max N=1M, C=32, K=16", _segment_setup(1 << 20, 32, 16),
              _segment_ours("max"), _segment_torch("max"), 0.327, 5.35,
              _segment_peers("max")),
        Bench("segment sum N=1M, C=256, K=32", _segment_setup(1 << 20, 256, 32),
              _segment_ours("sum"), _segment_torch("sum"), 0.569, None,
              _segment_peers("sum")),
        Bench("segment max N=1M, C=256, K=32", _segment_setup(1 << 20, 256, 32),
              _segment_ours("max"), _segment_torch("max"), 0.551, None,
              _segment_peers("max")),
        Bench("segment sum N=1M, C=32, 64k random segments", _segment_setup(1 << 20, 32, 1 << 16,
              equal=False), _segment_ours("sum"), _segment_torch("sum"), None, None,
              _segment_peers("sum")),
        Bench("indexed distance, 16.8M pairs", _indexed_setup(1 << 24, 1 << 20), _indexed_ours,
              _indexed_torch, 0.387, 1.11),
        Bench("pairwise distance, 4096 x 4096 points",
              lambda r: [_normal(r, 4096, 3), _normal(r, 4096, 3)],
              distances.pairwise_distance, lambda p, q: __import__("torch").cdist(p, q)),
    ]


def _relative_error(got: np.ndarray, want: np.ndarray) -> float:
    """Max error relative to the largest finite magnitude; infinities and NaNs must match."""
    got = got.reshape(want.shape)
    finite = np.isfinite(want)
    if not np.array_equal(got[~finite], want[~finite]):
        raise AssertionError("infinities/NaNs differ from PyTorch's")
    return float(np.abs(got - want)[finite].max(initial=0.0)
                 / max(np.abs(want[finite]).max(initial=0.0), 1e-30))


def run(bench: Bench, copy_gbs: float, triton_ready: bool, variants: tuple[str, ...] = (),
        peers: str = "") -> str:
    import torch

    rng = np.random.default_rng(0)
    operands = bench.setup(rng)
    result, prepared, index = prepared_launches(bench, operands)
    others = {}                     # label: (result, launches) of each variant
    for variant in variants:
        label, assignments = variant.split(":", 1)
        label, _, scope = label.partition("@")
        if scope.lower() not in bench.name.lower():
            continue
        with settings(assignments):
            others[label] = prepared_launches(bench, operands)[:2]
    ours_ms = kernel_ms(lambda: [launch.enqueue() for launch in prepared])
    index_ms = kernel_ms(lambda: [launch.enqueue() for launch in index]) if index else None
    tensors = [torch.from_numpy(o.astype(np.int64) if o.dtype == np.int32 else o).cuda()
               for o in operands]
    torch_ms = time_gpu(lambda: bench.torch(*tensors))
    want = bench.torch(*[t.double() if t.is_floating_point() else t
                         for t in tensors]).cpu().numpy()
    err = _relative_error(np.array(result.astype(mx.float32)), want)
    ideal = sum(o.nbytes for o in operands) + want.size * result.dtype.size
    gbs = ideal / (ours_ms * 1e-3) / 1e9
    line = (f"{bench.name:44s} ours {ours_ms:8.3f} ms ({len(prepared)} launch"
            f"{'es' if len(prepared) != 1 else ''}) | PyTorch {torch_ms:8.3f} ms | "
            f"{torch_ms / ours_ms:5.2f}x | {gbs:7.1f} GB/s = {100 * gbs / copy_gbs:5.1f}% of copy"
            f" | max rel err {err:.1e}")
    if index_ms is not None:
        line += (f"\n{'':44s} + its runs (slot_runs: per triplet list, reused like TIG's index)"
                 f" {index_ms:8.3f} ms")
    for label, (other, launches) in others.items():
        other_ms = kernel_ms(lambda launches=launches: [launch.enqueue() for launch in launches])
        other_err = _relative_error(np.array(other.astype(mx.float32)), want)
        line += (f"\n{'':44s} {label[:40]:40s} {other_ms:8.3f} ms | ours / it "
                 f"{ours_ms / other_ms:5.2f}x | its max rel err {other_err:.1e}")
    if bench.peers and triton_ready:
        peer_ms = {}
        wanted = [label.strip() for label in peers.split(",") if label.strip()]
        for peer in [p for p in bench.peers if not wanted or p.label in wanted]:
            call = peer.make(*tensors)
            peer_err = _relative_error(call().float().cpu().numpy(), want)
            peer_ms[peer.label] = kernel_ms(call, peer.kernel)
            line += (f"\n{'':44s} {peer.label + ' (same process)':24s} "
                     f"{peer_ms[peer.label]:8.3f} ms | ours / it "
                     f"{ours_ms / peer_ms[peer.label]:5.2f}x | its max rel err {peer_err:.1e}")
        if peer_ms:
            fastest = min(peer_ms, key=peer_ms.get)
            line += (f"\n{'':44s} ours / fastest pointelligence engine ({fastest}) "
                     f"{ours_ms / peer_ms[fastest]:5.2f}x")
    elif bench.triton_ms is not None:
        quoted = f", PyTorch quoted {bench.torch_quoted_ms} ms" if bench.torch_quoted_ms else ""
        line += f"\n{'':44s} Triton (issue 13, H100): {bench.triton_ms} ms{quoted}"
    return line


def _load_triton(directory: str) -> bool:
    """Put pointelligence's `sparse_engines` on the path; False (with a note) if it fails."""
    if not directory:
        return False
    sys.path.insert(0, directory)
    try:
        import sparse_engines.large_segment_reduce_triton  # noqa: F401
        import sparse_engines.mvmr_triton  # noqa: F401
        import sparse_engines.tig  # noqa: F401
        import sparse_engines.vvor_triton  # noqa: F401
    except Exception as error:  # noqa: BLE001 - run without the Triton column
        print(f"pointelligence's sparse_engines did not load from {directory}: {error}")
        return False
    return True


def _peer_precision() -> str:
    """What pointelligence's tl.dot engines do with float32 operands here: its setting resolves
    to "ieee" (exact float products, CUDA cores) unless PyTorch's TF32 switch is on, when it is
    "tf32" (one TF32 tensor-core product, about 1e-3 relative error)."""
    import torch
    from sparse_engines._dispatch_override import resolve_input_precision

    return (f"pointelligence's float32 tl.dot input precision: "
            f"{resolve_input_precision(torch.float32)} (torch.backends.cuda.matmul.allow_tf32 ="
            f" {torch.backends.cuda.matmul.allow_tf32}); its errors are printed per engine")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="", help="comma-separated parts of benchmark names")
    parser.add_argument("--pointelligence", default="",
                        help="a checkout of ant-research/pointelligence: time its Triton kernels")
    parser.add_argument("--exact-products", action="store_true",
                        help="simdgroup_matrix products on CUDA-core FMAs, not tensor cores")
    parser.add_argument("--variant", action="append", default=[],
                        help="LABEL[@NAME PART]:MODULE.NAME=VALUE;...: time ours again with "
                             "these set (only in the benchmarks whose names contain NAME PART)")
    parser.add_argument("--peers", default="",
                        help="comma-separated labels of pointelligence's engines to run "
                             "(default: all)")
    opts = parser.parse_args()
    if not metalsim.cuda.gpu_available():
        print("bench_gpu.py needs CuPy and an NVIDIA GPU")
        return 1
    triton_ready = _load_triton(opts.pointelligence)
    copy_ms, copy_gbs = copy_bandwidth()
    products = ("CUDA-core FMAs" if opts.exact_products
                else "tensor cores, float as 3xTF32")
    print(f"GPU: {metalsim.cuda.gpu_name()}; medians of {REPS} after {WARMUP} warm-up runs; "
          f"ours and pointelligence's: kernel time (profiler), PyTorch: CUDA events; "
          f"our simdgroup_matrix products on {products}")
    if triton_ready:
        print(_peer_precision())
    print(f"{'device copy, 1 GiB float32 (CuPy)':44s} {copy_ms:8.3f} ms | {copy_gbs:7.1f} GB/s "
          f"(bytes read + written): the 100% of the 'of copy' column")
    wanted = [part.strip().lower() for part in opts.only.split(",") if part.strip()]
    for bench in benches():
        if wanted and not any(part in bench.name.lower() for part in wanted):
            continue
        try:
            with metalsim.cuda.exact_matrix_products(opts.exact_products):
                print(run(bench, copy_gbs, triton_ready, tuple(opts.variant), opts.peers),
                      flush=True)
        except Exception as error:  # noqa: BLE001 - report and go on to the next benchmark
            print(f"{bench.name:44s} FAILED: {type(error).__name__}: {str(error)[:600]}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
