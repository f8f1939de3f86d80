"""MLX's quantized matrix-vector routines (`quantized.h`: `qmv_impl`, `qmv_fast_impl`, and
through them `load_vector`, `qdot`, `qdot_safe`), included from the installed MLX and called
from an `mx.fast.metal_kernel` body with the launch MLX gives its qmv kernels: threadgroups of
2 SIMD-groups, each producing 4 outputs of one row of x (`tid.x`), 8 outputs per threadgroup
(`tid.y`). Operands come from `mx.quantize`; checked against MLX's CPU
`mx.quantized_matmul(x, w, scales, biases, transpose=True)`.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np
from block_case import EPSILON, BlockCase, ceil_div, mlx_kernel

HEADER = "".join(f'#include "mlx/backend/metal/kernels/{h}"\n' for h in (
    "utils.h", "steel/gemm/gemm.h", "quantized_utils.h", "quantized.h"))

SOURCE = """
  if (FAST) {
    qmv_fast_impl<T, GROUP_SIZE, BITS>(w, scales, biases, x, y, in_vec_size, out_vec_size,
                                       threadgroup_position_in_grid,
                                       simdgroup_index_in_threadgroup, thread_index_in_simdgroup);
  } else {
    qmv_impl<T, GROUP_SIZE, BITS>(w, scales, biases, x, y, in_vec_size, out_vec_size,
                                  threadgroup_position_in_grid, simdgroup_index_in_threadgroup,
                                  thread_index_in_simdgroup);
  }
"""


def qmv_case(rows: int, out_features: int, in_features: int, dtype: mx.Dtype, bits: int = 4,
             group_size: int = 64, fast: bool = False) -> BlockCase:
    """y = x @ dequantize(w).T for `rows` vectors x. `fast` (qmv_fast_impl) needs whole
    blocks: in_features a multiple of 512 and out_features of 8, as MLX chooses it."""
    rng = np.random.default_rng(rows * 1000 + out_features + in_features + bits)
    w = mx.array(rng.standard_normal((out_features, in_features)) / 4, dtype=dtype)
    x = mx.array(rng.standard_normal((rows, in_features)), dtype=dtype)
    with mx.stream(mx.cpu):
        wq, scales, biases = mx.quantize(w, group_size=group_size, bits=bits)
    kernel = mlx_kernel("quantized_qmv_blocks",
                        ["w", "scales", "biases", "x", "in_vec_size", "out_vec_size"], ["y"],
                        SOURCE, HEADER)
    kwargs = {"inputs": [wq, scales, biases, x, mx.array(in_features, dtype=mx.int32),
                         mx.array(out_features, dtype=mx.int32)],
              "template": [("T", dtype), ("GROUP_SIZE", group_size), ("BITS", bits),
                           ("FAST", fast)],
              "output_shapes": [(rows, out_features)], "output_dtypes": [dtype],
              "grid": (32 * rows, 2 * ceil_div(out_features, 8), 1),
              "threadgroup": (32, 2, 1)}

    def expected() -> list[mx.array]:
        with mx.stream(mx.cpu):
            return [mx.quantized_matmul(x, wq, scales, biases, transpose=True,
                                        group_size=group_size, bits=bits)]

    # metalsim, as MLX's kernel, dequantizes exactly (scale * q + bias in float) and sums the
    # K products in float (qdot factors the bias out: s * sum(x q) + b * sum(x)): within
    # 2 K eps32 * sum|x| |w| of the exact value, and a half output is rounded once (2 eps16).
    # MLX's CPU quantized_matmul is itself off the exact value (for half it accumulates in
    # half: some 1e-2 at K = 1024); its error on these inputs is measured and added.
    with mx.stream(mx.cpu):
        deq = mx.dequantize(wq, scales, biases, group_size=group_size, bits=bits)
    xf, wf = (np.array(a.astype(mx.float32)).astype(np.float64) for a in (x, deq))
    exact = xf @ wf.T
    cpu_error = float(np.abs(np.array(expected()[0].astype(mx.float32)) - exact).max())
    atol = 2 * in_features * EPSILON[mx.float32] * float((np.abs(xf) @ np.abs(wf).T).max())
    atol += cpu_error
    rtol = 0.0 if dtype == mx.float32 else 2 * EPSILON[dtype]
    tiles = "whole" if out_features % 8 == 0 and in_features % 512 == 0 else "partial"
    label = (f"quantized {'qmv_fast_impl' if fast else 'qmv_impl'} {bits}-bit group "
             f"{group_size}, {rows}x{in_features} @ ({out_features}x{in_features}).T {dtype} "
             f"({tiles})")
    return BlockCase(label, kernel, kwargs, expected, rtol=rtol, atol=atol)


def cases() -> list[BlockCase]:
    """The fast path on whole blocks; the general one on partial K blocks, fewer outputs than
    a threadgroup makes, and a partial last threadgroup; 4 and 8 bits; float and half."""
    return [
        qmv_case(2, 16, 512, mx.float32, fast=True),
        qmv_case(1, 24, 1024, mx.float16, bits=8, fast=True),
        qmv_case(2, 20, 192, mx.float32),
        qmv_case(1, 6, 256, mx.float32, bits=8),
        qmv_case(3, 12, 640, mx.float16, group_size=32),
    ]
