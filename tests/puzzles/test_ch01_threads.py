"""Notebook 01 (puzzles 1-7): the Metal-Puzzles launches, and plausible wrong kernels rejected
for the right reason."""

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
    ("Broadcast", GLOBAL_XY + "if (x < 2 && y < 2) out[y * 2 + x] = a[y] + b[x] + a[y] * 0;",
     "over-budget", None),
    # Every threadgroup writes the first four elements (the same values): a wrong index.
    ("Threadgroups", "uint i = thread_position_in_threadgroup.x;\nout[i] = a[i] + 10;",
     "fail", "wrong-index"),
    ("Threadgroups", GLOBAL_X + "if (i < 12) out[i] = a[i] + 10;", "error", "out-of-bounds"),
    ("Threadgroups 2D", GLOBAL_XY + "if (x < 5) out[y * 5 + x] = a[y * 5 + x] + 10;",
     "error", "out-of-bounds"),
    ("Threadgroups 2D", GLOBAL_XY + "if (x < 5 && y < 5) out[y * 5 + x] = 11;", "fail", None),
])
def test_wrong_kernel_is_rejected_for_the_right_reason(title, source, status, kind):
    result = check_kernel(find(title), source)
    assert result.status == status, result.text
    if kind is not None:
        assert kind in {d.kind for d in result.diagnostics + [result.cause] if d}
    if status == "fail":
        assert any(c.mismatches for c in result.cases)


def test_hidden_cases_keep_the_sizes_and_draw_new_values():
    result = check_kernel(find("Map"), find("Map").solution())
    visible, *hidden = result.cases
    assert len(hidden) == 3
    for case in hidden:
        assert case.case.inputs[0].shape == visible.case.inputs[0].shape
        assert case.case.inputs[0].dtype == visible.case.inputs[0].dtype
        assert list(case.case.inputs[0]) != list(visible.case.inputs[0])
