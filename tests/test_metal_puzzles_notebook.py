"""A notebook in Metal-Puzzles' API (tests/metal_puzzles_cells.py: its calls, titles and launch
sizes, this project's text and kernels) runs beside this `utils.py`: as a template, every cell
runs and every check fails gracefully; with its `// FILL ME IN` lines filled in, all 17 checks
pass, hidden cases included. Each notebook runs in one fresh Jupyter kernel, as a learner runs
it."""

import os
from pathlib import Path

import nbformat
import numpy as np
import pytest
from metal_puzzles_cells import CELLS, PRELUDE, notebook, solved_notebook
from nbclient import NotebookClient

from puzzles.catalog import all_puzzles

ROOT = Path(__file__).resolve().parent.parent
# Metal-Puzzles' titles, in its notebook's order: 14 puzzles, three of them with two tests.
METAL_PUZZLES_TITLES = [
    "Map", "Zip", "Guard", "Map 2D", "Broadcast", "Threadgroups", "Threadgroups 2D",
    "Threadgroup Memory", "Pooling", "Dot Product", "1D Conv (Simple)", "1D Conv (Full)",
    "Prefix Sum (Simple)", "Prefix Sum (Full)", "Axis Sum", "Matmul (Simple)", "Matmul (Full)"]


def execute(nb: nbformat.NotebookNode, cwd: Path, monkeypatch) -> nbformat.NotebookNode:
    # The kernel imports `utils` from this checkout, wherever the notebook runs.
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + (os.pathsep + path if path else ""))
    NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


def code_cells(nb: nbformat.NotebookNode) -> list:
    return [c for c in nb.cells if c.cell_type == "code"]


def errors(nb: nbformat.NotebookNode) -> list[str]:
    return [f"{o.ename}: {o.evalue}" for c in code_cells(nb) for o in c.outputs
            if o.output_type == "error"]


def check_cells(nb: nbformat.NotebookNode) -> list:
    return [c for c in code_cells(nb) if c.source.strip() == "problem.check()"]


def printed(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> dict[str, nbformat.NotebookNode]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        return {name: execute(nb, tmp_path_factory.mktemp(name), monkeypatch)
                for name, nb in (("unsolved", notebook()), ("solved", solved_notebook()))}


def test_the_template_has_metal_puzzles_titles_and_one_blank_per_puzzle():
    cells = code_cells(notebook())
    assert list(CELLS) == METAL_PUZZLES_TITLES
    assert sum("// FILL ME IN" in c.source for c in cells) == 14
    assert len(check_cells(notebook())) == 17


def test_each_title_launches_as_the_catalog_case_of_that_title():
    # The catalog holds Metal-Puzzles' inputs and launch sizes per title; the notebook's cells
    # must launch exactly those, so the drop-in is tested on the launches learners have.
    namespace: dict = {}
    exec(PRELUDE, namespace)
    for title, code in CELLS.items():
        exec(code, namespace)
        problem = namespace["problem"]
        [puzzle] = [p for p in all_puzzles() if title in p.titles]
        case = puzzle.cases_by_title.get(title, puzzle.visible)
        assert (problem.grid, problem.threadgroup) == (case.grid, case.threadgroup), title
        assert problem.output_shapes == tuple(case.output_shape), title
        inputs = [np.array(x) for x in problem.inputs]
        assert [(x.dtype, x.shape) for x in inputs] == [
            (x.dtype, x.shape) for x in case.inputs], title
        assert all(np.array_equal(x, y) for x, y in zip(inputs, case.inputs)), title


def test_unsolved_notebook_runs_with_no_cell_error_and_every_check_fails(ran):
    nb = ran["unsolved"]
    assert errors(nb) == []
    verdicts = [printed(c) for c in check_cells(nb)]
    assert len(verdicts) == 17
    assert all(v.startswith("Failed Tests (") for v in verdicts), verdicts
    assert all("Traceback" not in v for v in verdicts)


def test_solved_notebook_passes_all_17_checks(ran):
    nb = ran["solved"]
    assert errors(nb) == []
    verdicts = [printed(c) for c in check_cells(nb)]
    assert len(verdicts) == 17
    assert all(v.startswith("Passed Tests!") and "hidden" in v for v in verdicts), verdicts


@pytest.mark.parametrize("name", ["unsolved", "solved"])
def test_check_cells_show_only_the_printed_verdict(ran, name):
    # check() returns None, as Metal-Puzzles' does: no `<CheckResult ...>` after the verdict.
    for cell in check_cells(ran[name]):
        assert {o.output_type for o in cell.outputs} == {"stream"}, cell.outputs


def test_show_cells_print_the_score_and_display_the_diagram(ran):
    shows = [c for c in code_cells(ran["solved"]) if c.source.rstrip().endswith("problem.show()")]
    assert len(shows) == 17
    for cell in shows:
        text = printed(cell)
        assert "   Score (Max Per Thread):" in text and "   Budget (Max Per Thread):" in text
        [shown] = [o for o in cell.outputs if o.output_type == "execute_result"]
        assert "<svg" in shown.data["text/html"]  # inline, so JupyterLab keeps the tooltips
