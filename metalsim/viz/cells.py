"""What the detailed threads did to each drawn cell: who read it, who wrote it, at which lines,
the value it held; read off the trace's columns (`model.Columns`) in a few array passes.

A cell is keyed by the copy it is drawn in (`Key`): (buffer, element, phase, threadgroup) for
threadgroup memory, (buffer, element, None, None) for device and constant memory. A large
threadgroup makes tens of thousands of accesses; a Python step (and objects) per access made
this the slowest part of a diagram, so only the cells get objects, not the accesses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from metalsim.viz.model import KINDS, Columns, TraceView

if TYPE_CHECKING:
    from metalsim.viz.draw import Selection

Key = tuple[str, int, int | None, int | None]   # buffer, element, phase, threadgroup (tg memory)
READ = KINDS.index("read")


@dataclass
class CellUse:
    """Per drawn cell, what the detailed threads did to it."""

    readers: dict[Key, tuple[int, ...]]   # local indices of the threads that read it, in
    #                                       first-read order
    writers: dict[Key, tuple[int, ...]]   # of those that wrote it (or did an atomic on it)
    lines: dict[Key, tuple[int, ...]]     # the source lines that touched it
    held: dict[Key, object]         # threadgroup memory: the value after its phase
    # With threads or a phase selected: what the selection last read or wrote there (another
    # thread may change it later in the same phase), and whether it read and/or wrote it.
    seen: dict[Key, object]
    selected: dict[Key, set[str]]
    focus_touched: dict[str, list[int]]   # device/constant elements the focus threadgroup
    #                                       touched, by buffer, in execution order


def cell_use(view: TraceView, groups: list[int], selection: Selection | None,
             focus_group: int) -> CellUse:
    """What the threads of `groups` did to each cell they touched."""
    c = view.columns(groups)
    trace = view.report.trace or []
    shared = np.array([view.is_threadgroup_memory(n) for n in c.names], bool)
    in_shared = shared[c.buffer]
    keys = _Keys(c, in_shared)
    reads = c.kind == READ
    valued = np.array([event.get("value") is not None for event in trace], bool)[c.event]
    held = {keys.key(k): c.value(trace, i)
            for k, i in _last_per_key(keys.ids, in_shared & valued)}
    seen: dict[Key, object] = {}
    selected: dict[Key, set[str]] = {}
    if selection is not None:
        covered = c.threadgroup == selection.threadgroup
        if selection.threads is not None:
            covered &= np.isin(c.local, np.fromiter(selection.threads, np.int64,
                                                    len(selection.threads)))
        if selection.phase is not None:
            covered &= c.phase == selection.phase
        if selection.threads is not None or selection.phase is not None:
            seen = {keys.key(k): c.value(trace, i)
                    for k, i in _last_per_key(keys.ids, covered & valued)}
        for what, mask in (("read", covered & reads), ("write", covered & ~reads)):
            for k in np.unique(keys.ids[mask]).tolist():
                selected.setdefault(keys.key(k), set()).add(what)
    focus = c.threadgroup == focus_group
    focus_touched = {c.names[b]: c.element[focus & (c.buffer == b)].tolist()
                     for b in dict.fromkeys(c.buffer[focus & ~in_shared].tolist())}
    return CellUse(readers=_distinct_per_key(keys, c.local, reads),
                   writers=_distinct_per_key(keys, c.local, ~reads),
                   lines=_distinct_per_key(keys, c.line, c.line >= 0), held=held, seen=seen,
                   selected=selected, focus_touched=focus_touched)


class _Keys:
    """Each entry's cell as a small integer id, and the `Key` of each id."""

    def __init__(self, c: Columns, in_shared: np.ndarray) -> None:
        phase = np.where(in_shared, c.phase, -1)
        group = np.where(in_shared, c.threadgroup, -1)
        order = np.lexsort((c.element, phase, group, c.buffer))
        b, e, p, g = c.buffer[order], c.element[order], phase[order], group[order]
        new = np.ones(order.size, bool)
        new[1:] = (b[1:] != b[:-1]) | (e[1:] != e[:-1]) | (p[1:] != p[:-1]) | (g[1:] != g[:-1])
        self.ids = np.empty(order.size, np.int64)
        self.ids[order] = np.cumsum(new) - 1
        names = c.names
        self._keys = [(names[bi], ei, None if pi < 0 else pi, None if gi < 0 else gi)
                      for bi, ei, pi, gi in zip(b[new].tolist(), e[new].tolist(),
                                                p[new].tolist(), g[new].tolist())]

    def key(self, k: int) -> Key:
        return self._keys[k]


def _last_per_key(ids: np.ndarray, mask: np.ndarray) -> list[tuple[int, int]]:
    """(key id, index of its last entry) for the keys of the entries in `mask`."""
    chosen = np.flatnonzero(mask)
    found, last = np.unique(ids[chosen][::-1], return_index=True)
    return list(zip(found.tolist(), chosen[chosen.size - 1 - last].tolist()))


def _distinct_per_key(keys: _Keys, values: np.ndarray, mask: np.ndarray) -> dict[Key, tuple]:
    """Per key of the entries in `mask` (in order of first appearance), its entries' distinct
    `values` in order of first appearance. Equal tuples are shared: thousands of cells have
    a few distinct readers (fewer objects for the garbage collector to walk)."""
    chosen = np.flatnonzero(mask)
    k, v = keys.ids[chosen], values[chosen]
    by_pair = np.lexsort((v, k))     # stable: each pair's first entry leads its run
    first = np.ones(by_pair.size, bool)
    first[1:] = (k[by_pair][1:] != k[by_pair][:-1]) | (v[by_pair][1:] != v[by_pair][:-1])
    kept = np.sort(by_pair[first])   # each (key, value) once, at its first appearance
    k, v = k[kept], v[kept]
    by_key = np.argsort(k, kind="stable")
    k, v = k[by_key], v[by_key]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]]) if k.size else np.empty(0, np.int64)
    ends = [*starts[1:].tolist(), k.size]
    # Keys in order of their first appearance: the first entry of each run.
    appearance = np.argsort(by_key[starts], kind="stable").tolist()
    values_list, key_list, starts_list = v.tolist(), k.tolist(), starts.tolist()
    distinct: dict[tuple, tuple] = {}
    out = {}
    for run in appearance:
        start = starts_list[run]
        found = tuple(values_list[start:ends[run]])
        out[keys.key(key_list[start])] = distinct.setdefault(found, found)
    return out
