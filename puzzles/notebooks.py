"""Build the notebooks from the catalog: `notebooks/NN_name.ipynb` for learners and solved
copies in `solutions/notebooks/` (`python -m puzzles build`).

A chapter module `puzzles/chNN_name.py` becomes `NN_name.ipynb`. Besides its registered
puzzles, the module may define (all optional):

- `TITLE`: the chapter's name (`python -m puzzles list` shows it);
- `INTRO`: Markdown before the puzzles, a string or a list of strings (one cell each);
- `OUTRO`: Markdown after the puzzles;
- `REAL_KERNEL_MARKDOWN` and `REAL_KERNEL_CODE`: the closing "real kernel" section, a Markdown
  cell and a code cell. The section is left out while a `solutions.*` module that the code
  imports does not exist yet;
- `REAL_KERNEL_SOURCES`: `(module, attribute)` pairs naming the Metal source strings of the real
  kernel, shown in a collapsed `<details>` block before the code;
- `REAL_KERNEL_REPORT`: Markdown after the code that explains every figure it prints.

Each puzzle gets a Markdown cell (title and description) and code cells in Metal-Puzzles' API:
the spec, `def <slug>_test(...)` returning a `MetalKernel` whose body is `source = \"\"\"...\"\"\"`,
the `MetalProblem` with `problem.show()`, then `problem.check()`; a puzzle with Metal-Puzzles
titles (`cases_by_title`) gets one problem per title, named in its Markdown. A puzzle's cells
need only the setup cell, so puzzles run in any order. Solved copies end each puzzle with its
walkthrough (`solutions/walkthroughs/`). A spec that uses nothing but `mx` and `np` is copied
into the notebook; otherwise the notebook imports it from the chapter module.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import json
import textwrap
import types
from pathlib import Path

import nbformat
import numpy as np

from puzzles.catalog import CHAPTERS, ROOT, Case, Puzzle, all_puzzles

NOTEBOOKS = ROOT / "notebooks"
SOLVED_NOTEBOOKS = ROOT / "solutions" / "notebooks"

# Where the project lives: Colab installs it from here (pyproject.toml's `Repository` URL and
# the README's "Open in Colab" links name the same repository; a test keeps them in step).
REPOSITORY = "metal-puzzles/metal-puzzles"
PROJECT_REQUIREMENT = f"metal-puzzles @ git+https://github.com/{REPOSITORY}"

# The first cell of every notebook. Colab starts with no copy of this project, so the cell
# installs it there, with its version ranges (not requirements.txt's pins: Colab's own Jupyter
# packages stay as they are). Elsewhere it does nothing: the README's install comes first.
COLAB_INSTALL_CODE = f"""\
# On Colab, install this project (metalsim, the puzzles, MLX's CPU build); elsewhere, nothing to do.
import subprocess
import sys

if "google.colab" in sys.modules:
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet",
                    "{PROJECT_REQUIREMENT}"], check=True)"""

SETUP_CODE = """\
import mlx.core as mx
from utils import MetalKernel, MetalProblem"""

SPEC_MODULES = {"mx", "np"}  # names a spec may use and still be copied into a notebook


def chapter_modules() -> list[types.ModuleType]:
    """The chapter modules that exist, in order (a missing chapter is skipped)."""
    modules = []
    for name in CHAPTERS:
        if importlib.util.find_spec(f"puzzles.{name}") is not None:
            modules.append(importlib.import_module(f"puzzles.{name}"))
    return modules


def notebook_name(module: types.ModuleType) -> str:
    """`puzzles.ch01_threads` -> `01_threads.ipynb`."""
    return module.__name__.rsplit(".", 1)[-1].removeprefix("ch") + ".ipynb"


def render(module: types.ModuleType, solved: bool = False) -> str:
    """The notebook of one chapter module as .ipynb text (deterministic)."""
    chapter = module.__name__.rsplit(".", 1)[-1]
    puzzles = [p for p in all_puzzles() if p.chapter == chapter]
    cells: list[tuple[str, str]] = []
    intro = getattr(module, "INTRO", [])
    cells += [("markdown", text) for text in ([intro] if isinstance(intro, str) else intro)]
    cells += [("code", COLAB_INSTALL_CODE), ("code", SETUP_CODE)]
    for puzzle in puzzles:
        cells += _puzzle_cells(puzzle, module, solved)
    if getattr(module, "OUTRO", ""):
        cells.append(("markdown", module.OUTRO))
    code = getattr(module, "REAL_KERNEL_CODE", "")
    if getattr(module, "REAL_KERNEL_MARKDOWN", "") and code and _imports_exist(code):
        cells.append(("markdown", module.REAL_KERNEL_MARKDOWN))
        sources = getattr(module, "REAL_KERNEL_SOURCES", ())
        if sources:
            cells.append(("markdown", kernel_sources_markdown(sources)))
        cells.append(("code", code))
        if getattr(module, "REAL_KERNEL_REPORT", ""):
            cells.append(("markdown", module.REAL_KERNEL_REPORT))
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    for i, (kind, text) in enumerate(cells):
        make = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
        cell = make(text.strip("\n"))
        cell.id = f"cell-{i:03d}"  # stable ids: a rebuild changes nothing
        nb.cells.append(cell)
    return nbformat.writes(nb) + "\n"


def build(root: Path = ROOT) -> list[Path]:
    """Write every chapter's learner and solved notebooks under `root`; return their paths."""
    written = []
    for module in chapter_modules():
        for folder, solved in (("notebooks", False), ("solutions/notebooks", True)):
            path = root / folder / notebook_name(module)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(render(module, solved))
            written.append(path)
    return written


# --- puzzle cells ---------------------------------------------------------------------------


def _puzzle_cells(puzzle: Puzzle, module: types.ModuleType, solved: bool
                  ) -> list[tuple[str, str]]:
    """The puzzle's cells. They need only the setup cell: each puzzle defines its own spec
    (puzzles sharing one define it again), so the puzzles run in any order. A solved copy
    ends the puzzle with its walkthrough."""
    titled = list(puzzle.cases_by_title.items()) or [(puzzle.title, puzzle.visible)]
    cells = [("markdown", f"## Puzzle {puzzle.number}: {puzzle.title}\n\n{puzzle.description}"
              + _test_names(puzzle, [title for title, _ in titled]))]
    first = _spec_code(puzzle, module) + "\n\n\n" + _test_function(puzzle, solved)
    for n, (title, case) in enumerate(titled, 1):
        code = _problem_code(puzzle, title, case)
        cells.append(("code", f"{first}\n\n\n{code}" if n == 1 else code))
        cells.append(("code", "problem.check()"))
    if solved:
        cells.append(("markdown", f"### Walkthrough: {puzzle.title}\n\n{puzzle.walkthrough()}"))
    return cells


def _test_names(puzzle: Puzzle, titles: list[str]) -> str:
    """A closing paragraph naming the problems the cells check, where their names (those of
    Metal-Puzzles, which `check()` prints) are not the puzzle's."""
    if titles == [puzzle.title]:
        return ""
    names = " and ".join(f"**{title}**" for title in titles)
    tests = "test carries" if len(titles) == 1 else "tests carry"
    return (f"\n\nThe {tests} Metal-Puzzles' name{'s' if len(titles) > 1 else ''} for this "
            f"puzzle, which `check()` prints: {names}.")


def _spec_code(puzzle: Puzzle, module: types.ModuleType) -> str:
    spec = puzzle.spec
    used = inspect.getclosurevars(spec)
    if set(used.globals) <= SPEC_MODULES and not used.nonlocals:
        return inspect.getsource(spec).strip("\n")
    return (f"# The spec uses helpers of the catalog: see {spec.__module__.replace('.', '/')}.py\n"
            f"from {spec.__module__} import {spec.__name__}")


def _test_function(puzzle: Puzzle, solved: bool) -> str:
    """`def <slug>_test(...)`: the header (if any) as a string, the body as a block string, and
    one `return MetalKernel(...)` with keyword arguments."""
    body = puzzle.solution() if solved else puzzle.template
    params = ", ".join(f"{name}: mx.array" for name in puzzle.input_names)
    lines = [f"def {puzzle.slug}_test({params}) -> MetalKernel:"]
    arguments = [f"name={json.dumps(puzzle.kernel)}",
                 f"input_names={json.dumps(list(puzzle.input_names))}",
                 f"output_names={json.dumps(list(puzzle.output_names))}"]
    if puzzle.header:
        lines += _header_assignment(puzzle.header)
        arguments.append("header=header")
    lines += ['    source = """', *body.rstrip("\n").split("\n"), '"""']
    arguments.append("source=source")
    if puzzle.atomic_outputs:
        arguments.append("atomic_outputs=True")
    return "\n".join(lines + _call("    return MetalKernel(", arguments))


def _header_assignment(header: str) -> list[str]:
    """`header = "..."`; a header of several lines as adjacent literals, one line each."""
    parts = [json.dumps(line + "\n") for line in header.strip("\n").split("\n")]
    if len(parts) == 1:
        return [f"    header = {json.dumps(header.strip())}"]
    return [f"    header = ({parts[0]}", *(f"              {part}" for part in parts[1:-1]),
            f"              {parts[-1]})"]


def _call(opening: str, arguments: list[str], width: int = 99) -> list[str]:
    """`opening` + the arguments + `)`, wrapped at `width` with continuation lines aligned
    after the parenthesis."""
    indent = " " * len(opening)
    lines, line = [], opening
    for n, argument in enumerate(arguments):
        text = argument + (")" if n == len(arguments) - 1 else ",")
        fresh = line in (opening, indent)
        if not fresh and len(line) + 1 + len(text) > width:
            lines.append(line)
            line, fresh = indent, True
        line += text if fresh else " " + text
    return lines + [line]


def _problem_code(puzzle: Puzzle, title: str, case: Case) -> str:
    lines = [f"{name} = {array_code(x)}" for name, x in zip(puzzle.input_names, case.inputs)]
    arguments = [json.dumps(title), f"{puzzle.slug}_test", f"[{', '.join(puzzle.input_names)}]",
                 repr(tuple(case.output_shape)), f"grid={tuple(case.grid)!r}"]
    if tuple(case.threadgroup) != (1, 1, 1):
        arguments.append(f"threadgroup={tuple(case.threadgroup)!r}")
    arguments.append(f"spec={puzzle.spec.__name__}")
    return "\n".join(lines + _call("problem = MetalProblem(", arguments) + ["problem.show()"])


def array_code(x: np.ndarray) -> str:
    """MLX code that rebuilds `x` (exactly), as Metal-Puzzles writes its inputs."""
    flat = x.reshape(-1)
    dtype = "" if x.dtype == np.int32 and np.array_equal(flat, np.arange(flat.size)) else (
        f", dtype=mx.{x.dtype.name}")
    shape = x.shape[0] if x.ndim == 1 else tuple(x.shape)
    if np.array_equal(flat, np.arange(flat.size)):
        code = f"mx.arange({flat.size}{dtype})"
        return code if x.ndim == 1 else f"{code}.reshape({', '.join(map(str, x.shape))})"
    if x.dtype == np.float32 and np.all(flat == 1):
        return f"mx.ones({shape!r})"
    return f"mx.array({_list_code(x)}, dtype=mx.{x.dtype.name})"


def _list_code(x: np.ndarray) -> str:
    items = [_scalar_code(v) for v in x] if x.ndim == 1 else [_list_code(row) for row in x]
    return f"[{', '.join(items)}]"


def _scalar_code(v: np.generic) -> str:
    # str() of a numpy scalar is its shortest exact form: 0.3, not 0.30000001192092896.
    if isinstance(v, np.floating) and not np.isfinite(v):
        return "float('nan')" if np.isnan(v) else f"float('{'-' if v < 0 else ''}inf')"
    return str(v)


def kernel_sources_markdown(sources: tuple[tuple[str, str], ...]) -> str:
    """A collapsed block with the Metal source of each `(module, attribute)` string, headed by
    where it lives (the body MLX wraps in its generated signature)."""
    parts = ["<details>", "<summary>The kernel's source (click to open)</summary>", ""]
    for module_name, attribute in sources:
        text = getattr(importlib.import_module(module_name), attribute).strip("\n")
        where = f"{module_name.replace('.', '/')}.py"
        parts += [f"`{attribute}` in `{where}`:", "", "```metal", textwrap.dedent(text), "```", ""]
    return "\n".join(parts + ["</details>"])


def _imports_exist(code: str) -> bool:
    """Whether every `solutions.*` module the code imports exists."""
    for node in ast.walk(ast.parse(code)):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            if name.startswith("solutions.") and importlib.util.find_spec(name) is None:
                return False
    return True
