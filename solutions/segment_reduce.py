"""Real kernels of notebook 06: segment reduce over contiguous and indexed (gathered) segments.

`segment_reduce(x, lengths, op)` reduces the contiguous row segments of `x` (global pooling,
ragged layer norm); `indexed_segment_reduce(x, indices, offsets, lengths, op)` reduces the rows
`x[indices[p]]` of each segment's positions (max-pooling over neighbourhoods). Both take `op` in
sum, mean, max, min, accumulate in float32 and return `x.dtype`; both are `mx.custom_function`s
whose backward is a kernel too. Semantics follow `pointcloud-ops.md` §3-§4 with the decisions of
notebook 06 (§11):

- empty segment: sum 0, **mean 0** (divide by `max(length, 1)`, for both forms; PointCNN++'s
  indexed op gives NaN), max -inf, min +inf;
- float16 results of the contiguous form are clamped to +-65504 like PointCNN++ (so an empty
  max is -65504 there); the indexed form casts without a clamp, like PointCNN++;
- max/min backward: every element equal to the result gets the full gradient (ties are not
  split), once per occurrence, as MLX's autodiff of `.at[].maximum` does.

Contiguous forward: each segment is split into `P` equal parts, `P` from the array sizes alone
(no read-back of `lengths`). A threadgroup of 256 threads owns one (segment, part, tile of up
to 32 column-threads) and writes one float32 partial row: each thread reads `V` = 4 columns
at once (one 16-byte load, when C is a multiple of 4) and `UNROLL` = 4 rows before combining
them, into 4 independent accumulators, about `ROWS_PER_THREAD` = 64 rows in all (H100, N = 1M,
`benchmarks/bench_tiles.py`: 90% -> 92% of the copy bandwidth at C = 32 against 16 rows,
101% -> 104% at C = 256; 8 rows at a time gained under 0.5% more there and slowed many short
segments by 16%, whose rows mostly miss the unrolled loop); then threads combine within a
SIMD-group with `simd_shuffle_down` and across SIMD-groups in threadgroup memory. The same
kernel, launched again over the `(K * P, C)` partials, reduces each segment's P rows into the
result (dividing for the mean, clamping float16). No atomics: deterministic. The backward
runs on the same grid; each thread knows its segment, so it stores `dx[r] = gy[s]` (÷ length;
masked by `x == y` for max/min) with no atomics either. Segments averaging at most
`SHORT_ROWS` = 64 rows would leave most of a 256-thread threadgroup idle: there one pass
reduces them, one thread per (segment, V columns) walking its rows UNROLL at a time, in
threadgroups of (up to 32 column-threads) x (segments).

Indexed forward: one thread per (segment, 4 columns when C is a multiple of 4, else 1),
threadgroups of 256 = (up to 32 column-threads) x (segments). The lanes of a SIMD-group that
share a segment load its indices cooperatively, one each, and pass them on with
`simd_shuffle`, so each index is read once per SIMD-group instead of once per column; each
thread reads its columns of two gathered rows at a time (16-byte loads, two accumulators).
One plain store per output element. The backward walks the same way and
scatter-adds into a float32 `dx` with `atomic_fetch_add_explicit`, since a row may belong to
several segments.

Validation: `x` must be 2-D floating point, index arrays 1-D integers (cast to int32), `offsets`
and `lengths` of one shape, at least one segment. Checking values reads them back to the CPU (a
synchronisation that can cost more than the kernel), so it happens only when asked:
`check_lengths=True` (contiguous) checks `lengths >= 0` and `sum(lengths)` equal to the rows of
`x`; `check_indices=True` (indexed) checks the same against the positions of `indices`, and
`0 <= indices < len(x)` and that every segment lies inside `indices`. Unchecked, the contiguous
kernels clamp every segment to the rows of `x` (wrong lengths give wrong values, no access
outside it); bad indices are undefined behaviour, as in PointCNN++.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import mlx.core as mx

REDUCES = ("sum", "mean", "max", "min")
THREADS = 256          # per threadgroup
SIMD_WIDTH = 32
ROWS_PER_THREAD = 64   # contiguous form: a part has about 64 rows per row-thread
UNROLL = 4             # contiguous form: rows loaded at once, one accumulator each
SHORT_ROWS = 64        # segments averaging at most this many rows: one thread per segment

HEADER = """
// OP: 0 sum, 1 mean, 2 max, 3 min.
template <int OP>
inline float identity() {
    return OP == 2 ? -INFINITY : (OP == 3 ? INFINITY : 0.0f);
}

template <int OP, typename A>
inline A combine(A a, A b) {
    return OP == 2 ? max(a, b) : (OP == 3 ? min(a, b) : a + b);
}
"""

# Threadgroup row `tgy` of the contiguous kernels owns part `tgy % parts` of segment
# `tgy / parts`: rows [lo, hi) of x, empty when the segment is shorter than `parts`. The bounds
# are clamped to [0, N], so lengths that do not add up (unchecked without `check_lengths`)
# cannot make a kernel read or write outside x.
PART_ROWS = """
    uint tc = thread_position_in_threadgroup.x;
    uint tr = thread_position_in_threadgroup.y;
    uint row_threads = threads_per_threadgroup.y;
    int N = int(x_shape[0]);
    uint C = x_shape[1];
    uint tgy = threadgroup_position_in_grid.y;
    uint parts = threadgroups_per_grid.y / (starts_shape[0] - 1);
    uint s = tgy / parts;
    // One lane reads the segment's bounds and hands them to the others.
    int first_row = 0;
    int end_row = 0;
    if (thread_index_in_simdgroup == 0) {
        first_row = starts[s];
        end_row = starts[s + 1];
    }
    uint seg_start = uint(clamp(simd_broadcast(first_row, 0), 0, N));
    uint seg_end = uint(clamp(simd_broadcast(end_row, 0), int(seg_start), N));
    uint per = (seg_end - seg_start + parts - 1) / parts;
    uint lo = min(seg_start + (tgy % parts) * per, seg_end);
    uint hi = min(lo + per, seg_end);
"""

# The forward's loads: V consecutive columns of one row at a time, as one 16-byte `vec<T, 4>`
# load when V = 4 (C a multiple of 4, so every row starts 16-byte aligned), else one scalar.
# `acc_t` is the float32 accumulator of V columns. Inputs of fewer than 8 elements come in the
# `constant` address space, so each load is overloaded on it.
VECTOR_HEADER = {
    4: """
typedef vec<float, 4> acc_t;
template <typename T>
inline acc_t load_v(const device T* p) { return acc_t(*(const device vec<T, 4>*)p); }
template <typename T>
inline acc_t load_v(const constant T* p) { return acc_t(*(const constant vec<T, 4>*)p); }
inline float element(acc_t v, uint k) { return v[k]; }
""",
    1: """
typedef float acc_t;
template <typename T>
inline acc_t load_v(const device T* p) { return float(*p); }
template <typename T>
inline acc_t load_v(const constant T* p) { return float(*p); }
inline float element(acc_t v, uint) { return v; }
""",
}

# Inputs x (N, C), starts (K + 1), counts (K + 1); output (K * P, C). Two passes use it:
# pass 1 reduces each part of the rows of x into a float32 partial row (FINAL false); pass 2
# reduces each segment's P partials (starts = multiples of P) into the result (FINAL true):
# the mean divides by the true length `counts[s + 1] - counts[s]`, CLAMP saturates float16,
# and the store casts to OT.
FORWARD_SOURCE = PART_ROWS + """
    threadgroup acc_t partial[SIMDGROUPS][TC];
    uint lane = thread_index_in_simdgroup;
    uint sg = simdgroup_index_in_threadgroup;
    uint c = (threadgroup_position_in_grid.x * TC + tc) * V;

    // 1. Each thread strides over the part's rows in its V columns, UNROLL rows at a time
    //    into independent accumulators: UNROLL loads in flight, no chain between them.
    acc_t acc[UNROLL];
    for (uint u = 0; u < UNROLL; ++u) {
        acc[u] = acc_t(identity<OP>());
    }
    if (c < C) {
        uint r = lo + tr;
        for (; r + (UNROLL - 1) * row_threads < hi; r += UNROLL * row_threads) {
            acc_t v[UNROLL];
            for (uint u = 0; u < UNROLL; ++u) {
                v[u] = load_v(x + size_t(r + u * row_threads) * C + c);
            }
            for (uint u = 0; u < UNROLL; ++u) {
                acc[u] = combine<OP>(acc[u], v[u]);
            }
        }
        for (; r < hi; r += row_threads) {
            acc[0] = combine<OP>(acc[0], load_v(x + size_t(r) * C + c));
        }
    }
    for (uint u = 1; u < UNROLL; ++u) {
        acc[0] = combine<OP>(acc[0], acc[u]);
    }
    // 2. A SIMD-group holds 32 / TC rows of TC column-threads: lanes l and l + TC share columns.
    acc_t total = acc[0];
    for (uint d = SIMD_WIDTH / 2; d >= TC; d /= 2) {
        total = combine<OP>(total, simd_shuffle_down(total, d));
    }
    // 3. Lanes 0 .. TC-1 of every SIMD-group hold its partial; the first row combines them.
    if (lane < TC) {
        partial[sg][lane] = total;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (tr == 0 && c < C) {
        for (uint g = 1; g < SIMDGROUPS; ++g) {
            total = combine<OP>(total, partial[g][tc]);
        }
        if (FINAL && OP == 1) {
            total /= float(max(counts[s + 1] - counts[s], 1));
        }
        if (CLAMP) {
            total = clamp(total, acc_t(-65504.0f), acc_t(65504.0f));
        }
        for (uint k = 0; k < V; ++k) {
            out[size_t(tgy) * C + c + k] = static_cast<OT>(element(total, k));
        }
    }
"""

# Many short segments (a few rows each on average): one thread per (segment, V columns) walks
# the segment's rows, UNROLL at a time, and stores the result: one pass, no threadgroup memory,
# no combining across threads. Threadgroups of (TC column-threads) x (256 / TC segments), so
# the TC lanes sharing a segment read its rows' columns together. Inputs x (N, C), starts
# (K + 1); output (K, C) in OT, the mean divided by the true length, CLAMP saturating float16.
SHORT_FORWARD_SOURCE = """
    int N = int(x_shape[0]);
    uint C = x_shape[1];
    uint s = thread_position_in_grid.y;
    uint c = thread_position_in_grid.x * V;
    if (s + 1 >= starts_shape[0] || c >= C) {
        return;
    }
    uint lo = uint(clamp(starts[s], 0, N));
    uint hi = uint(clamp(starts[s + 1], int(lo), N));
    acc_t acc[UNROLL];
    for (uint u = 0; u < UNROLL; ++u) {
        acc[u] = acc_t(identity<OP>());
    }
    uint r = lo;
    for (; r + UNROLL <= hi; r += UNROLL) {
        acc_t v[UNROLL];
        for (uint u = 0; u < UNROLL; ++u) {
            v[u] = load_v(x + size_t(r + u) * C + c);
        }
        for (uint u = 0; u < UNROLL; ++u) {
            acc[u] = combine<OP>(acc[u], v[u]);
        }
    }
    for (; r < hi; ++r) {
        acc[0] = combine<OP>(acc[0], load_v(x + size_t(r) * C + c));
    }
    for (uint u = 1; u < UNROLL; ++u) {
        acc[0] = combine<OP>(acc[0], acc[u]);
    }
    acc_t total = acc[0];
    if (OP == 1) {
        total /= float(max(starts[s + 1] - starts[s], 1));
    }
    if (CLAMP) {
        total = clamp(total, acc_t(-65504.0f), acc_t(65504.0f));
    }
    for (uint k = 0; k < V; ++k) {
        out[size_t(s) * C + c + k] = static_cast<OT>(element(total, k));
    }
"""

# Inputs x (N, C), starts (K + 1), y (K, C), gy (K, C); output dx (N, C). Same grid as forward.
BACKWARD_SOURCE = PART_ROWS + """
    uint c = threadgroup_position_in_grid.x * TC + tc;
    if (c >= C) {
        return;
    }
    float g = float(gy[s * C + c]);
    if (OP == 1) {
        g /= float(max(seg_end - seg_start, 1u));
    }
    float best = OP >= 2 ? float(y[s * C + c]) : 0.0f;
    for (uint r = lo + tr; r < hi; r += row_threads) {
        size_t at = size_t(r) * C + c;
        // max/min: every element equal to the result gets the whole gradient (all ties).
        dx[at] = static_cast<T>(OP < 2 || float(x[at]) == best ? g : 0.0f);
    }
"""

# The walk over a segment's positions, shared by the indexed forward and backward. Lanes that
# share a segment (TC consecutive lanes) load TC of its indices at a time, one each, and pass
# them on with simd_shuffle; the loop bound is the SIMD-group's longest segment, so every lane
# runs every shuffle.
INDEXED_WALK = """
    uint tc = thread_position_in_threadgroup.x;
    uint lane = thread_index_in_simdgroup;
    uint first = lane - tc;                     // lane of column 0 of this segment
    uint C = x_shape[1];
    uint K = lengths_shape[0];
    uint c = threadgroup_position_in_grid.x * TC + tc;
    uint s = thread_position_in_grid.y;
    bool active = s < K && c < C;
    int start = 0;
    int len = 0;
    if (tc == 0 && s < K) {
        start = offsets[s];
        len = lengths[s];
    }
    start = simd_shuffle(start, first);
    len = simd_shuffle(len, first);
    int longest = simd_max(len);
"""

# The indexed forward walks like INDEXED_WALK, but each column-thread owns V columns (one
# 16-byte load per row when V = 4) and keeps two accumulators, for rows j and j + 1 of the
# segment, so two loads are in flight.
INDEXED_FORWARD_SOURCE = INDEXED_WALK.replace(
    "uint c = threadgroup_position_in_grid.x * TC + tc;",
    "uint c = (threadgroup_position_in_grid.x * TC + tc) * V;") + """
    acc_t acc[2] = {acc_t(identity<OP>()), acc_t(identity<OP>())};
    for (int base = 0; base < longest; base += TC) {
        int mine = base + int(tc) < len ? indices[start + base + tc] : 0;
        int n = min(int(TC), longest - base);
        int j = 0;
        for (; j + 1 < n; j += 2) {
            int row0 = simd_shuffle(mine, first + j);
            int row1 = simd_shuffle(mine, first + j + 1);
            if (active && base + j < len) {
                acc[0] = combine<OP>(acc[0], load_v(x + size_t(row0) * C + c));
            }
            if (active && base + j + 1 < len) {
                acc[1] = combine<OP>(acc[1], load_v(x + size_t(row1) * C + c));
            }
        }
        if (j < n) {
            int row = simd_shuffle(mine, first + j);
            if (active && base + j < len) {
                acc[0] = combine<OP>(acc[0], load_v(x + size_t(row) * C + c));
            }
        }
    }
    acc_t total = combine<OP>(acc[0], acc[1]);
    if (active) {
        if (OP == 1) {
            total /= float(max(len, 1));
        }
        for (uint k = 0; k < V; ++k) {
            out[s * C + c + k] = static_cast<T>(element(total, k));
        }
    }
"""

INDEXED_BACKWARD_SOURCE = INDEXED_WALK + """
    float g = 0.0f;
    float best = 0.0f;
    if (active) {
        g = float(gy[s * C + c]);
        if (OP == 1) {
            g /= float(max(len, 1));
        }
        if (OP >= 2) {
            best = float(y[s * C + c]);
        }
    }
    for (int base = 0; base < longest; base += TC) {
        int mine = base + int(tc) < len ? indices[start + base + tc] : 0;
        int n = min(int(TC), longest - base);
        for (int j = 0; j < n; ++j) {
            int row = simd_shuffle(mine, first + j);
            if (active && base + j < len) {
                size_t at = size_t(row) * C + c;
                // A row may appear in several segments (and twice in one): add atomically.
                if (OP < 2 || float(x[at]) == best) {
                    atomic_fetch_add_explicit(&dx[at], g, memory_order_relaxed);
                }
            }
        }
    }
"""

COMMON_HEADER = f"constant uint SIMD_WIDTH = {SIMD_WIDTH};\n" + HEADER


@functools.cache
def _kernels(factory: Callable) -> dict[str, Callable]:
    """The kernels, built once per kernel factory (MLX's, or metalsim's under a patch)."""
    sizes = f"constant uint SIMDGROUPS = {THREADS // SIMD_WIDTH};\n"
    return {
        "forward4": factory(name="segment_reduce_v4", input_names=["x", "starts", "counts"],
                            output_names=["out"], source=FORWARD_SOURCE,
                            header=sizes + COMMON_HEADER + VECTOR_HEADER[4]),
        "forward1": factory(name="segment_reduce_v1", input_names=["x", "starts", "counts"],
                            output_names=["out"], source=FORWARD_SOURCE,
                            header=sizes + COMMON_HEADER + VECTOR_HEADER[1]),
        "short4": factory(name="segment_reduce_short_v4", input_names=["x", "starts"],
                          output_names=["out"], source=SHORT_FORWARD_SOURCE,
                          header=COMMON_HEADER + VECTOR_HEADER[4]),
        "short1": factory(name="segment_reduce_short_v1", input_names=["x", "starts"],
                          output_names=["out"], source=SHORT_FORWARD_SOURCE,
                          header=COMMON_HEADER + VECTOR_HEADER[1]),
        "backward": factory(name="segment_reduce_vjp", input_names=["x", "starts", "y", "gy"],
                            output_names=["dx"], source=BACKWARD_SOURCE, header=COMMON_HEADER),
        "indexed4": factory(name="indexed_segment_reduce_v4",
                            input_names=["x", "indices", "offsets", "lengths"],
                            output_names=["out"], source=INDEXED_FORWARD_SOURCE,
                            header=COMMON_HEADER + VECTOR_HEADER[4]),
        "indexed1": factory(name="indexed_segment_reduce_v1",
                            input_names=["x", "indices", "offsets", "lengths"],
                            output_names=["out"], source=INDEXED_FORWARD_SOURCE,
                            header=COMMON_HEADER + VECTOR_HEADER[1]),
        "indexed_backward": factory(
            name="indexed_segment_reduce_vjp",
            input_names=["x", "indices", "offsets", "lengths", "y", "gy"],
            output_names=["dx"], source=INDEXED_BACKWARD_SOURCE, header=COMMON_HEADER,
            atomic_outputs=True),
    }


# --- validation -----------------------------------------------------------------------------


def _check_op(op: str) -> int:
    if op not in REDUCES:
        raise ValueError(f"op must be one of {REDUCES}, got {op!r}")
    return REDUCES.index(op)


def _check_x(x: mx.array) -> None:
    if x.ndim != 2:
        raise ValueError(f"x must be 2-D (rows, channels), got shape {x.shape}")
    if not mx.issubdtype(x.dtype, mx.floating):
        raise TypeError(f"x must be floating point, got {x.dtype}")


def _index_array(name: str, a: mx.array) -> mx.array:
    """A 1-D integer array as int32 (64-bit inputs are cast here, as PointCNN++'s wrapper
    does; the kernels index with int32)."""
    if not isinstance(a, mx.array) or not mx.issubdtype(a.dtype, mx.integer):
        kind = a.dtype if isinstance(a, mx.array) else type(a).__name__
        raise TypeError(f"{name} must be an integer mx.array, got {kind}")
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
    return a.astype(mx.int32)


def _check_lengths(lengths: mx.array, rows: int, what: str) -> None:
    """lengths >= 0 and sum(lengths) == rows. Reads two scalars back to the CPU (a
    synchronisation), so the ops call it only when asked to (`check_lengths=True`)."""
    total, smallest = mx.sum(lengths).item(), mx.min(lengths).item()
    if smallest < 0:
        raise ValueError(f"lengths must be non-negative, got {smallest}")
    if total != rows:
        raise ValueError(f"sum(lengths) = {total} but {what} has {rows} rows")


def _check_some(lengths: mx.array) -> None:
    if lengths.size == 0:
        raise ValueError("lengths is empty: at least one segment is needed")


def _check_index_ranges(indices: mx.array, offsets: mx.array, lengths: mx.array,
                        rows: int) -> None:
    if indices.size and (mx.min(indices).item() < 0 or mx.max(indices).item() >= rows):
        raise IndexError(f"indices must lie in [0, {rows}), got values in "
                         f"[{mx.min(indices).item()}, {mx.max(indices).item()}]")
    ends = offsets + lengths
    if offsets.size and (mx.min(offsets).item() < 0
                         or mx.max(ends).item() > indices.size):
        raise IndexError(f"every segment [offsets[s], offsets[s] + lengths[s]) must lie in "
                         f"[0, {indices.size}), the positions of indices")


# --- contiguous segments --------------------------------------------------------------------


def _column_tile(column_threads: int) -> int:
    """Column-threads per threadgroup: the next power of two, at most a SIMD-group."""
    tile = 1
    while tile < min(column_threads, SIMD_WIDTH):
        tile *= 2
    return tile


def _vector_width(columns: int) -> int:
    """Columns per load: 4 (one 16-byte load of float32) when every row starts aligned."""
    return 4 if columns % 4 == 0 else 1


def _parts(rows: int, segments: int, row_threads: int) -> int:
    """How many parts each segment is split into, from the sizes alone: about
    ROWS_PER_THREAD rows per row-thread when the segments are of equal length."""
    per_part = ROWS_PER_THREAD * row_threads
    return max(1, -(-rows // (segments * per_part)))


def _contiguous_geometry(x: mx.array, segments: int, parts: int | None = None,
                         vector: int = 1) -> dict:
    """Grid, threadgroup, column tile and parts of the contiguous kernels: a threadgroup of
    (TC column-threads of `vector` columns each) x (256 / TC row-threads) per (column tile,
    segment, part)."""
    column_threads = -(-x.shape[1] // vector)
    tc = _column_tile(column_threads)
    row_threads = THREADS // tc
    if parts is None:
        parts = _parts(x.shape[0], segments, row_threads)
    return {"grid": (-(-column_threads // tc) * tc, segments * parts * row_threads, 1),
            "threadgroup": (tc, row_threads, 1), "tc": tc, "parts": parts}


def _starts(lengths: mx.array) -> mx.array:
    return mx.concatenate([mx.zeros(1, mx.int32), mx.cumsum(lengths)])


def _forward_args(x: mx.array, starts: mx.array, counts: mx.array, op: int, parts: int | None,
                  final: bool, dtype: mx.Dtype) -> tuple[str, dict]:
    segments = starts.size - 1
    vector = _vector_width(x.shape[1])
    geometry = _contiguous_geometry(x, segments, parts, vector)
    rows = segments * (1 if final else geometry["parts"])
    return f"forward{vector}", {
        "inputs": [x, starts, counts], "output_shapes": [(rows, x.shape[1])],
        "output_dtypes": [dtype],
        "template": [("OT", dtype), ("OP", op), ("TC", geometry["tc"]), ("V", vector),
                     ("UNROLL", UNROLL), ("FINAL", final),
                     ("CLAMP", final and dtype == mx.float16)],
        "grid": geometry["grid"], "threadgroup": geometry["threadgroup"]}


def launch(x: mx.array, lengths: mx.array, op: str = "sum",
           factory: Callable | None = None) -> tuple[Callable, dict]:
    """The first forward pass (built by `factory`, MLX's by default) and its call's arguments.
    Its output is `(K * P, C)` float32 partials: row `s * P + p` is part `p` of segment `s`."""
    code = _check_op(op)
    _check_x(x)
    lengths = _index_array("lengths", lengths)
    _check_some(lengths)
    starts = _starts(lengths)
    name, args = _forward_args(x, starts, starts, code, None, False, mx.float32)
    return _kernels(factory or mx.fast.metal_kernel)[name], args


def launch_final(partials: mx.array, lengths: mx.array, op: str, dtype: mx.Dtype,
                 factory: Callable | None = None) -> tuple[Callable, dict]:
    """The second forward pass: the same kernel reduces each segment's P partial rows into
    the `(K, C)` result in `dtype` (divided by the length for the mean, float16 clamped)."""
    code = _check_op(op)
    lengths = _index_array("lengths", lengths)
    parts = partials.shape[0] // lengths.size
    segment_starts = mx.arange(0, partials.shape[0] + 1, parts, dtype=mx.int32)
    name, args = _forward_args(partials, segment_starts, _starts(lengths), code, 1, True, dtype)
    return _kernels(factory or mx.fast.metal_kernel)[name], args


def launch_short(x: mx.array, lengths: mx.array, op: str = "sum",
                 factory: Callable | None = None) -> tuple[Callable, dict]:
    """The one-pass forward for many short segments (`segment_reduce` takes it where the
    segments average at most SHORT_ROWS rows) and its call's arguments: `(K, C)` in
    `x.dtype`."""
    code = _check_op(op)
    _check_x(x)
    lengths = _index_array("lengths", lengths)
    _check_some(lengths)
    vector = _vector_width(x.shape[1])
    geometry = _per_segment_geometry(x, lengths.size, vector)
    args = {"inputs": [x, _starts(lengths)], "output_shapes": [(lengths.size, x.shape[1])],
            "output_dtypes": [x.dtype],
            "template": [("OT", x.dtype), ("OP", code), ("V", vector), ("UNROLL", UNROLL),
                         ("CLAMP", x.dtype == mx.float16)],
            "grid": geometry["grid"], "threadgroup": geometry["threadgroup"]}
    return _kernels(factory or mx.fast.metal_kernel)[f"short{vector}"], args


def _segment_backward(x: mx.array, starts: mx.array, y: mx.array, gy: mx.array, code: int
                      ) -> mx.array:
    """dx of the contiguous reduce, on the forward's grid: a plain store per element."""
    geometry = _contiguous_geometry(x, starts.size - 1)
    kernel = _kernels(mx.fast.metal_kernel)["backward"]
    return kernel(inputs=[x, starts, y, gy], output_shapes=[x.shape], output_dtypes=[x.dtype],
                  template=[("T", x.dtype), ("OP", code), ("TC", geometry["tc"])],
                  grid=geometry["grid"], threadgroup=geometry["threadgroup"])[0]


def segment_reduce(x: mx.array, lengths: mx.array, op: str = "sum", *,
                   check_lengths: bool = False) -> mx.array:
    """Reduce the contiguous row segments of `x` (N, C): segment `s` is the next `lengths[s]`
    rows. Returns `(K, C)` in `x.dtype`; differentiable with respect to `x`. `lengths` must be
    non-negative and add up to N; `check_lengths=True` checks that (reading two scalars back
    to the CPU). Unchecked, wrong lengths give wrong sums but no access outside `x`."""
    code = _check_op(op)
    _check_x(x)
    lengths = _index_array("lengths", lengths)
    _check_some(lengths)
    if check_lengths:
        _check_lengths(lengths, x.shape[0], "x")
    starts = _starts(lengths)

    @mx.custom_function
    def reduce(x: mx.array) -> mx.array:
        if x.shape[0] <= SHORT_ROWS * lengths.size:
            kernel, args = launch_short(x, lengths, op)
            return kernel(**args)[0]
        kernel, args = launch(x, lengths, op)
        partials = kernel(**args)[0]
        kernel, args = launch_final(partials, lengths, op, x.dtype)
        return kernel(**args)[0]

    @reduce.vjp
    def reduce_vjp(x: mx.array, gy: mx.array, y: mx.array) -> mx.array:
        return _segment_backward(x, starts, y, gy, code)

    return reduce(x)


# --- indexed segments -----------------------------------------------------------------------


def _per_segment_geometry(x: mx.array, segments: int, vector: int = 1) -> dict:
    """(column-threads of `vector` columns) x (segments) per threadgroup of 256: a thread per
    segment and column vector (the indexed kernels, and the contiguous one for short segments)."""
    column_threads = -(-x.shape[1] // vector)
    tc = _column_tile(column_threads)
    per_group = THREADS // tc
    return {"grid": (-(-column_threads // tc) * tc, -(-segments // per_group) * per_group, 1),
            "threadgroup": (tc, per_group, 1), "tc": tc}


def _indexed_arrays(x: mx.array, indices: mx.array, offsets: mx.array | None,
                    lengths: mx.array) -> tuple[mx.array, mx.array, mx.array]:
    _check_x(x)
    indices = _index_array("indices", indices)
    lengths = _index_array("lengths", lengths)
    if offsets is None:
        offsets = mx.cumsum(lengths) - lengths
    offsets = _index_array("offsets", offsets)
    if offsets.shape != lengths.shape:
        raise ValueError(f"offsets and lengths must have one shape, got {offsets.shape} and "
                         f"{lengths.shape}")
    return indices, offsets, lengths


def launch_indexed(x: mx.array, indices: mx.array, offsets: mx.array | None,
                   lengths: mx.array, op: str = "sum", factory: Callable | None = None
                   ) -> tuple[Callable, dict]:
    """The indexed forward kernel and its call's arguments; its output is the `(K, C)`
    result in `x.dtype`."""
    code = _check_op(op)
    indices, offsets, lengths = _indexed_arrays(x, indices, offsets, lengths)
    vector = _vector_width(x.shape[1])
    geometry = _per_segment_geometry(x, lengths.size, vector)
    args = {"inputs": [x, indices, offsets, lengths],
            "output_shapes": [(lengths.size, x.shape[1])], "output_dtypes": [x.dtype],
            "template": [("T", x.dtype), ("OP", code), ("TC", geometry["tc"]), ("V", vector)],
            "grid": geometry["grid"], "threadgroup": geometry["threadgroup"]}
    return _kernels(factory or mx.fast.metal_kernel)[f"indexed{vector}"], args


def launch_indexed_backward(x: mx.array, indices: mx.array, offsets: mx.array | None,
                            lengths: mx.array, y: mx.array, gy: mx.array, op: str = "sum",
                            factory: Callable | None = None) -> tuple[Callable, dict]:
    """The indexed backward kernel (a scatter-add) and its call's arguments; its output is
    `dx` in float32."""
    code = _check_op(op)
    indices, offsets, lengths = _indexed_arrays(x, indices, offsets, lengths)
    geometry = _per_segment_geometry(x, lengths.size)
    args = {"inputs": [x, indices, offsets, lengths, y, gy],
            "output_shapes": [x.shape], "output_dtypes": [mx.float32],
            "template": [("OP", code), ("TC", geometry["tc"])], "init_value": 0,
            "grid": geometry["grid"], "threadgroup": geometry["threadgroup"]}
    return _kernels(factory or mx.fast.metal_kernel)["indexed_backward"], args


def indexed_segment_reduce(x: mx.array, indices: mx.array, offsets: mx.array | None,
                           lengths: mx.array, op: str = "sum", *,
                           check_indices: bool = False) -> mx.array:
    """Segment `s` reduces the rows `x[indices[p]]` for `p` in `[offsets[s], offsets[s] +
    lengths[s])`; `offsets=None` means the exclusive prefix sum of `lengths`. Returns `(K, C)`
    in `x.dtype`; differentiable with respect to `x`."""
    _check_op(op)
    indices, offsets, lengths = _indexed_arrays(x, indices, offsets, lengths)
    _check_some(lengths)
    if check_indices:
        _check_lengths(lengths, indices.size, "indices")
        _check_index_ranges(indices, offsets, lengths, x.shape[0])

    @mx.custom_function
    def reduce(x: mx.array) -> mx.array:
        kernel, args = launch_indexed(x, indices, offsets, lengths, op)
        return kernel(**args)[0]

    @reduce.vjp
    def reduce_vjp(x: mx.array, gy: mx.array, y: mx.array) -> mx.array:
        kernel, args = launch_indexed_backward(x, indices, offsets, lengths, y, gy, op)
        return kernel(**args)[0].astype(x.dtype)

    return reduce(x)


# --- the same launches in the simulator -----------------------------------------------------


def simulate(x: mx.array, lengths: mx.array, op: str = "sum"):
    """The contiguous forward launch in the simulator: a `metalsim.Run` (partials, report)."""
    import metalsim

    kernel, args = launch(x, lengths, op, metalsim.metal_kernel)
    return metalsim.simulate(kernel, **args)


def simulate_indexed(x: mx.array, indices: mx.array, offsets: mx.array | None,
                     lengths: mx.array, op: str = "sum"):
    """The indexed forward launch in the simulator."""
    import metalsim

    kernel, args = launch_indexed(x, indices, offsets, lengths, op, metalsim.metal_kernel)
    return metalsim.simulate(kernel, **args)


def simulate_indexed_backward(x: mx.array, indices: mx.array, offsets: mx.array | None,
                              lengths: mx.array, y: mx.array, gy: mx.array, op: str = "sum"):
    """The indexed backward (scatter-add) launch in the simulator."""
    import metalsim

    kernel, args = launch_indexed_backward(x, indices, offsets, lengths, y, gy, op,
                                           metalsim.metal_kernel)
    return metalsim.simulate(kernel, **args)
