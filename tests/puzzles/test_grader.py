"""The grader: reads kernels from a notebook without running its Python, grades them with
hidden cases, and copes with unsolved, partly solved and malformed notebooks."""

import importlib.util
import json
from pathlib import Path

import nbformat
import pytest

from puzzles.catalog import find
from puzzles.grader import GradeError, format_table, grade
from puzzles.notebooks import NOTEBOOKS


def learner_notebook() -> nbformat.NotebookNode:
    return nbformat.read(NOTEBOOKS / "01_threads.ipynb", as_version=4)


def save(nb: nbformat.NotebookNode, tmp_path: Path) -> Path:
    path = tmp_path / "submission.ipynb"
    nbformat.write(nb, path)
    return path


def solve(nb: nbformat.NotebookNode, title: str) -> None:
    """Replace the template of puzzle `title` by its reference solution, as a learner would."""
    puzzle = find(title)
    cell = next(c for c in nb.cells if f"def {puzzle.slug}_test(" in c.source)
    cell.source = cell.source.replace(puzzle.template.rstrip("\n"),
                                      puzzle.solution().rstrip("\n"))


def by_title(rows: list[dict]) -> dict[str, dict]:
    return {row["title"]: row for row in rows}


def test_unsolved_notebook_passes_nothing(tmp_path):
    rows = grade(save(learner_notebook(), tmp_path))
    assert [row["puzzle"] for row in rows] == list(range(1, 8))
    assert all(row["status"] == "fail" and row["note"] == "unsolved" for row in rows)


def test_one_solved_puzzle_passes_and_only_that_one(tmp_path):
    nb = learner_notebook()
    solve(nb, "Guard")
    rows = grade(save(nb, tmp_path))
    assert [row["title"] for row in rows if row["status"] == "pass"] == ["Guard"]
    guard = by_title(rows)["Guard"]
    assert guard["counts"]["global_reads"] == 1
    assert len(guard["cases"]) == 6  # the hidden cases ran, those of other lengths too


def test_wrong_kernel_gets_the_checkers_verdict(tmp_path):
    nb = learner_notebook()
    cell = next(c for c in nb.cells if "def guard_test(" in c.source)
    cell.source = cell.source.replace("// FILL ME IN (roughly 1-3 lines)",
                                      "out[local_i] = a[local_i] + 10;")
    row = by_title(grade(save(nb, tmp_path)))["Guard"]
    assert row["status"] == "error" and "out-of-bounds" in row["reason"]
    assert any("out[local_i] = a[local_i] + 10;" in d for d in row["diagnostics"])


def test_planted_code_in_the_notebook_is_never_run(tmp_path):
    marker = tmp_path / "planted"
    nb = learner_notebook()
    solve(nb, "Map")
    plant = f"open({str(marker)!r}, 'w').write('ran')"
    nb.cells.insert(1, nbformat.v4.new_code_cell(plant))
    cell = next(c for c in nb.cells if "def zip_test(" in c.source)
    cell.source = cell.source.replace('    source = """', f'    {plant}\n    source = """')
    cell = next(c for c in nb.cells if "def guard_test(" in c.source)
    cell.source = cell.source.replace('    source = """', f'    source = {plant} or """')
    rows = by_title(grade(save(nb, tmp_path)))
    assert not marker.exists()
    assert rows["Map"]["status"] == "pass"
    guard = rows["Guard"]
    assert guard["status"] == "unreadable" and "could not read this statically" in guard["reason"]
    assert "a call to `open(...).write`" in guard["reason"]


def test_cell_that_is_not_python_is_reported_against_its_puzzle(tmp_path):
    nb = learner_notebook()
    cell = next(c for c in nb.cells if "def zip_test(" in c.source)
    cell.source = cell.source.replace("def zip_test(", "def zip_test((")
    row = by_title(grade(save(nb, tmp_path)))["Zip"]
    assert row["status"] == "error" and row["note"] == "unparseable"
    assert "not valid Python" in row["reason"]


def test_missing_puzzles_of_the_chapter_are_listed(tmp_path):
    nb = learner_notebook()
    nb.cells = [c for c in nb.cells if "def broadcast_test(" not in c.source]
    row = by_title(grade(save(nb, tmp_path)))["Broadcast"]
    assert row["status"] == "fail" and row["note"] == "missing"


def test_ipython_magics_do_not_stop_the_grader(tmp_path):
    nb = learner_notebook()
    solve(nb, "Map")
    cell = next(c for c in nb.cells if "def map_test(" in c.source)
    cell.source = "%%time\n!ls\n" + cell.source
    assert by_title(grade(save(nb, tmp_path)))["Map"]["status"] == "pass"


@pytest.mark.parametrize(("text", "message"), [
    ("this is not json", "invalid JSON"),
    ("[1, 2, 3]", "not an object"),
    ('{"cells": 5}', "no list of 'cells'"),
])
def test_malformed_notebook_gives_a_clear_message(tmp_path, text, message):
    path = tmp_path / "broken.ipynb"
    path.write_text(text)
    with pytest.raises(GradeError, match=message):
        grade(path)


def test_odd_cells_are_skipped_not_fatal(tmp_path):
    path = tmp_path / "odd.ipynb"
    path.write_text(json.dumps({"cells": [5, {"cell_type": "code", "source": 7},
                                          {"cell_type": "code", "source": ["x = ", "1"]}]}))
    assert grade(path) == []


def test_metal_puzzles_style_notebook_is_graded(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "metal_puzzles_cells", Path(__file__).parent.parent / "metal_puzzles_cells.py")
    cells = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cells)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(cells.PRELUDE)] + [
        nbformat.v4.new_code_cell(code + "\nproblem.show()") for code in cells.CELLS.values()]
    rows = grade(save(nb, tmp_path))
    passed = {row["puzzle"] for row in rows if row["status"] == "pass"}
    assert passed == {*range(1, 14), 18, 19}
    assert {row["note"] for row in rows if row["status"] != "pass"} == {"missing"}


def test_table_has_one_line_per_row_and_a_summary(tmp_path):
    nb = learner_notebook()
    solve(nb, "Map")
    table = format_table(grade(save(nb, tmp_path))).splitlines()
    assert len(table) == 1 + 7 + 1
    assert table[-1] == "1 of 7 puzzles passed"


def test_a_source_assigned_under_an_if_wins_over_an_older_module_level_one(tmp_path):
    nb = learner_notebook()
    nb.cells.insert(4, nbformat.v4.new_code_cell(
        'USE_MINE = True\nsource = "out[thread_position_in_grid.x] = 0;"'))
    cell = next(c for c in nb.cells if "def map_test(" in c.source)
    cell.source = cell.source.replace(
        '    source = """',
        '    if USE_MINE:\n        source = "uint i = thread_position_in_grid.x; '
        'out[i] = a[i] + 10;"\n    else:\n        source = """')
    assert by_title(grade(save(nb, tmp_path), seed=5))["Map"]["status"] == "pass"


def test_the_learners_input_names_are_used(tmp_path):
    nb = learner_notebook()
    cell = next(c for c in nb.cells if "def map_test(" in c.source)
    cell.source = cell.source.replace('input_names=["a"]', 'input_names=["x"]').replace(
        "// FILL ME IN (roughly 1 line)", "out[local_i] = x[local_i] + 10;")
    assert by_title(grade(save(nb, tmp_path), seed=5))["Map"]["status"] == "pass"
    cell.source = cell.source.replace('input_names=["x"]', 'input_names=["x", "y"]')
    row = by_title(grade(save(nb, tmp_path), seed=5))["Map"]
    assert row["status"] == "error" and "2 input(s) ['x', 'y']" in row["reason"]


def test_the_table_never_prints_control_characters(tmp_path):
    nb = learner_notebook()
    cell = next(c for c in nb.cells if "def map_test(" in c.source)
    cell.source = cell.source.replace("// FILL ME IN (roughly 1 line)",
                                      "#error \x1b[2K\x1b[1A\u202e passed")
    table = format_table(grade(save(nb, tmp_path), seed=5))
    assert "\x1b" not in table and "\u202e" not in table
    assert "[2K[1A passed" in table


def test_each_notebook_is_read_on_its_own_as_its_own_python_kernel_runs_it():
    from puzzles.grader import Notebook, read_submission

    defines = Notebook("a.ipynb", ["SRC = 'uint i = thread_position_in_grid.x;\\nout[i] = 1;'"])
    uses = Notebook("b.ipynb", [
        "def map_test(a):\n    return MetalKernel(name='map', input_names=['a'], "
        "output_names=['out'], source=SRC)",
        "problem = MetalProblem('Map', map_test, [a], (4,))"])
    found = read_submission([defines, uses]).found[1]
    assert found.kernel is None and "`SRC` has no value" in found.error
    assert found.notebook == "b.ipynb"


def test_an_nbformat_3_notebook_with_cells_in_worksheets_is_converted_and_graded(tmp_path):
    nb = learner_notebook()
    solve(nb, "Guard")
    path = tmp_path / "old.ipynb"
    path.write_text(nbformat.writes(nbformat.convert(nb, 3), version=3))
    assert "worksheets" in json.loads(path.read_text())
    rows = by_title(grade(path))
    assert rows["Guard"]["status"] == "pass" and rows["Map"]["note"] == "unsolved"
