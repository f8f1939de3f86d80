"""The notebooks: committed copies are exactly what `python -m puzzles build` produces, and
every notebook runs top to bottom in a fresh kernel (learner copies report unsolved puzzles,
solved copies report every puzzle passed)."""

import importlib
import re
import textwrap
import types

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient

from puzzles import notebooks
from puzzles.catalog import all_puzzles
from puzzles.notebooks import (
    NOTEBOOKS,
    SOLVED_NOTEBOOKS,
    array_code,
    build,
    chapter_modules,
    notebook_name,
    render,
)

MODULES = chapter_modules()
MAX_EXECUTED_BYTES = 1_500_000
COPIES = [(m, solved) for m in MODULES for solved in (False, True)]
IDS = [f"{notebook_name(m)}-{'solved' if s else 'learner'}" for m, s in COPIES]


def path_of(module: types.ModuleType, solved: bool):
    return (SOLVED_NOTEBOOKS if solved else NOTEBOOKS) / notebook_name(module)


@pytest.mark.parametrize(("module", "solved"), COPIES, ids=IDS)
def test_committed_notebook_is_what_the_build_produces(module, solved):
    assert path_of(module, solved).read_text() == render(module, solved), (
        "notebooks are generated: run `python -m puzzles build`")


def test_chapters_01_and_02_have_notebooks():
    names = [notebook_name(m) for m in MODULES]
    assert names[:2] == ["01_threads.ipynb", "02_threadgroup_memory.ipynb"]


def test_build_writes_learner_and_solved_copies(tmp_path):
    written = build(tmp_path)
    assert len(written) == 2 * len(MODULES)
    assert (tmp_path / "notebooks" / "01_threads.ipynb").exists()
    assert (tmp_path / "solutions" / "notebooks" / "01_threads.ipynb").exists()


def test_missing_chapter_module_is_skipped(monkeypatch):
    monkeypatch.setattr(notebooks, "CHAPTERS", ("ch01_threads", "ch09_not_written_yet"))
    assert [m.__name__ for m in chapter_modules()] == ["puzzles.ch01_threads"]


def test_real_kernel_section_waits_for_its_solution_module():
    chapter = types.ModuleType("puzzles.ch01_threads")
    chapter.REAL_KERNEL_MARKDOWN = "## The real kernel"
    chapter.REAL_KERNEL_CODE = "from solutions.not_written_yet import kernel"
    assert "The real kernel" not in render(chapter)
    chapter.REAL_KERNEL_CODE = "from solutions import axpby"
    assert "The real kernel" in render(chapter)


def test_intro_and_outro_come_from_the_chapter_module():
    chapter = types.ModuleType("puzzles.ch02_threadgroup_memory")
    chapter.INTRO = "# Hello"
    chapter.OUTRO = "Goodbye"
    cells = nbformat.reads(render(chapter), as_version=4).cells
    assert cells[0].source == "# Hello" and cells[-1].source == "Goodbye"


@pytest.mark.parametrize(("module", "solved"), COPIES[:4], ids=IDS[:4])
def test_puzzle_cells_are_metal_puzzles_style(module, solved):
    text = "\n".join(c.source for c in nbformat.read(path_of(module, solved), 4).cells)
    assert "from utils import MetalKernel, MetalProblem" in text
    for puzzle in (p for p in all_puzzles() if p.chapter == module.__name__.split(".")[-1]):
        assert f"def {puzzle.slug}_test(" in text
        assert f'name="{puzzle.kernel}"' in text
        body = puzzle.solution() if solved else puzzle.template
        assert body.rstrip("\n") in text
    assert ("// FILL ME IN" in text) != solved
    assert "problem.show()" in text and "problem.check()" in text


@pytest.mark.parametrize("array", [np.arange(4, dtype=np.int32),
                                   np.arange(6, dtype=np.float32).reshape(2, 3),
                                   np.ones((5, 5), np.float32),
                                   np.array([[0.3, -1.5]], np.float32)])
def test_inputs_are_written_as_code_that_rebuilds_them_exactly(array):
    import mlx.core as mx

    rebuilt = np.array(eval(array_code(array), {"mx": mx}))
    assert rebuilt.dtype == array.dtype and np.array_equal(rebuilt, array)


def check_outputs(nb: nbformat.NotebookNode) -> list[str]:
    """The printed text of every `problem.check()` cell."""
    return ["".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
            for cell in nb.cells
            if cell.cell_type == "code" and cell.source.strip() == "problem.check()"]


@pytest.mark.parametrize(("module", "solved"), COPIES, ids=IDS)
def test_notebook_runs_top_to_bottom_in_a_fresh_kernel(module, solved):
    nb = nbformat.read(path_of(module, solved), as_version=4)
    # Run from inside notebooks/, as a learner would: `from utils import ...` must still work.
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    verdicts = check_outputs(nb)
    assert verdicts
    word = "Passed Tests!" if solved else "Failed Tests"
    assert all(v.startswith(word) for v in verdicts), verdicts
    # Diagrams scale: an executed notebook stays small enough to open and to commit.
    size = len(nbformat.writes(nb).encode())
    assert size <= MAX_EXECUTED_BYTES, f"{size:,} bytes executed"


def test_calls_wrap_before_the_width_with_arguments_aligned_after_the_parenthesis():
    lines = notebooks._call("x = f(", ["alpha=1", "beta=22", "gamma=333"], width=20)
    assert lines == ["x = f(alpha=1,", "      beta=22,", "      gamma=333)"]
    assert notebooks._call("f(", ["a", "b"]) == ["f(a, b)"]


@pytest.mark.parametrize(("header", "code"), [
    ("constant uint N = 4;", '    header = "constant uint N = 4;"'),
    ("constant uint A = 1;\nconstant uint B = 2;\n",
     '    header = ("constant uint A = 1;\\n"\n              "constant uint B = 2;\\n")')])
def test_headers_are_written_as_python_that_gives_them_back(header, code):
    lines = notebooks._header_assignment(header)
    assert "\n".join(lines) == code
    namespace: dict = {}
    exec(textwrap.dedent("\n".join(lines)), namespace)
    assert namespace["header"].strip() == header.strip()


def test_array_code_writes_infinities_and_nans_as_valid_python():
    import mlx.core as mx

    x = np.array([1.0, -np.inf, np.inf, np.nan], np.float32)
    rebuilt = np.array(eval(notebooks.array_code(x), {"mx": mx}))
    np.testing.assert_array_equal(rebuilt, x)


def test_readme_links_every_notebook_to_colab_in_the_project_repository():
    readme = (notebooks.ROOT / "README.md").read_text()
    for module in MODULES:
        url = (f"https://colab.research.google.com/github/{notebooks.REPOSITORY}/blob/main/"
               f"notebooks/{notebook_name(module)}")
        assert f"({url})" in readme
    pyproject = (notebooks.ROOT / "pyproject.toml").read_text()
    assert f'Repository = "https://github.com/{notebooks.REPOSITORY}"' in pyproject


@pytest.mark.parametrize("module", MODULES, ids=notebook_name)
def test_notebooks_speak_to_the_learner_not_about_the_project(module):
    text = render(module).lower()
    for internal in ("curriculum", "the original", "first port"):
        assert internal not in text


@pytest.mark.parametrize("module", MODULES, ids=notebook_name)
def test_real_kernel_section_shows_the_source_collapsed_and_explains_the_report(module):
    cells = nbformat.reads(render(module), as_version=4).cells
    code = next(i for i, c in enumerate(cells) if c.source == module.REAL_KERNEL_CODE.strip())
    sources, report = cells[code - 1].source, cells[code + 1].source
    assert sources.startswith("<details>") and "```metal" in sources
    for module_name, attribute in module.REAL_KERNEL_SOURCES:
        kernel = getattr(importlib.import_module(module_name), attribute)
        assert textwrap.dedent(kernel).strip() in sources
    assert report.startswith("### Reading the report")
    for figure in ("grid", "threadgroup", "SIMD-group efficiency", "traffic"):
        assert figure in report


def test_axpby_report_explained_is_the_one_printed():
    import mlx.core as mx

    from puzzles import ch01_threads
    from solutions.axpby import simulate

    x, y = mx.random.normal((1000, 37)), mx.random.normal((37,))
    summary = simulate(x, y, 2.0, -0.5).report.summary()
    for line in summary.splitlines():
        if line.startswith(("grid", "SIMD-group efficiency")):
            for figure in line.replace(",", "").split():
                if figure[0].isdigit() or figure[0] == "(":
                    assert figure.strip(",") in ch01_threads.REAL_KERNEL_REPORT, line


def puzzle_sections(nb: nbformat.NotebookNode) -> tuple[list[str], dict[str, list[str]]]:
    """The code cells before the first puzzle (the setup), and each puzzle's code cells by its
    heading ("## Puzzle 19: Matmul (Tiled)"), up to the next puzzle or the closing section."""
    setup: list[str] = []
    sections: dict[str, list[str]] = {}
    current = None
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("## "):
            heading = cell.source.splitlines()[0]
            if heading.startswith("## Puzzle "):
                current = heading
            elif current is not None:
                current = "end"
            sections.setdefault(current, [])
        elif cell.cell_type == "code":
            (setup if current is None else sections[current]).append(cell.source)
    sections.pop("end", None)
    sections.pop(None, None)
    return setup, sections


@pytest.mark.parametrize("module", MODULES, ids=notebook_name)
def test_every_puzzle_runs_right_after_the_setup_cells_in_any_order(module, capsys):
    # Puzzle 19 used to need the `matmul_spec` that only puzzle 18's cell defined.
    setup, sections = puzzle_sections(nbformat.read(path_of(module, True), as_version=4))
    assert sections
    for heading, cells in reversed(sections.items()):
        namespace: dict = {}
        for code in [*setup, *cells]:
            exec(code, namespace)
        out = capsys.readouterr().out
        assert out.count("Passed Tests!") == sum(c == "problem.check()" for c in cells), (
            heading, out)


@pytest.mark.parametrize(("module", "solved"), COPIES, ids=IDS)
def test_the_names_check_prints_are_in_the_puzzles_markdown(module, solved):
    # Each MetalProblem's name (what its verdict prints) appears in the puzzle's Markdown.
    nb = nbformat.read(path_of(module, solved), as_version=4)
    markdown = ""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            markdown = cell.source if cell.source.startswith("## Puzzle ") else markdown
        for name in re.findall(r'MetalProblem\(\s*"([^"]+)"', cell.source):
            assert name in markdown, (name, markdown.splitlines()[0])


@pytest.mark.parametrize("module", MODULES, ids=notebook_name)
def test_solved_notebooks_end_each_puzzle_with_its_walkthrough(module):
    chapter = module.__name__.split(".")[-1]
    solved = "\n".join(c.source for c in nbformat.read(path_of(module, True), 4).cells)
    learner = "\n".join(c.source for c in nbformat.read(path_of(module, False), 4).cells)
    for puzzle in (p for p in all_puzzles() if p.chapter == chapter):
        walkthrough = f"### Walkthrough: {puzzle.title}\n\n{puzzle.walkthrough()}"
        assert walkthrough in solved
        assert puzzle.walkthrough() not in learner
