"""`draw(run)`: the diagram of a traced launch, drawn only from what the simulator recorded.

Layout, top to bottom: the title and launch, the score table (maximum per thread), the findings,
a legend, then one frame per shown threadgroup. A frame holds the threadgroup's threads (one
marker each: colour per thread, shape per SIMD-group), then its input buffers, its threadgroup
memory (one copy per barrier phase in which it was touched, left to right), and its output
buffers, each a grid of cells in the buffer's logical shape. Cells the frame's threads read carry
their markers; cells they wrote are tinted with the writer's colour and carry its outlined
marker; arrows run from the cells whose values flowed into a written cell to that cell. Cells a
finding is about are outlined in red and named by its kind; accesses past the end of a buffer
appear as dashed cells beside it.

Semantic attributes let programs read a diagram back (tests parse it with xml.etree):
`g.cell[data-buffer, data-element, data-index, data-threadgroup, data-phase]`,
`g.arrow[data-from, data-from-phases, data-to, data-to-phase, data-threads]`,
`rect.diagnostic.<kind>`, `g.ghost-cell`, `g.frame[data-threadgroup]`, `text.score[data-count]`.
A launch traced without `trace=True` gets a summary: counts, launch structure and traffic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from metalsim.report import Report
from metalsim.viz import style
from metalsim.viz.model import Access, Edge, TraceView, logical_index, simd_group
from metalsim.viz.svg import MONO, Diagram, Svg, escape, num

WRAP = 32            # a 1-D buffer wraps after this many cells (one SIMD-group's worth)
ROW_WIDTH = 560.0    # the width a frame's widest grid is scaled to fit
CELL_MAX, CELL_MIN = 32.0, 7.0
LABEL_H = 16.0
INDEX_H = 11.0
GAP = 22.0
ROW_GAP = 40.0
COLUMN_GAP = 80.0
PAD = 16.0
FRAME_PAD = 12.0
PAGE_WIDTH = 1300.0   # frames wrap to a new row past this width
HEADER_WIDTH = 830.0
STRIP_LEFT = 110.0    # room for the strip's labels
MAX_PATHS = 600      # a frame with more arrows draws only the selected threads' arrows
DEFAULT_THREADGROUPS = 4
MAX_DRAWN_CELLS = 400  # above this, a diagram draws one threadgroup (keeps notebooks small)
CROP_CELLS = 400      # a frame above this draws only the rows/columns its threadgroup touched
WINDOW_MAX = 32       # ... and at most this many of them
FRAME_CELLS = 1500    # threadgroup-memory phases past this many cells in a frame are not drawn

SCORE_NAMES = (("global_reads", "global reads"), ("global_writes", "global writes"),
               ("threadgroup_reads", "threadgroup reads"),
               ("threadgroup_writes", "threadgroup writes"), ("atomics", "atomics"),
               ("barriers", "barriers"))


@dataclass(frozen=True)
class Selection:
    """What the explorer highlights: threads (local indices, None: all) of one threadgroup in
    one barrier phase (None: every phase)."""

    threadgroup: int
    threads: frozenset[int] | None = None
    phase: int | None = None

    def covers(self, a: Access) -> bool:
        return (a.threadgroup == self.threadgroup
                and (self.threads is None or a.local in self.threads)
                and (self.phase is None or a.phase == self.phase))


def draw(run: object, *, inputs: Sequence | Mapping | None = None,
         max_threadgroups: int | None = None,
         threadgroups: Sequence[int] | None = None, title: str | None = None,
         budget: Mapping[str, int] | None = None, selection: Selection | None = None,
         wrong: Mapping[str, Mapping[int, object]] | None = None, others: str | None = None
         ) -> Diagram:
    """The diagram of `run` (a `metalsim.simulate(..., trace=True)` result, or its Report).

    `inputs` (the call's inputs, a list in order or a dict by name) labels input cells with
    values; output cells show the run's outputs. At most `max_threadgroups` threadgroups are
    drawn (by default 4, or 1 when their cells would exceed `MAX_DRAWN_CELLS`): those with findings
    first, then the first and the last, then in order; or exactly `threadgroups` (linear ids).
    A run traced for some threadgroups only (`trace=[...]`) draws those. `budget` (max per
    thread, by count name) marks the score table. `wrong` marks output cells that differ from
    the expected output: buffer -> {flat element: expected value}. `others` says how to see the
    threadgroups left out (default: the `draw(run, threadgroups=[k])` call).
    """
    report: Report = getattr(run, "report", run)
    if report.trace is None:
        return _draw_summary(report, title, budget)
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
    values = _values(report, inputs, getattr(run, "outputs", None))
    svg = Svg()
    y = _draw_header(svg, report, view, groups, title, budget, others)
    x, row_h, right = PAD, 0.0, HEADER_WIDTH
    for frame in (_Frame(view, g, values, selection, wrong or {}) for g in groups):
        if x > PAD and x + frame.width > PAGE_WIDTH - PAD:
            x, y, row_h = PAD, y + row_h + PAD, 0.0
        frame.render(svg, x, y)
        x += frame.width + PAD
        row_h, right = max(row_h, frame.height), max(right, x)
    height = y + row_h + PAD
    return Diagram(svg.document(right, height), right, height)


def frame_cells(view: TraceView, g: int) -> int:
    """How many cells threadgroup `g`'s frame draws (threadgroup memory once per phase)."""
    cells = 0
    for name, b in view.buffers.items():
        copies = len(view.phases(g, name)) if b["space"] == "threadgroup" else 1
        cells += math.prod(b["shape"]) * copies
    return cells


def choose_threadgroups(view: TraceView, limit: int | None = None) -> list[int]:
    """Threadgroups worth showing: those findings name, then the first, the last (often a
    partial edge threadgroup), then in order; only traced ones. At most `limit`; by default
    4, or just the first when their frames would draw more than `MAX_DRAWN_CELLS` cells."""
    ranked = _ranked_threadgroups(view)
    traced = view.report.traced_threadgroups
    if traced is not None:
        ranked = sorted(traced, key=ranked.index)
    chosen = ranked[:max(1, limit or DEFAULT_THREADGROUPS)]
    if (limit is None and len(chosen) > 1
            and sum(frame_cells(view, g) for g in chosen) > MAX_DRAWN_CELLS):
        chosen = chosen[:1]
    return sorted(chosen)


def threadgroups_to_trace(run: object, limit: int | None = None) -> list[int]:
    """The threadgroups `draw(..., max_threadgroups=limit)` would show, read off an untraced
    run: trace only these (`simulate(..., trace=threadgroups_to_trace(run))`) to draw the
    launch cheaply. By default as `draw`: 4, or 1 when their frames would be too large (each
    estimated with threadgroup memory drawn once per barrier passed, plus one)."""
    report = getattr(run, "report", run)
    view = TraceView(report)
    chosen = _ranked_threadgroups(view)[:max(1, limit or DEFAULT_THREADGROUPS)]
    if limit is None and len(chosen) > 1:
        copies = int(report.counts["barriers"].max(initial=0)) + 1
        cells = sum(math.prod(b["shape"]) * (copies if b["space"] == "threadgroup" else 1)
                    for b in report.buffers.values())
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


def format_value(v: object) -> str:
    """A cell's value in at most about five characters (a vector's, component by component)."""
    if isinstance(v, np.ndarray) and v.ndim:
        return "(" + ", ".join(format_value(c) for c in v) + ")"
    if isinstance(v, (bool, np.bool_)):
        return "1" if v else "0"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    f = float(v)
    if math.isfinite(f) and f.is_integer() and abs(f) < 1e5:
        return str(int(f))
    return f"{f:.3g}"


# --- header ---------------------------------------------------------------------------------

def _launch_line(report: Report, count: int) -> str:
    return (f"grid {tuple(report.grid)} · threadgroup {tuple(report.threadgroup)} · "
            f"{count} threadgroup{'s' if count != 1 else ''}")


def _draw_header(svg: Svg, report: Report, view: TraceView | None, groups: Sequence[int],
                 title: str | None, budget: Mapping[str, int] | None,
                 others: str | None = None) -> float:
    """Title, launch, score table, findings and legend; returns the y below them."""
    y = PAD
    if title:
        svg.text(PAD, y + 14, title, 17, font_weight="bold", class_="title", fill=style.INK)
        y += 24
    count = view.threadgroup_count if view else math.prod(
        math.ceil(g / t) if g else 0 for g, t in zip(report.grid, report.threadgroup))
    svg.text(PAD, y + 12, _launch_line(report, count), 12, class_="launch", fill=style.INK)
    y += 20
    if view is not None:
        omitted = count - len(groups)
        shown = ", ".join(str(g) for g in groups)
        note = (f"showing threadgroup{'s' if len(groups) != 1 else ''} {shown}"
                + (f" of {count}; to see threadgroup k: "
                   f"{others or 'draw(run, threadgroups=[k])'}" if omitted else ""))
        svg.text(PAD, y + 12, note, 12, class_="shown", data_omitted=omitted, fill=style.MUTED)
        y += 20
    y = _draw_scores(svg, report, budget, y + 4)
    y = _draw_findings(svg, report, y)
    if view is not None:
        y = _draw_legend(svg, view, groups, y)
    return y + 6


def _draw_scores(svg: Svg, report: Report, budget: Mapping[str, int] | None, y: float) -> float:
    """The score table: the maximum over threads of each count (the puzzle score)."""
    counts = report.max_per_thread()
    shown = [(k, label) for k, label in SCORE_NAMES
             if k not in ("atomics", "barriers") or counts.get(k, 0) > 0]
    col = 118.0
    svg.open("g", class_="score-table")
    svg.text(PAD, y + 12, "max per thread", 11, fill=style.MUTED)
    for i, (key, label) in enumerate(shown):
        x = PAD + 100 + i * col
        limit = (budget or {}).get(key)
        over = limit is not None and counts.get(key, 0) > limit
        text = f"{counts.get(key, 0)}" + (f" / {limit}" if limit is not None else "")
        svg.el("rect", x=x, y=y, width=col - 6, height=36.0, rx=4.0,
               fill="#fdecea" if over else "#f6f6f6", stroke=style.ERROR if over else style.FAINT)
        svg.text(x + 6, y + 13, label, 10, fill=style.MUTED)
        svg.text(x + 6, y + 30, text, 14, font_weight="bold", class_="score", data_count=key,
                 data_over="1" if over else None, fill=style.ERROR if over else style.INK)
    svg.close("g")
    return y + 46


def _draw_findings(svg: Svg, report: Report, y: float, limit: int = 6) -> float:
    for d in report.diagnostics[:limit]:
        colour = style.ERROR if d.severity == "error" else style.WARNING
        where = f"line {d.line}:{d.column}: " if d.line is not None else ""
        svg.text(PAD, y + 12, f"{d.severity} [{d.kind}] {where}{d.message}", 12, fill=colour,
                 class_=f"diagnostic-note {d.kind}", data_kind=d.kind)
        y += 17
    if len(report.diagnostics) > limit:
        svg.text(PAD, y + 12, f"... and {len(report.diagnostics) - limit} more findings", 12,
                 fill=style.MUTED)
        y += 17
    return y + (4 if report.diagnostics else 0)


def _draw_legend(svg: Svg, view: TraceView, groups: Sequence[int], y: float) -> float:
    svg.open("g", class_="legend")
    x = PAD
    style.marker(svg, x + 5, y + 8, 4.5, 0)
    svg.text(x + 14, y + 12, "read by a thread", 11, fill=style.INK)
    x += 118
    svg.el("rect", x=x, y=y + 1, width=14.0, height=14.0, fill=style.thread_tint(1),
           stroke=style.MUTED)
    style.marker(svg, x + 4.5, y + 5.5, 3.5, 1, outlined=True)
    svg.text(x + 20, y + 12, "written (tint and outlined marker)", 11, fill=style.INK)
    x += 226
    svg.el("path", d=f"M{num(x)},{num(y + 8)} L{num(x + 22)},{num(y + 8)}", stroke=style.INK,
           stroke_width=1.2, fill="none")
    svg.el("polygon", points=_arrowhead(x + 26, y + 8, 1.0, 0.0, 5.0), fill=style.INK)
    svg.text(x + 32, y + 12, "value flowed into", 11, fill=style.INK)
    x += 140
    svg.text(x, y + 12, "colour = thread", 11, fill=style.INK)
    x += 100
    if any(max(1, math.prod(view.tg_size(g))) > 32 for g in groups):
        svg.text(x, y + 12, "shape = SIMD-group", 11, fill=style.INK)
        x += 124
    if any(view.is_threadgroup_memory(b) for b in view.buffers):
        svg.text(x, y + 12, "phase k = after k barriers", 11, fill=style.INK)
    svg.close("g")
    return y + 22


# --- frames ---------------------------------------------------------------------------------

def _grid_shape(shape: tuple[int, ...]) -> tuple[int, int]:
    """Rows and columns a buffer is drawn with: 2-D as is (leading dims folded into rows),
    1-D wrapped every WRAP cells."""
    dims = list(shape)
    while len(dims) > 1 and dims[0] == 1:
        dims.pop(0)
    if not dims:
        return 1, 1
    if len(dims) == 1:
        cols = min(dims[0], WRAP)
        return (math.ceil(dims[0] / cols) if cols else 0), cols
    return math.prod(dims[:-1]), dims[-1]


@dataclass
class _Grid:
    """One drawn copy of a buffer: `phase` None for device/constant memory."""

    buffer: str
    phase: int | None
    shape: tuple[int, ...]
    rows: int
    cols: int
    cs: float
    label: str
    ghosts: list[int] = field(default_factory=list)
    x: float = 0.0
    y: float = 0.0
    # A window of the buffer (large frames draw only the rows and columns their threadgroup
    # touched): its first row and column; `rows`/`cols` are then the window's size.
    r0: int = 0
    c0: int = 0
    full_cols: int = 0

    def __post_init__(self) -> None:
        self.full_cols = self.full_cols or self.cols

    def elements(self) -> list[int]:
        """The elements drawn, row by row."""
        size = math.prod(self.shape)
        return [e for r in range(self.rows) for c in range(self.cols)
                if (e := (self.r0 + r) * self.full_cols + self.c0 + c) < size]

    def drawn(self, element: int) -> bool:
        if not 0 <= element < math.prod(self.shape):
            return False
        r, c = divmod(element, self.full_cols)
        return self.r0 <= r < self.r0 + self.rows and self.c0 <= c < self.c0 + self.cols

    @property
    def two_d(self) -> bool:
        """Drawn with row and column indices (a 1-D buffer may wrap, but stays 1-D)."""
        return len(self.shape) > 1 and math.prod(self.shape[:-1]) > 1

    @property
    def left(self) -> float:
        return 18.0 if self.rows > 1 and self.cs >= 12 else 0.0

    @property
    def top(self) -> float:
        return LABEL_H + (INDEX_H if self.two_d and self.cs >= 12 else 0.0)

    @property
    def width(self) -> float:
        ghost_w = 44 + len(self.ghosts) * (self.cs + 3) if self.ghosts else 0.0
        return max(self.left + self.cols * self.cs, len(self.label) * 6.6, ghost_w)

    @property
    def height(self) -> float:
        bottom = INDEX_H if self.bottom_indices else 2.0
        return self.top + self.rows * self.cs + bottom + (self.cs + 6 if self.ghosts else 0.0)

    def origin(self, element: int) -> tuple[float, float]:
        r, c = divmod(element, self.full_cols)
        return (self.x + self.left + (c - self.c0) * self.cs,
                self.y + self.top + (r - self.r0) * self.cs)

    @property
    def bottom_indices(self) -> bool:
        return not self.two_d and self.rows == 1 and self.cs >= 14

    def box(self, element: int) -> tuple[float, float, float, float]:
        """Where arrows attach to a cell: x, y of its top-left corner, the y below it (and
        below its index label), its size."""
        x, y = self.ghost_origin(element) if element in self.ghosts else self.origin(element)
        below = INDEX_H if self.bottom_indices and element not in self.ghosts else 0.0
        return x, y, y + self.cs + below, self.cs

    def ghost_origin(self, element: int) -> tuple[float, float]:
        i = self.ghosts.index(element)
        return (self.x + 44 + i * (self.cs + 3),
                self.y + self.top + self.rows * self.cs
                + (INDEX_H if self.bottom_indices else 2.0) + 4)


class _Frame:
    """One threadgroup: its threads, then inputs, threadgroup memory by phase, outputs."""

    def __init__(self, view: TraceView, g: int, values: dict[str, np.ndarray],
                 selection: Selection | None, wrong: Mapping[str, Mapping[int, object]]
                 ) -> None:
        self.view, self.g, self.values, self.wrong = view, g, values, wrong
        self.selection = selection if selection and selection.threadgroup == g else None
        self.accesses = view.accesses([g])
        self.readers: dict[tuple, list[int]] = {}
        self.writers: dict[tuple, list[int]] = {}
        self.lines: dict[tuple, set] = {}
        self.selected: dict[tuple, set] = {}
        self.held: dict[tuple, object] = {}   # threadgroup-memory copy -> value after its phase
        # With threads or a phase selected, a cell shows what the selection read or wrote
        # there (another thread may change it later in the same phase).
        self.seen: dict[tuple, object] = {}
        narrowed = self.selection is not None and (self.selection.threads is not None
                                                   or self.selection.phase is not None)
        shared = {name: view.is_threadgroup_memory(name) for name in view.buffers}
        for a in self.accesses:  # (the hot loop of a large frame: kept plain)
            in_shared = shared[a.buffer]
            copy = (a.buffer, a.element, a.phase if in_shared else None)
            if in_shared and a.value is not None:
                self.held[copy] = a.value
            writes = a.kind != "read"
            who = (self.writers if writes else self.readers).setdefault(copy, [])
            if a.local not in who:
                who.append(a.local)
            lines = self.lines.get(copy)
            if lines is None:
                lines = self.lines[copy] = set()
            lines.add(a.line)
            if self.selection and self.selection.covers(a):
                if narrowed and a.value is not None:
                    self.seen[copy] = a.value
                self.selected.setdefault(copy, set()).add("write" if writes else "read")
        self.written_anywhere = view.written_elements()
        # Sources per write bound the arrows: far too many are not worth building, as only
        # the selected threads' would be drawn.
        bound = sum(len(a.sources) for a in self.accesses if a.writes)
        if bound > 4 * MAX_PATHS:
            chosen = self.selection.threads if self.selection else None
            self.edges = view.edges(g, chosen) if chosen else []
            self.path_count = self.hidden_paths = bound
        else:
            self.edges = view.edges(g)
            self.path_count = sum(len(e.source_phases) for e in self.edges)
            self.hidden_paths = self.path_count if self.path_count > MAX_PATHS else 0
        self.flags, self.ghost_kinds = self._findings()
        self.rows = self._layout()
        self._grids = {(grid.buffer, grid.phase): grid for row in self.rows for grid in row}

    # findings: which drawn copies (and which cells past the end) each diagnostic names
    def _findings(self) -> tuple[dict[tuple, list[str]], dict[str, dict[int, list[str]]]]:
        view, g = self.view, self.g
        flags: dict[tuple, list[str]] = {}
        ghosts: dict[str, dict[int, list[str]]] = {}
        gx, gy, _ = view.grid
        for d in view.report.diagnostics:
            threads = {z * gx * gy + y * gx + x for x, y, z in d.threads}
            ours = not threads or any(view.threadgroup_of(t) == g for t in threads)
            for buffer, owner, element in d.cells:
                if buffer not in view.buffers or owner not in (-1, g):
                    continue
                if owner == -1 and not ours:
                    continue
                size = math.prod(view.buffers[buffer]["shape"])
                if not 0 <= element < size:
                    kinds = ghosts.setdefault(buffer, {}).setdefault(element, [])
                    kinds.append(d.kind)
                    continue
                if view.is_threadgroup_memory(buffer):
                    touched = [a.phase for a in self.accesses
                               if (a.buffer, a.element) == (buffer, element)]
                    at_line = [a.phase for a in self.accesses
                               if (a.buffer, a.element) == (buffer, element)
                               and a.line == d.line]
                    phases = sorted(set(at_line or touched)) or view.phases(g, buffer)[:1]
                else:
                    phases = [None]
                for p in phases:
                    kinds = flags.setdefault((buffer, element, p), [])
                    if d.kind not in kinds:
                        kinds.append(d.kind)
        return flags, ghosts

    def _layout(self) -> list[list[_Grid]]:
        view, g, ghosts = self.view, self.g, self.ghost_kinds
        # Time runs down the frame: inputs, threadgroup memory phase by phase (the arrays a
        # phase touched side by side), outputs.
        roles: dict[str, list[tuple[str, int | None]]] = {"input": [], "output": []}
        by_phase: dict[int, list[tuple[str, int | None]]] = {}
        for name, b in view.buffers.items():
            if b["space"] == "threadgroup":
                for p in view.phases(g, name):
                    by_phase.setdefault(p, []).append((name, p))
            else:
                roles.setdefault(b["role"], []).append((name, None))
        specs = [("input", roles["input"]),
                 *(("phase", by_phase[p]) for p in sorted(by_phase)),
                 ("output", roles["output"])]
        specs = [(kind, spec) for kind, spec in specs if spec]
        windows = self._windows() if frame_cells(view, g) > CROP_CELLS else {}
        rows: list[tuple[str, list[_Grid]]] = []
        for kind, spec in specs:
            row = []
            for name, phase in spec:
                b = view.buffers[name]
                r, c = _grid_shape(b["shape"])
                dims = "×".join(str(d) for d in b["shape"]) or "scalar"
                if phase is None:
                    label = f"{name}  ({b['role']}, {b['type']}[{dims}])"
                else:
                    label = f"{name}  (threadgroup, phase {phase})"
                gh = sorted(ghosts.get(name, {})) if phase is None else []
                grid = _Grid(name, phase, tuple(b["shape"]), r, c, CELL_MAX, label, gh)
                window = windows.get((name, phase))
                if window is not None and (window[1] - window[0], window[3] - window[2]) != (r, c):
                    grid.r0, grid.rows, grid.c0, grid.cols = (
                        window[0], window[1] - window[0], window[2], window[3] - window[2])
                    end = min(math.prod(b["shape"]), (grid.r0 + grid.rows) * c)
                    shown = (f"[{grid.r0}:{grid.r0 + grid.rows}, {grid.c0}:{grid.c0 + grid.cols}]"
                             if grid.two_d else f"[{grid.r0 * c}:{end}]")
                    grid.label += f" {shown} shown"
                row.append(grid)
            rows.append((kind, row))
        rows = self._within_budget(rows)
        widest = max((grid.cols for _, row in rows for grid in row), default=1)
        cs = max(CELL_MIN, min(CELL_MAX, math.floor(ROW_WIDTH / max(1, widest))))
        for _, row in rows:
            for grid in row:
                grid.cs = cs
        self.barriers: list[tuple[float, float | None, float, int, int]] = []
        top = FRAME_PAD + 22 + self._strip_size()[1] + 14
        if any(grid.two_d for _, row in rows for grid in row):
            right, bottom = self._place_columns(rows, top)
        else:
            right, bottom = self._place_rows(rows, top)
        self.width = max(right + FRAME_PAD, self._strip_size()[0] + 2 * FRAME_PAD, 260.0)
        self.height = (bottom + FRAME_PAD + 4 + (18.0 if self.hidden_paths else 0.0)
                       + (18.0 if self.phases_left_out else 0.0))
        return [row for _, row in rows]

    def _within_budget(self, rows: list[tuple[str, list[_Grid]]]
                       ) -> list[tuple[str, list[_Grid]]]:
        """Threadgroup-memory phases in order while the frame's cells stay within
        `FRAME_CELLS`; the later ones are left to the explorer (and said so)."""
        self.phases_left_out: list[int] = []
        used = sum(grid.rows * grid.cols for kind, row in rows if kind != "phase"
                   for grid in row)
        wanted = self.selection.phase if self.selection else None
        kept = []
        for kind, row in rows:
            if kind == "phase" and row[0].phase != wanted:
                cells = sum(grid.rows * grid.cols for grid in row)
                if self.phases_left_out or (used + cells > FRAME_CELLS
                                            and any(k == "phase" for k, _ in kept)):
                    self.phases_left_out.append(row[0].phase)
                    continue
                used += cells
            kept.append((kind, row))
        return kept

    def _windows(self) -> dict[tuple[str, int | None], tuple[int, int, int, int]]:
        """Per drawn copy (buffer, phase), the rows [r0, r1) and columns [c0, c1) that hold the
        cells this threadgroup touched or a finding names (1-D buffers keep whole rows)."""
        touched: dict[tuple[str, int | None], list[int]] = {}
        for buffer, element, phase in [*self.readers, *self.writers, *self.flags]:
            touched.setdefault((buffer, phase), []).append(element)
        windows = {}
        for (buffer, phase), elements in touched.items():
            shape = tuple(self.view.buffers[buffer]["shape"])
            rows, cols = _grid_shape(shape)
            inside = [e for e in elements if 0 <= e < math.prod(shape)]
            if not inside or not cols:
                continue
            r = [e // cols for e in inside]
            two_d = len(shape) > 1 and math.prod(shape[:-1]) > 1
            c = [e % cols for e in inside] if two_d else [0, cols - 1]
            # At most WINDOW_MAX rows and columns, from the first touched one.
            windows[(buffer, phase)] = (min(r), min(max(r) + 1, min(r) + WINDOW_MAX),
                                        min(c), min(max(c) + 1, min(c) + WINDOW_MAX))
        return windows

    def _place_rows(self, rows: list[tuple[str, list[_Grid]]], y: float) -> tuple[float, float]:
        """1-D buffers: everything in one column, time running down (inputs, threadgroup
        memory phase by phase, outputs); a barrier is a line across the frame."""
        right, last = 0.0, None
        for kind, row in rows:
            if kind == "phase" and last is not None:
                self.barriers.append((FRAME_PAD, None, y - ROW_GAP / 2, last, row[0].phase))
            last = row[0].phase if kind == "phase" else last
            x = FRAME_PAD
            for i, grid in enumerate(row):
                x += GAP if i else 0.0
                grid.x, grid.y = x, y
                x += grid.width
            right = max(right, x)
            y += max(gr.height for gr in row) + ROW_GAP
        return right, y - ROW_GAP

    def _place_columns(self, rows: list[tuple[str, list[_Grid]]], top: float
                       ) -> tuple[float, float]:
        """2-D buffers are tall: inputs in a left column, threadgroup memory phase by phase
        in the middle (time running down), outputs on the right; arrows flow rightwards."""
        x, bottom = FRAME_PAD, top
        for kind in ("input", "phase", "output"):
            # a phase's arrays sit side by side; inputs and outputs one under the other
            lines = ([row for k, row in rows if k == "phase"] if kind == "phase" else
                     [[grid] for k, row in rows if k == kind for grid in row])
            if not lines:
                continue
            y, width, first = top, 0.0, len(self.barriers)
            for i, line in enumerate(lines):
                if kind == "phase" and i:
                    self.barriers.append((x, 0.0, y - ROW_GAP / 2, lines[i - 1][0].phase,
                                          line[0].phase))
                gx = x
                for j, grid in enumerate(line):
                    gx += GAP if j else 0.0
                    grid.x, grid.y = gx, y
                    gx += grid.width
                width = max(width, gx - x)
                y += max(grid.height for grid in line) + ROW_GAP
            self.barriers[first:] = [(bx, width, by, p, q)
                                     for bx, _, by, p, q in self.barriers[first:]]
            bottom = max(bottom, y - ROW_GAP)
            x += width + COLUMN_GAP
        return x - COLUMN_GAP, bottom

    def _strip_geometry(self) -> tuple[int, int, float, float]:
        """Threads, markers per row, horizontal and vertical step of the thread strip."""
        ax, ay, az = self.view.tg_size(self.g)
        n = ax * ay * az
        per_row = min(ax, WRAP) if ay * az == 1 else ax
        step = 16.0 if n <= 64 else 11.0
        return n, per_row, step, step + (8.0 if n <= 64 else 0.0)  # room for index labels

    def _strip_size(self) -> tuple[float, float]:
        n, per_row, step, row_step = self._strip_geometry()
        rows = math.ceil(n / per_row) if per_row else 0
        return STRIP_LEFT + per_row * step, rows * row_step

    # --- rendering ---------------------------------------------------------------------------
    def render(self, svg: Svg, x0: float, y0: float) -> None:
        view, g = self.view, self.g
        for row in self.rows:
            for grid in row:
                grid.x += x0
                grid.y += y0
        pos, size = view.tg_position(g), view.tg_size(g)
        svg.open("g", class_="frame", data_threadgroup=g,
                 data_position=" ".join(map(str, pos)))
        svg.el("rect", x=x0, y=y0, width=self.width, height=self.height, rx=8.0, fill="none",
               stroke="#9a9a9a", stroke_width=1.2)
        first = view.threads_of(g)[:1]
        count = math.prod(size)
        span = (f"threads {first[0]}–{first[0] + count - 1}" if count > 1
                else f"thread {first[0]}" if first else "no threads")
        heading = f"threadgroup {pos}"
        svg.text(x0 + FRAME_PAD, y0 + FRAME_PAD + 12, heading, 13, font_weight="bold",
                 fill=style.INK)
        svg.text(x0 + FRAME_PAD + len(heading) * 8.4 + 10, y0 + FRAME_PAD + 12,
                 f"size {size} · {span} (linear ids)" if size != view.tg else span, 11,
                 fill=style.MUTED)
        self._render_strip(svg, x0 + FRAME_PAD, y0 + FRAME_PAD + 22)
        for x, width, y, before, after in self.barriers:
            right = x0 + (self.width - FRAME_PAD if width is None else x + width)
            self._render_barrier(svg, x0 + x, right, y0 + y, before, after)
        grids = [grid for row in self.rows for grid in row]
        for grid in grids:
            self._render_grid(svg, grid)
        self._render_arrows(svg, x0, y0)
        if self.phases_left_out:
            left_out = self.phases_left_out
            bottom = y0 + self.height - FRAME_PAD - (18.0 if self.hidden_paths else 0.0)
            svg.text(x0 + FRAME_PAD, bottom, f"threadgroup memory in phases {left_out[0]}–"
                     f"{left_out[-1]} is not drawn (too many cells): the explorer's phase "
                     "choice shows each one", 11, fill=style.MUTED, class_="phases-omitted",
                     data_phases=" ".join(map(str, left_out)))
        for grid in grids:
            self._render_labels(svg, grid)
        self._render_flags(svg)
        svg.close("g")

    def _render_strip(self, svg: Svg, x: float, y: float) -> None:
        n, per_row, step, row_step = self._strip_geometry()
        threads = self.view.threads_of(self.g)
        r = 5.0 if n <= 64 else 3.6
        svg.open("g", class_="threads")
        svg.text(x, y + 10, "threads", 11, fill=style.MUTED)
        for local in range(n):
            row, col = divmod(local, per_row)
            cx, cy = x + STRIP_LEFT + col * step + step / 2, y + row * row_step + step / 2
            if col == 0 and n > 32 and local % 32 == 0:
                svg.text(x + STRIP_LEFT - 4, cy + 3, f"SIMD-group {simd_group(local)}", 8,
                         fill=style.MUTED, text_anchor="end")
            focus = self.selection and (self.selection.threads is None
                                        or local in self.selection.threads)
            if focus:
                svg.el("circle", cx=cx, cy=cy, r=r + 2.5, fill="none", stroke=style.READ_FOCUS,
                       stroke_width=1.5, class_="selected-thread")
            style.marker(svg, cx, cy, r, local, data_thread=threads[local])
            if n <= 64:
                svg.text(cx, cy + r + 8, str(local), 7, fill=style.MUTED, text_anchor="middle")
        svg.close("g")

    def _render_barrier(self, svg: Svg, left: float, right: float, y: float, before: int,
                        after: int) -> None:
        """A dashed line between the rows of two barrier phases."""
        n = after - before
        svg.el("line", x1=left, y1=y, x2=right, y2=y, stroke=style.MUTED, stroke_width=1.0,
               stroke_dasharray="5 4", class_="barrier", data_after_phase=before)
        svg.text(right, y - 3, "threadgroup_barrier" if n == 1 else f"{n} barriers", 9,
                 fill=style.MUTED, text_anchor="end")

    def _render_grid(self, svg: Svg, grid: _Grid) -> None:
        view, g, cs = self.view, self.g, grid.cs
        b = view.buffers[grid.buffer]
        values = self.values.get(grid.buffer)
        written = self.written_anywhere.get(grid.buffer, set()) if b["role"] == "output" else None
        # Values' font and the cells' stroke width are inherited from the buffer's group.
        svg.open("g", class_="buffer", data_buffer=grid.buffer, data_role=b["role"],
                 data_phase=grid.phase, data_threadgroup=g,
                 data_shape=" ".join(map(str, grid.shape)), font_family=MONO,
                 stroke_width=0.8)
        value_size = min(10.0, cs * 0.34)
        # The hot loop of a diagram: elements written as text directly (same output as Svg.el).
        add = svg.parts.append
        size, phase = num(cs), "" if grid.phase is None else f' data-phase="{grid.phase}"'
        wrong = self.wrong.get(grid.buffer, {}) if grid.phase is None else {}
        for e in grid.elements():
            copy = (grid.buffer, e, grid.phase)
            readers, writers = self.readers.get(copy, []), self.writers.get(copy, [])
            x, y = grid.origin(e)
            index = logical_index(grid.shape, e)
            expected = wrong.get(e)
            touched = bool(readers or writers)
            klass = "cell" + ("" if touched else " untouched") + \
                (" read" if readers else "") + (" written" if writers else "") + \
                (" wrong" if expected is not None else "")
            extra = "" if expected is None else f' data-expected="{format_value(expected)}"'
            add(f'<g class="{klass}" data-buffer="{grid.buffer}" data-element="{e}" '
                f'data-index="{",".join(map(str, index))}" data-threadgroup="{g}"{phase}{extra}>')
            fill = (style.thread_tint(writers[0]) if writers else
                    "white" if readers else style.UNTOUCHED_FILL)
            add(f'<rect x="{num(x)}" y="{num(y)}" width="{size}" height="{size}" fill="{fill}" '
                f'stroke="{style.MUTED if touched else style.FAINT}"/>')
            if copy in self.seen:
                text = format_value(self.seen[copy])
            elif b["space"] == "threadgroup":
                held = self.held.get(copy)
                text = format_value(held) if held is not None else ""
            else:
                text = format_value(values[e]) if values is not None and (
                    written is None or e in written or expected is not None) else ""
            # monospace glyphs are about 0.6 em wide: shrink to fit, or leave to the tooltip
            fit = min(value_size, (cs - 3) / (0.6 * max(1, len(text))))
            shown = bool(text) and cs >= 15 and fit >= 5.5
            if shown:
                add(f'<text x="{num(x + cs / 2)}" y="{num(y + cs * 0.5 + fit * 0.2)}" '
                    f'font-size="{num(fit)}" text-anchor="middle" '
                    f'class="value" fill="{style.INK if touched else style.MUTED}">'
                    f'{escape(text)}</text>')
            self._render_markers(svg, x, y, cs, readers, writers, shown)
            tooltip = self._tooltip(grid, e, index, text, readers, writers)
            if expected is not None:
                self._render_wrong(svg, x, y, cs, format_value(expected))
                tooltip += f" · wrong: expected {format_value(expected)}"
            add(f"<title>{escape(tooltip)}</title></g>")
        for e in grid.ghosts:
            self._render_ghost(svg, grid, e)
        svg.close("g")

    def _render_labels(self, svg: Svg, grid: _Grid) -> None:
        """The grid's name, its findings and its indices, over the arrows (with a halo)."""
        svg.open("g", class_="labels", stroke="white", stroke_width=3.0, paint_order="stroke",
                 stroke_linejoin="round")
        svg.text(grid.x, grid.y + 11, grid.label, 11, fill=style.INK, class_="buffer-label")
        kinds = sorted({k for (bn, _, p), ks in self.flags.items()
                        if bn == grid.buffer and p == grid.phase for k in ks}
                       | {k for ks in self.ghost_kinds.get(grid.buffer, {}).values() for k in ks
                          if grid.ghosts})
        if kinds:
            svg.text(grid.x + len(grid.label) * 6.6 + 8, grid.y + 11, "⚠ " + ", ".join(kinds),
                     11, fill=style.ERROR, font_weight="bold", class_="diagnostic-label")
        cs = grid.cs
        first = grid.r0 * grid.full_cols + grid.c0  # the window's first element
        if grid.two_d and cs >= 12:
            for c in range(grid.c0, grid.c0 + grid.cols):
                x, y = grid.origin(grid.r0 * grid.full_cols + c)
                svg.text(x + cs / 2, y - 3, str(c), 8, fill=style.MUTED, text_anchor="middle")
        if grid.rows > 1 and cs >= 12:
            for r in range(grid.r0, grid.r0 + grid.rows):
                x, y = grid.origin(r * grid.full_cols + grid.c0)
                label = str(r) if grid.two_d else str(r * grid.full_cols)
                svg.text(x - 3, y + cs / 2 + 3, label, 8, fill=style.MUTED, text_anchor="end")
        if grid.bottom_indices:
            for e in range(first, first + grid.cols):
                x, y = grid.origin(e)
                svg.text(x + cs / 2, y + cs + 9, str(e), 8, fill=style.MUTED,
                         text_anchor="middle")
        svg.close("g")

    @staticmethod
    def _render_wrong(svg: Svg, x: float, y: float, cs: float, expected: str) -> None:
        """A wrong output cell: a red border, and the expected value in its top-right corner
        (where it fits; the tooltip always has it)."""
        svg.el("rect", x=x + 0.6, y=y + 0.6, width=cs - 1.2, height=cs - 1.2, fill="none",
               stroke=style.ERROR, stroke_width=1.6, class_="wrong-mark")
        size = min(8.0, (cs - 2) / (0.6 * max(1, len(expected) + 1)))
        if cs >= 15 and size >= 5:
            svg.text(x + cs - 1.5, y + size, f"≠{expected}", size, font_family=MONO,
                     text_anchor="end", fill=style.ERROR, class_="expected")

    def _render_markers(self, svg: Svg, x: float, y: float, cs: float, readers: list[int],
                        writers: list[int], value_shown: bool) -> None:
        r = max(1.6, min(3.6, cs / 9))
        step = 2 * r + 1.5
        fit = max(1, int((cs - 2) // step))
        for i, local in enumerate(writers[:fit]):
            style.marker(svg, x + r + 2 + i * step, y + r + 2, r, local, outlined=True,
                         data_role="writer")
        if len(writers) > fit:
            svg.text(x + cs - 2, y + r + 4, "+", 8, fill=style.INK, text_anchor="end")
        bottom = y + cs - r - 2 if value_shown or cs < 15 else y + cs / 2
        shown = readers[:fit] if len(readers) <= fit else readers[:fit - 1]
        for i, local in enumerate(shown):
            style.marker(svg, x + r + 2 + i * step, bottom, r, local, data_role="reader")
        if len(readers) > len(shown):
            svg.text(x + cs - 1.5, bottom + 3, f"+{len(readers) - len(shown)}", 7,
                     fill=style.INK, text_anchor="end")

    def _tooltip(self, grid: _Grid, e: int, index: tuple, value: str, readers: list[int],
                 writers: list[int]) -> str:
        name = f"{grid.buffer}[{']['.join(map(str, index))}]"
        parts = [name + (f" = {value}" if value else "")]
        if grid.phase is not None:
            parts.append(f"phase {grid.phase}")
        if writers:
            parts.append("written by thread " + ", ".join(map(str, writers)))
        if readers:
            parts.append("read by thread " + ", ".join(map(str, readers)))
        lines = self.lines.get((grid.buffer, e, grid.phase), set()) - {None}
        if lines:
            parts.append("line " + ", ".join(map(str, sorted(lines))))
        return " · ".join(parts)

    def _render_ghost(self, svg: Svg, grid: _Grid, e: int) -> None:
        x, y = grid.ghost_origin(e)
        kinds = self.ghost_kinds.get(grid.buffer, {}).get(e, [])
        if e == grid.ghosts[0]:
            svg.text(grid.x, y + grid.cs / 2 + 4, "outside", 9, fill=style.ERROR)
        svg.open("g", class_="ghost-cell " + " ".join(kinds), data_buffer=grid.buffer,
                 data_element=e, data_threadgroup=self.g)
        svg.el("rect", x=x, y=y, width=grid.cs, height=grid.cs, fill="#fff5f5",
               stroke=style.ERROR, stroke_width=1.4, stroke_dasharray="3 2")
        svg.text(x + grid.cs / 2, y + grid.cs / 2 + 3, str(e), min(9.0, grid.cs * 0.35),
                 fill=style.ERROR, text_anchor="middle", font_family=MONO)
        svg.el("title", f"{grid.buffer}[{e}] is outside the buffer: {', '.join(kinds)}")
        svg.close("g")

    def _grid_of(self, buffer: str, phase: int | None) -> _Grid | None:
        return self._grids.get((buffer, phase))

    def _render_arrows(self, svg: Svg, x0: float, y0: float) -> None:
        edges = self.edges
        if self.hidden_paths:  # thousands of arrows hide the cells: keep the selected ones
            sel = self.selection
            edges = [e for e in edges if sel and sel.threads and sel.threads & e.threads]
            svg.text(x0 + FRAME_PAD, y0 + self.height - FRAME_PAD,
                     f"{'up to ' * (self.hidden_paths > 4 * MAX_PATHS)}{self.hidden_paths:,} "
                     "arrows are too many to draw: the explorer "
                     "(metalsim.viz.Explorer) shows those of one thread or SIMD-group.", 11,
                     fill=style.MUTED, class_="arrows-omitted", data_paths=self.hidden_paths)
        svg.open("g", class_="arrows")
        for edge in edges:
            self._render_edge(svg, edge)
        svg.close("g")

    def _render_edge(self, svg: Svg, edge: Edge) -> None:
        tb, te, tp = edge.target
        target = self._grid_of(tb, tp)
        phases = sorted(edge.source_phases, key=lambda p: -1 if p is None else p)
        sources = [(p, self._grid_of(edge.source[0], p)) for p in phases]
        if (target is None or not target.drawn(te)
                or any(s is None or not s.drawn(edge.source[1]) for _, s in sources)):
            return
        threads = sorted(edge.threads)
        sel = self.selection
        mine = sel is not None and (sel.threads is None or bool(sel.threads & edge.threads))

        def focus(phase: int | None) -> bool:  # a path of the selected threads and phase
            return mine and (sel.phase is None or sel.phase in (tp, phase))

        colour = style.thread_colour(threads[0])
        busy = self.path_count > 60  # busy frames: fainter, thinner arrows keep cells readable
        svg.open("g", class_="arrow" + (" selected" if any(focus(p) for p in phases) else ""),
                 data_from=f"{edge.source[0]}:{edge.source[1]}",
                 data_from_phases=" ".join("-" if p is None else str(p) for p in phases),
                 data_to=f"{tb}:{te}", data_to_phase=tp,
                 data_threads=" ".join(map(str, threads)))
        for phase, grid in sources:
            if sel is None:
                opacity, width = (0.4, 0.9) if busy else (0.75, 1.2)
            else:
                opacity, width = (0.95, 1.3) if focus(phase) else (0.1, 0.9)
            path, head = _curve(grid.box(edge.source[1]), target.box(te))
            # per-element opacity: a group opacity costs renderers an offscreen layer each
            svg.parts.append(
                f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="{width}" '
                f'stroke-opacity="{opacity}"/><polygon points="{head}" fill="{colour}" '
                f'fill-opacity="{opacity}"/>')
        svg.close("g")

    def _render_flags(self, svg: Svg) -> None:
        for (buffer, element, phase), kinds in sorted(
                self.flags.items(), key=lambda kv: (kv[0][0], -1 if kv[0][2] is None
                                                    else kv[0][2], kv[0][1])):
            grid = self._grid_of(buffer, phase)
            if grid is None or not grid.drawn(element):
                continue
            x, y = grid.origin(element)
            svg.el("rect", x=x - 1.5, y=y - 1.5, width=grid.cs + 3, height=grid.cs + 3,
                   fill="none", stroke=style.ERROR, stroke_width=2.4,
                   class_="diagnostic " + " ".join(kinds), data_buffer=buffer,
                   data_element=element, data_phase=phase, data_threadgroup=self.g)
        for (buffer, element, phase), kinds in sorted(
                self.selected.items(), key=lambda kv: (kv[0][0], -1 if kv[0][2] is None
                                                       else kv[0][2], kv[0][1])):
            grid = self._grid_of(buffer, phase)
            if grid is None or not grid.drawn(element):
                continue
            x, y = grid.origin(element)
            colour = style.WRITE_FOCUS if "write" in kinds else style.READ_FOCUS
            svg.el("rect", x=x + 0.8, y=y + 0.8, width=grid.cs - 1.6, height=grid.cs - 1.6,
                   fill="none", stroke=colour, stroke_width=2.2,
                   class_="selected " + " ".join(sorted(kinds)), data_buffer=buffer,
                   data_element=element, data_phase=phase)


def _curve(source: tuple[float, float, float, float], target: tuple[float, float, float, float]
           ) -> tuple[str, str]:
    """A cubic from a source cell to a target cell (boxes: x, y of the top-left, bottom below
    any index labels, size), and its arrowhead: downwards from the bottom of the source to
    the top of the target, or an arch between cells of one row."""
    (sx, sy, s_bottom, s_size), (tx, ty, t_bottom, t_size) = source, target
    # To the right and not level with it (a level line would hide its neighbours): leave
    # right, enter left.
    if tx > sx + s_size + 2 * t_size and abs(ty - sy) >= t_size / 2:
        start, end = (sx + s_size, sy + s_size / 2), (tx, ty + t_size / 2)
        d = (end[0] - start[0]) * 0.45
        c1, c2 = (start[0] + d, start[1]), (end[0] - d, end[1])
        return _path(start, c1, c2, end)
    sx, tx = sx + s_size / 2, tx + t_size / 2
    if abs(ty - sy) < t_size / 2:
        lift = 14 + abs(tx - sx) * 0.12
        start, end = (sx, sy), (tx, ty)
        c1, c2 = (sx, sy - lift), (tx, ty - lift)
    elif ty > sy:
        start, end = (sx, s_bottom), (tx, ty)
        d = (end[1] - start[1]) * 0.45
        c1, c2 = (sx, start[1] + d), (tx, end[1] - d)
    else:
        start, end = (sx, sy), (tx, t_bottom)
        d = (start[1] - end[1]) * 0.45
        c1, c2 = (sx, start[1] - d), (tx, end[1] + d)
    return _path(start, c1, c2, end)


def _path(start: tuple[float, float], c1: tuple[float, float], c2: tuple[float, float],
          end: tuple[float, float]) -> tuple[str, str]:
    path = (f"M{num(start[0])},{num(start[1])} C{num(c1[0])},{num(c1[1])} "
            f"{num(c2[0])},{num(c2[1])} {num(end[0])},{num(end[1])}")
    dx, dy = end[0] - c2[0], end[1] - c2[1]
    length = math.hypot(dx, dy) or 1.0
    return path, _arrowhead(end[0], end[1], dx / length, dy / length, 5.0)


def _arrowhead(x: float, y: float, ux: float, uy: float, size: float) -> str:
    bx, by = x - ux * size, y - uy * size
    px, py = -uy * size * 0.5, ux * size * 0.5
    return " ".join(f"{num(a)},{num(b)}" for a, b in
                    [(x, y), (bx + px, by + py), (bx - px, by - py)])


# --- launches without a trace -----------------------------------------------------------------

def _draw_summary(report: Report, title: str | None, budget: Mapping[str, int] | None
                  ) -> Diagram:
    """Counts and structure only: the launch was not traced (see the module docstring)."""
    svg = Svg()
    y = _draw_header(svg, report, None, (), title, budget)
    for line in ("This launch was not traced, so there are no cells or arrows: counts and "
                 "structure only.",
                 "simulate(..., trace=True) on a launch of at most 16,384 threads draws every "
                 "access."):
        svg.text(PAD, y + 12, line, 11, fill=style.MUTED, class_="summary-note")
        y += 16
    y += 10
    y = _draw_threadgroup_map(svg, report, y)
    y = _draw_traffic(svg, report, y + 10)
    return Diagram(svg.document(HEADER_WIDTH, y + PAD), HEADER_WIDTH, y + PAD)


def _draw_threadgroup_map(svg: Svg, report: Report, y: float, side: float = 300.0) -> float:
    """The threadgroups of the grid (x across, y down; z folded into rows), shaded by the
    global reads of their busiest thread; at most 64×64 tiles, each then a block of groups."""
    gx, gy, gz = report.grid
    tx, ty, tz = report.threadgroup
    nx, ny, nz = (math.ceil(g / t) if g else 0 for g, t in zip(report.grid, report.threadgroup))
    svg.text(PAD, y + 12, f"threadgroups: {nx} × {ny} × {nz}, shaded by max global reads per "
             "thread", 11, fill=style.INK)
    y += 20
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
    return y + blocks.shape[0] * tile + 22


def _draw_traffic(svg: Svg, report: Report, y: float) -> float:
    svg.text(PAD, y + 12, "buffers and traffic (bytes moved vs. touching each once)", 11,
             fill=style.INK)
    y += 18
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
