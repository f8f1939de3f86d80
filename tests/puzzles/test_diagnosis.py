"""diagnose(): the cause named only where the values show it, never over-claimed."""

import numpy as np

from metalsim.diagnostics import Diagnostic
from metalsim.exec.memory import BOUNDS_HINT, WRAP_HINT
from puzzles.diagnosis import diagnose, index_past_the_end, located

GRID = (4, 1, 1)


def cause(expected, produced, dtype="float32", diagnostics=(), writers=None, unwritten=()):
    expected, produced = np.asarray(expected), np.asarray(produced)
    bad = [tuple(int(i) for i in p) for p in np.argwhere(expected != produced)]
    return diagnose(expected, produced, dtype, "out", bad, list(unwritten), list(diagnostics),
                    writers, GRID)


def same_value_writes(threads=((0, 0, 0), (2, 0, 0))) -> Diagnostic:
    return Diagnostic("race", "warning", "benign race on 'out': identical values", line=3,
                      column=5, threads=list(threads),
                      detail="threads of one statement wrote the same value to element 0 of "
                             "'out' with no order between them")


def test_whole_numbers_for_fractions_are_integer_truncation():
    found = cause([1.5, -2.25, 3.75, 4.0], [1.0, -2.0, 3.0, 4.0])
    assert found.kind == "integer-truncation"
    assert "the spec's value with its fraction cut off" in found.detail


def test_wrong_whole_numbers_where_the_spec_has_whole_numbers_are_not_truncation():
    assert cause([1.0, 2.0, 3.0, 4.0], [1.0, 7.0, 3.0, 9.0]) is None


def test_integer_outputs_are_never_called_truncated():
    assert cause(np.array([1, 2, 3, 4]), np.array([1, 0, 3, 0]), dtype="int32") is None


def test_values_found_at_other_positions_are_misplaced():
    found = cause([[1.0, 2.0], [3.0, 4.0]], [[1.0, 3.0], [2.0, 4.0]])
    assert found.kind == "wrong-index" and "transposed" in found.detail


def test_values_the_spec_has_nowhere_are_not_misplaced():
    assert cause([1.0, 2.0, 3.0, 4.0], [1.0, 20.0, 3.0, 40.0]) is None


def test_a_spec_of_few_distinct_values_says_nothing_about_places():
    assert cause([1.0, 1.0, 1.0, 2.0], [1.0, 2.0, 1.0, 1.0]) is None


def test_same_value_writes_with_unwritten_elements_are_a_wrong_index_naming_the_writers():
    writers = {0: np.array([0, 2]), 1: np.array([1, 3])}
    found = cause([10.0, 11.0, 12.0, 13.0], [10.0, 11.0, 0.0, 0.0], writers=writers,
                  diagnostics=[same_value_writes()], unwritten=[(2,), (3,)])
    assert found.kind == "wrong-index" and found.line == 3
    assert found.message == ("wrong index: out[0] is written by 2 threads, while no thread "
                             "writes out[2], out[3]")
    assert "thread (2, 0, 0)" in found.hint


def test_without_a_trace_the_wrong_index_names_metalsims_threads():
    found = cause([10.0, 11.0, 12.0, 13.0], [10.0, 11.0, 0.0, 0.0],
                  diagnostics=[same_value_writes()], unwritten=[(2,), (3,)])
    assert found.kind == "wrong-index" and "thread (2, 0, 0)" in found.hint


def test_same_value_writes_with_right_values_are_redundant_writes():
    found = cause([10.0, 11.0], [10.0, 11.0], diagnostics=[same_value_writes()])
    assert found.kind == "redundant-writes"
    assert "one writer per output element" in found.hint


def test_another_error_comes_first():
    oob = Diagnostic("out-of-bounds", "error", "out-of-bounds read: 'a' has 4 elements", line=2)
    assert cause([1.5, 2.5, 3.5, 4.5], [1.0, 2.0, 3.0, 4.0], diagnostics=[oob]) is None


def test_threads_adding_into_one_element_unatomically_are_left_to_the_race():
    race = Diagnostic("race", "error", "data race on 'out' (device memory)", line=4,
                      hint="several threads write this element, and a barrier would not "
                           "change that: ...")
    assert cause([28.0], [7.0], diagnostics=[race], writers={0: np.arange(8)}) is None


def test_wrong_values_that_appear_elsewhere_but_are_not_a_shuffle_are_not_misplaced():
    # A prefix sum one step short: each wrong value is an earlier prefix, not a moved one.
    assert cause([1.0, 3.0, 6.0, 10.0], [1.0, 1.0, 3.0, 6.0]) is None


def test_elements_left_at_zero_are_not_integer_truncation():
    assert cause([1.5, 2.5, 3.5, 4.5], [1.5, 2.5, 0.0, 0.0], unwritten=[(2,), (3,)]) is None


def test_whole_numbers_far_from_the_spec_are_not_integer_truncation():
    assert cause([1.5, 2.5, 3.5, 4.5], [1.5, 2.5, 40.0, -9.0]) is None


def out_of_bounds(hint: str) -> Diagnostic:
    return Diagnostic(kind="out-of-bounds", severity="error",
                      message="out-of-bounds read: 'a' has 56 elements", line=6, column=39,
                      detail="a thread read element 56 of 'a'; 7 threads in all", hint=hint,
                      excerpt="   6 | out[i] = a[j];")


MISPLACED = Diagnostic(kind="wrong-index", severity="error",
                       message="wrong index: the values land on the wrong elements",
                       detail="out[0, 1] holds 12, which the spec puts at out[1, 0]")


def test_an_index_past_the_end_leads_to_the_index_not_to_a_guard():
    d = index_past_the_end(out_of_bounds(BOUNDS_HINT), MISPLACED, "the visible case")
    assert d.hint.startswith("on the visible case, the values land on the wrong elements: "
                             "the index expression is likely wrong")
    assert "guard the access" not in d.hint
    assert (d.kind, d.line, d.message) == ("out-of-bounds", 6, out_of_bounds("").message)


def test_a_more_specific_out_of_bounds_hint_stays():
    wrapped = out_of_bounds(WRAP_HINT)
    assert index_past_the_end(wrapped, MISPLACED, "the visible case") == wrapped


def test_a_cause_read_from_the_values_is_placed_at_the_access_out_of_bounds():
    d = located(MISPLACED, out_of_bounds(BOUNDS_HINT), "hidden case 5")
    assert (d.kind, d.line, d.column, d.excerpt) == ("wrong-index", 6, 39, "   6 | out[i] = a[j];")
    assert d.detail == (f"{MISPLACED.detail}; on hidden case 5, the access at line 6 goes out "
                        f"of bounds (a thread read element 56 of 'a')")
