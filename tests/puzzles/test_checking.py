"""check_kernel: the verdict's rules (evidence, tolerance, errors first, budget), its text and
JSON, and that no kernel can make it raise."""

import json
from dataclasses import replace

import numpy as np
import pytest

from puzzles.catalog import Budget, Case, Puzzle, find
from puzzles.checking import check_kernel, mismatches

MAP = find("Map")
DOT = find("Dot Product")


def zeros_puzzle() -> Puzzle:
    """A (deliberately bad) puzzle whose every case expects all zeros."""
    case = Case((np.zeros(4, np.float32),), (4,), (4, 1, 1))
    return replace(MAP, spec=lambda a: a * 0, visible=case, hidden=lambda rng: [case])


@pytest.mark.parametrize("source", ["", "}}}{{", "out[0] = ;", "while (true) {}",
                                    "out[1000000] = 1;", "threadgroup float x[100000];",
                                    "uint i = 1 / 0; out[i] = 1;"])
def test_bad_kernels_never_raise(source):
    result = check_kernel(MAP, source)
    assert result.status in ("fail", "error")
    assert not result and result.text


def test_case_expecting_all_zeros_is_no_evidence():
    result = check_kernel(zeros_puzzle(), "out[thread_position_in_grid.x] = 0;")
    assert result.status == "fail"
    assert "all zeros" in result.reason


def test_every_catalog_case_has_a_non_zero_answer_somewhere():
    for seed in (0, 1):
        result = check_kernel(MAP, MAP.solution(), seed=seed)
        assert any(case.evidence for case in result.cases)


def test_float_tolerance_scales_with_the_magnitude_of_the_answer():
    expected = np.array([1000.0, 0.001], np.float32)
    assert mismatches(expected, np.array([1000.02, 0.005], np.float32), "float32") == []
    assert mismatches(expected, np.array([1000.0, 1.0], np.float32), "float32") == [(1,)]


def test_integer_outputs_compare_exactly():
    expected = np.array([1_000_000, 5], np.int32)
    assert mismatches(expected, np.array([1_000_001, 5], np.int32), "int32") == [(0,)]


def test_unwritten_outputs_never_match():
    expected = np.array([1.0, 2.0], np.float32)
    assert mismatches(expected, np.array([1.0, np.nan], np.float32), "float32") == [(1,)]


def test_error_diagnostic_fails_even_when_values_match():
    # Every thread writes out[0]: the sum is right, but the writes race.
    source = DOT.solution().replace("if (local_i == 0) {", "{")
    result = check_kernel(DOT, source)
    assert result.status == "error"
    assert all(not c.mismatches for c in result.cases)
    assert any(d.kind == "race" for d in result.diagnostics)


def test_correct_kernel_over_budget_does_not_pass():
    source = "uint i = thread_position_in_grid.x;\nout[i] = a[i];\nout[i] = out[i] + 10;\n"
    result = check_kernel(MAP, source)
    assert result.status == "over-budget" and not result
    assert "global reads 2 > 1" in result.reason


def test_budget_applies_over_every_case():
    strict = replace(MAP, budget=Budget(global_reads=0))
    assert check_kernel(strict, MAP.solution()).status == "over-budget"


def test_hidden_cases_run_only_when_asked():
    assert [c.label for c in check_kernel(MAP, MAP.solution(), hidden=False).cases] == [
        "visible"]
    hidden = MAP.hidden(np.random.default_rng(0))
    assert len(check_kernel(MAP, MAP.solution()).cases) == 1 + len(hidden)


def test_seed_draws_other_hidden_values():
    first = check_kernel(MAP, MAP.solution(), seed=1).cases[1].case.inputs[0]
    second = check_kernel(MAP, MAP.solution(), seed=2).cases[1].case.inputs[0]
    assert not np.array_equal(first, second)


def test_titled_cases_of_metal_puzzles_run_as_visible_cases():
    conv = find("1D Conv (Full)")
    labels = [c.label for c in check_kernel(conv, conv.solution(), hidden=False).cases]
    assert labels == ["visible", "1D Conv (Full)"]


def test_text_marks_the_differing_positions():
    source = "uint i = thread_position_in_grid.x;\nout[i] = i == 2 ? 0 : a[i] + 10;\n"
    text = check_kernel(MAP, source).text
    lines = text.splitlines()
    yours = next(i for i, line in enumerate(lines) if line.lstrip().startswith("Yours"))
    assert lines[yours].endswith("[10 11  0 13]")
    caret = lines[yours + 1]
    assert caret.count("^") == 2 and caret.index("^") == lines[yours].index(" 0 ")
    assert "differs at [2]" in text and "yours 0, expected 12" in text


def test_text_shows_each_diagnostic_with_its_source_line():
    source = "uint i = thread_position_in_grid.x;\nout[i] = a[i + 1] + 10;\n"
    result = check_kernel(MAP, source)
    assert result.status == "error"
    assert "out-of-bounds" in result.reason
    assert "out[i] = a[i + 1] + 10;" in result.text and "^" in result.text


def test_compile_error_is_an_error_with_its_message():
    result = check_kernel(MAP, "out[0] = undefined_name;")
    assert result.status == "error"
    assert "undeclared identifier" in result.reason
    assert len(result.cases) == 1  # the same error on every case is shown once


def test_json_row_is_serializable_and_complete():
    row = check_kernel(MAP, MAP.template).to_json()
    data = json.loads(json.dumps(row))
    assert {"puzzle", "title", "status", "counts"} <= set(data)
    assert data["puzzle"] == 1 and data["status"] == "fail"
    assert data["cases"][0]["produced"] == [0] * 4  # never written: zeros, as Metal-Puzzles
    never = check_kernel(find("Segment Sum"), find("Segment Sum").template).to_json()
    assert all(x is None for x in np.ravel(never["cases"][0]["produced"]))  # uninitialised
    assert set(data["counts"]) == {"global_reads", "global_writes", "threadgroup_reads",
                                   "threadgroup_writes", "atomics"}


def test_header_defaults_to_the_puzzle_header_and_can_be_replaced():
    shared = find("Threadgroup Memory")
    assert check_kernel(shared, shared.solution()).passed
    result = check_kernel(shared, shared.solution(), header="")
    assert result.status == "error" and "THREADGROUP_MEM_SIZE" in result.text


def test_an_expected_infinity_is_matched_only_by_the_same_infinity():
    expected = np.array([-np.inf, 1.0, np.inf], np.float32)
    assert mismatches(expected, np.array([4.0, 1.0, np.inf], np.float32), "float32") == [(0,)]
    assert mismatches(expected, expected.copy(), "float32") == []
