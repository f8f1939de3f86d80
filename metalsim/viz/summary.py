"""The diagram of a launch traced without `trace=True`: counts, launch structure and traffic."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from metalsim.report import Report
from metalsim.viz import style
from metalsim.viz.header import PAD, draw_header, lines, threadgroup_count
from metalsim.viz.svg import MONO, Diagram, Svg
from metalsim.viz.text import width

WIDTH = 830.0
LIMIT = WIDTH - 2 * PAD


def draw_summary(report: Report, title: str | None, budget: Mapping[str, int] | None,
                 case: str | None = None) -> Diagram:
    """Counts and structure only: the launch was not traced."""
    svg = Svg()
    y = draw_header(svg, report, threadgroup_count(report), None, title, case, budget, LIMIT)
    for line in ("This launch was not traced, so there are no cells or arrows: counts and "
                 "structure only.",
                 "simulate(..., trace=True) on a launch of at most 16,384 threads draws every "
                 "access."):
        y = lines(svg, PAD, y, line, 11, LIMIT, fill=style.MUTED, class_="summary-note")
    y += 10
    y = _draw_threadgroup_map(svg, report, y)
    y = _draw_traffic(svg, report, y + 10)
    return Diagram(svg.document(WIDTH, y + PAD), WIDTH, y + PAD)
def _draw_threadgroup_map(svg: Svg, report: Report, y: float, side: float = 300.0) -> float:
    """The threadgroups of the grid (x across, y down; z folded into rows), shaded by the
    global reads of their busiest thread; at most 64×64 tiles, each then a block of groups."""
    gx, gy, gz = report.grid
    tx, ty, tz = report.threadgroup
    nx, ny, nz = (math.ceil(g / t) if g else 0 for g, t in zip(report.grid, report.threadgroup))
    y = lines(svg, PAD, y, f"threadgroups: {nx} × {ny} × {nz}, shaded by max global reads "
              "per thread", 11, LIMIT, fill=style.INK) + 4
    if nx * ny * nz == 0:
        return y
    reads = report.counts["global_reads"]
    padded = np.zeros((nz * tz, ny * ty, nx * tx), reads.dtype)
    padded[:gz, :gy, :gx] = reads
    per_group = padded.reshape(nz, tz, ny, ty, nx, tx).max(axis=(1, 3, 5))
    per_group = per_group.reshape(nz * ny, nx)
    rows, cols = per_group.shape
    by, bx = math.ceil(rows / 64), math.ceil(cols / 64)
    blocks = np.zeros((math.ceil(rows / by) * by, math.ceil(cols / bx) * bx), per_group.dtype)
    blocks[:rows, :cols] = per_group
    blocks = blocks.reshape(blocks.shape[0] // by, by, blocks.shape[1] // bx, bx).max(axis=(1, 3))
    top = max(1, int(blocks.max()))
    tile = max(3.0, min(24.0, side / max(blocks.shape)))
    svg.open("g", class_="threadgroup-map", data_blocks=f"{by}x{bx}")
    for r in range(blocks.shape[0]):
        for c in range(blocks.shape[1]):
            shade = 0.93 - 0.35 * int(blocks[r, c]) / top
            fill = f"#{round(shade * 255):02x}{round(shade * 255):02x}{round(0.98 * 255):02x}"
            svg.el("rect", x=PAD + c * tile, y=y + r * tile, width=tile - 0.5,
                   height=tile - 0.5, fill=fill, class_="threadgroup-tile",
                   data_row=r, data_col=c, data_global_reads=int(blocks[r, c]))
    svg.close("g")
    note = "" if by == bx == 1 else f" (each tile: {by} × {bx} threadgroups)"
    svg.text(PAD, y + blocks.shape[0] * tile + 14, f"max {top} global reads per thread{note}",
             10, fill=style.MUTED)
    svg.reach(PAD + width(f"max {top} global reads per thread{note}", 10))
    return y + blocks.shape[0] * tile + 22


def _draw_traffic(svg: Svg, report: Report, y: float) -> float:
    y = lines(svg, PAD, y, "buffers and traffic (bytes moved vs. touching each once)", 11,
              LIMIT, fill=style.INK) + 2
    for t in report.traffic:
        b = report.buffers.get(t.name, {})
        dims = "×".join(map(str, b.get("shape", ()))) or "scalar"
        ratio = t.bytes_moved / t.ideal_bytes if t.ideal_bytes else float("nan")
        svg.text(PAD, y + 12, f"{t.name} ({t.role}, {b.get('type', '?')}[{dims}]): "
                 f"{t.bytes_moved:,} bytes, {ratio:.2f}× ideal", 11, font_family=MONO,
                 class_="traffic", data_buffer=t.name, fill=style.INK)
        y += 16
    for name, b in report.buffers.items():
        if b["space"] == "threadgroup":
            dims = "×".join(map(str, b["shape"]))
            svg.text(PAD, y + 12, f"{name} (threadgroup memory, {b['type']}[{dims}] per "
                     "threadgroup)", 11, font_family=MONO, fill=style.INK)
            y += 16
    return y
