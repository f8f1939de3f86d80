"""Notebook 04: matrix multiply (puzzles 18-20).

Puzzles 18 and 19 are Metal-Puzzles' "Matmul (Simple)" and "Matmul (Full)" (19 is also titled
"Matmul (Tiled)"); puzzle 20 uses `simdgroup_matrix`. The notebook ends with the GEMM real
kernel (`solutions/gemm.py`).
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np

from puzzles.catalog import GLOBAL_INDEX_X, Budget, Case, Puzzle, register

CHAPTER = "ch04_matmul"
TITLE = "Matrix multiply"

TILE = 3  # THREADGROUP_MEM_SIZE of puzzles 18 and 19, as in Metal-Puzzles

INTRO = [
    """\
# 04 · Matrix multiply

`out = a @ b` is the operation GPUs are built for: every layer of a neural network is one.
Each output element `out[i][j]` is the dot product of row `i` of `a` with column `j` of `b`.

## Reuse through threadgroup memory

Computed naively, each thread reads a whole row of `a` and a whole column of `b` from device
memory: for `n x n` matrices that is `2n` global reads per thread and `2n^3` in all, while the
inputs hold only `2n^2` numbers. Every number is read `n` times over.

**Tiling** fixes that. A threadgroup computes a square tile of `out`. It walks along the shared
dimension `k` one tile at a time: its threads copy one tile of `a` and one tile of `b` into
threadgroup memory (one element each), wait at a barrier, multiply the two tiles out of
threadgroup memory, and wait again before the next tile overwrites them. Each element copied
from device memory is now used by a whole row or column of the tile, so device reads drop by
the tile size.""",
    """\
## `simdgroup_matrix`: a SIMD-group multiplies 8x8 matrices

Apple GPUs have instructions in which the 32 threads of a SIMD-group multiply small matrices
together. In Metal they appear as the type `simdgroup_float8x8` (also `simdgroup_half8x8`): an
8x8 matrix whose 64 elements are spread over the registers of the SIMD-group's 32 threads, two
per thread. You never index it; you work on it as a whole:

| call | what it does |
| --- | --- |
| `simdgroup_float8x8(0.0f)` | a zero matrix (`(1.0f)` gives the identity) |
| `simdgroup_load(m, p, stride, ulong2(col, row))` | load the 8x8 block at `p[row * stride + col]` |
| `simdgroup_multiply_accumulate(d, x, y, c)` | `d = x * y + c` (matrix product) |
| `simdgroup_store(m, p, stride, ulong2(col, row))` | store `m` into that block |

`stride` is the number of elements in one row of the memory the block lies in (the row length
of the whole matrix), and `ulong2(col, row)` is the block's origin, **column first**. All 32
threads of the SIMD-group must execute each of these calls together: never put them inside a
branch that only some lanes take.""",
]

OUTRO = """\
### What you have learned

- Tiling turns `n` device reads of every input element into `n / tile`: threadgroup memory is
  the cache you manage yourself, with one barrier after filling a tile and one before refilling.
- `simdgroup_matrix` lets a SIMD-group multiply 8x8 tiles in a few instructions; a fast GEMM
  combines both: threadgroup tiles staged through threadgroup memory, and several SIMD-groups
  each multiplying their 8x8 pieces of them.
"""

REAL_KERNEL_MARKDOWN = """\
## The real kernel: tiled GEMM with `simdgroup_matrix`

`solutions/gemm.py` multiplies `(M, K) @ (K, N)` matrices of any size, in float32 or half:

- each threadgroup computes a tile of the output, 64x64 for square matrices; each of its
  SIMD-groups owns a 32x32 block of it, that is 4x4 `simdgroup_matrix` accumulators;
- the threadgroup walks along `K` 16 columns at a time: its threads copy a 16-deep slice of
  `a`'s and `b`'s tiles into threadgroup memory with 4-wide loads (zeros past the edges of the
  matrices), and after a barrier every SIMD-group multiplies its 8x8 pieces with
  `simdgroup_multiply_accumulate`;
- at the end each thread writes the two elements of every accumulator that live in its
  registers (`thread_elements()`), skipping those outside the matrix.

Traffic is honest here: a tile of `a` is re-read by every threadgroup of its tile row, so with
64x64 tiles `a` is read `N / 64` times and `b` `M / 64` times, 3x the read-once ideal for
256x256 matrices. That is what tiling buys: without it they would be read `N` and `M` times.
The tile shape decides the re-reads, so the kernel picks it per shape, as MLX's own GEMM does:
a point-cloud layer (16,384 points times a 64x64 weight matrix) gets 256x64 tiles, reads the
points once and moves 1.12x the ideal. An output too small to keep the GPU busy, like that
layer's 64x64 weight gradient summed over all the points, is split along `K` instead: slices of
the points go to their own threadgroups and their partial products are summed (split-K). The
cell below checks the kernel against `mx.matmul` and prints the simulator's traffic report.

The kernel can also read either operand transposed in place (`simdgroup_load` with
`transpose = true`), which is all its gradient needs: `dA = dC @ B^T` and `dB = A^T @ dC` are
this same kernel again, without copying a transpose.
"""

REAL_KERNEL_SOURCES = (("solutions.gemm", "SOURCE"),)

REAL_KERNEL_REPORT = """\
### Reading the report

`a` is 100x72 and `b` 72x50, so `out` is 100x50 (5,000 floats). For this shape the kernel
picks 64x64 output tiles and threadgroups of 128 threads (4 SIMD-groups, each owning 32x32).

- **grid (128, 2, 1), threadgroup (128, 1, 1)**: one tile column (50 columns fit in 64) and two
  tile rows (100 rows need two 64-row tiles): 2 threadgroups.
- **global reads, max 28**: a thread's share of copying the 16-deep slices of `a`'s and `b`'s
  tiles into threadgroup memory, 4 elements per load, over the 5 slices of `K` = 72 (the last
  one partly zeros). **global writes, max 32**: a SIMD-group's 32x32 block is 1,024 elements,
  32 per lane; only the 5,000 inside the matrix are written.
- **threadgroup reads 160 and writes 20, barriers 10**: per slice a thread stores its loads,
  waits, reads the 8x8 pieces its SIMD-group multiplies, and waits again before the next slice
  overwrites them: 2 barriers x 5 slices.
- **SIMD-group efficiency 95%**: at the edges of the matrix some lanes have nothing to copy.
- **traffic**: `a`'s rows each belong to one tile row, and there is one tile column, so `a` is
  read once (28,800 bytes, its ideal); `b` is read by both tile rows, twice its ideal; `out` is
  written once. 77,600 bytes against 63,200: 1.23x."""


REAL_KERNEL_CODE = """\
import metalsim
from solutions.gemm import gemm, simulate

a, b = mx.random.normal((100, 72)), mx.random.normal((72, 50))
with metalsim.patch():   # simulated where MLX has no Metal; the real GPU on a Mac
    print("float32 matches mx.matmul:", mx.allclose(gemm(a, b), a @ b, atol=1e-3).item())
    ah, bh = a.astype(mx.float16), b.astype(mx.float16)
    print("half matches mx.matmul:", mx.allclose(gemm(ah, bh), ah @ bh, atol=5e-2).item())
print(simulate(a, b).report.summary())
"""


def matmul_spec(a: mx.array, b: mx.array) -> mx.array:
    return a @ b


def _values(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Random values with one decimal: readable in a verdict, not integers."""
    return np.round(rng.uniform(-3, 3, shape), 1).astype(np.float32)


def _seed_inputs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Metal-Puzzles' inputs: `a = arange(n*n).reshape(n, n)` and `b = a.T`."""
    a = np.arange(n * n, dtype=np.float32).reshape(n, n)
    return a, np.ascontiguousarray(a.T)


def _tiled_case(a: np.ndarray, b: np.ndarray, grid: int) -> Case:
    n = a.shape[0]
    return Case((a, b), (n, n), (grid, grid, 1), (TILE, TILE, 1))


# --- 18 Matmul (Simple) and 19 Matmul (Tiled) ----------------------------------------------

MATMUL_HEADER = f"constant uint THREADGROUP_MEM_SIZE = {TILE};\n"

# Metal-Puzzles' template, whose index lines are longer than this code base's line limit.
MATMUL_TEMPLATE = (
    "threadgroup float a_shared[THREADGROUP_MEM_SIZE][THREADGROUP_MEM_SIZE];\n"
    "threadgroup float b_shared[THREADGROUP_MEM_SIZE][THREADGROUP_MEM_SIZE];\n\n"
    # x runs along columns and y along rows, as everywhere: `i` is the row, `j` the column.
    + GLOBAL_INDEX_X.replace(".x", ".y")
    + GLOBAL_INDEX_X.replace("uint i", "uint j")
    + "\nuint local_i = thread_position_in_threadgroup.y;\n"
    "uint local_j = thread_position_in_threadgroup.x;\n"
    "// FILL ME IN (roughly {lines} lines)\n"
)


def matmul_simple_hidden(rng: np.random.Generator) -> list[Case]:
    return [_tiled_case(_values(rng, (n, n)), _values(rng, (n, n)), TILE) for n in (2, 3, 1)]


MATMUL_SIMPLE = Puzzle(
    number=18,
    slug="matmul_simple",
    titles=("Matmul (Simple)",),
    chapter=CHAPTER,
    description="""\
`out` is the matrix product of the square matrices `a` and `b`: `out[i][j]` is the sum
over `k` of `a[i][k] * b[k][j]`. Here the matrices are small (at most 3x3) and a single 3x3
threadgroup covers the whole output: the thread in row `i` (the grid's `y`) and column `j`
(its `x`) computes `out[i][j]`. Matrices are stored
row by row, so `a[i][k]` is `a[i * size + k]`, with `size = a_shape[0]`.

Each thread may read only **2** elements from device memory, yet needs a whole row of `a`
and a whole column of `b`. So share: every thread copies one element of `a` and one of `b`
into the threadgroup arrays `a_shared` and `b_shared`, and after a barrier computes its dot
product from there. Some threads lie outside the matrix: they must not read or write it.""",
    input_names=("a", "b"),
    spec=matmul_spec,
    visible=_tiled_case(*_seed_inputs(2), TILE),
    hidden=matmul_simple_hidden,
    template=MATMUL_TEMPLATE.format(lines=12),
    budget=Budget(global_reads=2, global_writes=1),
    hints=(
        "If `i < size && j < size`, copy `a[i * size + j]` into `a_shared[local_i][local_j]`, "
        "and likewise for `b`.",
        "Put the `threadgroup_barrier(mem_flags::mem_threadgroup)` outside any `if`, so that "
        "every thread reaches it.",
        "Then, for threads inside the matrix, sum `a_shared[local_i][k] * b_shared[k][local_j]` "
        "over `k < size` and write `out[i * size + j]`.",
    ),
    solution_file="18_matmul_simple.metal",
    header=MATMUL_HEADER,
    kernel_name="matmul",
)


def matmul_tiled_hidden(rng: np.random.Generator) -> list[Case]:
    # The grid covers the matrix with 3x3 threadgroups; 8 and 7 leave partial tiles.
    return [_tiled_case(_values(rng, (n, n)), _values(rng, (n, n)), -(-n // TILE) * TILE)
            for n in (8, 5, 9, 7)]


MATMUL_TILED = Puzzle(
    number=19,
    slug="matmul_tiled",
    titles=("Matmul (Tiled)", "Matmul (Full)"),
    chapter=CHAPTER,
    description="""\
The same product, now for 8x8 matrices with 3x3 threadgroups: the threadgroup at
`threadgroup_position_in_grid` computes one 3x3 tile of `out`, and a tile of `a` no longer
fits in `a_shared`.

Walk along `k` one tile at a time. For each step, every thread copies one element of `a`
(from its row `i`, in the current tile of columns) and one of `b` (from its column `j`, in the
current tile of rows) into threadgroup memory, waits at a barrier, adds the partial dot product
of the two tiles to a running sum in a register, and waits at a **second** barrier before the
next step overwrites the tiles.

8 is not a multiple of 3: the last tiles stick out of the matrix. Fill their missing elements
with 0, which adds nothing to a dot product. You need 6 global reads per thread (one element of
each matrix for each of the 3 tiles) and 1 write. The general case: any size up to 9.""",
    input_names=("a", "b"),
    spec=matmul_spec,
    visible=_tiled_case(*_seed_inputs(8), 9),
    hidden=matmul_tiled_hidden,
    template=MATMUL_TEMPLATE.format(lines=19),
    budget=Budget(global_reads=6, global_writes=1),
    hints=(
        "Loop `for (uint k0 = 0; k0 < size; k0 += THREADGROUP_MEM_SIZE)`. In step `k0`, thread "
        "`(local_i, local_j)` copies `a[i][k0 + local_j]` and `b[k0 + local_i][j]`.",
        "Copy 0 instead when the element lies outside the matrix (check both its row and its "
        "column), so the tile product needs no bounds checks.",
        "The second barrier, at the end of each step, keeps a fast thread from overwriting a "
        "tile that a slower thread is still reading; the simulator reports the race if it is "
        "missing.",
        "Write `out[i * size + j]` after the loop, only if `i < size && j < size`.",
    ),
    solution_file="19_matmul_tiled.metal",
    header=MATMUL_HEADER,
    kernel_name="matmul",
    cases_by_title={"Matmul (Full)": _tiled_case(*_seed_inputs(8), 9)},
)


# --- 20 SIMD-group Matmul ------------------------------------------------------------------

SIMDGROUP_MATMUL_TEMPLATE = """\
uint tile_row = threadgroup_position_in_grid.y;
uint tile_col = threadgroup_position_in_grid.x;
uint K = a_shape[1];
uint N = b_shape[1];
simdgroup_float8x8 acc = simdgroup_float8x8(0.0f);
// FILL ME IN (roughly 7 lines)
"""


def _simdgroup_case(a: np.ndarray, b: np.ndarray) -> Case:
    m, n = a.shape[0], b.shape[1]
    return Case((a, b), (m, n), (32 * (n // 8), m // 8, 1), (32, 1, 1))


def simdgroup_matmul_hidden(rng: np.random.Generator) -> list[Case]:
    return [_simdgroup_case(_values(rng, (m, k)), _values(rng, (k, n)))
            for m, k, n in ((8, 8, 8), (16, 24, 8), (24, 16, 32))]


SIMDGROUP_MATMUL = Puzzle(
    number=20,
    slug="simdgroup_matmul",
    titles=("SIMD-group Matmul",),
    chapter=CHAPTER,
    description="""\
Multiply `a` (`M x K`) by `b` (`K x N`) with `simdgroup_matrix`. All sizes are multiples of 8.
Each threadgroup is a single SIMD-group of 32 threads and computes one 8x8 tile of `out`: the
tile in tile-row `tile_row` and tile-column `tile_col`.

Start from the zero matrix `acc`. For every `k` in steps of 8, load the 8x8 tile of `a` at rows
`8 * tile_row ...`, columns `k ...`, and the tile of `b` at rows `k ...`, columns
`8 * tile_col ...`; multiply-accumulate them into `acc`. Finally store `acc` into its tile of
`out`.

Remember the two details of `simdgroup_load`/`simdgroup_store`: the stride is the row length
of the **whole** matrix (`K` for `a`, `N` for `b` and `out`), and the origin is
`ulong2(column, row)`. The matrices are not all square in the general case, so a mix-up shows.
There is no budget: the point is the 8x8 matrix instructions.""",
    input_names=("a", "b"),
    spec=matmul_spec,
    visible=_simdgroup_case(*_seed_inputs(8)),
    hidden=simdgroup_matmul_hidden,
    template=SIMDGROUP_MATMUL_TEMPLATE,
    budget=Budget(),
    hints=(
        "Loop `for (uint k = 0; k < K; k += 8)` and declare `simdgroup_float8x8 a_tile, "
        "b_tile;` inside.",
        "`simdgroup_load(a_tile, a, K, ulong2(k, tile_row * 8));` loads a tile of `a`; the "
        "tile of `b` starts at column `tile_col * 8`, row `k`.",
        "Each step adds the product of the two loaded tiles to `acc` (one call does multiply "
        "and add); after the loop, store `acc` at the output tile's origin. In which order "
        "does that origin give column and row?",
    ),
    solution_file="20_simdgroup_matmul.metal",
)


register(MATMUL_SIMPLE, MATMUL_TILED, SIMDGROUP_MATMUL)
