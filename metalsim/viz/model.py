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

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from metalsim.report import Report

SIMD_WIDTH = 32

Copy = tuple[str, int, int | None]  # (buffer, element, phase or None)


@dataclass(slots=True)
class Access:
    """One thread's access to one cell (a lane of a trace event); read-only by convention
    (not frozen: diagrams build tens of thousands, and frozen dataclasses are slow to build)."""

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


@dataclass
class Edge:
    """Provenance in one frame: `source` (buffer, element) flowed into `target` (a copy)."""

    source: tuple[str, int]
    target: Copy
    source_phases: set = field(default_factory=set)   # {None} for device/constant sources
    threads: set = field(default_factory=set)         # local indices of the writing threads


class TraceView:
    """Threadgroup geometry of a launch, and its trace lane by lane for chosen threadgroups."""

    def __init__(self, report: Report) -> None:
        self.report = report
        self.grid = tuple(report.grid)
        self.tg = tuple(report.threadgroup)
        self.tg_grid = tuple(math.ceil(g / t) if g else 0 for g, t in zip(self.grid, self.tg))
        self.threadgroup_count = math.prod(self.tg_grid)
        self.buffers = report.buffers
        self._cache: dict[int, list[Access]] = {}

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
    def accesses(self, groups: Iterable[int]) -> list[Access]:
        """Every access by threads of `groups` to a drawn buffer, in execution order."""
        out: list[Access] = []
        groups = list(groups)
        for g in groups:
            if g not in self._cache:
                self._cache[g] = self._expand(g)
            out.extend(self._cache[g])
        if len(groups) > 1:  # each group's accesses are already in order
            out.sort(key=lambda a: a.order)
        return out

    def _expand(self, g: int) -> list[Access]:
        local_of = {t: i for i, t in enumerate(self.threads_of(g))}
        out = []
        for order, event in enumerate(self.report.trace or ()):
            if event["buffer"] not in self.buffers:
                continue  # metadata (`a_shape`) and 0-d inputs are not drawn
            hit = np.flatnonzero(event["threadgroup"] == g)
            if hit.size == 0:
                continue
            sources, values = event.get("sources"), event.get("value")
            kind, buffer, space = event["kind"], event["buffer"], event["space"]
            line, section, outside = event["line"], event["section"], event.get("outside", False)
            lanes = zip(event["thread"][hit].tolist(), event["element"][hit].tolist(),
                        event["epoch"][hit].tolist(),
                        [sources[k] for k in hit.tolist()] if sources is not None
                        else [frozenset()] * hit.size,
                        list(values[hit]) if values is not None else [None] * hit.size)
            out.extend(Access(kind, buffer, space, thread, local_of[thread], g, element, phase,
                              line, section, cells, order, value, outside)
                       for thread, element, phase, cells, value in lanes)
        return out

    def is_threadgroup_memory(self, buffer: str) -> bool:
        return self.buffers[buffer]["space"] == "threadgroup"

    def copy_of(self, a: Access) -> Copy:
        return (a.buffer, a.element, a.phase if self.is_threadgroup_memory(a.buffer) else None)

    def edges(self, g: int, threads: frozenset[int] | None = None) -> list[Edge]:
        """The provenance edges of threadgroup `g`'s frame (of its threads `threads`, local
        indices; None: all), in a stable order."""
        accesses = self.accesses([g])
        if threads is not None:
            accesses = [a for a in accesses if a.local in threads]
        # (one pass and plain lookups: a large threadgroup has tens of thousands of accesses)
        shared = {name for name in self.buffers if self.is_threadgroup_memory(name)}
        read_phases: dict[tuple[int, str, int], list[int]] = {}
        writes = []
        for a in accesses:
            if a.kind != "write":
                read_phases.setdefault((a.local, a.buffer, a.element), []).append(a.phase)
            if a.kind != "read":   # a write or an atomic (`a.writes`)
                writes.append(a)
        edges: dict[tuple, Edge] = {}
        for a in writes:
            target = self.copy_of(a)
            for buffer, owner, element in a.sources:
                if buffer not in self.buffers or owner not in (-1, g):
                    continue
                if buffer in shared:
                    # The copies of the source this thread read, up to the write.
                    phases = {p for p in read_phases.get((a.local, buffer, element), ())
                              if p <= a.phase} or {a.phase}
                else:
                    phases = {None}
                if (buffer, element) == target[:2]:
                    phases.discard(target[2])  # a copy feeding itself is not drawn
                if not phases:
                    continue
                edge = edges.get((buffer, element, target))
                if edge is None:
                    edge = edges[buffer, element, target] = Edge(source=(buffer, element),
                                                                 target=target)
                edge.source_phases |= phases
                edge.threads.add(a.local)
        return [edges[k] for k in sorted(edges, key=_edge_key)]

    def phases(self, g: int, buffer: str) -> list[int]:
        """The phases in which threadgroup `g` touched threadgroup buffer `buffer`."""
        return sorted({a.phase for a in self.accesses([g]) if a.buffer == buffer})

    def written_elements(self) -> dict[str, set[int]]:
        """Per buffer, the elements some thread of the whole launch wrote."""
        out: dict[str, set[int]] = {}
        for event in self.report.trace or ():
            if event["kind"] != "read" and event["buffer"] in self.buffers:
                out.setdefault(event["buffer"], set()).update(event["element"].tolist())
        return out


def _edge_key(key: tuple) -> tuple:
    buffer, element, (tb, te, tp) = key
    return (tb, -1 if tp is None else tp, te, buffer, element)


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
