"""`python -m puzzles`: list, check (solutions and one file), grade, build."""

import json
import subprocess
import sys

import pytest

from puzzles.catalog import ROOT, all_puzzles, find
from puzzles.cli import main
from puzzles.notebooks import NOTEBOOKS


def test_list_shows_every_puzzle(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for puzzle in all_puzzles():
        assert f" {puzzle.number}  {puzzle.title}" in out


def test_list_imports_neither_the_simulator_nor_nbformat():
    """`list` starts about as fast as importing MLX and numpy (the heavy modules are loaded by
    the commands that need them)."""
    probe = ("import sys, io, contextlib\n"
             "from puzzles.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             "    main(['list'])\n"
             "print(sorted(m for m in ('nbformat', 'metalsim', 'puzzles.checking',\n"
             "                         'puzzles.grader') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_check_solutions_json_lists_every_puzzle_passing(capsys):
    assert main(["check", "--solutions", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [row["puzzle"] for row in rows] == [p.number for p in all_puzzles()]
    for row in rows:
        assert row["status"] == "pass", row
        assert {"puzzle", "title", "status", "counts"} <= set(row)


def test_check_one_source_file(tmp_path, capsys):
    good, bad = tmp_path / "good.metal", tmp_path / "bad.metal"
    good.write_text(find("Map").solution())
    bad.write_text("uint i = thread_position_in_grid.x;\nout[i] = i + 10;\n")
    assert main(["check", "map", "--source", str(good)]) == 0
    assert capsys.readouterr().out.startswith("Passed Tests!")
    assert main(["check", "1", "--source", str(bad), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["status"] == "fail"


def test_check_reports_unknown_puzzles_and_missing_files(tmp_path, capsys):
    assert main(["check", "no such puzzle", "--source", str(tmp_path / "x")]) == 2
    assert main(["check", "map", "--source", str(tmp_path / "missing.metal")]) == 2
    err = capsys.readouterr().err
    assert "no puzzle 'no such puzzle'" in err and "missing.metal" in err
    with pytest.raises(SystemExit):
        main(["check"])


def test_grade_prints_a_table_and_writes_json(tmp_path, capsys):
    out_file = tmp_path / "grades.json"
    # Exit 1: graded, but not everything passed.
    assert main(["grade", str(NOTEBOOKS / "01_threads.ipynb"), "--json", str(out_file)]) == 1
    assert "0 of 7 puzzles passed" in capsys.readouterr().out
    rows = json.loads(out_file.read_text())
    assert len(rows) == 7 and {row["status"] for row in rows} == {"fail"}


def test_grade_one_puzzle_exits_zero_only_when_it_passes(capsys):
    solved = ROOT / "solutions" / "notebooks" / "01_threads.ipynb"
    assert main(["grade", str(solved), "--puzzle", "Guard"]) == 0
    assert "1 of 1 puzzles passed" in capsys.readouterr().out
    assert main(["grade", str(NOTEBOOKS / "01_threads.ipynb"), "--puzzle", "3"]) == 1
    # A puzzle of another chapter: that notebook cannot be graded for it.
    assert main(["grade", str(solved), "--puzzle", "8"]) == 2
    assert "no cell of the submission builds an assigned puzzle" in capsys.readouterr().err


def test_grade_writes_gradescope_results_for_one_notebook(tmp_path, capsys):
    solved = ROOT / "solutions" / "notebooks" / "01_threads.ipynb"
    results = tmp_path / "results" / "results.json"
    assert main(["grade", str(solved), "--puzzle", "1", "--puzzle", "zip",
                 "--gradescope", str(results)]) == 0
    data = json.loads(results.read_text())
    assert data["score"] == 2 and [t["name"] for t in data["tests"]] == [
        "Puzzle 1: Map", "Puzzle 1: Map (details)", "Puzzle 2: Zip", "Puzzle 2: Zip (details)"]
    assert "no submission metadata" in capsys.readouterr().err  # said, not silently shared


def test_grade_of_an_empty_notebook_is_an_error(tmp_path, capsys):
    path = tmp_path / "empty.ipynb"
    path.write_text('{"cells": []}')
    assert main(["grade", str(path)]) == 2
    assert "builds none of the puzzles" in capsys.readouterr().err


def test_grade_of_a_folder_needs_an_output_folder(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["grade", str(tmp_path)])
    assert "needs --out" in capsys.readouterr().err


def test_grade_refuses_the_learners_seed(capsys):
    assert main(["grade", str(NOTEBOOKS / "01_threads.ipynb"), "--seed", "0"]) == 2
    assert "learners' check() uses" in capsys.readouterr().err


def test_check_of_a_file_that_is_not_utf8_fails_cleanly(tmp_path, capsys):
    path = tmp_path / "latin1.metal"
    path.write_bytes(b"out[0] = 1; // caf\xe9\n")
    assert main(["check", "map", "--source", str(path)]) == 2
    assert "not UTF-8" in capsys.readouterr().err


def test_grade_of_a_malformed_notebook_fails_cleanly(tmp_path, capsys):
    path = tmp_path / "broken.ipynb"
    path.write_text("{")
    assert main(["grade", str(path)]) == 2
    assert "not a notebook" in capsys.readouterr().err


def test_build_writes_the_same_notebooks_as_committed(tmp_path, capsys):
    assert main(["build", "--root", str(tmp_path)]) == 0
    for name in ("01_threads.ipynb", "02_threadgroup_memory.ipynb"):
        assert (tmp_path / "notebooks" / name).read_text() == (NOTEBOOKS / name).read_text()


def test_module_runs_as_a_program():
    done = subprocess.run([sys.executable, "-m", "puzzles", "list"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "Map" in done.stdout
