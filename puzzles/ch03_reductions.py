"""Notebook 03: reductions, scans and SIMD-groups (puzzles 12-17).

Puzzles 12 and 13 are Metal-Puzzles' "Prefix Sum" and "Axis Sum" (12 is renamed Block Sum: it
computes one sum per threadgroup, the first half of a prefix sum). Puzzles 14-17 add SIMD-group
functions and atomics. The notebook ends with the row-reduction real kernel
(`solutions/row_reduce.py`).
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np

from puzzles.catalog import GLOBAL_INDEX_X, Budget, Case, Puzzle, register

CHAPTER = "ch03_reductions"
TITLE = "Reductions, scans and SIMD-groups"

THREADGROUP_MEM_SIZE = 8  # puzzles 12 and 13, as in Metal-Puzzles
SIMD_WIDTH = 32
BLOCK = 256               # puzzles 15 and 16: threads per threadgroup
NUM_BINS = 16             # puzzle 17

INTRO = [
    """\
# 03 · Reductions, scans and SIMD-groups

So far every thread wrote its own output element. Now many threads must **combine** their
values into one: a sum, a maximum, a running total. This is a *reduction* (many values in, one
out) or a *scan* (a running total for every position). They are everywhere in machine
learning: softmax, layer norm, loss functions, attention.

## Tree reduction in threadgroup memory

Adding 8 numbers with one thread takes 7 dependent steps. With 8 threads it takes 3: first 4
threads each add a pair, then 2 threads add pairs of those, then 1 thread adds the last two.
Each step halves the number of partial sums, like the rounds of a tournament. The partial sums
live in threadgroup memory, and every step ends with a `threadgroup_barrier` so that the next
step reads finished values.""",
    """\
## SIMD-groups: 32 threads in lockstep

An Apple GPU runs the threads of a threadgroup in groups of 32 consecutive threads, called
**SIMD-groups** (CUDA calls them warps). The 32 threads of a SIMD-group execute the same
instruction at the same time, and they can exchange register values *directly*, with no
threadgroup memory and no barrier:

| function | what every lane gets |
| --- | --- |
| `simd_sum(x)` | the sum of `x` over the SIMD-group (also `simd_max`, `simd_min`) |
| `simd_prefix_inclusive_sum(x)` | the sum of `x` over lanes `0 ... lane` |
| `simd_prefix_exclusive_sum(x)` | the sum of `x` over lanes `0 ... lane - 1` (0 on lane 0) |
| `simd_shuffle_down(x, d)` | `x` of lane `lane + d` (the last `d` lanes keep their own) |
| `simd_broadcast(x, l)` | `x` of lane `l` |

A thread finds its place with two built-ins: `thread_index_in_simdgroup` (its *lane*, 0 to 31)
and `simdgroup_index_in_threadgroup` (which SIMD-group of the threadgroup it is in).

One rule matters: a SIMD-group function combines the lanes that **execute the call**. A lane
that skipped it (inside an `if` it did not enter, or after a `return`) is not counted. So call
`simd_sum` where every lane of the group gets to it, and branch afterwards.""",
    """\
## Atomics: many threads, one memory cell

When threads of different threadgroups must add into the same output element, no barrier can
order them. An **atomic** operation makes a read-modify-write indivisible:
`atomic_fetch_add_explicit(&out[k], 1, memory_order_relaxed)` adds 1 to `out[k]`, and no
concurrent update is lost. With `atomic_outputs=True` MLX declares every output as
`device atomic<T>*`, and `init_value=0` zero-fills them before the launch. Atomics on the same
cell are serialized by the hardware, so use them where threads really collide, and
reduce in registers or threadgroup memory first where you can.

A note on counting: an atomic add both reads and writes global memory, so the score table
counts it as one global read, one global write and one atomic.""",
]

OUTRO = """\
### What you have learned

- A **tree reduction** combines `n` values in `log2(n)` steps, with a barrier after each.
- A **SIMD-group** of 32 threads can sum, scan or shuffle values through registers with no
  barrier and no threadgroup memory; the threadgroup level only combines one value per
  SIMD-group.
- **Atomics** let threads of different threadgroups update the same cell safely; the hardware
  serializes colliding updates, so they are a tool for sparse collisions, not for reductions
  that a SIMD-group can do in registers.
"""

REAL_KERNEL_MARKDOWN = """\
## The real kernel: row reduction

`solutions/row_reduce.py` reduces each row of a `(rows, cols)` array to its sum or its maximum,
the building block of softmax and layer norm. One threadgroup handles one row:

1. each thread reads 4 consecutive elements at a time and moves on by 4 x (threads per
   threadgroup), accumulating in a register, so consecutive threads read consecutive memory;
2. `simd_sum` (or `simd_max`) combines the 32 lanes of each SIMD-group;
3. lane 0 of each SIMD-group writes its partial result to threadgroup memory, and after one
   barrier the first SIMD-group combines those partials and writes the row's result.

Every input element is read exactly once and every output written once, so the traffic equals
the ideal. The cell below runs it (on the GPU on a Mac, in the simulator elsewhere) and compares
it with `mx.sum` and `mx.max`. Both are differentiable through a backward kernel on the same
grid: the sum's gradient broadcasts the cotangent along the row, and the max's shares it evenly
among the elements equal to the maximum, as MLX's own gradient of `mx.max` does.
"""

REAL_KERNEL_SOURCES = (("solutions.row_reduce", "SOURCE"),)

REAL_KERNEL_REPORT = """\
### Reading the report

The report is that of `row_sum` over `x`'s 64 rows of 1,000 elements.

- **grid (256, 64, 1), threadgroup (256, 1, 1)**: one threadgroup of 256 threads per row.
- **global reads, max 1 and 16,000 in all**: each thread reads 4 consecutive elements in one
  4-wide load (a `float4` load counts as one read), so 250 threads cover a row's 1,000 elements
  and the other 6 read nothing: 64 x 250 = 16,000 loads.
- **global writes 64**: one per row, by one thread.
- **threadgroup reads and writes 512**: each of a row's 8 SIMD-groups stores its `simd_sum` in
  threadgroup memory and the first SIMD-group reads the 8 back: 64 rows x 8.
- **barriers 1**: the one barrier between the two levels of the reduction (16,384 = every
  thread once).
- **SIMD-group efficiency 96%**: the 6 threads without elements sit out the loads.
- **traffic**: `x` read once (256,000 bytes) and 64 floats written: 1.00x the ideal."""


REAL_KERNEL_CODE = """\
import metalsim
from solutions.row_reduce import row_max, row_sum, simulate

x = mx.random.normal((64, 1000))
with metalsim.patch():   # simulated where MLX has no Metal; the real GPU on a Mac
    print("sum matches mx.sum:", mx.allclose(row_sum(x), mx.sum(x, axis=-1), atol=1e-3).item())
    print("max matches mx.max:", mx.array_equal(row_max(x), mx.max(x, axis=-1)).item())
print(simulate(x, "sum").report.summary())
"""


def _values(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random values with one decimal: readable in a verdict, not integers."""
    return np.round(rng.uniform(-5, 5, n), 1).astype(np.float32)


def _integers(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random int32 values, for puzzles whose visible input is int32 (as in Metal-Puzzles):
    hidden cases keep the visible case's dtypes."""
    return rng.integers(-20, 20, n).astype(np.int32)


# --- 12 Block Sum ---------------------------------------------------------------------------

BLOCK_SUM_HEADER = f"constant uint THREADGROUP_MEM_SIZE = {THREADGROUP_MEM_SIZE};\n"

BLOCK_SUM_TEMPLATE = "threadgroup float cache[THREADGROUP_MEM_SIZE];\n" + GLOBAL_INDEX_X + """\
uint local_i = thread_position_in_threadgroup.x;
// FILL ME IN (roughly 14 lines)
"""


def block_sum_spec(a: mx.array) -> mx.array:
    # One sum per threadgroup of 8 elements; the last block counts missing elements as 0.
    size = 8
    blocks = (a.shape[0] + size - 1) // size
    padded = mx.pad(a.astype(mx.float32), [(0, blocks * size - a.shape[0])])
    return padded.reshape(blocks, size).sum(axis=1)


def _block_sum_case(a: np.ndarray) -> Case:
    blocks = -(-a.size // THREADGROUP_MEM_SIZE)
    return Case((a,), (blocks,), (blocks * THREADGROUP_MEM_SIZE, 1, 1),
                (THREADGROUP_MEM_SIZE, 1, 1))


def block_sum_simple_hidden(rng: np.random.Generator) -> list[Case]:
    """Metal-Puzzles' "Prefix Sum (Simple)": one threadgroup (the last of these is short)."""
    return [_block_sum_case(_values(rng, n)) for n in (8, 8, 5)]


def block_sum_hidden(rng: np.random.Generator) -> list[Case]:
    return [_block_sum_case(_integers(rng, n)) for n in (8, 15, 40, 3)]


BLOCK_SUM = Puzzle(
    number=12,
    slug="block_sum",
    titles=("Block Sum", "Prefix Sum (Simple)", "Prefix Sum (Full)"),
    chapter=CHAPTER,
    description="""\
Add up `a`, one total **per threadgroup** when `a` spans several: `out[g]` is
`a[8g] + ... + a[8g + 7]`, with elements past the end of `a` counting as 0. Each threadgroup
has 8 threads, one per element.

Use a **tree reduction** in the threadgroup array `cache`: every thread copies its element in,
then in each step the lower half of the threads adds the upper half's values onto its own,
until `cache[0]` holds the threadgroup's sum.

Metal-Puzzles calls this puzzle "Prefix Sum", after the algorithm it comes from: a parallel
prefix sum starts with exactly this reduction. You need 1 global read and 1 global write per
thread. You need to handle the general case: any length, several threadgroups.""",
    input_names=("a",),
    spec=block_sum_spec,
    visible=_block_sum_case(np.arange(15, dtype=np.int32)),
    hidden=block_sum_hidden,
    template=BLOCK_SUM_TEMPLATE,
    budget=Budget(global_reads=1, global_writes=1),
    hints=(
        "First let every thread copy its element into `cache[local_i]`, writing 0 when "
        "`i` is past the end of `a` (`a_shape[0]` is its length), then wait at a "
        "`threadgroup_barrier(mem_flags::mem_threadgroup)`.",
        "Loop with `stride = 4, 2, 1`: threads with `local_i < stride` add "
        "`cache[local_i + stride]` into `cache[local_i]`. Put a barrier at the end of every "
        "step, outside the `if`, so that all threads reach it.",
        "Only one thread writes the threadgroup's sum. Which one, and which element of `out` "
        "belongs to this threadgroup?",
    ),
    solution_file="12_block_sum.metal",
    header=BLOCK_SUM_HEADER,
    kernel_name="prefix_sum",
    cases_by_title={
        "Prefix Sum (Simple)": _block_sum_case(np.arange(8, dtype=np.int32)),
        "Prefix Sum (Full)": _block_sum_case(np.arange(15, dtype=np.int32)),
    },
    hidden_by_title={"Prefix Sum (Simple)": block_sum_simple_hidden},
)


# --- 13 Axis Sum ----------------------------------------------------------------------------

AXIS_SUM_TEMPLATE = "threadgroup float cache[THREADGROUP_MEM_SIZE];\n" + GLOBAL_INDEX_X + """\
uint local_i = thread_position_in_threadgroup.x;
uint batch = threadgroup_position_in_grid.y;
// FILL ME IN (roughly 16 lines)
"""


def axis_sum_spec(a: mx.array) -> mx.array:
    # The sum of each row, as a column.
    return mx.sum(a.astype(mx.float32), axis=1, keepdims=True)


def _axis_sum_case(a: np.ndarray) -> Case:
    rows = a.shape[0]
    return Case((a,), (rows, 1), (THREADGROUP_MEM_SIZE, rows, 1), (THREADGROUP_MEM_SIZE, 1, 1))


def axis_sum_hidden(rng: np.random.Generator) -> list[Case]:
    return [_axis_sum_case(_integers(rng, r * c).reshape(r, c))
            for r, c in ((4, 6), (6, 8), (3, 5), (5, 1))]


AXIS_SUM = Puzzle(
    number=13,
    slug="axis_sum",
    titles=("Axis Sum",),
    chapter=CHAPTER,
    description="""\
Compute the sum of each **row** of the 2D array `a` and store it in `out`, which has shape
`(rows, 1)`. Each row gets its own threadgroup of 8 threads: the threadgroup's `y` position,
`batch`, is the row it sums, and its threads are one per column.

This is the Block Sum of the last puzzle, once per row: the only new thing is finding where
row `batch` starts. Rows have at most 8 elements, but not always 8: read the row length from
`a_shape[1]`. You need 1 global read and 1 global write per thread.""",
    input_names=("a",),
    spec=axis_sum_spec,
    visible=_axis_sum_case(np.arange(24, dtype=np.int32).reshape(4, 6)),
    hidden=axis_sum_hidden,
    template=AXIS_SUM_TEMPLATE,
    budget=Budget(global_reads=1, global_writes=1),
    hints=(
        "`a` is stored row after row, so element `(batch, i)` is `a[batch * a_shape[1] + i]`. "
        "Threads with `i >= a_shape[1]` put 0 into the cache.",
        "From there it is Block Sum's tree reduction, with a barrier after the copy and after "
        "every step.",
        "`out` has one column: thread 0 of the threadgroup writes `out[batch]`.",
    ),
    solution_file="13_axis_sum.metal",
    header=BLOCK_SUM_HEADER,
)


# --- 14 SIMD Sum ----------------------------------------------------------------------------

SIMD_SUM_TEMPLATE = """\
uint i = thread_position_in_grid.x;
uint lane = thread_index_in_simdgroup;
// FILL ME IN (roughly 4 lines)
"""


def simd_sum_spec(a: mx.array) -> mx.array:
    # One sum per SIMD-group of 32 elements; the last group may be short.
    blocks = (a.shape[0] + 31) // 32
    padded = mx.pad(a.astype(mx.float32), [(0, blocks * 32 - a.shape[0])])
    return padded.reshape(blocks, 32).sum(axis=1)


def _simd_sum_case(a: np.ndarray, threadgroup: int) -> Case:
    return Case((a,), (-(-a.size // SIMD_WIDTH),), (a.size, 1, 1), (threadgroup, 1, 1))


def simd_sum_hidden(rng: np.random.Generator) -> list[Case]:
    # 80 threads make a last SIMD-group of only 16 lanes.
    return [_simd_sum_case(_values(rng, n), tg) for n, tg in ((64, 64), (256, 128), (80, 80))]


SIMD_SUM = Puzzle(
    number=14,
    slug="simd_sum",
    titles=("SIMD Sum",),
    chapter=CHAPTER,
    description="""\
Compute one sum per **SIMD-group**: `out[s]` is the sum of `a[32s], ..., a[32s + 31]`. There is
one thread per element.

No threadgroup memory this time, and no barrier: `simd_sum(x)` adds up `x` over the 32 lanes of
the SIMD-group and hands every lane the total. One lane then writes it.

You need 1 global read and 1 global write per thread, and no threadgroup memory at all. In the
general case the last SIMD-group may be short (80 elements make SIMD-groups of 32, 32 and 16
lanes): `simd_sum` adds whichever lanes exist.""",
    input_names=("a",),
    spec=simd_sum_spec,
    visible=_simd_sum_case(np.arange(64, dtype=np.float32), 64),
    hidden=simd_sum_hidden,
    template=SIMD_SUM_TEMPLATE,
    budget=Budget(global_reads=1, global_writes=1, threadgroup_reads=0, threadgroup_writes=0),
    hints=(
        "Every lane calls `simd_sum(a[i])` and gets the same total.",
        "If only one lane should write, call `simd_sum` *before* the `if`: inside "
        "`if (lane == 0)` only lane 0 executes it, so it sums one value.",
        "SIMD-group `s` covers elements `32s ... 32s + 31`, so lane 0 writes `out[i / 32]`.",
    ),
    solution_file="14_simd_sum.metal",
)


# --- 15 Block Reduce ------------------------------------------------------------------------

BLOCK_HEADER = (f"constant uint THREADS = {BLOCK};\n"
                f"constant uint SIMDGROUPS = THREADS / {SIMD_WIDTH};\n")

BLOCK_REDUCE_TEMPLATE = """\
threadgroup float partial[SIMDGROUPS];
uint i = thread_position_in_grid.x;
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;
// FILL ME IN (roughly 11 lines)
"""


def block_reduce_spec(a: mx.array) -> mx.array:
    # One sum per threadgroup of 256 elements (missing elements of the last one count as 0).
    blocks = -(-a.shape[0] // 256)
    return mx.pad(a, [(0, blocks * 256 - a.shape[0])]).reshape(blocks, 256).sum(axis=1)


def _block_case(a: np.ndarray, blocks_out: bool, grid: int | None = None) -> Case:
    """Threadgroups of 256 over `a`; the grid is `a.size` threads unless given (a length that
    is not a multiple of 256 then makes the last threadgroup partial)."""
    out = (-(-a.size // BLOCK),) if blocks_out else (a.size,)
    return Case((a,), out, (grid or a.size, 1, 1), (BLOCK, 1, 1))


def _partial_block_cases(rng: np.random.Generator, blocks_out: bool) -> list[Case]:
    """300 elements: a grid rounded up to whole threadgroups, and one of exactly 300 threads."""
    return [_block_case(_values(rng, 300), blocks_out, grid) for grid in (512, 300)]


def block_reduce_hidden(rng: np.random.Generator) -> list[Case]:
    return ([_block_case(_values(rng, n), True) for n in (1024, 2048, 256)]
            + _partial_block_cases(rng, True))


BLOCK_REDUCE = Puzzle(
    number=15,
    slug="block_reduce",
    titles=("Block Reduce",),
    chapter=CHAPTER,
    description="""\
Sum each threadgroup's block of `a`: `out[g]` is the sum of the 256 elements
`a[256g], ..., a[256g + 255]`. Threadgroups have 256 threads, that is 8 SIMD-groups.

This is how real GPU reductions work, in two levels:
1. each SIMD-group sums its 32 values with `simd_sum`, and one lane per SIMD-group stores that
   partial sum in `partial[sg]` (threadgroup memory);
2. after a barrier, one SIMD-group loads the 8 partial sums and adds them with `simd_sum`
   again.

The tree reduction of Block Sum needed 8 barriers for 256 values; this needs 1. You need 1
global read and 1 global write per thread. The general case: any length. The last block may be
short: the grid may be rounded up past the end of `a` (threads past the end add 0), or be
exactly `a`'s length, and then the last threadgroup is **partial**: it has fewer threads, and
fewer SIMD-groups (`simdgroups_per_threadgroup` says how many), than the others.""",
    input_names=("a",),
    spec=block_reduce_spec,
    visible=_block_case(np.arange(1024, dtype=np.float32), True),
    hidden=block_reduce_hidden,
    template=BLOCK_REDUCE_TEMPLATE,
    budget=Budget(global_reads=1, global_writes=1),
    hints=(
        "Level 1: every lane calls `simd_sum` on its element (0 past the end of `a`); lane 0 "
        "stores the result in `partial[sg]`; then a `threadgroup_barrier`. Where is that "
        "barrier, so that every thread reaches it?",
        "Level 2 runs in SIMD-group 0 (`if (sg == 0)`): lane `l` loads `partial[l]` when "
        "SIMD-group `l` exists in this threadgroup, and 0 otherwise. Which thread attribute "
        "tells how many SIMD-groups a (possibly partial) threadgroup has?",
        "Only one thread writes the block's sum. Which one, and to which element of `out`?",
    ),
    solution_file="15_block_reduce.metal",
    header=BLOCK_HEADER,
)


# --- 16 Scan --------------------------------------------------------------------------------

SCAN_TEMPLATE = """\
threadgroup float totals[SIMDGROUPS];
uint i = thread_position_in_grid.x;
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;
// FILL ME IN (roughly 9 lines)
"""


def scan_spec(a: mx.array) -> mx.array:
    # An inclusive prefix sum within each threadgroup's block of 256 elements.
    blocks = -(-a.shape[0] // 256)
    padded = mx.pad(a, [(0, blocks * 256 - a.shape[0])]).reshape(blocks, 256)
    return mx.cumsum(padded, axis=1).reshape(-1)[: a.shape[0]]


def scan_hidden(rng: np.random.Generator) -> list[Case]:
    return ([_block_case(_values(rng, n), False) for n in (256, 512, 1024)]
            + _partial_block_cases(rng, False))


SCAN = Puzzle(
    number=16,
    slug="scan",
    titles=("Scan",),
    chapter=CHAPTER,
    description="""\
Compute the **inclusive prefix sum** (scan) of each threadgroup's block of 256 elements:
`out[i]` is `a[start] + ... + a[i]`, where `start` is the first element of `i`'s threadgroup.
This is the prefix sum that Metal-Puzzles' "Prefix Sum" puzzle was named after: every
position gets its running total, not just the last one.

Again in two levels:
1. `simd_prefix_inclusive_sum(x)` scans within a SIMD-group: lane `l` gets the sum of lanes
   `0 ... l`, so lane 31 holds the SIMD-group's total. Store each SIMD-group's total in
   `totals[sg]`.
2. After a barrier, each thread adds the totals of all SIMD-groups *before* its own.

You need 1 global read and 1 global write per thread. The general case: any length, each
block scanned on its own; as in Block Reduce, the last block may be short, with the grid
rounded up past the end of `a` or a partial last threadgroup.""",
    input_names=("a",),
    spec=scan_spec,
    visible=_block_case(np.arange(BLOCK, dtype=np.float32), False),
    hidden=scan_hidden,
    template=SCAN_TEMPLATE,
    budget=Budget(global_reads=1, global_writes=1),
    hints=(
        "`float x = simd_prefix_inclusive_sum(a[i]);` on every lane; then "
        "`if (lane == 31) totals[sg] = x;` and a barrier.",
        "SIMD-group `sg` must add `totals[0] + ... + totals[sg - 1]`: a short loop over "
        "`g < sg` does it (SIMD-group 0 adds nothing).",
        "Each thread then writes its own `out[i]`.",
    ),
    solution_file="16_scan.metal",
    header=BLOCK_HEADER,
)


# --- 17 Histogram ---------------------------------------------------------------------------

HISTOGRAM_TEMPLATE = """\
uint i = thread_position_in_grid.x;
// FILL ME IN (roughly 1 line)
"""


def histogram_spec(a: mx.array) -> mx.array:
    # out[k] = how many elements of a equal k, for the 16 bins k.
    return mx.sum(a[:, None] == mx.arange(16)[None, :], axis=0).astype(mx.int32)


def _histogram_case(a: np.ndarray) -> Case:
    return Case((a,), (NUM_BINS,), (a.size, 1, 1), (64, 1, 1), output_dtype="int32")


def histogram_hidden(rng: np.random.Generator) -> list[Case]:
    skewed = np.minimum(rng.geometric(0.35, 512) - 1, NUM_BINS - 1)  # most values in bin 0
    return [
        _histogram_case(rng.integers(0, NUM_BINS, 256).astype(np.int32)),
        _histogram_case(rng.integers(0, NUM_BINS, 1000).astype(np.int32)),
        _histogram_case(skewed.astype(np.int32)),
    ]


HISTOGRAM = Puzzle(
    number=17,
    slug="histogram",
    titles=("Histogram",),
    chapter=CHAPTER,
    description=f"""\
Count how often each value occurs in `a`: `out[k]` is the number of elements equal to `k`. The
values of `a` are bin numbers from 0 to {NUM_BINS - 1}; there is one thread per element, in
threadgroups of 64.

Threads of different threadgroups increment the same bins, and no barrier orders threads of
different threadgroups: a plain `out[k] += 1` would lose updates. This kernel is built with
`atomic_outputs=True`, so `out` is a `device atomic<int>*`, and `init_value=0`, so every bin
starts at 0. Use `atomic_fetch_add_explicit(&out[k], 1, memory_order_relaxed)`.

You need 1 atomic per thread. The score counts an atomic add as a global read *and* a global
write (it reads the old count and writes the new one), so the budget is 2 global reads: one
for `a[i]` and one inside the atomic.""",
    input_names=("a",),
    spec=histogram_spec,
    visible=_histogram_case(np.random.default_rng(17).integers(0, NUM_BINS, 256)
                            .astype(np.int32)),
    hidden=histogram_hidden,
    template=HISTOGRAM_TEMPLATE,
    budget=Budget(global_reads=2, global_writes=1, atomics=1),
    hints=(
        "The bin of thread `i` is `a[i]`.",
        "Many threads may add to the same bin at once; `out` is atomic here. Which atomic "
        "function adds one to an element, and which memory order is enough for a counter?",
    ),
    solution_file="17_histogram.metal",
    atomic_outputs=True,
    init_value=0,
)


register(BLOCK_SUM, AXIS_SUM, SIMD_SUM, BLOCK_REDUCE, SCAN, HISTOGRAM)
