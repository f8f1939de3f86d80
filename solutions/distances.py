"""Real kernels of notebook 07: point distances for neighbourhood search (pointcloud-ops.md §5).

- `indexed_distance(a, a_idx, b, b_idx, kind)`: `d[t] = dist(a[a_idx[t]], b[b_idx[t]])`, the
  filter of a radius search, for `kind="ball"` (Euclidean, L2) and `kind="cube"` (Chebyshev,
  L-inf). One thread per pair: two index reads, two 12-byte `packed_float3` point reads, one
  write. `within_radius(...)` is the fused variant: a bool mask `d <= radius` (inclusive),
  with no float array written at all.
- `pairwise_distance(p, q)`: the dense `(N, M)` matrix `d[i, j] = |p_i - q_j|` (Euclidean).
  Each threadgroup of 16x16 threads computes a 64x64 block: its threads stage the block's 64
  points of `p` and 64 of `q` in threadgroup memory, and after one barrier each thread writes
  4x4 distances, consecutive threads writing consecutive columns. Each point is read
  `ceil(other side / 64)` times instead of once per pair: for 1.6M pairs the traffic is 1.09x
  the ideal of reading each point once and writing each distance once.

Both are differentiable (`mx.custom_function` VJPs built on kernels). Decisions, where the
original PointCNN++ operator leaves room (pointcloud-ops.md §11):

- Only `"ball"` and `"cube"` are accepted (PointCNN++ treats any other string as cube).
- Coordinates are loaded in their own dtype and the arithmetic runs in float32; the result is
  cast back to the input dtype (PointCNN++ computes in the input dtype; for float32 that is
  the same, for float16 it is one rounding more accurate). No epsilon is added.
- At zero distance the Euclidean norm has no derivative (MLX autodiff of `sqrt(sum(d * d))`
  gives NaN there). Both VJPs give 0 for such a pair, the smallest subgradient, as
  `torch.cdist` does: coincident points (a point and itself) are common in neighbourhood
  search, and one NaN would poison a whole training step. Everywhere else the VJPs equal MLX
  autodiff of the plain-MLX definitions.
- The cube VJP splits the cotangent evenly among the coordinates that tie for the maximum,
  exactly as MLX's `max` VJP does, with the sign of each difference (0 where it is 0).
- Indices may be any integer dtype; other than int32 and uint32 they are cast to int32 here.
  They are not bounds-checked on the GPU; pass `check_indices=True` to check them first.

The backward of `indexed_distance` scatters into `a` and `b` through the indices, which repeat
(a query point has many candidates), so it uses float atomics: one per coordinate per pair.
The backward of `pairwise_distance` needs none: a thread (for `q`) or a SIMD-group (for `p`)
owns one point and loops over the other side, staged in threadgroup memory, so it writes its
gradient once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import mlx.core as mx

KINDS = ("ball", "cube")
THREADS = 256          # one-dimensional kernels: threads per threadgroup
BLOCK = 64             # pairwise: a threadgroup's block of rows and of columns
BLOCK_THREADS = 16     # pairwise: threads per side of the 16x16 threadgroup
SIMD_WIDTH = 32

# MLX passes an input of fewer than 8 elements (a (2, 3) point array) in the `constant` address
# space, so the point loader is overloaded on the address space. `packed_vec<T, 3>` is 3
# consecutive elements with one element's alignment: one 12-byte load per float32 point.
HEADER = """
template <typename T>
inline float3 load_point(const device T* p, uint row) {
    return float3(vec<T, 3>(*(const device packed_vec<T, 3>*)(p + 3 * size_t(row))));
}

template <typename T>
inline float3 load_point(const constant T* p, uint row) {
    return float3(vec<T, 3>(*(const constant packed_vec<T, 3>*)(p + 3 * size_t(row))));
}

inline float chebyshev(float3 diff) {
    float3 m = abs(diff);
    return max(max(m.x, m.y), m.z);
}
"""

INDEXED_SOURCE = """
    uint t = thread_position_in_grid.x;
    if (t >= a_idx_shape[0]) {
        return;
    }
    float3 diff = load_point(a, uint(a_idx[t])) - load_point(b, uint(b_idx[t]));
    float d = CUBE ? chebyshev(diff) : sqrt(dot(diff, diff));
    out[t] = static_cast<T>(d);
"""

WITHIN_SOURCE = """
    uint t = thread_position_in_grid.x;
    if (t >= a_idx_shape[0]) {
        return;
    }
    float3 diff = load_point(a, uint(a_idx[t])) - load_point(b, uint(b_idx[t]));
    float d = CUBE ? chebyshev(diff) : sqrt(dot(diff, diff));
    out[t] = d <= radius;   // inclusive, as in PointCNN++
"""

# grad_a[a_idx[t]] += w and grad_b[b_idx[t]] -= w, where w = cot[t] * d(dist)/d(diff).
INDEXED_VJP_SOURCE = """
    uint t = thread_position_in_grid.x;
    if (t >= a_idx_shape[0]) {
        return;
    }
    uint i = uint(a_idx[t]);
    uint j = uint(b_idx[t]);
    float3 diff = load_point(a, i) - load_point(b, j);
    float g = float(cot[t]);
    float3 w = float3(0.0f);
    if (CUBE) {
        // The cotangent goes to the coordinates that tie for the maximum, split evenly.
        float m = chebyshev(diff);
        float3 tied = select(float3(0.0f), float3(1.0f), abs(diff) == m);
        w = sign(diff) * tied * (g / (tied.x + tied.y + tied.z));
    } else {
        float d = sqrt(dot(diff, diff));
        if (d > 0.0f) {   // 0 at zero distance: see the module docstring
            w = diff * (g / d);
        }
    }
    // Indices repeat (many candidates per query point): the adds must be atomic.
    for (uint k = 0; k < 3; ++k) {
        atomic_fetch_add_explicit(&grad_a[3 * i + k], w[k], memory_order_relaxed);
        atomic_fetch_add_explicit(&grad_b[3 * j + k], -w[k], memory_order_relaxed);
    }
"""

PAIRWISE_HEADER = HEADER + f"""
constant uint BLOCK = {BLOCK};
constant uint BLOCK_THREADS = {BLOCK_THREADS};
constant uint PER_THREAD = BLOCK / BLOCK_THREADS;
"""

PAIRWISE_SOURCE = """
    threadgroup float3 p_tile[BLOCK];
    threadgroup float3 q_tile[BLOCK];
    uint tx = thread_position_in_threadgroup.x;
    uint ty = thread_position_in_threadgroup.y;
    uint lid = ty * BLOCK_THREADS + tx;
    uint n = p_shape[0];
    uint m = q_shape[0];
    uint row0 = threadgroup_position_in_grid.y * BLOCK;
    uint col0 = threadgroup_position_in_grid.x * BLOCK;

    // Threads 0-63 stage the block's points of p, threads 64-127 those of q (zeros past the
    // end, never written out).
    if (lid < BLOCK) {
        p_tile[lid] = row0 + lid < n ? load_point(p, row0 + lid) : float3(0.0f);
    } else if (lid < 2 * BLOCK) {
        uint c = lid - BLOCK;
        q_tile[c] = col0 + c < m ? load_point(q, col0 + c) : float3(0.0f);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    // Rows ty, ty + 16, ...; columns tx, tx + 16, ...: consecutive threads write
    // consecutive columns.
    for (uint r = ty; r < BLOCK; r += BLOCK_THREADS) {
        if (row0 + r >= n) {
            break;
        }
        float3 pr = p_tile[r];
        size_t out_row = size_t(row0 + r) * m;
        for (uint c = tx; c < BLOCK && col0 + c < m; c += BLOCK_THREADS) {
            float3 diff = pr - q_tile[c];
            out[out_row + col0 + c] = static_cast<T>(sqrt(dot(diff, diff)));
        }
    }
"""

# grad of own point x_r: sum over the other side's points y_s of w_rs * (x_r - y_s), where
# w_rs = cot_rs / d_rs (0 where d_rs = 0). The same formula gives grad_p (own = rows of the
# (N, M) matrix, others = q) and grad_q (own = columns, others = p).
VJP_COLUMNS_SOURCE = """
    // grad_q: one thread per column j; the rows i, staged THREADS points at a time, are the
    // other side. Consecutive threads read consecutive elements of a row of cot and d.
    threadgroup float3 others[THREADS];
    uint tid = thread_position_in_threadgroup.x;
    uint j = thread_position_in_grid.x;
    uint n = p_shape[0];
    uint m = q_shape[0];
    float3 own = j < m ? load_point(q, j) : float3(0.0f);
    float3 acc = float3(0.0f);
    for (uint s0 = 0; s0 < n; s0 += THREADS) {
        others[tid] = s0 + tid < n ? load_point(p, s0 + tid) : float3(0.0f);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (j < m) {
            for (uint s = 0; s < THREADS && s0 + s < n; ++s) {
                size_t e = size_t(s0 + s) * m + j;
                float dist = float(d[e]);
                if (dist > 0.0f) {
                    acc += (float(cot[e]) / dist) * (own - others[s]);
                }
            }
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (j < m) {
        for (uint k = 0; k < 3; ++k) {
            grad[3 * j + k] = static_cast<T>(acc[k]);
        }
    }
"""

VJP_ROWS_SOURCE = """
    // grad_p: one SIMD-group per row i, its lanes striding along the row of cot and d (so a
    // SIMD-group reads consecutive elements); the columns j, staged THREADS points at a
    // time, are the other side. simd_sum combines the lanes at the end.
    threadgroup float3 others[THREADS];
    uint tid = thread_position_in_threadgroup.x;
    uint lane = thread_index_in_simdgroup;
    uint i = threadgroup_position_in_grid.x * (THREADS / 32) + simdgroup_index_in_threadgroup;
    uint n = p_shape[0];
    uint m = q_shape[0];
    float3 own = i < n ? load_point(p, i) : float3(0.0f);
    float3 acc = float3(0.0f);
    for (uint s0 = 0; s0 < m; s0 += THREADS) {
        others[tid] = s0 + tid < m ? load_point(q, s0 + tid) : float3(0.0f);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (i < n) {
            for (uint s = lane; s < THREADS && s0 + s < m; s += 32) {
                size_t e = size_t(i) * m + s0 + s;
                float dist = float(d[e]);
                if (dist > 0.0f) {
                    acc += (float(cot[e]) / dist) * (own - others[s]);
                }
            }
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    acc = float3(simd_sum(acc.x), simd_sum(acc.y), simd_sum(acc.z));
    if (i < n && lane < 3) {
        grad[3 * i + lane] = static_cast<T>(acc[lane]);
    }
"""

VJP_HEADER = HEADER + f"constant uint THREADS = {THREADS};\n"


@functools.cache
def _kernels(factory: Callable) -> dict[str, Callable]:
    """Every kernel of this module, built once per factory (MLX's, or metalsim's)."""
    indexed = ["a", "a_idx", "b", "b_idx"]
    pairwise = ["p", "q", "d", "cot"]
    return {
        "indexed": factory(name="indexed_distance", input_names=indexed, output_names=["out"],
                           source=INDEXED_SOURCE, header=HEADER),
        "within": factory(name="indexed_within_radius", input_names=[*indexed, "radius"],
                          output_names=["out"], source=WITHIN_SOURCE, header=HEADER),
        "indexed_vjp": factory(name="indexed_distance_vjp", input_names=[*indexed, "cot"],
                               output_names=["grad_a", "grad_b"], source=INDEXED_VJP_SOURCE,
                               header=HEADER, atomic_outputs=True),
        "pairwise": factory(name="pairwise_distance", input_names=["p", "q"],
                            output_names=["out"], source=PAIRWISE_SOURCE,
                            header=PAIRWISE_HEADER),
        "vjp_rows": factory(name="pairwise_distance_vjp_rows", input_names=pairwise,
                            output_names=["grad"], source=VJP_ROWS_SOURCE, header=VJP_HEADER),
        "vjp_columns": factory(name="pairwise_distance_vjp_columns", input_names=pairwise,
                               output_names=["grad"], source=VJP_COLUMNS_SOURCE,
                               header=VJP_HEADER),
    }


def _factory() -> Callable:
    # Looked up at call time, so that metalsim.patch() applies.
    return mx.fast.metal_kernel


# --- validation -----------------------------------------------------------------------------


def _check_points(name: str, x: mx.array) -> None:
    if x.ndim != 2 or x.shape[1] != 3:
        raise ValueError(f"{name} must be points of shape (N, 3), got shape {x.shape}")
    if not mx.issubdtype(x.dtype, mx.floating):
        raise TypeError(f"{name} must be floating-point coordinates, got {x.dtype}")


def _check_index(name: str, idx: mx.array, points: mx.array, check: bool) -> mx.array:
    if idx.ndim != 1:
        raise ValueError(f"{name} must be a 1-D index array, got shape {idx.shape}")
    if not mx.issubdtype(idx.dtype, mx.integer):
        raise TypeError(f"{name} must be an integer array (int32 preferred), got {idx.dtype}")
    if idx.dtype not in (mx.int32, mx.uint32):
        if points.shape[0] > 2**31 - 1:
            raise ValueError(f"{name}: more than 2^31 points cannot use int32 indices")
        idx = idx.astype(mx.int32)
    if check and idx.size:
        low, high = mx.min(idx).item(), mx.max(idx).item()
        if low < 0 or high >= points.shape[0]:
            raise IndexError(f"{name} has indices in [{low}, {high}], outside [0, "
                             f"{points.shape[0]}) of the points it indexes")
    return idx


def _prepare_indexed(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array, kind: str,
                     check_indices: bool) -> tuple[mx.array, mx.array, mx.array, mx.array]:
    if kind not in KINDS:
        raise ValueError(f"kind must be 'ball' (Euclidean) or 'cube' (Chebyshev), got {kind!r}")
    _check_points("a", a)
    _check_points("b", b)
    a_idx = _check_index("a_idx", a_idx, a, check_indices)
    b_idx = _check_index("b_idx", b_idx, b, check_indices)
    if a_idx.shape != b_idx.shape:
        raise ValueError(f"a_idx and b_idx must have the same length, got {a_idx.shape[0]} "
                         f"and {b_idx.shape[0]}")
    dtype = mx.result_type(a, b)
    return a.astype(dtype), a_idx, b.astype(dtype), b_idx


def _grid(n: int) -> dict[str, tuple[int, int, int]]:
    return {"grid": (n, 1, 1), "threadgroup": (THREADS, 1, 1)}


# --- indexed distance -----------------------------------------------------------------------


def indexed_launch(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array,
                   kind: str = "ball", factory: Callable | None = None
                   ) -> tuple[Callable, dict]:
    """The forward kernel (built by `factory`, MLX's by default) and its call's arguments,
    for inputs with at least one pair."""
    a, a_idx, b, b_idx = _prepare_indexed(a, a_idx, b, b_idx, kind, False)
    args = {"inputs": [a, a_idx, b, b_idx], "output_shapes": [a_idx.shape],
            "output_dtypes": [a.dtype], "template": [("T", a.dtype), ("CUBE", kind == "cube")],
            **_grid(a_idx.shape[0])}
    return _kernels(factory or _factory())["indexed"], args


def indexed_vjp_launch(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array,
                       cotangent: mx.array, kind: str = "ball", factory: Callable | None = None
                       ) -> tuple[Callable, dict]:
    """The backward kernel and its call's arguments: float32 gradients of `a` and `b` for the
    cotangent of the distances, scattered with atomic adds into zero-filled outputs."""
    a, a_idx, b, b_idx = _prepare_indexed(a, a_idx, b, b_idx, kind, False)
    args = {"inputs": [a, a_idx, b, b_idx, cotangent.astype(a.dtype)],
            "output_shapes": [a.shape, b.shape], "output_dtypes": [mx.float32, mx.float32],
            "template": [("CUBE", kind == "cube")], "init_value": 0, **_grid(a_idx.shape[0])}
    return _kernels(factory or _factory())["indexed_vjp"], args


def indexed_distance(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array,
                     kind: str = "ball", *, check_indices: bool = False) -> mx.array:
    """`d[t] = |a[a_idx[t]] - b[b_idx[t]]|`, Euclidean for `kind="ball"`, Chebyshev for
    `kind="cube"`; `a` is `(N_a, 3)`, `b` is `(N_b, 3)`, the indices `(n,)`. Differentiable
    in `a` and `b` (0 gradient at zero distance)."""
    a, a_idx, b, b_idx = _prepare_indexed(a, a_idx, b, b_idx, kind, check_indices)
    if a_idx.size == 0:
        return mx.zeros((0,), dtype=a.dtype)

    @mx.custom_function
    def distance(a: mx.array, b: mx.array) -> mx.array:
        kernel, args = indexed_launch(a, a_idx, b, b_idx, kind)
        return kernel(**args)[0]

    @distance.vjp
    def distance_vjp(primals: tuple[mx.array, mx.array], cotangent: mx.array,
                     _output: mx.array) -> tuple[mx.array, mx.array]:
        a, b = primals
        kernel, args = indexed_vjp_launch(a, a_idx, b, b_idx, cotangent, kind)
        grad_a, grad_b = kernel(**args)
        return grad_a.astype(a.dtype), grad_b.astype(b.dtype)

    return distance(a, b)


def within_radius(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array, radius: float,
                  kind: str = "ball", *, check_indices: bool = False) -> mx.array:
    """The fused radius filter: the bool mask `indexed_distance(...) <= radius` (inclusive),
    computed without writing the distances."""
    a, a_idx, b, b_idx = _prepare_indexed(a, a_idx, b, b_idx, kind, check_indices)
    if a_idx.size == 0:
        return mx.zeros((0,), dtype=mx.bool_)
    kernel, args = within_launch(a, a_idx, b, b_idx, radius, kind)
    return kernel(**args)[0]


def within_launch(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array, radius: float,
                  kind: str = "ball", factory: Callable | None = None
                  ) -> tuple[Callable, dict]:
    """The fused mask kernel and its call's arguments; the radius is a 0-d input, which
    MLX passes by value (`constant float&`), so reading it costs no device traffic."""
    a, a_idx, b, b_idx = _prepare_indexed(a, a_idx, b, b_idx, kind, False)
    args = {"inputs": [a, a_idx, b, b_idx, mx.array(radius, dtype=mx.float32)],
            "output_shapes": [a_idx.shape], "output_dtypes": [mx.bool_],
            "template": [("CUBE", kind == "cube")], **_grid(a_idx.shape[0])}
    return _kernels(factory or _factory())["within"], args


# --- pairwise distance ----------------------------------------------------------------------


def _prepare_pairwise(p: mx.array, q: mx.array) -> tuple[mx.array, mx.array]:
    _check_points("p", p)
    _check_points("q", q)
    dtype = mx.result_type(p, q)
    return p.astype(dtype), q.astype(dtype)


def pairwise_launch(p: mx.array, q: mx.array, factory: Callable | None = None
                    ) -> tuple[Callable, dict]:
    """The forward kernel (built by `factory`, MLX's by default) and its call's arguments,
    for non-empty `p` and `q`."""
    p, q = _prepare_pairwise(p, q)
    n, m = p.shape[0], q.shape[0]
    blocks = (-(-m // BLOCK), -(-n // BLOCK))
    args = {"inputs": [p, q], "output_shapes": [(n, m)], "output_dtypes": [p.dtype],
            "template": [("T", p.dtype)],
            "grid": (blocks[0] * BLOCK_THREADS, blocks[1] * BLOCK_THREADS, 1),
            "threadgroup": (BLOCK_THREADS, BLOCK_THREADS, 1)}
    return _kernels(factory or _factory())["pairwise"], args


def pairwise_vjp_launch(p: mx.array, q: mx.array, d: mx.array, cot: mx.array, side: str,
                        factory: Callable | None = None) -> tuple[Callable, dict]:
    """The backward kernel for `side` "p" (grad_p) or "q" (grad_q), and its call's
    arguments; `d` is the forward output and `cot` its cotangent."""
    own = p if side == "p" else q
    if side == "p":   # one SIMD-group per point of p
        threads = -(-own.shape[0] // (THREADS // SIMD_WIDTH)) * THREADS
    else:             # one thread per point of q, in whole threadgroups (all of them stage)
        threads = -(-own.shape[0] // THREADS) * THREADS
    args = {"inputs": [p, q, d, cot.astype(d.dtype)], "output_shapes": [own.shape],
            "output_dtypes": [own.dtype], "template": [("T", own.dtype)],
            "grid": (threads, 1, 1), "threadgroup": (THREADS, 1, 1)}
    name = "vjp_rows" if side == "p" else "vjp_columns"
    return _kernels(factory or _factory())[name], args


def pairwise_distance(p: mx.array, q: mx.array) -> mx.array:
    """`d[i, j] = |p[i] - q[j]|` (Euclidean) for points `p` `(N, 3)` and `q` `(M, 3)`, as
    `torch.cdist`; differentiable in both (0 gradient for coincident points)."""
    p, q = _prepare_pairwise(p, q)
    if p.shape[0] == 0 or q.shape[0] == 0:
        return mx.zeros((p.shape[0], q.shape[0]), dtype=p.dtype)

    @mx.custom_function
    def distance(p: mx.array, q: mx.array) -> mx.array:
        kernel, args = pairwise_launch(p, q)
        return kernel(**args)[0]

    @distance.vjp
    def distance_vjp(primals: tuple[mx.array, mx.array], cotangent: mx.array,
                     output: mx.array) -> tuple[mx.array, mx.array]:
        p, q = primals
        grads = []
        for side in ("p", "q"):
            kernel, args = pairwise_vjp_launch(p, q, output, cotangent, side)
            grads.append(kernel(**args)[0])
        return tuple(grads)

    return distance(p, q)


# --- the simulator's view -------------------------------------------------------------------


def simulate_indexed(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array,
                     kind: str = "ball"):
    """The forward launch of `indexed_distance` in the simulator: a `metalsim.Run`."""
    import metalsim

    kernel, args = indexed_launch(a, a_idx, b, b_idx, kind, metalsim.metal_kernel)
    return metalsim.simulate(kernel, **args)


def simulate_within(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array,
                    radius: float, kind: str = "ball"):
    """The launch of `within_radius` in the simulator: a `metalsim.Run`."""
    import metalsim

    kernel, args = within_launch(a, a_idx, b, b_idx, radius, kind, metalsim.metal_kernel)
    return metalsim.simulate(kernel, **args)


def simulate_pairwise(p: mx.array, q: mx.array):
    """The forward launch of `pairwise_distance` in the simulator: a `metalsim.Run`."""
    import metalsim

    kernel, args = pairwise_launch(p, q, metalsim.metal_kernel)
    return metalsim.simulate(kernel, **args)


def simulate_indexed_vjp(a: mx.array, a_idx: mx.array, b: mx.array, b_idx: mx.array,
                         cotangent: mx.array, kind: str = "ball"):
    """The backward launch of `indexed_distance` in the simulator: a `metalsim.Run`."""
    import metalsim

    kernel, args = indexed_vjp_launch(a, a_idx, b, b_idx, cotangent, kind,
                                      metalsim.metal_kernel)
    return metalsim.simulate(kernel, **args)
