"""Notebook 01, threads and grids: puzzles 1-7 (Map ... Threadgroups 2D).

Names, shapes and launch sizes of the visible cases are those of Metal-Puzzles. Hidden cases
draw random values, at the visible sizes and at other sizes drawn from the seed (2-D ones tall
and wide), launched as each puzzle's text says: a kernel that hard-codes the visible answer, the
visible sizes, or swaps rows and columns fails.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np

from puzzles.catalog import GLOBAL_INDEX_X, Budget, Case, Puzzle, register, resized_cases

TITLE = "Threads and grids"

INTRO = [
    """\
# 01 · Threads and grids

A GPU runs the same small function, a **kernel**, on thousands of **threads** at once. Each
thread is told where it stands, and from that it works out which piece of the data is its own.
In these puzzles you write that function in the Metal Shading Language (a dialect of C++) and
launch it from Python with MLX's `mx.fast.metal_kernel`.

You write only the kernel's *body*. MLX generates the signature around it: every input becomes
a `const device T*` buffer named as in `input_names`, every output a `device T*` named as in
`output_names`, and any thread attribute your body mentions (such as `thread_position_in_grid`)
becomes a parameter. Mention `a_shape`, `a_strides` or `a_ndim` and you get the shape, strides
and rank of input `a` too. Set the environment variable `VERBOSE=1` to print the full generated
source.

`MetalKernel(...)` takes exactly the arguments of `mx.fast.metal_kernel`, and `MetalProblem`
launches it. `problem.show()` prints how many global (device memory) reads and writes the
busiest thread made; `problem.check()` runs your kernel on the visible inputs *and* on hidden
random ones, compares with the spec, and checks the per-thread budget. Everything runs in
**metalsim**, a faithful Metal simulator, so no Mac is needed; it also reports out-of-bounds
accesses, data races and other bugs, pointing at your line. On a Mac, `check()` runs the real
GPU as well. Stuck? `problem.hint()` prints a hint; call it again for the next one.""",
    """\
## The grid

`grid=(x, y, z)` says how many threads to launch in each dimension: MLX counts **threads**,
not threadgroups. Each thread finds its coordinates in `thread_position_in_grid` (a `uint3`;
use `.x`, `.y`, `.z`). Memory is flat: a 2D array of shape `(rows, cols)` in row-major order
keeps element `[r][c]` at index `r * cols + c`.

Launches often have more threads than elements (sizes are rounded up to convenient numbers), so
a thread must check that its position is inside the data before touching memory. Reading or
writing past the end of a buffer is undefined behaviour on a real GPU: it may silently corrupt
other data. The simulator reports it as an error.""",
    """\
## Threadgroups

Threads are launched in **threadgroups** of `threadgroup=(x, y, z)` threads. A threadgroup runs
on one GPU core; its threads can share fast threadgroup memory and wait for each other (the next
notebook). Inside a kernel:

- `threadgroup_position_in_grid`: which threadgroup this thread belongs to;
- `thread_position_in_threadgroup`: the thread's position inside its threadgroup;
- `threads_per_threadgroup`: the size of this threadgroup.

So `threadgroup_position_in_grid.x * threads_per_threadgroup.x +
thread_position_in_threadgroup.x` equals `thread_position_in_grid.x` in every full threadgroup.
A threadgroup has at most 1024 threads. When the grid is not a multiple of the threadgroup size,
the last threadgroup in that dimension is smaller, and `threads_per_threadgroup` reports its real
size — so in that last threadgroup the formula above goes wrong (the simulator reports the
resulting clash as a race). `dispatch_threads_per_threadgroup`, the size requested at launch,
or simply `thread_position_in_grid`, is right everywhere.""",
]

OUTRO = """\
You can now map a function over arrays of any shape with as many threadgroups as you like:
each thread reads what it needs once and writes its result once. The next notebook lets the
threads of a threadgroup cooperate through threadgroup memory."""

REAL_KERNEL_MARKDOWN = """\
## The real kernel: axpby with broadcasting

`z = alpha * x + beta * y`, the example kernel of MLX's extension documentation, written the way
a production kernel is: each thread handles four consecutive elements with vectorized `float4`
loads and stores (with a scalar tail), and inputs that are broadcast or strided are read in
place through `elem_to_loc` instead of being copied. It is compared with `alpha * x + beta * y`
in MLX; its memory traffic is the ideal one, every input element read once and every output
element written once. `axpby` is differentiable too: its backward is a kernel that writes
`alpha * cot` and `beta * cot` in one pass, after MLX sums the cotangent over the axes along
which an operand was broadcast. The source is in `solutions/axpby.py`."""

REAL_KERNEL_SOURCES = (("solutions.axpby", "CONTIGUOUS_SOURCE"),
                       ("solutions.axpby", "GENERAL_SOURCE"))

REAL_KERNEL_REPORT = """\
### Reading the report

`y` has shape `(37,)` and `x` `(1000, 37)`, so the shapes differ and the general (broadcasting)
kernel runs. Line by line:

- **grid (10, 1000, 1)**: one thread per 4 columns (37 columns need 10 threads; the last one
  has a single column) and one row of threads per row of `x`.
- **threadgroup (10, 25, 1)**: 250 threads, 10 columns by 25 rows. A threadgroup of 256 threads
  in `x` alone would be clamped to the grid's 10 columns: 10 threads per threadgroup, and each
  SIMD-group of 32 lanes would run with 22 of them empty (an efficiency of 31%). Stacking rows
  fills the SIMD-groups.
- **max/thread and total**: a thread reads 4 elements of `x` and 4 of `y` (8 global reads) and
  writes 4 (the general path moves them one by one along the row); in all 74,000 reads and
  37,000 writes, 2 and 1 per output element. No threadgroup memory, atomics or barriers.
- **SIMD-group efficiency 96%**: the share of lanes that are active, averaged over the
  statements the SIMD-groups execute. The threads of the last column run their loop once
  where the others run it four times, so their SIMD-groups run part of the loop with lanes idle.
- **traffic**: bytes each buffer moved against its ideal. `x` and `out` are 37,000 floats,
  148,000 bytes, each touched once. `y` is read through a broadcast view of the output's shape,
  so its ideal also counts one read per output element that uses it; on a GPU the repeats of its
  37 values come from the cache.
- **traffic total 1.00x ideal**: nothing is read or written twice."""


REAL_KERNEL_CODE = """\
import metalsim
from solutions.axpby import axpby, simulate

x = mx.random.normal((1000, 37))
y = mx.random.normal((37,))          # broadcast along the rows
with metalsim.patch():   # simulated where MLX has no Metal; the real GPU on a Mac
    z = axpby(x, y, 2.0, -0.5)
print("matches MLX:", mx.allclose(z, 2.0 * x - 0.5 * y).item())
print(simulate(x, y, 2.0, -0.5).report.summary())"""


def map_spec(a: mx.array) -> mx.array:
    return a + 10


def zip_spec(a: mx.array, b: mx.array) -> mx.array:
    return a + b


def _case(*inputs: np.ndarray, grid: tuple[int, int, int],
          threadgroup: tuple[int, int, int] = (1, 1, 1), output_shape: tuple[int, ...] = ()
          ) -> Case:
    return Case(inputs=inputs, output_shape=output_shape or inputs[0].shape, grid=grid,
                threadgroup=threadgroup)


_int = np.int32

MAP = _case(np.arange(4, dtype=_int), grid=(4, 1, 1))
ZIP = _case(np.arange(4, dtype=_int), np.arange(4, dtype=_int), grid=(4, 1, 1))
GUARD = _case(np.arange(4, dtype=_int), grid=(8, 1, 1))
MAP_2D = _case(np.arange(4, dtype=_int).reshape(2, 2), grid=(3, 3, 1))
BROADCAST = _case(np.arange(2, dtype=_int).reshape(2, 1), np.arange(2, dtype=_int).reshape(1, 2),
                  grid=(3, 3, 1), output_shape=(2, 2))
THREADGROUPS = _case(np.arange(9, dtype=_int), grid=(12, 1, 1), threadgroup=(4, 1, 1))
THREADGROUPS_2D = _case(np.ones((5, 5), dtype=np.float32), grid=(6, 6, 1),
                        threadgroup=(3, 3, 1))

# Sizes of the hidden cases, never the visible ones: lengths for 1-D puzzles, sides for 2-D
# ones (from 4, so that Threadgroups 2D keeps more rows and columns than its 3x3 threadgroup).
LENGTHS = range(5, 33)
SIDES = range(4, 10)


def _lengths(rng: np.random.Generator, visible: int) -> list[int]:
    """Two distinct lengths other than the visible one."""
    return [int(n) for n in rng.choice([n for n in LENGTHS if n != visible], 2, replace=False)]


def _tall_and_wide(rng: np.random.Generator) -> list[tuple[int, int]]:
    """Two (rows, cols) shapes, one with more rows than columns and one with fewer."""
    short, long = sorted(int(n) for n in rng.choice(SIDES, 2, replace=False))
    return [(long, short), (short, long)]


def _past_the_end(n: int, width: int) -> int:
    """Whole threadgroups of `width` threads with more threads than `n` positions, as the
    visible launches of Threadgroups (9 in 12) and Threadgroups 2D (5 in 6) have."""
    return (n // width + 1) * width


def _ints(*shape: int) -> np.ndarray:
    return np.zeros(shape, dtype=_int)


def map_sizes(rng: np.random.Generator) -> list[Case]:
    """1 thread per position."""
    return [_case(_ints(n), grid=(n, 1, 1)) for n in _lengths(rng, MAP.inputs[0].size)]


def zip_sizes(rng: np.random.Generator) -> list[Case]:
    return [_case(_ints(n), _ints(n), grid=(n, 1, 1)) for n in _lengths(rng, ZIP.inputs[0].size)]


def guard_sizes(rng: np.random.Generator) -> list[Case]:
    """More threads than positions: twice as many, as the visible 8 threads for 4."""
    return [_case(_ints(n), grid=(2 * n, 1, 1)) for n in _lengths(rng, GUARD.inputs[0].size)]


def map_2d_sizes(rng: np.random.Generator) -> list[Case]:
    """One more thread than positions in each direction, as the visible 3x3 grid for 2x2."""
    return [_case(_ints(rows, cols), grid=(cols + 1, rows + 1, 1))
            for rows, cols in _tall_and_wide(rng)]


def broadcast_sizes(rng: np.random.Generator) -> list[Case]:
    return [_case(_ints(rows, 1), _ints(1, cols), grid=(cols + 1, rows + 1, 1),
                  output_shape=(rows, cols))
            for rows, cols in _tall_and_wide(rng)]


def threadgroups_sizes(rng: np.random.Generator) -> list[Case]:
    width = THREADGROUPS.threadgroup[0]
    return [_case(_ints(n), grid=(_past_the_end(n, width), 1, 1), threadgroup=(width, 1, 1))
            for n in _lengths(rng, THREADGROUPS.inputs[0].size)]


def threadgroups_2d_sizes(rng: np.random.Generator) -> list[Case]:
    width, height, _ = THREADGROUPS_2D.threadgroup
    return [Case(inputs=(np.zeros((rows, cols), np.float32),), output_shape=(rows, cols),
                 grid=(_past_the_end(cols, width), _past_the_end(rows, height), 1),
                 threadgroup=THREADGROUPS_2D.threadgroup)
            for rows, cols in _tall_and_wide(rng)]


ONE_READ_ONE_WRITE = Budget(global_reads=1, global_writes=1, threadgroup_reads=0,
                            threadgroup_writes=0)
TWO_READS_ONE_WRITE = Budget(global_reads=2, global_writes=1, threadgroup_reads=0,
                             threadgroup_writes=0)

register(
    Puzzle(
        number=1,
        slug="map",
        titles=("Map",),
        chapter="ch01_threads",
        description="""\
`out` gets every element of `a` plus 10. The grid has exactly one thread per element, so each
thread owns the element at its own position.

**Note:** `source` holds the kernel's *body* only. MLX writes the function around it, with one
buffer parameter per name in `input_names` and `output_names`. The values of `a` are `int32`
and `out` is `float32`; storing an `int` into it converts, as C++ does.""",
        input_names=("a",),
        spec=map_spec,
        visible=MAP,
        hidden=resized_cases(MAP, map_sizes),
        template="""\
uint local_i = thread_position_in_grid.x;
// FILL ME IN (roughly 1 line)
""",
        budget=ONE_READ_ONE_WRITE,
        hints=(
            "Each thread handles one position: the one at `local_i`.",
            "Read `a[local_i]`, add 10, and store the result in `out[local_i]`.",
            "One statement does it: which element of `a` does thread `local_i` read, and "
            "which element of `out` does it write?",
        ),
        solution_file="01_map.metal",
        kernel_name="map",
    ),
    Puzzle(
        number=2,
        slug="zip",
        titles=("Zip",),
        chapter="ch01_threads",
        description="""\
Two inputs this time: `out[i]` is `a[i] + b[i]`. Again one thread per element.""",
        input_names=("a", "b"),
        spec=zip_spec,
        visible=ZIP,
        hidden=resized_cases(ZIP, zip_sizes),
        template="""\
uint local_i = thread_position_in_grid.x;
// FILL ME IN (roughly 1 line)
""",
        budget=TWO_READS_ONE_WRITE,
        hints=(
            "Same as Map, with a second input: both inputs are indexed by `local_i`.",
            "The output element of thread `local_i` is `out[local_i]`: what goes on the right "
            "of the `=`?",
        ),
        solution_file="02_zip.metal",
        kernel_name="zip",
    ),
    Puzzle(
        number=3,
        slug="guard",
        titles=("Guard",),
        chapter="ch01_threads",
        description="""\
The same `+ 10` as Map, but the grid now has more threads than `a` has elements.

**Warning:** a thread whose position lies past the end of `a` must leave memory alone. Touching
a buffer outside its bounds is undefined behaviour on a GPU, and the checker calls it an error.

**Note:** for an input named `a`, the body may use `a_shape`, `a_strides` and `a_ndim` (the same
suffixes work for every input): `a_shape[0]` is how many elements `a` has.""",
        input_names=("a",),
        spec=map_spec,
        visible=GUARD,
        hidden=resized_cases(GUARD, guard_sizes),
        template="""\
uint local_i = thread_position_in_grid.x;
// FILL ME IN (roughly 1-3 lines)
""",
        budget=ONE_READ_ONE_WRITE,
        hints=(
            "8 threads run, but `a` has only 4 elements: threads 4-7 must do nothing.",
            "Compare `local_i` with `a_shape[0]` before reading or writing.",
            "The body of Map, inside an `if` that only the threads with an element enter. "
            "What is the last valid index of `a`?",
        ),
        solution_file="03_guard.metal",
        kernel_name="guard",
    ),
    Puzzle(
        number=4,
        slug="map_2d",
        titles=("Map 2D",),
        chapter="ch01_threads",
        description="""\
`+ 10` once more, now on a 2D `a` (square in the visible case, of any shape in the hidden
ones), with a 2D grid that is larger than `a` in both directions.

**Note:** a buffer is one flat run of elements, whatever its shape: in a row-major array of `n`
columns, `[row][col]` sits at `row * n + col`. In every notebook here the grid's `x` walks the
columns and `y` the rows (`z`, where it appears, the outermost axis).""",
        input_names=("a",),
        spec=map_spec,
        visible=MAP_2D,
        hidden=resized_cases(MAP_2D, map_2d_sizes),
        template="""\
uint thread_x = thread_position_in_grid.x;
uint thread_y = thread_position_in_grid.y;
// FILL ME IN (roughly 4 lines)
""",
        budget=ONE_READ_ONE_WRITE,
        hints=(
            "The grid is 3x3 but `a` is 2x2: guard both coordinates.",
            "`a_shape[0]` is the number of rows and `a_shape[1]` the number of columns; the "
            "flat index is `thread_y * a_shape[1] + thread_x`.",
        ),
        solution_file="04_map_2d.metal",
        kernel_name="map_2D",
    ),
    Puzzle(
        number=5,
        slug="broadcast",
        titles=("Broadcast",),
        chapter="ch01_threads",
        description="""\
`a` is a column of shape `(rows, 1)` and `b` a row of shape `(1, cols)`; their sum, broadcast
the way numpy and MLX broadcast, is the `rows x cols` matrix `out[i][j] = a[i] + b[j]`. The grid
is again larger than the output.""",
        input_names=("a", "b"),
        spec=zip_spec,
        visible=BROADCAST,
        hidden=resized_cases(BROADCAST, broadcast_sizes),
        template="""\
uint thread_x = thread_position_in_grid.x;
uint thread_y = thread_position_in_grid.y;
// FILL ME IN (roughly 4 lines)
""",
        budget=TWO_READS_ONE_WRITE,
        hints=(
            "Row `thread_y` of the output uses `a[thread_y]`; column `thread_x` uses "
            "`b[thread_x]`.",
            "The output has `a_shape[0]` rows and `b_shape[1]` columns: guard both, then write "
            "`out[thread_y * b_shape[1] + thread_x]`.",
        ),
        solution_file="05_broadcast.metal",
        kernel_name="broadcast",
    ),
    Puzzle(
        number=6,
        slug="threadgroups",
        titles=("Threadgroups",),
        chapter="ch01_threads",
        description="""\
`+ 10` on a 1D `a` that is longer than one threadgroup: the grid holds several threadgroups,
and together they have more threads than `a` has elements.

**Note:** the grid is cut into threadgroups, blocks of threads of a bounded size; there can be
as many of them as the data needs. `threadgroup_position_in_grid` says which block a thread
belongs to, and `thread_position_in_threadgroup` where it sits inside it.""",
        input_names=("a",),
        spec=map_spec,
        visible=THREADGROUPS,
        hidden=resized_cases(THREADGROUPS, threadgroups_sizes),
        template=GLOBAL_INDEX_X + """\
// FILL ME IN (roughly 1-3 lines)
""",
        budget=ONE_READ_ONE_WRITE,
        hints=(
            "`i` is already this thread's global index (the same as "
            "`thread_position_in_grid.x`).",
            "12 threads, 9 elements: guard with `a_shape[0]`.",
        ),
        solution_file="06_threadgroups.metal",
        kernel_name="threadgroups",
    ),
    Puzzle(
        number=7,
        slug="threadgroups_2d",
        titles=("Threadgroups 2D",),
        chapter="ch01_threads",
        description="""\
Threadgroups in two dimensions: the `+ 10` map over a 2D `a`, where one threadgroup is smaller
than `a` along both axes and the whole grid is larger.""",
        input_names=("a",),
        spec=map_spec,
        visible=THREADGROUPS_2D,
        hidden=resized_cases(THREADGROUPS_2D, threadgroups_2d_sizes),
        template=GLOBAL_INDEX_X + """\
// FILL ME IN (roughly 5 lines)
""",
        budget=ONE_READ_ONE_WRITE,
        hints=(
            "Compute the row index `j` the same way as `i`, from the `.y` components.",
            "`i` is the column and `j` the row: guard both against `a_shape`, then use "
            "`j * a_shape[1] + i`.",
        ),
        solution_file="07_threadgroups_2d.metal",
        kernel_name="threadgroups_2D",
    ),
)
