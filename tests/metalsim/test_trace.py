"""trace=True records every access with its thread, epoch and line, and where written values
came from (data provenance), for diagrams drawn from what the simulator actually did."""

import mlx.core as mx
import pytest

import metalsim


def traced(source, inputs, names, out_shape, grid, tg, header=""):
    kernel = metalsim.metal_kernel("k", names, ["out"], source, header=header)
    run = metalsim.simulate(kernel, inputs=inputs, output_shapes=[out_shape],
                            output_dtypes=[mx.float32], grid=grid, threadgroup=tg, trace=True)
    assert run.report.errors == []
    return run.report.trace


def writes_to(trace, buffer):
    out = {}
    for event in trace:
        if event["kind"] == "write" and event["buffer"] == buffer:
            for tg, element, sources in zip(event["threadgroup"], event["element"],
                                            event["sources"]):
                out[(int(tg), int(element))] = sources
    return out


def test_map_write_comes_from_the_same_input_cell():
    trace = traced("uint i = thread_position_in_grid.x;\nout[i] = a[i] + 10;",
                   [mx.arange(8)], ["a"], (8,), (8, 1, 1), (4, 1, 1))
    writes = writes_to(trace, "out")
    assert writes[(1, 5)] == {("a", -1, 5)}
    reads = [e for e in trace if e["kind"] == "read"]
    assert [int(t) for e in reads for t in e["thread"]] == list(range(8))
    assert all(e["line"] == 2 and e["section"] == "source" for e in trace)


def test_values_flow_through_threadgroup_memory_across_a_barrier():
    source = """
    threadgroup float tile[4];
    uint i = thread_position_in_grid.x, l = thread_position_in_threadgroup.x;
    tile[l] = a[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = tile[(l + 1) % 4];
    """
    trace = traced(source, [mx.arange(8)], ["a"], (8,), (8, 1, 1), (4, 1, 1))
    assert writes_to(trace, "tile")[(1, 2)] == {("a", -1, 6)}
    assert writes_to(trace, "out")[(1, 7)] == {("tile", 1, 0)}
    epochs = {(e["buffer"], e["kind"]): set(e["epoch"].tolist()) for e in trace}
    assert epochs[("tile", "write")] == {0} and epochs[("tile", "read")] == {1}


def test_provenance_follows_variables_loops_and_helper_functions():
    header = "inline float twice(float x) { return 2.0f * x; }\n"
    source = """
    uint i = thread_position_in_grid.x;
    float acc = 0;
    for (uint k = 0; k < 3; ++k) acc += a[i + k];
    float doubled = twice(acc);
    out[i] = doubled;
    """
    trace = traced(source, [mx.arange(10)], ["a"], (8,), (8, 1, 1), (8, 1, 1), header)
    assert writes_to(trace, "out")[(0, 4)] == {("a", -1, 4), ("a", -1, 5), ("a", -1, 6)}


def test_an_index_read_from_memory_is_not_part_of_the_value():
    source = "uint i = thread_position_in_grid.x;\nout[i] = a[idx[i]];"
    trace = traced(source, [mx.arange(8), mx.array([3, 1, 2, 0, 7, 6, 5, 4])], ["a", "idx"],
                   (8,), (8, 1, 1), (8, 1, 1))
    assert writes_to(trace, "out")[(0, 0)] == {("a", -1, 3)}


def test_trace_of_a_huge_launch_is_refused_clearly():
    kernel = metalsim.metal_kernel("k", ["a"], ["out"], "out[thread_position_in_grid.x] = 1;")
    with pytest.raises(ValueError, match="trace=True .* limited to 16,384 threads"):
        metalsim.simulate(kernel, inputs=[mx.arange(8)], output_shapes=[(1 << 20,)],
                          output_dtypes=[mx.float32], grid=(1 << 20, 1, 1),
                          threadgroup=(256, 1, 1), trace=True)


def _events_of(trace, groups):
    """The trace's per-lane records restricted to `groups`, as comparable tuples."""
    rows = []
    for e in trace:
        for k in range(len(e["thread"])):
            if int(e["threadgroup"][k]) in groups:
                rows.append((e["kind"], e["buffer"], int(e["thread"][k]), int(e["element"][k]),
                             int(e["epoch"][k]), e["line"], str(e["value"][k]),
                             e["sources"][k] if e["sources"] is not None else None))
    return rows


@pytest.mark.parametrize("groups", [[0], [3], [1, 2]])
def test_tracing_chosen_threadgroups_records_exactly_their_part_of_the_full_trace(groups):
    from metalsim.viz.examples import TRANSPOSE_TILED

    a, b = mx.arange(36).reshape(6, 6), mx.ones((6, 6))
    kernel = metalsim.metal_kernel("k", ["a", "b"], ["out"], TRANSPOSE_TILED,
                                   header="#define TILE 3\n")
    call = dict(inputs=[a, b], output_shapes=[(6, 6)], output_dtypes=[mx.float32],
                grid=(6, 6, 1), threadgroup=(3, 3, 1))
    full = metalsim.simulate(kernel, trace=True, **call)
    part = metalsim.simulate(kernel, trace=groups, **call)
    assert part.report.traced_threadgroups == tuple(sorted(groups))
    assert full.report.traced_threadgroups is None
    assert {int(g) for e in part.report.trace for g in e["threadgroup"]} == set(groups)
    assert _events_of(part.report.trace, set(groups)) == _events_of(full.report.trace,
                                                                    set(groups))
    assert mx.array_equal(part.outputs[0], full.outputs[0])


def test_a_variable_overwritten_from_no_memory_no_longer_carries_its_old_provenance():
    source = """
    uint i = thread_position_in_grid.x;
    float x = a[i];
    out[i] = x;
    x = 3.0f;
    out[i] = x;
    """
    trace = traced(source, [mx.arange(4).astype(mx.float32)], ["a"], (4,), (4, 1, 1),
                   (4, 1, 1))
    first, second = [e for e in trace if e["kind"] == "write"]
    assert [set(s) for s in first["sources"]] == [{("a", -1, i)} for i in range(4)]
    assert [set(s) for s in second["sources"]] == [set()] * 4


@pytest.mark.parametrize("value, cells", [
    ("a[i] > 1 ? 5.0f : 6.0f", {"a"}),                 # the condition is all that was read
    ("b[i] + (a[i] > 1 ? 5.0f : 6.0f)", {"a", "b"}),   # it joins what was read before it
])
def test_the_cells_a_conditional_expression_tests_flow_into_its_value(value, cells):
    source = f"uint i = thread_position_in_grid.x;\nout[i] = {value};"
    inputs = [mx.arange(4).astype(mx.float32), mx.arange(4).astype(mx.float32)]
    trace = traced(source, inputs, ["a", "b"], (4,), (4, 1, 1), (4, 1, 1))
    (write,) = [e for e in trace if e["kind"] == "write"]
    assert [set(s) for s in write["sources"]] == [{(name, -1, i) for name in cells}
                                                  for i in range(4)]
