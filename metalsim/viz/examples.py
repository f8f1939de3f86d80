"""Small kernels whose diagrams show what `metalsim.viz` draws: the images in `imgs/`, the viz
tests and benchmarks use them. Each is one launch: `example(name).simulate(trace=True)`."""

from __future__ import annotations

from dataclasses import dataclass, field

import mlx.core as mx
import numpy as np

import metalsim
from metalsim.api import Run

POOLING = """
threadgroup float shared[8];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
shared[local_i] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
float total = shared[local_i];
if (local_i >= 1) total += shared[local_i - 1];
if (local_i >= 2) total += shared[local_i - 2];
out[i] = total;
"""

DOT = """
threadgroup float shared[8];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
shared[local_i] = a[i] * b[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
if (local_i == 0) {
    float total = 0;
    for (uint k = 0; k < threads_per_threadgroup.x; ++k) total += shared[k];
    out[threadgroup_position_in_grid.x] = total;
}
"""

# Tiles of TILE x TILE through threadgroup memory; tiles past the matrix edge are zero-padded.
MATMUL_TILED = """
threadgroup float a_tile[TILE][TILE];
threadgroup float b_tile[TILE][TILE];
uint row = thread_position_in_grid.y, col = thread_position_in_grid.x;
uint ly = thread_position_in_threadgroup.y, lx = thread_position_in_threadgroup.x;
uint n = a_shape[0];
float acc = 0;
for (uint k0 = 0; k0 < n; k0 += TILE) {
    a_tile[ly][lx] = row < n && k0 + lx < n ? a[row * n + k0 + lx] : 0.0f;
    b_tile[ly][lx] = k0 + ly < n && col < n ? b[(k0 + ly) * n + col] : 0.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint k = 0; k < TILE; ++k) acc += a_tile[ly][k] * b_tile[k][lx];
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (row < n && col < n) out[row * n + col] = acc;
"""

# The README's racy kernel: a shift through threadgroup memory without the barrier.
RACY = """
threadgroup float tile[8];
uint i = thread_position_in_threadgroup.x;
tile[i] = a[i];
out[i] = i < 7 ? tile[i + 1] : 0;
"""

HISTOGRAM = """
uint i = thread_position_in_grid.x;
atomic_fetch_add_explicit(&out[a[i]], 1, memory_order_relaxed);
"""


@dataclass(frozen=True)
class Example:
    """One kernel and one launch of it."""

    name: str
    title: str
    input_names: tuple[str, ...]
    source: str
    inputs: tuple[np.ndarray, ...]
    output_shape: tuple[int, ...]
    grid: tuple[int, int, int]
    threadgroup: tuple[int, int, int]
    header: str = ""
    output_dtype: str = "float32"
    atomic_outputs: bool = False
    init_value: float | None = None
    call: dict = field(default_factory=dict)

    def kernel(self) -> metalsim.Kernel:
        return metalsim.metal_kernel(name=self.name, input_names=list(self.input_names),
                                     output_names=["out"], source=self.source,
                                     header=self.header, atomic_outputs=self.atomic_outputs)

    def simulate(self, trace: bool = True) -> Run:
        return metalsim.simulate(
            self.kernel(), inputs=[mx.array(x) for x in self.inputs],
            output_shapes=[self.output_shape], output_dtypes=[getattr(mx, self.output_dtype)],
            grid=self.grid, threadgroup=self.threadgroup, init_value=self.init_value,
            trace=trace)


def _matmul(n: int, tile: int, name: str, title: str) -> Example:
    rng = np.random.default_rng(0)
    a = rng.integers(0, 4, (n, n)).astype(np.float32)
    b = rng.integers(0, 4, (n, n)).astype(np.float32)
    side = -(-n // tile) * tile
    return Example(name, title, ("a", "b"), MATMUL_TILED, (a, b), (n, n), (side, side, 1),
                   (tile, tile, 1), header=f"#define TILE {tile}\n")


EXAMPLES: dict[str, Example] = {e.name: e for e in (
    Example("map", "Map: out[i] = a[i] + 10", ("a",),
            "uint i = thread_position_in_grid.x;\nout[i] = a[i] + 10;",
            (np.arange(8, dtype=np.float32),), (8,), (8, 1, 1), (4, 1, 1)),
    Example("pooling", "Pooling: sum of the last 3 elements, through threadgroup memory",
            ("a",), POOLING, (np.arange(16, dtype=np.float32),), (16,), (16, 1, 1),
            (8, 1, 1)),
    Example("dot_product", "Dot product: one partial sum per threadgroup", ("a", "b"), DOT,
            (np.arange(16, dtype=np.float32), np.full(16, 2, np.float32)), (2,), (16, 1, 1),
            (8, 1, 1)),
    _matmul(8, 3, "matmul_tiled", "Tiled matmul: 8×8 in 3×3 tiles"),
    Example("racy", "A race: threadgroup memory read without a barrier", ("a",), RACY,
            (np.arange(8, dtype=np.float32),), (8,), (8, 1, 1), (8, 1, 1)),
    Example("out_of_bounds", "A missing guard: reads past the end of a", ("a",),
            "uint i = thread_position_in_grid.x;\nout[i] = a[i] + a[i + 1];",
            (np.arange(6, dtype=np.float32),), (8,), (8, 1, 1), (4, 1, 1)),
    Example("histogram", "Histogram with atomics", ("a",), HISTOGRAM,
            (np.array([0, 2, 1, 2, 3, 2, 0, 1], np.int32),), (4,), (8, 1, 1), (8, 1, 1),
            output_dtype="int32", atomic_outputs=True, init_value=0),
    _matmul(256, 16, "matmul_256", "Tiled matmul 256×256 (16×16 tiles), not traced"),
)}


def example(name: str) -> Example:
    return EXAMPLES[name]
