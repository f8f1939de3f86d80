"""Notebook 05: sparse MVMR and VVOR, the engine of a point convolution (puzzles 21-25).

Gather and scatter-add first, then MVMR (sparse matrix-vector multiply with reduction) with one
atomic per thread, then with run-length accumulation over sorted outputs, then VVOR (its
weight gradient) as a deterministic segment kernel. The operators follow
`pointcloud-ops.md` sections 1-2; the notebook ends with `solutions/mvmr.py`.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np

from puzzles.catalog import Budget, Case, Puzzle, register

CHAPTER = "ch05_sparse_mvmr"
TITLE = "Sparse MVMR and VVOR (point convolution)"

CHUNK = 8          # puzzle 24: triplets per thread
MIN_RUN = 4        # puzzle 24: every output point has at least this many triplets

INTRO = [
    """\
# 05 · Sparse MVMR and VVOR: the engine of a point convolution

A point cloud has no pixel grid, so a convolution over it cannot slide a window. Sparse point-cloud
networks ([PointCNN++](https://github.com/ant-research/pointelligence) and its sparse engines)
describe one convolution layer by a list of **triplets** `(i, j, k)`: *input point `j` feeds output
point `i` through kernel slot `k`*. The slot is the cell of the `3 x 3 x 3` neighbourhood that `j`
falls into around `i`, so there are `K = 27` weight matrices, one per slot. A real scene has around
13-15 triplets per point.

The layer computes, for every triplet `t`, the row vector of input features times the slot's
weight matrix, and adds it into the output point's row:

    o[i] += b[j] @ a[k]        with  a: (K, G, C, M) weights,  b: (N, G, C) features

The operator is called **MVMR** (matrix-vector multiply with reduction) and names its index
arrays after its operands: `a_idx = k`, `b_idx = j`, `o_idx = i`. `G` splits the channels into
independent groups (a block-diagonal weight); `C` and `M` are the input and output channels per
group. Note the layout: `a[k, g]` is a `C x M` matrix, and the product contracts its **first**
axis, `o[i, g, m] += sum_c b[j, g, c] * a[k, g, c, m]`. We keep PointCNN++'s layout
because then the weight gradient comes out in exactly the weight's shape.""",
    """\
## Why atomics, and how to need few of them

Many triplets share an output point (all the neighbours of `i`), so many threads add into the
same output row, and they may be in different threadgroups: only **atomic adds** are safe.
A naive kernel does one atomic per triplet and output channel. Atomics on one address are
serialised by the hardware, and each one is a read and a write of device memory.

But triplet lists are usually **sorted**. Sorted by output point, the triplets of one output
form a *run*: a thread that walks consecutive triplets can keep a running sum in a register
while `o_idx` stays the same, and add it to memory once when `o_idx` changes. That is
**run-length accumulation**, what PointCNN++'s Triton kernels do; with runs of 13 triplets it
removes more than 90% of the atomics. The result does not depend on the order, only the speed
does (and the rounding order: float atomics make these kernels not bitwise reproducible, so
results are compared with a tolerance: a relative error of `1e-4` in float32 here; PointCNN++'s
tests allow `5e-3` because CUDA may use TF32, which Apple GPUs do not have).

Two more facts shape the kernels. Every sum is accumulated in `float32`, whatever the input
type, and float outputs that need atomics are `float32` buffers cast afterwards
(`atomic_outputs=True` only supports `atomic<float|int|uint>`). Indices are `int32`; out-of-range
indices are undefined behaviour, as in PointCNN++ (the real kernel checks them on request).""",
    """\
## The backward pass is MVMR and VVOR again

Differentiating `o[i] += b[j] @ a[k]`:

- the **weight gradient** `grad_a[k] += outer(b[j], grad_o[i])` is a sum of outer products,
  grouped by slot: that is **VVOR** (vector-vector outer product with reduction), with `k` as
  its output index;
- the **feature gradient** `grad_b[j] += grad_o[i] @ a[k]^T` is MVMR again, with the weight
  transposed and the roles of `i` and `j` swapped: gather through `o_idx`, scatter through
  `b_idx`.

So two kernels are all a training step needs. This notebook builds them up: gather and
scatter-add, MVMR with atomics, MVMR with run-length accumulation, and VVOR.""",
]

OUTRO = """\
### What you have learned

- A sparse convolution is a list of triplets `(i, j, k)`; MVMR gathers through `b_idx` and
  `a_idx`, multiplies, and scatter-adds through `o_idx`.
- Several threads add into one output row, so the scatter needs atomics. Sorting the triplets
  by output and keeping a running sum while `o_idx` repeats leaves one atomic per run.
- When one thread can own an output element entirely (VVOR's few, long k-segments), no atomic
  is needed at all, and the result is the same bit for bit on every run.
- The gradients of MVMR are a VVOR (weights) and an MVMR with the transposed weight (features);
  the gradients of VVOR are two MVMRs.
"""

REAL_KERNEL_MARKDOWN = """\
## The real kernels: MVMR and VVOR with gradients

`solutions/mvmr.py` has `mvmr(a, a_idx, b, b_idx, o_idx, n_o)` and `vvor(...)`, MLX functions
with a `mx.custom_function` VJP, following the per-triplet strategy of PointCNN++'s Triton
kernels:

- **MVMR**: a threadgroup of 256 threads owns a stretch of consecutive triplets (2,048 for
  8-channel tiles) and a tile of `(group, output channels, input channels)`. It stages the
  weights of *all 27 slots* for its tile in threadgroup memory once, because with triplets
  sorted by output the slot changes at almost every triplet. Each thread walks 64 triplets
  for one output channel: at each step one lane per group reads the triplet's indices and
  shares them with `simd_shuffle`, the group stages the feature slice in threadgroup memory,
  and the thread adds a dot product to its running sum; an atomic add happens only when
  `o_idx` changes.
- **VVOR**: a threadgroup owns 256 triplets and a 16 x 16 tile of the output matrices; each
  thread keeps the running sum of one element and adds it once per run of `o_idx`.
- **Gradients**: `grad_a = vvor(b, b_idx, grad_o, o_idx -> a_idx)` and
  `grad_b = mvmr(a^T, a_idx, grad_o, o_idx -> b_idx)`; each call first sorts its triplets by
  its own output index (an `argsort` of the indices), so that it too adds once per run.

With 2,000 triplets sorted by output (K = 27, C = M = 32) the simulator counts 1.3 MB of
device traffic and 5.6 thousand atomics, against 17.7 MB and 64 thousand for the one-atomic-
per-thread kernel of puzzle 23 (`benchmarks/bench_mvmr.py` prints both reports).

### The production MVMR: runs of one slot as matrix products

The per-triplet kernel is still slow on a real GPU: every multiply-add reads *both* operands
from threadgroup memory, staging all 27 slots' weights caps its output tile at 8 channels, and
it synchronises twice per triplet. `mvmr` therefore runs a redesign,
`solutions/mvmr_grouped.py`, in five steps:

1. **Group by slot.** Sort the triplets by `a_idx` (production triplet lists already are;
   `slot_sorted=True` skips the sort). Slot `k`'s triplets form one run, and a tiny kernel
   finds the run boundaries (one thread per triplet writes the starts of the slots between
   its predecessor's and its own). The runs depend on the triplet list alone, so a network
   computes them once per list (`slot_runs`) and passes them to every layer sharing it
   (`mvmr(..., runs=...)`); the gradients reuse the forward's. Every triplet of a run
   multiplies by the same weight matrix `a[k]`, so 64 of them are one dense product
   `(64 x C) @ (C x M)`.
2. **One chunk per threadgroup.** A threadgroup of 8 SIMD-groups owns one chunk of 64
   triplets of a run and 64 output channels (4 SIMD-groups and 32 or 16 channels when M is
   that small). The grid is an upper bound on the chunks (`T / BL + K`), computed without
   reading the runs back; spare threadgroups return at once. Where that leaves the GPU short
   of threadgroups, C is split into parts that add their sums atomically.
3. **Stream the features.** C is walked in slices of 16 or 32 channels: stage the chunk's
   gathered features, two barriers per slice, not per triplet. Each thread loads its part of
   the next slice into registers before the products of this one, so the gathers are in
   flight while the SIMD-groups multiply; it reads 4 channels at a time with one packed vector
   load, from rows whose addresses it computed once. The weights are not gathered: each
   SIMD-group reads its 8x8 weight pieces straight from device memory with `simdgroup_load`
   (float weights in whole tiles; other types and edge tiles are staged like the features).
4. **Register tiling on `simdgroup_matrix`.** Each SIMD-group holds 4 x 2 8x8 float
   accumulators. Per 8 channels it loads its 4 feature and 2 weight pieces once and multiplies
   every pair, so each piece loaded feeds 2 or 4 products of 512 multiply-adds (measured
   fastest on the GPU; wider tiles ran out of registers).
5. **Pad against bank conflicts.** The staged tiles are stored transposed with rows of
   `BL + 4` (and `BC + 4`) floats and read with `simdgroup_load(..., transpose = true)`: each
   of a load's two 32-word accesses then hits 32 different banks, and so does each staging
   store.

The cost: an atomic per triplet and output channel (two triplets of a chunk have different
output points), where the per-triplet kernel needed one per run of equal `o_idx`.

The cell below checks the kernels and their gradients against plain MLX, prints the
per-triplet MVMR's traffic report, then the simulator's memory model for both kernels side
by side.
"""

REAL_KERNEL_SOURCES = (("solutions.mvmr", "MVMR_SOURCE"), ("solutions.mvmr", "VVOR_SOURCE"),
                       ("solutions.mvmr_grouped", "SOURCE"))

REAL_KERNEL_REPORT = """\
### Reading the report

The report is the forward MVMR's: `K = 27` slots, `N = 150` points, `T = 2,000` triplets sorted
by output point, `C = M = 32`, one group.

- **grid (256, 4, 1), threadgroup (256, 1, 1)**: one threadgroup owns all 2,000 triplets here
  (it takes 2,048 at most), and the 4 rows of the grid are 4 tiles of 8 output channels.
- **global reads, max 482 and 313,216**: the three index arrays, the triplets' rows of `b`
  (gathered through `b_idx`) and the weights `a`, staged tile by tile.
- **atomics 5,568, writes 7 per thread**: one atomic add per run of equal `o_idx` (sorted
  triplets) and output channel, instead of one per triplet: 5,568 rather than 64,000.
- **threadgroup reads and writes, barriers 128**: the staged `b` rows and weights are read
  from threadgroup memory by every thread of the tile; each staging step is fenced by barriers.
- **SIMD-group efficiency 95%**: the threadgroup has room for 2,048 triplets and gets 2,000,
  and lanes whose run has ended wait while others still add theirs.
- **traffic, 7.37x ideal**: the ideal reads each input once. `a` is (110,592 bytes, its
  ideal). But `b` is gathered: every triplet reads its input point's row, and each of the 4
  output-channel tiles does so again, 1,024,000 bytes against the 19,200 of reading `b` once
  (each of the 150 points feeds about 13 triplets). The index arrays are read once per tile (4x
  their ideal). `out` moved 44,544 bytes: each atomic add reads and writes 4 bytes
  (5,568 x 8), against writing each output once (19,200). The gathered `b` is the price of a
  sparse convolution; the run-length accumulation is what keeps the atomics down.

The comparison table runs the same triplets through both kernels (the grouped one after
sorting them by slot), with the memory model of `metalsim.efficiency`:

- **threadgroup SIMD-group accesses 140,128 -> 18,466**, bank efficiency **26% -> 100%**: the
  per-triplet kernel reads two words per multiply-add, with 4-way conflicts; the grouped one
  reads 8x8 pieces that each feed several products, and only the gathered features pass
  through threadgroup memory: float weights in whole tiles (here) are read piece by piece
  straight from device memory, where they lie as a matrix. Its `simdgroup_load`s cost one
  cycle per 32 words (no conflict), and so do its staging stores: the gathered rows are read
  4 channels at a time (packed vector loads, 32 bytes of 16 rows per SIMD-group access) and
  each store puts one channel of 32 consecutive triplets into 32 different banks. The
  epilogue passes each 8x8 accumulator through threadgroup memory (stored transposed, a
  column every 12 words: no conflict either) so that each atomic access adds 8 consecutive
  outputs.
- **barriers 131,072 -> 39,168**: one before the first slice and two per slice of 16
  channels (here C is two slices) instead of two per triplet, then the epilogue's: one
  threadgroup barrier and two SIMD-group barriers per 8x8 piece (a SIMD-group waits only for
  itself there).
- **device traffic 1,256,256 bytes**: each feature row is gathered once per chunk (not once
  per 8 output channels), the weights once per chunk and SIMD-group row (a GPU's caches serve
  the repeats); but **64,000 atomics**, one per triplet
  and output channel, where the per-triplet kernel needed 5,568.
- **SIMD-group efficiency 82%**: one lane per SIMD-group walks the 27 runs to find its chunk
  while the others wait, and the last chunk of a run is partly empty.

On an NVIDIA H100, through the CUDA translation (the 8x8 products on tensor cores),
`benchmarks/bench_gpu.py` measures this kernel beside PointCNN++'s engines on the same
triplets (the slot runs built once per triplet list, as TIG builds its index): 0.33x the time
of its Triton kernels at C = M = 32, 0.81x at 128 and 0.78x at 256; against its fastest
engine, TIG, 0.79x, 0.85x and 0.98x."""


REAL_KERNEL_CODE = """\
import metalsim
import numpy as np
from solutions.mvmr import mvmr, simulate_mvmr, vvor

rng = np.random.default_rng(0)
K, N, C, M = 27, 150, 32, 32
per_point = rng.integers(8, 20, N)                      # triplets per output point
o_idx = mx.array(np.repeat(np.arange(N), per_point)[:2000].astype(np.int32))  # sorted
T = o_idx.shape[0]
a_idx = mx.array(rng.integers(0, K, T).astype(np.int32))
b_idx = mx.array(rng.integers(0, N, T).astype(np.int32))
a, b = mx.random.normal((K, 1, C, M)), mx.random.normal((N, 1, C))


def mvmr_mlx(a, b):   # the spec in plain MLX
    per_triplet = mx.einsum("tgc,tgcm->tgm", b[b_idx], a[a_idx])
    return mx.zeros((N, 1, M)).at[o_idx].add(per_triplet)


def vvor_mlx(x, y):
    outer = x[b_idx][..., :, None] * y[o_idx][..., None, :]
    return mx.zeros((K, 1, C, M)).at[a_idx].add(outer)


def rel(x, y):
    return (mx.abs(x - y).max() / mx.abs(y).max()).item()


cot = mx.random.normal((N, 1, M))
with metalsim.patch():   # simulated where MLX has no Metal; the real GPU on a Mac
    print("mvmr  rel. error:", rel(mvmr(a, a_idx, b, b_idx, o_idx, N), mvmr_mlx(a, b)))
    print("vvor  rel. error:", rel(vvor(b, b_idx, cot, o_idx, a_idx, K), vvor_mlx(b, cot)))
    ours = mx.vjp(lambda a, b: mvmr(a, a_idx, b, b_idx, o_idx, N), [a, b], [cot])[1]
    spec = mx.vjp(mvmr_mlx, [a, b], [cot])[1]
    print("grads rel. error:", [rel(x, y) for x, y in zip(ours, spec)])

run = simulate_mvmr(a, a_idx, b, b_idx, o_idx, N)
print(run.report.summary())

from metalsim.efficiency import comparison
from solutions.mvmr_grouped import simulate_redesign

print(comparison(simulate_redesign(a, a_idx, b, b_idx, o_idx, N)))
"""


def _values(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Random values with one decimal: readable in a verdict, not integers."""
    return np.round(rng.uniform(-2, 2, shape), 1).astype(np.float32)


def _small_ints(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Small integers stored as floats: a visible case whose sums are easy to read."""
    return rng.integers(-2, 3, shape).astype(np.float32)


def _idx(values: object) -> np.ndarray:
    return np.asarray(values, dtype=np.int32)


# --- 21 Gather Rows -------------------------------------------------------------------------

GATHER_TEMPLATE = """\
uint c = thread_position_in_grid.x;
uint t = thread_position_in_grid.y;
uint C = x_shape[1];
// FILL ME IN (roughly 1 line)
"""


def gather_rows_spec(x: mx.array, idx: mx.array) -> mx.array:
    # out[t] = x[idx[t]]: row t of the output is row idx[t] of x.
    return x[idx]


def _gather_case(x: np.ndarray, idx: np.ndarray) -> Case:
    c = x.shape[1]
    return Case((x, idx), (idx.size, c), (c, idx.size, 1), (c, 1, 1))


def gather_rows_hidden(rng: np.random.Generator) -> list[Case]:
    return [_gather_case(_values(rng, (n, c)), _idx(rng.integers(0, n, t)))
            for n, c, t in ((40, 5, 300), (7, 12, 20), (1, 3, 9))]


GATHER_ROWS = Puzzle(
    number=21,
    slug="gather_rows",
    titles=("Gather Rows",),
    chapter=CHAPTER,
    description="""\
**Gather** rows of `x` through an index array: `out[t] = x[idx[t]]`, for every channel. `x`
holds one row of `C` features per point; `idx` says which point each output row copies, and
the same point may be copied many times (a point is the neighbour of many others).

There is one thread per output element: `c` is the channel and `t` the output row. Arrays are
stored row after row, so element `(r, c)` of `x` is `x[r * C + c]`.

This is the first half of every sparse convolution: before multiplying, each triplet fetches
its input point's features. You need 2 global reads (the index, then the element) and 1 global
write per thread.""",
    input_names=("x", "idx"),
    spec=gather_rows_spec,
    visible=_gather_case(np.arange(24, dtype=np.float32).reshape(6, 4),
                         _idx([3, 0, 3, 5, 1, 3, 2, 0])),
    hidden=gather_rows_hidden,
    template=GATHER_TEMPLATE,
    budget=Budget(global_reads=2, global_writes=1, threadgroup_reads=0, threadgroup_writes=0),
    hints=(
        "The row to read is `idx[t]`; the element is at `x[idx[t] * C + c]`.",
        "One read and one write per thread: the output element of `(t, c)` is in row `t` "
        "of `out`, the input element in row `idx[t]` of `x`.",
    ),
    solution_file="21_gather_rows.metal",
)


# --- 22 Scatter Add -------------------------------------------------------------------------

SCATTER_TEMPLATE = """\
uint c = thread_position_in_grid.x;
uint t = thread_position_in_grid.y;
uint C = x_shape[1];
// FILL ME IN (roughly 1 line)
"""


def scatter_add_spec(x: mx.array, idx: mx.array) -> mx.array:
    # out[idx[t]] += x[t] for every t; rows that no t points to stay 0.
    return mx.zeros(x.shape, dtype=mx.float32).at[idx].add(x)


def _scatter_case(x: np.ndarray, idx: np.ndarray) -> Case:
    t, c = x.shape
    return Case((x, idx), (t, c), (c, t, 1), (c, 1, 1))


def scatter_add_hidden(rng: np.random.Generator) -> list[Case]:
    skewed = np.minimum(rng.geometric(0.3, 200) - 1, 199)  # most rows land on the first few
    return [
        _scatter_case(_values(rng, (300, 5)), _idx(rng.integers(0, 300, 300))),
        _scatter_case(_values(rng, (200, 3)), _idx(skewed)),
        _scatter_case(_values(rng, (50, 16)), _idx(np.full(50, 7))),   # all into one row
    ]


SCATTER_ADD = Puzzle(
    number=22,
    slug="scatter_add",
    titles=("Scatter Add",),
    chapter=CHAPTER,
    description="""\
The reverse of a gather: **scatter-add** every row of `x` into the row `idx[t]` of the output,
`out[idx[t]] += x[t]`. Here each of the `N` points pushes its features into another point of the
same cloud (say, its cluster centre), so `out` has the shape of `x`; rows that nobody pushes to
stay 0. This is exactly the gradient of Gather Rows: the gradient of a copied row adds up over
all its copies.

Several rows may push into the same row, in different threadgroups, so the adds must be
**atomic**. The kernel is built with `atomic_outputs=True` (`out` is a `device atomic<float>*`)
and `init_value=0`. You need 1 atomic per thread; an atomic counts as a global read and a
global write, so the budget is 3 global reads and 1 global write.""",
    input_names=("x", "idx"),
    spec=scatter_add_spec,
    visible=_scatter_case(np.arange(24, dtype=np.float32).reshape(8, 3),
                          _idx([2, 0, 2, 7, 2, 0, 5, 2])),
    hidden=scatter_add_hidden,
    template=SCATTER_TEMPLATE,
    budget=Budget(global_reads=3, global_writes=1, atomics=1),
    hints=(
        "The target element is `out[idx[t] * C + c]`; it may receive adds from many threads.",
        "A plain `+=` loses updates when two threads add to the same element. Which atomic "
        "function adds to a `device atomic<float>`, and which memory order suffices?",
    ),
    solution_file="22_scatter_add.metal",
    atomic_outputs=True,
    init_value=0,
)


# --- 23 MVMR --------------------------------------------------------------------------------

MVMR_TEMPLATE = """\
uint m = thread_position_in_grid.x;
uint g = thread_position_in_grid.y;
uint t = thread_position_in_grid.z;
uint G = a_shape[1], C = a_shape[2], M = a_shape[3];
// FILL ME IN (roughly 6 lines)
"""


def mvmr_spec(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array,
              o_idx: mx.array) -> mx.array:
    # o[o_idx[t], g, m] += sum_c b[b_idx[t], g, c] * a[a_idx[t], g, c, m], summed in float32.
    # The output has one row per point of b: the convolution keeps its point set.
    per_triplet = mx.einsum("tgc,tgcm->tgm", b[b_idx].astype(mx.float32),
                            a[a_idx].astype(mx.float32))
    out = mx.zeros((b.shape[0], a.shape[1], a.shape[3]), dtype=mx.float32)
    return out.at[o_idx].add(per_triplet)


def _mvmr_case(a: np.ndarray, b: np.ndarray, a_idx: np.ndarray, b_idx: np.ndarray,
               o_idx: np.ndarray, chunk: int = 1) -> Case:
    """One thread per (m, g, triplet), or per (m, g, chunk of triplets) for puzzle 24."""
    _, g, _, m = a.shape
    groups = -(-o_idx.size // chunk)
    return Case((a, a_idx, b, b_idx, o_idx), (b.shape[0], g, m), (m, g, groups), (m, g, 1))


def _triplets(rng: np.random.Generator, k: int, g: int, c: int, m: int, n: int, t: int,
              o_idx: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """Random weights and features, and random slots and input points for `t` triplets
    (their output points: `o_idx`, or random)."""
    o = _idx(rng.integers(0, n, t)) if o_idx is None else o_idx
    return (_values(rng, (k, g, c, m)), _values(rng, (n, g, c)),
            _idx(rng.integers(0, k, o.size)), _idx(rng.integers(0, n, o.size)), o)


def mvmr_hidden(rng: np.random.Generator) -> list[Case]:
    a, b, ai, bi, oi = _triplets(rng, 4, 3, 3, 2, 10, 25)
    doubled = (a, b, np.tile(ai, 2), np.tile(bi, 2), np.tile(oi, 2))  # every triplet twice
    return [
        _mvmr_case(*_triplets(rng, 27, 2, 5, 3, 40, 300)),
        _mvmr_case(*_triplets(rng, 27, 1, 8, 12, 40, 1)),
        _mvmr_case(*doubled),
        _mvmr_case(*_triplets(rng, 27, 1, 8, 12, 30, 0, np.sort(rng.integers(0, 30, 300))
                              .astype(np.int32))),
    ]


def _mvmr_visible() -> Case:
    rng = np.random.default_rng(23)
    a, b = _small_ints(rng, (3, 1, 4, 4)), _small_ints(rng, (6, 1, 4))
    o_idx = _idx([0, 2, 2, 1, 5, 0, 2, 3, 5, 1])        # row 4 gets no triplet
    return _mvmr_case(a, b, _idx(rng.integers(0, 3, 10)), _idx(rng.integers(0, 6, 10)), o_idx)


MVMR = Puzzle(
    number=23,
    slug="mvmr",
    titles=("MVMR",),
    chapter=CHAPTER,
    description="""\
**MVMR**, the forward pass of a point convolution: for every triplet `t`,

    o[o_idx[t], g, :] += b[b_idx[t], g, :] @ a[a_idx[t], g, :, :]

with weights `a` of shape `(K, G, C, M)`, features `b` of shape `(N, G, C)` and output `o` of
shape `(N, G, M)` (the convolution keeps its point set, so `o` has a row per point of `b`).
Written out: `o[o_idx[t], g, m] += sum over c of b[b_idx[t], g, c] * a[a_idx[t], g, c, m]`.

There is one thread per `(m, g, t)`: `m` is `x`, the group `g` is `y` and the triplet `t` is
`z`. Each thread computes its dot product over `c` in a register and adds it to the output
with **one** atomic: many triplets share an output point. `out` is `device atomic<float>*`,
zero-filled. Output rows that no triplet names stay 0. Duplicate triplets are not merged:
each adds again.

The budget is 1 atomic per thread: sum in a register first.""",
    input_names=("a", "a_idx", "b", "b_idx", "o_idx"),
    spec=mvmr_spec,
    visible=_mvmr_visible(),
    hidden=mvmr_hidden,
    template=MVMR_TEMPLATE,
    budget=Budget(atomics=1),
    hints=(
        "Read the triplet's three indices first: `uint k = a_idx[t], j = b_idx[t], "
        "r = o_idx[t];`",
        "Element `(j, g, c)` of `b` is `b[(j * G + g) * C + c]`, element `(k, g, c, m)` of `a` "
        "is `a[((k * G + g) * C + c) * M + m]`: sum their products over `c` in a float.",
        "Add `acc` to the output element of `(r, g, m)` once, with an atomic: other "
        "threads add to the same element for other kernel offsets.",
    ),
    solution_file="23_mvmr.metal",
    atomic_outputs=True,
    init_value=0,
)


# --- 24 MVMR, run-length --------------------------------------------------------------------

RUN_HEADER = f"constant uint CHUNK = {CHUNK};\n"

MVMR_RUNS_TEMPLATE = """\
uint m = thread_position_in_grid.x;
uint g = thread_position_in_grid.y;
uint chunk = thread_position_in_grid.z;
uint G = a_shape[1], C = a_shape[2], M = a_shape[3];
uint T = o_idx_shape[0];
uint first = chunk * CHUNK;
uint last = min(first + CHUNK, T);
// FILL ME IN (roughly 15 lines)
"""


def _sorted_outputs(rng: np.random.Generator, n: int) -> np.ndarray:
    """o_idx sorted by output point: each point has 0 (sometimes) or 4 to 12 triplets."""
    counts = np.where(rng.random(n) < 0.15, 0, rng.integers(MIN_RUN, 13, n))
    return _idx(np.repeat(np.arange(n), counts))


def mvmr_runs_hidden(rng: np.random.Generator) -> list[Case]:
    cases = [(27, 2, 5, 3, 40), (27, 1, 8, 12, 30), (5, 3, 3, 2, 12)]
    cases = [_mvmr_case(*_triplets(rng, k, g, c, m, n, 0, _sorted_outputs(rng, n)),
                        chunk=CHUNK) for k, g, c, m, n in cases]
    one_run = _triplets(rng, 27, 1, 4, 8, 10, 0, _idx(np.full(21, 6)))   # a run of 21
    return [*cases, _mvmr_case(*one_run, chunk=CHUNK)]


def _mvmr_runs_visible() -> Case:
    rng = np.random.default_rng(24)
    a, b = _small_ints(rng, (3, 1, 4, 4)), _small_ints(rng, (6, 1, 4))
    o_idx = _idx(np.repeat(np.arange(6), [4, 5, 0, 4, 6, 4]))    # point 2 has no triplet
    t = o_idx.size
    return _mvmr_case(a, b, _idx(rng.integers(0, 3, t)), _idx(rng.integers(0, 6, t)), o_idx,
                      chunk=CHUNK)


MVMR_RUNS = Puzzle(
    number=24,
    slug="mvmr_runs",
    titles=("MVMR, run-length", "MVMR Run-Length"),
    chapter=CHAPTER,
    description=f"""\
The same MVMR, with the triplets **sorted by output point**: all triplets of output point 0
come first, then those of point 1, and so on. A stretch of equal `o_idx` is a *run*. Here every
output point has at least {MIN_RUN} triplets (or none).

Now each thread handles a chunk of {CHUNK} consecutive triplets (for one `m` and `g`), and adds
to memory only when it has to: it keeps a running sum while `o_idx` stays the same, and when
`o_idx` changes it adds the finished sum to its output row with one atomic and starts a new
one. At the end of the chunk it adds what it holds. A run that crosses a chunk boundary is
added by both threads, so the atomic is still needed, but only once per run and chunk.

Since runs have at least {MIN_RUN} triplets, a chunk of {CHUNK} touches at most 3 runs: the
budget is 3 atomics per thread, where puzzle 23's kernel would need {CHUNK}.""",
    input_names=("a", "a_idx", "b", "b_idx", "o_idx"),
    spec=mvmr_spec,
    visible=_mvmr_runs_visible(),
    hidden=mvmr_runs_hidden,
    template=MVMR_RUNS_TEMPLATE,
    budget=Budget(atomics=3),
    hints=(
        "Keep `float acc = 0` and `uint run = o_idx[first]`, the output row being summed.",
        "In the loop over `t` from `first` to `last`: if `o_idx[t] != run`, add `acc` to "
        "`out[(run * G + g) * M + m]` atomically, then reset `acc` and set `run`. Then add the "
        "triplet's dot product to `acc`.",
        "After the loop, one more atomic add for the last run.",
    ),
    solution_file="24_mvmr_runs.metal",
    header=RUN_HEADER,
    atomic_outputs=True,
    init_value=0,
)


# --- 25 VVOR --------------------------------------------------------------------------------

VVOR_TEMPLATE = """\
uint m = thread_position_in_grid.x;
uint c = thread_position_in_grid.y;
uint G = a_shape[1], C = a_shape[2], M = b_shape[2];
uint k = thread_position_in_grid.z / G;
uint g = thread_position_in_grid.z % G;
// FILL ME IN (roughly 6 lines)
"""


def vvor_spec(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array,
              seg_offs: mx.array) -> mx.array:
    # o[k, g, c, m] += a[a_idx[t], g, c] * b[b_idx[t], g, m] for the triplets t of slot k,
    # which are t = seg_offs[k] ... seg_offs[k + 1] - 1 (triplets sorted by slot).
    slots = seg_offs.shape[0] - 1
    o_idx = mx.searchsorted(seg_offs[1:], mx.arange(a_idx.shape[0], dtype=seg_offs.dtype),
                            side="right")
    outer = (a[a_idx].astype(mx.float32)[..., :, None]
             * b[b_idx].astype(mx.float32)[..., None, :])
    out = mx.zeros((slots, a.shape[1], a.shape[2], b.shape[2]), dtype=mx.float32)
    return out.at[o_idx].add(outer)


def _vvor_case(a: np.ndarray, b: np.ndarray, a_idx: np.ndarray, b_idx: np.ndarray,
               lengths: np.ndarray) -> Case:
    _, g, c = a.shape
    m = b.shape[2]
    k = lengths.size
    seg_offs = _idx(np.concatenate([[0], np.cumsum(lengths)]))
    return Case((a, a_idx, b, b_idx, seg_offs), (k, g, c, m), (m, c, k * g), (m, c, 1))


def _vvor_random(rng: np.random.Generator, g: int, c: int, m: int, n: int,
                 lengths: np.ndarray) -> Case:
    t = int(lengths.sum())
    return _vvor_case(_values(rng, (n, g, c)), _values(rng, (n, g, m)),
                      _idx(rng.integers(0, n, t)), _idx(rng.integers(0, n, t)), lengths)


def vvor_hidden(rng: np.random.Generator) -> list[Case]:
    spread = np.where(rng.random(27) < 0.2, 0, rng.integers(1, 25, 27))  # some slots empty
    only_centre = np.zeros(27, dtype=np.int64)
    only_centre[13] = 40                                                   # one segment
    return [
        _vvor_random(rng, 2, 12, 8, 40, spread),
        _vvor_random(rng, 1, 3, 5, 6, np.array([0, 0, 1, 0, 0])),        # a single triplet
        _vvor_random(rng, 1, 4, 4, 10, only_centre),
    ]


def _vvor_visible() -> Case:
    rng = np.random.default_rng(25)
    a, b = _small_ints(rng, (6, 1, 3)), _small_ints(rng, (6, 1, 4))
    return _vvor_case(a, b, _idx(rng.integers(0, 6, 10)), _idx(rng.integers(0, 6, 10)),
                      np.array([4, 0, 6]))                                 # slot 1 is empty


VVOR = Puzzle(
    number=25,
    slug="vvor",
    titles=("VVOR",),
    chapter=CHAPTER,
    description="""\
**VVOR**, the weight gradient of MVMR: a sum of outer products,

    o[k, g, c, m] += a[a_idx[t], g, c] * b[b_idx[t], g, m]     for every triplet t of slot k

with `a` of shape `(N_a, G, C)`, `b` of shape `(N_b, G, M)` and `o` of shape `(K, G, C, M)`.
The letters mean what they mean in MVMR: as MVMR's gradient, `a` is the input features (`C`
channels per group), `b` the output gradient (`M` channels), and the result is the weight
gradient, of the weight's shape `(K, G, C, M)`. (In general the output index is any `o_idx`;
here it is the slot.)

The triplets are **sorted by slot**, as real triplet lists are, and instead of a slot per
triplet you get segment offsets, as PointCNN++'s VVOR does: the triplets of slot `k` are
`t = seg_offs[k], ..., seg_offs[k + 1] - 1`. An empty slot has `seg_offs[k] == seg_offs[k + 1]`.

With only `K` long segments, one thread can own an output element entirely: thread
`(m, c, k * G + g)` (the grid's `x` along `o`'s last axis, as everywhere) loops over slot
`k`'s segment, sums in a register, and stores once, with a plain store. No atomics at all,
so the result is the same bit for bit on every run. Budget: 1 global write and 0 atomics per
thread.""",
    input_names=("a", "a_idx", "b", "b_idx", "seg_offs"),
    spec=vvor_spec,
    visible=_vvor_visible(),
    hidden=vvor_hidden,
    template=VVOR_TEMPLATE,
    budget=Budget(global_writes=1, atomics=0),
    hints=(
        "Slot `k`'s triplets run from `seg_offs[k]` to `seg_offs[k + 1]` (excluded).",
        "For each of them add `a[(a_idx[t] * G + g) * C + c] * b[(b_idx[t] * G + g) * M + m]` "
        "to a float.",
        "Store `acc` once, after the loop, in the element of `(k, g, c, m)`; an empty slot "
        "must store 0 too. What is that element's flat index in the `(K, G, C, M)` output?",
    ),
    solution_file="25_vvor.metal",
)


register(GATHER_ROWS, SCATTER_ADD, MVMR, MVMR_RUNS, VVOR)
