"""The gradebook: strict JSON everywhere (a kernel writing infinity included), a status column
per puzzle in grades.csv, cells a spreadsheet can hold, and messages that name the grader's
own limits."""

from __future__ import annotations

import csv
import json

import nbformat
import pytest
from classroom import MAP, kernel_function, learner, map_cell, replace_map_cell, solve

from puzzles.cli import main
from puzzles.grader import grade
from puzzles.grading.outputs import CSV_CELL_LIMIT, _cell, strict_json
from puzzles.grading.static_reader import MAX_STEPS, MAX_WORK

INFINITE = "uint i = thread_position_in_grid.x;\nout[i] = a[i] + 10 + INFINITY;\n"
ASSIGNMENT = ('[assignment]\nseed = 99\n\n[[puzzles]]\npuzzle = "Map"\npoints = 2\n\n'
              '[[puzzles]]\npuzzle = "Zip"\npoints = 1\n')


def refuse_constants(name: str) -> None:
    raise ValueError(f"not strict JSON: {name}")


def strict_load(text: str) -> object:
    return json.loads(text, parse_constant=refuse_constants)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("outputs")
    (root / "class").mkdir()
    for sid, body in {"solved": MAP, "infinite": INFINITE, "unsolved": None}.items():
        nb = learner("01_threads.ipynb")
        if body is not None:
            solve(nb, 1, body)
        nbformat.write(nb, root / "class" / f"{sid}.ipynb")
    nb = learner("01_threads.ipynb")
    replace_map_cell(nb, map_cell(kernel_function("source = open('k.metal').read()")))
    nbformat.write(nb, root / "class" / "unreadable.ipynb")
    (root / "a.toml").write_text(ASSIGNMENT)
    out = root / "out"
    main(["grade", str(root / "class"), "--assignment", str(root / "a.toml"), "--out", str(out),
          "--json", str(root / "rows.json")])
    return {"out": out, "root": root}


def test_every_json_written_is_strict_even_when_a_kernel_writes_infinity(graded):
    out = graded["out"]
    texts = [(out / "grades.json").read_text(), (graded["root"] / "rows.json").read_text()] + [
        p.read_text() for p in (out / "results").rglob("results.json")]
    for text in texts:
        strict_load(text)
    report = strict_load(texts[0])
    row = next(s for s in report["students"] if s["id"] == "infinite")["rows"][0]
    assert row["status"] == "fail"
    assert "inf" in row["cases"][0]["produced"]


def test_strict_json_writes_infinities_as_strings_and_nan_as_null():
    assert strict_load(strict_json([float("inf"), -float("inf"), float("nan"), 1.5])) == [
        "inf", "-inf", None, 1.5]


def test_grades_csv_has_a_status_column_per_puzzle(graded):
    with (graded["out"] / "grades.csv").open(newline="") as f:
        rows = {row["student"]: row for row in csv.DictReader(f)}
    assert list(rows["solved"]) == ["student", "1 Map", "1 Map status", "2 Zip", "2 Zip status",
                                    "total", "max", "status", "notes"]
    assert (rows["solved"]["1 Map"], rows["solved"]["1 Map status"]) == ("2", "pass")
    assert (rows["infinite"]["1 Map"], rows["infinite"]["1 Map status"]) == ("0", "fail")
    assert (rows["unsolved"]["1 Map"], rows["unsolved"]["1 Map status"]) == ("0", "fail")
    assert (rows["unreadable"]["1 Map"], rows["unreadable"]["1 Map status"]) == (
        "0", "unreadable")
    assert rows["solved"]["2 Zip status"] == "fail" and rows["solved"]["status"] == "graded"


def test_a_cell_longer_than_a_spreadsheet_holds_is_cut_with_a_mark():
    cell = _cell("x" * (CSV_CELL_LIMIT + 100))
    assert len(cell) == CSV_CELL_LIMIT and cell.endswith("[cut at the spreadsheet's cell limit]")


def test_the_readers_step_limit_is_named_as_the_graders_own(tmp_path):
    nb = learner("01_threads.ipynb")
    solve(nb, 1, MAP)
    nb.cells.insert(0, nbformat.v4.new_code_cell("def f():\n    f()\n    f()\n\nf()"))
    nbformat.write(nb, tmp_path / "s.ipynb")
    row = next(r for r in grade(tmp_path / "s.ipynb", seed=3) if r["puzzle"] == 1)
    assert row["status"] == "unreadable"
    assert f"more than {MAX_STEPS} steps, the grader's limit" in row["reason"]


def test_the_readers_string_limit_stops_reading_and_is_named_not_blamed_on_the_student(
        tmp_path):
    # 70 strings of a million characters: each under the limit of one string, together past
    # the notebook's; the Map cell after them is never read.
    nb = learner("01_threads.ipynb")
    solve(nb, 1, MAP)
    copies = "".join(f"v{k} = s + ''\n" for k in range(70))
    nb.cells.insert(0, nbformat.v4.new_code_cell("s = 'x' * (1 << 20)\n" + copies))
    nbformat.write(nb, tmp_path / "s.ipynb")
    row = next(r for r in grade(tmp_path / "s.ipynb", seed=3) if r["puzzle"] == 1)
    assert row["status"] == "unreadable"
    assert f"more than {MAX_WORK} characters of strings, the grader's limit" in row["reason"]
