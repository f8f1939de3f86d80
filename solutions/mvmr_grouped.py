"""The production MVMR of notebook 05: triplets grouped by kernel slot, each run computed as
small matrix products on `simdgroup_matrix`.

The per-triplet kernel of `solutions/mvmr.py` reads both operands of every multiply-add from
threadgroup memory, stages the weights of all K slots at once (which caps its output tile at 8
channels) and synchronises twice per triplet. This kernel reorganises the work as PointCNN++'s
grouped ("FSG"/"TIG") engines do, on Apple's 8x8 matrix units:

1. **Runs.** The triplets are sorted by slot, so slot k's triplets form the run
   `[runs[k], runs[k + 1])`; `runs` (K + 1 integers) comes from a tiny kernel with one thread
   per triplet, which writes the starts of the slots between its predecessor's and its own
   (they depend on the triplet list alone: `solutions.mvmr.slot_runs`, reused by the layers
   and gradients sharing a list). Within a run every triplet multiplies by the *same*
   weight matrix `a[k]`: `BL` consecutive triplets of a run are one dense product
   `(BL x C) @ (C x M)` of the gathered feature rows by the slot's weights.
2. **Chunks.** A threadgroup owns one chunk of `BL` (64) triplets of one run and one tile of
   `BM` (64) output channels. The chunks are numbered run after run; the grid is the upper bound
   `ceil(T / BL) + K` chunks (no read-back of the run lengths) and the threadgroups past the
   last chunk return at once.
3. **Slices.** The C reduction stays in the threadgroup: it walks C in slices of `BC` (16 or
   32) channels, staging the chunk's gathered features (`BC x BL`) in threadgroup memory, two
   barriers per slice instead of two per triplet. Each thread loads its part of the next slice
   into registers (4 channels per packed vector load, from rows whose addresses it computed
   once) before the products of this one, so the loads are in flight during the products.
   The weights need no gather: where they are float and the tile whole (`DIRECT`), each
   SIMD-group reads its 8x8 weight pieces straight from device memory with `simdgroup_load`
   (on an H100 through the CUDA translation, 0.051 -> 0.046 ms at C = M = 256 against
   staging them); otherwise they are staged like the features (`BM x BC`, as float).
4. **Register tiling on simdgroup_matrix.** `NT / 32` SIMD-groups (8) split the `BL x BM`
   tile 2 x (NT / 64); each holds 4 x 2 8x8 float accumulators (4 x 1 for M <= 16). Per 8
   channels it loads its 4 feature pieces and 2 weight pieces once and does every product
   between them: each feature piece loaded feeds 2 8x8x8
   multiply-adds, each weight piece 4. The products are written in pairs sharing the weight
   piece, which the CUDA translation runs together on its tensor cores. (The kernel takes
   other tiles as template arguments; `tiles` says which and why.)
5. **No bank conflicts.** The staged tiles are stored transposed (channel-major features,
   output-major weights) with rows of `BL + 4` and `BC + 4` floats, and read with
   `simdgroup_load(..., transpose = true)`: the 32 words of each of a load's two accesses then
   fall in 32 different banks (the 4 rows a load's lanes start on lie 8 banks apart, 8
   consecutive words per row). The staging stores are conflict-free too: a SIMD-group stores
   one channel (output) of 32 consecutive triplets (channels).
6. **One atomic per output element and chunk.** Each SIMD-group stores its accumulators, one
   8x8 piece at a time, transposed in its own 96 words of the (now free) feature tile with
   `simdgroup_store` (a column every 12 words: no bank conflict), and its lanes add them to
   `out[o_idx[t]]` with `atomic_fetch_add_explicit`, 8 consecutive outputs of 4 triplets per
   access. (Adding straight from `thread_elements()` touches 8 rows per access, and on the
   CUDA back end makes every product keep a copy in Metal's lane layout.) Two triplets of one
   chunk never share a slot, so they can share an output row only when the list repeats a
   triplet, which the atomics handle.

The output is float32 (accumulated in float32 whatever the input type), `(n_o, G, M)`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

import mlx.core as mx

THREADS = 128          # four SIMD-groups, 2 x 2 over the (triplets x outputs) tile
MVMR_TILE = (64, 64, 16, THREADS)          # MVMR's (BL, BM, BC, NT) where M > 32 ...
MVMR_WIDE_TILE = (64, 64, 32, 2 * THREADS)  # ... and C >= 256: see `tiles`
MVMR_THREADGROUPS = 512   # MVMR: split the C reduction while there are fewer threadgroups ...
MVMR_MIN_SLICES = 4        # ... keeping at least this many slices per part
VVOR_STEP = 32         # VVOR: triplets staged at a time
VVOR_THREADGROUPS = 2048   # VVOR: split the runs until about this many threadgroups ...
VVOR_MIN_PART = 32         # ... but keep at least this many triplets per part (even runs)

HEADER = f"constant uint THREADS = {THREADS};\n" + """
// p[0..3] as float, those at index n and past it 0: one packed load (any alignment of the
// element type) when all four are there, else element by element.
template <typename T>
inline float4 load4(const device T* p, int n) {
    if (n >= 4) {
        return float4(*reinterpret_cast<const device packed_vec<T, 4>*>(p));
    }
    float4 v = 0.0f;
    for (int q = 0; q < 3; ++q) {       // n < 4 here: a fixed trip count, unrolled
        if (q < n) {
            v[q] = float(p[q]);
        }
    }
    return v;
}

// Vector e of a staged tile of `rows` rows (a row: a gathered triplet, or a weight channel)
// by 4-wide vectors: its row (x) and first column (y). A SIMD-group access covers 16 rows x 2
// vectors: 32 bytes of each row (one memory sector), and stored transposed with rows of a
// multiple of 4 plus 4 words, 32 different banks.
inline uint2 staged_vector(uint e, uint rows) {
    return uint2(e % 16 + 16 * ((e / 32) % (rows / 16)),
                 4 * ((e / 16) % 2 + 2 * (e / (2 * rows))));
}
"""

RUNS_SOURCE = """
    // Run k starts at the first triplet whose slot is >= k (slots sorted ascending). Thread t
    // writes the starts of the slots after triplet t - 1's, up to triplet t's own (thread T:
    // up to the last slot): one thread per triplet, no search.
    int t = int(thread_position_in_grid.x);
    int T = int(a_idx_shape[0]);
    int K = slot_count[0];
    int first = t == 0 ? 0 : a_idx[t - 1] + 1;
    int last = t == T ? K : a_idx[t];
    for (int k = max(first, 0); k <= min(last, K); ++k) {
        runs[k] = t;
    }
"""

# Inputs a (K, G, C, M), b (N_b, G, C), b_idx (T), o_idx (T), runs (K + 1), the triplets sorted
# by slot; output out (n_o, G, M) float32, atomic. Template: BL triplets x BM outputs per
# threadgroup of NT threads, BC channels per slice, the C reduction in PARTS parts (grid y is
# the output tile times PARTS); DIRECT: the weights are float and every tile is whole (C a
# multiple of BC, M of BM), so the SIMD-groups read their weight pieces from device memory.
SOURCE = """
    const uint LDF = BL + 4;            // row of the transposed feature slice
    const uint LDW = BC + 4;            // row of the transposed weight slice
    const uint TM = BL / 16;            // 8x8 accumulators per SIMD-group: TM x TN
    const uint TN = BM / (8 * (NT / 64));
    threadgroup float feat_t[BC * LDF];         // feat_t[c][i] = b[b_idx[t0 + i], g, c0 + c]
    threadgroup float w_t[DIRECT ? 1 : BM * LDW];   // w_t[m][c] = a[k, g, c0 + c, m0 + m]
    threadgroup int rows_o[BL];                 // -1 past the chunk's last triplet
    uint tid = thread_position_in_threadgroup.x;
    uint lane = thread_index_in_simdgroup;
    uint sg = simdgroup_index_in_threadgroup;
    uint K = a_shape[0];
    uint G = a_shape[1];
    uint C = a_shape[2];
    uint M = a_shape[3];
    uint g = threadgroup_position_in_grid.z;
    uint m0 = (threadgroup_position_in_grid.y / PARTS) * BM;
    uint part = threadgroup_position_in_grid.y % PARTS;     // of the C reduction

    // 1. Chunk q of the list of chunks, run after run: its slot and first triplet. The
    //    first lane of each SIMD-group walks the runs and hands the result to the others.
    int slot = -1;
    int t0 = 0;
    int rows = 0;
    if (lane == 0) {
        uint q = threadgroup_position_in_grid.x;
        for (uint k = 0; k < K && slot < 0; ++k) {
            int lo = runs[k];
            int hi = runs[k + 1];
            uint chunks = uint(hi - lo + BL - 1) / BL;
            if (q < chunks) {
                slot = int(k);
                t0 = lo + int(q * BL);
                rows = min(int(BL), hi - t0);
            } else {
                q -= chunks;
            }
        }
    }
    slot = simd_broadcast(slot, 0);
    t0 = simd_broadcast(t0, 0);
    rows = simd_broadcast(rows, 0);
    if (slot < 0) {
        return;                         // past the last chunk: the grid is an upper bound
    }
    if (tid < BL) {
        bool inside = int(tid) < rows;
        rows_o[tid] = inside ? o_idx[t0 + tid] : -1;
    }

    simdgroup_float8x8 acc[TM][TN];
    for (uint i = 0; i < TM; ++i) {
        for (uint j = 0; j < TN; ++j) {
            acc[i][j] = simdgroup_float8x8(0.0f);
        }
    }
    const uint SGN = NT / 64;           // SIMD-groups across the outputs (2 across the triplets)
    uint r0 = (sg / SGN) * (BL / 2);    // this SIMD-group's rows (triplets) ...
    uint n0 = (sg % SGN) * (BM / SGN);  // ... and columns (outputs) of the tile

    // 2. Stage slice after slice, one slice ahead: each thread loads its FV feature and WV
    //    weight vectors of the next slice into registers before the products of this one, so
    //    the gathers are in flight while the SIMD-groups multiply. A vector is 4 consecutive
    //    channels of a gathered row (4 outputs of a weight row), read as one packed load and
    //    placed by `staged_vector`.
    const uint FV = BL * BC / (4 * NT);              // the tiles keep this whole
    const uint WV = DIRECT ? 0 : (BM * BC / 4 + NT - 1) / NT;   // 16 x 16: half the threads
    float4 fv[FV];
    float4 wv[WV > 0 ? WV : 1];
    // DIRECT: this SIMD-group's weight columns of the slot (a is float then: the cast only
    // gives the unused pointer of the other types a type simdgroup_load takes)
    const device float* w_sg = reinterpret_cast<const device float*>(a)
                               + (size_t(slot) * G + g) * C * M + m0 + n0;
    // Each thread's feature vectors lie in the same rows and at the same channels of every
    // slice: where they start in slice 0, and their channels up to C (0 past the chunk).
    size_t f_start[FV];
    int f_left[FV];
    for (uint r = 0; r < FV; ++r) {
        uint2 v = staged_vector(tid + r * NT, BL);    // (triplet, channel)
        bool inside = int(v.x) < rows;
        f_start[r] = (size_t(inside ? b_idx[t0 + int(v.x)] : 0) * G + g) * C + v.y;
        f_left[r] = inside ? int(C) - int(v.y) : 0;
    }
    uint all_slices = (C + BC - 1) / BC;
    uint per_part = (all_slices + PARTS - 1) / PARTS;
    uint s0 = min(part * per_part, all_slices);     // this part's slices: s0, s0 + 1, ...
    uint slices = min(per_part, all_slices - s0);
    threadgroup_barrier(mem_flags::mem_threadgroup);      // rows_o is written
    for (uint s = 0; s <= slices; ++s) {
        if (s > 0) {
            threadgroup_barrier(mem_flags::mem_threadgroup);
            for (uint r = 0; r < FV; ++r) {
                uint e = tid + r * NT;
                uint2 v = staged_vector(e, BL);       // (triplet, channel)
                for (uint q = 0; q < 4; ++q) {
                    feat_t[(v.y + q) * LDF + v.x] = fv[r][q];
                }
            }
            for (uint r = 0; r < WV; ++r) {
                uint e = tid + r * NT;
                if (e >= BM * BC / 4) {
                    break;
                }
                uint2 v = staged_vector(e, BC);       // (channel, output)
                for (uint q = 0; q < 4; ++q) {
                    w_t[(v.y + q) * LDW + v.x] = wv[r][q];
                }
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        if (s < slices) {
            uint c0 = (s0 + s) * BC;
            for (uint r = 0; r < FV; ++r) {
                fv[r] = load4(b + f_start[r] + c0, f_left[r] - int(c0));
            }
            for (uint r = 0; r < WV; ++r) {
                uint e = tid + r * NT;
                if (e >= BM * BC / 4) {
                    break;
                }
                uint2 v = staged_vector(e, BC);
                uint c = c0 + v.x;
                uint m = m0 + v.y;
                int n = c < C ? int(M) - int(m) : 0;
                wv[r] = load4(a + ((size_t(slot) * G + g) * C + c) * M + m, n);
            }
        }
        if (s == 0) {
            continue;
        }
        // 3. The products: per 8 channels, TM feature pieces and TN weight pieces, each
        //    loaded once, feed TM x TN multiply-accumulates.
        const device float* w_rows = w_sg + size_t((s0 + s - 1) * BC) * M;   // 8 channels
        for (uint kk = 0; kk < BC; kk += 8, w_rows += 8 * M) {
            simdgroup_float8x8 fa[TM];
            simdgroup_float8x8 wb[TN];
            for (uint i = 0; i < TM; ++i) {
                simdgroup_load(fa[i], feat_t, LDF, ulong2(r0 + 8 * i, kk), true);
            }
            for (uint j = 0; j < TN; ++j) {
                if (DIRECT) {
                    simdgroup_load(wb[j], w_rows + 8 * j, M);
                } else {
                    simdgroup_load(wb[j], w_t, LDW, ulong2(kk, n0 + 8 * j), true);
                }
            }
            for (uint j = 0; j < TN; ++j) {         // pairs of products sharing wb[j]
                for (uint i = 0; i + 1 < TM; i += 2) {
                    simdgroup_multiply_accumulate(acc[i][j], fa[i], wb[j], acc[i][j]);
                    simdgroup_multiply_accumulate(acc[i + 1][j], fa[i + 1], wb[j], acc[i + 1][j]);
                }
                if (TM % 2 == 1) {
                    const uint i = TM - 1;
                    simdgroup_multiply_accumulate(acc[i][j], fa[i], wb[j], acc[i][j]);
                }
            }
        }
    }

    // 4. Piece by piece, each SIMD-group stores an 8 x 8 accumulator transposed in its own
    //    96 words of the feature tile (a column of 8 outputs every 12 words: 32 banks for
    //    each store and read), then its lanes add 4 triplets x 8 outputs at a time.
    threadgroup_barrier(mem_flags::mem_threadgroup);    // every SIMD-group is done with feat_t
    threadgroup float* part_t = feat_t + sg * 96;
    for (uint i = 0; i < TM; ++i) {
        for (uint j = 0; j < TN; ++j) {
            simdgroup_store(acc[i][j], part_t, 12, ulong2(0, 0), true);
            simdgroup_barrier(mem_flags::mem_threadgroup);
            for (uint e = lane; e < 64; e += 32) {
                int o = rows_o[r0 + 8 * i + e / 8];
                uint m = m0 + n0 + 8 * j + e % 8;
                if (o >= 0 && m < M) {
                    atomic_fetch_add_explicit(&out[(size_t(o) * G + g) * M + m],
                                              part_t[(e % 8) * 12 + e / 8], memory_order_relaxed);
                }
            }
            simdgroup_barrier(mem_flags::mem_threadgroup);
        }
    }
"""


# Inputs a (N_a, G, M), b (N_b, G, C), a_idx (T), b_idx (T), runs (n_o + 1), the triplets sorted
# by output index (run r = the triplets of output matrix r); output out (n_o, G, M, C) float32,
# atomic. Threadgroup (r, p) in x adds part p of P of run r; y is the (BM x BN) tile of the
# (M x C) matrix; z the group. Template: BL triplets per step, BM x BN tile.
VVOR_SOURCE = """
    const uint LDA = BM + 4;            // row of the staged a rows (triplet-major)
    const uint LDB = BL + 4;            // row of the transposed b rows (channel-major)
    const uint TM = BM / 16;            // 8x8 accumulators per SIMD-group: TM x TN
    const uint TN = BN / 16;
    threadgroup float4 a_s4[BL * LDA / 4];      // a_s[l][m] = a[a_idx[t], g, m0 + m]
    threadgroup float b_t[BN * LDB];            // b_t[c][l] = b[b_idx[t], g, c0 + c]
    threadgroup float* a_s = reinterpret_cast<threadgroup float*>(a_s4);
    uint tid = thread_position_in_threadgroup.x;
    uint lane = thread_index_in_simdgroup;
    uint sg = simdgroup_index_in_threadgroup;
    uint G = a_shape[1];
    uint M = a_shape[2];
    uint C = b_shape[2];
    uint parts = threadgroups_per_grid.x / (runs_shape[0] - 1);
    uint r = threadgroup_position_in_grid.x / parts;
    uint part = threadgroup_position_in_grid.x % parts;
    uint ctiles = (C + BN - 1) / BN;
    uint m0 = (threadgroup_position_in_grid.y / ctiles) * BM;
    uint c0 = (threadgroup_position_in_grid.y % ctiles) * BN;
    uint g = threadgroup_position_in_grid.z;

    // 1. This part of run r: whole steps of BL triplets, split as evenly as possible.
    int lo = runs[r];
    int hi = runs[r + 1];
    int steps = (hi - lo + int(BL) - 1) / int(BL);
    int per = (steps + int(parts) - 1) / int(parts);
    int first = lo + int(part) * per * int(BL);
    int last = min(hi, first + per * int(BL));
    if (first >= last) {
        return;                         // an empty run, or a part past its end
    }

    simdgroup_float8x8 acc[TM][TN];
    for (uint i = 0; i < TM; ++i) {
        for (uint j = 0; j < TN; ++j) {
            acc[i][j] = simdgroup_float8x8(0.0f);
        }
    }
    uint mr0 = (sg / 2) * (BM / 2);     // this SIMD-group's rows (a's channels) ...
    uint cn0 = (sg % 2) * (BN / 2);     // ... and columns (b's channels) of the tile

    // 2. Stage step after step, one step ahead: each thread loads its AV and BV vectors of the
    //    next step (4 channels of a gathered row each, one packed load) into registers before
    //    the products of this one. The a rows are stored as they lie, a vector at a time (8
    //    vectors of a row per quarter SIMD-group), the b rows transposed (`staged_vector`).
    const uint AV = BL * BM / (4 * THREADS);
    const uint BV = BL * BN / (4 * THREADS);
    float4 av[AV];
    float4 bv[BV];
    int steps_here = (last - first + int(BL) - 1) / int(BL);
    for (int s = 0; s <= steps_here; ++s) {
        if (s > 0) {
            threadgroup_barrier(mem_flags::mem_threadgroup);
            for (uint q = 0; q < AV; ++q) {
                uint e = tid + q * THREADS;
                a_s4[(e / (BM / 4)) * (LDA / 4) + e % (BM / 4)] = av[q];
            }
            for (uint q = 0; q < BV; ++q) {
                uint e = tid + q * THREADS;
                uint2 v = staged_vector(e, BL);       // (triplet, channel)
                for (uint k = 0; k < 4; ++k) {
                    b_t[(v.y + k) * LDB + v.x] = bv[q][k];
                }
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        if (s < steps_here) {
            int t0 = first + s * int(BL);
            for (uint q = 0; q < AV; ++q) {
                uint e = tid + q * THREADS;
                int t = t0 + int(e / (BM / 4));
                uint m = m0 + 4 * (e % (BM / 4));
                int n = t < last ? int(M) - int(m) : 0;
                av[q] = load4(a + (size_t(t < last ? a_idx[t] : 0) * G + g) * M + m, n);
            }
            for (uint q = 0; q < BV; ++q) {
                uint e = tid + q * THREADS;
                uint2 v = staged_vector(e, BL);
                int t = t0 + int(v.x);
                uint c = c0 + v.y;
                int n = t < last ? int(C) - int(c) : 0;
                bv[q] = load4(b + (size_t(t < last ? b_idx[t] : 0) * G + g) * C + c, n);
            }
        }
        if (s == 0) {
            continue;
        }
        // 3. out_tile += A^T B over the step's triplets, 8 triplets at a time; both pieces
        //    are read transposed from their padded tiles (no bank conflicts).
        for (uint kk = 0; kk < BL; kk += 8) {
            simdgroup_float8x8 xa[TM];
            simdgroup_float8x8 yb[TN];
            for (uint i = 0; i < TM; ++i) {
                simdgroup_load(xa[i], a_s, LDA, ulong2(mr0 + 8 * i, kk), true);
            }
            for (uint j = 0; j < TN; ++j) {
                simdgroup_load(yb[j], b_t, LDB, ulong2(kk, cn0 + 8 * j), true);
            }
            for (uint j = 0; j < TN; ++j) {         // pairs of products sharing yb[j]
                for (uint i = 0; i + 1 < TM; i += 2) {
                    simdgroup_multiply_accumulate(acc[i][j], xa[i], yb[j], acc[i][j]);
                    simdgroup_multiply_accumulate(acc[i + 1][j], xa[i + 1], yb[j], acc[i + 1][j]);
                }
                if (TM % 2 == 1) {
                    const uint i = TM - 1;
                    simdgroup_multiply_accumulate(acc[i][j], xa[i], yb[j], acc[i][j]);
                }
            }
        }
    }

    // 4. One atomic per element of the tile and part (the parts of a run share the output),
    //    piece by piece as in the MVMR: each SIMD-group stores an accumulator transposed in
    //    its own 96 words of the a rows' tile, then its lanes add 4 rows x 8 columns at a time.
    threadgroup_barrier(mem_flags::mem_threadgroup);    // every SIMD-group is done with a_s
    threadgroup float* part_t = a_s + sg * 96;
    for (uint i = 0; i < TM; ++i) {
        for (uint j = 0; j < TN; ++j) {
            simdgroup_store(acc[i][j], part_t, 12, ulong2(0, 0), true);
            simdgroup_barrier(mem_flags::mem_threadgroup);
            for (uint e = lane; e < 64; e += 32) {
                uint m = m0 + mr0 + 8 * i + e / 8;
                uint c = c0 + cn0 + 8 * j + e % 8;
                if (m < M && c < C) {
                    atomic_fetch_add_explicit(&out[((size_t(r) * G + g) * M + m) * C + c],
                                              part_t[(e % 8) * 12 + e / 8], memory_order_relaxed);
                }
            }
            simdgroup_barrier(mem_flags::mem_threadgroup);
        }
    }
"""


@functools.cache
def _kernels(factory: Callable) -> dict[str, Callable]:
    """The two kernels, built once per kernel factory (MLX's, or metalsim's under a patch)."""
    return {
        "runs": factory(name="mvmr_runs", input_names=["a_idx", "slot_count"],
                        output_names=["runs"],
                        source=RUNS_SOURCE),
        "mvmr": factory(name="mvmr_grouped",
                        input_names=["a", "b", "b_idx", "o_idx", "runs"],
                        output_names=["out"], source=SOURCE, header=HEADER,
                        atomic_outputs=True),
        "vvor": factory(name="vvor_grouped",
                        input_names=["a", "a_idx", "b", "b_idx", "runs"],
                        output_names=["out"], source=VVOR_SOURCE, header=HEADER,
                        atomic_outputs=True),
    }


def tiles(t: int, k: int, c: int, m: int) -> tuple[int, int, int, int]:
    """(BL, BM, BC, NT): 64 triplets x 64 output channels, on 256 threads with slices of 32
    channels from C = 256 on, on 128 threads with slices of 16 below (32 or 16 outputs on 128
    threads where M is that small, slices of 32 channels from C = 128 on). Each SIMD-group then
    holds 4 x 2 (4 x 4; 4 x 2 or 4 x 1) accumulators. Measured on the CUDA translation (H100,
    the three benchmark shapes): 64 x 64 on 256 threads is 7-9% faster than 64 x 32 on 128 at
    C = M = 128 and 256; 32 triplets were 20% slower, 128 twice as slow (with tensor-core
    products still 1.3-1.4x slower). Slices of 32 channels were 3-5% slower with the products
    on CUDA cores; on tensor cores they are 5% faster at C = 256 (0.075 -> 0.072 ms), 3% slower
    at C = 128 and 11% slower at C = 32 (`benchmarks/bench_tiles.py`). With the products'
    halves kept apart and the epilogue through threadgroup memory, 32 channels are 4% faster
    at C = 128 too (0.0645 -> 0.0622 ms) and still 4% slower at C = 32. With products in
    pairs sharing B (three tensor-core instructions for two products), 64 x 64 on 128 threads
    with slices of 16 channels is 7% faster at C = M = 128 (0.0579 -> 0.0541 ms; each
    SIMD-group holds 4 x 4 accumulators, 3 threadgroups per SM) and 8% slower at C = 256, where
    slices of 64 were no faster than 32."""
    del t, k                       # the tile depends on the channels alone
    if m > 32:
        return MVMR_WIDE_TILE if c >= 256 else MVMR_TILE
    return 64, (32 if m > 16 else 16), (32 if c >= 128 else 16), THREADS


def runs_launch(a_idx: mx.array, k: int, factory: Callable | None = None
                ) -> tuple[Callable, dict]:
    """The kernel computing the K + 1 run boundaries of slot-sorted triplets."""
    t = a_idx.shape[0]
    args = {"inputs": [a_idx, mx.array([k], mx.int32)], "output_shapes": [(k + 1,)],
            "output_dtypes": [mx.int32], "grid": (t + 1, 1, 1),
            "threadgroup": (min(t + 1, 256), 1, 1)}
    return _kernels(factory or mx.fast.metal_kernel)["runs"], args


def c_parts(threadgroups: int, slices: int) -> int:
    """Into how many parts the C reduction is split (each adds its sums atomically): doubled
    while the threadgroups are fewer than MVMR_THREADGROUPS and each part keeps at least
    MVMR_MIN_SLICES slices. Measured on the CUDA translation (H100, 2 threadgroups of 256
    threads resident per SM, so 512 is about two waves): C = 256 with 516 threadgroups was 7%
    faster in 2 parts and 3% slower in 4 with one tensor-core instruction per half product;
    with products in pairs it is 6% faster in one part (0.0624 -> 0.0588 ms); C = 128 with 836
    is 3% slower in 2."""
    parts = 1
    while threadgroups * parts < MVMR_THREADGROUPS and slices >= 2 * parts * MVMR_MIN_SLICES:
        parts *= 2
    return parts


EPILOGUE_WORDS = 96    # threadgroup words per SIMD-group in the epilogue (8 columns of 12)


def epilogue_fits(bl: int, bc: int, nt: int) -> bool:
    """Whether the SIMD-groups' epilogue words fit in the feature tile (BC x (BL + 4) floats),
    which the epilogue reuses."""
    return (nt // 32) * EPILOGUE_WORDS <= bc * (bl + 4)


def launch(a: mx.array, b: mx.array, b_idx: mx.array, o_idx: mx.array, runs: mx.array,
           n_o: int, factory: Callable | None = None) -> tuple[Callable, dict]:
    """The grouped MVMR kernel and its call's arguments, for triplets sorted by slot with
    their `runs`; its float32 output has shape (n_o, G, M)."""
    k, g, c, m = a.shape
    t = o_idx.shape[0]
    bl, bm, bc, nt = tiles(t, k, c, m)
    if not epilogue_fits(bl, bc, nt):
        raise ValueError(f"mvmr: tiles {(bl, bm, bc, nt)} leave no room for the epilogue")
    chunks = -(-t // bl) + k
    parts = c_parts(chunks * -(-m // bm) * g, -(-c // bc))
    direct = a.dtype == mx.float32 and c % bc == 0 and m % bm == 0
    args = {"inputs": [a, b, b_idx, o_idx, runs], "output_shapes": [(n_o, g, m)],
            "output_dtypes": [mx.float32],
            "template": [("BL", bl), ("BM", bm), ("BC", bc), ("NT", nt), ("PARTS", parts),
                         ("DIRECT", direct)],
            "grid": (chunks * nt, -(-m // bm) * parts, g), "threadgroup": (nt, 1, 1),
            "init_value": 0}
    return _kernels(factory or mx.fast.metal_kernel)["mvmr"], args


def vvor_tiles(m: int, c: int) -> tuple[int, int]:
    """(BM, BN): the VVOR output tile, 64 x 32 down to 16 where M or C is that small.
    Measured on the CUDA translation (H100, C = M = 128 and 256): 64 x 32 is 10-20% faster
    than 32 x 32, and 64 columns (BN) were 2x slower."""
    return (64 if m > 32 else (32 if m > 16 else 16)), (32 if c > 16 else 16)


def vvor_launch(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array, runs: mx.array,
                n_o: int, factory: Callable | None = None) -> tuple[Callable, dict]:
    """The grouped VVOR kernel and its call's arguments, for triplets sorted by output index
    with their `runs` (n_o + 1); its float32 output has shape (n_o, G, M, C), M = a's
    channels and C = b's. Each run is split into P parts, one threadgroup per part and tile,
    P from the sizes alone: enough threadgroups to fill the GPU (VVOR_THREADGROUPS), as long
    as even runs leave VVOR_MIN_PART triplets per part (each part costs one atomic per
    element of its tile)."""
    g, m = a.shape[1:]
    c = b.shape[2]
    t = a_idx.shape[0]
    bm, bn = vvor_tiles(m, c)
    if VVOR_STEP * (bm + 4) < (THREADS // 32) * EPILOGUE_WORDS:   # it reuses the a rows' tile
        raise ValueError(f"vvor: a tile of {bm} rows leaves no room for the epilogue")
    tiles = -(-m // bm) * -(-c // bn)
    parts = max(1, min(-(-VVOR_THREADGROUPS // (n_o * tiles * g)), t // (n_o * VVOR_MIN_PART)))
    args = {"inputs": [a, a_idx, b, b_idx, runs], "output_shapes": [(n_o, g, m, c)],
            "output_dtypes": [mx.float32],
            "template": [("BL", VVOR_STEP), ("BM", bm), ("BN", bn)],
            "grid": (n_o * parts * THREADS, tiles, g), "threadgroup": (THREADS, 1, 1),
            "init_value": 0}
    return _kernels(factory or mx.fast.metal_kernel)["vvor"], args


def mvmr_sorted(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array, o_idx: mx.array,
                n_o: int) -> mx.array:
    """MVMR of triplets sorted by slot (`a_idx` ascending), float32 `(n_o, G, M)`: the runs
    kernel, then the grouped kernel."""
    kernel, args = runs_launch(a_idx, a.shape[0])
    runs = kernel(**args)[0]
    kernel, args = launch(a, b, b_idx, o_idx, runs, n_o)
    return kernel(**args)[0]


def simulate(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array, o_idx: mx.array,
             n_o: int):
    """Both launches in the simulator, for slot-sorted triplets: the grouped kernel's
    `metalsim.Run` (output and report)."""
    import metalsim

    kernel, args = runs_launch(a_idx, a.shape[0], metalsim.metal_kernel)
    runs = metalsim.simulate(kernel, **args).outputs[0]
    kernel, args = launch(a, b, b_idx, o_idx, mx.array(runs), n_o, metalsim.metal_kernel)
    return metalsim.simulate(kernel, **args, profile=True)


def inner_loop_lines(source: str = SOURCE) -> list[int]:
    """The source lines of a kernel's inner-loop threadgroup reads (its `simdgroup_load`s from
    a threadgroup tile: not the MVMR's weight pieces read from device memory), as the simulator
    numbers them (`report.memory.by_line[("threadgroup", line)]`)."""
    tiles = set(re.findall(r"threadgroup\s+\w+\*?\s+(\w+)", source))
    return [n for n, text in enumerate(source.splitlines(), start=1)
            if (load := re.search(r"simdgroup_load\([^,]+,\s*(\w+)", text)) and load[1] in tiles]


def simulate_vvor(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array,
                  o_idx: mx.array, n_o: int):
    """Both VVOR launches in the simulator, for triplets sorted by `o_idx`: the grouped
    kernel's `metalsim.Run`, profiled."""
    import metalsim

    kernel, args = runs_launch(o_idx, n_o, metalsim.metal_kernel)
    runs = metalsim.simulate(kernel, **args).outputs[0]
    kernel, args = vvor_launch(a, a_idx, b, b_idx, mx.array(runs), n_o, metalsim.metal_kernel)
    return metalsim.simulate(kernel, **args, profile=True)


def simulate_redesign(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array,
                      o_idx: mx.array, n_o: int) -> dict[str, object]:
    """The per-triplet kernel on the triplets as given and the grouped kernel on them sorted
    by slot, both simulated with `profile=True`: `{"per-triplet": run, "grouped": run}`, for
    `metalsim.efficiency.comparison`."""
    from solutions import mvmr

    order = mx.argsort(a_idx)
    return {"per-triplet": mvmr.simulate_mvmr(a, a_idx, b, b_idx, o_idx, n_o, profile=True),
            "grouped": simulate(a, a_idx[order], b, b_idx[order], o_idx[order], n_o)}
