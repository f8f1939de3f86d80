"""Notebook 01 (puzzles 1-7): the Metal-Puzzles launches, and plausible wrong kernels rejected
for the right reason."""

import numpy as np
import pytest

from puzzles import ch01_threads  # noqa: F401 - registers the puzzles
from puzzles.catalog import find
from puzzles.checking import check_kernel

GLOBAL_X = "uint i = thread_position_in_grid.x;\n"
GLOBAL_XY = "uint x = thread_position_in_grid.x;\nuint y = thread_position_in_grid.y;\n"


def test_launches_are_those_of_metal_puzzles():
    launches = {p.title: (p.visible.grid, p.visible.threadgroup, p.visible.output_shape)
                for p in map(find, range(1, 8))}
    assert launches == {
        "Map": ((4, 1, 1), (1, 1, 1), (4,)),
        "Zip": ((4, 1, 1), (1, 1, 1), (4,)),
        "Guard": ((8, 1, 1), (1, 1, 1), (4,)),
        "Map 2D": ((3, 3, 1), (1, 1, 1), (2, 2)),
        "Broadcast": ((3, 3, 1), (1, 1, 1), (2, 2)),
        "Threadgroups": ((12, 1, 1), (4, 1, 1), (9,)),
        "Threadgroups 2D": ((6, 6, 1), (3, 3, 1), (5, 5)),
    }


@pytest.mark.parametrize(("title", "source", "status", "kind"), [
    # Hard-coded to the visible input a = [0, 1, 2, 3]: hidden random values expose it.
    ("Map", GLOBAL_X + "out[i] = i + 10;", "fail", None),
    ("Map", GLOBAL_X + "out[i] = a[i] + 10 + a[i] * 0;", "over-budget", None),
    # Visible a and b are equal, so adding a twice looks right there.
    ("Zip", GLOBAL_X + "out[i] = a[i] + a[i];", "fail", None),
    ("Guard", GLOBAL_X + "out[i] = a[i] + 10;", "error", "out-of-bounds"),
    ("Guard", GLOBAL_X + "if (i < 8) out[i] = a[i] + 10;", "error", "out-of-bounds"),
    ("Map 2D", GLOBAL_XY + "if (x < a_shape[1]) out[y * 2 + x] = a[y * 2 + x] + 10;",
     "error", "out-of-bounds"),
    ("Map 2D", GLOBAL_XY + "if (x < 2 && y < 2) out[y * 2 + x] = a[x * 2 + y] + 10;",
     "fail", None),
    # Row and column swapped: the visible a and b are the same numbers.
    ("Broadcast", GLOBAL_XY + "if (x < 2 && y < 2) out[y * 2 + x] = a[x] + b[y];", "fail", None),
    ("Broadcast", GLOBAL_XY + "if (x < b_shape[1] && y < a_shape[0]) "
     "out[y * b_shape[1] + x] = a[y] + b[x] + a[y] * 0;", "over-budget", None),
    # Every threadgroup writes the first four elements: a race between threadgroups.
    ("Threadgroups", "uint i = thread_position_in_threadgroup.x;\nout[i] = a[i] + 10;",
     "error", "race"),
    ("Threadgroups", GLOBAL_X + "if (i < 12) out[i] = a[i] + 10;", "error", "out-of-bounds"),
    ("Threadgroups 2D", GLOBAL_XY + "if (x < 5) out[y * 5 + x] = a[y * 5 + x] + 10;",
     "error", "out-of-bounds"),
    ("Threadgroups 2D", GLOBAL_XY + "if (x < 5 && y < 5) out[y * 5 + x] = 11;", "fail", None),
])
def test_wrong_kernel_is_rejected_for_the_right_reason(title, source, status, kind):
    result = check_kernel(find(title), source)
    assert result.status == status, result.text
    if kind is not None:
        assert kind in {d.kind for d in result.diagnostics}
    if status == "fail":
        assert any(c.mismatches for c in result.cases)


def test_hidden_cases_draw_new_values_at_the_visible_sizes_and_at_others():
    result = check_kernel(find("Map"), find("Map").solution())
    visible, *hidden = result.cases
    assert len(hidden) == 5
    shape = visible.case.inputs[0].shape
    assert [c.case.inputs[0].shape == shape for c in hidden] == [True] * 3 + [False] * 2
    for case in hidden:
        assert case.case.inputs[0].dtype == visible.case.inputs[0].dtype
        assert case.case.grid == (case.case.inputs[0].size, 1, 1)   # 1 thread per position
    assert list(hidden[0].case.inputs[0]) != list(visible.case.inputs[0])


def test_hidden_sizes_are_drawn_from_the_seed():
    def sizes(seed):
        return [c.inputs[0].shape for c in find("Guard").hidden(np.random.default_rng(seed))]

    assert sizes(1) == sizes(1)
    assert len({tuple(sizes(seed)) for seed in range(5)}) > 1


@pytest.mark.parametrize("title", ["Map 2D", "Broadcast", "Threadgroups 2D"])
def test_2d_hidden_cases_are_one_tall_and_one_wide(title):
    shapes = [c.output_shape for c in find(title).hidden(np.random.default_rng(0))[3:]]
    assert [rows > cols for rows, cols in shapes] == [True, False]


@pytest.mark.parametrize("title", [p.title for p in map(find, range(1, 8))])
def test_hidden_launches_follow_the_puzzles_text(title):
    puzzle = find(title)
    for case in puzzle.hidden(np.random.default_rng(0)):
        rows, cols = case.output_shape if len(case.output_shape) == 2 else (1, case.output_shape[0])
        if title in ("Map", "Zip"):   # 1 thread per position
            assert case.grid == (cols, 1, 1)
        else:                         # more threads than positions
            assert case.grid[0] >= cols and case.grid[1] >= rows
            assert case.grid[0] * case.grid[1] > rows * cols
        if title.startswith("Threadgroups"):   # whole threadgroups, each smaller than `a`
            assert case.threadgroup == puzzle.visible.threadgroup
            assert all(g % t == 0 for g, t in zip(case.grid, case.threadgroup))
            assert case.threadgroup[0] < cols
            assert title == "Threadgroups" or case.threadgroup[1] < rows


# Kernels written for the visible sizes: right there, wrong on a hidden case of other sizes.
HARD_CODED = {
    "Guard": GLOBAL_X + "if (i < 4) out[i] = a[i] + 10;",
    "Map 2D": GLOBAL_XY + "if (x < 2 && y < 2) out[y * 2 + x] = a[y * 2 + x] + 10;",
    "Threadgroups": GLOBAL_X + "if (i < 9) out[i] = a[i] + 10;",
    "Threadgroups 2D": GLOBAL_XY + "if (x < 5 && y < 5) out[y * 5 + x] = a[y * 5 + x] + 10;",
    "Broadcast": GLOBAL_XY + "if (x < 2 && y < 2) out[y * 2 + x] = a[y] + b[x];",
}
# Rows and columns swapped in the guard, or the row length taken from the number of rows:
# right on the square visible case.
TRANSPOSED = {
    "Map 2D": GLOBAL_XY + """\
if (x < a_shape[0] && y < a_shape[1]) out[y * a_shape[1] + x] = a[y * a_shape[1] + x] + 10;""",
    "Broadcast": GLOBAL_XY + """\
if (x < a_shape[0] && y < b_shape[1]) out[y * b_shape[1] + x] = a[y] + b[x];""",
    "Threadgroups 2D": GLOBAL_XY + """\
if (x < a_shape[1] && y < a_shape[0]) out[y * a_shape[0] + x] = a[y * a_shape[0] + x] + 10;""",
}


@pytest.mark.parametrize(("title", "source"), [*HARD_CODED.items(), *TRANSPOSED.items()],
                         ids=[*(f"hard-coded {t}" for t in HARD_CODED),
                              *(f"transposed {t}" for t in TRANSPOSED)])
def test_kernel_right_only_at_the_visible_sizes_fails_a_hidden_case(title, source):
    puzzle = find(title)
    assert check_kernel(puzzle, source, hidden=False).passed
    result = check_kernel(puzzle, source)
    assert not result.passed
    failing = next(c for c in result.cases if not c.correct)
    assert failing.label.startswith("hidden")
    assert failing.case.output_shape != puzzle.visible.output_shape
