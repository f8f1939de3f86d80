"""Real kernel of notebook 02: tiled 1D convolution with the halo in threadgroup memory.

`conv1d(x, w, padding)` convolves every row of `x` (shape `(L,)` or `(B, L)`) with the filter
`w` (shape `(K,)`), exactly as `mx.conv1d` does for one input and one output channel:
`out[b, o] = sum_j xpad[b, o + j] * w[j]`, where `xpad` is `x` with `padding` zeros on both
sides (cross-correlation, as in ML frameworks).

Each threadgroup of 256 threads computes a tile of 1024 outputs of one row:

1. its threads copy the tile's input window, 1024 + K - 1 elements (the tile plus a *halo* of
   K - 1 elements shared with the next tile), into threadgroup memory, writing zeros where the
   window lies in the padding, and copy the K weights next to it;
2. after one barrier every thread computes 4 outputs from threadgroup memory. Thread `t`
   computes outputs `t, t + 256, t + 512, t + 768` of the tile, so that at every step
   consecutive threads read consecutive words of threadgroup memory and write consecutive
   outputs.

Device traffic: every output is written once; every input element is read once, plus the
K - 1 halo elements per tile; the weights are read once per tile. For a 1M-element row and
K = 31 that is 1.03x the ideal of reading each input once. `K` and `padding` are template
parameters, so the Metal compiler unrolls the inner loop.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import mlx.core as mx

THREADS = 256
PER_THREAD = 4
TILE = THREADS * PER_THREAD   # outputs per threadgroup
MAX_K = 2048                  # window and weights stay within 32 KiB of threadgroup memory

SOURCE = """
    threadgroup float window[TILE + K - 1];
    threadgroup float weights[K];
    uint t = thread_position_in_threadgroup.x;
    uint row = threadgroup_position_in_grid.y;
    int length = x_shape[x_ndim - 1];
    int out_length = length + 2 * PAD - K + 1;
    int tile_start = int(threadgroup_position_in_grid.x) * TILE;
    size_t row_start = size_t(row) * length;

    // The window of this tile, starting PAD elements before its first output; zeros in the
    // padding and past the end.
    for (uint e = t; e < TILE + K - 1; e += THREADS) {
        int src = tile_start - PAD + int(e);
        window[e] = src >= 0 && src < length ? float(x[row_start + src]) : 0.0f;
    }
    for (uint j = t; j < K; j += THREADS) {
        weights[j] = float(w[j]);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    for (uint r = 0; r < PER_THREAD; ++r) {
        uint local = t + r * THREADS;
        int o = tile_start + int(local);
        if (o < out_length) {
            float acc = 0.0f;
            for (int j = 0; j < K; ++j) {
                acc += window[local + j] * weights[j];
            }
            out[size_t(row) * out_length + o] = static_cast<T>(acc);
        }
    }
"""

HEADER = f"""
constant uint THREADS = {THREADS};
constant uint PER_THREAD = {PER_THREAD};
constant uint TILE = {TILE};
"""


@functools.cache
def _kernel(factory: Callable):
    """The kernel, built once per kernel factory (MLX's, or metalsim's under a patch)."""
    return factory(name="conv1d_tiled", input_names=["x", "w"], output_names=["out"],
                   source=SOURCE, header=HEADER)


def launch(x: mx.array, w: mx.array, padding: int = 0,
           factory: Callable | None = None) -> tuple[Callable, dict]:
    """The kernel (built by `factory`, MLX's by default) and the arguments of its call."""
    if x.ndim not in (1, 2) or w.ndim != 1:
        raise ValueError(f"conv1d takes x of shape (L,) or (B, L) and w of shape (K,); "
                         f"got {x.shape} and {w.shape}")
    k, length = w.shape[0], x.shape[-1]
    if not 1 <= k <= MAX_K:
        raise ValueError(f"conv1d supports filters of 1 to {MAX_K} taps, got {k}")
    out_length = length + 2 * padding - k + 1
    if padding < 0 or out_length < 1:
        raise ValueError(f"no output: length {length}, filter {k}, padding {padding}")
    dtype = mx.result_type(x, w)
    rows = x.shape[0] if x.ndim == 2 else 1
    tiles = -(-out_length // TILE)
    args = {"inputs": [x.astype(dtype), w.astype(dtype)],
            "output_shapes": [(*x.shape[:-1], out_length)], "output_dtypes": [dtype],
            "template": [("T", dtype), ("K", k), ("PAD", padding)],
            "grid": (tiles * THREADS, rows, 1), "threadgroup": (THREADS, 1, 1)}
    return _kernel(factory or mx.fast.metal_kernel), args


def conv1d(x: mx.array, w: mx.array, padding: int = 0) -> mx.array:
    """Each row of `x` cross-correlated with `w`, zero-padded by `padding` on both sides; equal
    to `mx.conv1d(x[..., None], w[None, :, None], padding=padding)[..., 0]` for a batch."""
    kernel, args = launch(x, w, padding)
    return kernel(**args)[0]


def simulate(x: mx.array, w: mx.array, padding: int = 0):
    """The same launch in the simulator: a `metalsim.Run` with outputs and traffic report."""
    import metalsim

    kernel, args = launch(x, w, padding, metalsim.metal_kernel)
    return metalsim.simulate(kernel, **args)
