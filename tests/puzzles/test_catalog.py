"""The whole catalog: every reference solution passes, every template fails without raising,
and the puzzles are complete and consistent."""

import mlx.core as mx
import numpy as np
import pytest

from puzzles.catalog import all_puzzles, find
from puzzles.checking import check_kernel

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
