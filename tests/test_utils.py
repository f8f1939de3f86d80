"""utils.py: Metal-Puzzles' cells run unchanged; check() uses the catalog's hidden cases and
budgets; show(), hint(), VERBOSE; the real MLX binding accepts exactly what the harness passes."""

import mlx.core as mx
import pytest
from metal_puzzles_cells import CELLS, PRELUDE

import metalsim
import puzzles.checking
import utils
from puzzles.catalog import Case
from puzzles.checking import call_kwargs
from utils import MetalKernel, MetalProblem


def run_cells(*titles: str) -> dict:
    """Execute the Metal-Puzzles cells up to and including `titles`, in notebook order."""
    namespace: dict = {}
    exec(PRELUDE, namespace)
    order = list(CELLS)
    for title in order[: max(order.index(t) for t in titles) + 1]:
        exec(CELLS[title], namespace)
        namespace.setdefault("problems", {})[title] = namespace["problem"]
    return namespace["problems"]


def map_problem(body: str, name: str = "Map", spec=lambda a: a + 10) -> MetalProblem:
    def map_test(a: mx.array) -> MetalKernel:
        return MetalKernel(name="map", input_names=["a"], output_names=["out"], source=body)

    return MetalProblem(name, map_test, [mx.arange(4)], (4,), grid=(4, 1, 1), spec=spec)


MAP_BODY = "uint local_i = thread_position_in_grid.x;\nout[local_i] = a[local_i] + 10;\n"


# Metal-Puzzles' own template for this puzzle puts the barrier inside `if (i < a_shape[0])`:
# right for its visible case, a divergent barrier when the grid runs past the end of `a`.
TEMPLATE_BUGS = {"Threadgroup Memory": "divergent-barrier"}


def test_every_metal_puzzles_cell_with_a_solution_passes_unchanged(capsys):
    problems = run_cells(*CELLS)
    assert len(problems) == 17  # 14 puzzles; 1D Conv, Prefix Sum and Matmul have two tests
    for title, problem in problems.items():
        result = problem.check()
        assert any(c.label.startswith("hidden") for c in result.cases), title
        if title in TEMPLATE_BUGS:
            assert result.status == "error" and result.cases[0].label == "visible"
            assert not result.cases[0].diagnostics, title  # the visible case hides it
            assert TEMPLATE_BUGS[title] in {d.kind for d in result.diagnostics}
        else:
            assert result.passed, f"{title}:\n{result.text}"
    assert capsys.readouterr().out.count("Failed") == len(TEMPLATE_BUGS)


def test_metal_puzzles_titles_map_to_catalog_puzzles():
    problems = run_cells("Matmul (Full)")
    numbers = {title: p.puzzle.number for title, p in problems.items()}
    assert numbers["1D Conv (Full)"] == 11
    assert numbers["Prefix Sum (Simple)"] == 12
    assert numbers["Matmul (Simple)"] == 18
    assert numbers["Matmul (Full)"] == 19


def test_unfilled_template_fails_and_says_so_without_raising(capsys):
    problem = map_problem("uint local_i = thread_position_in_grid.x;\n// FILL ME IN\n")
    result = problem.check()
    assert not result and result.status == "fail"
    out = capsys.readouterr().out
    assert out.startswith("Failed Tests")
    assert "Yours: [nan nan nan nan]" in out and "Spec : [10 11 12 13]" in out
    assert "problem.hint()" in out


def test_kernel_hard_coding_the_visible_answer_fails_on_a_hidden_case():
    result = map_problem("uint i = thread_position_in_grid.x;\nout[i] = i + 10;\n").check()
    assert result.status == "fail"
    assert result.cases[0].label == "visible" and not result.cases[0].mismatches
    assert "hidden" in result.reason


def test_catalog_budget_is_enforced():
    body = "uint i = thread_position_in_grid.x;\nout[i] = a[i] + 10;\nout[i] = a[i] + 10;\n"
    result = map_problem(body).check()
    assert result.status == "over-budget"
    assert result.counts["global_reads"] == 2 and result.budget["global_reads"] == 1


def test_problem_outside_the_catalog_is_checked_on_its_own_case_and_spec():
    problem = map_problem("uint i = thread_position_in_grid.x;\nout[i] = a[i] * 2;\n",
                          name="Doubling", spec=lambda a: a * 2)
    result = problem.check()
    assert result.passed, result.text
    assert [c.label for c in result.cases] == ["visible"] and result.budget == {}


def test_problem_without_spec_outside_the_catalog_reports_an_error():
    result = map_problem(MAP_BODY, name="Mine", spec=None).check()
    assert result.status == "error" and "spec" in result.reason


def test_race_fails_even_when_the_values_come_out_right():
    body = """
threadgroup float shared[THREADGROUP_MEM_SIZE];
uint i = thread_position_in_grid.x;
shared[i] = a[i];
out[i] = shared[(i + 1) % 8] * 0 + shared[i] + 10;
"""

    def test_fn(a: mx.array) -> MetalKernel:
        return MetalKernel("threadgroup_memory", ["a"], ["out"], body,
                           header="constant uint THREADGROUP_MEM_SIZE = 8;")

    problem = MetalProblem("Threadgroup Memory", test_fn, [mx.ones(8)], (8,), grid=(8, 1, 1),
                           threadgroup=(8, 1, 1))
    result = problem.check()
    assert result.status == "error"
    assert any(d.kind == "race" for d in result.diagnostics)
    assert "shared[(i + 1) % 8]" in result.text  # the diagnostic quotes the line


def test_compile_error_is_reported_with_its_line():
    result = map_problem("uint i = thread_position_in_grid.x;\nout[j] = a[i];\n").check()
    assert result.status == "error"
    assert "undeclared identifier 'j'" in result.text and "out[j] = a[i];" in result.text


def test_learner_python_that_raises_is_an_error_not_a_crash():
    def broken(a: mx.array) -> MetalKernel:
        raise KeyError("oops")

    result = MetalProblem("Map", broken, [mx.arange(4)], (4,), grid=(4, 1, 1)).check()
    assert result.status == "error" and "KeyError" in result.reason


def test_function_returning_something_else_than_a_kernel_is_an_error():
    result = MetalProblem("Map", lambda a: "out[0] = 1;", [mx.arange(4)], (4,),
                          grid=(4, 1, 1)).check()
    assert result.status == "error" and "must return a MetalKernel" in result.reason


def test_show_prints_the_metal_puzzles_score_table_and_returns_the_diagram(capsys):
    diagram = map_problem(MAP_BODY).show()
    assert "<svg" in diagram._repr_svg_() and 'data-buffer="out"' in diagram.svg
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "# Map"
    assert out[1] == "Score (Max Per Thread):"
    assert "| Global Reads | Global Writes | Shared Reads | Shared Writes |" in out[2]
    assert [int(x) for x in out[3].split("|")[2:6]] == [1, 1, 0, 0]
    assert out[4].startswith("| Budget |")


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
        result = map_problem(MAP_BODY).check()
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
    result = map_problem(MAP_BODY).check()
    assert result.status == "fail" and "real GPU" in result.reason


def test_explore_builds_an_explorer_that_follows_the_selection():
    explorer = map_problem(MAP_BODY).explore()
    explorer.select(threadgroup=2, thread=0)
    assert {(a.kind, a.cell) for a in explorer.listing} == {("read", "a[2]"), ("write", "out[2]")}
