'''A notebook in Metal-Puzzles' API, written for this project's tests: the drop-in check.

A learner who has a Metal-Puzzles notebook runs it beside this project's `utils.py`. This module
writes such a notebook, in its own words and layout but with everything the drop-in relies on:
Metal-Puzzles' calls (`MetalKernel(name, input_names, output_names, header="", source="")` by
keyword and by position, `MetalProblem(name, fn, inputs, output_shape, grid=, threadgroup=,
spec=)`, `problem.show()` closing a cell and `problem.check()` in the next), its 14 puzzles
under its 17 titles with their inputs and launch sizes, specs that are plain MLX (one reads a
notebook global), a kernel function reused by a later title, a transposed input, and templates
whose kernel bodies say `// FILL ME IN`. Threadgroup Memory's template, like Metal-Puzzles',
waits at a barrier inside `if (idx < a_shape[0])`.

`notebook()` is the template: every cell runs and every check fails. `solved_notebook()`
replaces each `// FILL ME IN` line with the body written here for it (indented like the line);
nothing else changes. `PRELUDE` is the solved notebook's first code cell and `CELLS` maps each
title to its solved cell without `problem.show()`; run in order after `PRELUDE`, each cell
leaves its `problem` (a `MetalProblem`) in the namespace.

The bodies are written the way GPU-Puzzles-style solutions usually are: the tiled matmul guards
its tile loads and bounds its k-loop but lets every thread run it, and only the threads inside
the output write; reductions let one thread write the total.
'''

from __future__ import annotations

import re
from typing import NamedTuple

import nbformat

FILL_ME_IN = re.compile(r"^(?P<indent>[ \t]*)// FILL ME IN.*$", re.M)
TITLE = re.compile(r'MetalProblem\(\s*"(?P<title>[^"]+)"')

INTRODUCTION = """\
# Metal-Puzzles' API, one cell per title

Each puzzle below is a kernel whose body is missing: the line `// FILL ME IN` marks where it
goes. Run a cell to launch the kernel and draw what its threads touched, then the next cell
to compare the output with the spec on this launch and on hidden ones."""

PRELUDE_CODE = """\
import mlx.core as mx
from utils import MetalKernel, MetalProblem"""


class Exercise(NamedTuple):
    """One title of the notebook: its Markdown, its code cell, and the lines for the blank."""

    title: str
    prose: str
    code: str
    body: str = ""


EXERCISES = [
    Exercise(
        "Map",
        "Add 10 to every element of `a`. One thread per element.",
        '''\
def plus_ten(a: mx.array) -> mx.array:
    return a + 10


def map_kernel(a: mx.array) -> MetalKernel:
    source = """
    uint idx = thread_position_in_grid.x;
    // FILL ME IN: one statement
    """
    return MetalKernel(name="map", input_names=["a"], output_names=["out"], source=source)


problem = MetalProblem("Map", map_kernel, [mx.arange(4)], (4,), grid=(4, 1, 1), spec=plus_ten)
problem.show()''',
        "out[idx] = a[idx] + 10;",
    ),
    Exercise(
        "Zip",
        "Add `a` and `b` element by element. One thread per element.",
        '''\
def elementwise_sum(a: mx.array, b: mx.array) -> mx.array:
    return a + b


def zip_kernel(a: mx.array, b: mx.array) -> MetalKernel:
    # Positional, in Metal-Puzzles' order: name, input_names, output_names, header, source.
    return MetalKernel("zip", ["a", "b"], ["out"], "", """
    uint idx = thread_position_in_grid.x;
    // FILL ME IN: one statement
    """)


left, right = mx.arange(4), mx.arange(4)
problem = MetalProblem("Zip", zip_kernel, [left, right], (4,), grid=(4, 1, 1),
                       spec=elementwise_sum)
problem.show()''',
        "out[idx] = a[idx] + b[idx];",
    ),
    Exercise(
        "Guard",
        "Map again, but the grid has 8 threads for 4 elements: the extra threads must not "
        "touch memory.",
        '''\
def guard_kernel(a: mx.array) -> MetalKernel:
    source = """
    uint idx = thread_position_in_grid.x;
    // FILL ME IN: check idx against a_shape[0] first
    """
    return MetalKernel(name="guard", input_names=["a"], output_names=["out"], source=source)


problem = MetalProblem("Guard", guard_kernel, [mx.arange(4)], (4,), grid=(8, 1, 1),
                       spec=plus_ten)
problem.show()''',
        """\
if (idx < a_shape[0]) {
    out[idx] = a[idx] + 10;
}""",
    ),
    Exercise(
        "Map 2D",
        "Map over a 2 x 2 array with a 3 x 3 grid. Buffers are flat: row `r`, column `c` is "
        "element `r * columns + c`.",
        '''\
def map_2d_kernel(a: mx.array) -> MetalKernel:
    source = """
    uint col = thread_position_in_grid.x;
    uint row = thread_position_in_grid.y;
    // FILL ME IN: guard both coordinates
    """
    return MetalKernel(name="map_2D", input_names=["a"], output_names=["out"], source=source)


square = mx.arange(4).reshape((2, 2))
problem = MetalProblem("Map 2D", map_2d_kernel, [square], (2, 2), grid=(3, 3, 1),
                       spec=plus_ten)
problem.show()''',
        """\
uint width = a_shape[1];
if (row < a_shape[0] && col < width) {
    uint at = row * width + col;
    out[at] = a[at] + 10;
}""",
    ),
    Exercise(
        "Broadcast",
        "A column `a` (2 x 1) plus a row `b` (1 x 2) gives a 2 x 2 `out`; the grid is 3 x 3.",
        '''\
def broadcast_kernel(a: mx.array, b: mx.array) -> MetalKernel:
    source = """
    uint col = thread_position_in_grid.x;
    uint row = thread_position_in_grid.y;
    // FILL ME IN: out[row][col] = a[row] + b[col]
    """
    return MetalKernel(name="broadcast", input_names=["a", "b"], output_names=["out"],
                       source=source)


column, row = mx.arange(2).reshape(2, 1), mx.arange(2).reshape(1, 2)
problem = MetalProblem("Broadcast", broadcast_kernel, [column, row], (2, 2), grid=(3, 3, 1),
                       spec=elementwise_sum)
problem.show()''',
        """\
uint width = b_shape[1];
if (row < a_shape[0] && col < width) {
    out[row * width + col] = a[row] + b[col];
}""",
    ),
    Exercise(
        "Threadgroups",
        "Map over 9 elements with threadgroups of 4 threads, 12 threads in all.",
        '''\
def threadgroups_kernel(a: mx.array) -> MetalKernel:
    source = """
    uint idx = thread_position_in_threadgroup.x
        + threadgroup_position_in_grid.x * threads_per_threadgroup.x;
    // FILL ME IN: as in Guard
    """
    return MetalKernel(name="threadgroups", input_names=["a"], output_names=["out"],
                       source=source)


problem = MetalProblem("Threadgroups", threadgroups_kernel, [mx.arange(9)], (9,),
                       grid=(12, 1, 1), threadgroup=(4, 1, 1), spec=plus_ten)
problem.show()''',
        """\
if (idx < a_shape[0]) {
    out[idx] = a[idx] + 10;
}""",
    ),
    Exercise(
        "Threadgroups 2D",
        "Map over a 5 x 5 array of ones: a 6 x 6 grid in threadgroups of 3 x 3.",
        '''\
def threadgroups_2d_kernel(a: mx.array) -> MetalKernel:
    source = """
    uint col = thread_position_in_threadgroup.x
        + threadgroup_position_in_grid.x * threads_per_threadgroup.x;
    // FILL ME IN: the row the same way, then guard both
    """
    return MetalKernel(name="threadgroups_2D", input_names=["a"], output_names=["out"],
                       source=source)


problem = MetalProblem("Threadgroups 2D", threadgroups_2d_kernel, [mx.ones((5, 5))], (5, 5),
                       grid=(6, 6, 1), threadgroup=(3, 3, 1), spec=plus_ten)
problem.show()''',
        """\
uint row = thread_position_in_threadgroup.y
    + threadgroup_position_in_grid.y * threads_per_threadgroup.y;
uint width = a_shape[1];
if (row < a_shape[0] && col < width) {
    out[row * width + col] = a[row * width + col] + 10;
}""",
    ),
    Exercise(
        "Threadgroup Memory",
        "Map over 8 ones in threadgroups of 4, reading each value back from threadgroup "
        "memory, which the template has already filled.",
        '''\
def staged_kernel(a: mx.array) -> MetalKernel:
    header = "constant uint STAGE = 4;"
    source = """
    threadgroup float staged[STAGE];
    uint idx = thread_position_in_grid.x;
    uint lane = thread_position_in_threadgroup.x;
    if (idx < a_shape[0]) {
        staged[lane] = a[idx];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    // FILL ME IN: read staged[lane], not a
    """
    return MetalKernel(name="threadgroup_memory", input_names=["a"], output_names=["out"],
                       header=header, source=source)


problem = MetalProblem("Threadgroup Memory", staged_kernel, [mx.ones(8)], (8,),
                       grid=(8, 1, 1), threadgroup=(4, 1, 1), spec=plus_ten)
problem.show()''',
        """\
if (idx < a_shape[0]) {
    out[idx] = staged[lane] + 10;
}""",
    ),
    Exercise(
        "Pooling",
        "Each `out[i]` is the sum of `a[i]` and the (up to) two elements before it. One global "
        "read and one global write per thread; share the rest through threadgroup memory.",
        '''\
def trailing_sum(a: mx.array) -> mx.array:
    values = a.tolist()
    return mx.array([sum(values[max(0, i - 2) : i + 1]) for i in range(len(values))])


def pooling_kernel(a: mx.array) -> MetalKernel:
    header = "constant uint STAGE = 8;"
    source = """
    threadgroup float window[STAGE];
    uint idx = thread_position_in_grid.x;
    uint lane = thread_position_in_threadgroup.x;
    // FILL ME IN: stage, wait, then add up to three neighbours
    """
    return MetalKernel(name="pooling", input_names=["a"], output_names=["out"],
                       header=header, source=source)


problem = MetalProblem("Pooling", pooling_kernel, [mx.arange(8)], (8,), grid=(8, 1, 1),
                       threadgroup=(8, 1, 1), spec=trailing_sum)
problem.show()''',
        """\
bool inside = idx < a_shape[0];
if (inside) {
    window[lane] = a[idx];
}
threadgroup_barrier(mem_flags::mem_threadgroup);
if (inside) {
    float sum = window[lane];
    for (uint back = 1; back <= 2 && back <= lane; back++) {
        sum += window[lane - back];
    }
    out[idx] = sum;
}""",
    ),
    Exercise(
        "Dot Product",
        "`out[0]` is the dot product of `a` and `b` (8 floats each). Two global reads and one "
        "global write per thread at most.",
        '''\
def dot(a: mx.array, b: mx.array) -> mx.array:
    return (a * b).sum().reshape(1)


def dot_kernel(a: mx.array, b: mx.array) -> MetalKernel:
    header = "constant uint STAGE = 8;"
    source = """
    threadgroup float products[STAGE];
    uint idx = thread_position_in_grid.x;
    uint lane = thread_position_in_threadgroup.x;
    // FILL ME IN: each thread one product, one thread the total
    """
    return MetalKernel(name="dot_product", input_names=["a", "b"], output_names=["out"],
                       header=header, source=source)


x = mx.arange(8, dtype=mx.float32)
problem = MetalProblem("Dot Product", dot_kernel, [x, x], (1,), grid=(8, 1, 1),
                       threadgroup=(8, 1, 1), spec=dot)
problem.show()''',
        """\
products[lane] = idx < a_shape[0] ? a[idx] * b[idx] : 0.0f;
threadgroup_barrier(mem_flags::mem_threadgroup);
if (lane == 0) {
    float total = 0.0f;
    for (uint k = 0; k < threads_per_threadgroup.x; k++) {
        total += products[k];
    }
    out[0] = total;
}""",
    ),
    Exercise(
        "1D Conv (Simple)",
        "`out[i]` is the sum over `j` of `a[i + j] * b[j]`, reading `a` as zero past its end. "
        "Threadgroups of 8 threads stage their slice of `a`, the slice's halo and the taps `b` "
        "in threadgroup memory; two global reads per thread at most. First 6 values and 3 "
        "taps, then (next cell) 15 values and 4 taps.",
        '''\
def correlate(a: mx.array, b: mx.array) -> mx.array:
    taps = b.shape[0]
    padded = mx.concatenate([a, mx.zeros(taps - 1, dtype=a.dtype)])
    return sum(padded[j : j + a.shape[0]] * b[j] for j in range(taps))


def conv_kernel(a: mx.array, b: mx.array) -> MetalKernel:
    header = """
    constant uint SLICE_AND_HALO = 12;
    constant uint MOST_TAPS = 4;
    """
    source = """
    uint idx = thread_position_in_grid.x;
    uint lane = thread_position_in_threadgroup.x;
    // FILL ME IN: stage, wait, then multiply and add
    """
    return MetalKernel(name="1D_conv", input_names=["a", "b"], output_names=["out"],
                       header=header, source=source)


a = mx.arange(6, dtype=mx.float32)
b = mx.arange(3, dtype=mx.float32)
problem = MetalProblem("1D Conv (Simple)", conv_kernel, [a, b], (6,), grid=(8, 1, 1),
                       threadgroup=(8, 1, 1), spec=correlate)
problem.show()''',
        # Lanes below taps - 1 load the halo, the next `taps` lanes load the taps: with
        # `a[idx]`, two global reads per thread (so a threadgroup needs 2 * taps - 1 threads).
        """\
threadgroup float slice[SLICE_AND_HALO];
threadgroup float weights[MOST_TAPS];
uint size = a_shape[0];
uint taps = b_shape[0];
uint width = dispatch_threads_per_threadgroup.x;
slice[lane] = idx < size ? a[idx] : 0.0f;
if (lane + 1 < taps) {
    uint beyond = idx + width;
    slice[width + lane] = beyond < size ? a[beyond] : 0.0f;
} else if (lane + 1 < 2 * taps) {
    weights[lane + 1 - taps] = b[lane + 1 - taps];
}
threadgroup_barrier(mem_flags::mem_threadgroup);
if (idx < size) {
    float acc = 0.0f;
    for (uint j = 0; j < taps; j++) {
        acc += slice[lane + j] * weights[j];
    }
    out[idx] = acc;
}""",
    ),
    Exercise(
        "1D Conv (Full)",
        "",
        '''\
a, b = mx.arange(15, dtype=mx.float32), mx.arange(4, dtype=mx.float32)
problem = MetalProblem("1D Conv (Full)", conv_kernel, [a, b], (15,), grid=(16, 1, 1),
                       threadgroup=(8, 1, 1), spec=correlate)
problem.show()''',
    ),
    Exercise(
        "Prefix Sum (Simple)",
        "Sum `a` per threadgroup of 8 threads: `out[g]` is the total of threadgroup `g`'s "
        "slice. Reduce in threadgroup memory, halving the live threads each step. First 8 "
        "values (one threadgroup), then (next cell) 15 (two).",
        '''\
GROUP = 8  # threads per threadgroup, which the spec needs too


def group_totals(a: mx.array) -> mx.array:
    starts = range(0, a.shape[0], GROUP)
    return mx.array([a[s : s + GROUP].sum().item() for s in starts], dtype=mx.float32)


def prefix_sum_kernel(a: mx.array) -> MetalKernel:
    source = """
    threadgroup float partial[GROUP];
    uint idx = thread_position_in_grid.x;
    uint lane = thread_position_in_threadgroup.x;
    // FILL ME IN: load (zero past the end), reduce, lane 0 writes
    """
    return MetalKernel(name="prefix_sum", input_names=["a"], output_names=["out"],
                       header=f"constant uint GROUP = {GROUP};", source=source)


problem = MetalProblem("Prefix Sum (Simple)", prefix_sum_kernel, [mx.arange(8)], (1,),
                       grid=(8, 1, 1), threadgroup=(8, 1, 1), spec=group_totals)
problem.show()''',
        """\
uint live = threads_per_threadgroup.x;
partial[lane] = idx < a_shape[0] ? a[idx] : 0.0f;
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint step = 1; step < live; step *= 2) {
    if (lane % (2 * step) == 0 && lane + step < live) {
        partial[lane] += partial[lane + step];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (lane == 0) {
    out[threadgroup_position_in_grid.x] = partial[0];
}""",
    ),
    Exercise(
        "Prefix Sum (Full)",
        "",
        '''\
problem = MetalProblem("Prefix Sum (Full)", prefix_sum_kernel, [mx.arange(15)], (2,),
                       grid=(16, 1, 1), threadgroup=(8, 1, 1), spec=group_totals)
problem.show()''',
    ),
    Exercise(
        "Axis Sum",
        "Sum each row of a 4 x 6 `a` into `out` (4 x 1): one threadgroup of 8 threads per row "
        "(the grid is 8 x 4).",
        '''\
def row_sums(a: mx.array) -> mx.array:
    return a.sum(axis=1, keepdims=True)


AXIS_HEADER = "constant uint GROUP = 8;"
AXIS_SOURCE = """
threadgroup float partial[GROUP];
uint lane = thread_position_in_threadgroup.x;
uint row = threadgroup_position_in_grid.y;
// FILL ME IN: as in Prefix Sum, along row `row`
"""


def axis_sum_kernel(a: mx.array) -> MetalKernel:
    return MetalKernel("axis_sum", ["a"], ["out"], AXIS_HEADER, AXIS_SOURCE)


rows = mx.arange(4 * 6).reshape((4, 6))
problem = MetalProblem("Axis Sum", axis_sum_kernel, [rows], (4, 1), grid=(8, 4, 1),
                       threadgroup=(8, 1, 1), spec=row_sums)
problem.show()''',
        """\
uint width = a_shape[1];
uint live = threads_per_threadgroup.x;
partial[lane] = lane < width ? a[row * width + lane] : 0.0f;
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint step = 1; step < live; step *= 2) {
    if (lane % (2 * step) == 0 && lane + step < live) {
        partial[lane] += partial[lane + step];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (lane == 0) {
    out[row] = partial[0];
}""",
    ),
    Exercise(
        "Matmul (Simple)",
        "`out = a @ b` for square matrices, through 3 x 3 tiles of threadgroup memory: first "
        "2 x 2 (one tile), then (next cell) 8 x 8, in at most 6 global reads per thread.",
        '''\
def matmul(a: mx.array, b: mx.array) -> mx.array:
    return a @ b


def matmul_kernel(a: mx.array, b: mx.array) -> MetalKernel:
    header = "constant uint TILE = 3;"
    source = """
    threadgroup float a_tile[TILE][TILE];
    threadgroup float b_tile[TILE][TILE];
    uint col = thread_position_in_grid.x;
    uint row = thread_position_in_grid.y;
    uint tx = thread_position_in_threadgroup.x;
    uint ty = thread_position_in_threadgroup.y;
    // FILL ME IN: walk the tiles along k, accumulate, write
    """
    return MetalKernel(name="matmul", input_names=["a", "b"], output_names=["out"],
                       header=header, source=source)


def square_pair(n: int) -> list[mx.array]:
    a = mx.arange(n * n, dtype=mx.float32).reshape((n, n))
    return [a, a.T]


problem = MetalProblem("Matmul (Simple)", matmul_kernel, square_pair(2), (2, 2),
                       grid=(3, 3, 1), threadgroup=(3, 3, 1), spec=matmul)
problem.show()''',
        # Guarded tile loads, every thread in the (bounded) k-loop: threads outside the output
        # add up tile cells nobody loaded, and write nothing.
        """\
uint n = a_shape[0];
float acc = 0.0f;
for (uint base = 0; base < n; base += TILE) {
    if (row < n && base + tx < n) {
        a_tile[ty][tx] = a[row * n + base + tx];
    }
    if (col < n && base + ty < n) {
        b_tile[ty][tx] = b[(base + ty) * n + col];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    uint depth = min(TILE, n - base);
    for (uint k = 0; k < depth; k++) {
        acc += a_tile[ty][k] * b_tile[k][tx];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (row < n && col < n) {
    out[row * n + col] = acc;
}""",
    ),
    Exercise(
        "Matmul (Full)",
        "",
        '''\
problem = MetalProblem("Matmul (Full)", matmul_kernel, square_pair(8), (8, 8),
                       grid=(9, 9, 1), threadgroup=(3, 3, 1), spec=matmul)
problem.show()''',
    ),
]


def title_of(code: str) -> str | None:
    """The title of the first `MetalProblem("...")` in a cell, if any."""
    found = TITLE.search(code)
    return found["title"] if found else None


def fill(code: str, body: str) -> str:
    """`code` with its `// FILL ME IN` line replaced by `body`, indented like that line."""
    def replacement(match: re.Match) -> str:
        return "\n".join(match["indent"] + line if line else line
                         for line in body.split("\n"))
    filled, count = FILL_ME_IN.subn(replacement, code)
    assert count == 1, f"expected one FILL ME IN line, found {count}"
    return filled


def notebook() -> nbformat.NotebookNode:
    """The template: Markdown, the imports, then per title a code cell and a check cell."""
    cells = [nbformat.v4.new_markdown_cell(INTRODUCTION),
             nbformat.v4.new_code_cell(PRELUDE_CODE)]
    for exercise in EXERCISES:
        if exercise.prose:
            cells.append(nbformat.v4.new_markdown_cell(f"## {exercise.title}\n\n{exercise.prose}"))
        cells += [nbformat.v4.new_code_cell(exercise.code),
                  nbformat.v4.new_code_cell("problem.check()")]
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python",
                                  "name": "python3"}}
    nb.cells = cells
    return nb


def solved_notebook() -> nbformat.NotebookNode:
    """The template with every `// FILL ME IN` line filled in."""
    bodies = {exercise.title: exercise.body for exercise in EXERCISES}
    nb = notebook()
    for cell in nb.cells:
        if cell.cell_type == "code" and FILL_ME_IN.search(cell.source):
            cell.source = fill(cell.source, bodies[title_of(cell.source)])
    return nb


def _cells() -> tuple[str, dict[str, str]]:
    code = [c.source for c in solved_notebook().cells if c.cell_type == "code"]
    cells = {}
    for source in code[1:]:
        title = title_of(source)
        if title is not None:
            cells[title] = "\n".join(line for line in source.split("\n")
                                     if line.strip() != "problem.show()")
    return code[0], cells


PRELUDE, CELLS = _cells()
