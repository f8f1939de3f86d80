"""Arrows that summarise: which provenance edges are drawn one by one and which are bundled.

A diagram draws at most `MAX_ARROWS` curves. When the shown threadgroups' edges need more, the
focus threads' edges (the selection, or one thread the picture names) are drawn one by one and
the others are bundled: first per (source row, target row) of a pair of drawn buffers (a row of
a tile into a row), then, if that is still too many, per pair of buffers; a bundle is one thick
curve whose width grows with the number of values it carries, and whose tooltip says how many.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from metalsim.viz import style
from metalsim.viz.model import Edge
from metalsim.viz.svg import Svg, num

MAX_ARROWS = 64
FOCUS_ARROWS = 32      # of which at most this many for the focus threads' own edges
BUNDLE_COLOUR = "#5b6f95"   # a bundle's head
BUNDLE_FILL = "#cdd5e5"     # its body: opaque (blending costs PNG export), light under cells

Box = tuple[float, float, float, float, float]   # x, y, width, height, bottom (below labels)
GridKey = tuple[str, int | None, int | None]      # buffer, phase, threadgroup (None: global)


@dataclass
class Bundle:
    """Edges of one threadgroup from one drawn copy to another, summarised as one curve."""

    group: int
    source: GridKey
    target: GridKey
    source_row: int | None        # None: the whole buffer
    target_row: int | None
    count: int = 0
    threads: set = field(default_factory=set)
    sources: set = field(default_factory=set)
    targets: set = field(default_factory=set)


@dataclass
class ArrowPlan:
    singles: list[Edge]
    bundles: list[Bundle]
    flows: int            # paths the edges would need one by one
    left_out: int = 0     # bundles not drawn (past MAX_ARROWS)
    only_focus: bool = False   # only the focus threads' edges were built (far too many flows)

    @property
    def summarised(self) -> bool:
        return bool(self.bundles) or self.left_out > 0


def paths(edge: Edge) -> int:
    return len(edge.source_phases)


def plan(edges: list[Edge], focus: Callable[[Edge], bool],
         source_key: Callable[[int, str, int | None], GridKey],
         target_key: Callable[[Edge], GridKey], row_of: Callable[[GridKey, int], int]
         ) -> ArrowPlan:
    """Which of `edges` to draw one by one, and the bundles of the rest. `focus(edge)` says
    which edges belong to the focus threads; the keys name the drawn copies an edge runs
    between (`source_key(threadgroup, buffer, phase)`), and `row_of(key, element)` the drawn
    row of an element."""
    flows = sum(paths(e) for e in edges)
    if flows <= MAX_ARROWS:
        return ArrowPlan(list(edges), [], flows)
    singles, rest, used = [], [], 0
    for edge in edges:
        if focus(edge) and used + paths(edge) <= FOCUS_ARROWS:
            singles.append(edge)
            used += paths(edge)
        else:
            rest.append(edge)
    room = MAX_ARROWS - used
    bundles: dict[tuple, Bundle] = {}
    for edge in rest:
        g = edge.group
        target = target_key(edge)
        t_row = row_of(target, edge.target[1])
        for phase in sorted(edge.source_phases, key=lambda p: -1 if p is None else p):
            source = source_key(g, edge.source[0], phase)
            key = (g, source, target, row_of(source, edge.source[1]), t_row)
            bundle = bundles.get(key)
            if bundle is None:
                bundle = bundles[key] = Bundle(g, source, target, key[3], t_row)
            bundle.count += 1
            bundle.threads |= edge.threads
            bundle.sources.add(edge.source[1])
            bundle.targets.add(edge.target[1])
    kept = list(bundles.values())
    if len(kept) > room:  # too many rows: one bundle per pair of drawn copies
        kept = _merged(kept)
    return ArrowPlan(singles, kept[:room], flows, max(0, len(kept) - room))


def _merged(bundles: list[Bundle]) -> list[Bundle]:
    """Row bundles merged per (threadgroup, source copy, target copy)."""
    out: dict[tuple, Bundle] = {}
    for b in bundles:
        key = (b.group, b.source, b.target)
        m = out.get(key)
        if m is None:
            m = out[key] = Bundle(b.group, b.source, b.target, None, None)
        m.count += b.count
        m.threads |= b.threads
        m.sources |= b.sources
        m.targets |= b.targets
    return list(out.values())


def render_single(svg: Svg, edge: Edge, boxes: list[tuple[int | None, Box]],
                  target: Box, selected: Callable[[int | None], bool] | None,
                  busy: bool) -> None:
    """One edge: a curve from each drawn source copy to the target cell, coloured by thread."""
    tb, te, tp = edge.target
    threads = sorted(edge.threads)
    colour = style.thread_colour(threads[0])
    phases = [p for p, _ in boxes]
    chosen = selected is not None and any(selected(p) for p in phases)
    svg.open("g", class_="arrow" + (" selected" if chosen else ""),
             data_from=f"{edge.source[0]}:{edge.source[1]}",
             data_from_phases=" ".join("-" if p is None else str(p) for p in phases),
             data_to=f"{tb}:{te}", data_to_phase=tp, data_threadgroup=edge.group,
             data_threads=" ".join(map(str, threads)))
    for phase, box in boxes:
        if selected is None:
            opacity, stroke = 1.0, (1.0 if busy else 1.2)
        else:
            opacity, stroke = (1.0, 1.4) if selected(phase) else (0.15, 0.9)
        path, head = curve(box, target)
        # per-element opacity (a group opacity costs renderers an offscreen layer each), and
        # none where not needed: blending costs PNG export too
        alpha = ("", "") if opacity == 1.0 else (f' stroke-opacity="{opacity}"',
                                                 f' fill-opacity="{opacity}"')
        svg.parts.append(
            f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="{stroke}"'
            f'{alpha[0]}/><polygon points="{head}" fill="{colour}"{alpha[1]}/>')
    svg.close("g")


def render_bundle(svg: Svg, bundle: Bundle, source: Box, target: Box, tooltip: str) -> None:
    """A bundle: one translucent curve, wider the more values it carries."""
    stroke = min(9.0, 1.5 + 1.5 * math.log2(bundle.count))
    svg.open("g", class_="arrow-bundle", data_from=bundle.source[0], data_to=bundle.target[0],
             data_from_phase=bundle.source[1], data_to_phase=bundle.target[1],
             data_threadgroup=bundle.group, data_count=bundle.count)
    path, head = curve(source, target, head=4 + stroke)
    svg.parts.append(
        f'<path d="{path}" fill="none" stroke="{BUNDLE_FILL}" stroke-width="{num(stroke)}" '
        f'stroke-linecap="round"/><polygon points="{head}" fill="{BUNDLE_COLOUR}"/>')
    svg.el("title", tooltip)
    svg.close("g")


def curve(source: Box, target: Box, head: float = 5.0) -> tuple[str, str]:
    """A cubic from a source box to a target box, and its arrowhead: rightwards from the right
    edge to the left edge when the target is well to the right, else downwards from the bottom
    to the top (upwards when the target is above), or an arch between boxes of one row."""
    sx, sy, sw, sh, s_bottom = source
    tx, ty, tw, th, t_bottom = target
    if tx > sx + sw + 2 * min(th, 32) and abs(ty - sy) >= th / 2:
        start, end = (sx + sw, sy + sh / 2), (tx, ty + th / 2)
        d = (end[0] - start[0]) * 0.45
        return _path(start, (start[0] + d, start[1]), (end[0] - d, end[1]), end, head)
    scx, tcx = sx + sw / 2, tx + tw / 2
    if abs(ty - sy) < th / 2:
        lift = min(14 + abs(tcx - scx) * 0.12, 36.0)  # stays within the label lanes above
        return _path((scx, sy), (scx, sy - lift), (tcx, ty - lift), (tcx, ty), head)
    if ty > sy:
        start, end = (scx, s_bottom), (tcx, ty)
        d = (end[1] - start[1]) * 0.45
        return _path(start, (scx, start[1] + d), (tcx, end[1] - d), end, head)
    start, end = (scx, sy), (tcx, t_bottom)
    d = (start[1] - end[1]) * 0.45
    return _path(start, (scx, start[1] - d), (tcx, end[1] + d), end, head)


def _path(start: tuple[float, float], c1: tuple[float, float], c2: tuple[float, float],
          end: tuple[float, float], head: float) -> tuple[str, str]:
    path = (f"M{num(start[0])},{num(start[1])} C{num(c1[0])},{num(c1[1])} "
            f"{num(c2[0])},{num(c2[1])} {num(end[0])},{num(end[1])}")
    dx, dy = end[0] - c2[0], end[1] - c2[1]
    length = math.hypot(dx, dy) or 1.0
    return path, arrowhead(end[0], end[1], dx / length, dy / length, head)


def arrowhead(x: float, y: float, ux: float, uy: float, size: float) -> str:
    bx, by = x - ux * size, y - uy * size
    px, py = -uy * size * 0.5, ux * size * 0.5
    return " ".join(f"{num(a)},{num(b)}" for a, b in
                    [(x, y), (bx + px, by + py), (bx - px, by - py)])
