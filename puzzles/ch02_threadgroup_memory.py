"""Notebook 02, threadgroup memory: puzzles 8-11 (Threadgroup Memory ... 1D Convolution).

Names, shapes and launch sizes are those of Metal-Puzzles. Hidden cases draw random values; the
1D convolution ("the general case") also runs other lengths and kernel sizes over several
threadgroups, so the halo between threadgroups must be right.
"""

from __future__ import annotations

from dataclasses import replace

import mlx.core as mx
import numpy as np

from puzzles.catalog import (
    GLOBAL_INDEX_X,
    Budget,
    Case,
    Puzzle,
    partial_threadgroup_cases,
    random_cases,
    random_like,
    register,
)
from puzzles.ch01_threads import map_spec

TITLE = "Threadgroup memory"

INTRO = [
    """\
# 02 · Threadgroup memory

Device memory (where `a` and `out` live) is big and far away; every global read or write is
expensive. Each threadgroup also gets a small amount of fast, on-chip **threadgroup memory**
(at most 32 KiB), shared by its threads and by nobody else. It is how the threads of a
threadgroup cooperate: load a tile of the input once, then let every thread read its
neighbours' values from threadgroup memory instead of device memory.

Declare it inside the kernel with a size known at compile time:

```metal
threadgroup float shared[THREADGROUP_MEM_SIZE];
```

Each threadgroup gets its own fresh copy, with undefined contents until written. The `header`
argument of `MetalKernel` holds code placed before the kernel, such as the
`constant uint THREADGROUP_MEM_SIZE = 8;` that sizes the array.""",
    """\
## Barriers

Threads do not run in a fixed order. If thread 3 reads `shared[2]`, thread 2 must have written
it first, and nothing guarantees that unless every thread waits at a **barrier**:

```metal
shared[local_i] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);   // all writes above are now visible
out[i] = shared[local_i] + shared[local_i - 1];
```

`threadgroup_barrier` blocks each thread until every thread of its threadgroup has reached it,
and makes their threadgroup-memory writes visible to all. Two rules:

- A read of a value another thread writes needs a barrier between the write and the read;
  without one you have a **data race**, and the result depends on timing. The checker reports
  races as errors even when the numbers happen to come out right.
- Every thread of the threadgroup must reach the *same* barrier. A barrier inside an `if` that
  only some threads enter is a **divergent barrier** (on a real GPU, a hang or garbage).
  Threads that have already returned do not count.

Barriers synchronise one threadgroup only; threads of different threadgroups cannot wait for
each other inside a kernel.""",
]

OUTRO = """\
Threadgroup memory turns many global reads into one: each value is loaded once and shared. The
same idea, applied twice (the input tile and the filter), is what makes convolutions and matrix
multiplies fast. Next: reductions, where the threads of a threadgroup combine their values into
one."""

REAL_KERNEL_MARKDOWN = """\
## The real kernel: tiled 1D convolution

Puzzle 11's idea at realistic sizes (a million elements, filters of 31 taps): each threadgroup
loads its tile of the input plus the halo of `k - 1` elements past its end into threadgroup
memory, and the filter too, so every input element is read from device memory about once. It
computes what `mx.conv1d` computes for one channel (a "valid" convolution, with optional zero
padding on both ends) and is compared with it; the cell below keeps to 20,000 elements so the
simulator answers quickly. Its gradient is made of kernels too: the input's gradient is this
same kernel run on the cotangent with the filter reversed, and the filter's gradient a second
kernel that reduces `cot * x` over each tile's positions. The source is in
`solutions/conv1d.py`."""


REAL_KERNEL_SOURCES = (("solutions.conv1d", "SOURCE"),)

REAL_KERNEL_REPORT = """\
### Reading the report

A "valid" convolution of 20,000 elements with 31 taps has 20,000 - 31 + 1 = 19,970 outputs.

- **grid (5120, 1, 1), threadgroup (256, 1, 1)**: 20 threadgroups of 256 threads; each thread
  computes 4 consecutive outputs, so a threadgroup covers a tile of 1,024 outputs.
- **global reads, max 6 and 21,190 in all**: a thread loads its 4 elements of the tile, and
  some threads one more for the halo (the 30 elements past the tile's end) and one tap of the
  filter. In all: the 20,000 elements of `x`, 19 halos of 30 (the last tile has none past the
  end), and the 31 taps once per threadgroup (620).
- **global writes, max 4 and 19,970**: one per output.
- **threadgroup reads, max 248**: 4 outputs times 31 taps, each a read of the tile and one of
  the filter; **threadgroup writes** are the loads above, stored into the tile and the filter.
- **barriers 1**: one barrier between filling the tile and reading it.
- **SIMD-group efficiency 100%**: every lane runs every statement.
- **traffic**: `x` moved 82,280 bytes against 80,000 (the halos are read twice: 2.85% more);
  `w` 2,480 bytes against 124, since every threadgroup loads the 31 taps; `out` exactly its
  19,970 floats. In total 1.03x the ideal."""


REAL_KERNEL_CODE = """\
import metalsim
from solutions.conv1d import conv1d, simulate

x = mx.random.normal((20_000,))
w = mx.random.normal((31,))
with metalsim.patch():   # simulated where MLX has no Metal; the real GPU on a Mac
    y = conv1d(x, w)
expected = mx.conv1d(x[None, :, None], w[None, :, None])[0, :, 0]
print("matches mx.conv1d:", mx.allclose(y, expected, atol=1e-4).item())
print(simulate(x, w).report.summary())"""


def pooling_spec(a: mx.array) -> mx.array:
    # out[i] = a[i-2] + a[i-1] + a[i]: a running sum minus the running sum three places back.
    total = mx.cumsum(a)
    return total - mx.pad(total, (3, 0))[: a.shape[0]]


def dot_spec(a: mx.array, b: mx.array) -> mx.array:
    return mx.sum(a * b, keepdims=True)


def conv_spec(a: mx.array, b: mx.array) -> mx.array:
    # out[i] = sum_j a[i + j] * b[j], with a read as zero past its end.
    n, k = a.shape[0], b.shape[0]
    padded = mx.pad(a, (0, k - 1))
    return sum(padded[j : j + n] * b[j] for j in range(k))


def _f32(*shape: int, arange: bool = True) -> np.ndarray:
    n = int(np.prod(shape))
    return (np.arange(n) if arange else np.ones(n)).astype(np.float32).reshape(shape)


SHARED = Case(inputs=(_f32(8, arange=False),), output_shape=(8,), grid=(8, 1, 1),
              threadgroup=(4, 1, 1))
POOLING = Case(inputs=(np.arange(8, dtype=np.int32),), output_shape=(8,), grid=(8, 1, 1),
               threadgroup=(8, 1, 1))
DOT = Case(inputs=(_f32(8), _f32(8)), output_shape=(1,), grid=(8, 1, 1), threadgroup=(8, 1, 1))
CONV_SIMPLE = Case(inputs=(_f32(6), _f32(3)), output_shape=(6,), grid=(8, 1, 1),
                   threadgroup=(8, 1, 1))
CONV_FULL = Case(inputs=(_f32(15), _f32(4)), output_shape=(15,), grid=(16, 1, 1),
                 threadgroup=(8, 1, 1))

# Puzzle 8's first lines are given by the template, not written by the learner, and
# Metal-Puzzles' own template (which its notebook's learners run unchanged) puts the barrier
# inside `if (i < a_shape[0])` and computes `i` from `threads_per_threadgroup`, the size of the
# learner's own, possibly partial, threadgroup. Its hidden launches are those under which those
# given lines are right and that still test what the learner writes (the guard on the store): one
# threadgroup of 3 threads where 4 were asked for (MLX makes it partial), and a grid one whole
# threadgroup past the end of `a` (each threadgroup takes or skips the branch as one).
# Barriers and indices the learner writes (puzzles 9 on) get a grid rounded up past a partial
# tail and several threadgroups with a partial last one.
SHARED_LAUNCHES = (
    partial_threadgroup_cases(SHARED, 3, (3,))[1],
    replace(SHARED, grid=(12, 1, 1)),
)

# (length, filter taps) of the general-case hidden convolutions; threadgroups of 8 and at most
# 4 taps, as the header's THREADGROUP_MAX_CONV_SIZE = 8 + 4 allows.
CONV_SIZES = ((6, 3), (15, 4), (16, 4), (21, 2), (11, 1))


# The stepping stone, Metal-Puzzles' "1D Conv (Simple)": one threadgroup, so no halo.
CONV_SIMPLE_SIZES = ((6, 3), (8, 2), (5, 4))


def conv_simple_hidden(rng: np.random.Generator) -> list[Case]:
    """Random values, one threadgroup of 8: lengths up to 8, filters up to 4 taps."""
    return _conv_cases(rng, CONV_SIMPLE_SIZES)


def conv_hidden(rng: np.random.Generator) -> list[Case]:
    """Random values at the visible sizes and at other lengths, filters and grids."""
    return _conv_cases(rng, CONV_SIZES)


def _conv_cases(rng: np.random.Generator, sizes: tuple[tuple[int, int], ...]) -> list[Case]:
    cases = []
    for n, k in sizes:
        a = random_like(rng, np.zeros(n, np.float32), -5, 5)
        b = random_like(rng, np.zeros(k, np.float32), -5, 5)
        grid = (-(-n // 8) * 8, 1, 1)
        cases.append(Case(inputs=(a, b), output_shape=(n,), grid=grid, threadgroup=(8, 1, 1)))
    return cases


register(
    Puzzle(
        number=8,
        slug="threadgroup_memory",
        titles=("Threadgroup Memory",),
        chapter="ch02_threadgroup_memory",
        description="""\
`+ 10` again, with threadgroups smaller than `a`, but the value travels through
**threadgroup memory**, the scratch space the threads of one threadgroup share.

The given lines copy each thread's element into the threadgroup array and wait at a barrier
(placed outside the `if`, so every thread of the threadgroup arrives there). What is left is to
read the value back from that array. Nothing here really needs shared memory: the puzzle only
shows the mechanics.

**Note:** `header` is code placed ahead of the kernel function; here it declares the size of the
threadgroup array.""",
        input_names=("a",),
        spec=map_spec,
        visible=SHARED,
        hidden=random_cases(SHARED, also=SHARED_LAUNCHES),
        header="""\
constant uint THREADGROUP_MEM_SIZE = 4;
""",
        template="""\
threadgroup float shared[THREADGROUP_MEM_SIZE];
""" + GLOBAL_INDEX_X + """\
uint local_i = thread_position_in_threadgroup.x;

if (i < a_shape[0]) {
    shared[local_i] = a[i];
}
threadgroup_barrier(mem_flags::mem_threadgroup);

// FILL ME IN (roughly 1-3 lines)
""",
        budget=Budget(global_reads=1, global_writes=1, threadgroup_reads=1,
                      threadgroup_writes=1),
        hints=(
            "After the barrier, `shared[local_i]` holds `a[i]`.",
            "Only the threads with an element of `a` write; which element of `shared` holds "
            "the value thread `local_i` adds 10 to?",
        ),
        solution_file="08_threadgroup_memory.metal",
        kernel_name="threadgroup_memory",
    ),
    Puzzle(
        number=9,
        slug="pooling",
        titles=("Pooling",),
        chapter="ch02_threadgroup_memory",
        description="""\
Each output is a sliding sum of three: `out[i] = a[i-2] + a[i-1] + a[i]`, where terms before the
start of `a` are dropped. One thread per element.

**Note:** a thread may read device memory once and write it once. Copy the values into
threadgroup memory first, then take the neighbours from there.

**Tip:** the reads of a neighbour's value must come after a barrier that follows its write.""",
        input_names=("a",),
        spec=pooling_spec,
        visible=POOLING,
        hidden=random_cases(POOLING, also=partial_threadgroup_cases(POOLING, 6, (6,))),
        header="""\
constant uint THREADGROUP_MEM_SIZE = 8;
""",
        template="""\
threadgroup float shared[THREADGROUP_MEM_SIZE];
""" + GLOBAL_INDEX_X + """\
uint local_i = thread_position_in_threadgroup.x;
// FILL ME IN (roughly 11 lines)
""",
        budget=Budget(global_reads=1, global_writes=1, threadgroup_reads=3,
                      threadgroup_writes=1),
        hints=(
            "Step 1: every thread copies `a[i]` into `shared[local_i]`. Step 2: barrier. "
            "Step 3: add up to three values from `shared`.",
            "Threads 0 and 1 have fewer than two neighbours to the left: check `local_i >= 1` "
            "and `local_i >= 2` before reading `shared[local_i - 1]` and `shared[local_i - 2]`.",
            "Put the barrier outside any `if`, so every thread of the threadgroup reaches it.",
        ),
        solution_file="09_pooling.metal",
        kernel_name="pooling",
    ),
    Puzzle(
        number=10,
        slug="dot_product",
        titles=("Dot Product",),
        chapter="ch02_threadgroup_memory",
        description="""\
`out[0]` receives `a · b`, the sum of the products `a[i] * b[i]`. One thread per element, all in
a single threadgroup; per thread, 2 reads and 1 write of device memory.

**Note:** threadgroup memory reads and writes are free in this puzzle; the next notebook shows
a quicker way to add them up.""",
        input_names=("a", "b"),
        spec=dot_spec,
        visible=DOT,
        hidden=random_cases(DOT, also=partial_threadgroup_cases(DOT, 5, (1,))),
        header="""\
constant uint THREADGROUP_MEM_SIZE = 8;
""",
        template="""\
threadgroup float shared[THREADGROUP_MEM_SIZE];
""" + GLOBAL_INDEX_X + """\
uint local_i = thread_position_in_threadgroup.x;
// FILL ME IN (roughly 11 lines)
""",
        budget=Budget(global_reads=2, global_writes=1),
        hints=(
            "Each thread multiplies its pair `a[i] * b[i]` and stores the product in "
            "`shared[local_i]`.",
            "After a barrier, one thread (say `local_i == 0`) adds up `shared` and writes "
            "`out[0]`; if every thread wrote `out[0]`, that would be a race.",
        ),
        solution_file="10_dot_product.metal",
        kernel_name="dot_product",
    ),
    Puzzle(
        number=11,
        slug="conv1d",
        titles=("1D Convolution", "1D Conv (Simple)", "1D Conv (Full)"),
        chapter="ch02_threadgroup_memory",
        description="""\
Convolve `a` with the filter `b` (of `k` taps) into `out`, in the sense ML libraries use (a
cross-correlation, `a` counted as zero past its end):
`out[i] = a[i] * b[0] + a[i+1] * b[1] + ... + a[i+k-1] * b[k-1]`.

`a` may span several threadgroups of 8 threads, and the filter has at most 4 taps. The outputs
of one threadgroup also need the `k - 1` inputs just past its own slice (the **halo**), which
belong to the next threadgroup. Per thread: 2 reads and 1 write of device memory; threadgroup
memory is not limited.

Hidden cases use other lengths and filter sizes too.""",
        input_names=("a", "b"),
        spec=conv_spec,
        visible=CONV_SIMPLE,
        hidden=conv_hidden,
        header="""\
constant uint THREADGROUP_MAX_CONV_SIZE = 12;
constant uint MAX_CONV = 4;
""",
        template=GLOBAL_INDEX_X + """\
uint local_i = thread_position_in_threadgroup.x;
// FILL ME IN (roughly 24 lines)
""",
        budget=Budget(global_reads=2, global_writes=1),
        hints=(
            "Use two threadgroup arrays: the input tile with its halo "
            "(`THREADGROUP_MAX_CONV_SIZE` = 8 + 4 elements) and the filter (`MAX_CONV`).",
            "Every thread loads its own `a[i]` (zero past the end). That is one global read; "
            "share out the second one: threads `0 .. k-1` load the filter, and threads "
            "`k .. 2k-2` load the halo `a[start + 8 + j]`, each one element.",
            "After one barrier, each thread with `i < a_shape[0]` adds "
            "`tile[local_i + j] * filter[j]` for `j < k`.",
        ),
        solution_file="11_conv1d.metal",
        cases_by_title={"1D Conv (Simple)": CONV_SIMPLE, "1D Conv (Full)": CONV_FULL},
        hidden_by_title={"1D Conv (Simple)": conv_simple_hidden},
        kernel_name="1D_conv",
    ),
)
