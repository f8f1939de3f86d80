"""Diagrams are drawn from the trace: their cells, arrows, phases and findings are read back from
the SVG and compared with what the simulator recorded."""

import math
import struct
import xml.etree.ElementTree as ET
import zlib

import mlx.core as mx
import numpy as np
import pytest

import metalsim
from metalsim.viz import Selection, draw
from metalsim.viz.examples import EXAMPLES

SVG = "{http://www.w3.org/2000/svg}"


def traced(name):
    ex = EXAMPLES[name]
    return ex.simulate(), list(ex.inputs)


def parse(diagram):
    return ET.fromstring(diagram.svg)


def classes(el):
    return el.get("class", "").split()


def find(root, klass, **data):
    """Elements whose class list holds `klass` and whose data-* attributes match `data`."""
    return [el for el in root.iter() if klass in classes(el)
            and all(el.get(f"data-{k.replace('_', '-')}") == str(v) for k, v in data.items())]


def provenance_edges(run, groups):
    """(threadgroup, source cell, target cell) triples read straight off the trace: for every
    write by a thread of a shown threadgroup, each source cell of a drawn buffer; threadgroup
    memory targets are told apart by barrier phase (their copy), device ones are not."""
    report = run.report
    edges = set()
    for event in report.trace:
        if event["kind"] == "read" or event["buffer"] not in report.buffers:
            continue
        shared = report.buffers[event["buffer"]]["space"] == "threadgroup"
        for g, element, epoch, sources in zip(event["threadgroup"], event["element"],
                                              event["epoch"], event["sources"]):
            if int(g) not in groups:
                continue
            target = (event["buffer"], int(element), int(epoch) if shared else None)
            for buffer, _, source_element in sources:
                if buffer in report.buffers and (buffer, source_element) != target[:2]:
                    edges.add((int(g), (buffer, source_element), target))
    return edges


def drawn_edges(root):
    edges = set()
    for arrow in find(root, "arrow"):
        buffer, element = arrow.get("data-from").split(":")
        to_buffer, to_element = arrow.get("data-to").split(":")
        phase = arrow.get("data-to-phase")
        edges.add((int(arrow.get("data-threadgroup")), (buffer, int(element)),
                   (to_buffer, int(to_element), None if phase is None else int(phase))))
    return edges


def shown_groups(root):
    return {int(f.get("data-threadgroup")) for f in find(root, "frame")}


@pytest.mark.parametrize("name", ["map", "reverse", "count_greater", "racy"])
def test_arrows_are_the_provenance_edges_of_the_shown_threadgroups(name):
    run, inputs = traced(name)
    root = parse(draw(run, inputs=inputs))
    edges = provenance_edges(run, shown_groups(root))
    assert len(find(root, "arrow")) == len(edges) > 0
    assert drawn_edges(root) == edges
    assert not find(root, "arrow-bundle")


def test_past_64_flows_one_threads_are_drawn_and_the_rest_bundled_with_their_count():
    run, inputs = traced("transpose_tiled")
    root = parse(draw(run, inputs=inputs))
    edges = provenance_edges(run, shown_groups(root))
    singles, bundles = find(root, "arrow"), find(root, "arrow-bundle")
    paths = sum(len(a.findall(f"{SVG}path")) for a in singles + bundles)
    assert paths <= 64 and singles and bundles
    # thread 0's own flows one by one, and every flow counted once, drawn or bundled
    assert drawn_edges(root) <= edges
    assert all(a.get("data-threads").split()[0] == "0" for a in singles)
    single_paths = sum(len(a.findall(f"{SVG}path")) for a in singles)
    total = int(find(root, "arrows-omitted")[0].get("data-paths"))
    assert single_paths + sum(int(b.get("data-count")) for b in bundles) == total
    assert "Explorer" in " ".join(t.text for t in find(root, "arrows-omitted"))


@pytest.mark.parametrize("name", ["map", "reverse", "count_greater", "transpose_tiled", "racy"])
def test_global_memory_is_drawn_once_and_threadgroup_memory_per_shown_threadgroup(name):
    run, inputs = traced(name)
    root = parse(draw(run, inputs=inputs))
    for buffer, info in run.report.buffers.items():
        size = math.prod(info["shape"])
        if info["space"] != "threadgroup":
            cells = find(root, "cell", buffer=buffer)
            assert sorted(int(c.get("data-element")) for c in cells) == list(range(size))
            assert {c.get("data-phase") for c in cells} == {None}
            continue
        for g in shown_groups(root):
            cells = [c for c in find(root, "cell", buffer=buffer, threadgroup=g)]
            phases = {c.get("data-phase") for c in cells}
            assert len(cells) == size * len(phases) > 0


@pytest.mark.parametrize("name", ["map", "count_greater", "transpose_tiled"])
def test_every_output_element_the_launch_wrote_is_shown_written(name):
    run, inputs = traced(name)
    root = parse(draw(run, inputs=inputs, max_threadgroups=1))
    assert len(find(root, "frame")) == 1
    written = {int(c.get("data-element")) for c in find(root, "cell", buffer="out")
               if "written" in classes(c)}
    size = math.prod(run.report.buffers["out"]["shape"])
    assert written == set(range(size)) - set(run.report.unwritten.get("out", []))
    # filled by the threadgroup that wrote it, drawn in detail or not
    writers = {int(c.get("data-writer-threadgroup")) for c in find(root, "cell", buffer="out")
               if "written" in classes(c)}
    assert writers == {int(g) for e in run.report.trace if e["buffer"] == "out"
                       and e["kind"] != "read" for g in e["threadgroup"]}
    assert len(writers) > 1


def test_two_dimensional_buffers_keep_their_rows_and_columns():
    run, inputs = traced("transpose_tiled")
    root = parse(draw(run, inputs=inputs, threadgroups=[4]))
    indices = {c.get("data-index") for c in find(root, "cell", buffer="a")}
    assert indices == {f"{r},{c}" for r in range(8) for c in range(8)}
    tile = find(root, "cell", buffer="tile", phase=0)  # TILE x (TILE + 1), padded
    assert {c.get("data-index") for c in tile} == {f"{r},{c}" for r in range(3) for c in range(4)}
    # a cell of row 1 is drawn one cell size below the same column of row 0
    rect = {c.get("data-index"): c.find(f"{SVG}rect") for c in find(root, "cell", buffer="a")}
    assert float(rect["1,2"].get("y")) > float(rect["0,2"].get("y"))
    assert rect["1,2"].get("x") == rect["0,2"].get("x")


@pytest.mark.parametrize("name, phases", [("reverse", [0, 1]), ("count_greater", [0, 1]),
                                          ("transpose_tiled", [0, 1])])
def test_threadgroup_memory_is_drawn_once_per_barrier_phase(name, phases):
    run, inputs = traced(name)
    root = parse(draw(run, inputs=inputs))
    shared = [b for b, info in run.report.buffers.items() if info["space"] == "threadgroup"]
    for g in shown_groups(root):
        for buffer in shared:
            drawn = {int(c.get("data-phase")) for c in find(root, "cell", buffer=buffer,
                                                              threadgroup=g)}
            assert sorted(drawn) == phases
        assert len(find(root, "barrier", threadgroup=g)) == len(phases) - 1


def test_racing_cells_are_outlined_and_named_by_the_finding():
    run, inputs = traced("racy")
    root = parse(draw(run, inputs=inputs))
    race = run.report.diagnostics[0]
    assert race.kind == "race"
    flagged = {(r.get("data-buffer"), int(r.get("data-element"))) for r in find(root, "race")
               if "diagnostic" in classes(r)}
    assert flagged == {(b, e) for b, _, e in race.cells} == {("tile", e) for e in range(1, 8)}
    assert find(root, "diagnostic-note", kind="race")
    assert any("race" in (t.text or "") for t in find(root, "diagnostic-label"))


def test_reads_past_the_end_appear_as_cells_outside_the_buffer():
    run, inputs = traced("out_of_bounds")
    root = parse(draw(run, inputs=inputs))
    ghosts = find(root, "ghost-cell", buffer="a")
    assert {int(g.get("data-element")) for g in ghosts} == {6, 7, 8}
    assert all("out-of-bounds" in classes(g) for g in ghosts)
    assert len(find(root, "cell", buffer="a")) == 6  # drawn once, whatever the frames


def test_score_table_shows_the_maximum_per_thread_and_atomics_only_when_used():
    run, inputs = traced("count_greater")
    scores = {s.get("data-count"): s.text for s in find(parse(draw(run)), "score")}
    best = run.report.max_per_thread()
    assert scores == {"global_reads": str(best["global_reads"]),
                      "global_writes": str(best["global_writes"]),
                      "threadgroup_reads": "8", "threadgroup_writes": "1", "barriers": "1"}
    histogram, _ = traced("count_positive")
    assert find(parse(draw(histogram)), "score", count="atomics")[0].text == "1"


def test_a_budget_marks_counts_over_it():
    run, _ = traced("count_greater")
    root = parse(draw(run, budget={"global_reads": 2, "threadgroup_reads": 2}))
    reads = find(root, "score", count="threadgroup_reads")[0]
    assert reads.text == "8 / 2" and reads.get("data-over") == "1"
    assert find(root, "score", count="global_reads")[0].get("data-over") is None


def test_large_launches_show_a_few_threadgroups_and_say_how_many_are_omitted():
    run, inputs = traced("transpose_tiled")
    root = parse(draw(run, inputs=inputs, max_threadgroups=4))
    assert [int(f.get("data-threadgroup")) for f in find(root, "frame")] == [0, 1, 2, 8]
    note = " ".join(t.text for t in find(root, "shown"))
    assert "0, 1, 2, 8 of 9 drawn in detail" in note
    assert "To see threadgroup k: draw(run, threadgroups=[k])" in note


def test_a_diagram_too_large_for_several_threadgroups_draws_one_and_says_how_to_see_others():
    from metalsim.viz.examples import TRANSPOSE_TILED

    kernel = metalsim.metal_kernel("mm", ["a", "b"], ["out"], TRANSPOSE_TILED,
                                   header="#define TILE 8\n")
    inputs = [mx.ones((48, 48)), mx.ones((48, 48))]
    run = metalsim.simulate(kernel, trace=[5, 6], inputs=inputs, output_shapes=[(48, 48)],
                            output_dtypes=[mx.float32], grid=(48, 48, 1), threadgroup=(8, 8, 1))
    root = parse(draw(run, inputs=inputs, max_threadgroups=1,
                      others="problem.show(threadgroup=k)"))
    assert [f.get("data-threadgroup") for f in find(root, "frame")] == ["5"]
    note = " ".join(t.text for t in find(root, "shown"))
    assert f"5 of {6 * 6} drawn in detail" in note and "problem.show(threadgroup=k)" in note
    assert len(find(parse(draw(run, inputs=inputs)), "frame")) == 1  # too many cells for two
    assert len(find(parse(draw(run, inputs=inputs, max_threadgroups=2)), "frame")) == 2
    with pytest.raises(ValueError, match="threadgroup 7 was not traced"):
        draw(run, threadgroups=[7])


def test_a_large_buffer_is_windowed_around_the_threadgroup_with_a_finding():
    source = "uint i = thread_position_in_grid.x;\nout[i] = a[i] + a[i + 1];"
    kernel = metalsim.metal_kernel("k", ["a"], ["out"], source)
    a = mx.arange(1023, dtype=mx.float32)
    run = metalsim.simulate(kernel, trace=True, inputs=[a], output_shapes=[(1024,)],
                            output_dtypes=[mx.float32], grid=(1024, 1, 1),
                            threadgroup=(64, 1, 1))
    root = parse(draw(run, inputs=[a]))
    # 16 groups of 64 threads: one drawn in detail, the one with the finding
    assert [f.get("data-threadgroup") for f in find(root, "frame")] == ["15"]
    # the input keeps the rows threadgroup 15 read (its reads past the end beside them), and
    # the label says which
    assert sorted(int(c.get("data-element")) for c in find(root, "cell", buffer="a")) == list(
        range(960, 1023))
    assert [int(c.get("data-element")) for c in find(root, "ghost-cell")] == [1023, 1024]
    labels = [t.text for t in find(root, "buffer-label")]
    assert "a (input, float[1023]) [960:1023] shown" in labels
    # the output shows the whole launch's writes: 16 of its 32 rows fit
    out = find(root, "cell", buffer="out")
    assert len(out) == 16 * 32 and all("written" in classes(c) for c in out)


def test_wrong_output_cells_are_marked_with_the_expected_value():
    run, inputs = traced("map")
    wrong = {"out": {2: 12.0, 5: 99.5}}
    root = parse(draw(run, inputs=inputs, wrong=wrong))
    marked = {(int(c.get("data-element")), c.get("data-expected"))
              for c in find(root, "cell", buffer="out") if "wrong" in classes(c)}
    assert marked == {(2, "12"), (5, "99.5")}
    cell = find(root, "cell", buffer="out", element=5)[0]
    assert "expected 99.5" in cell.find(f"{SVG}title").text
    assert [t.text for t in cell.iter(f"{SVG}text") if "expected" in classes(t)] == ["≠99.5"]
    assert not [c for c in find(root, "cell", buffer="a") if "wrong" in classes(c)]


def test_threadgroups_with_findings_are_shown_first():
    run, _ = traced("out_of_bounds")
    root = parse(draw(run, max_threadgroups=1))
    assert [f.get("data-threadgroup") for f in find(root, "frame")] == ["1"]


def test_cells_show_input_values_and_the_outputs_final_values():
    run, inputs = traced("map")
    root = parse(draw(run, inputs=inputs, threadgroups=[1]))

    def value(buffer, element):
        cell = find(root, "cell", buffer=buffer, element=element)[0]
        texts = [t.text for t in cell.iter(f"{SVG}text") if "value" in classes(t)]
        return texts[0] if texts else None

    assert value("a", 5) == "5" and value("out", 5) == "11"
    assert value("out", 0) == "1"  # written by threadgroup 0: shown, though not detailed
    cell = find(root, "cell", buffer="out", element=0)[0]
    assert cell.get("class") == "cell written" and cell.get("data-writer-threadgroup") == "0"


def test_threadgroup_memory_cells_show_the_values_they_held_in_each_phase():
    # Reverse's shared memory holds a[8:16] (a = arange) in threadgroup 1: written in phase
    # 0, read in phase 1.
    run, inputs = traced("reverse")
    root = parse(draw(run, inputs=inputs, threadgroups=[1]))
    for phase in (0, 1):
        cells = find(root, "cell", buffer="shared", threadgroup=1, phase=phase)
        shown = [[t.text for t in c.iter(f"{SVG}text") if "value" in classes(t)]
                 for c in sorted(cells, key=lambda c: int(c.get("data-element")))]
        assert shown == [[str(8 + i)] for i in range(8)]


def test_markers_name_the_threads_that_read_and_wrote_each_cell():
    run, inputs = traced("reverse")
    root = parse(draw(run, inputs=inputs, threadgroups=[0]))
    cell = find(root, "cell", buffer="shared", element=2, phase=1)[0]
    markers = [(m.get("data-role"), m.get("data-local")) for m in find(cell, "thread-marker")]
    assert sorted(markers) == [("reader", "5")]  # thread 5 reads shared[8 - 1 - 5]
    written = find(root, "cell", buffer="shared", element=2, phase=0)[0]
    assert [m.get("data-local") for m in find(written, "thread-marker")] == ["2"]


def test_a_selection_highlights_its_cells_and_fades_other_arrows():
    run, inputs = traced("reverse")
    root = parse(draw(run, inputs=inputs, threadgroups=[0],
                      selection=Selection(0, frozenset({3}), 1)))
    selected = {(r.get("data-buffer"), r.get("data-element"), r.get("data-phase"))
                for r in find(root, "selected") if r.tag == f"{SVG}rect"}
    assert selected == {("shared", "4", "1"), ("out", "3", None)}
    focused = [a for a in find(root, "arrow") if "selected" in classes(a)]
    assert {a.get("data-to") for a in focused} == {"out:3"}


def test_untraced_launches_get_a_summary_of_counts_and_structure():
    ex = EXAMPLES["transpose_256"]
    run = ex.simulate(trace=False)
    root = parse(draw(run, title=ex.title))
    assert not find(root, "cell") and not find(root, "arrow")
    assert len(find(root, "threadgroup-tile")) == 16 * 16
    assert find(root, "score", count="global_reads")[0].text == "2"
    assert {t.get("data-buffer") for t in find(root, "traffic")} == {"a", "b", "out"}
    assert find(root, "summary-note")


def test_the_same_run_draws_the_same_svg():
    run, inputs = traced("transpose_tiled")
    again, _ = traced("transpose_tiled")
    assert draw(run, inputs=inputs).svg == draw(again, inputs=inputs).svg


def test_a_threadgroup_that_does_not_exist_is_refused():
    run, _ = traced("map")
    with pytest.raises(ValueError, match="threadgroup 5 does not exist"):
        draw(run, threadgroups=[5])


def png_pixels(data: bytes) -> np.ndarray:
    """Decode an 8-bit, non-interlaced RGB(A) PNG (what resvg writes) into an array."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6)
        elif kind == b"IDAT":
            idat += body
        pos += length + 12
    channels = 4 if colour == 6 else 3
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(height, 1 + width * channels)
    out = np.zeros((height, width * channels), np.int32)
    prev = np.zeros(width * channels, np.int32)
    for y in range(height):
        kind, line = raw[y, 0], raw[y, 1:].astype(np.int32)
        if kind in (1, 3, 4):  # Sub, Average, Paeth depend on the pixel to the left
            row = np.zeros_like(line)
            for x in range(line.size):
                a = row[x - channels] if x >= channels else 0
                b, c = prev[x], prev[x - channels] if x >= channels else 0
                if kind == 1:
                    pred = a
                elif kind == 3:
                    pred = (a + b) // 2
                else:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                row[x] = (line[x] + pred) & 255
        else:  # None or Up
            row = (line + (prev if kind == 2 else 0)) & 255
        out[y], prev = row, row
    return out.reshape(height, width, channels)


@pytest.mark.parametrize("name", ["map", "transpose_tiled", "racy"])
def test_every_text_names_the_font_family_it_was_measured_in(name):
    # Without one a browser draws its default serif, and resvg draws nothing.
    run, inputs = traced(name)
    bare = []

    def walk(el, family):
        family = el.get("font-family") or family
        if el.tag == SVG + "text" and family is None:
            bare.append(el.text)
        for child in el:
            walk(child, family)

    walk(parse(draw(run, inputs=inputs)), None)
    assert bare == []


def test_a_diagram_renders_to_a_png_that_is_not_blank(tmp_path):
    run, inputs = traced("racy")
    path = draw(run, inputs=inputs).save(tmp_path / "racy.png", scale=0.6)
    pixels = png_pixels(path.read_bytes())
    assert pixels.shape[0] > 100 and pixels.shape[1] > 100
    rgb = pixels[..., :3].astype(float)
    assert rgb.var() > 100  # text, cells and arrows on white
    red = (rgb[..., 0] > 180) & (rgb[..., 1] < 90) & (rgb[..., 2] < 90)
    assert red.sum() > 50  # the race is outlined in red


def test_save_writes_svg_and_refuses_other_formats(tmp_path):
    run, _ = traced("map")
    diagram = draw(run)
    assert diagram.save(tmp_path / "map.svg").read_text() == diagram.svg
    assert not hasattr(diagram, "_repr_svg_")  # JupyterLab would show it as an <img>
    with pytest.raises(ValueError, match=r"\.svg or \.png"):
        diagram.save(tmp_path / "map.pdf")


def test_notebooks_show_the_svg_inline_in_html_so_tooltips_work():
    run, _ = traced("map")
    diagram = draw(run)
    html = diagram._repr_html_()
    assert html.startswith("<div") and html.endswith("</div>") and diagram.svg in html
    box = ET.fromstring(html)
    assert box[0].tag == f"{SVG}svg" and len(list(box[0].iter(f"{SVG}title"))) >= 8


def test_thousands_of_flows_are_bundled_and_a_selected_thread_keeps_its_own_arrows():
    source = """
    uint i = thread_position_in_grid.x;
    float acc = 0;
    for (uint k = 0; k <= i; ++k) acc += a[k];
    out[i] = acc;
    """
    kernel = metalsim.metal_kernel(name="prefix", input_names=["a"], output_names=["out"],
                                   source=source)
    run = metalsim.simulate(kernel, inputs=[mx.arange(64, dtype=mx.float32)],
                            output_shapes=[(64,)], output_dtypes=[mx.float32], grid=(64, 1, 1),
                            threadgroup=(64, 1, 1), trace=True)
    root = parse(draw(run))
    assert find(root, "arrows-omitted")[0].get("data-paths") == str(64 * 65 // 2)
    assert len(find(root, "arrow")) + len(find(root, "arrow-bundle")) <= 64
    one = parse(draw(run, selection=Selection(0, frozenset({9}))))
    assert {a.get("data-to") for a in find(one, "arrow")} == {"out:9"}
    assert len(find(one, "arrow")) == 10
    counts = sum(int(b.get("data-count")) for b in find(one, "arrow-bundle"))
    assert counts == 64 * 65 // 2 - 10


def test_the_plain_text_form_is_short_so_notebooks_hold_the_svg_once():
    run, _ = traced("transpose_tiled")
    diagram = draw(run)
    assert len(repr(diagram)) < 80 and "Diagram" in repr(diagram)
