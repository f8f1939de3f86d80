"""MLX's own `steel` GEMM headers, from the installed MLX (`metalsim.mlx_include_dir()`),
included by a kernel's `header` with `#include "mlx/backend/metal/kernels/..."` as MLX's own
sources include them.

Steel's GEMM (BlockLoader, BlockMMA on simdgroup matrices, gemm_loop) runs and is compared
with numpy matmul at whole and partial tiles; its transforms, swizzle and indexing helpers too."""

from pathlib import Path

import mlx.core as mx
import numpy as np
import pytest

import metalsim

INCLUDE = metalsim.mlx_include_dir()


def test_the_headers_come_from_the_installed_mlx_package():
    gemm = INCLUDE / "mlx" / "backend" / "metal" / "kernels" / "steel" / "gemm" / "gemm.h"
    assert gemm.is_file()
    assert INCLUDE.parent == Path(mx.__file__).parent     # beside mlx.core, not a copy


HEADER = """#include "mlx/backend/metal/kernels/steel/gemm/transforms.h"
#include "mlx/backend/metal/kernels/steel/gemm/params.h"
using namespace mlx::steel;
"""

SOURCE = """
uint i = thread_position_in_grid.x;
TransformAxpby<float, float> axpby(alpha[0], beta[0]);
float x = a[i];
out[i] = axpby.apply(x, c[i]) + TransformAdd<float, float>::apply(x, 1.0f)
         + TransformNone<float, float>::apply(x);
int2 tile = BlockSwizzle::swizzle(uint3(i, i / 3, 0), 1);
swizzled[i] = tile.x * 1000 + tile.y;
ulong2 locs = elem_to_loc_broadcast(i, dims, a_str, b_str, 3);
loc[i] = uint(locs.x * 1000 + locs.y);
GEMMParams p = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
typename AccumHelper<half>::accum_type k_plus_stride = p.K + p.batch_stride_b;
acc[i] = k_plus_stride;
"""


def test_steel_transforms_swizzle_params_and_broadcast_indexing_run_as_numpy_computes():
    n = 24
    x = np.arange(n, dtype=np.float32)
    c = np.full(n, 2.0, np.float32)
    dims, a_str, b_str = [2, 3, 4], [12, 4, 1], [0, 5, 1]
    with metalsim.patch(force=True, include_dirs=[INCLUDE]):
        kernel = mx.fast.metal_kernel("steel_parts", ["a", "c", "alpha", "beta", "dims", "a_str",
                                                      "b_str"],
                                      ["out", "swizzled", "loc", "acc"], SOURCE, header=HEADER)
        out, swizzled, loc, acc = kernel(
            inputs=[mx.array(x), mx.array(c), mx.array([2.0]), mx.array([0.5]),
                    mx.array(dims, dtype=mx.int32), mx.array(a_str, dtype=mx.int64),
                    mx.array(b_str, dtype=mx.int64)],
            output_shapes=[(n,)] * 4,
            output_dtypes=[mx.float32, mx.int32, mx.uint32, mx.float32],
            grid=(n, 1, 1), threadgroup=(n, 1, 1))
    i = np.arange(n)
    np.testing.assert_allclose(np.array(out), (x * 2.0 + 0.5 * c) + (x + 1) + x)
    assert np.array(swizzled).tolist() == ((i >> 1) * 1000 + (((i // 3) << 1) + (i & 1))).tolist()
    pos = np.stack(np.unravel_index(i, dims), axis=1)
    assert np.array(loc).tolist() == (pos @ a_str * 1000 + pos @ b_str).tolist()
    assert np.array(acc).tolist() == [13.0] * n


# A GEMM written the way projects use steel from mx.fast.metal_kernel: MLX's GEMMKernel supplies
# the BlockLoader and BlockMMA types, and the body runs MLX's gemm_loop over the K dimension and
# stores the tile (store_result for whole tiles, store_result_safe at the edges), as
# GEMMKernel::run does.
GEMM_HEADER = ('#include "mlx/backend/metal/kernels/steel/gemm/gemm.h"\n'
               "using namespace mlx::steel;\n")
GEMM_SOURCE = """
  constexpr short BM = 32, BN = 32, BK = 16, WM = 2, WN = 2;
  using gemm_kernel = GEMMKernel<T, T, BM, BN, BK, WM, WN, false, false, ALIGNED, ALIGNED>;
  using loader_a_t = typename gemm_kernel::loader_a_t;
  using loader_b_t = typename gemm_kernel::loader_b_t;
  using mma_t = typename gemm_kernel::mma_t;
  threadgroup T As[gemm_kernel::tgp_mem_size_a];
  threadgroup T Bs[gemm_kernel::tgp_mem_size_b];
  const int c_row = int(threadgroup_position_in_grid.y) * BM;
  const int c_col = int(threadgroup_position_in_grid.x) * BN;
  thread loader_a_t loader_a(a + c_row * K, K, As, simdgroup_index_in_threadgroup,
                             thread_index_in_simdgroup);
  thread loader_b_t loader_b(b + c_col, N, Bs, simdgroup_index_in_threadgroup,
                             thread_index_in_simdgroup);
  thread mma_t mma_op(simdgroup_index_in_threadgroup, thread_index_in_simdgroup);
  device T* D = d + c_row * N + c_col;
  const short tgp_bm = min(int(BM), M - c_row);
  const short tgp_bn = min(int(BN), N - c_col);
  const short leftover_bk = K - (K / BK) * BK;
  if (ALIGNED) {
    gemm_kernel::gemm_loop<true, true, true>(As, Bs, K / BK, loader_a, loader_b, mma_op,
                                             tgp_bm, tgp_bn, leftover_bk);
    mma_op.store_result(D, N);
  } else {
    gemm_kernel::gemm_loop<false, false, false>(As, Bs, K / BK, loader_a, loader_b, mma_op,
                                                tgp_bm, tgp_bn, leftover_bk);
    mma_op.store_result_safe(D, N, short2(tgp_bn, tgp_bm));
  }
"""


@pytest.mark.parametrize("m, n, k, dtype", [
    (64, 64, 32, mx.float32),    # whole tiles: load_unsafe, store_result
    (40, 48, 24, mx.float32),    # partial tiles in M, N and K: load_safe, store_result_safe
    (70, 33, 50, mx.float32),
    (8, 40, 16, mx.float16),
])
def test_mlx_steel_gemm_matches_numpy_matmul(m, n, k, dtype):
    aligned = m % 32 == 0 and n % 32 == 0 and k % 16 == 0
    rng = np.random.default_rng(m * n + k)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    with metalsim.patch(force=True, include_dirs=[INCLUDE]):
        kernel = mx.fast.metal_kernel("steel_gemm", ["a", "b"], ["d"], GEMM_SOURCE,
                                      header=GEMM_HEADER)
        (d,) = kernel(inputs=[mx.array(a, dtype=dtype), mx.array(b, dtype=dtype)],
                      template=[("T", dtype), ("M", m), ("N", n), ("K", k),
                                ("ALIGNED", aligned)],
                      output_shapes=[(m, n)], output_dtypes=[dtype],
                      grid=(128 * -(-n // 32), -(-m // 32), 1), threadgroup=(128, 1, 1))
    inputs = [np.array(mx.array(x, dtype=dtype).astype(mx.float32)) for x in (a, b)]
    expected = inputs[0] @ inputs[1]   # float accumulation, as AccumType = float
    tolerance = 1e-5 if dtype == mx.float32 else 2e-2
    np.testing.assert_allclose(np.array(d.astype(mx.float32)), expected, rtol=tolerance,
                               atol=tolerance * 10)

