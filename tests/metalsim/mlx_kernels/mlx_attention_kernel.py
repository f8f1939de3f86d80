"""MLX's own steel attention kernel (`steel/attn/kernels/steel_attention.h`, `attention`), run
whole through `metalsim.dispatch` as MLX's scaled_dot_product_attention binds it: Q, K, V, O at
buffers 0-3, an `AttnParams` struct at 4 (its bytes laid out as Metal lays it out), function
constants 200/201 (whole Q/K blocks), 300-303 (mask, causal, sinks, logsumexp), threadgroups
of 32 x WM x WN threads, one per (query block, head, batch). Checked against MLX's CPU
`mx.fast.scaled_dot_product_attention`.
"""

from __future__ import annotations

import math

import mlx.core as mx
import numpy as np
from block_case import EPSILON, LibraryCase, ceil_div, library_source

BQ, BK, WM, WN = 32, 16, 4, 1

# AttnParams, field by field (steel/attn/params.h): 14 ints and a float, then four int64[3].
PARAMS = np.dtype([(n, np.int32) for n in ("B", "H", "D", "qL", "kL", "gqa_factor")]
                  + [("scale", np.float32)]
                  + [(n, np.int32) for n in ("NQ", "NK", "NQ_aligned", "NK_aligned", "qL_rem",
                                             "kL_rem", "qL_off")]
                  + [(n, np.int64, (3,)) for n in ("Q_strides", "K_strides", "V_strides",
                                                   "O_strides")], align=True)


def _source(dim: int) -> str:
    return library_source("steel/attn/kernels/steel_attention.h", instantiations="".join(
        f'instantiate_kernel("steel_attention_{name}_bd{dim}", attention, {t}, {BQ}, {BK}, '
        f'{dim}, {dim}, {WM}, {WN})\n' for name, t in (("float32", "float"),
                                                      ("float16", "half"))))


def attention_case(batch: int, heads: int, q_len: int, k_len: int, dim: int, dtype: mx.Dtype,
                   causal: bool = False) -> LibraryCase:
    rng = np.random.default_rng(q_len * 100 + k_len + dim + causal)
    q, k, v = (mx.array(rng.standard_normal((batch, heads, n, dim)), dtype=dtype)
               for n in (q_len, k_len, k_len))
    scale = 1.0 / math.sqrt(dim)
    params = np.zeros(1, PARAMS)
    p = params[0]
    p["B"], p["H"], p["D"], p["qL"], p["kL"], p["gqa_factor"] = batch, heads, dim, q_len, k_len, 1
    p["scale"] = scale
    p["NQ"], p["NK"] = ceil_div(q_len, BQ), ceil_div(k_len, BK)
    p["NQ_aligned"], p["NK_aligned"] = q_len // BQ, k_len // BK
    p["qL_rem"], p["kL_rem"] = q_len % BQ, k_len % BK
    p["qL_off"] = k_len - q_len
    p["Q_strides"] = p["O_strides"] = (heads * q_len * dim, q_len * dim, dim)
    p["K_strides"] = p["V_strides"] = (heads * k_len * dim, k_len * dim, dim)
    constants = {200: q_len % BQ == 0, 201: k_len % BK == 0, 300: False, 301: causal,
                 302: False, 303: False}
    name = f"steel_attention_{str(dtype).split('.')[-1]}_bd{dim}"

    def expected() -> list[mx.array]:
        with mx.stream(mx.cpu):
            return [mx.fast.scaled_dot_product_attention(q, k, v, scale=scale,
                                                         mask="causal" if causal else None)]

    # As the body-built attention (steel_attention_blocks): float32 reordering and exp2, a few
    # eps32 of max|V| per term; half: MLX's CPU SDPA rounds the scores to half, moving each
    # output by up to 2 eps16 max|s| max|V|, plus one half rounding of the output.
    v_max = float(np.abs(np.array(v.astype(mx.float32))).max())
    if dtype == mx.float32:
        atol, rtol = 64 * EPSILON[mx.float32] * dim * v_max, 0.0
    else:
        qf, kf = (np.array(x.astype(mx.float32)) for x in (q, k))
        s_max = float(np.abs(qf @ np.swapaxes(kf, -1, -2)).max()) * scale
        atol, rtol = 2 * EPSILON[dtype] * s_max * v_max, 2 * EPSILON[dtype]
    tiles = "whole" if q_len % BQ == 0 and k_len % BK == 0 else "partial"
    label = (f"MLX steel attention kernel {batch}x{heads} heads, qL {q_len}, kL {k_len}, "
             f"D {dim} {dtype}{' causal' if causal else ''} ({tiles})")
    return LibraryCase(label, _source(dim), name,
                       {0: q, 1: k, 2: v, 3: mx.zeros_like(q), 4: params.tobytes()},
                       (p["NQ"] * 32, heads * WM, batch * WN), (32, WM, WN), (3,), expected,
                       rtol=rtol, atol=atol, function_constants=constants)


def cases() -> list[LibraryCase]:
    """Partial Q and K blocks, whole ones with the causal mask, and half."""
    return [
        attention_case(1, 2, 40, 37, 32, mx.float32),
        attention_case(1, 1, 64, 64, 32, mx.float32, causal=True),
        attention_case(1, 1, 20, 45, 64, mx.float16),
    ]
