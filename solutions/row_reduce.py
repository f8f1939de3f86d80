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


@functools.cache
def _kernel(factory: Callable):
    """The kernel, built once per kernel factory (MLX's, or metalsim's under a patch)."""
    return factory(name="row_reduce", input_names=["x"], output_names=["out"], source=SOURCE,
                   header=HEADER)


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
    return _kernel(factory or mx.fast.metal_kernel), args


def _reduce(x: mx.array, op: str) -> mx.array:
    kernel, args = launch(x, op)
    return kernel(**args)[0].reshape(x.shape[:-1])


def row_sum(x: mx.array) -> mx.array:
    """`mx.sum(x, axis=-1)` for floating-point `x`."""
    return _reduce(x, "sum")


def row_max(x: mx.array) -> mx.array:
    """`mx.max(x, axis=-1)` for floating-point `x` without NaNs."""
    return _reduce(x, "max")


def simulate(x: mx.array, op: str = "sum"):
    """The same launch in the simulator: a `metalsim.Run` with outputs and traffic report."""
    import metalsim

    kernel, args = launch(x, op, metalsim.metal_kernel)
    return metalsim.simulate(kernel, **args)
