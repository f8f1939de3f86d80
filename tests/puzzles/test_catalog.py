"""The whole catalog: every reference solution passes, every template fails without raising,
and the puzzles are complete and consistent."""

from dataclasses import replace

import mlx.core as mx
import numpy as np
import pytest

from puzzles.catalog import all_puzzles, find
from puzzles.checking import check_kernel, puzzle_cases

PUZZLES = all_puzzles()


@pytest.mark.parametrize("puzzle", PUZZLES, ids=lambda p: f"{p.number}-{p.slug}")
def test_reference_solution_passes(puzzle):
    result = check_kernel(puzzle, puzzle.solution())
    assert result.passed, result.text


@pytest.mark.parametrize("puzzle", PUZZLES, ids=lambda p: f"{p.number}-{p.slug}")
def test_template_fails_without_raising(puzzle):
    assert "// FILL ME IN" in puzzle.template
    result = check_kernel(puzzle, puzzle.template)
    assert result.status in ("fail", "error") and not result


def test_numbers_are_consecutive_and_titles_unique():
    assert [p.number for p in PUZZLES] == list(range(1, len(PUZZLES) + 1))
    titles = [t.lower() for p in PUZZLES for t in p.titles]
    assert len(titles) == len(set(titles))


@pytest.mark.parametrize("puzzle", PUZZLES, ids=lambda p: f"{p.number}-{p.slug}")
def test_puzzle_is_complete(puzzle):
    assert puzzle.description.strip() and puzzle.hints
    assert puzzle.solution_file.startswith(f"{puzzle.number:02d}_")
    assert puzzle.solution().strip()
    expected = np.array(puzzle.spec(*(mx.array(x) for x in puzzle.visible.inputs)))
    assert expected.any(), "the visible case must have a non-zero answer"
    assert all(title in puzzle.titles for title in puzzle.cases_by_title)


def test_metal_puzzles_titles_are_found():
    for title in ("Map", "1D Conv (Simple)", "1D Conv (Full)", "Prefix Sum (Simple)",
                  "Prefix Sum (Full)", "Axis Sum", "Matmul (Simple)", "Matmul (Full)"):
        assert find(title) is not None, title


@pytest.mark.parametrize("puzzle", PUZZLES, ids=lambda p: f"{p.number}-{p.slug}")
def test_every_case_keeps_the_visible_cases_dtypes(puzzle):
    # A kernel written for the visible inputs (an `int` accumulator for int32, say) meets the
    # same types in every case it is checked on.
    visible = puzzle.visible
    for label, case in puzzle_cases(puzzle):
        assert [x.dtype for x in case.inputs] == [x.dtype for x in visible.inputs], label
        assert case.output_dtype == visible.output_dtype, label


# Every problem title checked on its own hidden cases: each puzzle's, and each stepping stone's.
TITLED = [(p, title) for p in PUZZLES for title in (p.title, *p.hidden_by_title)]


def sizes(case):
    return [x.shape for x in case.inputs], case.output_shape


@pytest.mark.parametrize(("puzzle", "title"), TITLED, ids=[t for _, t in TITLED])
def test_every_puzzle_has_a_hidden_case_of_other_sizes_than_the_visible_one(puzzle, title):
    # A kernel that hard-codes the visible sizes must fail somewhere.
    visible = puzzle.cases_by_title.get(title, puzzle.visible)
    hidden = puzzle.hidden_cases(np.random.default_rng(0), title)
    assert any(sizes(case) != sizes(visible) for case in hidden)


def test_hidden_cases_follow_a_learners_visible_dtypes():
    map_puzzle = find("Map")
    learner = replace(map_puzzle.visible,
                      inputs=(np.arange(4, dtype=np.float32),))  # floats where the catalog has ints
    hidden = [case for label, case in puzzle_cases(map_puzzle, learner) if label != "visible"]
    assert hidden and all(case.inputs[0].dtype == np.float32 for case in hidden)


def test_metal_puzzles_puzzles_launch_with_zero_filled_outputs_and_the_others_as_declared():
    launch = {p.number: p.launch_init_value for p in PUZZLES}
    assert all(launch[n] == 0 for n in (*range(1, 14), 18, 19))  # as Metal-Puzzles launches
    assert launch[17] == 0 and launch[22] == 0                   # atomics: init_value=0
    assert launch[14] is None and launch[26] is None             # written in full, no fill


# Metal-Puzzles' index formula, which notebook 01 warns is wrong in a partial threadgroup.
WARNED_FORMULA = "threadgroup_position_in_grid.x * threads_per_threadgroup.x"


@pytest.mark.parametrize("puzzle", all_puzzles(), ids=lambda p: p.slug)
def test_no_template_or_solution_starts_with_the_warned_index_formula(puzzle):
    assert WARNED_FORMULA not in puzzle.template
    assert WARNED_FORMULA not in puzzle.solution()


BARRIER_PUZZLES = [p for p in all_puzzles() if "threadgroup_barrier" in p.solution()]


@pytest.mark.parametrize("puzzle", BARRIER_PUZZLES, ids=lambda p: p.slug)
def test_every_barrier_puzzle_has_a_hidden_case_whose_length_is_not_a_whole_threadgroup(puzzle):
    def short(case):
        width = case.threadgroup[0]
        return case.grid[0] % width != 0 or case.inputs[0].shape[-1] % width != 0

    assert any(short(case) for case in puzzle.hidden(np.random.default_rng(0)))


def test_barrier_puzzles_include_every_notebook_that_teaches_a_barrier():
    assert {p.number for p in BARRIER_PUZZLES} >= {8, 9, 10, 11, 12, 13, 15, 16, 18, 19}


def statements(code: str) -> set[str]:
    """The statements of `code` with whitespace removed (`out[i]=a[i]+10`), short ones left out."""
    found = set()
    for line in code.splitlines():
        for part in line.split("//")[0].replace("{", ";").replace("}", ";").split(";"):
            squeezed = "".join(part.split())
            if len(squeezed) >= 8:
                found.add(squeezed)
    return found


@pytest.mark.parametrize("puzzle", all_puzzles(), ids=lambda p: p.slug)
def test_the_last_hint_leads_rather_than_giving_a_line_of_the_solution(puzzle):
    given = set().union(*(statements(span) for span in puzzle.hints[-1].split("`")[1::2]))
    assert not given & statements(puzzle.solution()), puzzle.hints[-1]


@pytest.mark.parametrize("puzzle", PUZZLES, ids=lambda p: f"{p.number}-{p.slug}")
def test_walkthrough_explains_the_indexing_the_barriers_and_the_budget(puzzle):
    text = puzzle.walkthrough()
    assert text.startswith("**Indexing.**")
    assert "budget" in text.lower()
    if "threadgroup_barrier" in puzzle.solution():
        assert "barrier" in text
    if "atomic_" in puzzle.solution():
        assert "atomic" in text.lower()
    assert "solutions/" not in text   # a pip or Colab learner has no such folder
