"""Notebook 07: distances for neighbourhood search (puzzles 30-32, pointcloud-ops.md §5).

Pairwise distances through threadgroup tiles, indexed (gathered) distances in the Euclidean
"ball" and Chebyshev "cube" norms, and the fused radius mask of a radius search. The notebook
ends with the real kernels of `solutions/distances.py`.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np

from puzzles.catalog import Budget, Case, Puzzle, register

CHAPTER = "ch07_distances"
TITLE = "Distances for neighbourhood search"

TILE = 8     # puzzle 30: points per tile, threads per side of the threadgroup
WIDTH = 32   # puzzles 31 and 32: threads per threadgroup

# Every puzzle of the chapter loads a point (3 consecutive floats) with one 12-byte read.
LOAD_POINT = """\
// Point `row` of an (N, 3) array: its 3 coordinates in one 12-byte load.
inline float3 load_point(const device float* points, uint row) {
    return float3(*(const device packed_float3*)(points + 3 * row));
}
"""

INTRO = [
    """\
# 07 · Distances for neighbourhood search

A point-cloud network never sees a grid of pixels: its input is a list of 3-D points. Before
any convolution or pooling it must find, for every point, its **neighbours**, and that search
is made of distance computations:

- a **ball query** (radius search) keeps the points within distance `r` of each query point.
  PointNet++ groups points this way, and PointCNN++ builds its convolution triplets
  `(i, j, k)` of notebook 05 from it;
- a **cube query** keeps the points within the cube of half-edge `r`, measured with the
  Chebyshev distance `max(|dx|, |dy|, |dz|)`. It matches voxel kernels: a 3x3x3 convolution
  looks at a cube, not a sphere;
- a **k-nearest-neighbour** graph (DGCNN, point transformers) ranks the candidates by their
  Euclidean distance, from a pairwise distance matrix.

A real radius search does not compare every pair. It hashes the points into a grid, takes the
points of the neighbouring cells as **candidate pairs** `(a_idx[t], b_idx[t])`, millions of
them, and filters the candidates with a distance and a `<=` test. The pairs that survive become
the neighbour lists (segments of notebook 06) and the triplets of the sparse convolution
(notebook 05). These kernels are simple, but they run over every candidate of every layer, so
they are **memory-bound**: what matters is how many bytes each pair costs.""",
    """\
## Points, and the rules this notebook follows

Points are stored as `(N, 3)` float32 arrays, row after row: point `r` is `x, y, z` at
`points[3r], points[3r + 1], points[3r + 2]`. Every puzzle's header has a helper that loads a
whole point at once:

```metal
inline float3 load_point(const device float* points, uint row) {
    return float3(*(const device packed_float3*)(points + 3 * row));
}
```

`packed_float3` is three floats with no padding (a plain `float3` occupies 16 bytes), so a
point is one 12-byte read: the score counts it as **one** global read, where reading the three
coordinates one by one counts three. The budgets below count a point as one read.

The two distances, for `diff = p - q`:

| name | formula | Metal |
| --- | --- | --- |
| ball (Euclidean, L2) | `sqrt(dx² + dy² + dz²)` | `sqrt(dot(diff, diff))` |
| cube (Chebyshev, L∞) | `max(|dx|, |dy|, |dz|)` | `max(max(m.x, m.y), m.z)` with `m = abs(diff)` |

Decisions where the operator these puzzles follow, the `indexed_distance` of [PointCNN++](https://github.com/ant-research/pointelligence),
leaves room:

- only `ball` and `cube` exist; PointCNN++ treats *any* other name as cube, silently;
- "within the radius" is **inclusive**, `d <= r`, as in PointCNN++; a pair exactly at the
  radius is a neighbour (the hidden cases of puzzle 32 have such ties);
- the math is plain float32 with no epsilon (`torch.nn.functional.pairwise_distance`, which
  PointCNN++'s tests compare with, adds `1e-6` to the difference; we do not);
- PointCNN++'s operator has no gradient. Ours do (the real kernels at the end), and at zero
  distance, where the Euclidean norm has no derivative, the gradient is 0.

A pitfall to avoid: a "cosine distance" written as `1 - sum(a - b) / (|a| |b|)`. The cosine
distance is `1 - dot(a, b) / (|a| |b|)`: the sum of
the *differences* is not a dot product. And it is a different distance from both of ours: it
ignores how far apart two points are and only compares their directions from the origin, so
it has no place in a radius search. The hidden cases of puzzle 31 reject it.""",
]

OUTRO = """\
### What you have learned

- A neighbourhood search is distance computations plus a `<=` test; the candidate pairs come
  from a grid, and the survivors become the neighbour lists and convolution triplets of
  notebooks 05 and 06.
- A dense pairwise distance matrix reuses every point for a whole row or column: staging the
  points in threadgroup memory cuts their device reads by the tile size.
- An indexed distance reads two indices and two points per pair and has nothing to reuse:
  its cost is bytes per pair, so load a point with one 12-byte read, and fuse the `<=` test to
  write a 1-byte mask instead of a 4-byte distance.
- Ties matter: the radius test is inclusive, and a kernel with `<` loses every neighbour that
  sits exactly on the sphere or the cube.
"""

REAL_KERNEL_MARKDOWN = """\
## The real kernels: indexed distance, radius mask and blocked pairwise distance

`solutions/distances.py` has the production versions, each an MLX function on
`mx.fast.metal_kernel`:

- `indexed_distance(a, a_idx, b, b_idx, kind)` for `kind="ball"` or `"cube"`: one thread per
  pair, two index reads and two `packed_float3` point reads, the kind a template parameter.
  `within_radius(a, a_idx, b, b_idx, radius, kind)` is the fused filter of a radius search: it
  writes a bool mask (1 byte per pair) and never the distances (4 bytes).
- `pairwise_distance(p, q)`: puzzle 30 grown up. A threadgroup of 16x16 threads computes a
  64x64 block of the matrix, each thread 4x4 distances, so each staged point serves 64 pairs:
  for 1.6M pairs the device traffic is 1.09x the ideal of reading every point once and writing
  every distance once.

Both are differentiable with `mx.custom_function` VJPs built on kernels:

- the gradient of `d = |a_i - b_j|` is `(a_i - b_j) / d` for `a_i` and its negative for `b_j`
  (for the cube, the sign of the largest coordinate difference, shared evenly among ties, as
  MLX's `max` does). The indices repeat (a query point has many candidates), so the indexed
  VJP scatters with float **atomics**, the scatter-add of notebook 05;
- the pairwise VJP needs no atomics: a thread (for `q`) or a SIMD-group (for `p`) owns a point
  and sums over the other side, staged in threadgroup memory;
- at zero distance (a point and itself) MLX autodiff of `sqrt(sum(d * d))` gives NaN; ours give
  0, as `torch.cdist` does. Everywhere else they equal MLX autodiff of the plain-MLX code.

The cell below checks all three against plain MLX, compares a gradient with `mx.grad`, and
prints the simulator's traffic report for the pairwise kernel.
"""

REAL_KERNEL_SOURCES = (("solutions.distances", "INDEXED_SOURCE"),
                       ("solutions.distances", "PAIRWISE_SOURCE"))

REAL_KERNEL_REPORT = """\
### Reading the report

The report is the blocked `pairwise_distance` of `p` (200 points) and `q` (300 points): a
200x300 matrix of 60,000 distances.

- **grid (80, 64, 1), threadgroup (16, 16, 1)**: each threadgroup computes a block of 64x64
  distances (its 256 threads 16 each), so the 300 columns take 5 blocks and the 200 rows 4.
- **global reads, max 1 and 2,200 in all**: a thread stages at most one point into threadgroup
  memory (a single 12-byte load): per block 64 points of `p` and 64 of `q`, fewer at the edges.
- **global writes, max 16 and 60,000**: one per distance.
- **threadgroup reads 20, writes 1, barriers 1**: after one barrier a thread computes rows
  `ty, ty + 16, ...` by columns `tx, tx + 16, ...` of the block (4 x 4 = 16 distances): it reads
  each of its 4 points of `p` once and a point of `q` for every distance, 4 + 16 = 20.
- **SIMD-group efficiency 99%**: only the edge blocks have idle lanes.
- **traffic**: `p` is read once per block column (5 times: 12,000 bytes against 2,400) and `q`
  once per block row (4 times: 14,400 against 3,600); the 240,000 bytes of `out` dominate, so
  the total is 1.08x the ideal."""


REAL_KERNEL_CODE = """\
import metalsim
from solutions.distances import indexed_distance, pairwise_distance, simulate_pairwise
from solutions.distances import within_radius

a, b = mx.random.normal((500, 3)), mx.random.normal((700, 3))
a_idx, b_idx = mx.random.randint(0, 500, (5000,)), mx.random.randint(0, 700, (5000,))
diff = a[a_idx] - b[b_idx]
ball, cube = mx.sqrt(mx.sum(diff * diff, axis=-1)), mx.max(mx.abs(diff), axis=-1)
p, q = a[:200], b[:300]


def pairwise_mlx(p, q):
    d = p[:, None, :] - q[None, :, :]
    return mx.sqrt(mx.sum(d * d, axis=-1))


with metalsim.patch():   # simulated where MLX has no Metal; the real GPU on a Mac
    print("ball:", mx.allclose(indexed_distance(a, a_idx, b, b_idx, "ball"), ball).item())
    print("cube:", mx.allclose(indexed_distance(a, a_idx, b, b_idx, "cube"), cube).item())
    mask = within_radius(a, a_idx, b, b_idx, 1.0, "ball")
    print("mask:", mx.array_equal(mask, ball <= 1.0).item())
    print("pairwise:", mx.allclose(pairwise_distance(p, q), pairwise_mlx(p, q)).item())
    grad = mx.grad(lambda p: pairwise_distance(p, q).sum())(p)
    print("grad:", mx.allclose(grad, mx.grad(lambda p: pairwise_mlx(p, q).sum())(p)).item())
print(simulate_pairwise(p, q).report.summary())
"""


def _points(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random points with one decimal: readable in a verdict."""
    return np.round(rng.uniform(-3, 3, (n, 3)), 1).astype(np.float32)


def _grid_points(rng: np.random.Generator, n: int) -> np.ndarray:
    """Points with integer coordinates: many pairs lie exactly at an integer distance."""
    return rng.integers(-3, 4, (n, 3)).astype(np.float32)


def _indices(rng: np.random.Generator, high: int, n: int) -> np.ndarray:
    return rng.integers(0, high, n).astype(np.int32)


# --- 30 Pairwise Distance -------------------------------------------------------------------

PAIRWISE_HEADER = f"constant uint TILE = {TILE};\n\n" + LOAD_POINT

PAIRWISE_TEMPLATE = """\
threadgroup float3 p_tile[TILE];
threadgroup float3 q_tile[TILE];
uint i = thread_position_in_grid.y;   // row of out: point p[i]
uint j = thread_position_in_grid.x;   // column of out: point q[j]
uint local_i = thread_position_in_threadgroup.y;
uint local_j = thread_position_in_threadgroup.x;
// FILL ME IN (roughly 12 lines)
"""


def pairwise_distance_spec(p: mx.array, q: mx.array) -> mx.array:
    # out[i, j] = |p[i] - q[j]|, the Euclidean distance.
    diff = p[:, None, :] - q[None, :, :]
    return mx.sqrt(mx.sum(diff * diff, axis=-1))


def _pairwise_case(p: np.ndarray, q: np.ndarray) -> Case:
    n, m = p.shape[0], q.shape[0]
    return Case((p, q), (n, m), (-(-m // TILE) * TILE, -(-n // TILE) * TILE, 1),
                (TILE, TILE, 1))


def pairwise_distance_hidden(rng: np.random.Generator) -> list[Case]:
    p = _points(rng, 8)
    with_copies = np.concatenate([_points(rng, 8), p[::-1]])  # distance 0 between the copies
    return [
        _pairwise_case(_points(rng, 13), _points(rng, 11)),
        _pairwise_case(p, with_copies),
        _pairwise_case(_points(rng, 20), _points(rng, 5)),
        _pairwise_case(_points(rng, 3), _points(rng, 17)),
    ]


PAIRWISE_DISTANCE = Puzzle(
    number=30,
    slug="pairwise_distance",
    titles=("Pairwise Distance",),
    chapter=CHAPTER,
    description="""\
Compute the matrix of Euclidean distances between the points `p` (`N x 3`) and the points `q`
(`M x 3`): `out[i][j] = |p[i] - q[j]|`, stored row after row (`out[i * M + j]`). This is
`torch.cdist`, the first step of a k-nearest-neighbour search.

Thread `(j, i)` of the grid computes `out[i][j]`; threadgroups are 8 x 8, so a threadgroup
computes an 8 x 8 block of the matrix, which needs 8 points of `p` and 8 points of `q`. If
every thread loaded its own two points, each point would be read 8 times over. Instead,
**stage both tiles in threadgroup memory**: the threads of row 0 of the threadgroup load the
block's 8 points of `q` into `q_tile`, the threads of row 1 load its 8 points of `p` into
`p_tile`, and after a barrier every thread computes its distance from the tiles.

So each thread may read at most **1** point from device memory (`load_point` reads one in a
single 12-byte load) and write 1 distance. (This budget is what makes the tiles
necessary.) The general case: `N` and `M` need not be
multiples of 8, and some points of `q` coincide with points of `p` (distance 0).""",
    input_names=("p", "q"),
    spec=pairwise_distance_spec,
    visible=_pairwise_case(_points(np.random.default_rng(30), 6),
                           _points(np.random.default_rng(300), 10)),
    hidden=pairwise_distance_hidden,
    template=PAIRWISE_TEMPLATE,
    budget=Budget(global_reads=1, global_writes=1, threadgroup_reads=2, threadgroup_writes=1),
    hints=(
        "`N = p_shape[0]` and `M = q_shape[0]`. The block's first row is `i - local_i`, so "
        "the thread in row 1 and column `local_j` of the threadgroup loads point "
        "`i - local_i + local_j` of `p` into `p_tile[local_j]`; the thread in row 0 loads "
        "`q[j]` into `q_tile[local_j]`. Skip the loads past the end of `p` or `q`.",
        "`threadgroup_barrier(mem_flags::mem_threadgroup);` after the loads, outside any "
        "`if`: every thread of the threadgroup must reach it.",
        "Then, for threads inside the `(N, M)` output only: the distance is the length of "
        "the difference of the two staged points (`dot` of a `float3` with itself is its "
        "squared length).",
    ),
    solution_file="30_pairwise_distance.metal",
    header=PAIRWISE_HEADER,
)


# --- 31 Indexed Distance --------------------------------------------------------------------

INDEXED_TEMPLATE = """\
uint t = thread_position_in_grid.x;      // the pair
uint kind = thread_position_in_grid.y;   // 0: ball (Euclidean), 1: cube (Chebyshev)
// FILL ME IN (roughly 8 lines)
"""


def indexed_distance_spec(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array
                          ) -> mx.array:
    # Row 0: the Euclidean (ball) distance of every pair; row 1: the Chebyshev (cube) distance.
    diff = a[a_idx] - b[b_idx]
    ball = mx.sqrt(mx.sum(diff * diff, axis=-1))
    cube = mx.max(mx.abs(diff), axis=-1)
    return mx.stack([ball, cube])


def _indexed_case(a: np.ndarray, a_idx: np.ndarray, b: np.ndarray, b_idx: np.ndarray,
                  *extra: np.ndarray, output_dtype: str = "float32") -> Case:
    n = a_idx.size
    return Case((a, a_idx, b, b_idx, *extra), (2, n), (-(-n // WIDTH) * WIDTH, 2, 1),
                (WIDTH, 1, 1), output_dtype)


def _radius_search_candidates(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Sizes of the spec's puzzle tier (50 and 70 points, 500 pairs): random pairs with
    repeated indices, some pairs of coincident points, and one query with many candidates."""
    a, b = _points(rng, 50), _points(rng, 70)
    b[60:] = a[:10]                                   # b[60 + k] coincides with a[k]
    a_idx, b_idx = _indices(rng, 50, 500), _indices(rng, 70, 500)
    a_idx[:10], b_idx[:10] = np.arange(10), np.arange(60, 70)
    a_idx[100:164] = 7                                # one query point, 64 candidates
    return a, a_idx, b, b_idx


def indexed_distance_hidden(rng: np.random.Generator) -> list[Case]:
    small_a, small_b = _points(rng, 9), _points(rng, 4)
    return [
        _indexed_case(*_radius_search_candidates(rng)),
        _indexed_case(small_a, _indices(rng, 9, 33), small_b, _indices(rng, 4, 33)),
        _indexed_case(small_a, np.zeros(40, np.int32), small_b, _indices(rng, 4, 40)),
    ]


INDEXED_DISTANCE = Puzzle(
    number=31,
    slug="indexed_distance",
    titles=("Indexed Distance",),
    chapter=CHAPTER,
    description="""\
A radius search hands you **candidate pairs**: pair `t` is point `a[a_idx[t]]` and point
`b[b_idx[t]]`. Compute the distance of every pair, in both norms of a neighbourhood query:

- `out[0][t]`, the **ball** (Euclidean) distance `sqrt(dx² + dy² + dz²)`;
- `out[1][t]`, the **cube** (Chebyshev) distance `max(|dx|, |dy|, |dz|)`.

`out` is `2 x n`, stored row after row: `out[kind * n + t]`, with `n = a_idx_shape[0]`. The
grid is `(n rounded up to 32) x 2`: thread `(t, kind)` computes one distance, and the threads
past `n` must do nothing.

The indices repeat (a query point has many candidates), and nothing here needs to know that:
every pair is independent. There is nothing to share either, so no threadgroup memory: the
cost of this kernel is the bytes each pair reads. Each pair needs 2 point reads and 1
write; the score also counts the 2 index reads, so the budget is **4** global
reads (`a_idx[t]`, `b_idx[t]` and one `load_point` each) and 1 write. Loading the coordinates
one by one would be 8.""",
    input_names=("a", "a_idx", "b", "b_idx"),
    spec=indexed_distance_spec,
    visible=_indexed_case(_points(np.random.default_rng(31), 5),
                          np.array([0, 1, 2, 3, 4, 0, 0, 2, 4, 4, 1, 3], np.int32),
                          _points(np.random.default_rng(310), 6),
                          np.array([0, 1, 2, 3, 4, 5, 1, 5, 0, 2, 2, 3], np.int32)),
    hidden=indexed_distance_hidden,
    template=INDEXED_TEMPLATE,
    budget=Budget(global_reads=4, global_writes=1, threadgroup_reads=0, threadgroup_writes=0),
    hints=(
        "Guard first: `uint n = a_idx_shape[0]; if (t < n) { ... }`.",
        "`float3 diff = load_point(a, a_idx[t]) - load_point(b, b_idx[t]);` reads both points "
        "of the pair.",
        "Ball: `sqrt(dot(diff, diff))`. Cube: `float3 m = abs(diff);` then "
        "`max(max(m.x, m.y), m.z)`. Forget the `abs` and a negative difference never wins; "
        "forget the `sqrt` and you have the squared distance.",
        "Write `out[kind * n + t]`.",
    ),
    solution_file="31_indexed_distance.metal",
    header=LOAD_POINT,
)


# --- 32 Radius Mask -------------------------------------------------------------------------

RADIUS_MASK_TEMPLATE = """\
uint t = thread_position_in_grid.x;      // the pair
uint kind = thread_position_in_grid.y;   // 0: ball (Euclidean), 1: cube (Chebyshev)
// FILL ME IN (roughly 9 lines)
"""


def radius_mask_spec(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array,
                     radius: mx.array) -> mx.array:
    # Row 0: within the ball of the radius; row 1: within the cube. Inclusive: d <= radius.
    diff = a[a_idx] - b[b_idx]
    ball = mx.sqrt(mx.sum(diff * diff, axis=-1))
    cube = mx.max(mx.abs(diff), axis=-1)
    return mx.stack([ball <= radius[0], cube <= radius[0]])


def _mask_case(a: np.ndarray, a_idx: np.ndarray, b: np.ndarray, b_idx: np.ndarray,
               radius: float) -> Case:
    return _indexed_case(a, a_idx, b, b_idx, np.array([radius], np.float32),
                         output_dtype="bool_")


def radius_mask_hidden(rng: np.random.Generator) -> list[Case]:
    # Integer coordinates put many pairs exactly at distance 2 or 3 in both norms: ties.
    a, b = _grid_points(rng, 50), _grid_points(rng, 70)
    return [
        _mask_case(a, _indices(rng, 50, 500), b, _indices(rng, 70, 500), 3.0),
        _mask_case(a, _indices(rng, 50, 70), b, _indices(rng, 70, 70), 2.0),
        _mask_case(*_radius_search_candidates(rng), 2.5),
    ]


# Pairs chosen to lie exactly at the radius 3: (1, 2, 2) and (-2, -1, 2) in the ball,
# (-1, 0, 3) and (3, -3, 0) in the cube, (3, 0, 0) in both.
MASK_VISIBLE = (
    np.array([[0, 0, 0], [1, 2, 2], [3, 0, 0], [0, -1, 1], [2, 2, -1], [-1, 0, 3]], np.float32),
    np.array([1, 2, 0, 4, 3, 5, 0, 4, 1, 5, 2, 0], np.int32),
    np.array([[0, 0, 0], [3, 0, 0], [0, 3, 0], [1, 1, 1], [-2, -2, 1]], np.float32),
    np.array([0, 0, 2, 4, 3, 0, 1, 0, 4, 3, 2, 3], np.int32),
)

RADIUS_MASK = Puzzle(
    number=32,
    slug="radius_mask",
    titles=("Radius Mask",),
    chapter=CHAPTER,
    description="""\
The filter of a radius search, **fused**: for every candidate pair, decide whether it is a
neighbour, `dist <= radius`, and write only that bool. `out[0][t]` is the test in the ball
(Euclidean) norm, `out[1][t]` in the cube (Chebyshev) norm; `radius` is an array of one
element. The caller then keeps the pairs whose mask is true (a `nonzero` compaction) and
counts them per query point: those are the neighbour lists.

Computing the distance in a register and comparing it there saves writing a 4-byte float
per pair (and reading it back): the mask is 1 byte. The comparison is **inclusive**: a pair
exactly on the sphere or on the cube's surface is a neighbour. The hidden cases have points
with integer coordinates, so many pairs lie exactly at the radius.

Budget: 5 global reads (two indices, two points and the radius) and 1 write per thread.""",
    input_names=("a", "a_idx", "b", "b_idx", "radius"),
    spec=radius_mask_spec,
    visible=_mask_case(*MASK_VISIBLE, 3.0),
    hidden=radius_mask_hidden,
    template=RADIUS_MASK_TEMPLATE,
    budget=Budget(global_reads=5, global_writes=1, threadgroup_reads=0, threadgroup_writes=0),
    hints=(
        "Start from your Indexed Distance kernel: guard `t < a_idx_shape[0]`, load both "
        "points, compute the distance for `kind`.",
        "Then `out[kind * n + t] = d <= radius[0];` (a bool).",
        "`<` instead of `<=` drops the pairs exactly at the radius. Comparing "
        "`dot(diff, diff)` (the squared distance) needs `radius[0] * radius[0]` on the other "
        "side.",
    ),
    solution_file="32_radius_mask.metal",
    header=LOAD_POINT,
)


register(PAIRWISE_DISTANCE, INDEXED_DISTANCE, RADIUS_MASK)
