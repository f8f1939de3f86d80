"""Every `problem.show()` diagram of the solved notebooks (each catalog puzzle with its reference
kernel, and Metal-Puzzles' own solved cells) and of wrong kernels, laid out by Chromium: what a
learner sees at 100% zoom, measured by the browser's own geometry (getBoundingClientRect).

One browser, one page holding every diagram. Per diagram: no two texts overlap, none lies
outside the picture, none is under 10 px, the picture is at most 1,100 px wide, at most 64
arrows are drawn, and for correct kernels every output element the launch wrote (read off a
separate whole-launch trace) is drawn as written.
"""

from __future__ import annotations

import contextlib
import html
import io

import mlx.core as mx
import numpy as np
import pytest
from metal_puzzles_cells import CELLS, PRELUDE
from test_jupyter import CHROMIUM, CHROMIUM_FLAGS, needs_chromium

import metalsim
from puzzles.catalog import all_puzzles
from puzzles.checking import call_kwargs
from utils import MetalKernel, MetalProblem

MAX_WIDTH = 1100
MAX_ARROWS = 64
MIN_FONT = 10.0
OVERLAP_PX = 0.5   # rectangles sharing less than this in either direction do not overlap

POOLING_WITHOUT_BARRIER = """
threadgroup float shared[8];
uint i = thread_position_in_grid.x;
uint local_i = thread_position_in_threadgroup.x;
shared[local_i] = a[i];
float total = shared[local_i];
if (local_i >= 1) total += shared[local_i - 1];
if (local_i >= 2) total += shared[local_i - 2];
out[i] = total;
"""
UNGUARDED_MAP = "uint i = thread_position_in_grid.x;\nout[i] = a[i] + 10;\n"
DIVERGENT_BARRIER = """
threadgroup float shared[8];
uint i = thread_position_in_threadgroup.x;
shared[i] = a[i];
if (i < 4) threadgroup_barrier(mem_flags::mem_threadgroup);
out[i] = shared[(i + 1) % 8];
"""
UNINITIALISED_READ = """
threadgroup float shared[8];
uint i = thread_position_in_threadgroup.x;
if (i < 4) shared[i] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
out[i] = shared[7 - i];
"""
# A tiled matmul that forgot the barrier after using a tile: the next tile's loads race with
# the reads of the previous one.
TILED_MATMUL_ONE_BARRIER = """
threadgroup float a_shared[3][3];
threadgroup float b_shared[3][3];
uint row = thread_position_in_grid.y, col = thread_position_in_grid.x;
uint ly = thread_position_in_threadgroup.y, lx = thread_position_in_threadgroup.x;
uint n = a_shape[0];
float acc = 0;
for (uint k0 = 0; k0 < n; k0 += 3) {
    a_shared[ly][lx] = row < n && k0 + lx < n ? a[row * n + k0 + lx] : 0.0f;
    b_shared[ly][lx] = k0 + ly < n && col < n ? b[(k0 + ly) * n + col] : 0.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint k = 0; k < 3; ++k) acc += a_shared[ly][k] * b_shared[k][lx];
}
if (row < n && col < n) out[row * n + col] = acc;
"""


def wrong_problems() -> dict[str, MetalProblem]:
    def problem(title, source, inputs, shape, grid, group, spec):
        kernel = MetalKernel("k", [f"{n}" for n in "ab"[:len(inputs)]], ["out"], source=source)
        return MetalProblem(title, lambda *_: kernel, [mx.array(x) for x in inputs], shape,
                            grid, group, spec=spec)

    a8 = np.arange(8, dtype=np.float32)
    m = np.arange(64, dtype=np.float32).reshape(8, 8) % 5
    return {
        "race": problem("Pooling, no barrier", POOLING_WITHOUT_BARRIER, [a8], (8,), (8, 1, 1),
                        (8, 1, 1), lambda a: a),
        "out of bounds": problem("Map, no guard", UNGUARDED_MAP, [a8[:6]], (8,), (8, 1, 1),
                                 (8, 1, 1), lambda a: a),
        "divergent barrier": problem("Divergent barrier", DIVERGENT_BARRIER, [a8], (8,),
                                     (8, 1, 1), (8, 1, 1), lambda a: a),
        "uninitialised read": problem("Uninitialised read", UNINITIALISED_READ, [a8], (8,),
                                      (8, 1, 1), (8, 1, 1), lambda a: a),
        "tiled matmul, one barrier": problem("Tiled matmul, one barrier",
                                             TILED_MATMUL_ONE_BARRIER, [m, m], (8, 8), (9, 9, 1),
                                             (3, 3, 1), lambda a, b: a @ b),
    }


def solved_problems() -> dict[str, MetalProblem]:
    """Each catalog puzzle with its reference kernel (the solved course notebooks), and each
    of Metal-Puzzles' solved cells."""
    out = {}
    for p in all_puzzles():
        kernel = MetalKernel(p.kernel, p.input_names, p.output_names, header=p.header,
                             source=p.solution(), atomic_outputs=p.atomic_outputs)
        v = p.visible
        out[f"puzzle {p.number} {p.slug}"] = MetalProblem(
            p.title, lambda *_, k=kernel: k, [mx.array(x) for x in v.inputs], v.output_shape,
            v.grid, v.threadgroup)
    namespace: dict = {}
    exec(PRELUDE, namespace)
    for title, code in CELLS.items():
        exec(code, namespace)
        out[f"Metal-Puzzles {title}"] = namespace["problem"]
    return out


def written_by_launch(problem: MetalProblem) -> dict[str, set[int]]:
    """Per output, the elements some thread wrote: from a whole-launch trace (the diagram
    reads the report's unwritten elements and a trace of the detailed threadgroups only)."""
    label, case = problem._find_case(None)
    kernel = metalsim.metal_kernel(**problem._kernel_for(case).factory_kwargs())
    call = call_kwargs(case, [mx.array(x) for x in case.inputs], problem._init_value())
    report = metalsim.simulate(kernel, trace=True, **call).report
    out: dict[str, set[int]] = {}
    for event in report.trace:
        if (event["kind"] != "read" and report.buffers.get(event["buffer"], {}).get("role")
                == "output" and not event.get("outside", False)):
            out.setdefault(event["buffer"], set()).update(event["element"].tolist())
    return out


MEASURE = """() => Array.from(document.querySelectorAll('div.diagram')).map(div => {
    const svg = div.querySelector('svg.metalsim-diagram');
    const box = svg.getBoundingClientRect();
    const texts = Array.from(svg.querySelectorAll('text')).map(t => {
        const r = t.getBoundingClientRect();
        return [r.left, r.top, r.right, r.bottom, parseFloat(getComputedStyle(t).fontSize),
                t.textContent];
    });
    const cells = Array.from(svg.querySelectorAll('g.cell:not([data-phase])')).map(c => [
        c.dataset.buffer, Number(c.dataset.element), c.classList.contains('written')]);
    const labels = Array.from(svg.querySelectorAll('text.buffer-label')).map(t => t.textContent);
    return {name: div.dataset.name, box: [box.left, box.top, box.right, box.bottom],
            texts: texts, cells: cells, labels: labels,
            arrows: svg.querySelectorAll('g.arrow path, g.arrow-bundle path').length};
})"""


def overlapping(texts: list) -> list[tuple[str, str]]:
    """Pairs of texts whose boxes overlap (by more than OVERLAP_PX both ways)."""
    found = []
    boxes = sorted((t for t in texts if t[2] > t[0]), key=lambda t: t[0])
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            if b[0] >= a[2] - OVERLAP_PX:
                break
            if min(a[3], b[3]) - max(a[1], b[1]) > OVERLAP_PX:
                found.append((a[5], b[5]))
    return found


@pytest.fixture(scope="module")
def measured() -> tuple[dict, dict]:
    needs_chromium()
    from playwright.sync_api import sync_playwright

    problems = {**{n: (p, True) for n, p in solved_problems().items()},
                **{n: (p, False) for n, p in wrong_problems().items()}}
    diagrams, written = {}, {}
    for name, (problem, correct) in problems.items():
        with contextlib.redirect_stdout(io.StringIO()):
            diagrams[name] = problem.show()
        if correct:
            written[name] = written_by_launch(problem)
    page_html = "".join(f'<div class="diagram" data-name="{html.escape(n)}">{d._repr_html_()}'
                        "</div>" for n, d in diagrams.items())
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                    args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_content(f"<html><body style='margin:0'>{page_html}</body></html>")
            results = {r["name"]: r for r in page.evaluate(MEASURE)}
        finally:
            browser.close()
    return results, written


def test_every_diagram_is_measured(measured):
    results, written = measured
    assert len(results) == len(all_puzzles()) + len(CELLS) + 5
    assert all(r["texts"] for r in results.values())


def test_no_two_texts_overlap(measured):
    results, _ = measured
    clashes = {name: overlapping(r["texts"])[:3] for name, r in results.items()}
    assert {n: c for n, c in clashes.items() if c} == {}


def test_no_text_lies_outside_the_picture(measured):
    results, _ = measured
    outside = {}
    for name, r in results.items():
        left, top, right, bottom = r["box"]
        out = [t[5] for t in r["texts"] if t[0] < left - OVERLAP_PX or t[2] > right + OVERLAP_PX
               or t[1] < top - OVERLAP_PX or t[3] > bottom + OVERLAP_PX]
        if out:
            outside[name] = out[:3]
    assert outside == {}


def test_no_text_is_under_10_px(measured):
    results, _ = measured
    small = {n: sorted({t[4] for t in r["texts"] if t[4] < MIN_FONT})
             for n, r in results.items()}
    assert {n: s for n, s in small.items() if s} == {}


def test_every_picture_is_at_most_1100_px_wide(measured):
    results, _ = measured
    widths = {n: r["box"][2] - r["box"][0] for n, r in results.items()}
    assert {n: w for n, w in widths.items() if w > MAX_WIDTH} == {}


def test_at_most_64_arrows_are_drawn(measured):
    results, _ = measured
    many = {n: r["arrows"] for n, r in results.items() if r["arrows"] > MAX_ARROWS}
    assert many == {}
    assert results["puzzle 15 block_reduce"]["arrows"] > 0


def test_every_output_element_written_is_shown_written(measured):
    results, written = measured
    missing = {}
    for name, truth in written.items():
        r = results[name]
        windowed = any(label.endswith(" shown") for label in r["labels"])
        for buffer, elements in truth.items():
            drawn = {e: w for b, e, w in r["cells"] if b == buffer}
            shown_written = {e for e, w in drawn.items() if w}
            expected = elements if not windowed else elements & drawn.keys()
            if shown_written != expected:
                missing[(name, buffer)] = sorted(expected ^ shown_written)[:5]
    assert missing == {}
    assert sum(len(e) for t in written.values() for e in t.values()) > 500

