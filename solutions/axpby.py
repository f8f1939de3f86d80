"""Real kernel of notebook 01: `z = alpha * x + beta * y` with broadcasting.

The MLX extension docs' example operation, written with `mx.fast.metal_kernel`:

- **Contiguous path** (x and y have the output's shape): each thread handles 4 consecutive
  elements with one 4-wide load of `x`, one of `y` and one 4-wide store; the last thread
  handles the 1-3 elements of the tail one by one. Vectors go through `packed_vec<T, 4>`
  (see `solutions/vector_loads.py`), so views that start at any element (`x[1:]`) are fine.
  An operand of the output's shape that is not row-contiguous (a transpose) is copied by MLX
  first (`ensure_row_contiguous=True`).
- **General path** (the shapes differ, so an operand is broadcast): the inputs are passed as
  broadcast views, with stride 0 along the broadcast axes and their own strides elsewhere
  (transposes included), and `ensure_row_contiguous=False`, so nothing is copied;
  `elem_to_loc` turns a thread's position into each input's memory offset once, and the thread
  then walks 4 elements along the last axis by that axis' stride.

Both read every input element once (a broadcast element once per output that uses it) and
write every output element once: the simulator's traffic equals its ideal.

`axpby` is differentiable in `x` and `y` (an `mx.custom_function`): `dx = alpha * cot` and
`dy = beta * cot`, each summed over the axes along which its operand was broadcast. The sums
are MLX ops (`mx.sum`, before the scaling, so the kernel touches the smaller arrays); the
scaling is a kernel that writes both gradients in one launch, reading the cotangent once when
neither operand was broadcast.

The kernels are built through `mx.fast.metal_kernel` at call time, so the same code runs on a
Mac's GPU and, under `metalsim.patch()`, in the simulator.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import mlx.core as mx

from solutions.vector_loads import LOAD4_HEADER

THREADS = 256      # threads per threadgroup
WIDTH = 4          # elements per thread

CONTIGUOUS_SOURCE = """
    uint n = x_shape[0];
    uint i = thread_position_in_grid.x * 4;
    T a = static_cast<T>(alpha);
    T b = static_cast<T>(beta);
    if (i + 4 <= n) {
        store4(out + i, a * load4(x + i) + b * load4(y + i));
    } else {
        // The tail: fewer than 4 elements are left.
        for (; i < n; ++i) {
            out[i] = a * x[i] + b * y[i];
        }
    }
"""

GENERAL_SOURCE = """
    // x and y are views broadcast to the output's shape (at least 2-D): a stride of 0
    // repeats an element. The grid is (columns / 4, rows, everything before them).
    uint3 pos = thread_position_in_grid;
    int ndim = x_ndim;
    uint cols = x_shape[ndim - 1];
    uint col = pos.x * 4;
    int64_t xi = elem_to_loc<int64_t>(uint3(col, pos.y, pos.z), x_shape, x_strides, ndim);
    int64_t yi = elem_to_loc<int64_t>(uint3(col, pos.y, pos.z), y_shape, y_strides, ndim);
    int64_t xs = x_strides[ndim - 1];
    int64_t ys = y_strides[ndim - 1];
    size_t o = (size_t(pos.z) * x_shape[ndim - 2] + pos.y) * cols + col;
    T a = static_cast<T>(alpha);
    T b = static_cast<T>(beta);
    for (uint k = 0; k < 4 && col + k < cols; ++k) {
        out[o + k] = a * x[xi + k * xs] + b * y[yi + k * ys];
    }
"""

BACKWARD_SOURCE = """
    // gx = alpha * cx and gy = beta * cy, 4 elements of each per thread. With SAME, cx and
    // cy are one array (the cotangent, as no operand was broadcast): it is read once.
    uint i = thread_position_in_grid.x * 4;
    uint nx = cx_shape[0];
    uint ny = cy_shape[0];
    T a = static_cast<T>(alpha);
    T b = static_cast<T>(beta);
    if (SAME) {
        if (i + 4 <= nx) {
            vec<T, 4> c = load4(cx + i);
            store4(gx + i, a * c);
            store4(gy + i, b * c);
        } else {
            for (; i < nx; ++i) {
                T c = cx[i];
                gx[i] = a * c;
                gy[i] = b * c;
            }
        }
    } else {
        if (i + 4 <= nx) {
            store4(gx + i, a * load4(cx + i));
        } else {
            for (uint k = i; k < nx; ++k) {
                gx[k] = a * cx[k];
            }
        }
        if (i + 4 <= ny) {
            store4(gy + i, b * load4(cy + i));
        } else {
            for (uint k = i; k < ny; ++k) {
                gy[k] = b * cy[k];
            }
        }
    }
"""


@functools.cache
def _kernels(factory: Callable) -> tuple:
    """The forward kernels and the backward one, built once per kernel factory (MLX's, or
    metalsim's under a patch)."""
    contiguous = factory(name="axpby_contiguous", input_names=["x", "y", "alpha", "beta"],
                         output_names=["out"], source=CONTIGUOUS_SOURCE,
                         header=LOAD4_HEADER)
    general = factory(name="axpby_general", input_names=["x", "y", "alpha", "beta"],
                      output_names=["out"], source=GENERAL_SOURCE,
                      ensure_row_contiguous=False)
    backward = factory(name="axpby_backward", input_names=["cx", "cy", "alpha", "beta"],
                       output_names=["gx", "gy"], source=BACKWARD_SOURCE,
                       header=LOAD4_HEADER)
    return contiguous, general, backward


def launch(x: mx.array, y: mx.array, alpha: float, beta: float,
           factory: Callable | None = None) -> tuple[Callable, dict]:
    """The kernel (built by `factory`, MLX's by default) and the arguments of its call; its
    output is the result flattened (contiguous path) or made at least 2-D (general path)."""
    dtype = mx.result_type(x, y)
    if not mx.issubdtype(dtype, mx.floating):
        raise TypeError(f"axpby needs floating-point inputs, got {dtype}")
    shape = mx.broadcast_shapes(x.shape, y.shape)
    x, y = x.astype(dtype), y.astype(dtype)
    scalars = [mx.array(alpha, mx.float32), mx.array(beta, mx.float32)]
    contiguous, general, _ = _kernels(factory or mx.fast.metal_kernel)
    common = {"output_dtypes": [dtype], "template": [("T", dtype)],
              "threadgroup": (THREADS, 1, 1)}
    if x.shape == y.shape:
        n = x.size
        args = {"inputs": [x.reshape(-1), y.reshape(-1), *scalars], "output_shapes": [(n,)],
                "grid": (max(1, -(-n // WIDTH)), 1, 1), **common}
        return contiguous, args
    full = (1, 1, *shape)[-max(2, len(shape)):]   # at least 2-D, so the grid has rows
    grid = (-(-full[-1] // WIDTH), full[-2], math.prod(full[:-2]))
    args = {"inputs": [mx.broadcast_to(x, full), mx.broadcast_to(y, full), *scalars],
            "output_shapes": [full], "grid": grid,
            **common, "threadgroup": general_threadgroup(grid)}
    return general, args


def general_threadgroup(grid: tuple[int, int, int]) -> tuple[int, int, int]:
    """`THREADS` threads over the columns first, then over rows. A threadgroup only one row
    tall would be clamped to the row's few threads (10 for 37 columns), and its SIMD-groups
    would run with most lanes empty; several rows per threadgroup fill them."""
    columns = min(grid[0], THREADS)
    return (columns, max(1, min(grid[1], THREADS // columns)), 1)


def _unbroadcast(g: mx.array, shape: tuple[int, ...]) -> mx.array:
    """`g` summed over the axes along which an operand of `shape` was broadcast to `g.shape`."""
    lead = g.ndim - len(shape)
    axes = [*range(lead),
            *(lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1)]
    return mx.sum(g, axis=axes, keepdims=True).reshape(shape) if axes else g


def backward_launch(x: mx.array, y: mx.array, cotangent: mx.array, alpha: float, beta: float,
                    factory: Callable | None = None) -> tuple[Callable, dict]:
    """The backward kernel and the arguments of its call: its outputs are `alpha * cx` and
    `beta * cy` flattened, where `cx`, `cy` are the cotangent summed to `x`'s and `y`'s shapes
    (by MLX)."""
    cx = _unbroadcast(cotangent, x.shape).reshape(-1)
    cy = _unbroadcast(cotangent, y.shape).reshape(-1)
    n = max(cx.size, cy.size)
    dtype = cotangent.dtype
    args = {"inputs": [cx, cy, mx.array(alpha, mx.float32), mx.array(beta, mx.float32)],
            "output_shapes": [cx.shape, cy.shape], "output_dtypes": [dtype, dtype],
            "template": [("T", dtype), ("SAME", x.shape == y.shape)],
            "grid": (max(1, -(-n // WIDTH)), 1, 1), "threadgroup": (THREADS, 1, 1)}
    return _kernels(factory or mx.fast.metal_kernel)[2], args


def axpby(x: mx.array, y: mx.array, alpha: float, beta: float) -> mx.array:
    """`alpha * x + beta * y`, broadcasting `x` and `y` like MLX does; differentiable in `x`
    and `y` (not in `alpha` and `beta`, which are constants)."""

    @mx.custom_function
    def op(x: mx.array, y: mx.array) -> mx.array:
        kernel, args = launch(x, y, alpha, beta)
        return kernel(**args)[0].reshape(mx.broadcast_shapes(x.shape, y.shape))

    @op.vjp
    def op_vjp(primals: tuple[mx.array, mx.array], cotangent: mx.array,
               output: mx.array) -> tuple[mx.array, mx.array]:
        x, y = primals
        kernel, args = backward_launch(x, y, cotangent, alpha, beta)
        gx, gy = kernel(**args)
        return gx.reshape(x.shape).astype(x.dtype), gy.reshape(y.shape).astype(y.dtype)

    return op(x, y)


def simulate(x: mx.array, y: mx.array, alpha: float, beta: float):
    """The same launch in the simulator: a `metalsim.Run` with outputs and traffic report."""
    import metalsim

    kernel, args = launch(x, y, alpha, beta, metalsim.metal_kernel)
    return metalsim.simulate(kernel, **args)
