"""Real kernel of notebook 03: sum and max over the last axis, one threadgroup per row.

For an array of shape `(..., cols)`, the threadgroup of row `r`:

1. walks the row with a stride of 4 * (threads per threadgroup): each thread reads 4
   consecutive elements at a time with one 4-wide load (`solutions/vector_loads.py`), so
   consecutive threads read consecutive memory, and accumulates in a float register;
   the 0-3 elements of the row's tail are read one by one;
2. `simd_sum` / `simd_max` combine the 32 lanes of every SIMD-group;
3. lane 0 of every SIMD-group leaves its partial result in threadgroup memory; after one
   barrier the first SIMD-group combines those and lane 0 writes the row's result.

Every input element is read once and every output written once, so the traffic equals the
ideal. Sums accumulate in float32 whatever the input type. `row_max` ignores NaNs (as
`simd_max` and `metal::max` do), where `mx.max` would return NaN.

Both are differentiable (`mx.custom_function`s) through one backward kernel on the same grid:
`row_sum`'s gradient is the row's cotangent broadcast along the row; `row_max`'s splits it
evenly among the elements equal to the row's max, as MLX's own VJP of `mx.max` does (ties of
`k` elements get `cot / k` each). The max's backward counts the ties in a first pass over the
row (`simd_sum` and threadgroup memory, as above) and writes in a second, so it reads `x`
twice; the sum's writes only. Lane 0 of each SIMD-group reads the row's cotangent and max
and `simd_broadcast` hands them to the other lanes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import mlx.core as mx

from solutions.vector_loads import LOAD4_HEADER

MAX_THREADS = 1024
SIMD_WIDTH = 32

HEADER = LOAD4_HEADER + """
template <bool IS_MAX>
inline float combine(float a, float b) {
    return IS_MAX ? max(a, b) : a + b;
}

template <bool IS_MAX>
inline float simd_combine(float v) {
    return IS_MAX ? simd_max(v) : simd_sum(v);
}
"""

BACKWARD_HEADER = LOAD4_HEADER + """
inline float ties4(float4 v, float m) {
    return float(v.x == m) + float(v.y == m) + float(v.z == m) + float(v.w == m);
}

inline float4 share4(float4 v, float m, float g) {
    return float4(v.x == m ? g : 0.0f, v.y == m ? g : 0.0f, v.z == m ? g : 0.0f,
                  v.w == m ? g : 0.0f);
}
"""

SOURCE = """
    threadgroup float partial[32];
    uint t = thread_position_in_threadgroup.x;
    uint threads = threads_per_threadgroup.x;
    uint lane = thread_index_in_simdgroup;
    uint sg = simdgroup_index_in_threadgroup;
    uint cols = x_shape[x_ndim - 1];
    size_t row_start = size_t(threadgroup_position_in_grid.y) * cols;
    float identity = IS_MAX ? -INFINITY : 0.0f;

    // 1. Each thread accumulates 4 elements per step; the last step may leave a tail.
    float acc = identity;
    uint vectors = cols / 4;
    for (uint v = t; v < vectors; v += threads) {
        vec<T, 4> xs = load4(x + row_start + 4 * v);
        acc = combine<IS_MAX>(acc, combine<IS_MAX>(combine<IS_MAX>(float(xs.x), float(xs.y)),
                                                   combine<IS_MAX>(float(xs.z), float(xs.w))));
    }
    for (uint c = vectors * 4 + t; c < cols; c += threads) {
        acc = combine<IS_MAX>(acc, float(x[row_start + c]));
    }

    // 2. Combine the SIMD-group in registers.
    acc = simd_combine<IS_MAX>(acc);

    // 3. One partial per SIMD-group through threadgroup memory, combined by SIMD-group 0.
    if (lane == 0) {
        partial[sg] = acc;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (sg == 0) {
        uint groups = (threads + 31) / 32;
        acc = simd_combine<IS_MAX>(lane < groups ? partial[lane] : identity);
        if (lane == 0) {
            out[threadgroup_position_in_grid.y] = static_cast<T>(acc);
        }
    }
"""


BACKWARD_SOURCE = """
    threadgroup float partial[32];
    uint t = thread_position_in_threadgroup.x;
    uint threads = threads_per_threadgroup.x;
    uint lane = thread_index_in_simdgroup;
    uint sg = simdgroup_index_in_threadgroup;
    uint row = threadgroup_position_in_grid.y;
    uint cols = x_shape[x_ndim - 1];
    size_t row_start = size_t(row) * cols;
    uint vectors = cols / 4;

    // The row's cotangent (and max), read by one lane per SIMD-group.
    float g = 0.0f;
    float m = 0.0f;
    if (lane == 0) {
        g = float(cot[row]);
        m = IS_MAX ? float(y[row]) : 0.0f;
    }
    g = simd_broadcast(g, 0);
    m = simd_broadcast(m, 0);

    if (IS_MAX) {
        // 1. Count the elements equal to the max: they share its cotangent evenly.
        float ties = 0.0f;
        for (uint v = t; v < vectors; v += threads) {
            ties += ties4(float4(load4(x + row_start + 4 * v)), m);
        }
        for (uint c = vectors * 4 + t; c < cols; c += threads) {
            ties += float(float(x[row_start + c]) == m);
        }
        ties = simd_sum(ties);
        if (lane == 0) {
            partial[sg] = ties;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        // Every SIMD-group adds the partial counts itself: no second barrier.
        uint groups = (threads + 31) / 32;
        g /= simd_sum(lane < groups ? partial[lane] : 0.0f);
    }

    // 2. Write the gradient, 4 elements at a time and the tail one by one.
    for (uint v = t; v < vectors; v += threads) {
        size_t i = row_start + 4 * v;
        float4 d = IS_MAX ? share4(float4(load4(x + i)), m, g) : float4(g);
        store4(dx + i, vec<T, 4>(d));
    }
    for (uint c = vectors * 4 + t; c < cols; c += threads) {
        size_t i = row_start + c;
        dx[i] = static_cast<T>(!IS_MAX || float(x[i]) == m ? g : 0.0f);
    }
"""


@functools.cache
def _kernels(factory: Callable) -> tuple[Callable, Callable]:
    """The forward and backward kernels, built once per kernel factory (MLX's, or metalsim's
    under a patch)."""
    forward = factory(name="row_reduce", input_names=["x"], output_names=["out"],
                      source=SOURCE, header=HEADER)
    backward = factory(name="row_reduce_backward", input_names=["x", "y", "cot"],
                       output_names=["dx"], source=BACKWARD_SOURCE,
                       header=BACKWARD_HEADER)
    return forward, backward


def _threads(cols: int) -> int:
    """Enough threads for one 4-wide load each, in whole SIMD-groups, at most 1024."""
    wanted = -(-cols // 4)
    return max(SIMD_WIDTH, min(MAX_THREADS, -(-wanted // SIMD_WIDTH) * SIMD_WIDTH))


def launch(x: mx.array, op: str = "sum",
           factory: Callable | None = None) -> tuple[Callable, dict]:
    """The kernel (built by `factory`, MLX's by default) and the arguments of its call; its
    output has one element per row of `x` flattened to 2-D."""
    if op not in ("sum", "max"):
        raise ValueError(f"op must be 'sum' or 'max', got {op!r}")
    if x.ndim < 1 or x.shape[-1] == 0:
        raise ValueError(f"row reductions need a non-empty last axis, got shape {x.shape}")
    if not mx.issubdtype(x.dtype, mx.floating):
        raise TypeError(f"row reductions take floating-point arrays, got {x.dtype}")
    cols = x.shape[-1]
    rows = x.size // cols
    threads = _threads(cols)
    args = {"inputs": [x.reshape(rows, cols)], "output_shapes": [(rows,)],
            "output_dtypes": [x.dtype],
            "template": [("T", x.dtype), ("IS_MAX", op == "max")],
            "grid": (threads, rows, 1), "threadgroup": (threads, 1, 1)}
    return _kernels(factory or mx.fast.metal_kernel)[0], args


def backward_launch(x: mx.array, y: mx.array, cotangent: mx.array, op: str = "sum",
                    factory: Callable | None = None) -> tuple[Callable, dict]:
    """The backward kernel and the arguments of its call, for the forward's `x` and result
    `y`; its output is the gradient of `x` flattened to 2-D."""
    cols = x.shape[-1]
    rows = x.size // cols
    threads = _threads(cols)
    args = {"inputs": [x.reshape(rows, cols), y.reshape(rows), cotangent.reshape(rows)],
            "output_shapes": [(rows, cols)], "output_dtypes": [x.dtype],
            "template": [("T", x.dtype), ("IS_MAX", op == "max")],
            "grid": (threads, rows, 1), "threadgroup": (threads, 1, 1)}
    return _kernels(factory or mx.fast.metal_kernel)[1], args


@functools.cache
def _reduce(op: str) -> Callable:
    """The reduction `op` as an MLX function with its kernel VJP."""

    @mx.custom_function
    def reduce(x: mx.array) -> mx.array:
        kernel, args = launch(x, op)
        return kernel(**args)[0].reshape(x.shape[:-1])

    @reduce.vjp
    def reduce_vjp(x: mx.array, cotangent: mx.array, y: mx.array) -> mx.array:
        kernel, args = backward_launch(x, y, cotangent, op)
        return kernel(**args)[0].reshape(x.shape)

    return reduce


def row_sum(x: mx.array) -> mx.array:
    """`mx.sum(x, axis=-1)` for floating-point `x`; differentiable."""
    return _reduce("sum")(x)


def row_max(x: mx.array) -> mx.array:
    """`mx.max(x, axis=-1)` for floating-point `x` without NaNs; differentiable, with the
    gradient split evenly among tied maxima as in MLX."""
    return _reduce("max")(x)


def simulate(x: mx.array, op: str = "sum"):
    """The same launch in the simulator: a `metalsim.Run` with outputs and traffic report."""
    import metalsim

    kernel, args = launch(x, op, metalsim.metal_kernel)
    return metalsim.simulate(kernel, **args)
