"""Notebook 06: segment reduce (puzzles 26-29).

Ragged reductions of point-cloud networks (`pointcloud-ops.md` §3-§4): contiguous segments given
by `lengths` (26, 27), segments gathered through `indices`, `offsets`, `lengths` (28), and the
max backward that routes the gradient to every tied maximum with atomic adds (29). The notebook
ends with the real kernels `segment_reduce` and `indexed_segment_reduce`
(`solutions/segment_reduce.py`).
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np

from puzzles.catalog import Budget, Case, Puzzle, register

CHAPTER = "ch06_segment_reduce"
TITLE = "Segment reduce"

SIMD_WIDTH = 32    # puzzles 26-27: one SIMD-group per (segment, column)
SEGMENTS_PER_GROUP = 4  # puzzles 28-29: threadgroups of (C columns) x 4 segments

INTRO = [
    """\
# 06 · Segment reduce

A batch of point clouds is **ragged**: one scene has 80,000 points, the next 120,000. Point-cloud
networks (PointCNN++ and the sparse engines it runs on) never pad them to a common size. They
store every point of the batch in one `(N, C)` array, cloud after cloud, plus a `lengths` array
that says how many rows each cloud owns. A **segment** is such a run of rows, and a *segment
reduce* turns each segment into one row: its sum, mean, max or min.

Two forms occur, and this notebook builds both:

- **Contiguous segments** (`lengths` only): segment `s` owns rows
  `starts[s] ... starts[s] + lengths[s] - 1`, where `starts[s] = lengths[0] + ... +
  lengths[s - 1]`. Global pooling (one feature vector per cloud) and the ragged layer norm (a
  mean per cloud, with `C = 1`) are this op, with few, very long segments.
- **Indexed segments** (`indices`, `offsets`, `lengths`): segment `s` reduces the rows
  `x[indices[p]]` for the positions `p = offsets[s] ... offsets[s] + lengths[s] - 1`. The rows
  are gathered, in any order, and a row may appear in many segments. Max-pooling over each
  point's neighbourhood is this op: one segment per output point, about 15 neighbours each.

| reduce | formula | empty segment |
| --- | --- | --- |
| sum | `x[r0] + x[r1] + ...` | 0 |
| mean | sum / length | **0** (we divide by `max(length, 1)`) |
| max | largest element | **-inf** (the identity of max) |
| min | smallest element | **+inf** |""",
    """\
## Decisions, stated once

The segment-reduce kernels of
[PointCNN++](https://github.com/ant-research/pointelligence), which these puzzles
follow, disagree with each other in corners; here is one rule for each:

1. **Empty segments.** Sum gives 0, max -inf, min +inf: the identity of the reduction, which is
   also what "no row updated it" means. **Mean gives 0** for both forms. (PointCNN++'s
   contiguous op divides by `max(length, 1)` and gives 0; its indexed op gives 0/0 = NaN, as
   `torch.segment_reduce` does. A NaN would poison a whole training loss, so we use 0.)
2. **Ties in the max/min backward.** Every element equal to the maximum receives the *full*
   upstream gradient; nothing is split among ties. This is what PointCNN++'s kernels and MLX's own
   autodiff of `.at[...].maximum` do (`torch.segment_reduce` splits it instead). A row that
   appears twice in one segment receives it twice.
3. **Lengths must add up.** `lengths[0] + ... + lengths[K-1]` must equal the number of rows
   (contiguous) or of positions (indexed). PointCNN++'s kernels read out of bounds otherwise; the
   real kernels here check it and raise a clear error when asked to (`check_lengths=True`).

## Why no atomics in the forward pass

Give each segment its own threadgroup (or SIMD-group, or thread) and the segment's result has
exactly one writer: no atomics, no races, and the same bits on every run (float addition is
not associative, so atomic sums come out in a different order each time). Atomics only come
back in the **backward** pass of the indexed form, where many segments send gradient to the
same row.""",
    """\
## The gradients are scatter operations

The backward pass of a segment reduce moves each output's gradient `gy[s]` back to the rows that
produced it:

- sum: every row of segment `s` gets `gy[s]`; mean: `gy[s] / length`;
- max/min: the rows *equal* to the result get `gy[s]`, the others 0. No argmax is stored: the
  backward compares `x` with the saved output `y`.

For contiguous segments each row belongs to one segment, so this is a plain gather: `dx[r] =
gy[seg(r)]`, no atomics. For indexed segments it is a **scatter-add**:
`dx[indices[p]] += w(p)`, and because a row may be a neighbour of many points, several threads
add into the same `dx` row at once: that needs `atomic_fetch_add_explicit`. Puzzle 29 is
exactly that kernel.""",
]

OUTRO = """\
### What you have learned

- Ragged batches are stored flat, with `lengths` (and `offsets`) saying where each segment
  lies; an exclusive prefix sum of `lengths` gives the starts, and `simd_prefix_exclusive_sum`
  computes it in one instruction.
- Every reduction has an **identity** (0 for sum, -inf for max): start from it and an empty
  segment comes out right without a special case. The mean of an empty segment is a choice:
  here 0.
- One owner per segment makes the forward pass atomic-free and deterministic; the backward of
  an indexed reduce is a scatter-add and needs atomics, and the max backward gives the whole
  gradient to every tied maximum.
"""

REAL_KERNEL_MARKDOWN = """\
## The real kernels: segment reduce and indexed segment reduce

`solutions/segment_reduce.py` provides two MLX ops, for `sum`, `mean`, `max` and `min`, each an
`mx.custom_function` with its backward written as a kernel too, so `mx.grad` works through them:

- **`segment_reduce(x, lengths, op)`** (contiguous). Few segments of up to a million rows would
  leave most of the GPU idle with one threadgroup per segment, so each segment is split into
  `P` equal parts (`P` from the sizes alone: no reading `lengths` back to the CPU). A
  threadgroup of 256 threads owns one (segment, part, tile of up to 32 column-threads): its
  threads walk the part's rows with a stride, each reading 4 columns at once (one 16-byte
  `vec<T, 4>` load when `C` is a multiple of 4) and 4 rows before combining any of them, into
  4 independent float32 accumulators, so that 4 loads are in flight per thread. Rows are then
  combined within a SIMD-group with `simd_shuffle_down` and across SIMD-groups through
  threadgroup memory, into one partial row. The same kernel, launched a second time over the
  `P` partials of each segment, finishes the job (divides for the mean, clamps float16).
  No atomics, so the result is deterministic. Many short segments (64 rows or fewer on
  average) would leave most of such a threadgroup idle: there one pass does it, one thread
  per (segment, 4 columns) walking its rows, 4 at a time. The backward uses the two-pass
  kernel's grid: each thread knows its segment, so `dx[r] = gy[s]` (÷ length, or masked by
  `x == y` for max/min) is a plain store.
- **`indexed_segment_reduce(x, indices, offsets, lengths, op)`**. Each thread owns one
  segment and 4 columns (one 16-byte load per row, when `C` is a multiple of 4) and loops over
  the segment's positions, two rows at a time into two accumulators. The lanes that share a
  segment load up to 32 of its indices at once, one each, and pass them around with
  `simd_shuffle`, so each index is read once, not once per column. One plain store per output
  element; the backward is the scatter-add of puzzle 29 generalised to the four reductions.

Both check their inputs' types and shapes. Checking the *values* of `lengths` (non-negative,
adding up) or `indices` (in range) means reading them back to the CPU, a synchronisation that
can cost more than the kernel, so it happens only when asked: `check_lengths=True`,
`check_indices=True`. Unchecked, the contiguous kernels clamp every segment to the rows of `x`,
so wrong lengths give wrong sums but never an access outside it. The cell below compares
them, and their gradients, with MLX scatter ops (`mx.zeros(...).at[seg].add(...)`,
`.at[seg].maximum(...)`) differentiated by MLX itself, then prints the simulator's traffic
report.
"""

REAL_KERNEL_SOURCES = (("solutions.segment_reduce", "FORWARD_SOURCE"),
                       ("solutions.segment_reduce", "INDEXED_FORWARD_SOURCE"))

REAL_KERNEL_REPORT = """\
### Reading the report

The report is the contiguous forward launch (the sum) over `x` of 300 rows of 8 channels, in 4
segments (one of them empty).

- **grid (2, 512, 1), threadgroup (2, 128, 1)**: one threadgroup per segment (4 of them; a
  long segment would be split into parts, each with its own threadgroup): its threads are 2
  column-threads of 4 channels each (along `x`: 8 is a multiple of 4, so each reads its 4
  channels with one 16-byte load) times 128 rows (along `y`); a SIMD-group covers 16 rows.
- **global reads, max 3**: lane 0 of each SIMD-group reads where its segment starts and ends
  (`starts`, the offsets computed from `lengths`, then shared with `simd_broadcast`); every
  thread reads its 4 channels in every 128th row of the segment (here at most one row: the
  segments are short; on long ones each thread has 4 rows in flight at a time).
- **global writes, max 4**: one partial row per segment part, 4 channels per thread, written
  by the first row of threads (the second launch, not shown, turns the partials into `out`).
- **threadgroup reads 7, writes 1, barriers 1**: after shuffles inside each SIMD-group, each
  SIMD-group's column sums go to threadgroup memory, and after one barrier the first row of
  threads combines the other 7 SIMD-groups' values.
- **SIMD-group efficiency 91%**: threads whose share of rows is shorter (segment 1 has none at
  all) idle while the others still loop.
- **traffic**: `x` is read once; `starts` (5 offsets, 20 bytes) is read twice by every
  SIMD-group (256 bytes); `counts` (the true lengths, used by the mean of the second launch)
  is not read here; `out` holds one value per segment and channel. In total 1.02x the
  ideal."""


REAL_KERNEL_CODE = """\
import metalsim
from solutions.segment_reduce import indexed_segment_reduce, segment_reduce, simulate

x = mx.round(mx.random.normal((300, 8)) * 4)      # rounded: ties in max
lengths = mx.array([120, 0, 100, 80])             # one empty segment
seg = mx.searchsorted(mx.cumsum(lengths), mx.arange(300), side="right")  # segment of each row
w = mx.random.normal((4, 8))


def mlx_max(x):       # MLX's own scatter op; its gradient goes to every tied maximum
    return mx.full((4, 8), -mx.inf).at[seg].maximum(x)


with metalsim.patch():   # simulated where MLX has no Metal; the real GPU on a Mac
    print("max equals MLX:", mx.array_equal(segment_reduce(x, lengths, "max"), mlx_max(x)).item())
    ours = mx.grad(lambda x: (mx.maximum(segment_reduce(x, lengths, "max"), -9) * w).sum())(x)
    ref = mx.grad(lambda x: (mx.maximum(mlx_max(x), -9) * w).sum())(x)
    print("max gradient equals MLX autodiff:", mx.array_equal(ours, ref).item())

    indices = mx.random.randint(0, 300, (500,))   # gathered rows, with repeats
    nbr_lengths = mx.array([0, 200, 150, 150])
    offsets = mx.cumsum(nbr_lengths) - nbr_lengths
    pos_seg = mx.searchsorted(mx.cumsum(nbr_lengths), mx.arange(500), side="right")
    y = indexed_segment_reduce(x, indices, offsets, nbr_lengths, "sum")
    ref = mx.zeros((4, 8)).at[pos_seg].add(x[indices])
    print("indexed sum equals MLX:", mx.allclose(y, ref, atol=1e-3).item())
print(simulate(x, lengths, "max").report.summary())
"""


def _values(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Random values with one decimal: readable in a verdict, not integers."""
    return np.round(rng.uniform(-5, 5, shape), 1).astype(np.float32)


def _small_ints(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Integer-valued floats in [-3, 3]: ties within a segment are common."""
    return rng.integers(-3, 4, shape).astype(np.float32)


def _random_lengths(rng: np.random.Generator, segments: int, longest: int,
                    empty: int | None = None) -> np.ndarray:
    """Lengths in [0, longest], with at least one empty segment (segment `empty`, or a random
    one)."""
    lengths = rng.integers(0, longest + 1, segments)
    lengths[rng.integers(segments) if empty is None else empty] = 0
    return lengths.astype(np.int32)


# --- 26 Segment Sum and 27 Segment Max / Mean -----------------------------------------------

SEGMENT_TEMPLATE = """\
uint lane = thread_index_in_simdgroup;
uint s = threadgroup_position_in_grid.y;
uint c = threadgroup_position_in_grid.z;
uint num_segments = lengths_shape[0];
uint C = x_shape[1];
// FILL ME IN (roughly {lines} lines)
"""


def segment_sum_spec(x: mx.array, lengths: mx.array) -> mx.array:
    # Row r belongs to the segment s with starts[s] <= r < starts[s] + lengths[s]: the number
    # of segment ends at or before r. Empty segments own no row and sum to 0.
    ends = mx.cumsum(lengths)
    seg = mx.sum(mx.arange(x.shape[0])[:, None] >= ends[None, :], axis=1)
    return mx.zeros((lengths.shape[0], x.shape[1])).at[seg].add(x)


def segment_max_mean_spec(x: mx.array, lengths: mx.array) -> mx.array:
    # out[0] is each segment's max (-inf when empty), out[1] its mean (0 when empty).
    ends = mx.cumsum(lengths)
    seg = mx.sum(mx.arange(x.shape[0])[:, None] >= ends[None, :], axis=1)
    shape = (lengths.shape[0], x.shape[1])
    biggest = mx.full(shape, -mx.inf).at[seg].maximum(x)
    mean = mx.zeros(shape).at[seg].add(x) / mx.maximum(lengths, 1)[:, None]
    return mx.stack([biggest, mean])


def _segment_case(x: np.ndarray, lengths: np.ndarray, planes: int = 1) -> Case:
    segments, columns = lengths.size, x.shape[1]
    shape = (segments, columns) if planes == 1 else (planes, segments, columns)
    return Case((x, lengths), shape, (SIMD_WIDTH, segments, columns), (SIMD_WIDTH, 1, 1))


def _segment_hidden(values, planes: int):
    def hidden(rng: np.random.Generator) -> list[Case]:
        cases = []
        for segments, longest, columns in ((5, 6, 3), (12, 9, 1), (SIMD_WIDTH, 4, 2), (3, 32, 4)):
            lengths = _random_lengths(rng, segments, longest)
            x = values(rng, (int(lengths.sum()), columns))
            cases.append(_segment_case(x, lengths, planes))
        full = np.array([SIMD_WIDTH, 0, 1], dtype=np.int32)  # a segment as long as a SIMD-group
        cases.append(_segment_case(values(rng, (int(full.sum()), 2)), full, planes))
        return cases

    return hidden


# The puzzle-tier sizes of pointcloud-ops.md §6: N = 13 rows, K = 7 segments (two empty), C = 3.
VISIBLE_LENGTHS = np.array([2, 0, 3, 1, 4, 0, 3], dtype=np.int32)

SEGMENT_SUM = Puzzle(
    number=26,
    slug="segment_sum",
    titles=("Segment Sum",),
    chapter=CHAPTER,
    description="""\
`x` holds `N` rows of `C` values, grouped into `K` contiguous segments: segment `s` is the next
`lengths[s]` rows after segment `s - 1`. Store the sum of each segment's rows in `out[s]`
(shape `(K, C)`). Some segments are empty: their sum is 0.

Each **threadgroup is one SIMD-group of 32 threads** and owns one segment `s` and one column
`c` (`threadgroup_position_in_grid.y` and `.z`). Here there are at most 32 segments and a
segment has at most 32 rows, so a lane can hold one entry of `lengths` and one row.

The catch is finding where segment `s` starts: `lengths[0] + ... + lengths[s - 1]`. Reading
those `s` values in every thread would cost `s` reads. Instead let lane `k` read `lengths[k]`
and compute all the starts at once with `simd_prefix_exclusive_sum` (notebook 03); then
`simd_broadcast(v, s)` hands every lane the value of lane `s`. Each lane then reads one row of
the segment, and `simd_sum` adds them.

You need 2 global reads per thread (one entry of `lengths`, one element of `x`) and 1 global
write: one read for the element, one for the length of its segment.""",
    input_names=("x", "lengths"),
    spec=segment_sum_spec,
    visible=_segment_case(np.arange(39, dtype=np.float32).reshape(13, 3), VISIBLE_LENGTHS),
    hidden=_segment_hidden(_values, 1),
    template=SEGMENT_TEMPLATE.format(lines=10),
    budget=Budget(global_reads=2, global_writes=1),
    hints=(
        "`int len = lane < num_segments ? lengths[lane] : 0;` then "
        "`int start = simd_prefix_exclusive_sum(len);`: lane `k` now holds where segment `k` "
        "starts.",
        "`int seg_start = simd_broadcast(start, s);` and likewise `seg_len`. Call both on every "
        "lane, before any `if` or `return`.",
        "Lane `l` reads `x[(seg_start + l) * C + c]` if `l < seg_len`, else uses 0; "
        "`simd_sum` adds them, and lane 0 writes `out[s * C + c]`. An empty segment then "
        "writes 0 like any other.",
    ),
    solution_file="26_segment_sum.metal",
)


def _segment_max_mean_visible() -> Case:
    x = _small_ints(np.random.default_rng(27), (13, 3))
    x[10:13, 0] = [-2, -1, -3]   # the last segment is all negative in column 0
    return _segment_case(x, VISIBLE_LENGTHS, planes=2)


SEGMENT_MAX_MEAN = Puzzle(
    number=27,
    slug="segment_max_mean",
    titles=("Segment Max / Mean",),
    chapter=CHAPTER,
    description="""\
The same segments, two reductions in one launch: `out` has shape `(2, K, C)`, with each
segment's **max** in `out[0]` and its **mean** in `out[1]`.

The empty segments decide what correct means:
- the max of an empty segment is **-inf**, the identity of max (nothing is larger than every
  element of an empty set);
- the mean of an empty segment is **0** in this series: divide by `max(length, 1)`, not by the
  length (0 / 0 is NaN).

Lanes outside the segment must not disturb the result either: for `simd_sum` they contribute 0,
but for `simd_max` a 0 would win over a segment of negative values. Give each reduction its
own identity.

The budget is as in Segment Sum: 2 global reads and 1 global write per thread, so let lane 0
write the max and lane 1 the mean.""",
    input_names=("x", "lengths"),
    spec=segment_max_mean_spec,
    visible=_segment_max_mean_visible(),
    hidden=_segment_hidden(_small_ints, 2),
    template=SEGMENT_TEMPLATE.format(lines=14),
    budget=Budget(global_reads=2, global_writes=1),
    hints=(
        "Start as in Segment Sum: lane `k` reads `lengths[k]`, `simd_prefix_exclusive_sum` "
        "gives the starts, `simd_broadcast` hands lane `s`'s start and length to every lane.",
        "`simd_max(inside ? v : -INFINITY)` and `simd_sum(inside ? v : 0.0f)`, where `inside` "
        "says whether the lane's row belongs to the segment.",
        "Lane 0 writes `out[s * C + c]`; lane 1 writes the mean to "
        "`out[(num_segments + s) * C + c]`, dividing by `float(max(seg_len, 1))`.",
    ),
    solution_file="27_segment_max_mean.metal",
)


# --- 28 Indexed Segment Reduce and 29 Segment Max Backward ----------------------------------

INDEXED_TEMPLATE = """\
uint c = thread_position_in_grid.x;
uint s = thread_position_in_grid.y;
uint C = x_shape[1];
// FILL ME IN (roughly {lines} lines)
"""


def indexed_segment_max_spec(x: mx.array, indices: mx.array, offsets: mx.array,
                             lengths: mx.array) -> mx.array:
    # Position p is in segment s when offsets[s] <= p < offsets[s] + lengths[s]; the segment
    # takes the max of the gathered rows x[indices[p]], and -inf when it is empty.
    p = mx.arange(indices.shape[0])
    member = (p[None, :] >= offsets[:, None]) & (p[None, :] < (offsets + lengths)[:, None])
    rows = x[indices]
    return mx.max(mx.where(member[:, :, None], rows[None], -mx.inf), axis=1)


def segment_max_backward_spec(x: mx.array, indices: mx.array, offsets: mx.array,
                              lengths: mx.array, y: mx.array, gy: mx.array) -> mx.array:
    # The gradient of puzzle 28's max: position p of segment s passes all of gy[s] on to row
    # indices[p] if that row equals the max y[s] (every tie does), and rows that appear at
    # several positions add up what they get.
    p = mx.arange(indices.shape[0])
    member = (p[None, :] >= offsets[:, None]) & (p[None, :] < (offsets + lengths)[:, None])
    rows = x[indices]
    hit = member[:, :, None] & (rows[None] == y[:, None, :])
    grads = mx.sum(mx.where(hit, gy[:, None, :], 0.0), axis=0)
    return mx.zeros(x.shape).at[indices].add(grads)


def _indexed_inputs(x: np.ndarray, indices: np.ndarray, lengths: np.ndarray
                    ) -> tuple[np.ndarray, ...]:
    offsets = (np.cumsum(lengths) - lengths).astype(np.int32)
    return x, indices.astype(np.int32), offsets, lengths.astype(np.int32)


def _launch(segments: int, columns: int) -> dict[str, tuple[int, int, int]]:
    return {"grid": (columns, segments, 1),
            "threadgroup": (columns, min(segments, SEGMENTS_PER_GROUP), 1)}


def _indexed_case(inputs: tuple[np.ndarray, ...]) -> Case:
    x, lengths = inputs[0], inputs[3]
    return Case(inputs, (lengths.size, x.shape[1]), **_launch(lengths.size, x.shape[1]))


def _segment_max(inputs: tuple[np.ndarray, ...]) -> np.ndarray:
    """Puzzle 28's output in numpy: the saved forward result that puzzle 29 is given."""
    x, indices, offsets, lengths = inputs
    out = np.full((lengths.size, x.shape[1]), -np.inf, dtype=np.float32)
    for s, (start, length) in enumerate(zip(offsets, lengths)):
        if length:
            out[s] = x[indices[start:start + length]].max(axis=0)
    return out


def _backward_case(inputs: tuple[np.ndarray, ...], gy: np.ndarray) -> Case:
    x, lengths = inputs[0], inputs[3]
    return Case((*inputs, _segment_max(inputs), gy), x.shape,
                **_launch(lengths.size, x.shape[1]))


def _random_indexed(rng: np.random.Generator, rows: int, segments: int, longest: int,
                    columns: int, empty: int | None) -> tuple[np.ndarray, ...]:
    lengths = _random_lengths(rng, segments, longest, empty)
    indices = rng.integers(0, rows, int(lengths.sum()))  # repeats, also within a segment
    return _indexed_inputs(_small_ints(rng, (rows, columns)), indices, lengths)


# (rows, segments, longest, columns, empty segment): the last segment empty once, so that
# offsets[s] == len(indices) there.
HIDDEN_INDEXED_SIZES = ((12, 5, 4, 3, None), (20, 9, 6, 1, -1), (6, 7, 8, 4, None),
                        (40, 3, 15, 2, 0))


def indexed_segment_max_hidden(rng: np.random.Generator) -> list[Case]:
    return [_indexed_case(_random_indexed(rng, *size)) for size in HIDDEN_INDEXED_SIZES]


def segment_max_backward_hidden(rng: np.random.Generator) -> list[Case]:
    cases = []
    for size in HIDDEN_INDEXED_SIZES:
        inputs = _random_indexed(rng, *size)
        cases.append(_backward_case(inputs, _values(rng, (size[1], size[3]))))
    return cases


def _visible_indexed(lengths: list[int]) -> tuple[np.ndarray, ...]:
    """§6's puzzle tier: 12 rows of 3 and 10 positions, with repeats. Row 4 appears twice in
    the first segment and again in the third non-empty one, and is the max of both; rows 1 and
    9, the second non-empty segment, tie in column 0."""
    x = _small_ints(np.random.default_rng(28), (12, 3))
    x[4] = 5
    x[1, 0] = x[9, 0] = 4
    indices = np.array([4, 7, 4, 1, 9, 7, 2, 11, 4, 0])
    return _indexed_inputs(x, indices, np.array(lengths))


INDEXED_SEGMENT_MAX = Puzzle(
    number=28,
    slug="indexed_segment_max",
    titles=("Indexed Segment Reduce",),
    chapter=CHAPTER,
    description="""\
Max-pooling over neighbourhoods. Segment `s` no longer owns a run of rows of `x`: it owns the
positions `p = offsets[s] ... offsets[s] + lengths[s] - 1` of the array `indices`, and reduces
the rows `x[indices[p]]`. Rows come in any order, the same row may appear in several segments
(two points share a neighbour) and even twice in one. Store each segment's **max** in
`out[s]` (shape `(K, C)`); an empty segment's max is **-inf**.

One thread per (column, segment): thread `(c, s)` is `thread_position_in_grid`. It loops over
its segment's positions and keeps a running max in a register. Every output element has
exactly one writer: no atomics, no threadgroup memory, and the result is the same on every
run. This is the whole forward kernel of the real op; the real one only adds a trick to read
each index once per SIMD-group instead of once per column.

`offsets[s]` is `lengths[0] + ... + lengths[s - 1]` here, given so you do not compute it.
The budget is not limited.""",
    input_names=("x", "indices", "offsets", "lengths"),
    spec=indexed_segment_max_spec,
    visible=_indexed_case(_visible_indexed([3, 0, 2, 4, 1])),  # one empty
    hidden=indexed_segment_max_hidden,
    template=INDEXED_TEMPLATE.format(lines=6),
    budget=Budget(),
    hints=(
        "Row `indices[p]`, column `c` of `x` is `x[indices[p] * C + c]`.",
        "Start the running max at `-INFINITY`, not at the segment's first element: an empty "
        "segment has no first element, and `indices[offsets[s]]` belongs to the next segment.",
        "Loop `for (int p = offsets[s]; p < offsets[s] + lengths[s]; ++p)` and write "
        "`out[s * C + c]` once, after the loop.",
    ),
    solution_file="28_indexed_segment_max.metal",
)


SEGMENT_MAX_BACKWARD = Puzzle(
    number=29,
    slug="segment_max_backward",
    titles=("Segment Max Backward",),
    chapter=CHAPTER,
    description="""\
The gradient of puzzle 28. You get the forward's inputs, its saved output `y` (each segment's
max) and the upstream gradient `gy` (shape `(K, C)`), and compute `dx` (the shape of `x`):

    dx[r, c] = sum over positions p with indices[p] = r of
               ( gy[s(p), c]  if x[r, c] == y[s(p), c]  else 0 )

where `s(p)` is the segment of position `p`. In words: every element that **equals** its
segment's max receives that segment's **whole** gradient. Ties are not split: if two elements
tie for the max, both get all of `gy` (the rule of PointCNN++'s kernels and of MLX's autodiff;
`torch.segment_reduce` would give each half). A row that appears twice in a segment gets it
twice.

Use the same threads as puzzle 28: thread `(c, s)` walks its segment. Different segments
can send gradient to the **same** row, so `dx` is built with `atomic_outputs=True` (it is a
`device atomic<float>*`) and `init_value=0`: add with
`atomic_fetch_add_explicit(&dx[i], g, memory_order_relaxed)`. A plain `+=` would be a race.
The budget is not limited.""",
    input_names=("x", "indices", "offsets", "lengths", "y", "gy"),
    spec=segment_max_backward_spec,
    # No empty segment here: its -inf in `y` would not print as Python in the notebook.
    visible=_backward_case(_visible_indexed([3, 2, 4, 1]),
                           _values(np.random.default_rng(29), (4, 3))),
    hidden=segment_max_backward_hidden,
    template=INDEXED_TEMPLATE.format(lines=10),
    budget=Budget(),
    hints=(
        "Read `y[s * C + c]` and `gy[s * C + c]` once, before the loop over the segment's "
        "positions.",
        "For each position, `uint r = indices[p];` and compare `x[r * C + c]` with the max. "
        "Do not stop at the first match: every tie gets the gradient.",
        "Two segments may gather the same row `r`, so two threads may add to the same "
        "element of `dx`: add the gradient atomically, once per match.",
    ),
    solution_file="29_segment_max_backward.metal",
    output_names=("dx",),
    atomic_outputs=True,
    init_value=0,
)

register(SEGMENT_SUM, SEGMENT_MAX_MEAN, INDEXED_SEGMENT_MAX, SEGMENT_MAX_BACKWARD)
