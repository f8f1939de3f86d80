"""Small kernels whose diagrams show what `metalsim.viz` draws: the images in `imgs/`, the viz
tests and benchmarks use them. Each is one launch: `example(name).simulate(trace=True)`."""

from __future__ import annotations

from dataclasses import dataclass, field

import mlx.core as mx
import numpy as np

import metalsim
from metalsim.api import Run

# None of these kernels answers a puzzle, nor comes close: the student release ships this module
# (tests/puzzles/grading/test_release.py checks it line by line and runs each on every puzzle).

# Reverses each threadgroup's slice of `a` through threadgroup memory.
REVERSE = """
threadgroup float shared[8];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
shared[local_i] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
out[i] = shared[threads_per_threadgroup.x - 1 - local_i];
"""

# Per threadgroup, how many positions have a[i] > b[i]: the last thread counts what all loaded.
COUNT_GREATER = """
threadgroup float shared[8];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
shared[local_i] = a[i] > b[i] ? 1.0f : 0.0f;
threadgroup_barrier(mem_flags::mem_threadgroup);
if (local_i == threads_per_threadgroup.x - 1) {
    float count = 0;
    for (uint k = 0; k < threads_per_threadgroup.x; ++k) count += shared[k];
    out[threadgroup_position_in_grid.x] = count;
}
"""

# out = a + transpose(b): b is read a tile at a time along its rows (as memory lies) into
# threadgroup memory, and each thread takes its element from the tile's column; tiles past the
# matrix edge are padded.
TRANSPOSE_TILED = """
threadgroup float tile[TILE][TILE + 1];
uint row = thread_position_in_grid.y, col = thread_position_in_grid.x;
uint ly = thread_position_in_threadgroup.y, lx = thread_position_in_threadgroup.x;
uint n = a_shape[0];
uint from_row = threadgroup_position_in_grid.x * TILE + ly;
uint from_col = threadgroup_position_in_grid.y * TILE + lx;
tile[ly][lx] = from_row < n && from_col < n ? b[from_row * n + from_col] : 0.0f;
threadgroup_barrier(mem_flags::mem_threadgroup);
if (row < n && col < n) out[row * n + col] = a[row * n + col] + tile[lx][ly];
"""

# The README's racy kernel: a shift through threadgroup memory without the barrier.
RACY = """
threadgroup float tile[8];
uint i = thread_position_in_threadgroup.x;
tile[i] = a[i];
out[i] = i < 7 ? tile[i + 1] : 0;
"""

COUNT_POSITIVE = """
uint i = thread_position_in_grid.x;
if (a[i] > 0) atomic_fetch_add_explicit(&out[0], 1, memory_order_relaxed);
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


def _transpose(n: int, tile: int, name: str, title: str) -> Example:
    rng = np.random.default_rng(0)
    a = rng.integers(0, 4, (n, n)).astype(np.float32)
    b = rng.integers(0, 4, (n, n)).astype(np.float32)
    side = -(-n // tile) * tile
    return Example(name, title, ("a", "b"), TRANSPOSE_TILED, (a, b), (n, n), (side, side, 1),
                   (tile, tile, 1), header=f"#define TILE {tile}\n")


EXAMPLES: dict[str, Example] = {e.name: e for e in (
    Example("map", "Map: out[i] = 2 a[i] + 1", ("a",),
            "uint i = thread_position_in_grid.x;\nout[i] = 2 * a[i] + 1;",
            (np.arange(8, dtype=np.float32),), (8,), (8, 1, 1), (4, 1, 1)),
    Example("reverse", "Reverse each threadgroup's slice, through threadgroup memory",
            ("a",), REVERSE, (np.arange(16, dtype=np.float32),), (16,), (16, 1, 1),
            (8, 1, 1)),
    Example("count_greater", "How many a[i] > b[i]: one count per threadgroup", ("a", "b"),
            COUNT_GREATER, (np.arange(16, dtype=np.float32),
                            np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3],
                                     np.float32)), (2,), (16, 1, 1), (8, 1, 1)),
    _transpose(8, 3, "transpose_tiled", "a + transpose(b): 8×8 in 3×3 tiles"),
    Example("racy", "A race: threadgroup memory read without a barrier", ("a",), RACY,
            (np.arange(8, dtype=np.float32),), (8,), (8, 1, 1), (8, 1, 1)),
    Example("out_of_bounds", "A missing guard: reads past the end of a", ("a",),
            "uint i = thread_position_in_grid.x;\nout[i] = a[i] + a[i + 1];",
            (np.arange(6, dtype=np.float32),), (8,), (8, 1, 1), (4, 1, 1)),
    Example("count_positive", "Counting with an atomic: how many a[i] > 0", ("a",),
            COUNT_POSITIVE, (np.array([0, 2, -1, 2, 3, -2, 0, 1], np.int32),), (1,),
            (8, 1, 1), (8, 1, 1), output_dtype="int32", atomic_outputs=True, init_value=0),
    _transpose(256, 16, "transpose_256", "a + transpose(b) 256×256 (16×16 tiles), not traced"),
)}


def example(name: str) -> Example:
    return EXAMPLES[name]
