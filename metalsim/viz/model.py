"""What a traced run did, arranged for drawing: threadgroups, per-lane accesses, provenance edges.

Everything here is read off `report.trace` (and `report.buffers`, `report.diagnostics`); the
kernel's source is never looked at. Terms used by the diagram and the explorer:

- *phase*: the number of threadgroup barriers the threadgroup had passed (the trace's `epoch`).
  Threadgroup memory is drawn once per phase in which it was touched.
- *copy*: where a cell is drawn in a threadgroup's frame: `(buffer, element, phase)`, with phase
  None for device/constant buffers (drawn once per frame).
- *edge*: provenance; the value written to a target copy came from a source cell. One edge per
  (source cell, target copy) of a frame; `phases` says which copies of a threadgroup-memory source
  the writing threads read it from. Edges from a copy to itself (`out[i] += ...`) are left out,
  and so are sources that are not drawn (`_shape` metadata, 0-d inputs).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from metalsim.report import Report

SIMD_WIDTH = 32

Copy = tuple[str, int, int | None]  # (buffer, element, phase or None)
KINDS = ("read", "write", "atomic")   # `Columns.kind` indexes this
NOTHING: frozenset = frozenset()


@dataclass(slots=True)
class Access:
    """One thread's access to one cell (a lane of a trace event), as the explorer lists them
    (drawing reads `Columns`); read-only by convention (not frozen: a large threadgroup has
    tens of thousands, and frozen dataclasses are slow to build)."""

    kind: str                 # "read", "write" or "atomic"
    buffer: str
    space: str                # "device", "constant" or "threadgroup"
    thread: int               # linear id in the grid
    local: int                # linear index within the threadgroup
    threadgroup: int          # linear id of the threadgroup
    element: int
    phase: int
    line: int | None
    section: str | None
    sources: frozenset = frozenset()   # for writes: cells (buffer, threadgroup or -1, element)
    order: int = 0            # index of the trace event (execution order)
    value: object = None      # the cell's value right after the access (a vector's components)
    outside: bool = False     # past the end of the buffer: reported, not performed

    @property
    def writes(self) -> bool:
        return self.kind in ("write", "atomic")


@dataclass(slots=True)
class Edge:
    """Provenance in one frame: `source` (buffer, element) flowed into `target` (a copy)."""

    source: tuple[str, int]
    target: Copy
    group: int                               # the threadgroup whose frame it is drawn in
    source_phases: frozenset = frozenset()   # {None} for device/constant sources
    threads: frozenset = frozenset()         # local indices of the writing threads


@dataclass(frozen=True, eq=False)
class Columns:
    """Accesses to drawn buffers, one entry per lane of a trace event, in execution order, as
    columns: a large threadgroup makes tens of thousands, and an object each made drawing
    slow (the garbage collector walking them as much as building them)."""

    event: np.ndarray        # index of the trace event (execution order)
    lane: np.ndarray         # position among the event's lanes (its value's row)
    thread: np.ndarray       # linear id in the grid
    local: np.ndarray        # linear index within the threadgroup
    threadgroup: np.ndarray
    element: np.ndarray
    phase: np.ndarray
    kind: np.ndarray         # index into KINDS
    buffer: np.ndarray       # index into `names`
    line: np.ndarray         # source line, -1 where the trace has none
    names: tuple[str, ...]
    sources: list[frozenset]  # for writes: cells (buffer, threadgroup or -1, element)

    @staticmethod
    def merged(parts: list[Columns]) -> Columns:
        """Several threadgroups' columns as one, in execution order."""
        if len(parts) == 1:
            return parts[0]
        event = np.concatenate([p.event for p in parts])
        order = np.argsort(event, kind="stable")
        arrays = {name: np.concatenate([getattr(p, name) for p in parts])[order]
                  for name in ("event", "lane", "thread", "local", "threadgroup", "element",
                               "phase", "kind", "buffer", "line")}
        sources = [s for p in parts for s in p.sources]
        return Columns(names=parts[0].names, sources=[sources[i] for i in order.tolist()],
                       **arrays)

    def __len__(self) -> int:
        return self.event.size

    @property
    def writes(self) -> np.ndarray:
        """Which entries write (a write or an atomic)."""
        return self.kind != 0

    def value(self, trace: list[dict], i: int) -> object:
        """Entry `i`'s cell value right after the access (None where the trace has none)."""
        values = trace[self.event[i]].get("value")
        return None if values is None else values[self.lane[i]]


class TraceView:
    """Threadgroup geometry of a launch, and its trace lane by lane for chosen threadgroups."""

    def __init__(self, report: Report) -> None:
        self.report = report
        self.grid = tuple(report.grid)
        self.tg = tuple(report.threadgroup)
        self.tg_grid = tuple(math.ceil(g / t) if g else 0 for g, t in zip(self.grid, self.tg))
        self.threadgroup_count = math.prod(self.tg_grid)
        self.buffers = report.buffers
        self._cache: dict[int, Columns] = {}

    # --- geometry ------------------------------------------------------------------------
    def tg_position(self, g: int) -> tuple[int, int, int]:
        nx, ny, _ = self.tg_grid
        return g % nx, (g // nx) % ny, g // (nx * ny)

    def tg_size(self, g: int) -> tuple[int, int, int]:
        """The real size of threadgroup `g` (edge threadgroups are partial)."""
        pos = self.tg_position(g)
        return tuple(min(t, n - p * t) for t, n, p in zip(self.tg, self.grid, pos))

    def thread_position(self, thread: int) -> tuple[int, int, int]:
        gx, gy, _ = self.grid
        return thread % gx, (thread // gx) % gy, thread // (gx * gy)

    def threadgroup_of(self, thread: int) -> int:
        nx, ny, _ = self.tg_grid
        x, y, z = self.thread_position(thread)
        return (z // self.tg[2]) * nx * ny + (y // self.tg[1]) * nx + x // self.tg[0]

    def threads_of(self, g: int) -> list[int]:
        """Linear thread ids of threadgroup `g`, in local linear order (x fastest)."""
        (px, py, pz), (ax, ay, az) = self.tg_position(g), self.tg_size(g)
        gx, gy, _ = self.grid
        x0, y0, z0 = px * self.tg[0], py * self.tg[1], pz * self.tg[2]
        return [(z0 + z) * gx * gy + (y0 + y) * gx + x0 + x
                for z in range(az) for y in range(ay) for x in range(ax)]

    # --- accesses --------------------------------------------------------------------------
    def columns(self, groups: Iterable[int]) -> Columns:
        """Every access by threads of `groups` to a drawn buffer, in execution order, as
        columns."""
        groups = sorted(set(groups))
        for g in groups:
            if g not in self._cache:
                self._cache[g] = self._expand(g)
        return Columns.merged([self._cache[g] for g in groups])

    def accesses(self, groups: Iterable[int], chosen: np.ndarray | None = None
                 ) -> list[Access]:
        """Every access by threads of `groups` to a drawn buffer, in execution order, one
        object each (for listing; drawing reads `columns`); `chosen`: only the entries of
        `columns(groups)` it marks."""
        c = self.columns(groups)
        trace, names = self.report.trace or (), c.names
        picked = np.arange(len(c)) if chosen is None else np.flatnonzero(chosen)
        out = []
        for i, event, thread, local, group, element, phase in zip(
                picked.tolist(), c.event[picked].tolist(), c.thread[picked].tolist(),
                c.local[picked].tolist(), c.threadgroup[picked].tolist(),
                c.element[picked].tolist(), c.phase[picked].tolist()):
            e = trace[event]
            out.append(Access(e["kind"], names[c.buffer[i]], e["space"], thread, local, group,
                              element, phase, e["line"], e["section"], c.sources[i], event,
                              c.value(trace, i), e.get("outside", False)))
        return out

    def _expand(self, g: int) -> Columns:
        threads = np.array(self.threads_of(g), np.int64)   # ascending: local order
        names = tuple(self.buffers)
        code = {name: i for i, name in enumerate(names)}
        parts: dict[str, list] = {k: [] for k in ("event", "lane", "thread", "element",
                                                  "phase", "kind", "buffer", "line")}
        sources: list[frozenset] = []
        for order, event in enumerate(self.report.trace or ()):
            if event["buffer"] not in code:
                continue  # metadata (`a_shape`) and 0-d inputs are not drawn
            mask = event["threadgroup"] == g
            if mask.all():   # (a run traced for this threadgroup only: no index arrays)
                hit, n = slice(None), mask.size
            else:
                hit = np.flatnonzero(mask)
                n = hit.size
                if n == 0:
                    continue
            parts["event"].append(np.full(n, order, np.int64))
            parts["lane"].append(np.arange(mask.size)[hit])
            parts["thread"].append(event["thread"][hit])
            parts["element"].append(event["element"][hit])
            parts["phase"].append(event["epoch"][hit])
            parts["kind"].append(np.full(n, KINDS.index(event["kind"]), np.int8))
            parts["buffer"].append(np.full(n, code[event["buffer"]], np.int64))
            parts["line"].append(np.full(n, -1 if event["line"] is None else event["line"],
                                         np.int64))
            lane_sources = event.get("sources")
            if lane_sources is None:
                sources.extend([NOTHING] * n)
            else:
                sources.extend(lane_sources if isinstance(hit, slice)
                               else [lane_sources[k] for k in hit.tolist()])
        cols = {k: (np.concatenate(v).astype(np.int64, copy=False) if k != "kind"
                    else np.concatenate(v)) if v else
                np.empty(0, np.int8 if k == "kind" else np.int64) for k, v in parts.items()}
        thread = cols.pop("thread")
        return Columns(thread=thread, local=np.searchsorted(threads, thread),
                       threadgroup=np.full(thread.size, g, np.int64), names=names,
                       sources=sources, **cols)

    def is_threadgroup_memory(self, buffer: str) -> bool:
        return self.buffers[buffer]["space"] == "threadgroup"

    def edges(self, g: int, threads: frozenset[int] | None = None) -> list[Edge]:
        """The provenance edges of threadgroup `g`'s frame (of its threads `threads`, local
        indices; None: all), in a stable order."""
        c = self.columns([g])
        names = c.names
        code = {name: i for i, name in enumerate(names)}
        in_shared = [self.is_threadgroup_memory(n) for n in names]   # (plain: read per pair)
        shared = np.array(in_shared, bool)
        keep = (np.ones(len(c), bool) if threads is None
                else np.isin(c.local, np.fromiter(threads, np.int64, len(threads))))
        n_names, n_locals = len(names), int(c.local.max(initial=0)) + 1
        read_phases = _read_phases(c, keep & (c.kind != KINDS.index("write"))
                                   & shared[c.buffer], n_locals)
        # Phase and thread sets, sources and targets are shared between edges (a few
        # distinct ones among thousands of edges), and edges are found by a number: fewer
        # objects, which the garbage collector would walk.
        phase_sets: dict[tuple, frozenset] = {}
        thread_sets: dict[int, frozenset] = {}
        source_cells: dict[int, tuple[str, int]] = {}
        global_phases = frozenset({None})
        edges: dict[int, Edge] = {}
        writes = np.flatnonzero(keep & c.writes)
        written = c.element[writes]
        lowest = int(written.min(initial=0))
        span, n_phases = int(written.max(initial=0)) - lowest + 1, int(c.phase.max(initial=0)) + 2
        sources = c.sources
        targets = n_names * n_phases * span   # distinct target ids
        for i, local, phase, buffer_code, target_element in zip(
                writes.tolist(), c.local[writes].tolist(), c.phase[writes].tolist(),
                c.buffer[writes].tolist(), c.element[writes].tolist()):
            target_buffer = names[buffer_code]
            target_phase = phase if in_shared[buffer_code] else None
            target = (target_buffer, target_element, target_phase)
            # (target copy, then source cell: a unique number for the pair)
            target_id = ((buffer_code * n_phases + (0 if target_phase is None else phase + 1))
                         * span + target_element - lowest)
            threads_ = thread_sets.get(local)
            if threads_ is None:
                threads_ = thread_sets[local] = frozenset((local,))
            for buffer, owner, element in sources[i]:
                source_code = code.get(buffer)
                if source_code is None or owner not in (-1, g):
                    continue
                source_id = element * n_names + source_code
                if in_shared[source_code]:
                    # The copies of the source this thread read, up to the write.
                    read = read_phases.get(source_id * n_locals + local, ())
                    if not read or read[-1] > phase:   # (else every read came first)
                        read = read[:bisect.bisect_right(read, phase)] or (phase,)
                    phases = phase_sets.get(read)
                    if phases is None:
                        phases = phase_sets[read] = frozenset(read)
                else:
                    phases = global_phases
                if buffer == target_buffer and element == target_element:
                    phases = phases - {target_phase}  # a copy feeding itself is not drawn
                    if not phases:
                        continue
                edge_id = source_id * targets + target_id
                edge = edges.get(edge_id)
                if edge is None:
                    source = source_cells.get(source_id)
                    if source is None:
                        source = source_cells[source_id] = (buffer, element)
                    edges[edge_id] = Edge(source, target, g, phases, threads_)
                else:
                    if not phases <= edge.source_phases:
                        edge.source_phases = edge.source_phases | phases
                    if local not in edge.threads:
                        edge.threads = edge.threads | threads_
        return sorted(edges.values(), key=_edge_order)

    def phases(self, g: int, buffer: str) -> list[int]:
        """The phases in which threadgroup `g` touched threadgroup buffer `buffer`."""
        c = self.columns([g])
        return np.unique(c.phase[c.buffer == c.names.index(buffer)]).tolist()

    def written_elements(self) -> dict[str, set[int]]:
        """Per buffer, the elements some thread of the whole launch wrote."""
        out: dict[str, set[int]] = {}
        for event in self.report.trace or ():
            if event["kind"] != "read" and event["buffer"] in self.buffers:
                out.setdefault(event["buffer"], set()).update(event["element"].tolist())
        return out


def _read_phases(c: Columns, chosen: np.ndarray, n_locals: int) -> dict[int, tuple[int, ...]]:
    """Per (thread, buffer, element) of the `chosen` entries, keyed `(element * len(names) +
    buffer) * n_locals + local`, the phases they fall in, ascending, without repeats."""
    local, buffer, element, phase = (c.local[chosen], c.buffer[chosen], c.element[chosen],
                                     c.phase[chosen])
    order = np.lexsort((phase, element, buffer, local))
    local, buffer, element, phase = local[order], buffer[order], element[order], phase[order]
    new_key = np.ones(local.size, bool)
    new_key[1:] = ((local[1:] != local[:-1]) | (buffer[1:] != buffer[:-1])
                   | (element[1:] != element[:-1]))
    new = new_key.copy()
    new[1:] |= phase[1:] != phase[:-1]
    starts = np.flatnonzero(new_key[new]).tolist()
    phases = phase[new].tolist()
    bounds = zip(starts, [*starts[1:], len(phases)])
    n_names = len(c.names)
    distinct: dict[tuple[int, ...], tuple[int, ...]] = {}   # shared: few distinct runs
    out = {}
    for e, b, t, (start, end) in zip(element[new_key].tolist(), buffer[new_key].tolist(),
                                     local[new_key].tolist(), bounds):
        run = tuple(phases[start:end])
        out[(e * n_names + b) * n_locals + t] = distinct.setdefault(run, run)
    return out


def _edge_order(edge: Edge) -> tuple:
    """Edges by target copy (buffer, phase, element), then source cell."""
    tb, te, tp = edge.target
    return (tb, -1 if tp is None else tp, te, *edge.source)


def logical_index(shape: tuple[int, ...], element: int) -> tuple[int, ...]:
    """The row-major index of `element` in `shape` (the flat element past the end stays flat)."""
    if not shape or not 0 <= element < math.prod(shape):
        return (element,)
    index = []
    for size in reversed(shape):   # (plain arithmetic: a tooltip per drawn cell asks)
        element, i = divmod(element, size)
        index.append(i)
    return tuple(reversed(index))


def simd_group(local: int) -> int:
    return local // SIMD_WIDTH
