"""The puzzle cells of Metal-Puzzles' own notebook, read from the vendored copy
(`tests/fixtures/metal_puzzles/metal_puzzles.ipynb`, unchanged), and kernel bodies written here
for its `// FILL ME IN` lines.

`solved_notebook()` is the notebook with every `// FILL ME IN` line replaced by a body (indented
like the line it replaces); nothing else changes. `CELLS` maps a problem's title to the code of
its solved cell, without the `problem.show()` line; running the cells in order after `PRELUDE`
leaves `problem` (a `MetalProblem`) in the namespace. Later cells reuse earlier functions, as in
the notebook ("1D Conv (Full)" reuses `conv_test`).

The bodies are written the way Metal-Puzzles' and GPU-Puzzles' usual solutions are: the tiled
matmul guards its tile loads and bounds its k-loop but lets every thread run it, and only the
threads inside the output write; reductions let one thread write the total.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

NOTEBOOK = Path(__file__).parent / "fixtures" / "metal_puzzles" / "metal_puzzles.ipynb"
FILL_ME_IN = re.compile(r"^(?P<indent>[ \t]*)// FILL ME IN.*$", re.M)
TITLE = re.compile(r'MetalProblem\(\s*"(?P<title>[^"]+)"')

# Per title of the cell that holds the template: the lines that replace `// FILL ME IN`.
BODIES: dict[str, str] = {
    "Map": "out[local_i] = a[local_i] + 10;",
    "Zip": "out[local_i] = a[local_i] + b[local_i];",
    "Guard": """\
if (local_i < a_shape[0]) {
    out[local_i] = a[local_i] + 10;
}""",
    "Map 2D": """\
uint rows = a_shape[0];
uint cols = a_shape[1];
if (thread_x < cols && thread_y < rows) {
    out[thread_y * cols + thread_x] = a[thread_y * cols + thread_x] + 10;
}""",
    "Broadcast": """\
uint rows = a_shape[0];
uint cols = b_shape[1];
if (thread_x < cols && thread_y < rows) {
    out[thread_y * cols + thread_x] = a[thread_y] + b[thread_x];
}""",
    "Threadgroups": """\
if (i < a_shape[0]) {
    out[i] = a[i] + 10;
}""",
    "Threadgroups 2D": """\
uint j = threadgroup_position_in_grid.y * threads_per_threadgroup.y
    + thread_position_in_threadgroup.y;
uint rows = a_shape[0];
uint cols = a_shape[1];
if (i < cols && j < rows) {
    out[j * cols + i] = a[j * cols + i] + 10;
}""",
    "Threadgroup Memory": """\
if (i < a_shape[0]) {
    out[i] = shared[local_i] + 10;
}""",
    "Pooling": """\
if (i < a_shape[0]) {
    shared[local_i] = a[i];
}
threadgroup_barrier(mem_flags::mem_threadgroup);
if (i < a_shape[0]) {
    float total = shared[local_i];
    if (local_i > 0) total += shared[local_i - 1];
    if (local_i > 1) total += shared[local_i - 2];
    out[i] = total;
}""",
    "Dot Product": """\
if (i < a_shape[0]) {
    shared[local_i] = a[i] * b[i];
}
threadgroup_barrier(mem_flags::mem_threadgroup);
if (local_i == 0) {
    float total = 0;
    for (uint k = 0; k < a_shape[0]; k++) {
        total += shared[k];
    }
    out[0] = total;
}""",
    "1D Conv (Simple)": """\
threadgroup float a_shared[THREADGROUP_MAX_CONV_SIZE];
threadgroup float b_shared[MAX_CONV_SIZE];
uint size = a_shape[0];
uint conv = b_shape[0];
uint block = threads_per_threadgroup.x;
a_shared[local_i] = i < size ? a[i] : 0;
if (local_i < conv) {
    b_shared[local_i] = b[local_i];
} else if (local_i < 2 * conv - 1) {
    uint extra = i - conv + block;
    a_shared[local_i - conv + block] = extra < size ? a[extra] : 0;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
if (i < size) {
    float total = 0;
    for (uint j = 0; j < conv; j++) {
        total += a_shared[local_i + j] * b_shared[j];
    }
    out[i] = total;
}""",
    "Prefix Sum (Simple)": """\
if (i < a_shape[0]) {
    cache[local_i] = a[i];
} else {
    cache[local_i] = 0;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint stride = THREADGROUP_MEM_SIZE / 2; stride > 0; stride /= 2) {
    if (local_i < stride) {
        cache[local_i] += cache[local_i + stride];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (local_i == 0) {
    out[threadgroup_position_in_grid.x] = cache[0];
}""",
    "Axis Sum": """\
uint cols = a_shape[1];
cache[local_i] = i < cols ? a[batch * cols + i] : 0;
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint stride = THREADGROUP_MEM_SIZE / 2; stride > 0; stride /= 2) {
    if (local_i < stride) {
        cache[local_i] += cache[local_i + stride];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (local_i == 0) {
    out[batch] = cache[0];
}""",
    # GPU-Puzzles' tiled matmul: guarded tile loads, every thread runs the (bounded) k-loop,
    # so threads outside the output read tile cells nobody loaded and throw the sum away.
    "Matmul (Simple)": """\
uint size = a_shape[0];
float acc = 0;
for (uint t = 0; t < size; t += THREADGROUP_MEM_SIZE) {
    if (j < size && t + local_i < size) {
        a_shared[local_j][local_i] = a[j * size + t + local_i];
    }
    if (i < size && t + local_j < size) {
        b_shared[local_j][local_i] = b[(t + local_j) * size + i];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint k = 0; k < min(THREADGROUP_MEM_SIZE, size - t); k++) {
        acc += a_shared[local_j][k] * b_shared[k][local_i];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (i < size && j < size) {
    out[j * size + i] = acc;
}""",
}


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
    """The vendored notebook, as upstream wrote it."""
    return nbformat.read(NOTEBOOK, as_version=4)


def solved_notebook() -> nbformat.NotebookNode:
    """The vendored notebook with every `// FILL ME IN` line filled in."""
    nb = notebook()
    for cell in nb.cells:
        if cell.cell_type == "code" and FILL_ME_IN.search(cell.source):
            cell.source = fill(cell.source, BODIES[title_of(cell.source)])
    return nb


def _cells() -> tuple[str, dict[str, str]]:
    code = [c.source for c in solved_notebook().cells if c.cell_type == "code"]
    prelude = code[0]
    cells = {}
    for source in code[1:]:
        title = title_of(source)
        if title is not None:
            cells[title] = "\n".join(line for line in source.split("\n")
                                     if line.strip() != "problem.show()")
    return prelude, cells


PRELUDE, CELLS = _cells()
