"""`python -m puzzles build --release DIR`: what to hand to students, and what to keep.

    DIR/student/     the learner notebooks and the code they run (utils.py, metalsim/,
                     puzzles/, requirements.txt); no solution text, no `solutions` import
    DIR/solutions/   the bundle to publish later: the reference kernels and modules, their
                     walkthroughs, and the solved notebooks (which end each puzzle with its
                     walkthrough); `problem.solution()` in the student copy says so

The closing "real kernel" section of a chapter imports `solutions.*`, so the student copy
leaves it out.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import nbformat

from puzzles.catalog import ROOT, SOLUTIONS, WALKTHROUGHS
from puzzles.notebooks import chapter_modules, notebook_name, render

STUDENT_CODE = ("utils.py", "metalsim", "puzzles")
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")


def build_release(out: Path) -> list[Path]:
    """Write the student release and the solutions bundle under `out`; return the files."""
    student, bundle = out / "student", out / "solutions"
    for folder in (student, bundle):
        if folder.exists():
            shutil.rmtree(folder)
    written = []
    for module in chapter_modules():
        path = student / "notebooks" / notebook_name(module)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(learner_notebook(render(module, solved=False)), encoding="utf-8")
        written.append(path)
        solved = bundle / "notebooks" / notebook_name(module)
        solved.parent.mkdir(parents=True, exist_ok=True)
        solved.write_text(render(module, solved=True), encoding="utf-8")
        written.append(solved)
    for name in STUDENT_CODE:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, student / name, ignore=IGNORED)
        else:
            shutil.copy2(source, student / name)
    requirements = (ROOT / "requirements.txt").read_text().splitlines()
    (student / "requirements.txt").write_text(
        "\n".join(line for line in requirements if not line.startswith("-e")) + "\n")
    for path in sorted(SOLUTIONS.iterdir()):
        if path.is_file() and path.suffix in (".metal", ".py"):
            shutil.copy2(path, bundle / path.name)
    shutil.copytree(WALKTHROUGHS, bundle / WALKTHROUGHS.name, ignore=IGNORED)
    written += sorted(p for p in out.rglob("*") if p.is_file() and p not in written)
    return written


def learner_notebook(text: str) -> str:
    """A rendered learner notebook without the cells that import `solutions` (and the
    Markdown cell right before each, which introduces it)."""
    nb = nbformat.reads(text, as_version=4)
    keep = []
    for cell in nb.cells:
        if cell.cell_type == "code" and imports_solutions(cell.source):
            if keep and keep[-1].cell_type == "markdown":
                keep.pop()
            continue
        keep.append(cell)
    nb.cells = keep
    return nbformat.writes(nb) + "\n"


def imports_solutions(code: str) -> bool:
    """Whether the code imports the `solutions` package or a module of it."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return "solutions" in code
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "solutions":
            return True
        if isinstance(node, ast.Import) and any(
                alias.name.split(".")[0] == "solutions" for alias in node.names):
            return True
    return False
