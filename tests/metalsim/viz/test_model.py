"""The drawing model: index arithmetic (against numpy's), the trace as columns, provenance edges."""

import math

import numpy as np
import pytest

from metalsim.viz.examples import example
from metalsim.viz.model import KINDS, TraceView, logical_index


@pytest.mark.parametrize("shape", [(4,), (3, 5), (2, 3, 4), (7, 1, 3)])
def test_logical_index_is_numpys_row_major_index(shape):
    for element in range(math.prod(shape)):
        assert logical_index(shape, element) == tuple(
            int(i) for i in np.unravel_index(element, shape))


def test_an_element_outside_the_buffer_keeps_its_flat_index():
    assert logical_index((3, 5), 15) == (15,)
    assert logical_index((3, 5), -1) == (-1,)
    assert logical_index((), 2) == (2,)


def reverse_view():
    return TraceView(example("reverse").simulate().report)


def test_columns_hold_one_entry_per_lane_of_each_event_in_execution_order():
    c = reverse_view().columns([1])
    # a read, shared write, shared read, out write: 8 lanes each
    assert len(c) == 32
    assert (np.diff(c.event) >= 0).all()
    assert [KINDS[k] for k in c.kind[::8]] == ["read", "write", "read", "write"]
    assert [c.names[b] for b in c.buffer[::8]] == ["a", "shared", "shared", "out"]
    assert c.thread[:8].tolist() == list(range(8, 16))
    assert c.local[:8].tolist() == list(range(8))
    assert c.phase[::8].tolist() == [0, 0, 1, 1]
    assert c.element[16:24].tolist() == [7 - t for t in range(8)]


def test_accesses_are_the_columns_one_object_each():
    view = reverse_view()
    accesses = view.accesses([1])
    c = view.columns([1])
    trace = view.report.trace
    assert [(a.kind, a.buffer, a.thread, a.local, a.element, a.phase, a.order)
            for a in accesses] == [
        (KINDS[k], c.names[b], t, lo, e, p, o) for k, b, t, lo, e, p, o in zip(
            c.kind.tolist(), c.buffer.tolist(), c.thread.tolist(), c.local.tolist(),
            c.element.tolist(), c.phase.tolist(), c.event.tolist())]
    assert [a.value for a in accesses] == [c.value(trace, i) for i in range(len(c))]
    assert accesses[0].value == 8.0 and accesses[-1].writes


def test_accesses_of_several_threadgroups_interleave_in_execution_order():
    view = reverse_view()
    both = view.accesses([1, 0])
    assert [a.order for a in both] == sorted(a.order for a in both)
    assert sorted((a.threadgroup, a.order, a.local) for a in both) == sorted(
        (a.threadgroup, a.order, a.local) for g in (0, 1) for a in view.accesses([g]))


def test_edges_run_from_the_input_through_threadgroup_memory_to_the_output():
    edges = {(e.source, e.target): e for e in reverse_view().edges(1)}
    loaded = edges[("a", 15), ("shared", 7, 0)]
    assert loaded.source_phases == {None} and loaded.threads == {7}
    stored = edges[("shared", 7), ("out", 8, None)]
    assert stored.source_phases == {1} and stored.threads == {0}
    assert len(edges) == 16


def test_edges_are_ordered_by_target_copy_then_source():
    targets = [(e.target[0], -1 if e.target[2] is None else e.target[2], e.target[1])
               for e in reverse_view().edges(0)]
    assert targets == sorted(targets)


def test_edges_of_chosen_threads_only():
    edges = reverse_view().edges(0, frozenset({2}))
    assert sorted((e.source, e.target) for e in edges) == [
        (("a", 2), ("shared", 2, 0)), (("shared", 5), ("out", 2, None))]
