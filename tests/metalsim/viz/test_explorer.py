"""The explorer's state (selection, diagram, listing, counts) follows `select` and its widgets,
without a browser."""

import xml.etree.ElementTree as ET

import mlx.core as mx
import numpy as np
import pytest

import metalsim
from metalsim.viz import Explorer
from metalsim.viz.examples import EXAMPLES


def explorer(name):
    ex = EXAMPLES[name]
    return Explorer(ex.simulate(), inputs=list(ex.inputs), kernel=ex.kernel())


def selected_cells(svg):
    root = ET.fromstring(svg)
    return {(r.get("data-buffer"), r.get("data-element"), r.get("data-phase"))
            for r in root.iter() if "selected" in r.get("class", "").split()
            and r.tag.endswith("rect")}


def test_it_starts_on_the_first_threadgroup_with_every_thread_and_phase():
    e = explorer("reverse")
    assert (e.threadgroup, e.thread, e.simdgroup, e.phase) == (0, None, None, None)
    assert len(e.listing) == 8 * 4  # a reads, shared writes, shared reads, out writes
    assert 'data-threadgroup="0"' in e.view_svg and 'data-threadgroup="1"' not in e.view_svg


def test_selecting_a_thread_and_phase_lists_its_accesses_with_source_lines():
    e = explorer("transpose_tiled")
    e.select(threadgroup=4, thread=5, phase=1)
    # thread (5, 4) of the grid, (2, 1) of its threadgroup, reads in phase 1 its element of a
    # and, across the tile, the element of b its neighbour (1, 2) loaded: b[5][4]
    assert [(r.kind, r.cell) for r in e.listing] == [
        ("read", "a[4][5]"), ("read", "tile[2][1]"), ("write", "out[4][5]")]
    assert {r.thread for r in e.listing} == {5} and {r.phase for r in e.listing} == {1}
    assert all(r.code.startswith("if (row < n && col < n) out[") for r in e.listing)
    a, b = EXAMPLES["transpose_tiled"].inputs
    expected = [a[4, 5], b[5, 4], a[4, 5] + b[5, 4]]
    assert [r.value for r in e.listing] == [str(int(v)) for v in expected]


def test_the_diagram_highlights_the_selection():
    e = explorer("transpose_tiled")
    e.select(threadgroup=4, thread=5, phase=1)
    assert selected_cells(e.view_svg) == {("a", str(4 * 8 + 5), None),
                                          ("tile", str(2 * 4 + 1), "1"),
                                          ("out", str(4 * 8 + 5), None)}
    before = e.view_svg
    e.select(phase=0)  # it loaded b[4][5] into tile[1][2]
    assert e.view_svg != before
    assert selected_cells(e.view_svg) == {("b", str(4 * 8 + 5), None),
                                          ("tile", str(1 * 4 + 2), "0")}


def test_each_access_is_listed_with_the_value_it_read_or_wrote():
    e = explorer("map")
    e.select(threadgroup=1, thread=2)
    assert [(r.kind, r.cell, r.value, r.line) for r in e.listing] == [
        ("read", "a[6]", "6", 2), ("write", "out[6]", "13", 2)]
    assert e.listing[0].code == "out[i] = 2 * a[i] + 1;"


def test_a_simdgroup_selects_its_32_threads():
    source = "uint i = thread_position_in_grid.x;\nout[i] = a[i] * 2;"
    kernel = metalsim.metal_kernel(name="twice", input_names=["a"], output_names=["out"],
                                   source=source)
    a = mx.array(np.arange(64, dtype=np.float32))
    run = metalsim.simulate(kernel, inputs=[a], output_shapes=[(64,)],
                            output_dtypes=[mx.float32], grid=(64, 1, 1),
                            threadgroup=(64, 1, 1), trace=True)
    e = Explorer(run, inputs=[a], kernel=kernel)
    e.select(simdgroup=1)
    assert e.selection.threads == frozenset(range(32, 64))
    assert {r.thread for r in e.listing} == set(range(32, 64))
    e.select(thread=3)
    assert e.simdgroup is None and e.selection.threads == frozenset({3})


def test_counts_are_the_selected_threads():
    e = explorer("count_greater")
    e.select(thread=7)  # the thread that counts
    assert e.counts["threadgroup_reads"] == 8 and e.counts["global_reads"] == 2
    e.select(thread=5)
    assert e.counts["threadgroup_reads"] == 0 and e.counts["threadgroup_writes"] == 1


def test_the_widgets_drive_the_selection_and_show_its_view():
    e = explorer("reverse")
    controls = e.widget and e.controls
    controls["threadgroup"].value = 1
    assert e.threadgroup == 1 and 'data-threadgroup="1"' in e.view_svg
    controls["thread"].value = 5
    controls["phase"].value = 1
    assert (e.thread, e.phase) == (5, 1)
    assert {r.cell for r in e.listing} == {"shared[2]", "out[13]"}  # out[13] = a[8 + 7 - 5]
    assert "shared[2]" in e.listing_html() and e._list_html.value == e.listing_html()
    e.select(threadgroup=0)  # and the state drives the widgets
    assert controls["threadgroup"].value == 0 and controls["thread"].value == 5


def test_the_dropdowns_show_all_and_choosing_all_clears_the_choice():
    e = explorer("reverse")
    controls = e.widget and e.controls
    for key in ("thread", "simdgroup", "phase"):
        label = dict((v, k) for k, v in controls[key].options)[controls[key].value]
        assert label == "all"
    controls["thread"].value = 5
    controls["thread"].value = dict(controls["thread"].options)["all"]
    assert e.thread is None


def test_choices_outside_the_launch_are_refused():
    e = explorer("map")
    with pytest.raises(ValueError, match="threadgroup 2 does not exist"):
        e.select(threadgroup=2)
    with pytest.raises(ValueError, match="thread 4 is not in threadgroup 0"):
        e.select(thread=4)


def test_an_untraced_run_is_refused():
    with pytest.raises(ValueError, match="trace=True"):
        Explorer(EXAMPLES["map"].simulate(trace=False))


def test_the_dropdowns_offer_a_real_all_option_selected_by_default():
    e = explorer("reverse")
    controls = e.widget and e.controls
    for key in ("thread", "simdgroup", "phase"):
        assert controls[key].options[0] == ("all", "all")
        assert controls[key].value == "all" and controls[key].label == "all"
    controls["thread"].value = 3
    assert e.thread == 3
    controls["thread"].value = "all"
    assert e.thread is None and e.selection.threads is None
    assert all(c.style.description_width == "initial" for c in controls.values())


def test_accesses_past_the_end_are_listed_and_flagged():
    e = explorer("out_of_bounds")  # a has 6 elements; threads 5..7 read past its end
    e.select(threadgroup=1)
    outside = [(r.thread, r.cell, r.value) for r in e.listing if r.flag == "out of bounds"]
    assert sorted(outside) == [(1, "a[6]", ""), (2, "a[6]", ""), (2, "a[7]", ""),
                               (3, "a[7]", ""), (3, "a[8]", "")]
    assert "⚠ out of bounds" in e.listing_html()
    assert not [r for r in e.listing if r.flag and r.cell in ("a[4]", "a[5]")]


def test_accesses_to_a_racing_cell_are_flagged():
    e = explorer("racy")
    flagged = {(r.kind, r.cell) for r in e.listing if r.flag == "race"}
    assert ("read", "tile[1]") in flagged and ("write", "tile[1]") in flagged
    assert ("read", "a[1]") not in flagged


RACE_IN_A_PHASE = """
threadgroup float t[4];
uint l = thread_position_in_threadgroup.x;
t[l] = a[l];
threadgroup_barrier(mem_flags::mem_threadgroup);
float v = t[(l + 1) % 4];
t[l] = v + 100;
out[l] = v;
"""


def test_a_selected_thread_sees_the_value_it_read_not_a_later_write_of_the_phase():
    kernel = metalsim.metal_kernel("k", ["a"], ["out"], RACE_IN_A_PHASE)
    a = mx.array([1.0, 2.0, 3.0, 4.0])
    run = metalsim.simulate(kernel, inputs=[a], output_shapes=[(4,)],
                            output_dtypes=[mx.float32], grid=(4, 1, 1),
                            threadgroup=(4, 1, 1), trace=True)
    e = Explorer(run, inputs=[a], kernel=kernel)

    def shown(buffer, element, phase):
        root = ET.fromstring(e.view_svg)
        cell = next(c for c in root.iter() if "cell" in c.get("class", "").split()
                    and (c.get("data-buffer"), c.get("data-element"), c.get("data-phase"))
                    == (buffer, str(element), str(phase)))
        return [t.text for t in cell.iter() if "value" in t.get("class", "").split()]

    assert shown("t", 1, 1) == ["103"]  # after the phase: thread 1 wrote a[2] + 100
    e.select(thread=0, phase=1)
    assert [(r.kind, r.cell, r.value) for r in e.listing][:1] == [("read", "t[1]", "2")]
    assert shown("t", 1, 1) == ["2"]  # what thread 0 read there


def test_an_untraced_threadgroup_is_traced_on_demand():
    ex = EXAMPLES["transpose_tiled"]
    call = dict(inputs=[mx.array(x) for x in ex.inputs], output_shapes=[ex.output_shape],
                output_dtypes=[mx.float32], grid=ex.grid, threadgroup=ex.threadgroup)
    traced = []

    def retrace(g):
        traced.append(g)
        return metalsim.simulate(ex.kernel(), trace=[g], **call)

    e = Explorer(metalsim.simulate(ex.kernel(), trace=[4], **call), inputs=list(ex.inputs),
                 kernel=ex.kernel(), retrace=retrace)
    assert e.threadgroup == 4 and traced == []
    e.select(threadgroup=7)
    assert traced == [7] and e.report.traced_threadgroups == (7,)
    assert {r.cell for r in e.listing if r.kind == "write" and r.cell.startswith("out")} == {
        f"out[{r}][{c}]" for r in (6, 7) for c in (3, 4, 5)}
    with pytest.raises(ValueError, match="threadgroup 2 was not traced"):
        Explorer(metalsim.simulate(ex.kernel(), trace=[4], **call)).select(threadgroup=2)
