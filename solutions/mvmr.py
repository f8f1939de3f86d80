"""Real kernels of notebook 05: MVMR and VVOR, the sparse engine of a point convolution.

A point convolution is a list of triplets `(i, j, k)`: input point `j` feeds output point `i`
through kernel slot `k`. With `a_idx = k`, `b_idx = j`, `o_idx = i`:

    mvmr:  o[o_idx[t], g, :]    += b[b_idx[t], g, :] @ a[a_idx[t], g, :, :]   (a: K, G, C, M)
    vvor:  o[o_idx[t], g, :, :] += outer(a[a_idx[t], g, :], b[b_idx[t], g, :])

`mvmr` itself runs the grouped kernel of `solutions/mvmr_grouped.py` (triplets sorted by slot,
each run as `simdgroup_matrix` products); the per-triplet MVMR kernel below is the stepping
stone the notebook starts from, kept with its launch and simulation. Both kernels here follow
the per-triplet ("PT") strategy of PointCNN++'s Triton kernels: a threadgroup owns
a run of consecutive triplets and one tile of the output channels, keeps a running float32 sum
per output element while `o_idx` stays the same, and adds it to the output with one atomic
when `o_idx` changes and at the end. Triplets sorted by `o_idx` therefore cost one atomic per
run instead of one per triplet; any order gives the same sums (up to float rounding order).

MVMR. A threadgroup of 256 threads owns `S * LC` consecutive triplets, one group `g`, `BM`
output channels and `BC` input channels. It first stages the weight slab
`a[:, g, c-tile, m-tile]` of *all* K slots in threadgroup memory, so that no triplet reads a
weight from device memory again: with triplets sorted by output point the slot changes at
almost every triplet, and re-reading the weight tile per triplet would dominate the traffic.
Thread `(s, ml)` walks the `LC` triplets of sub-chunk `s` for output channel `m0 + ml`. At each
step the first lane of each group of `BM` lanes reads the triplet's three indices and shares
them with `simd_shuffle`; the group stages the triplet's feature slice `b[j, g, c-tile]` in
threadgroup memory; every thread then adds its dot product over the C-tile. The tile sizes
keep slab and staging within the 32 KiB of threadgroup memory; when all of C fits (K = 27,
C <= 32) each output element gets one atomic per run and sub-chunk, otherwise one per C-tile
as well (PointCNN++ splits C across programs the same way).

VVOR. A threadgroup of `BM * BC` threads owns 256 consecutive triplets and one `(BM x BC)`
tile of an output matrix; thread `(ml, cl)` keeps the running sum of `o[r, g, m, c]`. The
triplets' indices and rows `a[a_idx, g, m-tile]`, `b[b_idx, g, c-tile]` are staged 32 at a time
in threadgroup memory. In its real use (MVMR's weight gradient) the output index is the slot
`k`, so with k-sorted triplets the runs are long and the atomics few.

Gradients are the same two kernels (`pointcloud-ops.md` 1.2, 2.2):

    mvmr:  grad_a = vvor(b, b_idx, g, o_idx -> a_idx, K)
           grad_b = mvmr(a^T, a_idx, g, o_idx -> b_idx, N_b)
    vvor:  grad_a = mvmr(g^T, o_idx, b, b_idx -> a_idx, N_a)
           grad_b = mvmr(g,   o_idx, a, a_idx -> b_idx, N_b)

Each gradient call first sorts its triplets by its own output index (an `argsort` of T
integers), so that it too adds once per run. Every kernel accumulates in float32 into a
float32 atomic output, cast to the promoted input type afterwards.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import mlx.core as mx

from solutions import mvmr_grouped

THREADGROUP_FLOATS = 32 * 1024 // 4  # Apple GPUs' threadgroup memory, in floats
MVMR_THREADS = 256
MVMR_LC = 64                         # triplets per thread (sub-chunk)
VVOR_TILE = 16                       # output tile: up to 16 x 16 threads
VVOR_STEP = 32                       # triplets staged at a time
VVOR_BLOCK = 256                     # triplets per threadgroup
FLOAT_TYPES = (mx.float32, mx.float16, mx.bfloat16)

MVMR_HEADER = f"constant uint THREADS = {MVMR_THREADS};\n"

MVMR_SOURCE = """
    threadgroup float w[K * BC * BM];              // a[:, g, c-tile, m-tile], zero-padded
    threadgroup float bs[(THREADS / BM) * BC];     // one feature slice per sub-chunk
    uint tid = thread_position_in_threadgroup.x;
    uint lane = thread_index_in_simdgroup;
    uint ml = tid % BM;                 // output channel within the tile
    uint s = tid / BM;                  // sub-chunk
    uint leader = lane - ml;            // first lane of this sub-chunk's group
    uint G = a_shape[1];
    uint C = a_shape[2];
    uint M = a_shape[3];
    uint T = o_idx_shape[0];
    uint g = threadgroup_position_in_grid.z;
    uint mtiles = (M + BM - 1) / BM;
    uint c0 = (threadgroup_position_in_grid.y / mtiles) * BC;
    uint m0 = (threadgroup_position_in_grid.y % mtiles) * BM;
    uint m = m0 + ml;
    uint cn = min(uint(BC), C - c0);

    // 1. The weight slab of every slot, once: triplets then read weights only from here.
    for (uint e = tid; e < K * BC * BM; e += THREADS) {
        uint k = e / (BC * BM);
        uint c = (e / BM) % BC;
        uint mm = e % BM;
        bool inside = c < cn && m0 + mm < M;
        w[e] = inside ? float(a[((size_t(k) * G + g) * C + c0 + c) * M + m0 + mm]) : 0.0f;
    }

    // 2. Walk this sub-chunk's triplets, one running sum while o_idx repeats.
    size_t first = (size_t(threadgroup_position_in_grid.x) * (THREADS / BM) + s) * LC;
    float acc = 0.0f;
    int run = -1;                       // the output row being accumulated
    for (uint i = 0; i < LC; ++i) {
        size_t t = first + i;
        bool valid = t < T;
        // One lane per group reads the indices; the group gets them by shuffle.
        int kk = 0, jj = 0, rr = 0;
        if (ml == 0 && valid) {
            kk = a_idx[t];
            jj = b_idx[t];
            rr = o_idx[t];
        }
        int k = simd_shuffle(kk, leader);
        int j = simd_shuffle(jj, leader);
        int r = simd_shuffle(rr, leader);
        for (uint c = ml; c < BC; c += BM) {
            bs[s * BC + c] = valid && c < cn ? float(b[(size_t(j) * G + g) * C + c0 + c]) : 0.0f;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (valid && m < M) {
            if (r != run) {             // a new output row: hand over the finished one
                if (run >= 0) {
                    atomic_fetch_add_explicit(&out[(size_t(run) * G + g) * M + m], acc,
                                              memory_order_relaxed);
                }
                acc = 0.0f;
                run = r;
            }
            float dot = 0.0f;
            for (uint c = 0; c < cn; ++c) {
                dot += bs[s * BC + c] * w[(uint(k) * BC + c) * BM + ml];
            }
            acc += dot;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (run >= 0) {
        atomic_fetch_add_explicit(&out[(size_t(run) * G + g) * M + m], acc, memory_order_relaxed);
    }
"""

VVOR_HEADER = f"""
constant uint STEP = {VVOR_STEP};
constant uint BLOCK = {VVOR_BLOCK};
"""

VVOR_SOURCE = """
    threadgroup int ia[STEP];
    threadgroup int ib[STEP];
    threadgroup int io[STEP];           // -1 past the last triplet
    threadgroup float arows[STEP * BM];
    threadgroup float brows[STEP * BC];
    uint tid = thread_position_in_threadgroup.x;
    uint threads = BM * BC;
    uint ml = tid / BC;
    uint cl = tid % BC;
    uint G = a_shape[1];
    uint M = a_shape[2];
    uint C = b_shape[2];
    uint T = o_idx_shape[0];
    uint g = threadgroup_position_in_grid.z;
    uint ctiles = (C + BC - 1) / BC;
    uint m0 = (threadgroup_position_in_grid.y / ctiles) * BM;
    uint c0 = (threadgroup_position_in_grid.y % ctiles) * BC;
    uint m = m0 + ml;
    uint c = c0 + cl;
    size_t first = size_t(threadgroup_position_in_grid.x) * BLOCK;

    float acc = 0.0f;
    int run = -1;                       // the output matrix being accumulated
    for (uint step = 0; step < BLOCK && first + step < T; step += STEP) {
        // Stage STEP triplets: their indices, then their a and b row tiles.
        for (uint e = tid; e < STEP; e += threads) {
            size_t t = first + step + e;
            bool valid = t < T;
            ia[e] = valid ? int(a_idx[t]) : 0;
            ib[e] = valid ? int(b_idx[t]) : 0;
            io[e] = valid ? int(o_idx[t]) : -1;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint e = tid; e < STEP * BM; e += threads) {
            uint i = e / BM;
            uint mm = m0 + e % BM;
            arows[e] = io[i] >= 0 && mm < M ? float(a[(size_t(ia[i]) * G + g) * M + mm]) : 0.0f;
        }
        for (uint e = tid; e < STEP * BC; e += threads) {
            uint i = e / BC;
            uint cc = c0 + e % BC;
            brows[e] = io[i] >= 0 && cc < C ? float(b[(size_t(ib[i]) * G + g) * C + cc]) : 0.0f;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (m < M && c < C) {
            for (uint i = 0; i < STEP && io[i] >= 0; ++i) {
                if (io[i] != run) {     // a new output matrix: hand over the finished one
                    if (run >= 0) {
                        atomic_fetch_add_explicit(&out[((size_t(run) * G + g) * M + m) * C + c],
                                                  acc, memory_order_relaxed);
                    }
                    acc = 0.0f;
                    run = io[i];
                }
                acc += arows[i * BM + ml] * brows[i * BC + cl];
            }
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (run >= 0) {
        atomic_fetch_add_explicit(&out[((size_t(run) * G + g) * M + m) * C + c], acc,
                                  memory_order_relaxed);
    }
"""


# --- kernels and launches ---------------------------------------------------------------------


@functools.cache
def _mvmr_kernel(factory: Callable):
    """The MVMR kernel, built once per kernel factory (MLX's, or metalsim's under a patch)."""
    return factory(name="mvmr", input_names=["a", "a_idx", "b", "b_idx", "o_idx"],
                   output_names=["out"], source=MVMR_SOURCE, header=MVMR_HEADER,
                   atomic_outputs=True)


@functools.cache
def _vvor_kernel(factory: Callable):
    return factory(name="vvor", input_names=["a", "a_idx", "b", "b_idx", "o_idx"],
                   output_names=["out"], source=VVOR_SOURCE, header=VVOR_HEADER,
                   atomic_outputs=True)


def _pow2_at_most(n: int, cap: int) -> int:
    """The smallest power of two >= n, capped at `cap`."""
    p = 1
    while p < min(n, cap):
        p *= 2
    return p


def mvmr_tiles(k: int, c: int, m: int) -> tuple[int, int]:
    """(BM, BC) for MVMR: the weight slab `K * BC * BM` and the feature slices
    `(256 / BM) * BC` share the threadgroup memory; the largest tile wins, then the widest BC
    (every C-tile adds one more partial sum, hence one more atomic, per output element)."""
    best = None
    bm_cap = _pow2_at_most(m, 8)
    for bm in (8, 4, 2, 1):
        if bm > bm_cap:
            continue
        bc = min(c, THREADGROUP_FLOATS // (k * bm + MVMR_THREADS // bm))
        if bc >= 1 and (best is None or (bm * bc, bc) > (best[0] * best[1], best[1])):
            best = (bm, bc)
    if best is None:
        raise ValueError(f"mvmr: {k} kernel slots do not fit in threadgroup memory")
    return best


def mvmr_launch(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array, o_idx: mx.array,
                n_o: int, factory: Callable | None = None) -> tuple[Callable, dict]:
    """The MVMR kernel and the arguments of its call, for validated operands; its float32
    output has shape (n_o, G, M)."""
    k, g, c, m = a.shape
    t = o_idx.shape[0]
    bm, bc = mvmr_tiles(k, c, m)
    per_group = (MVMR_THREADS // bm) * MVMR_LC
    tiles = -(-m // bm) * -(-c // bc)
    args = {"inputs": [a, a_idx, b, b_idx, o_idx], "output_shapes": [(n_o, g, m)],
            "output_dtypes": [mx.float32],
            "template": [("K", k), ("BM", bm), ("BC", bc), ("LC", MVMR_LC)],
            "grid": (-(-t // per_group) * MVMR_THREADS, tiles, g),
            "threadgroup": (MVMR_THREADS, 1, 1), "init_value": 0}
    return _mvmr_kernel(factory or mx.fast.metal_kernel), args


def vvor_launch(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array, o_idx: mx.array,
                n_o: int, factory: Callable | None = None) -> tuple[Callable, dict]:
    """The VVOR kernel and the arguments of its call, for validated operands; its float32
    output has shape (n_o, G, a.shape[2], b.shape[2]) (here `m` counts `a`'s channels)."""
    g, m = a.shape[1:]
    c = b.shape[2]
    t = o_idx.shape[0]
    bm, bc = _pow2_at_most(m, VVOR_TILE), _pow2_at_most(c, VVOR_TILE)
    tiles = -(-m // bm) * -(-c // bc)
    args = {"inputs": [a, a_idx, b, b_idx, o_idx], "output_shapes": [(n_o, g, m, c)],
            "output_dtypes": [mx.float32], "template": [("BM", bm), ("BC", bc)],
            "grid": (-(-t // VVOR_BLOCK) * bm * bc, tiles, g),
            "threadgroup": (bm * bc, 1, 1), "init_value": 0}
    return _vvor_kernel(factory or mx.fast.metal_kernel), args


def _run(launch: Callable, shape: tuple[int, ...], dtype: mx.Dtype, triplets: int,
         *operands) -> mx.array:
    """Launch the kernel unless there is nothing to add (no triplet, or an empty output)."""
    if triplets == 0 or 0 in shape:
        return mx.zeros(shape, dtype=dtype)
    kernel, args = launch(*operands)
    return kernel(**args)[0].astype(dtype)


# --- differentiable operators -----------------------------------------------------------------


def _sorted_by(key: mx.array, *indices: mx.array) -> list[mx.array]:
    """The triplet index arrays reordered by `key` (an argsort of T integers)."""
    order = mx.argsort(key)
    return [i[order] for i in indices]


def slot_runs(idx: mx.array, slots: int) -> mx.array:
    """The runs of triplets sorted by `idx` (ascending, in [0, slots)): `slots + 1` int32
    boundaries, slot k's triplets at [runs[k], runs[k + 1]), by the grouped kernels' tiny
    runs kernel. They depend on the triplet list alone (the number of triplets of each slot),
    so the layers and gradients sharing a list can share them, as pointelligence's TIG shares
    its index: `mvmr(..., runs=...)`, `vvor(..., runs=...)`."""
    kernel, args = mvmr_grouped.runs_launch(idx.astype(mx.int32), slots)
    return kernel(**args)[0]


@functools.cache
def _mvmr_op(n_o: int) -> Callable:
    """MVMR into `n_o` rows as an MLX function with its VJP (one per `n_o`: it is static).
    The triplets come sorted by slot (`a_idx`) with their `runs`: the grouped kernel needs
    them, and both gradients keep that order (their slot is `a_idx` again), so they need no
    sort and share the runs."""

    @mx.custom_function
    def op(a, b, a_idx, b_idx, o_idx, runs):
        shape = (n_o, a.shape[1], a.shape[3])
        return _run(mvmr_grouped.launch, shape, a.dtype, o_idx.shape[0],
                    a, b, b_idx, o_idx, runs, n_o)

    @op.vjp
    def op_vjp(primals, cotangent, output):
        a, b, a_idx, b_idx, o_idx, runs = primals
        grad_a = _vvor_op(a.shape[0])(b, cotangent, b_idx, o_idx, a_idx, runs)
        grad_b = _mvmr_op(b.shape[0])(a.swapaxes(2, 3), cotangent, a_idx, o_idx, b_idx, runs)
        return (grad_a, grad_b, *(mx.zeros_like(i) for i in (a_idx, b_idx, o_idx, runs)))

    return op


@functools.cache
def _vvor_op(n_o: int) -> Callable:
    """VVOR into `n_o` matrices as an MLX function with its VJP. The triplets come sorted by
    output index with its `runs`; the output index is the slot of both gradients (two MVMRs):
    no sort there either, and the same runs."""

    @mx.custom_function
    def op(a, b, a_idx, b_idx, o_idx, runs):
        shape = (n_o, a.shape[1], a.shape[2], b.shape[2])
        return _run(mvmr_grouped.vvor_launch, shape, a.dtype, o_idx.shape[0],
                    a, a_idx, b, b_idx, runs, n_o)

    @op.vjp
    def op_vjp(primals, cotangent, output):
        a, b, a_idx, b_idx, o_idx, runs = primals
        grad_a = _mvmr_op(a.shape[0])(cotangent.swapaxes(2, 3), b, o_idx, b_idx, a_idx, runs)
        grad_b = _mvmr_op(b.shape[0])(cotangent, a, o_idx, a_idx, b_idx, runs)
        return (grad_a, grad_b, *(mx.zeros_like(i) for i in (a_idx, b_idx, o_idx, runs)))

    return op


def _runs_of(idx: mx.array, slots: int, runs: mx.array | None) -> mx.array:
    """The caller's `runs` of the sorted `idx` (checked for shape), or new ones."""
    if runs is None:
        return slot_runs(idx, slots)
    if not isinstance(runs, mx.array) or runs.shape != (slots + 1,) or runs.dtype != mx.int32:
        raise ValueError(f"runs must be the int32 ({slots + 1},) array slot_runs returns, got "
                         f"{getattr(runs, 'dtype', type(runs).__name__)} "
                         f"{getattr(runs, 'shape', '')}")
    return runs


# --- validation -------------------------------------------------------------------------------


def _indices(name: str, idx: mx.array, t: int, bound: int, check: bool) -> mx.array:
    """`idx` as int32, after checking its dtype and length (and its values, with `check`)."""
    if not isinstance(idx, mx.array) or not mx.issubdtype(idx.dtype, mx.integer):
        dtype = idx.dtype if isinstance(idx, mx.array) else type(idx).__name__
        raise TypeError(f"{name} must be an integer array (int32 preferred), got {dtype}")
    if idx.ndim != 1 or idx.shape[0] != t:
        raise ValueError(f"{name} must have shape ({t},) like o_idx, got {idx.shape}")
    if check and t:
        low, high = mx.min(idx).item(), mx.max(idx).item()
        if low < 0 or high >= bound:
            raise IndexError(f"{name} has values in [{low}, {high}], outside [0, {bound})")
    if bound > 2**31 - 1:
        raise ValueError(f"{name} indexes {bound} rows; int32 indices allow 2**31 - 1")
    return idx.astype(mx.int32)


def _operands(a: mx.array, b: mx.array, a_idx: mx.array, b_idx: mx.array, o_idx: mx.array,
              n_o: int, check: bool) -> tuple[mx.array, ...]:
    """Common checks: float operands in one promoted type, int32 indices of one length."""
    for name, x in (("a", a), ("b", b)):
        if not isinstance(x, mx.array) or x.dtype not in FLOAT_TYPES:
            dtype = x.dtype if isinstance(x, mx.array) else type(x).__name__
            raise TypeError(f"{name} must be float32, float16 or bfloat16, got {dtype}")
    if not isinstance(n_o, int) or n_o < 0:
        raise ValueError(f"n_o must be a non-negative int, got {n_o!r}")
    if not isinstance(o_idx, mx.array) or o_idx.ndim != 1:
        raise ValueError("o_idx must be a 1-D integer array")
    t = o_idx.shape[0]
    dtype = mx.result_type(a, b)
    return (a.astype(dtype), b.astype(dtype), _indices("a_idx", a_idx, t, a.shape[0], check),
            _indices("b_idx", b_idx, t, b.shape[0], check),
            _indices("o_idx", o_idx, t, n_o, check))


def mvmr(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array, o_idx: mx.array,
         n_o: int, *, check_indices: bool = False, slot_sorted: bool = False,
         runs: mx.array | None = None) -> mx.array:
    """`o[o_idx[t], g] += b[b_idx[t], g] @ a[a_idx[t], g]`: a (K, G, C, M), b (N_b, G, C),
    o (n_o, G, M) in the promoted type, by the grouped kernel (`solutions/mvmr_grouped.py`).
    It needs the triplets sorted by slot: with `slot_sorted=True` the caller asserts that
    `a_idx` is ascending (production triplet lists are; nothing checks it), otherwise the
    triplets are sorted first (an argsort of T integers and three gathers).
    `check_indices=True` raises IndexError for an index out of range (it reads the indices
    back, a synchronisation); otherwise such an index is undefined behaviour, as in the
    original. `runs`: `slot_runs(a_idx, K)` of this triplet list, reused by the layers and
    gradients that share it (computed here otherwise, one tiny launch)."""
    if a.ndim != 4 or b.ndim != 3:
        raise ValueError(f"mvmr takes a (K, G, C, M) and b (N_b, G, C), got {a.shape} and "
                         f"{b.shape}")
    if a.shape[1] != b.shape[1] or a.shape[2] != b.shape[2]:
        raise ValueError(f"groups and input channels differ: a {a.shape} is (K, G, C, M), "
                         f"b {b.shape} is (N_b, G, C)")
    a, b, a_idx, b_idx, o_idx = _operands(a, b, a_idx, b_idx, o_idx, n_o, check_indices)
    if not slot_sorted:
        a_idx, b_idx, o_idx = _sorted_by(a_idx, a_idx, b_idx, o_idx)
    return _mvmr_op(n_o)(a, b, a_idx, b_idx, o_idx, _runs_of(a_idx, a.shape[0], runs))


def vvor(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array, o_idx: mx.array,
         n_o: int, *, check_indices: bool = False, slot_sorted: bool = False,
         runs: mx.array | None = None) -> mx.array:
    """`o[o_idx[t], g] += outer(a[a_idx[t], g], b[b_idx[t], g])`: a (N_a, G, C),
    b (N_b, G, M), o (n_o, G, C, M) in the promoted type (the letters of `mvmr`: as its
    weight gradient, `a` has the input channels and `b` the output channels), by the grouped
    kernel of `solutions/mvmr_grouped.py`, which needs the triplets sorted by `o_idx` (the
    slot, in the weight gradient): `slot_sorted=True` asserts they are, otherwise they are
    sorted first. `check_indices` as for `mvmr`; `runs`: `slot_runs(o_idx, n_o)`, as there."""
    if a.ndim != 3 or b.ndim != 3 or a.shape[1] != b.shape[1]:
        raise ValueError(f"vvor takes a (N_a, G, C) and b (N_b, G, M) with the same G, got "
                         f"{a.shape} and {b.shape}")
    a, b, a_idx, b_idx, o_idx = _operands(a, b, a_idx, b_idx, o_idx, n_o, check_indices)
    if not slot_sorted:
        a_idx, b_idx, o_idx = _sorted_by(o_idx, a_idx, b_idx, o_idx)
    return _vvor_op(n_o)(a, b, a_idx, b_idx, o_idx, _runs_of(o_idx, n_o, runs))


def simulate_mvmr(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array,
                  o_idx: mx.array, n_o: int, profile: bool = False):
    """The per-triplet MVMR launch in the simulator: a `metalsim.Run` with the traffic report
    (and, with `profile`, coalescing and bank conflicts in `report.memory`)."""
    import metalsim

    operands = _operands(a, b, a_idx, b_idx, o_idx, n_o, False)
    kernel, args = mvmr_launch(operands[0], operands[2], operands[1], operands[3],
                               operands[4], n_o, metalsim.metal_kernel)
    return metalsim.simulate(kernel, **args, profile=profile)


def simulate_vvor(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array,
                  o_idx: mx.array, n_o: int):
    """The forward VVOR launch in the simulator."""
    import metalsim

    operands = _operands(a, b, a_idx, b_idx, o_idx, n_o, False)
    kernel, args = vvor_launch(operands[0], operands[2], operands[1], operands[3],
                               operands[4], n_o, metalsim.metal_kernel)
    return metalsim.simulate(kernel, **args)


def simulate_naive_mvmr(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array,
                        o_idx: mx.array, n_o: int):
    """Puzzle 23's reference kernel in the simulator, the baseline the real MVMR is measured
    against: one thread and one atomic per (output channel, group, triplet)."""
    from pathlib import Path

    import metalsim

    source = (Path(__file__).parent / "23_mvmr.metal").read_text()
    kernel = metalsim.metal_kernel(name="mvmr", input_names=["a", "a_idx", "b", "b_idx", "o_idx"],
                                   output_names=["out"], atomic_outputs=True, source=source)
    _, g, _, m = a.shape
    return metalsim.simulate(kernel, inputs=[a, a_idx, b, b_idx, o_idx],
                             output_shapes=[(n_o, g, m)], output_dtypes=[mx.float32],
                             grid=(m, g, o_idx.shape[0]), threadgroup=(m, g, 1), init_value=0)
