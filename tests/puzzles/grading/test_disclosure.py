"""What students see of hidden cases: kind, line and a fixed short reason, never data the
kernel controls (element indices, threads, values, counts); the instructor's JSON keeps it all.
"""

from __future__ import annotations

import json

import nbformat
from classroom import MAP, learner, solve

from puzzles.catalog import find
from puzzles.checking import KernelArgs, check_puzzle, puzzle_cases
from puzzles.cli import main
from puzzles.grading.disclosure import SHORT_REASONS, student_summary, student_view

# Encodes the hidden case's four inputs (each in [-20, 20)) in the element it writes out of
# bounds: "a thread wrote element <100 + code> of 'out'" would give the case away.
LEAK = """uint i = thread_position_in_grid.x;
int code = (a[0] + 20) + 40 * ((a[1] + 20) + 40 * ((a[2] + 20) + 40 * (a[3] + 20)));
if (a[0] != 0 || a[1] != 1) { out[100 + code] = 1; }
out[i] = a[i] + 10;
"""
ASSIGNMENT = '[assignment]\nseed = 4242\n\n[[puzzles]]\npuzzle = "Map"\npoints = 1\n'


def encoded(seed: int) -> list[str]:
    """The element indices LEAK writes on the hidden cases drawn from `seed`."""
    indices = []
    for label, case in puzzle_cases(find(1), hidden=True, seed=seed):
        a = [int(v) + 20 for v in case.inputs[0]]
        if label.startswith("hidden"):
            indices.append(str(100 + a[0] + 40 * (a[1] + 40 * (a[2] + 40 * a[3]))))
    return indices


def map_check(body: str, seed: int = 5):
    puzzle = find(1)
    args = KernelArgs("map", ("a",), ("out",), body)
    return check_puzzle(puzzle, puzzle_cases(puzzle, seed=seed), lambda _case: args)


def test_an_index_encoding_a_hidden_case_reaches_the_instructor_and_no_student_file(
        tmp_path, capsys):
    nb = learner("01_threads.ipynb")
    solve(nb, 1, LEAK)
    (tmp_path / "class" / "mallory").mkdir(parents=True)
    nbformat.write(nb, tmp_path / "class" / "mallory" / "01_threads.ipynb")
    (tmp_path / "a.toml").write_text(ASSIGNMENT)
    out = tmp_path / "out"
    assert main(["grade", str(tmp_path / "class"), "--assignment", str(tmp_path / "a.toml"),
                 "--out", str(out)]) == 0
    report = json.loads((out / "grades.json").read_text())
    row = report["students"][0]["rows"][0]
    assert row["status"] == "error"
    first = encoded(row["seed"])[0]
    assert f"element {first} of 'out'" in json.dumps(row)  # the instructor sees everything
    student_files = [(out / "feedback" / "mallory.md").read_text(),
                     (out / "results" / "mallory" / "results.json").read_text()]
    assert "out-of-bounds (line 4) on hidden case 1: an access outside a buffer" in \
        student_files[0]
    for text in student_files:
        assert first not in text and "threads:" not in text
    capsys.readouterr()
    main(["grade", str(tmp_path / "class" / "mallory" / "01_threads.ipynb"), "--puzzle", "1",
          "--seed", "4242"])
    table = capsys.readouterr().out
    assert "out-of-bounds" in table and not any(i in table for i in encoded(row["seed"]))


def test_wrong_values_on_a_hidden_case_do_not_say_how_many_positions():
    # Wrong at as many positions as a[0] is large: a count would leak a[0].
    result = map_check("uint i = thread_position_in_grid.x;\n"
                       "out[i] = a[i] + 10 + ((int)i < a[0] && a[1] != 1 ? 1 : 0);\n")
    assert result.status == "fail" and "position(s)" in result.reason
    shown = student_summary(result)
    assert shown["reason"] == "wrong values on hidden case 1"


def test_over_budget_only_on_a_hidden_case_names_the_count_but_not_its_value():
    # As many extra reads as the thread's input is large (above 3): the count is max(a) + 1.
    body = ("uint i = thread_position_in_grid.x;\nint v = a[i];\nint x = 0;\n"
            "for (int k = 0; k < (v > 3 ? v : 0); k++) { x += a[i] * 0; }\n"
            "out[i] = v + 10 + x;\n")
    result = map_check(body)
    assert result.status == "over-budget" and "global reads" in result.reason
    shown = student_summary(result)
    assert shown["reason"] == ("correct, but over budget on a hidden case: global reads "
                               "(max per thread)")
    assert shown["counts"]["global_reads"] == 1  # the visible case's count, not the hidden


def test_the_visible_cases_details_are_kept_in_full():
    result = map_check("uint i = thread_position_in_grid.x;\nout[i + 1] = a[i] + 10;\n")
    shown = student_summary(result)
    assert shown["reason"] == result.reason and "the visible case" in result.reason
    assert shown["diagnostics"] == [d.render() for d in result.diagnostics]
    assert "threads:" in shown["diagnostics"][0]


def test_every_diagnostic_kind_has_a_fixed_short_reason():
    import metalsim.diagnostics

    kinds = metalsim.diagnostics.Diagnostic.__doc__
    for kind in SHORT_REASONS:
        assert kind in kinds, kind
    row = {"puzzle": 1, "title": "Map", "status": "error", "reason": "secret 123",
           "cases": [{"expected": [1]}], "seed": 9, "student": {"reason": "shown"}}
    assert student_view(row) == {"puzzle": 1, "title": "Map", "status": "error",
                                 "reason": "shown"}


def test_a_passing_kernel_shows_no_reason():
    assert student_summary(map_check(MAP))["reason"] == ""


def test_over_budget_on_both_shows_the_visible_count_not_the_hidden_one():
    # Two reads on every case, and max(a) more on the hidden ones.
    body = ("uint i = thread_position_in_grid.x;\nint v = a[i] + a[i] * 0;\nint x = 0;\n"
            "for (int k = 0; k < (v > 3 ? v : 0); k++) { x += a[i] * 0; }\n"
            "out[i] = v + 10 + x;\n")
    result = map_check(body)
    assert result.status == "over-budget" and "global reads 2 > 1" not in result.reason
    assert student_summary(result)["reason"] == (
        "correct, but over budget: global reads 2 > 1 (max per thread)")
