"""What the drawing knows of each cell (readers, writers, lines, values), from a traced run."""

import mlx.core as mx

import metalsim
from metalsim.viz.cells import CellUse
from metalsim.viz.draw import Selection
from metalsim.viz.examples import example
from metalsim.viz.model import TraceView

# Each thread writes s[l], every thread then reads all of s, writes its sum back, and reads
# its right neighbour's: four barrier phases of threadgroup memory.
SUMS = """
threadgroup float s[4];
uint i = thread_position_in_grid.x; uint l = thread_position_in_threadgroup.x;
s[l] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
float acc = 0;
for (uint j = 0; j < 4; ++j) acc += s[j];
threadgroup_barrier(mem_flags::mem_threadgroup);
s[l] = acc;
threadgroup_barrier(mem_flags::mem_threadgroup);
out[i] = s[(l + 1) % 4];
"""


def sums_use(selection=None, group=1):
    kernel = metalsim.metal_kernel("sums", ["a"], ["out"], SUMS)
    run = metalsim.simulate(kernel, inputs=[mx.arange(8).astype(mx.float32)],
                            output_shapes=[(8,)], output_dtypes=[mx.float32], grid=(8, 1, 1),
                            threadgroup=(4, 1, 1), trace=True)
    return CellUse(TraceView(run.report), [0, 1], selection, group)


def test_a_cell_read_by_every_thread_lists_them_in_the_order_they_first_read_it():
    use = sums_use()
    assert use.readers(use.cell(("s", 2, 1, 1))) == (0, 1, 2, 3)
    assert use.writers(use.cell(("s", 2, 1, 1))) == ()


def test_threadgroup_memory_is_keyed_by_phase_and_threadgroup():
    use = sums_use()
    assert use.writers(use.cell(("s", 2, 0, 1))) == (2,)
    assert use.writers(use.cell(("s", 2, 2, 1))) == (2,)
    assert use.readers(use.cell(("s", 2, 3, 1))) == (1,)       # (l + 1) % 4 == 2
    assert use.readers(use.cell(("s", 2, 3, 0))) == (1,)
    assert use.readers(use.cell(("s", 2, 3, 2))) == ()         # threadgroup 2 does not exist


def test_device_memory_is_keyed_without_phase_or_threadgroup():
    use = sums_use()
    assert use.readers(use.cell(("a", 6, None, None))) == (2,)
    assert use.writers(use.cell(("out", 5, None, None))) == (1,)
    assert use.readers(use.cell(("out", 5, None, None))) == ()


def test_a_threadgroup_memory_copy_holds_the_value_written_in_its_phase():
    use = sums_use()
    assert use.held(use.cell(("s", 1, 0, 1))) == 5.0                # a[5]
    assert use.held(use.cell(("s", 1, 2, 1))) == 4 + 5 + 6 + 7      # the sum written back
    assert use.held(use.cell(("s", 1, 1, 1))) == 5.0                # read only: still a[5]
    assert use.held(use.cell(("a", 1, None, None))) is None   # device memory: the buffers


def test_lines_are_those_of_the_accesses_to_the_cell():
    use = sums_use()
    (write,) = use.lines(use.cell(("s", 0, 0, 0)))
    assert use.lines(use.cell(("a", 0, None, None))) == (write,)
    (read,) = use.lines(use.cell(("s", 0, 1, 0)))
    (write_back,) = use.lines(use.cell(("s", 0, 2, 0)))
    (last,) = use.lines(use.cell(("out", 0, None, None)))
    assert write < read < write_back < last
    assert use.lines(use.cell(("out", 99, None, None))) == ()


def test_the_focus_threadgroups_device_elements_each_once_ascending():
    assert sums_use(group=1).focus_touched == {"a": [4, 5, 6, 7], "out": [4, 5, 6, 7]}


def test_a_selection_sees_what_its_threads_did_in_its_phase():
    use = sums_use(Selection(1, frozenset({1}), 3), group=1)
    assert use.selected == {("s", 2, 3, 1): {"read"}, ("out", 5, None, None): {"write"}}
    cell = use.cell(("s", 2, 3, 1))
    assert use.has_seen(cell) and use.seen(cell) == 4 + 5 + 6 + 7
    assert not use.has_seen(use.cell(("s", 1, 3, 1)))


def test_a_selection_of_a_whole_threadgroup_marks_reads_and_writes_without_values():
    use = sums_use(Selection(0), group=0)
    assert use.selected[("s", 3, 2, 0)] == {"write"}
    assert use.selected[("a", 3, None, None)] == {"read"}
    # all threads, all phases: the cell shows its own value
    assert not use.has_seen(use.cell(("s", 3, 2, 0)))


def test_the_copies_touched_list_each_cell_once():
    touched = sums_use().touched()
    assert sorted(touched[("s", 3, 0)]) == [0, 1, 2, 3]
    assert sorted(touched[("a", None, None)]) == list(range(8))


def test_an_atomic_counts_as_a_write():
    run = example("count_positive").simulate()
    use = CellUse(TraceView(run.report), [0], None, 0)
    writers = use.writers(use.cell(("out", 0, None, None)))
    a = [0, 2, -1, 2, 3, -2, 0, 1]
    assert sorted(writers) == [t for t in range(8) if a[t] > 0]


def test_a_selection_covers_the_accesses_of_its_threads_in_its_phase():
    run = example("reverse").simulate()
    c = TraceView(run.report).columns([0, 1])
    covered = Selection(1, frozenset({2, 5}), 1).covered(c)
    # phase 1: each chosen thread reads its mirror cell and writes its output
    assert sorted(zip(c.thread[covered].tolist(), c.element[covered].tolist())) == [
        (10, 5), (10, 10), (13, 2), (13, 13)]
    assert Selection(0).covered(c).sum() == 32
