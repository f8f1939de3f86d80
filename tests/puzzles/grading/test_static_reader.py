"""The static reader: the legitimate Python forms give the kernel a learner would build, and
everything else (or anything too big) gives a clear reason with its line, never a value."""

from __future__ import annotations

import ast
import dataclasses
import time

import nbformat
import pytest
from classroom import kernel_function, learner, map_cell, replace_map_cell

from puzzles.grader import grade
from puzzles.grading.static_reader import (
    KERNEL_PARAMETERS,
    MAX_STEPS,
    MAX_STRING,
    KernelCall,
    NotebookReader,
    Unreadable,
)
from utils import MetalKernel

BODY = "uint i = thread_position_in_grid.x;\nout[i] = a[i] + 10;\n"


def read(*cells: str) -> NotebookReader:
    reader = NotebookReader()
    for index, cell in enumerate(cells):
        reader.read_cell(index, ast.parse(cell))
    reader.finish()
    return reader


def problem_kernel(*cells: str) -> KernelCall | Unreadable:
    """The kernel of the last `MetalProblem("Map", map_test, ...)` of the cells."""
    reader = read(*cells, 'problem = MetalProblem("Map", map_test, [a], (4,), grid=(4, 1, 1))')
    return reader.problems[-1][1].kernel


def function(*lines: str, call: str = "") -> str:
    call = call or ('MetalKernel(name="map", input_names=["a"], output_names=["out"], '
                    "source=source)")
    return "def map_test(a):\n" + "".join(f"    {line}\n" for line in lines) + f"    return {call}"


@pytest.mark.parametrize(("cells", "expected"), [
    ([function("source = 'uint i = 0;\\n'", "source += 'out[i] = 1;'")],
     "uint i = 0;\nout[i] = 1;"),
    ([function("source = ('uint i = 0;' ' out[i] = 1;')")], "uint i = 0; out[i] = 1;"),
    (["N = 10", function("source = f'out[0] = {N + 1:d}; // {\"x\"!r}'")],
     "out[0] = 11; // 'x'"),
    (["import textwrap", function("source = textwrap.dedent('''\n    a;\n      b;\n''').strip()")],
     "a;\n  b;"),
    (["from textwrap import dedent as dd", function("source = dd('  x;\\n  y;\\n').rstrip()")],
     "x;\ny;"),
    ([function("source = 'out[{0}] = {val};'.format(3, val='a[0] * 2')")],
     "out[3] = a[0] * 2;"),
    ([function("source = ''.join(['a', 'b', 'c']).upper().replace('B', '-')")], "A-C"),
    (["FAST = True",
      function("if FAST:\n        source = 'fast;'\n    else:\n        source = 'slow;'")],
     "fast;"),
    ([function("if a.size > 4:\n        source = 'same;'\n    else:\n        source = 'same;'")],
     "same;"),
    (["source = 'old;'", function("if not False:\n        source = 'new;'")], "new;"),
    (["SRC = 'earlier cell;'", "x = 1", function("source = SRC")], "earlier cell;"),
    ([function("source = 'x' * 3 + 'y' * (1 << 2)")], "xxxyyyy"),
    ([function("source = 'a;' if 2 > 1 else 'b;'")], "a;"),
])
def test_legitimate_forms_give_the_learners_kernel(cells, expected):
    kernel = problem_kernel(*cells)
    assert isinstance(kernel, KernelCall), kernel
    assert kernel.source == expected


def test_every_kernel_argument_is_read_and_an_alias_of_metal_kernel_works():
    kernel = problem_kernel(
        "from utils import MetalKernel as MK\nimport utils as u",
        "H = '#define K 3'",
        "def map_test(a):\n    return MK('map', ['x'], ('out',), H, 'out[0] = x[0];', "
        "atomic_outputs=True, ensure_row_contiguous=False)")
    assert kernel == KernelCall("map", ("x",), ("out",), "out[0] = x[0];", "#define K 3",
                                ensure_row_contiguous=False, atomic_outputs=True)
    module = problem_kernel("import utils as u", function(
        "source = 'y;'", call="u.MetalKernel(name='map', input_names=['a'], "
        "output_names=['out'], source=source)"))
    assert module.source == "y;"


def test_positional_arguments_are_read_in_the_order_the_harness_takes_them():
    # The grader must grade the kernel the learner's notebook runs: utils.MetalKernel (like
    # Metal-Puzzles') takes the header before the source.
    assert [f.name for f in dataclasses.fields(MetalKernel)][:len(KERNEL_PARAMETERS)] == list(
        KERNEL_PARAMETERS)
    kernel = problem_kernel(function("source = 'y;'",
                                     call="MetalKernel('map', ['a'], ['out'], '', source)"))
    assert (kernel.header, kernel.source) == ("", "y;")


def test_a_kernel_outside_any_problem_is_found_by_its_name():
    reader = read(f"SRC = {BODY!r}",
                  "def build():\n    return MetalKernel(name='map', input_names=['a'], "
                  "output_names=['out'], source=SRC)")
    (cell, kernel, name), = reader.kernels
    assert name == "map" and kernel.source == BODY


def test_helper_functions_are_called_with_their_arguments():
    kernel = problem_kernel("def body(offset, op='+'):\n    return f'out[0] = a[0] {op} {offset};'",
                            function("source = body(10)"))
    assert kernel.source == "out[0] = a[0] + 10;"


@pytest.mark.parametrize(("cells", "message", "line"), [
    ([function("source = open('k.metal').read()")], "a call to `open(...).read`", 2),
    ([function("source = SOURCES[0]")], "a subscript", 2),
    ([function("source = SOURCES")], "`SOURCES` has no value", 2),
    ([function("for k in range(3):\n        source = 'x'")], "inside a `for` statement", 2),
    ([function("if a.size > 4:\n        source = 'one;'\n    else:\n        source = 'two;'")],
     "ambiguous", 2),
    ([function("if a.size > 4:\n        source = 'one;'")], "one branch", 2),
    (["import numpy", function("source = numpy.sin")], "attribute `.sin`", 2),
    (["from kernels import SRC", function("source = SRC")], "imported from `kernels`", 1),
    ([function("source = f'{1:>999999999}'")], "format width", 2),
    ([function("source = '{0.__class__}'.format('x')")], "attributes, indexes", 2),
    ([function("source = 'x' * 10**9")], "repetition longer", 2),
    (["s = 'x'\n" + "s = s + s\n" * 31, function("source = s")], "longer than", 22),
    ([function("source = " + "('a' + " * 100 + "'b'" + ")" * 100)], "nested too deeply", 2),
    ([function("source = 2 ** 100000")], "more than 64 bits", 2),
    ([function("source = 1")], "not a string", 3),  # the line of the call
    ([function(call="MetalKernel(name='map', source='x;')")], "no `input_names`", 2),
    ([function(call="MetalKernel(**options)")], "`*` or `**` arguments", 2),
])
def test_what_cannot_be_read_says_why_and_where(cells, message, line):
    kernel = problem_kernel(*cells)
    assert isinstance(kernel, Unreadable)
    assert message in kernel.message, kernel.message
    assert kernel.line == line
    assert kernel.ambiguous == ("ambiguous" in message or "branch" in message)


def test_string_doubling_stops_at_the_limit_without_building_it():
    started = time.monotonic()
    reader = read("s = 'x' * 1000\n" + "s = s + s\n" * 40)
    assert time.monotonic() - started < 2
    value = reader.globals.lookup("s")
    assert "longer than" in value.reason
    assert MAX_STRING < 1000 * 2**11  # the limit is reached well before 40 doublings


def test_runaway_recursion_stops_the_reader_after_its_step_budget():
    started = time.monotonic()
    reader = read("def f():\n    f()\n    f()\n\nf()", f"S = {BODY!r}")
    assert time.monotonic() - started < 20
    assert reader.exhausted is not None and str(MAX_STEPS) in reader.exhausted.message
    assert reader.globals.lookup("S") is None  # reading stopped


def test_nothing_is_executed(tmp_path):
    marker = tmp_path / "ran"
    read(f"open({str(marker)!r}, 'w').write('x')",
         f"def f():\n    open({str(marker)!r}, 'w')\n\nf()",
         f"x = __import__('os').system('touch {marker}')")
    assert not marker.exists()


def test_format_specs_with_other_digits_are_refused_not_crashing():
    kernel = problem_kernel(function("source = f'{1:\u00b2}'"))
    assert isinstance(kernel, Unreadable) and "formatting failed" in kernel.message


# --- forms a learner's notebook runs, which the reader follows exactly or calls unreadable --

APPEND = function("parts = ['uint i = thread_position_in_grid.x;']",
                  "parts.append('out[i] = a[i] + 10;')", "source = '\\n'.join(parts) + '\\n'")
CHECK = 'problem.check()'


@pytest.mark.parametrize(("cells", "expected"), [
    ([APPEND], BODY),
    ([function("parts = ['out[i] = a[i] + 10;']",
               "parts.insert(0, 'uint i = thread_position_in_grid.x;')",
               "parts.extend([''])", "source = '\\n'.join(parts)")], BODY),
    ([function("parts = []", "alias = parts", "alias.append('x;')", "parts += ['y;']",
               "source = ''.join(parts)")], "x;y;"),
    (["SRC = 'template;'", f"def set_source():\n    global SRC\n    SRC = {BODY!r}",
      "set_source()", function("source = SRC")], BODY),
    ([f"SRC = {BODY!r}", "def map_test(a, source=SRC):\n    return MetalKernel(name='map', "
      "input_names=['a'], output_names=['out'], source=source)", "SRC = 'changed later;'"],
     BODY),
    (["def outer():\n    s = 'a;'\n    def inner():\n        nonlocal s\n        s = 'b;'\n"
      "    inner()\n    return s", function("source = outer()")], "b;"),
])
def test_forms_the_notebook_runs_give_its_kernel(cells, expected):
    kernel = problem_kernel(*cells)
    assert isinstance(kernel, KernelCall), kernel
    assert kernel.source == expected


def checked_kernel(*cells: str) -> KernelCall | Unreadable:
    reader = read(*cells)
    return reader.problems[-1][1].kernel


def test_a_global_fixed_in_a_later_cell_before_check_is_what_check_runs():
    problem = 'problem = MetalProblem("Map", map_test, [a], (4,), grid=(4, 1, 1))'
    cells = [function("source = SRC"), "SRC = 'wrong;'", problem, "SRC = 'fixed;'", CHECK]
    assert checked_kernel(*cells).source == "fixed;"
    # After the last check(), a change no longer counts...
    assert checked_kernel(*cells, "SRC = 'after the check;'").source == "fixed;"
    # ...and a problem never checked gets its kernel as the notebook ends.
    assert checked_kernel(*cells[:4]).source == "fixed;"


def test_a_function_defined_with_global_changes_nothing_until_it_is_called():
    reader = read("SRC = 'kept;'", "def f():\n    global SRC\n    SRC = 'changed;'\n"
                  "    return MetalKernel(name='map', input_names=['a'], output_names=['out'], "
                  "source=SRC)")
    assert reader.globals.lookup("SRC") == "kept;"


@pytest.mark.parametrize(("cells", "message"), [
    ([function("parts = ['x;']", "parts.pop()", "source = ''.join(parts)")], "`.pop(...)`"),
    ([function("parts = []", "for k in range(2):\n        parts.append('x;')",
               "source = ''.join(parts)")], "`for` statement"),
    (["import helpers", function("parts = ['x;']", "helpers.fill(parts)",
                                 "source = ''.join(parts)")], "helpers.fill"),
    ([function("parts = ['x;']", "parts[0] = 'y;'", "source = ''.join(parts)")],
     "item or attribute"),
    ([function("parts = ['x;']", "if a.size > 2:\n        parts.append('y;')",
               "source = ''.join(parts)")], "inside an `if`"),
    (["PARTS = []", function("PARTS.append('x;')", "source = ''.join(PARTS)")],
     "different kernel each time"),
])
def test_forms_the_reader_cannot_follow_are_unreadable_never_a_stale_value(cells, message):
    kernel = problem_kernel(*cells)
    assert isinstance(kernel, Unreadable), kernel
    assert message in kernel.message, kernel.message


# The five forms of the issue, in a learner's notebook, through the grader: each passes.
MAP_LINES = ("'uint i = thread_position_in_grid.x;'", "'out[i] = a[i] + 10;'")
NOTEBOOK_FORMS = {
    "append": ("", kernel_function(
        f"parts = [{MAP_LINES[0]}]\nparts.append({MAP_LINES[1]})\nsource = '\\n'.join(parts)")),
    "insert": ("", kernel_function(
        f"parts = [{MAP_LINES[1]}]\nparts.insert(0, {MAP_LINES[0]})\n"
        "source = '\\n'.join(parts)")),
    "global": ("SRC = 'template;'\n\ndef use_mine():\n    global SRC\n    SRC = "
               f"{BODY!r}\n\nuse_mine()", kernel_function("source = SRC")),
    "default": (f"SRC = {BODY!r}", "def map_test(a: mx.array, source=SRC):\n    return "
                "MetalKernel(name='map', input_names=['a'], output_names=['out'], "
                "source=source)\n\nSRC = 'out[0] = 0;'"),
}


@pytest.mark.parametrize("form", [*NOTEBOOK_FORMS, "later-cell"])
def test_the_forms_pass_under_the_grader_as_they_do_in_the_notebook(tmp_path, form):
    nb = learner("01_threads.ipynb")
    if form == "later-cell":
        replace_map_cell(nb, map_cell(kernel_function("source = SRC")), "SRC = 'out[0] = 0;'")
        index = next(i for i, c in enumerate(nb.cells) if "def map_test(" in c.source)
        nb.cells.insert(index + 1, nbformat.v4.new_code_cell(f"SRC = {BODY!r}\nproblem.check()"))
    else:
        before, function_text = NOTEBOOK_FORMS[form]
        replace_map_cell(nb, map_cell(function_text), before)
    path = tmp_path / "form.ipynb"
    nbformat.write(nb, path)
    row = next(r for r in grade(path, seed=11) if r["puzzle"] == 1)
    assert row["status"] == "pass", row["reason"]


def test_of_two_problems_for_one_puzzle_the_one_built_last_wins_checked_or_not():
    first = function("source = 'first;'").replace("map_test", "first_test")
    second = function("source = 'second;'").replace("map_test", "second_test")
    build = 'p{k} = MetalProblem("Map", {fn}, [a], (4,), grid=(4, 1, 1))'
    unchecked_then_checked = checked_kernel(
        first, second, build.format(k=1, fn="first_test"), build.format(k=2, fn="second_test"),
        "p2.check()")
    assert unchecked_then_checked.source == "second;"
    checked_then_unchecked = checked_kernel(
        first, second, build.format(k=1, fn="first_test"), "p1.check()",
        build.format(k=2, fn="second_test"))
    assert checked_then_unchecked.source == "second;"
