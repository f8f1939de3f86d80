"""Notebook 05 (puzzles 21-25): reference solutions pass, templates fail, and plausible wrong
kernels are rejected for the right reason."""

import numpy as np
import pytest

from puzzles import ch05_sparse_mvmr as ch05
from puzzles.checking import check_kernel

PUZZLES = [ch05.GATHER_ROWS, ch05.SCATTER_ADD, ch05.MVMR, ch05.MVMR_RUNS, ch05.VVOR]


def body(puzzle, code: str) -> str:
    """The puzzle's template with `code` in place of the FILL ME IN line."""
    prologue = puzzle.template.split("// FILL ME IN")[0]
    return prologue + code


@pytest.mark.parametrize("puzzle", PUZZLES, ids=lambda p: p.slug)
def test_reference_solution_passes_visible_and_hidden_cases(puzzle):
    result = check_kernel(puzzle, puzzle.solution())
    assert result.passed, result.text
    assert len(result.cases) >= 4  # hidden cases ran too


@pytest.mark.parametrize("puzzle", PUZZLES, ids=lambda p: p.slug)
def test_template_as_shipped_fails_without_raising(puzzle):
    assert "// FILL ME IN" in puzzle.template
    result = check_kernel(puzzle, puzzle.template)
    assert result.status == "fail", result.text


@pytest.mark.parametrize("puzzle", PUZZLES, ids=lambda p: p.slug)
def test_reference_solution_passes_other_hidden_draws(puzzle):
    assert check_kernel(puzzle, puzzle.solution(), seed=7).passed


def test_hidden_cases_have_duplicate_indices_and_rows_without_triplets():
    rng = np.random.default_rng(0)
    for case in ch05.MVMR.hidden(rng):
        o_idx = case.inputs[4]
        if o_idx.size > 1:
            assert np.unique(o_idx).size < o_idx.size
    assert any(np.unique(c.inputs[4]).size < c.output_shape[0] for c in ch05.MVMR.hidden(rng))
    lengths = [np.diff(c.inputs[4]) for c in ch05.VVOR.hidden(rng)]
    assert any((d == 0).any() for d in lengths)


def test_run_length_cases_are_sorted_with_runs_of_at_least_four():
    # The budget of 3 atomics per chunk of 8 relies on this.
    for case in [ch05.MVMR_RUNS.visible, *ch05.MVMR_RUNS.hidden(np.random.default_rng(3))]:
        o_idx = case.inputs[4]
        assert np.all(np.diff(o_idx) >= 0)
        assert np.unique(o_idx, return_counts=True)[1].min() >= ch05.MIN_RUN


# --- 21 Gather Rows -------------------------------------------------------------------------


def test_gather_forgetting_the_row_length_copies_the_wrong_elements():
    result = check_kernel(ch05.GATHER_ROWS, body(ch05.GATHER_ROWS,
                                                 "out[t * C + c] = x[idx[t] + c];\n"))
    assert result.status == "fail"
    assert "visible" in result.reason


def test_gather_written_as_a_scatter_races_on_duplicate_indices():
    result = check_kernel(ch05.GATHER_ROWS, body(ch05.GATHER_ROWS,
                                                 "out[idx[t] * C + c] = x[t * C + c];\n"))
    assert result.status == "error"
    assert any(d.kind == "race" for d in result.diagnostics)


# --- 22 Scatter Add -------------------------------------------------------------------------


def test_scatter_add_with_plain_adds_through_a_cast_pointer_is_a_race():
    code = "device float* o = (device float*)out;\no[idx[t] * C + c] += x[t * C + c];\n"
    result = check_kernel(ch05.SCATTER_ADD, body(ch05.SCATTER_ADD, code))
    assert result.status == "error"
    assert any(d.kind == "race" for d in result.diagnostics)


def test_scatter_add_with_atomic_load_then_store_loses_updates():
    code = """\
float old = atomic_load_explicit(&out[idx[t] * C + c], memory_order_relaxed);
atomic_store_explicit(&out[idx[t] * C + c], old + x[t * C + c], memory_order_relaxed);
"""
    result = check_kernel(ch05.SCATTER_ADD, body(ch05.SCATTER_ADD, code))
    assert result.status == "error"
    assert any(d.kind == "lost-update" for d in result.diagnostics)


# --- 23 MVMR --------------------------------------------------------------------------------

MVMR_INDICES = "uint k = a_idx[t], j = b_idx[t], r = o_idx[t];\n"


def test_mvmr_contracting_the_wrong_weight_axis_fails():
    # a[k, g, m, c] instead of a[k, g, c, m]: in bounds on the visible case (C == M), wrong.
    code = MVMR_INDICES + """\
float acc = 0.0f;
for (uint c = 0; c < C; ++c) acc += b[(j * G + g) * C + c] * a[((k * G + g) * M + m) * C + c];
atomic_fetch_add_explicit(&out[(r * G + g) * M + m], acc, memory_order_relaxed);
"""
    result = check_kernel(ch05.MVMR, body(ch05.MVMR, code))
    assert result.status in ("fail", "error")
    assert "visible" in result.reason


def test_mvmr_with_an_atomic_per_product_is_over_budget():
    code = MVMR_INDICES + """\
for (uint c = 0; c < C; ++c) {
    atomic_fetch_add_explicit(&out[(r * G + g) * M + m],
                              b[(j * G + g) * C + c] * a[((k * G + g) * C + c) * M + m],
                              memory_order_relaxed);
}
"""
    result = check_kernel(ch05.MVMR, body(ch05.MVMR, code))
    assert result.status == "over-budget"
    assert result.counts["atomics"] == 8   # C of the largest case


def test_mvmr_with_plain_adds_is_a_race_on_shared_output_rows():
    code = MVMR_INDICES + """\
float acc = 0.0f;
for (uint c = 0; c < C; ++c) acc += b[(j * G + g) * C + c] * a[((k * G + g) * C + c) * M + m];
device float* o = (device float*)out;
o[(r * G + g) * M + m] += acc;
"""
    result = check_kernel(ch05.MVMR, body(ch05.MVMR, code))
    assert result.status == "error"
    assert any(d.kind == "race" for d in result.diagnostics)


# --- 24 MVMR, run-length --------------------------------------------------------------------

DOT = """\
    uint k = a_idx[t], j = b_idx[t];
    for (uint c = 0; c < C; ++c) acc += b[(j * G + g) * C + c] * a[((k * G + g) * C + c) * M + m];
"""
FLUSH = "atomic_fetch_add_explicit(&out[(run * G + g) * M + m], acc, memory_order_relaxed);\n"


def test_mvmr_runs_with_an_atomic_per_triplet_is_over_budget():
    code = "for (uint t = first; t < last; ++t) {\n    float acc = 0.0f;\n"
    code += "    uint run = o_idx[t];\n" + DOT + "    " + FLUSH + "}\n"
    result = check_kernel(ch05.MVMR_RUNS, body(ch05.MVMR_RUNS, code))
    assert result.status == "over-budget"
    assert result.counts["atomics"] == ch05.CHUNK


def test_mvmr_runs_forgetting_the_last_run_fails():
    code = "float acc = 0.0f;\nuint run = o_idx[first];\nfor (uint t = first; t < last; ++t) {\n"
    code += "    if (o_idx[t] != run) {\n        " + FLUSH
    code += "        acc = 0.0f;\n        run = o_idx[t];\n    }\n" + DOT + "}\n"
    result = check_kernel(ch05.MVMR_RUNS, body(ch05.MVMR_RUNS, code))
    assert result.status == "fail"
    assert check_kernel(ch05.MVMR_RUNS, body(ch05.MVMR_RUNS, code + FLUSH)).passed


def test_mvmr_runs_storing_without_atomics_races_where_a_run_crosses_chunks():
    store = "((device float*)out)[(run * G + g) * M + m] = acc;\n"
    code = "float acc = 0.0f;\nuint run = o_idx[first];\nfor (uint t = first; t < last; ++t) {\n"
    code += "    if (o_idx[t] != run) {\n        " + store
    code += "        acc = 0.0f;\n        run = o_idx[t];\n    }\n" + DOT + "}\n" + store
    result = check_kernel(ch05.MVMR_RUNS, body(ch05.MVMR_RUNS, code))
    assert result.status == "error"
    assert any(d.kind == "race" for d in result.diagnostics)


# --- 25 VVOR --------------------------------------------------------------------------------

OUTER = "acc += a[(a_idx[t] * G + g) * C + c] * b[(b_idx[t] * G + g) * M + m];"
STORE = "out[((k * G + g) * C + c) * M + m] = acc;\n"


def test_vvor_looping_at_least_once_takes_a_triplet_of_the_next_slot_for_an_empty_slot():
    code = f"""\
float acc = 0.0f;
uint t = seg_offs[k];
do {{ {OUTER} }} while (++t < seg_offs[k + 1]);
"""
    result = check_kernel(ch05.VVOR, body(ch05.VVOR, code + STORE))
    assert result.status in ("fail", "error")
    empty_slot = result.cases[0].mismatches   # slot 1 of the visible case is empty
    assert empty_slot and all(p[0] == 1 for p in empty_slot)


def test_vvor_with_an_inclusive_segment_end_reads_one_triplet_too_many():
    code = f"""\
float acc = 0.0f;
for (uint t = seg_offs[k]; t <= seg_offs[k + 1]; ++t) {{ {OUTER} }}
"""
    result = check_kernel(ch05.VVOR, body(ch05.VVOR, code + STORE))
    assert result.status in ("fail", "error")


def test_vvor_accumulating_in_the_output_reads_uninitialised_memory():
    # The output of a kernel without atomics is not zero-filled: sum in a register.
    code = """\
for (uint t = seg_offs[k]; t < seg_offs[k + 1]; ++t) {
    out[((k * G + g) * C + c) * M + m] += a[(a_idx[t] * G + g) * C + c]
                                          * b[(b_idx[t] * G + g) * M + m];
}
"""
    result = check_kernel(ch05.VVOR, body(ch05.VVOR, code))
    assert result.status == "error"
    assert any(d.kind == "uninitialized-read" for d in result.diagnostics)
