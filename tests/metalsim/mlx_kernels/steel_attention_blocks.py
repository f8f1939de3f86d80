"""A flash-attention kernel body built from MLX's steel attention pieces, included from the
installed MLX (`steel/attn/kernels/steel_attention.h` and what it includes): `BlockLoaderT`
(Q and V row-major, K transposed into threadgroup memory), `MMATile` loads and stores,
`tile_matmad`, `BaseMMAFrag::mma`, and the row-wise `row_reduce`/`row_bin_op` with the header's
`MaxOp`, `SumOp`, `ExpSubOp`, `MulOp` and `DivOp` (an online softmax over K blocks).

The body is this project's own, shaped as a custom kernel author would use the pieces; each case
is checked against MLX's CPU `mx.fast.scaled_dot_product_attention` on the same inputs.
"""

from __future__ import annotations

import math

import mlx.core as mx
import numpy as np
from block_case import EPSILON, BlockCase, ceil_div, mlx_kernel

HEADER = ('#include "mlx/backend/metal/kernels/steel/attn/kernels/steel_attention.h"\n')

# One threadgroup of 4 SIMD-groups per (block of 32 queries, batch * head); each SIMD-group holds
# 8 query rows. Scores are kept in log2 units (scale * log2(e)), as `ExpSubOp` is `exp2(x - y)`.
# A partial last K block has its missing columns set to -inf before the row max.
SOURCE = """
  constexpr short BQ = 32, BK = 16, WM = 4, kFrag = 8;
  constexpr short TK = BK / kFrag, TD = BD / kFrag;
  constexpr short pad = 16 / sizeof(T);
  constexpr short LDQ = BD + pad, LDK = BK + pad, LDV = BD + pad;
  threadgroup T Qs[BQ * LDQ];
  threadgroup T Ks[BD * LDK];
  threadgroup T Vs[BK * LDV];

  const int q_block = int(threadgroup_position_in_grid.x);
  const int head = int(threadgroup_position_in_grid.y);
  const ushort sg = simdgroup_index_in_threadgroup, lane = thread_index_in_simdgroup;
  using q_loader_t = BlockLoaderT<T, BQ, BD, LDQ, 1, 1, WM * 32>;
  using k_loader_t = BlockLoaderT<T, BK, BD, 1, LDK, 0, WM * 32>;
  using v_loader_t = BlockLoaderT<T, BK, BD, LDV, 1, 0, WM * 32>;
  q_loader_t q_loader(q + (head * QL + q_block * BQ) * BD, BD, Qs, sg, lane);
  k_loader_t k_loader(k + head * KL * BD, BD, Ks, sg, lane);
  v_loader_t v_loader(v + head * KL * BD, BD, Vs, sg, lane);

  using frag_t = BaseMMAFrag<float, kFrag, kFrag>;
  MMATile<float, 1, 1, frag_t> q_tile;
  MMATile<float, 1, TK, frag_t> k_tile;
  MMATile<float, 1, TK, frag_t> s_tile;
  MMATile<float, 1, 1, frag_t> v_tile;
  MMATile<float, 1, TD, frag_t> o_tile;
  o_tile.clear();

  const short2 coord = frag_t::get_coord(lane);
  const short sm = coord.y, sn = coord.x, tm = kFrag * sg;
  const short q_rows = min(int(BQ), QL - q_block * BQ);
  if (q_rows < BQ) {
    q_loader.load_safe(short2(BD, q_rows));
  } else {
    q_loader.load_unsafe();
  }
  const float scale_log2 = scale * M_LOG2E_F;
  float row_max[1] = {-INFINITY};
  float row_sum[1] = {0.0f};

  for (int kb = 0; kb < (KL + BK - 1) / BK; kb++) {
    const short k_rows = min(int(BK), KL - kb * BK);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (k_rows < BK) {
      k_loader.load_safe(short2(BD, k_rows));
    } else {
      k_loader.load_unsafe();
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    s_tile.clear();
    for (short dd = 0; dd < TD; dd++) {
      q_tile.template load<T, 1, 1, LDQ, 1>(&Qs[(tm + sm) * LDQ + sn + dd * kFrag]);
      k_tile.template load<T, 1, 1, LDK, 1>(&Ks[sm * LDK + sn + dd * kFrag * LDK]);
      tile_matmad(s_tile, q_tile, k_tile, s_tile);
    }
    for (short i = 0; i < decltype(s_tile)::kElemsPerTile; i++) {
      s_tile.elems()[i] *= scale_log2;
    }
    for (short j = 0; j < TK; j++) {
      for (short jj = 0; jj < frag_t::kElemCols; jj++) {
        if (sn + j * kFrag + jj >= k_rows) {
          s_tile.frag_at(0, j)[jj] = -INFINITY;
        }
      }
    }

    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (k_rows < BK) {
      v_loader.load_safe(short2(BD, k_rows));
    } else {
      v_loader.load_unsafe();
    }

    float new_max[1] = {row_max[0]};
    s_tile.template row_reduce<MaxOp>(new_max);
    s_tile.template row_bin_op<ExpSubOp>(new_max);
    float factor[1] = {fast::exp2(row_max[0] - new_max[0])};
    row_max[0] = new_max[0];
    float block_sum[1] = {0.0f};
    s_tile.template row_reduce<SumOp>(block_sum);
    row_sum[0] = row_sum[0] * factor[0] + block_sum[0];
    o_tile.template row_bin_op<MulOp>(factor);

    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (short id = 0; id < TD; id++) {
      for (short ik = 0; ik < TK; ik++) {
        v_tile.template load<T, 1, 1, LDV, 1>(&Vs[(sm + ik * kFrag) * LDV + sn + id * kFrag]);
        frag_t::mma(o_tile.frag_at(0, id), s_tile.frag_at(0, ik), v_tile.frag_at(0, 0),
                    o_tile.frag_at(0, id));
      }
    }
    k_loader.next();
    v_loader.next();
  }

  o_tile.template row_bin_op<DivOp>(row_sum);
  device T* out = o + (head * QL + q_block * BQ + tm + sm) * BD + sn;
  if (q_rows < BQ) {
    const short2 dims = short2(BD - sn, q_rows - (tm + sm));
    if (dims.x > 0 && dims.y > 0) {
      o_tile.template store_safe<T, 1, 1>(out, BD, dims);
    }
  } else {
    o_tile.template store<T, 1, 1>(out, BD);
  }
"""


def attention_case(batch: int, heads: int, q_len: int, k_len: int, dim: int,
                   dtype: mx.Dtype) -> BlockCase:
    """O = softmax(scale * Q @ K.T) @ V per (batch, head) through steel's attention pieces."""
    rng = np.random.default_rng(q_len * 1000 + k_len * 10 + dim)
    q, k, v = (mx.array(rng.standard_normal((batch, heads, n, dim)), dtype=dtype)
               for n in (q_len, k_len, k_len))
    scale = 1.0 / math.sqrt(dim)
    kernel = mlx_kernel("steel_attention_blocks", ["q", "k", "v", "scale"], ["o"], SOURCE, HEADER)
    kwargs = {"inputs": [q, k, v, scale],
              "template": [("T", dtype), ("QL", q_len), ("KL", k_len), ("BD", dim)],
              "output_shapes": [(batch, heads, q_len, dim)], "output_dtypes": [dtype],
              "grid": (128 * ceil_div(q_len, 32), batch * heads, 1),
              "threadgroup": (128, 1, 1)}

    def expected() -> list[mx.array]:
        with mx.stream(mx.cpu):
            return [mx.fast.scaled_dot_product_attention(q, k, v, scale=scale)]

    # Each output is a convex combination of V's rows. float32: the scores (D-term dot
    # products, then the exponent) and the K-term sums are ordered differently on each side,
    # a few eps32 of max|V| per term; 64 * eps32 * D covers it with room. float16: MLX's CPU
    # SDPA rounds the scores to half before its softmax (metalsim keeps them in float, as
    # steel's kernel does): a logit error of eps16 * max|s| moves each weight by that relative
    # amount, so the output by up to 2 * eps16 * max|s| * max|V|, plus one half rounding of the
    # output on each side (rtol).
    v_max = float(np.abs(np.array(v.astype(mx.float32))).max())
    if dtype == mx.float32:
        atol, rtol = 64 * EPSILON[mx.float32] * dim * v_max, 0.0
    else:
        qf, kf = (np.array(x.astype(mx.float32)) for x in (q, k))
        s_max = float(np.abs(qf @ np.swapaxes(kf, -1, -2)).max()) * scale
        atol, rtol = 2 * EPSILON[dtype] * s_max * v_max, 2 * EPSILON[dtype]
    tiles = "full" if q_len % 32 == 0 and k_len % 16 == 0 else "partial"
    label = (f"steel attention {batch}x{heads} heads, qL {q_len}, kL {k_len}, D {dim} {dtype} "
             f"({tiles})")
    return BlockCase(label, kernel, kwargs, expected, rtol=rtol, atol=atol)


def cases() -> list[BlockCase]:
    """Whole Q and K blocks, a partial last Q block and a partial last K block, float and half."""
    return [
        attention_case(1, 2, 32, 32, 32, mx.float32),
        attention_case(2, 1, 40, 37, 32, mx.float32),
        attention_case(1, 1, 33, 50, 64, mx.float32),
        attention_case(1, 2, 32, 48, 32, mx.float16),
        attention_case(1, 1, 45, 21, 64, mx.float16),
    ]
