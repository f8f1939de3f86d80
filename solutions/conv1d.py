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

`conv1d` is differentiable in `x` and `w` (an `mx.custom_function`) with kernels both ways:

- `dx[i] = sum_j cot[i + P - j] * w[j]` is a cross-correlation of the cotangent with the
  flipped filter, padded by `K - 1 - P`: the forward kernel itself (when `P > K - 1` that
  padding would be negative, and the cotangent is cropped by MLX instead);
- `dw[j] = sum_o cot[o] * xpad[o + j]` is a reduction over all positions: a second kernel
  stages the same input window and the tile's cotangent in threadgroup memory, each
  SIMD-group takes every 8th tap, its lanes split the tile's outputs and `simd_sum` adds
  them. It writes one partial `dw` per tile, which MLX sums (`mx.sum` over
  `ceil(out_length / 1024)` rows per input row: small next to the kernel's work).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import mlx.core as mx

THREADS = 256
PER_THREAD = 4
TILE = THREADS * PER_THREAD   # outputs per threadgroup
MAX_K = 2048                  # window and weights stay within 32 KiB of threadgroup memory

# The tile's input window, shared by the forward and the weight-gradient kernels.
WINDOW = """
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
"""

SOURCE = """
    threadgroup float window[TILE + K - 1];
    threadgroup float weights[K];
""" + WINDOW + """
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

WEIGHT_GRAD_SOURCE = """
    threadgroup float window[TILE + K - 1];
    threadgroup float grads[TILE];
""" + WINDOW + """
    // The tile's cotangent, zeros past the end of the output.
    for (uint e = t; e < TILE; e += THREADS) {
        int o = tile_start + int(e);
        grads[e] = o < out_length ? float(cot[size_t(row) * out_length + o]) : 0.0f;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    // SIMD-group `sg` computes taps sg, sg + 8, ...; lane `lane` the outputs lane, lane + 32,
    // ..., so that consecutive lanes read consecutive words of threadgroup memory.
    uint lane = thread_index_in_simdgroup;
    uint sg = simdgroup_index_in_threadgroup;
    size_t part = size_t(row) * ((out_length + TILE - 1) / TILE) + threadgroup_position_in_grid.x;
    for (uint j = sg; j < K; j += THREADS / 32) {
        float acc = 0.0f;
        for (uint o = lane; o < TILE; o += 32) {
            acc += grads[o] * window[o + j];
        }
        acc = simd_sum(acc);
        if (lane == 0) {
            partials[part * K + j] = acc;
        }
    }
"""

HEADER = f"""
constant uint THREADS = {THREADS};
constant uint PER_THREAD = {PER_THREAD};
constant uint TILE = {TILE};
"""


@functools.cache
def _kernels(factory: Callable) -> tuple[Callable, Callable]:
    """The forward and weight-gradient kernels, built once per kernel factory (MLX's, or
    metalsim's under a patch)."""
    forward = factory(name="conv1d_tiled", input_names=["x", "w"], output_names=["out"],
                      source=SOURCE, header=HEADER)
    weight_grad = factory(name="conv1d_weight_grad", input_names=["x", "cot"],
                          output_names=["partials"], source=WEIGHT_GRAD_SOURCE, header=HEADER)
    return forward, weight_grad


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
    return _kernels(factory or mx.fast.metal_kernel)[0], args


def weight_grad_launch(x: mx.array, cotangent: mx.array, k: int, padding: int = 0,
                       factory: Callable | None = None) -> tuple[Callable, dict]:
    """The weight-gradient kernel and the arguments of its call, for the forward's `x`; its
    float32 output holds one partial `dw` per tile, `(rows * tiles, k)`, to be summed."""
    out_length = cotangent.shape[-1]
    rows = x.shape[0] if x.ndim == 2 else 1
    tiles = -(-out_length // TILE)
    args = {"inputs": [x, cotangent], "output_shapes": [(rows * tiles, k)],
            "output_dtypes": [mx.float32], "template": [("K", k), ("PAD", padding)],
            "grid": (tiles * THREADS, rows, 1), "threadgroup": (THREADS, 1, 1)}
    return _kernels(factory or mx.fast.metal_kernel)[1], args


def _correlate(x: mx.array, w: mx.array, padding: int) -> mx.array:
    kernel, args = launch(x, w, padding)
    return kernel(**args)[0]


def conv1d(x: mx.array, w: mx.array, padding: int = 0) -> mx.array:
    """Each row of `x` cross-correlated with `w`, zero-padded by `padding` on both sides; equal
    to `mx.conv1d(x[..., None], w[None, :, None], padding=padding)[..., 0]` for a batch.
    Differentiable in `x` and `w`."""

    @mx.custom_function
    def op(x: mx.array, w: mx.array) -> mx.array:
        return _correlate(x, w, padding)

    @op.vjp
    def op_vjp(primals: tuple[mx.array, mx.array], cotangent: mx.array,
               output: mx.array) -> tuple[mx.array, mx.array]:
        x, w = primals
        k = w.shape[0]
        # dx pads the cotangent by K - 1 - P; a negative padding crops it instead.
        reach = k - 1 - padding
        crop = max(0, -reach)
        grad_x = _correlate(cotangent[..., crop:cotangent.shape[-1] - crop], w[::-1],
                            max(0, reach))
        kernel, args = weight_grad_launch(x, cotangent, k, padding)
        grad_w = mx.sum(kernel(**args)[0], axis=0)
        return grad_x.astype(x.dtype), grad_w.astype(w.dtype)

    return op(x, w)


def simulate(x: mx.array, w: mx.array, padding: int = 0):
    """The same launch in the simulator: a `metalsim.Run` with outputs and traffic report."""
    import metalsim

    kernel, args = launch(x, w, padding, metalsim.metal_kernel)
    return metalsim.simulate(kernel, **args)
