"""`draw(run)`: the diagram of a traced launch, drawn only from what the simulator recorded.

Layout, top to bottom: the title, case and launch, the score table (maximum per thread), the
findings, a legend, then the launch. Global (device and constant) memory is drawn once per
launch: every element the launch wrote is shown written, filled with the colour of the
threadgroup that wrote it (of the thread, in a launch of one threadgroup). A few threadgroups
are drawn in detail, each in a frame: its threads (one marker each: colour per thread, shape
per SIMD-group) and its threadgroup memory, once per barrier phase in which it was touched.
Cells the detailed threads read carry their markers; cells they wrote carry the writer's
outlined marker; arrows run from the cells whose values flowed into a written cell to that
cell, at most 64 of them (see `metalsim.viz.arrows`). Time runs rightwards (inputs, frames,
outputs side by side) when that fits the width, else downwards. Cells a finding is about are
outlined in red and named by its kind; accesses past the end of a buffer appear as dashed
cells beside it. The picture is at most `MAX_WIDTH` wide: beyond it, fewer cells are drawn
(the label says which), never smaller text; no text is under 10 px.

Semantic attributes let programs read a diagram back (tests parse it with xml.etree):
`g.cell[data-buffer, data-element, data-index, data-threadgroup (threadgroup memory),
data-phase, data-writer-threadgroup (global memory)]`, `g.arrow[data-from, data-from-phases,
data-to, data-to-phase, data-threadgroup, data-threads]`, `g.arrow-bundle[data-count]`,
`rect.diagnostic.<kind>`, `g.ghost-cell`, `g.frame[data-threadgroup]`, `text.score[data-count]`.
A launch traced without `trace=True` gets a summary (`metalsim.viz.summary`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from metalsim.report import Report
from metalsim.viz import arrows, style
from metalsim.viz.cells import CellUse, Key
from metalsim.viz.grid import INDEX_LANE, INDEX_SIZE, Grid, value_chars
from metalsim.viz.header import PAD, draw_header, draw_legend, lines, shown_note
from metalsim.viz.model import Columns, Edge, TraceView, logical_index, simd_group
from metalsim.viz.summary import draw_summary
from metalsim.viz.svg import MONO, Diagram, Svg, num
from metalsim.viz.text import MIN_FONT, compact, full_value, width

MAX_WIDTH = 1100.0     # a notebook's output column
CELL_SIZES = (32.0, 28.0, 24.0, 20.0)   # the largest that fits is used; below, fewer cells
GAP = 24.0
ROW_GAP = 36.0
COLUMN_GAP = 70.0
FRAME_PAD = 12.0
MAX_ROWS = 16          # rows of one buffer drawn at most (a window around the touched ones)
DEFAULT_THREADGROUPS = 4
# Threadgroup-memory cells plus threads of the detailed frames, above which one is drawn
MAX_DRAWN_CELLS = 160
FRAME_CELLS = 600      # threadgroup-memory phases past this many cells in a frame are not drawn
MAX_BUNDLED_SOURCES = 20_000   # past this many written values' sources, no bundles are built
HEADING = 13.0
STRIP_LABEL = "threads"


@dataclass(frozen=True)
class Selection:
    """What the explorer highlights: threads (local indices, None: all) of one threadgroup in
    one barrier phase (None: every phase)."""

    threadgroup: int
    threads: frozenset[int] | None = None
    phase: int | None = None

    def covered(self, c: Columns) -> np.ndarray:
        """Which entries of `c` (accesses) are the selection's: its threads' in its phase."""
        mask = c.threadgroup == self.threadgroup
        if self.threads is not None:
            mask &= np.isin(c.local, np.fromiter(self.threads, np.int64, len(self.threads)))
        if self.phase is not None:
            mask &= c.phase == self.phase
        return mask


def draw(run: object, *, inputs: Sequence | Mapping | None = None,
         max_threadgroups: int | None = None,
         threadgroups: Sequence[int] | None = None, title: str | None = None,
         budget: Mapping[str, int] | None = None, selection: Selection | None = None,
         wrong: Mapping[str, Mapping[int, object]] | None = None, others: str | None = None,
         case: str | None = None, one_thread: str | None = None,
         max_width: float = MAX_WIDTH) -> Diagram:
    """The diagram of `run` (a `metalsim.simulate(..., trace=True)` result, or its Report).

    `inputs` (the call's inputs, a list in order or a dict by name) labels input cells with
    values; output cells show the run's outputs. At most `max_threadgroups` threadgroups are
    drawn in detail (by default 4, or 1 when their threadgroup memory would exceed
    `MAX_DRAWN_CELLS` cells): those with findings first, then the first and the last, then in
    order; or exactly `threadgroups` (linear ids). A run traced for some threadgroups only
    (`trace=[...]`) details those. `budget` (max per thread, by count name) marks the score
    table. `wrong` marks output cells that differ from the expected output: buffer -> {flat
    element: expected value}. `others` says how to see the threadgroups left out (default:
    the `draw(run, threadgroups=[k])` call), `one_thread` how to see one thread's every flow
    (default: the explorer); `case` names the case drawn (a hidden case is labelled).
    """
    report: Report = getattr(run, "report", run)
    if report.trace is None:
        return draw_summary(report, title, budget, case)
    view = TraceView(report)
    traced = report.traced_threadgroups
    groups = (sorted(set(threadgroups)) if threadgroups is not None
              else choose_threadgroups(view, max_threadgroups))
    for g in groups:
        if not 0 <= g < view.threadgroup_count:
            raise ValueError(f"threadgroup {g} does not exist: the launch has "
                             f"{view.threadgroup_count} threadgroups")
        if traced is not None and g not in traced:
            raise ValueError(f"threadgroup {g} was not traced: this run traced threadgroup(s) "
                             f"{', '.join(map(str, traced))} (simulate(..., trace=[{g}]) "
                             "traces it)")
    limit = max_width - 2 * PAD
    values = _values(report, inputs, getattr(run, "outputs", None))
    scene = _Scene(view, groups, values, selection, wrong or {}, limit)
    svg = Svg()
    note = shown_note(groups, view.threadgroup_count, others)
    y = draw_header(svg, report, view.threadgroup_count, note, title, case, budget, limit)
    y = draw_legend(svg, y, limit, by_threadgroup=view.threadgroup_count > 1,
                    untraced=scene.untraced_writers,
                    simd=any(math.prod(view.tg_size(g)) > 32 for g in groups),
                    phases=any(f.grids for f in scene.frames),
                    bundles=bool(scene.arrow_plan.bundles))
    bottom = scene.render(svg, PAD, y + 4)
    bottom = scene.render_notes(svg, PAD, bottom + 8, one_thread)
    right = min(max_width, max(scene.right, svg.right) + PAD)
    return Diagram(svg.document(right, bottom + PAD), right, bottom + PAD)


def tg_cells(view: TraceView, g: int) -> int:
    """How many marks threadgroup `g`'s frame draws: its threads, and its threadgroup-memory
    cells once per phase."""
    return math.prod(view.tg_size(g)) + sum(
        math.prod(b["shape"]) * len(view.phases(g, name))
        for name, b in view.buffers.items() if b["space"] == "threadgroup")


def choose_threadgroups(view: TraceView, limit: int | None = None) -> list[int]:
    """Threadgroups worth drawing in detail: those findings name, then the first, the last
    (often a partial edge threadgroup), then in order; only traced ones. At most `limit`; by
    default 4, or just the first when their threads and threadgroup memory would draw more
    than `MAX_DRAWN_CELLS` marks."""
    ranked = _ranked_threadgroups(view)
    traced = view.report.traced_threadgroups
    if traced is not None:
        ranked = sorted(traced, key=ranked.index)
    chosen = ranked[:max(1, limit or DEFAULT_THREADGROUPS)]
    if (limit is None and len(chosen) > 1
            and sum(tg_cells(view, g) for g in chosen) > MAX_DRAWN_CELLS):
        chosen = chosen[:1]
    return sorted(chosen)


def threadgroups_to_trace(run: object, limit: int | None = None) -> list[int]:
    """The threadgroups `draw(..., max_threadgroups=limit)` would detail, read off an untraced
    run: trace only these (`simulate(..., trace=threadgroups_to_trace(run))`) to draw the
    launch cheaply. By default as `draw`: 4, or 1 when their threads and threadgroup memory
    would be too many marks (memory estimated drawn once per barrier passed, plus one)."""
    report = getattr(run, "report", run)
    view = TraceView(report)
    chosen = _ranked_threadgroups(view)[:max(1, limit or DEFAULT_THREADGROUPS)]
    if limit is None and len(chosen) > 1:
        copies = int(report.counts["barriers"].max(initial=0)) + 1
        cells = math.prod(report.threadgroup) + sum(
            math.prod(b["shape"]) * copies for b in report.buffers.values()
            if b["space"] == "threadgroup")
        if cells * len(chosen) > MAX_DRAWN_CELLS:
            chosen = chosen[:1]
    return sorted(chosen)


def _ranked_threadgroups(view: TraceView) -> list[int]:
    """Every threadgroup, most worth showing first (see `choose_threadgroups`)."""
    wanted: list[int] = []
    for d in view.report.diagnostics:
        for x, y, z in d.threads:
            gx, gy, _ = view.grid
            wanted.append(view.threadgroup_of(z * gx * gy + y * gx + x))
        wanted += [owner for _, owner, _ in d.cells if owner >= 0]
    wanted += [0, view.threadgroup_count - 1, *range(view.threadgroup_count)]
    return list(dict.fromkeys(g for g in wanted if 0 <= g < view.threadgroup_count))


# --- values ---------------------------------------------------------------------------------

def _to_numpy(x: object) -> np.ndarray:
    if type(x).__module__.startswith("mlx"):
        import mlx.core as mx

        if x.dtype == mx.bfloat16:  # no buffer protocol for bfloat16
            x = x.astype(mx.float32)
    return np.asarray(x)


def _values(report: Report, inputs, outputs) -> dict[str, np.ndarray]:
    """Flat values per buffer name: the given inputs (0-d ones are not buffers) and outputs."""
    values: dict[str, np.ndarray] = {}
    names = [n for n, b in report.buffers.items() if b["role"] == "input"]
    if isinstance(inputs, Mapping):
        given = {n: _to_numpy(v) for n, v in inputs.items()}
    elif inputs is not None:
        arrays = [a for a in (_to_numpy(v) for v in inputs) if a.ndim > 0]
        if len(arrays) != len(names):
            raise ValueError(f"inputs: expected {len(names)} arrays (for {', '.join(names)}), "
                             f"got {len(arrays)}")
        given = dict(zip(names, arrays))
    else:
        given = {}
    out_names = [n for n, b in report.buffers.items() if b["role"] == "output"]
    given.update(zip(out_names, (_to_numpy(o) for o in outputs or ())))
    for name, arr in given.items():
        if name in report.buffers and arr.size == math.prod(report.buffers[name]["shape"]):
            values[name] = arr.reshape(-1)
    return values


# --- the launch -------------------------------------------------------------------------------


class _Scene:
    """The drawn launch: global memory once, the detailed threadgroups' frames, the arrows."""

    def __init__(self, view: TraceView, groups: list[int], values: dict[str, np.ndarray],
                 selection: Selection | None, wrong: Mapping[str, Mapping[int, object]],
                 limit: float) -> None:
        self.view, self.groups, self.values, self.wrong = view, groups, values, wrong
        self.selection = selection
        self.limit = limit
        self.single_group = view.threadgroup_count == 1
        self._collect()
        # The elements each copy's detailed threads touched (what `touched` windows on,
        # asked once per grid and cell size).
        self.touched_in = self.use.touched()
        self.written, self.writer_groups = self._launch_writes()
        self.untraced_writers = not self.single_group and any(
            (name, e) not in self.writer_groups
            for name, elements in self.written.items() for e in elements)
        self.flags, self.ghost_kinds = self._findings()
        self.globals = self._global_grids()
        self.frames = [_Frame(self, g) for g in groups]
        self._by_key = {(g.buffer, g.phase, g.group): g for g in self._all_grids()}
        self._layout()
        self.arrow_plan = self._plan_arrows()

    # --- what the detailed threads did ------------------------------------------------------
    def _collect(self) -> None:
        view, sel = self.view, self.selection
        self.columns = view.columns(self.groups)
        ranked = [g for g in _ranked_threadgroups(view) if g in self.groups]
        self.focus_group = sel.threadgroup if sel is not None else ranked[0]
        self.use = CellUse(view, self.groups, sel, self.focus_group)
        self.selected, self.focus_touched = self.use.selected, self.use.focus_touched

    def _launch_writes(self) -> tuple[dict[str, set[int]], dict[tuple[str, int], list[int]]]:
        """Per global buffer, the elements the whole launch wrote (outputs: from the report,
        traced or not), and per element the traced threadgroups that wrote it, in order."""
        report, view = self.view.report, self.view
        written: dict[str, set[int]] = {}
        for name, b in view.buffers.items():
            if b["role"] == "output" and name in report.unwritten:
                size = math.prod(b["shape"])
                written[name] = set(range(size)) - set(report.unwritten[name].tolist())
        writers: dict[tuple[str, int], list[int]] = {}
        for event in report.trace or ():
            name = event["buffer"]
            if event["kind"] == "read" or name not in view.buffers or shared(view, name):
                continue
            elements, owners = event["element"].tolist(), event["threadgroup"].tolist()
            outside = event.get("outside", False)
            for element, owner in zip(elements, owners):
                if not outside:
                    written.setdefault(name, set()).add(element)
                who = writers.setdefault((name, element), [])
                if not who or who[-1] != owner:
                    who.append(owner)
        return written, writers

    def _findings(self) -> tuple[dict[Key, list[str]], dict[str, dict[int, list[str]]]]:
        """Which drawn copies (and which cells past the end) each finding names."""
        view = self.view
        flags: dict[Key, list[str]] = {}
        ghosts: dict[str, dict[int, list[str]]] = {}
        for d in view.report.diagnostics:
            for buffer, owner, element in d.cells:
                if buffer not in view.buffers or (owner >= 0 and owner not in self.groups):
                    continue
                size = math.prod(view.buffers[buffer]["shape"])
                if not 0 <= element < size:
                    kinds = ghosts.setdefault(buffer, {}).setdefault(element, [])
                    if d.kind not in kinds:
                        kinds.append(d.kind)
                    continue
                if view.is_threadgroup_memory(buffer):
                    c = self.columns
                    touched = ((c.threadgroup == owner) & (c.element == element)
                               & (c.buffer == c.names.index(buffer)))
                    at_line = touched & (c.line == (-1 if d.line is None else d.line))
                    phases = (np.unique(c.phase[at_line if at_line.any() else touched]).tolist()
                              or view.phases(owner, buffer)[:1])
                    keys = [(buffer, element, p, owner) for p in phases]
                else:
                    keys = [(buffer, element, None, None)]
                for key in keys:
                    kinds = flags.setdefault(key, [])
                    if d.kind not in kinds:
                        kinds.append(d.kind)
        return flags, ghosts

    def flag_text(self, buffer: str, phase: int | None, group: int | None,
                  ghosts: bool = False) -> str:
        kinds = sorted({k for (b, _, p, g), ks in self.flags.items()
                        if (b, p, g) == (buffer, phase, group) for k in ks}
                       | ({k for ks in self.ghost_kinds.get(buffer, {}).values() for k in ks}
                          if ghosts else set()))
        return "⚠ " + ", ".join(kinds) if kinds else ""

    def _global_grids(self) -> dict[str, list[Grid]]:
        out: dict[str, list[Grid]] = {"input": [], "output": []}
        for name, b in self.view.buffers.items():
            if b["space"] == "threadgroup":
                continue
            dims = "×".join(str(d) for d in b["shape"]) or "scalar"
            ghosts = sorted(self.ghost_kinds.get(name, {}))
            grid = Grid(name, None, None, tuple(b["shape"]),
                        f"{name} ({b['role']}, {b['type']}[{dims}])",
                        self.flag_text(name, None, None, bool(ghosts)), ghosts)
            out.setdefault(b["role"], []).append(grid)
        return {role: grids for role, grids in out.items() if grids}

    def touched(self, buffer: str, phase: int | None, group: int | None) -> list[int]:
        """The elements a window of this copy should show: for global memory, those the
        focus threadgroup (findings first) touched, else those any detailed one did."""
        flagged = [e for b, e, p, g in self.flags if (b, p, g) == (buffer, phase, group)]
        if phase is None:
            mine = self.focus_touched.get(buffer)
            if mine:
                return [*flagged, *mine]
        return [*flagged, *self.touched_in.get((buffer, phase, group), ())]

    # --- layout -----------------------------------------------------------------------------
    def _all_grids(self) -> list[Grid]:
        return [g for grids in self.globals.values() for g in grids] + [
            g for f in self.frames for g in f.grids]

    def _layout(self) -> None:
        """The largest cell size at which inputs, frames and outputs fit side by side (when a
        buffer is 2-D) or one under the other; at the smallest, grids are windowed."""
        two_d = any(g.two_d for g in self._all_grids())
        inputs, outputs = self.globals.get("input", []), self.globals.get("output", [])
        for cs in CELL_SIZES:
            self._set_cell_size(cs, self.limit)
            columns = [w for w in (_widest(inputs), max((f.width for f in self.frames),
                                                        default=0.0), _widest(outputs)) if w]
            # Side by side only when frames hold threadgroup memory: else the threads go on
            # top and arrows run straight down from the inputs to the outputs.
            holds_memory = any(f.grids for f in self.frames)
            if (two_d and holds_memory
                    and sum(columns) + COLUMN_GAP * (len(columns) - 1) <= self.limit):
                self.mode = "columns"
                return
            if (not two_d or not holds_memory) and all(
                    g.width <= self.limit for g in self._all_grids()) and all(
                    f.width <= self.limit for f in self.frames):
                break
        self.mode = "rows"
        if any(g.left + g.cols * g.cs > self.limit for g in self._all_grids()):
            self._set_cell_size(CELL_SIZES[-1], self.limit)

    def _set_cell_size(self, cs: float, limit: float) -> None:
        for grid in self._all_grids():
            grid.cs, grid.r0, grid.c0 = cs, 0, 0
            grid.rows, grid.cols = grid.full_rows, grid.full_cols
            room = limit - (2 * FRAME_PAD if grid.group is not None else 0.0)
            # inputs keep the rows the detailed threads read; outputs show the launch
            grid.window(self.touched(grid.buffer, grid.phase, grid.group), room, MAX_ROWS,
                        only_touched=self.view.buffers[grid.buffer]["role"] != "output")
        for frame in self.frames:
            frame.arrange(limit)

    def render(self, svg: Svg, x0: float, y0: float) -> float:
        """Place and draw everything below `y0`; the y below it."""
        inputs, outputs = self.globals.get("input", []), self.globals.get("output", [])
        if self.mode == "columns":
            # Frames side by side where the room between inputs and outputs allows.
            room = self.limit - sum(_widest(c) + COLUMN_GAP for c in (inputs, outputs) if c)
            x, bottom = x0, y0
            for column in (inputs, self.frames, outputs):
                if not column:
                    continue
                if column is self.frames:
                    y, right = _flow(column, x, y0, max(room, _widest(column)), GAP)
                    bottom, x = max(bottom, y), right + COLUMN_GAP
                    continue
                y = y0
                for item in column:
                    item.x, item.y = x, y
                    y += item.height + ROW_GAP
                bottom = max(bottom, y - ROW_GAP)
                x += _widest(column) + COLUMN_GAP
            self.right = x - COLUMN_GAP
        else:
            # Threads first when frames hold no threadgroup memory: arrows then run from the
            # inputs to the outputs without crossing a frame.
            order = ((self.frames, inputs, outputs) if not any(f.grids for f in self.frames)
                     else (inputs, self.frames, outputs))
            y, self.right = y0, x0
            for band in order:
                if band:
                    y, right = _flow(band, x0, y, self.limit)
                    self.right = max(self.right, right)
                    y += ROW_GAP
            bottom = y - ROW_GAP
        for frame in self.frames:
            frame.place()
        grids = self._all_grids()
        for frame in self.frames:
            frame.render_box(svg)
        self._render_bundles(svg)   # under the cells: they are wide
        for grid in grids:
            self._render_grid(svg, grid)
        self._render_arrows(svg)
        for grid in grids:
            grid.render_labels(svg)
        self._render_flags(svg, grids)
        for frame in self.frames:
            frame.render_text(svg)
        return bottom

    # --- arrows -----------------------------------------------------------------------------
    def _grid(self, buffer: str, phase: int | None, group: int | None) -> Grid | None:
        return self._by_key.get((buffer, phase, group))

    def _plan_arrows(self) -> arrows.ArrowPlan:
        sel = self.selection
        chosen = sel.threads if sel is not None and sel.threadgroup in self.groups else None
        focus_group = self.focus_group
        focus_threads = chosen if chosen is not None else {self._focus_thread(focus_group)}
        # Far too many flows to bundle at a glance's cost: only the focus threads' are built.
        sources = self.columns.sources
        bound = sum(len(sources[i]) for i in np.flatnonzero(self.columns.writes).tolist())
        only_focus = bound > MAX_BUNDLED_SOURCES
        edges = (self.view.edges(focus_group, frozenset(focus_threads)) if only_focus else
                 [e for g in self.groups for e in self.view.edges(g)])

        def focus(edge: Edge) -> bool:
            return edge.group == focus_group and bool(edge.threads & focus_threads)

        def source_key(g: int, buffer: str, phase: int | None) -> arrows.GridKey:
            return (buffer, phase, None if phase is None else g)

        def target_key(edge: Edge) -> arrows.GridKey:
            return (edge.target[0], edge.target[2],
                    None if edge.target[2] is None else edge.group)

        def row_of(key: arrows.GridKey, element: int) -> int:
            grid = self._grid(*key)
            return element // grid.full_cols if grid else 0

        edges = [e for e in edges if self._drawable(e)]
        self.focus = (focus_group, focus_threads)
        plan = arrows.plan(edges, focus, source_key, target_key, row_of)
        if only_focus:
            plan.flows, plan.only_focus = bound, True
        return plan

    def _focus_thread(self, g: int) -> int:
        """The thread whose flows are drawn one by one: one a finding names, else thread 0."""
        gx, gy, _ = self.view.grid
        threads = self.view.threads_of(g)
        for d in self.view.report.diagnostics:
            for x, y, z in d.threads:
                t = z * gx * gy + y * gx + x
                if t in threads:
                    return threads.index(t)
        return 0

    def _drawable(self, edge: Edge) -> bool:
        g = edge.group
        tb, te, tp = edge.target
        grids = self._by_key
        target = grids.get((tb, tp, None if tp is None else g))
        if target is None or not target.drawn(te):
            return False
        buffer, element = edge.source
        for p in edge.source_phases:
            source = grids.get((buffer, p, None if p is None else g))
            if source is None or not source.drawn(element):
                return False
        return True

    def _render_bundles(self, svg: Svg) -> None:
        svg.open("g", class_="arrow-bundles")
        for bundle in self.arrow_plan.bundles:
            source, target = self._grid(*bundle.source), self._grid(*bundle.target)
            svg_box = (_cells_box(source, bundle.sources), _cells_box(target, bundle.targets))
            svg_tooltip = (f"{bundle.count} value flow{'s' * (bundle.count != 1)} from "
                           f"{_span(source, bundle.sources)} into "
                           f"{_span(target, bundle.targets)} (threadgroup {bundle.group}, "
                           f"thread{'s' * (len(bundle.threads) != 1)} "
                           f"{_ranges(bundle.threads)})")
            arrows.render_bundle(svg, bundle, *svg_box, svg_tooltip)
        svg.close("g")

    def _render_arrows(self, svg: Svg) -> None:
        plan, sel = self.arrow_plan, self.selection
        svg.open("g", class_="arrows")
        busy = plan.flows > 24
        for edge in plan.singles:
            g = edge.group
            tb, te, tp = edge.target
            target = self._grid(tb, tp, None if tp is None else g).box(te)
            phases = sorted(edge.source_phases, key=lambda p: -1 if p is None else p)
            boxes = [(p, _box(self._grid(edge.source[0], p, None if p is None else g),
                              edge.source[1])) for p in phases]
            selected = None
            if sel is not None:
                mine = sel.threadgroup == g and (sel.threads is None
                                                 or bool(sel.threads & edge.threads))

                def selected(phase, mine=mine, tp=tp):  # a path of the chosen threads and phase
                    return mine and (sel.phase is None or sel.phase in (tp, phase))
            arrows.render_single(svg, edge, boxes, _box_of(target), selected, busy)
        svg.close("g")

    def render_notes(self, svg: Svg, x: float, y: float, one_thread: str | None) -> float:
        """Below the picture: what was summarised, and how to see it all."""
        plan = self.arrow_plan
        if plan.only_focus:
            g, threads = self.focus
            text = (f"About {plan.flows:,} value flows, too many to bundle: those of thread "
                    f"{_ranges(threads)} of threadgroup {g} are drawn. Every flow of one thread: "
                    f"{one_thread or 'metalsim.viz.Explorer(run)'}, choosing a thread.")
            y = lines(svg, x, y, text, 11.0, self.limit, fill=style.MUTED,
                      class_="arrows-omitted", data_paths=plan.flows)
        elif plan.summarised:
            g, threads = self.focus
            who = (f"thread {_ranges(threads)} of threadgroup {g}" if len(threads) < 8
                   else f"the chosen threads of threadgroup {g}")
            drawn = sum(arrows.paths(e) for e in plan.singles)
            text = (f"{plan.flows:,} value flows: {drawn} of {who} drawn one by one, the others "
                    f"bundled into {len(plan.bundles)} (thicker = more values; hover for how "
                    f"many)" + (f", {plan.left_out} bundles not drawn" if plan.left_out else "")
                    + f". Every flow of one thread: {one_thread or 'metalsim.viz.Explorer(run)'}"
                    ", choosing a thread.")
            y = lines(svg, x, y, text, 11.0, self.limit, fill=style.MUTED,
                      class_="arrows-omitted", data_paths=plan.flows)
        for frame in self.frames:
            if frame.phases_left_out:
                left_out = frame.phases_left_out
                y = lines(svg, x, y, f"threadgroup {frame.g}: threadgroup memory in phases "
                          f"{left_out[0]}–{left_out[-1]} is not drawn (too many cells): the "
                          "explorer's phase choice shows each one", 11.0, self.limit,
                          fill=style.MUTED, class_="phases-omitted",
                          data_phases=" ".join(map(str, left_out)))
        return y

    # --- cells ------------------------------------------------------------------------------
    def _render_grid(self, svg: Svg, grid: Grid) -> None:
        view, cs = self.view, grid.cs
        b = view.buffers[grid.buffer]
        values = self.values.get(grid.buffer)
        is_output = b["role"] == "output"
        written = self.written.get(grid.buffer, set())
        # Values' font and the cells' stroke width are inherited from the buffer's group.
        svg.open("g", class_="buffer", data_buffer=grid.buffer, data_role=b["role"],
                 data_phase=grid.phase, data_threadgroup=grid.group,
                 data_shape=" ".join(map(str, grid.shape)), font_family=MONO,
                 stroke_width=0.8)
        # The hot loop of a diagram: elements written as text directly (same output as Svg.el).
        add = svg.parts.append
        size = num(cs)
        tail = ("" if grid.phase is None else
                f' data-threadgroup="{grid.group}" data-phase="{grid.phase}"')
        wrong = self.wrong.get(grid.buffer, {}) if grid.phase is None else {}
        # Where `grid.origin` puts each drawn cell (the same sums, row by row).
        left, top = grid.x + grid.left, grid.y + grid.top
        for e, row, col in grid.cells():
            x, y = left + col * cs, top + row * cs
            key = (grid.buffer, e, grid.phase, grid.group)
            cell = self.use.cell(key)
            readers, writers = self.use.readers(cell), self.use.writers(cell)
            expected = wrong.get(e)
            launch_written = grid.phase is None and e in written
            groups = self.writer_groups.get((grid.buffer, e), []) if launch_written else []
            touched = bool(readers or writers or launch_written)
            klass = ("cell" + ("" if touched else " untouched") + (" read" if readers else "")
                     + (" written" if writers or launch_written else "")
                     + (" wrong" if expected is not None else ""))
            extra = "" if expected is None else f' data-expected="{full_value(expected)}"'
            if groups:
                extra += f' data-writer-threadgroup="{groups[-1]}"'
            index = logical_index(grid.shape, e)
            add(f'<g class="{klass}" data-buffer="{grid.buffer}" data-element="{e}" '
                f'data-index="{",".join(map(str, index))}"{tail}{extra}>')
            # crisp edges: cells are axis-aligned, and anti-aliasing them costs PNG export
            add(f'<rect x="{num(x)}" y="{num(y)}" width="{size}" height="{size}" '
                f'fill="{self._fill(readers, writers, launch_written, groups)}" '
                f'stroke="{style.MUTED if touched else style.FAINT}" '
                'shape-rendering="crispEdges"/>')
            value = self._value(key, cell, b, values, launch_written or not is_output, expected)
            text = grid.fit_value(value) if value is not None else ""
            both = expected is not None and cs >= 28  # room for the expected value on top
            shown = grid.render_value(add, x, y, text, not touched, low=both)
            self._render_markers(svg, x, y, cs, readers, writers, shown)
            name = f"{grid.buffer}[{']['.join(map(str, index))}]"
            tooltip = self._tooltip(grid, name, cell, value, readers, writers, groups,
                                    launch_written)
            if expected is not None:
                self._render_wrong(svg, grid, x, y, full_value(expected), both)
                tooltip += f" · wrong: expected {full_value(expected)}"
            add(f"<title>{_escape(tooltip)}</title></g>")
        for e in grid.ghosts:
            grid.render_ghost(svg, e, self.ghost_kinds.get(grid.buffer, {}).get(e, []),
                              grid.group)
        svg.close("g")

    def _fill(self, readers: Sequence[int], writers: Sequence[int], launch_written: bool,
              groups: list[int]) -> str:
        if launch_written and not self.single_group:
            return style.group_tint(groups[-1]) if groups else style.UNKNOWN_WRITER
        if writers:
            return style.thread_tint(writers[0])
        if launch_written:
            return style.UNKNOWN_WRITER
        return "white" if readers else style.UNTOUCHED_FILL

    def _value(self, key: Key, cell: int | None, b: dict, values: np.ndarray | None,
               shown: bool, expected: object) -> object:
        if self.use.has_seen(cell):
            return self.use.seen(cell)
        if b["space"] == "threadgroup":
            return self.use.held(cell)
        if values is not None and (shown or expected is not None):
            return values[key[1]]
        return None

    def _render_wrong(self, svg: Svg, grid: Grid, x: float, y: float, expected: object,
                      room: bool) -> None:
        """A wrong output cell: a red border, and the expected value on its top line where
        there is room (the tooltip always has it)."""
        cs = grid.cs
        svg.el("rect", x=x + 0.6, y=y + 0.6, width=cs - 1.2, height=cs - 1.2, fill="none",
               stroke=style.ERROR, stroke_width=1.6, class_="wrong-mark")
        text = "≠" + compact(expected, value_chars(cs + 1.5))
        if room and width(text, MIN_FONT, "mono") <= cs - 1.5:
            svg.text(x + cs / 2, y + 11, text, MIN_FONT, font_family=MONO, text_anchor="middle",
                     fill=style.ERROR, class_="expected")

    def _render_markers(self, svg: Svg, x: float, y: float, cs: float, readers: Sequence[int],
                        writers: Sequence[int], value_shown: bool) -> None:
        r = max(1.8, min(3.4, cs / 9))
        step = 2 * r + 1.5
        fit = max(1, int((cs - 2) // step))
        for i, local in enumerate(writers[:fit]):
            style.marker(svg, x + r + 2 + i * step, y + r + 2, r, local, outlined=True,
                         data_role="writer")
        bottom = y + cs - r - 2 if value_shown or cs < 15 else y + cs / 2
        for i, local in enumerate(readers[:fit]):
            style.marker(svg, x + r + 2 + i * step, bottom, r, local, data_role="reader")

    def _tooltip(self, grid: Grid, name: str, cell: int | None, value: object,
                 readers: Sequence[int], writers: Sequence[int], groups: list[int],
                 launch_written: bool) -> str:
        parts = [name + ("" if value is None else f" = {full_value(value)}")]
        if grid.phase is not None:
            parts.append(f"threadgroup {grid.group}, phase {grid.phase}")
        if groups:
            parts.append("written by threadgroup " + ", ".join(map(str, groups)))
        elif launch_written and not writers:
            parts.append("written by a threadgroup that was not traced")
        if writers:
            parts.append("written by thread " + _ranges(writers))
        if readers:
            parts.append("read by thread " + _ranges(readers))
        lines_ = self.use.lines(cell)
        if lines_:
            parts.append("line " + ", ".join(map(str, sorted(lines_))))
        return " · ".join(parts)

    def _render_flags(self, svg: Svg, grids: list[Grid]) -> None:
        for grid in grids:
            for e in grid.elements():
                key = (grid.buffer, e, grid.phase, grid.group)
                kinds = self.flags.get(key)
                if kinds:
                    x, y = grid.origin(e)
                    svg.el("rect", x=x - 1.5, y=y - 1.5, width=grid.cs + 3, height=grid.cs + 3,
                           fill="none", stroke=style.ERROR, stroke_width=2.4,
                           class_="diagnostic " + " ".join(kinds), data_buffer=grid.buffer,
                           data_element=e, data_phase=grid.phase, data_threadgroup=grid.group)
                chosen = self.selected.get(key)
                if chosen:
                    x, y = grid.origin(e)
                    colour = style.WRITE_FOCUS if "write" in chosen else style.READ_FOCUS
                    svg.el("rect", x=x + 0.8, y=y + 0.8, width=grid.cs - 1.6,
                           height=grid.cs - 1.6, fill="none", stroke=colour, stroke_width=2.2,
                           class_="selected " + " ".join(sorted(chosen)),
                           data_buffer=grid.buffer, data_element=e, data_phase=grid.phase)


class _Frame:
    """One threadgroup drawn in detail: its threads and its threadgroup memory by phase."""

    def __init__(self, scene: _Scene, g: int) -> None:
        self.scene, self.g, view = scene, g, scene.view
        self.x = self.y = 0.0
        by_phase: dict[int, list[Grid]] = {}
        for name, b in view.buffers.items():
            if b["space"] != "threadgroup":
                continue
            dims = "×".join(str(d) for d in b["shape"])
            for p in view.phases(g, name):
                by_phase.setdefault(p, []).append(
                    Grid(name, p, g, tuple(b["shape"]), f"{name}[{dims}], phase {p}",
                         scene.flag_text(name, p, g)))
        self.phase_rows = self._within_budget([by_phase[p] for p in sorted(by_phase)])
        self.grids = [grid for row in self.phase_rows for grid in row]
        size = view.tg_size(g)
        first = view.threads_of(g)[:1]
        count = math.prod(size)
        span = (f"threads {first[0]}–{first[0] + count - 1}" if count > 1
                else f"thread {first[0]}" if first else "no threads")
        self.heading = f"threadgroup {view.tg_position(g)}"
        self.subheading = f"size {size} · {span}" if size != view.tg else span

    def _within_budget(self, rows: list[list[Grid]]) -> list[list[Grid]]:
        """Phases in order while the frame's cells stay within `FRAME_CELLS` (the selected
        phase always); the later ones are left to the explorer (and said so)."""
        self.phases_left_out: list[int] = []
        sel = self.scene.selection
        wanted = sel.phase if sel is not None and sel.threadgroup == self.g else None
        kept, used = [], 0
        for row in rows:
            cells = sum(math.prod(grid.shape) for grid in row)
            if row[0].phase != wanted and kept and (self.phases_left_out
                                                    or used + cells > FRAME_CELLS):
                self.phases_left_out.append(row[0].phase)
                continue
            used += cells
            kept.append(row)
        return kept

    # --- geometry ---------------------------------------------------------------------------
    def _strip(self) -> tuple[int, int, float, float, float]:
        """Threads, markers per row, step, row step and left lane of the thread strip."""
        ax, ay, az = self.scene.view.tg_size(self.g)
        n = ax * ay * az
        per_row = min(ax, 32)
        step = 16.0 if n <= 64 else 11.0
        # Rows of more than 32 threads are named by SIMD-group (a label lane of their own).
        left = (width(f"SIMD-group {simd_group(n - 1)}", INDEX_SIZE) + 8 if n > 32
                else width(STRIP_LABEL, 11.0) + 10)
        row_step = step + INDEX_SIZE + 2 if n <= 64 else 14.0
        return n, per_row, step, row_step, left

    def arrange(self, limit: float) -> None:
        """Place the phases' grids inside the frame (rows of a phase wrap at `limit`)."""
        n, per_row, step, row_step, left = self._strip()
        rows = math.ceil(n / per_row) if per_row else 0
        swatch = 0.0 if self.scene.single_group else 18.0
        heading_w = (swatch + width(self.heading, HEADING, "bold") + 10
                     + width(self.subheading, 11.0))
        self.strip_h = rows * row_step
        inner = limit - 2 * FRAME_PAD
        y = 22 + self.strip_h + 14
        right = max(heading_w, left + per_row * step)
        self.barriers: list[tuple[float, int, int]] = []
        last = None
        for row in self.phase_rows:
            if last is not None:
                self.barriers.append((y - ROW_GAP / 2, last, row[0].phase))
            x, line_h = 0.0, 0.0
            for grid in row:
                if x > 0 and x + grid.width > inner:
                    x, y, line_h = 0.0, y + line_h + GAP, 0.0
                grid.x, grid.y = x, y   # relative to the frame's inside, until placed
                x += grid.width + GAP
                line_h = max(line_h, grid.height)
                right = max(right, x - GAP)
            y += line_h + ROW_GAP
            last = row[0].phase
        self.inner_w = right
        self.width = right + 2 * FRAME_PAD
        self.height = (y - (ROW_GAP if self.phase_rows else 0.0) + FRAME_PAD)

    def place(self) -> None:
        for grid in self.grids:
            grid.x += self.x + FRAME_PAD
            grid.y += self.y + FRAME_PAD

    # --- rendering --------------------------------------------------------------------------
    def render_box(self, svg: Svg) -> None:
        svg.el("rect", x=self.x, y=self.y, width=self.width, height=self.height, rx=8.0,
               fill="none", stroke="#9a9a9a", stroke_width=1.2, class_="frame-box",
               data_threadgroup=self.g)
        for y, before, _ in self.barriers:
            line_y = self.y + FRAME_PAD + y
            svg.el("line", x1=self.x + FRAME_PAD, y1=line_y, x2=self.x + self.width - FRAME_PAD,
                   y2=line_y, stroke=style.MUTED, stroke_width=1.0, stroke_dasharray="5 4",
                   class_="barrier", data_after_phase=before, data_threadgroup=self.g)

    def render_text(self, svg: Svg) -> None:
        view, g = self.scene.view, self.g
        x0, y0 = self.x + FRAME_PAD, self.y + FRAME_PAD
        svg.open("g", class_="frame", data_threadgroup=g,
                 data_position=" ".join(map(str, view.tg_position(g))), **style.HALO)
        if not self.scene.single_group:
            svg.el("rect", x=x0, y=y0 + 1, width=12.0, height=12.0, rx=2.0,
                   fill=style.group_tint(g), stroke=style.MUTED, stroke_width=0.6)
            x0 += 18
        svg.text(x0, y0 + 12, self.heading, HEADING, font_weight="bold", fill=style.INK,
                 class_="frame-heading")
        svg.text(x0 + width(self.heading, HEADING, "bold") + 10, y0 + 12, self.subheading, 11,
                 fill=style.MUTED)
        self._render_strip(svg, self.x + FRAME_PAD, y0 + 22)
        for y, before, after in self.barriers:
            n = after - before
            label = "threadgroup_barrier" if n == 1 else f"{n} barriers"
            svg.text(self.x + self.width - FRAME_PAD, y0 + y - 4, label, INDEX_SIZE,
                     fill=style.MUTED, text_anchor="end", class_="barrier-label")
        svg.close("g")

    def _render_strip(self, svg: Svg, x: float, y: float) -> None:
        n, per_row, step, row_step, left = self._strip()
        threads = self.scene.view.threads_of(self.g)
        sel = self.scene.selection if self.scene.selection else None
        r = 5.0 if n <= 64 else 3.6
        every = max(1, math.ceil((width(str(n - 1), INDEX_SIZE) + 3) / step))
        svg.open("g", class_="threads")
        if n <= 32:
            svg.text(x, y + 10, STRIP_LABEL, 11, fill=style.MUTED)
        for local in range(n):
            row, col = divmod(local, per_row)
            cx, cy = x + left + col * step + step / 2, y + row * row_step + step / 2
            if col == 0 and n > 32 and local % 32 == 0:
                svg.text(x + left - 6, cy + 3.5, f"SIMD-group {simd_group(local)}", INDEX_SIZE,
                         fill=style.MUTED, text_anchor="end")
            if sel is not None and sel.threadgroup == self.g and (
                    sel.threads is None or local in sel.threads):
                svg.el("circle", cx=cx, cy=cy, r=r + 2.5, fill="none", stroke=style.READ_FOCUS,
                       stroke_width=1.5, class_="selected-thread")
            style.marker(svg, cx, cy, r, local, data_thread=threads[local])
            if n <= 64 and col % every == 0:
                svg.text(cx, cy + r + INDEX_SIZE + 1, str(local), INDEX_SIZE, fill=style.MUTED,
                         text_anchor="middle", class_="index")
        svg.close("g")


# --- helpers ---------------------------------------------------------------------------------

def shared(view: TraceView, name: str) -> bool:
    return view.is_threadgroup_memory(name)


def _widest(items: Sequence) -> float:
    return max((item.width for item in items), default=0.0)


def _flow(items: Sequence, x0: float, y: float, limit: float, row_gap: float = ROW_GAP
          ) -> tuple[float, float]:
    """Place `items` left to right from (x0, y), wrapping at `limit`; the y below, the right."""
    x, line_h, right = x0, 0.0, x0
    for item in items:
        if x > x0 and x + item.width > x0 + limit:
            x, y, line_h = x0, y + line_h + row_gap, 0.0
        item.x, item.y = x, y
        x += item.width + GAP
        line_h = max(line_h, item.height)
        right = max(right, x - GAP)
    return y + line_h, right


def _box(grid: Grid, element: int) -> arrows.Box:
    x, y, bottom, cs = grid.box(element)
    return x, y, cs, cs, bottom


def _box_of(box: tuple[float, float, float, float]) -> arrows.Box:
    x, y, bottom, cs = box
    return x, y, cs, cs, bottom


def _cells_box(grid: Grid, elements: set[int]) -> arrows.Box:
    """Where a bundle attaches: the box around the drawn cells it carries values from or to."""
    inside = [e for e in elements if 0 <= e < grid.size]
    rows = [e // grid.full_cols for e in inside]
    cols = [e % grid.full_cols for e in inside]
    corners = [grid.origin(r * grid.full_cols + c)
               for r, c in ((min(rows), min(cols)), (max(rows), max(cols)))] if inside else []
    corners += [grid.origin(e) for e in elements if e in grid.ghosts]
    xs, ys = zip(*corners)
    x, y = min(xs), min(ys)
    w, h = max(xs) + grid.cs - x, max(ys) + grid.cs - y
    below = INDEX_LANE if grid.bottom_indices and not grid.ghosts else 0.0
    return x, y, w, h, y + h + below


def _span(grid: Grid, elements: set[int]) -> str:
    if len(elements) == 1:
        return grid.index_name(next(iter(elements)))
    return f"{len(elements)} cells of {grid.buffer}" + (
        "" if grid.phase is None else f" (phase {grid.phase})")


def _ranges(values) -> str:
    """Sorted integers as ranges: 0–3, 8, 10–11."""
    out, items = [], sorted(values)
    start = prev = None
    for v in items:
        if start is None:
            start = prev = v
        elif v == prev + 1:
            prev = v
        else:
            out.append(f"{start}" if start == prev else f"{start}–{prev}")
            start = prev = v
    if start is not None:
        out.append(f"{start}" if start == prev else f"{start}–{prev}")
    return ", ".join(out)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
