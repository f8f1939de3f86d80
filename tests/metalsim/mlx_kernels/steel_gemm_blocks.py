"""Kernels built from MLX's steel GEMM pieces (`steel/gemm/loader.h`, `steel/gemm/mma.h`,
`steel/gemm/transforms.h`), included from the installed MLX, written as a custom kernel author
would: the body walks K itself with `BlockLoader::load_unsafe`/`load_safe`/`next` and
`BlockMMA::mma`, and stores with `BlockMMA`'s `store_result*` (optionally through an epilogue).

Each case pairs one launch with MLX's own CPU operation on the same inputs (`mx.matmul`,
`mx.addmm`), so the tests here and the GPU differential (`tests/metalsim/cuda/cuda_launches.py`)
share them.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np
from block_case import EPSILON, BlockCase, ceil_div, mlx_kernel

HEADER = ('#include "mlx/backend/metal/kernels/steel/gemm/gemm.h"\n'
          "using namespace mlx::steel;\n")

# The types come from GEMMKernel (as MLX's own kernels take them), the K loop is the body's own.
# `TA`/`TB`: A is stored (K, M) / B is stored (N, K). Whole tiles use load_unsafe and
# store_result; a launch with a partial tile anywhere uses load_safe with the tile's real extent
# and store_result_safe.
LOOP = """
  constexpr short BM = 32, BN = 32, BK = 16, WM = 2, WN = 2;
  using gemm_t = GEMMKernel<T, T, BM, BN, BK, WM, WN, TA, TB, ALIGNED, ALIGNED, float,
                            EPILOGUE_T>;
  threadgroup T As[gemm_t::tgp_mem_size_a];
  threadgroup T Bs[gemm_t::tgp_mem_size_b];
  const int c_row = int(threadgroup_position_in_grid.y) * BM;
  const int c_col = int(threadgroup_position_in_grid.x) * BN;
  const int lda = TA ? M : K;
  const int ldb = TB ? K : N;
  thread typename gemm_t::loader_a_t loader_a(a + (TA ? c_row : c_row * lda), lda, As,
                                              simdgroup_index_in_threadgroup,
                                              thread_index_in_simdgroup);
  thread typename gemm_t::loader_b_t loader_b(b + (TB ? c_col * ldb : c_col), ldb, Bs,
                                              simdgroup_index_in_threadgroup,
                                              thread_index_in_simdgroup);
  thread typename gemm_t::mma_t mma_op(simdgroup_index_in_threadgroup,
                                       thread_index_in_simdgroup);
  const short tile_m = min(int(BM), M - c_row);
  const short tile_n = min(int(BN), N - c_col);
  for (int k0 = 0; k0 < K; k0 += BK) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (ALIGNED) {
      loader_a.load_unsafe();
      loader_b.load_unsafe();
    } else {
      const short tile_k = min(int(BK), K - k0);
      loader_a.load_safe(TA ? short2(tile_m, tile_k) : short2(tile_k, tile_m));
      loader_b.load_safe(TB ? short2(tile_k, tile_n) : short2(tile_n, tile_k));
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    mma_op.mma(As, Bs);
    loader_a.next();
    loader_b.next();
  }
  device T* D = d + c_row * N + c_col;
"""
MATMUL_SOURCE = LOOP.replace("EPILOGUE_T", "TransformNone<T, float>") + """
  if (ALIGNED) {
    mma_op.store_result(D, N);
  } else {
    mma_op.store_result_safe(D, N, short2(tile_n, tile_m));
  }
"""
# alpha * A @ B + beta * C, applied while storing: BlockMMA's store_result with a
# TransformAxpby epilogue, as MLX's addmm kernels do.
ADDMM_SOURCE = LOOP.replace("EPILOGUE_T", "TransformAxpby<T, float>") + """
  const device T* C = c + c_row * N + c_col;
  const TransformAxpby<T, float> axpby(alpha, beta);
  if (ALIGNED) {
    mma_op.store_result(D, N, C, N, 1, axpby);
  } else {
    mma_op.store_result_safe(D, N, C, N, 1, short2(tile_n, tile_m), axpby);
  }
"""

ALPHA, BETA = 1.5, -0.75


def gemm_case(m: int, n: int, k: int, dtype: mx.Dtype, transpose_a: bool = False,
              transpose_b: bool = False, epilogue: bool = False) -> BlockCase:
    """D = A @ B (or alpha * A @ B + beta * C) through BlockLoader and BlockMMA."""
    aligned = m % 32 == 0 and n % 32 == 0 and k % 16 == 0
    rng = np.random.default_rng(m * 10_000 + n * 100 + k)
    a = mx.array(rng.standard_normal((k, m) if transpose_a else (m, k)), dtype=dtype)
    b = mx.array(rng.standard_normal((n, k) if transpose_b else (k, n)), dtype=dtype)
    c = mx.array(rng.standard_normal((m, n)), dtype=dtype)
    if epilogue:
        kernel = mlx_kernel("steel_addmm_blocks", ["a", "b", "c", "alpha", "beta"], ["d"],
                            ADDMM_SOURCE, HEADER)
        inputs = [a, b, c, ALPHA, BETA]
    else:
        kernel = mlx_kernel("steel_matmul_blocks", ["a", "b"], ["d"], MATMUL_SOURCE, HEADER)
        inputs = [a, b]
    kwargs = {"inputs": inputs,
              "template": [("T", dtype), ("M", m), ("N", n), ("K", k), ("TA", transpose_a),
                           ("TB", transpose_b), ("ALIGNED", aligned)],
              "output_shapes": [(m, n)], "output_dtypes": [dtype],
              "grid": (128 * ceil_div(n, 32), ceil_div(m, 32), 1),
              "threadgroup": (128, 1, 1)}

    def expected() -> list[mx.array]:
        lhs, rhs = (a.T if transpose_a else a), (b.T if transpose_b else b)
        with mx.stream(mx.cpu):
            if epilogue:
                return [mx.addmm(c, lhs, rhs, alpha=ALPHA, beta=BETA)]
            return [mx.matmul(lhs, rhs)]

    layout = f"{'T' if transpose_a else 'N'}{'T' if transpose_b else 'N'}"
    what = "addmm epilogue" if epilogue else "matmul"
    label = f"steel gemm {what} {layout} {m}x{n}x{k} {dtype} ({'full' if aligned else 'partial'})"
    # Both sides accumulate in float32 (steel's AccumHelper, MLX's CPU GEMM) in different orders:
    # each element may differ by the K-term reordering bound K * eps32 * (|A| @ |B|). A half
    # output is then rounded once on each side: two roundings of (nearly) equal values are at
    # most one half ulp apart, 2 * eps16 relative.
    magnitudes = np.abs(np.array(a.astype(mx.float32))) if not transpose_a else np.abs(
        np.array(a.astype(mx.float32))).T
    magnitudes = magnitudes @ np.abs(np.array((b.T if transpose_b else b).astype(mx.float32)))
    reorder = k * 2 * EPSILON[mx.float32] * float(magnitudes.max())
    rtol = 0.0 if dtype == mx.float32 else 2 * EPSILON[dtype]
    if epilogue:
        # TransformAxpby computes `beta * c` in the output type (`static_cast<OutT>(beta) * c`,
        # a half product for half), where MLX's CPU addmm keeps it in float: one more rounding,
        # up to eps * |beta * c|.
        reorder *= abs(ALPHA)
        c_max = float(np.abs(np.array(c.astype(mx.float32))).max())
        reorder += EPSILON[dtype] * abs(BETA) * c_max
    return BlockCase(label, kernel, kwargs, expected, rtol=rtol, atol=reorder)


def cases() -> list[BlockCase]:
    """Full tiles, partial tiles in M, N and K, both layouts of A and B, the epilogue."""
    return [
        gemm_case(64, 64, 32, mx.float32),
        gemm_case(40, 48, 24, mx.float32),
        gemm_case(70, 33, 50, mx.float32, transpose_a=True),
        gemm_case(37, 65, 21, mx.float32, transpose_b=True),
        gemm_case(64, 32, 48, mx.float32, transpose_a=True, transpose_b=True),
        gemm_case(33, 47, 19, mx.float32, epilogue=True),
        gemm_case(64, 64, 32, mx.float32, epilogue=True),
        gemm_case(64, 64, 32, mx.float16),
        gemm_case(45, 38, 27, mx.float16),
        gemm_case(45, 38, 27, mx.float16, transpose_a=True, transpose_b=True),
        gemm_case(32, 64, 16, mx.float16, epilogue=True),
    ]
