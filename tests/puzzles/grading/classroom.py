"""A generated class of submissions for the grader: solved, partial, wrong, racy, over budget,
compile errors, every legitimate Python form the static reader supports, and every attack the
grader must survive. `write_class(folder)` writes them and returns what each must get.

The assignment grades Map (puzzle 1) and Threadgroup Memory (puzzle 8); each submission is a
folder holding the learner notebooks of chapters 01 and 02 (as a student's repository would),
edited as the student did, or a single file for the malformed ones.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from puzzles.catalog import find
from puzzles.checking import puzzle_cases
from puzzles.grading.assignment import LEARNER_SEED
from puzzles.notebooks import NOTEBOOKS

ASSIGNMENT_TOML = """\
[assignment]
name = "Week 1: threads and threadgroup memory"
seed = 20260301
time_limit = 8
memory_limit_mb = 2048

[partial_credit]
over_budget = 0.5
warnings = 1.0

[[puzzles]]
puzzle = "Map"
points = 2

[[puzzles]]
puzzle = 8
points = 3
"""

MAP = "uint local_i = thread_position_in_grid.x;\nout[local_i] = a[local_i] + 10;\n"
ATTACK_STATUSES = {"unreadable", "error", "timeout", "memory-limit", "crashed"}


@dataclass
class Expected:
    """What a submission must get: a status per puzzle (a set: any of them), the points, or
    `graded=False`. `attack` marks submissions written to break the grader."""

    statuses: dict[int, set[str]] = field(default_factory=dict)
    points: float | None = None
    graded: bool = True
    attack: bool = False
    reason: str = ""  # a substring of the reason of puzzle 1 (or of the error)


def learner(chapter: str) -> nbformat.NotebookNode:
    return nbformat.read(NOTEBOOKS / chapter, as_version=4)


def solve(nb: nbformat.NotebookNode, number: int, body: str | None = None) -> None:
    """Put `body` (the reference solution by default) where puzzle `number`'s template is."""
    puzzle = find(number)
    cell = next(c for c in nb.cells if f"def {puzzle.slug}_test(" in c.source)
    body = puzzle.solution() if body is None else body
    assert puzzle.template.rstrip("\n") in cell.source
    cell.source = cell.source.replace(puzzle.template.rstrip("\n"), body.rstrip("\n"))


def replace_map_cell(nb: nbformat.NotebookNode, code: str, before: str = "") -> None:
    """Replace the Map cell by `code` (which must build the problem); `before` becomes a new
    cell ahead of it."""
    index = next(i for i, c in enumerate(nb.cells) if "def map_test(" in c.source)
    nb.cells[index].source = code
    if before:
        nb.cells.insert(index, nbformat.v4.new_code_cell(before))


def map_cell(function: str, imports: str = "") -> str:
    """A Map cell: `function` defines `map_test`, then the problem is built as usual."""
    return (f"{imports}\n\ndef map_spec(a: mx.array) -> mx.array:\n    return a + 10\n\n\n"
            f"{function}\n\n\na = mx.arange(4)\noutput_shape = (4,)\n\n"
            "problem = MetalProblem(\"Map\", map_test, [a], output_shape, grid=(4, 1, 1), "
            "spec=map_spec)\nproblem.show()\n")


def kernel_function(source_lines: str, call: str = "") -> str:
    """`def map_test(a)` whose body is `source_lines` (indented) and then the kernel call."""
    body = "\n".join("    " + line if line else "" for line in source_lines.split("\n"))
    call = call or ('MetalKernel(name="map", input_names=["a"], output_names=["out"], '
                    "source=source)")
    return f"def map_test(a: mx.array):\n{body}\n    return {call}\n"


def lookup_table_kernel() -> str:
    """A Map kernel that knows the answers of every case learners see (the visible case and
    the hidden cases of their own seed) and looks them up by the length and the first input
    value."""
    lines = ["uint i = thread_position_in_grid.x;", "int first = a[0];"]
    for _label, case in puzzle_cases(find(1), hidden=True, seed=LEARNER_SEED):
        a = case.inputs[0]
        answers = ", ".join(f"{float(v) + 10:g}" for v in a)
        lines.append(f"if (a_shape[0] == {a.size} && first == {int(a[0])}) {{ "
                     f"const float t[] = {{{answers}}}; out[i] = t[i]; return; }}")
    return "\n".join(lines) + "\n"


def write_class(folder: Path) -> dict[str, Expected]:
    """Write every submission under `folder`; return what each must get."""
    expected: dict[str, Expected] = {}

    def student(sid: str, expect: Expected, map_body: str | None = None,
                map_code: str = "", before: str = "", tg_body: str | None = None,
                chapters: tuple[str, ...] = ("01_threads.ipynb", "02_threadgroup_memory.ipynb")
                ) -> None:
        one = learner("01_threads.ipynb")
        two = learner("02_threadgroup_memory.ipynb")
        if map_body is not None:
            solve(one, 1, map_body)
        if map_code:
            replace_map_cell(one, map_code, before)
        if tg_body is not None:
            solve(two, 8, tg_body)
        target = folder / sid
        target.mkdir(parents=True)
        for name, nb in (("01_threads.ipynb", one), ("02_threadgroup_memory.ipynb", two)):
            if name in chapters:
                nbformat.write(nb, target / name)
        expected[sid] = expect

    solved_tg = find(8).solution()
    full = Expected({1: {"pass"}, 8: {"pass"}}, 5)
    map_only = Expected({1: {"pass"}, 8: {"fail"}}, 2)

    # --- ordinary submissions ----------------------------------------------------------------
    student("solved", full, map_body=MAP, tg_body=solved_tg)
    student("solved-respaced", full, map_body=MAP.replace(" + ", "  +  "),
            tg_body=solved_tg.replace("\n\n", "\n"))
    unusual = "out[thread_position_in_grid.x] = a[thread_position_in_grid.x] + 10;\n"
    student("copier-1", map_only, map_body=unusual)
    student("copier-2", map_only, map_body=unusual)
    student("partial", map_only, map_body=MAP)
    student("unsolved", Expected({1: {"fail"}, 8: {"fail"}}, 0))
    student("wrong", Expected({1: {"fail"}, 8: {"fail"}}, 0, reason="wrong values"),
            map_body=MAP.replace("+ 10", "+ 11"))
    racy = find(8).template.replace("// FILL ME IN (roughly 1-3 lines)",
                                    "if (i < a_shape[0]) {\n    out[i] = shared[local_i ^ 1u]"
                                    " - shared[local_i ^ 1u] + shared[local_i] + 10;\n}")
    racy = re.sub(r"^[ \t]*threadgroup_barrier\(mem_flags::mem_threadgroup\);\n", "", racy,
                  flags=re.M)
    assert "threadgroup_barrier" not in racy
    student("racy", Expected({1: {"pass"}, 8: {"error"}}, 2), map_body=MAP, tg_body=racy)
    twice = MAP + "out[local_i] = a[local_i] + 10;\n"
    student("over-budget", Expected({1: {"over-budget"}, 8: {"fail"}}, 1,
                                    reason="over budget"), map_body=twice)
    student("compile-error", Expected({1: {"error"}, 8: {"fail"}}, 0, reason="compile"),
            map_body=MAP.replace("+ 10", "+"))

    # --- legitimate Python forms the static reader evaluates --------------------------------
    plain = 'source = "uint i = thread_position_in_grid.x;\\nout[i] = a[i] + 10;\\n"'
    forms = {
        "form-plus-equals": (kernel_function(
            'source = "uint i = thread_position_in_grid.x;\\n"\nsource += "out[i] = a[i] + 10;\\n"'
        ), ""),
        "form-if-constant": (kernel_function(
            "if USE_NEW:\n    " + plain + "\nelse:\n    source = OLD"), (
            'USE_NEW = True\nOLD = "out[0] = 0;"\nsource = "out[thread_position_in_grid.x] = 1;"')),
        "form-if-both-equal": (kernel_function(
            "if a.size > 2:\n    " + plain + "\nelse:\n    " + plain), ""),
        "form-input-names": (kernel_function(
            'source = "uint i = thread_position_in_grid.x;\\nout[i] = x[i] + 10;\\n"',
            'MetalKernel(name="map", input_names=["x"], output_names=["out"], source=source)'),
            ""),
        "form-fstring": (kernel_function(
            'source = f"uint i = thread_position_in_grid.x;\\nout[i] = a[i] + {OFFSET};\\n"'),
            "OFFSET = 10"),
        "form-dedent-strip": (kernel_function(
            'source = textwrap.dedent("""\n    uint i = thread_position_in_grid.x;\n'
            '    out[i] = a[i] + 10;\n""").strip()'), "import textwrap"),
        "form-format": (kernel_function(
            'source = "uint i = thread_position_in_grid.x;\\nout[i] = a[i] + {};\\n"'
            ".format(5 + 5)"), ""),
        "form-alias": (kernel_function(
            plain, 'MK(name="map", input_names=["a"], output_names=["out"], source=source)'),
            "from utils import MetalKernel as MK"),
        "form-earlier-cell": (kernel_function(
            "source = MAP_SOURCE"), f"MAP_SOURCE = {MAP!r}"),
        "form-positional": (kernel_function(
            plain, 'MetalKernel("map", ["a"], ("out",), "", source)'), ""),
        "form-implicit-concat": (kernel_function(
            'source = ("uint i = thread_position_in_grid.x;\\n"\n          "out[i] = a[i] + 10;'
            '\\n")'), ""),
    }
    for sid, (function, before) in forms.items():
        student(sid, map_only, map_code=map_cell(function), before=before)

    # --- attacks and malformed submissions ---------------------------------------------------
    attack = dict(attack=True)
    doubling = "s = 'x'\n" + "s = s + s\n" * 31
    student("attack-doubling", Expected({1: {"unreadable"}}, 0, reason="limit", **attack),
            map_code=map_cell(kernel_function("source = s")), before=doubling)
    student("attack-repeat", Expected({1: {"unreadable"}}, 0, reason="limit", **attack),
            map_code=map_cell(kernel_function("source = 'x' * 10**9")))
    student("attack-format-width", Expected({1: {"unreadable"}}, 0, reason="format width",
                                            **attack),
            map_code=map_cell(kernel_function("source = f'{1:>999999999}'")))
    levels = ["#define L0 x x x x x x x x x x"] + [
        f"#define L{k} " + " ".join([f"L{k - 1}"] * 10) for k in range(1, 10)]
    # A compile error after 100000 tokens (2 s alone); on a loaded machine it may be a timeout.
    student("attack-define-bomb", Expected({1: {"error", "timeout"}}, 0,
                                           **attack),
            map_body="\n".join(levels) + "\nL9\n" + MAP)
    # metalsim refuses the 1 GiB private array before allocating it (a resource-limit error);
    # the worker's memory cap stays as a second line of defence.
    student("attack-private-array", Expected({1: {"error"}}, 0, **attack),
            map_body="uint local_i = thread_position_in_grid.x;\nfloat t[1 << 28];\n"
                     "t[local_i] = a[local_i];\nout[local_i] = t[local_i] + 10;\n")
    expression = " + ".join(f"v * {k}.0f" for k in range(400))
    # metalsim's work limit (expression nodes evaluated) stops it as a step-limit error; on a
    # slow enough machine the worker's wall-time limit comes first.
    student("attack-slow-loop", Expected({1: {"error", "timeout"}}, 0, **attack),
            map_body="uint local_i = thread_position_in_grid.x;\nfloat v = a[local_i];\n"
                     "float acc = 0;\nfor (int k = 0; k < 1000000; k++) { acc += "
                     f"{expression}; }}\nout[local_i] = a[local_i] + 10 + acc * 0.0f;\n")
    student("attack-escape-codes", Expected({1: {"error"}}, 0, **attack),
            map_body="#error \x1b[2K\x1b[1A pass 1 Map pass\n" + MAP)
    nested = "x = " + "(" * 250 + "1" + ")" * 250
    student("attack-deep-nesting", Expected({1: {"error"}}, 0, reason="not valid Python",
                                            **attack),
            map_code=map_cell(kernel_function(plain) + "\n" + nested))
    deep_plus = "source = " + "('a' + " * 120 + "'b'" + ")" * 120
    student("attack-deep-expression", Expected({1: {"unreadable"}}, 0, reason="nested",
                                               **attack),
            map_code=map_cell(kernel_function(deep_plus)))
    student("attack-huge-integer", Expected({1: {"error"}}, 0, reason="not valid Python",
                                            **attack),
            map_code=map_cell(kernel_function(plain) + "\nN = " + "9" * 5000))
    student("attack-recursion", Expected({1: {"unreadable"}}, 0, reason="steps", **attack),
            map_code=map_cell(kernel_function(plain)),
            before="def f():\n    f()\n    f()\n\nf()")
    student("attack-planted-code", Expected({1: {"unreadable"}}, 0, reason="open", **attack),
            map_code=map_cell(kernel_function(
                "source = open('/tmp/planted-by-a-student', 'w').write('ran') or 'x'")))
    student("attack-ambiguous", Expected({1: {"unreadable"}}, 0, reason="ambiguous",
                                         **attack),
            map_code=map_cell(kernel_function(
                "if a.size > 2:\n    " + plain + "\nelse:\n    source = 'out[0] = 1;'")))
    student("attack-lookup-table", Expected({1: {"fail"}}, 0, reason="wrong values", **attack),
            map_body=lookup_table_kernel())
    student("attack-empty", Expected(graded=False, reason="assigned puzzle", **attack),
            chapters=())
    (folder / "attack-empty" / "empty.ipynb").write_text(
        json.dumps(nbformat.v4.new_notebook()))
    student("attack-wrong-chapter", Expected(graded=False, reason="assigned puzzle", **attack),
            chapters=())
    nbformat.write(learner("03_reductions.ipynb"), folder / "attack-wrong-chapter" / "03.ipynb")
    surrogate = folder / "attack-surrogate.ipynb"
    nb = learner("01_threads.ipynb")
    solve(nb, 1, MAP.replace("+ 10", "+ 10; // \ud800"))
    surrogate.write_text(json.dumps(nb, ensure_ascii=True))  # "\ud800" is valid JSON
    expected["attack-surrogate"] = Expected({1: {"pass"}, 8: {"fail"}}, 2, attack=True)
    (folder / "attack-not-utf8.ipynb").write_bytes(b'{"cells": ["\xff\xfe"]}')
    expected["attack-not-utf8"] = Expected(graded=False, reason="cannot read", attack=True)
    (folder / "attack-not-json.ipynb").write_text("{")
    expected["attack-not-json"] = Expected(graded=False, reason="not a notebook", attack=True)
    return expected
