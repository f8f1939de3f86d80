"""Real kernel of notebook 04: tiled GEMM with `simdgroup_matrix`.

`gemm(a, b)` computes `a @ b` for `a` of shape `(M, K)` and `b` of shape `(K, N)`, float32 or
half (or bfloat16), any sizes. The plan:

- a threadgroup computes a `BM` x `BN` tile of `out` (64 x 64 with 4 SIMD-groups, up to
  256 x 64 or 128 x 128 with 16; see "Tile shapes" below); each SIMD-group owns a 32 x 32 block
  of it, held in 4 x 4 `simdgroup_float8x8` accumulators;
- the threadgroup walks along `K` 16 at a time. Its threads copy the `BM` x 16 tile of `a` and
  the 16 x `BN` tile of `b` into threadgroup memory with 4-wide loads (zeros outside the
  matrices, so edge tiles need no special case later), converting to float; after a barrier
  each SIMD-group loads its 8 x 8 pieces and multiply-accumulates them; a second barrier keeps
  the next copy from overwriting tiles still in use;
- each lane writes the two accumulator elements it holds (`thread_elements()`, in the lane
  layout that MLX's own GEMM relies on) straight to `out`, converted to the output type and
  checked against the matrix bounds.

The tiles in threadgroup memory and the accumulators are float32 whatever the input type, so
half products are summed without half-precision rounding.

Transposed operands are read in place: with the template flag `TA` (`TB`), `a` (`b`) is given
in memory as its transpose, `(K, M)` (`(N, K)`). Its tiles are copied into threadgroup memory
in that memory order, still with 4-wide loads along the contiguous axis, and
`simdgroup_load(..., transpose = true)` turns each 8x8 piece around. This is what makes
`gemm` differentiable without copies: for `C = A @ B`, `dA = dC @ B^T` is the kernel on
`(dC, B)` with `TB` and `dB = A^T @ dC` the kernel on `(A, dC)` with `TA` (an
`mx.custom_function`; the backward is itself differentiable, so higher derivatives work too).

Tile shapes. Device traffic is decided by the tile: each tile of `a` is read by all
`ceil(N / BN)` threadgroups of its tile row, and each tile of `b` by the `ceil(M / BM)` of its
tile column, so the kernel moves `bytes(a) * ceil(N/BN) + bytes(b) * ceil(M/BM) + bytes(out)`
against the ideal `bytes(a) + bytes(b) + bytes(out)`. Bigger tiles mean fewer re-reads but fewer
threadgroups to spread over the GPU's cores, so, like MLX's own GEMM, `choose_tile` picks the
tile per shape (`BM` and `BN` are template arguments): the one that moves the fewest bytes among
those that still give `MIN_THREADGROUPS` threadgroups. Every SIMD-group owns 32 x 32 of the tile
whatever its shape, so a bigger tile is more SIMD-groups, not more registers per thread.

- A point-cloud layer (many points, few channels, e.g. 16384 x 64 @ 64 x 64) gets 256 x 64 tiles:
  `a` is read once and `b` (the small weight matrix) 64 times, 1.12x the ideal.
- Square matrices are the hard case: with `P` threadgroups each computing an equal block of
  `out`, the inputs are read at least `sqrt(P)` times over, so no multi-threadgroup GEMM gets
  near the ideal: 3.0x at 256 x 256 (16 tiles of 64 x 64), 5.7x at 1024 x 1024 (64 tiles of
  128 x 128). On a GPU many of those re-reads hit the cache, which the simulator does not model.

Split-K. An output of a tile or two cannot keep a GPU busy however deep K is: a point-cloud
layer's weight gradient `x^T @ dy` is 64 x 64 summed over thousands of points. Then
`choose_k_slices` cuts K into slices (at least `MIN_SLICE_DEPTH` deep) computed by their own
threadgroups (grid z), each writing its float32 partial product to its own `(M, N)` block of
the output, and `finish` sums the blocks with MLX. The inputs are still read once; the partials
cost one `(M, N)` float32 block per slice, written and read back once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import mlx.core as mx

from solutions.vector_loads import LOAD4_HEADER

BK = 16   # depth of one step along K
SIMD_TILE = 32   # every SIMD-group owns a 32 x 32 block of the threadgroup's tile


@dataclass(frozen=True)
class Tile:
    """A threadgroup's share of `out`: `rows` x `cols`, both multiples of `SIMD_TILE`."""

    rows: int
    cols: int

    @property
    def threads(self) -> int:
        return (self.rows // SIMD_TILE) * (self.cols // SIMD_TILE) * 32

    def threadgroups(self, m: int, n: int) -> int:
        return -(-m // self.rows) * -(-n // self.cols)

    def bytes_moved(self, m: int, k: int, n: int, itemsize: int) -> int:
        """Device bytes the kernel moves with this tile: `a` once per tile column, `b` once
        per tile row, `out` once."""
        return itemsize * (m * k * -(-n // self.cols) + k * n * -(-m // self.rows) + m * n)


# 128 to 512 threads, and at most 20 KiB of threadgroup memory ((rows + cols) * BK floats).
TILES = (Tile(64, 64), Tile(128, 64), Tile(64, 128), Tile(128, 128), Tile(256, 64),
         Tile(64, 256))
# Enough threadgroups to give every core of a large Apple GPU (up to 40 in a Max chip) at
# least one; fewer would leave cores idle however little traffic each tile makes.
MIN_THREADGROUPS = 64
MIN_SLICE_DEPTH = 256


def choose_tile(m: int, k: int, n: int) -> Tile:
    """The tile that moves the fewest bytes among those giving `MIN_THREADGROUPS`
    threadgroups (or, for small outputs, among those giving the most); the smaller tile on a
    tie."""
    parallel = [t for t in TILES if t.threadgroups(m, n) >= MIN_THREADGROUPS]
    if not parallel:
        most = max(t.threadgroups(m, n) for t in TILES)
        parallel = [t for t in TILES if t.threadgroups(m, n) == most]
    return min(parallel, key=lambda t: (t.bytes_moved(m, k, n, 1), t.threads))


HEADER = LOAD4_HEADER + f"""
constant int BK = {BK};
constant int SIMD_TILE = {SIMD_TILE};   // rows and columns of the tile owned by one SIMD-group
constant int FRAGS = SIMD_TILE / 8;     // its 8x8 accumulators per column and per row
"""

SOURCE = """
    // BM x BK and BK x BN tiles (BK x BM with TA, BN x BK with TB), row-major; declared as
    // float4 so that 4-wide stores are aligned.
    threadgroup float4 As4[BM * BK / 4];
    threadgroup float4 Bs4[BK * BN / 4];
    threadgroup float* As = (threadgroup float*)As4;
    threadgroup float* Bs = (threadgroup float*)Bs4;
    const int THREADS = (BM / SIMD_TILE) * (BN / SIMD_TILE) * 32;
    int t = thread_index_in_threadgroup;
    int sg = simdgroup_index_in_threadgroup;
    int lane = thread_index_in_simdgroup;
    // a is (M, K) in memory, or (K, M) with TA; b is (K, N), or (N, K) with TB.
    int M = TA ? a_shape[1] : a_shape[0];
    int K = TA ? a_shape[0] : a_shape[1];
    int N = TB ? b_shape[0] : b_shape[1];
    // This threadgroup's part of K: all of it, or with split-K (KSLICE > 0) the slice
    // `threadgroup_position_in_grid.z`, whose partial product goes to its own (M, N) block.
    int k_lo = KSLICE ? int(threadgroup_position_in_grid.z) * KSLICE : 0;
    int k_hi = KSLICE ? min(K, k_lo + KSLICE) : K;
    // Each tile is copied in its operand's memory order: rows of `a_width` (`b_width`)
    // elements, from a matrix whose rows are `a_stride` (`b_stride`) long in memory, within
    // `a_rows` x `a_cols` (`b_rows` x `b_cols`), K cut to this threadgroup's part.
    int a_width = TA ? BM : BK;
    int a_stride = TA ? M : K;
    int a_rows = TA ? k_hi : M;
    int a_cols = TA ? M : k_hi;
    int b_width = TB ? BK : BN;
    int b_stride = TB ? K : N;
    int b_rows = TB ? N : k_hi;
    int b_cols = TB ? k_hi : N;
    int row0 = threadgroup_position_in_grid.y * BM;
    int col0 = threadgroup_position_in_grid.x * BN;
    int sm0 = (sg / (BN / SIMD_TILE)) * SIMD_TILE;   // this SIMD-group's block of the tile
    int sn0 = (sg % (BN / SIMD_TILE)) * SIMD_TILE;

    simdgroup_float8x8 acc[FRAGS][FRAGS];
    for (int i = 0; i < FRAGS; ++i) {
        for (int j = 0; j < FRAGS; ++j) {
            acc[i][j] = simdgroup_float8x8(0.0f);
        }
    }

    for (int k0 = k_lo; k0 < k_hi; k0 += BK) {
        // Copy the tiles 4 elements per thread and step, as floats; zeros outside the
        // matrices. (Inlined twice: a helper taking either input pointer would need
        // overloads for the device and constant address spaces.)
        for (int e = 4 * t; e < BM * BK; e += 4 * THREADS) {
            int r = (TA ? k0 : row0) + e / a_width;
            int c = (TA ? row0 : k0) + e % a_width;
            float4 v = float4(0.0f);
            if (r < a_rows && c + 4 <= a_cols) {
                v = float4(load4(a + size_t(r) * a_stride + c));
            } else if (r < a_rows) {
                for (int q = 0; q < 4 && c + q < a_cols; ++q) {
                    v[q] = float(a[size_t(r) * a_stride + c + q]);
                }
            }
            As4[e / 4] = v;
        }
        for (int e = 4 * t; e < BK * BN; e += 4 * THREADS) {
            int r = (TB ? col0 : k0) + e / b_width;
            int c = (TB ? k0 : col0) + e % b_width;
            float4 v = float4(0.0f);
            if (r < b_rows && c + 4 <= b_cols) {
                v = float4(load4(b + size_t(r) * b_stride + c));
            } else if (r < b_rows) {
                for (int q = 0; q < 4 && c + q < b_cols; ++q) {
                    v[q] = float(b[size_t(r) * b_stride + c + q]);
                }
            }
            Bs4[e / 4] = v;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);

        for (int kk = 0; kk < BK; kk += 8) {
            simdgroup_float8x8 a_frag[FRAGS];
            simdgroup_float8x8 b_frag[FRAGS];
            // A transposed tile is loaded from its piece's corner (origin 0), transposed.
            for (int i = 0; i < FRAGS; ++i) {
                if (TA) {
                    simdgroup_load(a_frag[i], As + kk * BM + sm0 + 8 * i, BM, ulong2(0, 0), true);
                } else {
                    simdgroup_load(a_frag[i], As, BK, ulong2(kk, sm0 + 8 * i));
                }
            }
            for (int j = 0; j < FRAGS; ++j) {
                if (TB) {
                    simdgroup_load(b_frag[j], Bs + (sn0 + 8 * j) * BK + kk, BK, ulong2(0, 0), true);
                } else {
                    simdgroup_load(b_frag[j], Bs, BN, ulong2(sn0 + 8 * j, kk));
                }
            }
            for (int i = 0; i < FRAGS; ++i) {
                for (int j = 0; j < FRAGS; ++j) {
                    simdgroup_multiply_accumulate(acc[i][j], a_frag[i], b_frag[j], acc[i][j]);
                }
            }
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }

    // Lane `lane` holds elements (r, c) and (r, c + 1) of every 8x8 accumulator. With
    // split-K the slice's partial product goes, as U = float, to block z of `out`.
    device U* dst = out + (KSLICE ? size_t(threadgroup_position_in_grid.z) * M * N : 0);
    int q = lane / 4;
    int r = (q & 4) + (lane / 2) % 4;
    int c = (q & 2) * 2 + (lane % 2) * 2;
    for (int i = 0; i < FRAGS; ++i) {
        int gr = row0 + sm0 + 8 * i + r;
        for (int j = 0; j < FRAGS; ++j) {
            int gc = col0 + sn0 + 8 * j + c;
            vec<float, 2> v = acc[i][j].thread_elements();
            if (gr < M && gc < N) {
                dst[size_t(gr) * N + gc] = static_cast<U>(v.x);
            }
            if (gr < M && gc + 1 < N) {
                dst[size_t(gr) * N + gc + 1] = static_cast<U>(v.y);
            }
        }
    }
"""


@functools.cache
def _kernel(factory: Callable):
    """The kernel, built once per kernel factory (MLX's, or metalsim's under a patch)."""
    return factory(name="gemm_simdgroup", input_names=["a", "b"], output_names=["out"],
                   source=SOURCE, header=HEADER)


def choose_k_slices(m: int, k: int, n: int, tile: Tile) -> int:
    """How many slices of K to compute in parallel (split-K): 1 unless the output has too few
    tiles to give `MIN_THREADGROUPS` threadgroups and K is deep enough to share out, as in a
    weight gradient `x^T @ dy` over many points. Each slice keeps at least `MIN_SLICE_DEPTH`
    of K, so a threadgroup's setup and write-out stay small beside its work."""
    tiles = tile.threadgroups(m, n)
    wanted = -(-MIN_THREADGROUPS // tiles)
    return max(1, min(wanted, k // MIN_SLICE_DEPTH))


def launch(a: mx.array, b: mx.array, factory: Callable | None = None, *,
           transpose_a: bool = False, transpose_b: bool = False, tile: Tile | None = None,
           k_slices: int | None = None) -> tuple[Callable, dict]:
    """The kernel (built by `factory`, MLX's by default) and the arguments of its call, for
    `op(a) @ op(b)`, where `op` transposes an operand whose `transpose_` flag is set. The tile
    is `choose_tile`'s and the split of K `choose_k_slices`' unless given. With K split in
    `S > 1` slices the kernel's output is the `(S, M, N)` float32 partial products, which
    `finish` sums."""
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"gemm multiplies (M, K) by (K, N); got {a.shape} and {b.shape}")
    m, k = a.shape[::-1] if transpose_a else a.shape
    k_b, n = b.shape[::-1] if transpose_b else b.shape
    if k != k_b:
        raise ValueError(f"gemm multiplies (M, K) by (K, N); got {(m, k)} and {(k_b, n)}")
    dtype = mx.result_type(a, b)
    if dtype not in (mx.float32, mx.float16, mx.bfloat16):
        raise TypeError(f"gemm supports float32, float16 and bfloat16, got {dtype}")
    tile = tile or choose_tile(m, k, n)
    slices = k_slices or choose_k_slices(m, k, n, tile)
    # Slices of a whole number of BK steps, as even as that allows; fewer if K runs out.
    depth = -(-k // (slices * BK)) * BK
    slices = -(-k // depth) if k else 1
    split = slices > 1
    out_dtype = mx.float32 if split else dtype
    args = {"inputs": [a.astype(dtype), b.astype(dtype)],
            "output_shapes": [(slices, m, n) if split else (m, n)],
            "output_dtypes": [out_dtype],
            "template": [("T", dtype), ("U", out_dtype), ("TA", transpose_a),
                         ("TB", transpose_b), ("BM", tile.rows), ("BN", tile.cols),
                         ("KSLICE", depth if split else 0)],
            "grid": (-(-n // tile.cols) * tile.threads, -(-m // tile.rows), slices),
            "threadgroup": (tile.threads, 1, 1)}
    return _kernel(factory or mx.fast.metal_kernel), args


def finish(out: mx.array, dtype: mx.Dtype) -> mx.array:
    """The product from the kernel's output: itself, or the sum of split-K partials."""
    return out.sum(axis=0).astype(dtype) if out.ndim == 3 else out


@functools.cache
def _gemm_op(transpose_a: bool, transpose_b: bool) -> Callable:
    """`op(a) @ op(b)` as an MLX function whose VJP is this kernel again, in the variant that
    reads the operands as they lie in memory (one function per pair of flags)."""

    @mx.custom_function
    def op(a: mx.array, b: mx.array) -> mx.array:
        kernel, args = launch(a, b, transpose_a=transpose_a, transpose_b=transpose_b)
        return finish(kernel(**args)[0], mx.result_type(a, b))

    @op.vjp
    def op_vjp(primals: tuple[mx.array, mx.array], cotangent: mx.array,
               output: mx.array) -> tuple[mx.array, mx.array]:
        # With C = op(a) @ op(b): d op(a) = dC @ op(b)^T and d op(b) = op(a)^T @ dC; a
        # transposed operand's gradient is the transpose of that, which swaps the factors.
        a, b = primals
        if transpose_a:
            grad_a = _gemm_op(transpose_b, True)(b, cotangent)
        else:
            grad_a = _gemm_op(False, not transpose_b)(cotangent, b)
        if transpose_b:
            grad_b = _gemm_op(True, transpose_a)(cotangent, a)
        else:
            grad_b = _gemm_op(not transpose_a, False)(a, cotangent)
        return grad_a.astype(a.dtype), grad_b.astype(b.dtype)

    return op


def gemm(a: mx.array, b: mx.array) -> mx.array:
    """`a @ b` for 2-D `a` (M, K) and `b` (K, N); differentiable (to any order)."""
    return _gemm_op(False, False)(a, b)


def simulate(a: mx.array, b: mx.array, tile: Tile | None = None,
             k_slices: int | None = None):
    """The same launch in the simulator: a `metalsim.Run` with outputs (the partial products
    with split-K: see `finish`) and traffic report."""
    import metalsim

    kernel, args = launch(a, b, metalsim.metal_kernel, tile=tile, k_slices=k_slices)
    return metalsim.simulate(kernel, **args)
