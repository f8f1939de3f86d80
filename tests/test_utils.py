"""utils.py: cells in Metal-Puzzles' API (tests/metal_puzzles_cells.py) run unchanged; check()
uses the catalog's hidden cases and budgets; show(), hint(), VERBOSE; Metal-Puzzles' API
(fields, methods, output format); the real MLX binding accepts exactly what the harness
passes."""

import mlx.core as mx
import numpy as np
import pytest
from metal_puzzles_cells import CELLS, PRELUDE

import metalsim
import puzzles.catalog
import puzzles.checking
import utils
from puzzles.catalog import Case, all_puzzles
from puzzles.checking import CheckResult, call_kwargs
from utils import MetalKernel, MetalProblem


def run_cells(*titles: str) -> dict:
    """Execute the Metal-Puzzles-API cells up to and including `titles`, in notebook order."""
    namespace: dict = {}
    exec(PRELUDE, namespace)
    order = list(CELLS)
    for title in order[: max(order.index(t) for t in titles) + 1]:
        exec(CELLS[title], namespace)
        namespace.setdefault("problems", {})[title] = namespace["problem"]
    return namespace["problems"]


def verdict(problem: MetalProblem) -> CheckResult:
    """Run `problem.check()` (which prints and returns None) and return its verdict."""
    assert problem.check() is None
    return problem.result


def map_problem(body: str, name: str = "Map", spec=lambda a: a + 10) -> MetalProblem:
    def map_test(a: mx.array) -> MetalKernel:
        return MetalKernel(name="map", input_names=["a"], output_names=["out"], source=body)

    return MetalProblem(name, map_test, [mx.arange(4)], (4,), grid=(4, 1, 1), spec=spec)


MAP_BODY = "uint local_i = thread_position_in_grid.x;\nout[local_i] = a[local_i] + 10;\n"


def test_every_metal_puzzles_cell_with_a_solution_passes_unchanged(capsys):
    problems = run_cells(*CELLS)
    assert len(problems) == 17  # 14 puzzles; 1D Conv, Prefix Sum and Matmul have two tests
    for title, problem in problems.items():
        result = verdict(problem)
        assert any(c.label.startswith("hidden") for c in result.cases), title
        assert result.passed, f"{title}:\n{result.text}"
    assert "Failed" not in capsys.readouterr().out


@pytest.mark.parametrize("title", ["Matmul (Simple)", "Matmul (Full)", "Dot Product",
                                   "Prefix Sum (Full)"])
def test_gpu_puzzles_style_solutions_pass_without_diagnostics(title):
    # Guarded tile loads with every thread in the k-loop (threads outside the output sum tile
    # cells nobody loaded, then write nothing), and totals written by one thread.
    result = verdict(run_cells(title)[title])
    assert result.passed and result.diagnostics == [], result.text


def test_metal_puzzles_titles_map_to_catalog_puzzles():
    problems = run_cells("Matmul (Full)")
    numbers = {title: p.puzzle.number for title, p in problems.items()}
    assert numbers["1D Conv (Full)"] == 11
    assert numbers["Prefix Sum (Simple)"] == 12
    assert numbers["Matmul (Simple)"] == 18
    assert numbers["Matmul (Full)"] == 19


def test_unfilled_template_fails_and_says_so_without_raising(capsys):
    problem = map_problem("uint local_i = thread_position_in_grid.x;\n// FILL ME IN\n")
    result = verdict(problem)
    assert not result and result.status == "fail"
    out = capsys.readouterr().out
    assert out.startswith("Failed Tests")
    # Outputs start as zeros, as in Metal-Puzzles; the elements never written are named.
    assert "Yours: [0 0 0 0]" in out and "Spec : [10 11 12 13]" in out
    assert "never wrote out[0], out[1], out[2], out[3]" in out
    assert "problem.hint()" in out


def test_plus_equals_into_the_zero_filled_output_is_correct():
    body = "uint local_i = thread_position_in_grid.x;\nout[local_i] += a[local_i] + 10;\n"
    # Outside the catalog (no budget) it passes.
    mine = verdict(map_problem(body, name="Add ten", spec=lambda a: a + 10))
    assert mine.passed, mine.text
    # As Map it is right on every case, but reading `out` is a global read (Metal-Puzzles'
    # tracer counts it too), so Map's budget of 1 says so.
    result = verdict(map_problem(body))
    assert not result.diagnostics and all(c.correct for c in result.cases)
    assert result.status == "over-budget"
    assert result.reason == "correct, but over budget: global reads 2 > 1 (max per thread)"


def test_output_cells_never_written_are_noted_without_failing_a_correct_kernel():
    # Zip's spec is 0 where a is 0: a kernel that skips those cells is right under a
    # zero-filled launch, and is told about them.
    body = "uint i = thread_position_in_grid.x;\nif (a[i] != 0) out[i] = a[i] * 2;\n"
    problem = map_problem(body, name="Doubling", spec=lambda a: a * 2)
    result = verdict(problem)
    assert result.passed, result.text
    assert "Note: on the visible case your kernel never wrote out[0];" in result.text


def test_uninitialised_read_reaching_the_output_fails_naming_both_lines():
    body = """threadgroup float tile[8];
uint i = thread_position_in_grid.x;
if (i < 2) tile[i] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
float v = tile[i];
out[i] = v + 10;
"""
    result = verdict(map_problem(body))
    assert result.status == "error"
    [d] = result.diagnostics
    assert d.kind == "uninitialized-read" and d.line == 6
    assert "stored to 'out' (read from threadgroup memory 'tile' at line 5)" in d.message
    assert "source:6:1: error" in result.text and "   6 | out[i] = v + 10;" in result.text


def test_kernel_hard_coding_the_visible_answer_fails_on_a_hidden_case():
    result = verdict(map_problem("uint i = thread_position_in_grid.x;\nout[i] = i + 10;\n"))
    assert result.status == "fail"
    assert result.cases[0].label == "visible" and not result.cases[0].mismatches
    assert "hidden" in result.reason


def test_catalog_budget_is_enforced():
    body = "uint i = thread_position_in_grid.x;\nout[i] = a[i] + 10;\nout[i] = a[i] + 10;\n"
    result = verdict(map_problem(body))
    assert result.status == "over-budget"
    assert result.counts["global_reads"] == 2 and result.budget["global_reads"] == 1


def test_problem_outside_the_catalog_is_checked_on_its_own_case_and_spec():
    problem = map_problem("uint i = thread_position_in_grid.x;\nout[i] = a[i] * 2;\n",
                          name="Doubling", spec=lambda a: a * 2)
    result = verdict(problem)
    assert result.passed, result.text
    assert [c.label for c in result.cases] == ["visible"] and result.budget == {}


def test_problem_without_spec_outside_the_catalog_reports_an_error():
    result = verdict(map_problem(MAP_BODY, name="Mine", spec=None))
    assert result.status == "error" and "spec" in result.reason


def test_race_fails_even_when_the_values_come_out_right():
    body = """
threadgroup float shared[THREADGROUP_MEM_SIZE];
uint i = thread_position_in_grid.x;
shared[i] = a[i];
out[i] = shared[(i + 1) % 8] * 0 + shared[i] + 10;
"""

    def test_fn(a: mx.array) -> MetalKernel:
        return MetalKernel("threadgroup_memory", ["a"], ["out"],
                           "constant uint THREADGROUP_MEM_SIZE = 8;", body)

    problem = MetalProblem("Threadgroup Memory", test_fn, [mx.ones(8)], (8,), grid=(8, 1, 1),
                           threadgroup=(8, 1, 1))
    result = verdict(problem)
    assert result.status == "error"
    assert any(d.kind == "race" for d in result.diagnostics)
    assert "shared[(i + 1) % 8]" in result.text  # the diagnostic quotes the line


def test_compile_error_is_reported_with_its_line():
    result = verdict(map_problem("uint i = thread_position_in_grid.x;\nout[j] = a[i];\n"))
    assert result.status == "error"
    assert "undeclared identifier 'j'" in result.text and "out[j] = a[i];" in result.text


def test_learner_python_that_raises_is_an_error_not_a_crash():
    def broken(a: mx.array) -> MetalKernel:
        raise KeyError("oops")

    result = verdict(MetalProblem("Map", broken, [mx.arange(4)], (4,), grid=(4, 1, 1)))
    assert result.status == "error" and "KeyError" in result.reason


def test_function_returning_something_else_than_a_kernel_is_an_error():
    result = verdict(MetalProblem("Map", lambda a: "out[0] = 1;", [mx.arange(4)], (4,),
                                  grid=(4, 1, 1)))
    assert result.status == "error" and "must return a MetalKernel" in result.reason


def test_show_prints_the_metal_puzzles_score_table_and_returns_the_diagram(capsys):
    diagram = map_problem(MAP_BODY).show()
    assert "<svg" in diagram._repr_html_() and 'data-buffer="out"' in diagram.svg
    out = capsys.readouterr().out.splitlines()
    # Metal-Puzzles' layout: title, then an indented four-column table; then the budget.
    assert out[:5] == [
        "# Map", " ", "   Score (Max Per Thread):",
        "   |  Global Reads | Global Writes |  Shared Reads | Shared Writes |",
        "   |             1 |             1 |             0 |             0 | "]
    assert out[6:8] == ["   Budget (Max Per Thread):",
                        "   |             1 |             1 |             0 |             0 |"]
    assert "the visible case; check() reports the maximum over all its cases" in out[8]


def test_show_counts_the_visible_case_and_check_the_maximum_over_all_cases(capsys):
    problems = run_cells("1D Conv (Simple)")
    conv = problems["1D Conv (Simple)"]
    conv.show()
    shown = capsys.readouterr().out.splitlines()
    assert [int(x) for x in shown[4].split("|")[1:5]] == [2, 1, 6, 2]
    assert verdict(conv).counts["threadgroup_reads"] == 8  # a hidden case has 4 taps


def test_metal_kernel_takes_metal_puzzles_fields_positionally_and_by_keyword():
    positional = MetalKernel("map", ["a"], ["out"], "", MAP_BODY)
    keywords = MetalKernel(name="map", input_names=["a"], output_names=["out"], header="",
                           source=MAP_BODY)
    assert positional == keywords
    assert (positional.header, positional.source) == ("", MAP_BODY)
    with_header = MetalKernel("k", ["a"], ["out"], "constant uint N = 4;", "out[0] = N;")
    assert with_header.header == "constant uint N = 4;"


def test_metal_problem_takes_metal_puzzles_arguments_positionally_and_by_keyword():
    def map_test(a: mx.array) -> MetalKernel:
        return MetalKernel("map", ["a"], ["out"], "", MAP_BODY)

    a = mx.arange(4)
    forms = [
        MetalProblem("Map", map_test, [a], (4,), (4, 1, 1), (1, 1, 1), lambda a: a + 10),
        MetalProblem(name="Map", fn=map_test, inputs=[a], output_shapes=(4,), grid=(4, 1, 1),
                     threadgroup=(1, 1, 1), spec=lambda a: a + 10),
    ]
    for problem in forms:
        assert problem.output_shapes == (4,) and verdict(problem).passed


def test_run_metal_returns_the_output_of_a_zero_filled_launch():
    out = map_problem("uint i = thread_position_in_grid.x;\nif (i < 2) out[i] += a[i];"
                      ).run_metal()
    assert isinstance(out, mx.array) and out.tolist() == [0, 1, 0, 0]


def test_run_python_and_score_print_what_show_prints(capsys):
    problem = map_problem(MAP_BODY)
    results = problem.run_python()
    assert isinstance(results, metalsim.Run) and results.report.trace
    assert problem.score(results) is None
    scored = capsys.readouterr().out
    problem.show()
    assert capsys.readouterr().out == scored


def test_show_of_a_broken_kernel_prints_instead_of_raising(capsys):
    map_problem("out[j] = 1;").show()
    assert "could not run the kernel" in capsys.readouterr().out


def test_hints_come_one_at_a_time(capsys, monkeypatch):
    monkeypatch.setattr(utils, "_HINTS_GIVEN", {})
    problem = map_problem(MAP_BODY)
    problem.hint()
    problem.hint()
    out = capsys.readouterr().out
    assert "Hint 1 of 3" in out and "Hint 2 of 3" in out and "Hint 3" not in out
    problem.hint()
    problem.hint()
    assert "last hint" in capsys.readouterr().out


def test_the_last_hint_points_to_solution_not_to_files_a_pip_learner_lacks(capsys, monkeypatch):
    monkeypatch.setattr(utils, "_HINTS_GIVEN", {})
    problem = map_problem(MAP_BODY)
    for _ in range(4):
        problem.hint()
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert "problem.solution()" in last and "solutions/" not in last


MAP_TEMPLATE = "uint local_i = thread_position_in_grid.x;\n// FILL ME IN (roughly 1 line)\n"


@pytest.fixture
def fresh_learner(monkeypatch):
    """No hints given and no puzzle tried yet."""
    monkeypatch.setattr(utils, "_HINTS_GIVEN", {})
    monkeypatch.setattr(utils, "_TRIED", set())


def test_solution_waits_until_the_learner_has_tried(capsys, fresh_learner):
    problem = map_problem(MAP_TEMPLATE)
    problem.solution()
    assert "Try it first" in capsys.readouterr().out
    problem.check()   # the template, unchanged: not yet an attempt
    capsys.readouterr()
    problem.solution()
    assert "Try it first" in capsys.readouterr().out


def test_solution_after_a_check_of_a_changed_kernel_shows_the_kernel_and_its_walkthrough(
        capsys, fresh_learner):
    attempt = map_problem("uint local_i = thread_position_in_grid.x;\nout[local_i] = 1;\n")
    attempt.check()
    capsys.readouterr()
    map_problem(MAP_TEMPLATE).solution()   # the cell re-run: the attempt still counts
    out = capsys.readouterr().out
    puzzle = utils.catalog_puzzle("Map")
    assert "Reference solution of puzzle 1: Map" in out
    assert "out[local_i] = a[local_i] + 10;" in out
    assert puzzle.walkthrough() in out


def test_solution_after_the_last_hint_or_when_insisted(capsys, fresh_learner):
    problem = map_problem(MAP_TEMPLATE)
    problem.solution(insist=True)
    assert "Reference solution" in capsys.readouterr().out
    for _ in range(3):
        problem.hint()
    problem.solution()
    assert "Reference solution" in capsys.readouterr().out


@pytest.mark.parametrize("puzzle", all_puzzles(), ids=lambda p: f"{p.number}-{p.slug}")
def test_solution_shows_every_puzzles_kernel_and_walkthrough(puzzle, capsys):
    def fn(*_inputs):
        return MetalKernel(name=puzzle.kernel, input_names=list(puzzle.input_names),
                           output_names=list(puzzle.output_names), source="")

    case = puzzle.visible
    MetalProblem(puzzle.title, fn, [mx.array(x) for x in case.inputs], case.output_shape,
                 grid=case.grid, threadgroup=case.threadgroup).solution(insist=True)
    out = capsys.readouterr().out
    assert puzzle.solution().strip().splitlines()[-1] in out
    assert puzzle.walkthrough() in out


def test_solution_shows_the_header_of_puzzles_that_have_one(capsys, fresh_learner):
    def pooling_test(a):
        return MetalKernel(name="pooling", input_names=["a"], output_names=["out"], source="")

    MetalProblem("Pooling", pooling_test, [mx.arange(8)], (8,), grid=(8, 1, 1),
                 threadgroup=(8, 1, 1)).solution(insist=True)
    out = capsys.readouterr().out
    assert "header:\n    constant uint THREADGROUP_MEM_SIZE = 8;" in out
    assert "threadgroup_barrier" in out


def test_solution_in_a_copy_without_solutions_says_so(capsys, fresh_learner, monkeypatch,
                                                       tmp_path):
    monkeypatch.setattr(puzzles.catalog, "SOLUTIONS", tmp_path)
    monkeypatch.setattr(puzzles.catalog, "WALKTHROUGHS", tmp_path / "walkthroughs")
    map_problem(MAP_TEMPLATE).solution(insist=True)
    assert "no reference solutions" in capsys.readouterr().out


def test_solution_of_a_problem_outside_the_catalog(capsys):
    map_problem(MAP_BODY, name="My own map").solution(insist=True)
    assert "not a puzzle of the catalog" in capsys.readouterr().out


def test_hint_counter_survives_re_running_the_cell(capsys, monkeypatch):
    monkeypatch.setattr(utils, "_HINTS_GIVEN", {})
    map_problem(MAP_BODY).hint()
    map_problem(MAP_BODY).hint()  # the cell ran again: a new problem, the same puzzle
    out = capsys.readouterr().out
    assert "Hint 1 of 3" in out and "Hint 2 of 3" in out


def test_verbose_prints_the_generated_source(capsys, monkeypatch):
    monkeypatch.setenv("VERBOSE", "1")
    map_problem(MAP_BODY).check()
    out = capsys.readouterr().out
    assert "[[kernel]] void custom_kernel_map" in out
    assert "int32_t* a [[buffer(0)]]" in out


def test_calling_a_metal_kernel_builds_a_runnable_kernel():
    kernel = MetalKernel(name="map", input_names=["a"], output_names=["out"], source=MAP_BODY)()
    out = kernel(inputs=[mx.arange(4)], output_shapes=[(4,)], output_dtypes=[mx.float32],
                 grid=(4, 1, 1), threadgroup=(1, 1, 1))[0]
    assert out.tolist() == [10, 11, 12, 13]


@pytest.mark.skipif(mx.metal.is_available(), reason="checks the binding's refusal off Apple GPUs")
def test_real_mlx_binding_accepts_the_exact_arguments_the_harness_passes():
    kernel = MetalKernel(name="1D_conv", input_names=["a", "b"], output_names=["out"],
                         source="out[0] = a[0] * b[0];", header="constant uint N = 4;",
                         atomic_outputs=False)
    real = mx.fast.metal_kernel(**kernel.args().factory_kwargs())  # constructs for real
    case = Case((mx.arange(6, dtype=mx.float32), mx.arange(3, dtype=mx.float32)), (6,),
                (8, 1, 1), (8, 1, 1))
    call = call_kwargs(case, list(case.inputs), None)
    # The binding validates every argument before finding there is no Metal back end.
    with pytest.raises(RuntimeError, match="No Metal back-end"):
        real(**call, stream=mx.gpu)
    with pytest.raises(TypeError):  # and it would have said so had one been wrong
        real(**call, stream=mx.gpu, grids=(1, 1, 1))


def test_on_apple_silicon_the_real_kernel_runs_too(monkeypatch):
    # Stand in for the GPU with the simulator: the harness's Metal path runs end to end.
    monkeypatch.setattr(puzzles.checking, "metal_available", lambda: True)
    with metalsim.patch(force=True):
        result = verdict(map_problem(MAP_BODY))
    assert result.passed, result.text
    assert all(c.metal is not None for c in result.cases)
    assert "real GPU" in result.text


def test_real_gpu_disagreeing_with_the_spec_fails(monkeypatch):
    def zero_kernel(**kwargs: object):
        def run(**call: object) -> list[mx.array]:
            return [mx.zeros(call["output_shapes"][0])]
        return run

    monkeypatch.setattr(puzzles.checking, "metal_available", lambda: True)
    monkeypatch.setattr(mx.fast, "metal_kernel", zero_kernel)
    result = verdict(map_problem(MAP_BODY))
    assert result.status == "fail" and "real GPU" in result.reason


def test_explore_builds_an_explorer_that_follows_the_selection():
    explorer = map_problem(MAP_BODY).explore()
    explorer.select(threadgroup=2, thread=0)
    assert {(a.kind, a.cell) for a in explorer.listing} == {("read", "a[2]"), ("write", "out[2]")}


def svg_root(diagram):
    import xml.etree.ElementTree as ET

    return ET.fromstring(diagram.svg)


def cells(root, **data):
    return [el for el in root.iter() if "cell" in el.get("class", "").split()
            and all(el.get(f"data-{k}") == str(v) for k, v in data.items())]


HARD_CODED = "uint i = thread_position_in_grid.x;\nout[i] = i + 10;\n"  # right only on arange


def test_show_and_explore_take_a_hidden_case(capsys):
    problem = map_problem(HARD_CODED)
    result = verdict(problem)
    hidden = next(r for r in result.cases if r.mismatches)
    number = int(hidden.label.split()[1])
    assert f"problem.show(case={number})" in result.text
    assert problem.cases()[0] == "visible" and hidden.label in problem.cases()
    capsys.readouterr()
    diagram = problem.show(case=number)
    assert capsys.readouterr().out.startswith(f"# Map (hidden {number})")
    root = svg_root(diagram)
    launch = next(t.text for t in root.iter() if t.get("class") == "launch")
    assert launch.startswith(f"grid {tuple(hidden.case.grid)}")
    # Wrong cells carry the spec's value, computed here with numpy.
    a = hidden.case.inputs[0]
    wrong = {int(c.get("data-element")): float(c.get("data-expected"))
             for c in cells(root, buffer="out") if "wrong" in c.get("class").split()}
    assert wrong and all(wrong[e] == a.reshape(-1)[e] + 10 for e in wrong)
    assert set(wrong) <= {int(np.ravel_multi_index(p, a.shape)) for p in hidden.mismatches}
    assert problem.show(case=f"hidden case {number}").svg == diagram.svg
    explorer = problem.explore(case=number)
    assert tuple(explorer.report.grid) == tuple(hidden.case.grid)


def test_a_case_that_does_not_exist_is_named_with_the_ones_that_do(capsys):
    assert map_problem(MAP_BODY).show(case=99) is None
    out = capsys.readouterr().out
    assert "no case 99" in out and "'visible', 'hidden 1'" in out
    with pytest.raises(ValueError, match="no case 'bogus'"):
        map_problem(MAP_BODY).explore(case="bogus")


def test_show_of_a_large_launch_traces_only_the_threadgroups_it_draws(monkeypatch, capsys):
    traced = []
    simulate = metalsim.simulate

    def spy(kernel, trace=False, **kw):
        traced.append(trace)
        return simulate(kernel, trace=trace, **kw)

    monkeypatch.setattr(metalsim, "simulate", spy)
    body = "uint i = thread_position_in_grid.x;\nout[i] = a[i] + 10;\n"
    problem = MetalProblem(
        "Big map", lambda a: MetalKernel("m", ["a"], ["out"], source=body), [mx.arange(4096)],
        (4096,), grid=(4096, 1, 1), threadgroup=(32, 1, 1), spec=lambda a: a + 10)
    root = svg_root(problem.show())
    assert traced == [[0]]  # no findings, frames of 8,192 cells: threadgroup 0 only
    assert [f.get("data-threadgroup") for f in root.iter() if f.get("class") == "frame"] == [
        "0"]
    one = svg_root(problem.show(threadgroup=5))
    assert traced[-1] == [5]
    assert [f.get("data-threadgroup") for f in one.iter() if f.get("class") == "frame"] == ["5"]
    note = next(t.text for t in one.iter() if t.get("class") == "shown")
    assert "problem.show(threadgroup=k)" in note
    # A finding in threadgroup 100 (a write past the end): traced and drawn instead.
    bad = body.replace("out[i] =", "out[i + (i == 3200 ? 4096 : 0)] =")
    problem.fn = lambda a: MetalKernel("m", ["a"], ["out"], source=bad)
    root = svg_root(problem.show())
    assert traced[-2:] == [[0], [100]]
    assert [f.get("data-threadgroup") for f in root.iter() if f.get("class") == "frame"] == [
        "100"]


def test_check_prints_a_window_of_large_arrays_around_the_first_wrong_element(capsys):
    body = ("uint r = thread_position_in_grid.y, c = thread_position_in_grid.x;\n"
            "out[r * 24 + c] = (r == 7 && c == 13) ? 0 : a[r * 24 + c] + 10;\n")
    problem = MetalProblem("Window", lambda a: MetalKernel("m", ["a"], ["out"], source=body),
                           [mx.arange(16 * 24).reshape(16, 24)], (16, 24), grid=(24, 16, 1),
                           threadgroup=(8, 8, 1), spec=lambda a: a + 10)
    text = verdict(problem).text
    assert "array of shape (16, 24), dtype" not in text
    lines = text.splitlines()
    yours = lines.index("  Yours: rows 5:10, columns 7:20 of an array of shape (16, 24)")
    row7 = lines[yours + 3]
    assert row7.split("[")[0].strip() == "7"
    assert row7.split("[")[1].split()[1:14] == [str(v) for v in range(185, 191)] + ["0"] + [
        str(v) for v in range(192, 198)]
    caret = lines[yours + 4]
    assert caret.rindex("^") == row7.index(" 0 ") + 1 and caret.strip() == "^^^"
    assert lines[lines.index("  Spec : rows 5:10, columns 7:20 of an array of shape (16, 24)")
                 + 3].split()[8] == "191"


def report_rows(text):
    """The comparison table's rows: label -> cells."""
    rows = {}
    for line in text.splitlines()[2:]:
        parts = line.rsplit(None, 2)
        if len(parts) == 3:
            rows[parts[0].strip()] = parts[1:]
    return rows


def test_report_compares_a_coalesced_kernel_with_the_reference(capsys):
    result = map_problem(MAP_BODY).report()
    rows = report_rows(result.text)
    assert rows["coalescing (ideal/actual)"] == ["100%", "100%"]
    assert result.yours.memory.global_.efficiency == 1.0
    assert result.reference.memory.global_.accesses == result.yours.memory.global_.accesses
    assert "Where yours costs more" not in result.text
    assert "32 banks of 4 bytes" in capsys.readouterr().out


def test_report_shows_an_uncoalesced_kernel_and_the_line_to_blame():
    # Each thread reads every 16th element: 64 bytes apart, a segment per lane.
    body = "uint i = thread_position_in_grid.x;\nout[i] = a[i * 16] + 10;\n"
    problem = MetalProblem("Map", lambda a: MetalKernel("map", ["a"], ["out"], source=body),
                           [mx.arange(1024)], (64,), grid=(64, 1, 1), threadgroup=(64, 1, 1))
    result = problem.report()
    yours, reference = result.yours.memory.global_, result.reference.memory.global_
    assert yours.worst == 32 and reference.worst == 2
    assert yours.cost == 2 * 32 + 2 * 2 and reference.cost == 2 * 2 + 2 * 2
    assert yours.efficiency < reference.efficiency == 1.0
    assert report_rows(result.text)["64-byte segments per access"] == ["17.00", "2.00"]
    assert "line 2: out[i] = a[i * 16] + 10;" in result.text
    assert "17.0 64-byte segments per SIMD-group access, ideal 2.0" in result.text


def test_report_shows_bank_conflicts_of_a_strided_threadgroup_access():
    body = """
threadgroup float t[4 * 32];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
t[local_i * 32] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
out[i] = t[local_i * 32] + 10;
"""
    problem = MetalProblem("Custom", lambda a: MetalKernel("k", ["a"], ["out"], source=body),
                           [mx.arange(4)], (4,), grid=(4, 1, 1), threadgroup=(4, 1, 1))
    result = problem.report()
    assert result.reference is None
    assert result.yours.memory.threadgroup.worst == 4   # 4 lanes, all in bank 0
    rows = report_rows(result.text.replace("yours", "yours x"))
    assert "4" in next(v for k, v in rows.items() if k.startswith("worst bank conflict"))
    assert "bank cycles per SIMD-group access, ideal 1.0" in result.text
