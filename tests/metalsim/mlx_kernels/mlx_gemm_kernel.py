"""MLX's own steel GEMM kernel (`steel/gemm/kernels/steel_gemm_fused.h`, `gemm`), run whole
through `metalsim.dispatch` as MLX's matmul and addmm bind it: A, B, (C), D at buffers 0-3,
a `GEMMParams` struct at 4 and a `GEMMAddMMParams` at 5 (their bytes laid out as Metal lays
them out), function constants 10 (batch), 100/110 (C and alpha/beta), 200-202 (whole M, N, K
tiles), threadgroups of 32 x WN x WM threads, one per output tile. Checked against MLX's CPU
`mx.matmul` / `mx.addmm`.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np
from block_case import EPSILON, LibraryCase, ceil_div, library_source

BM, BN, BK, WM, WN = 32, 32, 16, 2, 2

GEMM_PARAMS = np.dtype([(n, np.int32) for n in ("M", "N", "K", "lda", "ldb", "ldd", "tiles_n",
                                                 "tiles_m")]
                       + [(n, np.int64) for n in ("batch_stride_a", "batch_stride_b",
                                                  "batch_stride_d")]
                       + [(n, np.int32) for n in ("swizzle_log", "gemm_k_iterations_aligned",
                                                  "batch_ndim")], align=True)
ADDMM_PARAMS = np.dtype([("ldc", np.int32), ("fdc", np.int32), ("batch_stride_c", np.int64),
                         ("alpha", np.float32), ("beta", np.float32)], align=True)

SOURCE = library_source("steel/gemm/gemm.h", "steel/gemm/kernels/steel_gemm_fused.h",
                        instantiations="".join(
    f'instantiate_kernel("steel_gemm_fused_{ta}{tb}_{name}", gemm, {t}, {BM}, {BN}, {BK}, '
    f'{WM}, {WN}, {str(ta == "t").lower()}, {str(tb == "t").lower()})\n'
    for name, t in (("float32", "float"), ("float16", "half"))
    for ta in ("n", "t") for tb in ("n", "t")))

ALPHA, BETA = 1.5, -0.75


def gemm_case(m: int, n: int, k: int, dtype: mx.Dtype, transpose_a: bool = False,
              transpose_b: bool = False, addmm: bool = False) -> LibraryCase:
    rng = np.random.default_rng(m * 7 + n * 5 + k * 3 + addmm)
    a = mx.array(rng.standard_normal((k, m) if transpose_a else (m, k)), dtype=dtype)
    b = mx.array(rng.standard_normal((n, k) if transpose_b else (k, n)), dtype=dtype)
    c = mx.array(rng.standard_normal((m, n)), dtype=dtype)
    params = np.zeros(1, GEMM_PARAMS)
    p = params[0]
    p["M"], p["N"], p["K"] = m, n, k
    p["lda"], p["ldb"], p["ldd"] = (m if transpose_a else k), (k if transpose_b else n), n
    p["tiles_n"], p["tiles_m"] = ceil_div(n, BN), ceil_div(m, BM)
    p["batch_stride_a"], p["batch_stride_b"], p["batch_stride_d"] = m * k, n * k, m * n
    p["gemm_k_iterations_aligned"], p["batch_ndim"] = k // BK, 1
    extra = np.zeros(1, ADDMM_PARAMS)
    extra[0]["ldc"], extra[0]["fdc"], extra[0]["batch_stride_c"] = n, 1, m * n
    extra[0]["alpha"], extra[0]["beta"] = ALPHA, BETA
    constants = {10: False, 100: addmm, 110: addmm, 200: m % BM == 0, 201: n % BN == 0,
                 202: k % BK == 0}
    layout = f"{'t' if transpose_a else 'n'}{'t' if transpose_b else 'n'}"
    name = f"steel_gemm_fused_{layout}_{str(dtype).split('.')[-1]}"

    def expected() -> list[mx.array]:
        lhs, rhs = (a.T if transpose_a else a), (b.T if transpose_b else b)
        with mx.stream(mx.cpu):
            return [mx.addmm(c, lhs, rhs, alpha=ALPHA, beta=BETA) if addmm
                    else mx.matmul(lhs, rhs)]

    # As for the body-built GEMM (steel_gemm_blocks): float32 accumulation in different orders
    # on both sides, within K * 2 eps32 * (|A| @ |B|); a half output rounded once (2 eps16);
    # the addmm epilogue computes beta * c in the output type (one more rounding).
    lhs, rhs = (np.abs(np.array(x.astype(mx.float32))) for x in
                ((a.T if transpose_a else a), (b.T if transpose_b else b)))
    atol = k * 2 * EPSILON[mx.float32] * float((lhs @ rhs).max()) * (abs(ALPHA) if addmm else 1)
    if addmm:
        atol += EPSILON[dtype] * abs(BETA) * float(np.abs(np.array(c.astype(mx.float32))).max())
    rtol = 0.0 if dtype == mx.float32 else 2 * EPSILON[dtype]
    aligned = m % BM == 0 and n % BN == 0 and k % BK == 0
    label = (f"MLX steel_gemm_fused kernel {'addmm' if addmm else 'matmul'} {layout.upper()} "
             f"{m}x{n}x{k} {dtype} ({'whole' if aligned else 'partial'})")
    return LibraryCase(label, SOURCE, name,
                       {0: a, 1: b, 2: c, 3: mx.zeros((m, n), dtype=dtype),
                        4: params.tobytes(), 5: extra.tobytes()},
                       (p["tiles_n"] * 32, p["tiles_m"] * WN, WM), (32, WN, WM), (3,),
                       expected, rtol=rtol, atol=atol, function_constants=constants)


def cases() -> list[LibraryCase]:
    """Whole and partial tiles, the four layouts, the addmm epilogue, float and half."""
    return [
        gemm_case(64, 64, 32, mx.float32),
        gemm_case(40, 48, 24, mx.float32),
        gemm_case(70, 33, 50, mx.float32, transpose_a=True),
        gemm_case(37, 65, 21, mx.float16, transpose_b=True),
        gemm_case(33, 47, 19, mx.float32, addmm=True),
        gemm_case(64, 47, 19, mx.float32, addmm=True),
    ]
