"""Metal-Puzzles' own notebook, vendored unchanged, runs beside this `utils.py`: unsolved, every
cell runs and every check fails gracefully; with its `// FILL ME IN` lines filled in, all 17
checks pass, hidden cases included. Each notebook runs in one fresh Jupyter kernel, as a learner
runs it."""

import hashlib
import os
from pathlib import Path

import nbformat
import pytest
from metal_puzzles_cells import NOTEBOOK, notebook, solved_notebook
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
UPSTREAM_BLOB = "4d48ea618864837ce285b6838ce9fc4a34626efe"


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


def test_the_fixture_is_the_upstream_notebook_byte_for_byte():
    data = NOTEBOOK.read_bytes()
    blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    assert blob == UPSTREAM_BLOB  # git's id of metal_puzzles.ipynb at commit d631c7f
    assert sum("// FILL ME IN" in c.source for c in code_cells(notebook())) == 14


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
