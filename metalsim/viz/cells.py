"""What the detailed threads did to each drawn cell: who read it, who wrote it, at which lines,
the value it held; read off the trace's columns (`model.Columns`) in a few array passes.

A cell is keyed by the copy it is drawn in (`Key`): (buffer, element, phase, threadgroup) for
threadgroup memory, (buffer, element, None, None) for device and constant memory. A large
threadgroup makes tens of thousands of accesses; a Python step (and objects) per access made
this the slowest part of a diagram, so only the cells get objects, not the accesses.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

import numpy as np

from metalsim.viz.model import KINDS, Columns, TraceView

if TYPE_CHECKING:
    from metalsim.viz.draw import Selection

Key = tuple[str, int, int | None, int | None]   # buffer, element, phase, threadgroup (tg memory)
READ = KINDS.index("read")


class CellUse:
    """Per drawn cell, what the detailed threads did to it. The whole launch's cells are
    grouped once (arrays); a cell's tuples are made only when it is drawn."""

    def __init__(self, view: TraceView, groups: list[int], selection: Selection | None,
                 focus_group: int) -> None:
        c = self._columns = view.columns(groups)
        self._trace = view.report.trace or []
        shared = np.array([view.is_threadgroup_memory(n) for n in c.names], bool)
        in_shared = shared[c.buffer]
        keys = self._keys = _Keys(c, in_shared)
        reads = c.kind == READ
        valued = np.array([event.get("value") is not None for event in self._trace],
                          bool)[c.event]
        self._readers = _Grouped(keys, c.local, reads)
        self._writers = _Grouped(keys, c.local, ~reads)
        self._lines = _Grouped(keys, c.line, c.line >= 0)
        # Threadgroup memory: the entry after which a copy holds its value (end of phase).
        self._held = _last_per_key(keys, in_shared & valued)
        # With threads or a phase selected: the entry of the selection's last access to a
        # cell (another thread may change it later in the same phase), and whether the
        # selection read and/or wrote the cell.
        self._seen: dict[int, int] = {}
        self.selected: dict[Key, set[str]] = {}
        if selection is not None:
            covered = selection.covered(c)
            if selection.threads is not None or selection.phase is not None:
                self._seen = _last_per_key(keys, covered & valued)
            for what, mask in (("read", covered & reads), ("write", covered & ~reads)):
                for key in keys.keys(np.unique(keys.ids[mask]).tolist()):
                    self.selected.setdefault(key, set()).add(what)
        focus = c.threadgroup == focus_group
        # Device/constant elements the focus threadgroup touched, by buffer, ascending.
        self.focus_touched = {c.names[b]: np.unique(c.element[focus & (c.buffer == b)]).tolist()
                              for b in dict.fromkeys(c.buffer[focus & ~in_shared].tolist())}

    def cell(self, key: Key) -> int | None:
        """The id of the cell `key` (None: no drawn thread touched it); what the other
        queries take (a cell is looked up once, asked several things)."""
        return self._keys.id_of(key)

    def readers(self, cell: int | None) -> tuple[int, ...]:
        """The local indices of the threads that read the cell, in first-read order."""
        return self._readers.of(cell)

    def writers(self, cell: int | None) -> tuple[int, ...]:
        """Those that wrote it (or did an atomic on it), in first-write order."""
        return self._writers.of(cell)

    def lines(self, cell: int | None) -> tuple[int, ...]:
        """The source lines that touched it, in order of first touch."""
        return self._lines.of(cell)

    def has_seen(self, cell: int | None) -> bool:
        return cell in self._seen

    def seen(self, cell: int | None) -> object:
        """What the selection last read or wrote there (None: nothing)."""
        return self._value(self._seen, cell)

    def held(self, cell: int | None) -> object:
        """A threadgroup-memory copy's value at the end of its phase (None: not known)."""
        return self._value(self._held, cell)

    def _value(self, entries: dict[int, int], cell: int | None) -> object:
        i = entries.get(cell)
        return None if i is None else self._columns.value(self._trace, i)

    def touched(self) -> dict[tuple[str, int | None, int | None], list[int]]:
        """Per copy (buffer, phase, threadgroup), the elements its cells' threads touched,
        ascending."""
        elements = self._keys.elements
        return {copy: elements[start:end] for copy, (start, end) in self._keys.copies.items()}


class _Keys:
    """Each entry's cell as a small integer id; the `Key` of an id, and the id of a key.
    Cells are numbered by copy (buffer, threadgroup, phase), then element; a copy maps its
    elements to ids (plain integers: no tuple per cell for the garbage collector to walk)."""

    def __init__(self, c: Columns, in_shared: np.ndarray) -> None:
        phase = np.where(in_shared, c.phase, -1)
        group = np.where(in_shared, c.threadgroup, -1)
        order = np.lexsort((c.element, phase, group, c.buffer))
        b, e, p, g = c.buffer[order], c.element[order], phase[order], group[order]
        new = np.ones(order.size, bool)
        new[1:] = (b[1:] != b[:-1]) | (e[1:] != e[:-1]) | (p[1:] != p[:-1]) | (g[1:] != g[:-1])
        self.ids = np.empty(order.size, np.int64)
        self.ids[order] = np.cumsum(new) - 1
        self.count = int(new.sum())
        b, e, p, g = b[new], e[new], p[new], g[new]
        self.elements = e.tolist()
        starts = np.flatnonzero(np.r_[True, (b[1:] != b[:-1]) | (p[1:] != p[:-1])
                                      | (g[1:] != g[:-1])]).tolist() if b.size else []
        ends = [*starts[1:], self.count]
        self.copies: dict[tuple[str, int | None, int | None], tuple[int, int]] = {
            (c.names[bi], None if pi < 0 else pi, None if gi < 0 else gi): (start, end)
            for bi, pi, gi, start, end in zip(b[starts].tolist(), p[starts].tolist(),
                                              g[starts].tolist(), starts, ends)}
        self._ids = {copy: dict(zip(self.elements[start:end], range(start, end)))
                     for copy, (start, end) in self.copies.items()}

    def id_of(self, key: Key) -> int | None:
        buffer, element, phase, group = key
        ids = self._ids.get((buffer, phase, group))
        return None if ids is None else ids.get(element)

    def keys(self, ids: list[int]) -> list[Key]:
        """The keys of `ids`, ascending ids."""
        copies = list(self.copies)
        starts = [start for start, _ in self.copies.values()]
        out = []
        for k in ids:
            buffer, phase, group = copies[bisect.bisect_right(starts, k) - 1]
            out.append((buffer, self.elements[k], phase, group))
        return out


def _last_per_key(keys: _Keys, mask: np.ndarray) -> dict[int, int]:
    """Key id -> index of its last entry, for the keys of the entries in `mask`."""
    chosen = np.flatnonzero(mask)
    found, last = np.unique(keys.ids[chosen][::-1], return_index=True)
    return dict(zip(found.tolist(), chosen[chosen.size - 1 - last].tolist()))


class _Grouped:
    """Per key id, the distinct `values` of its entries in `mask`, in order of first
    appearance (one array pass; a key's tuple is made when asked for)."""

    def __init__(self, keys: _Keys, values: np.ndarray, mask: np.ndarray) -> None:
        chosen = np.flatnonzero(mask)
        k, v = keys.ids[chosen], values[chosen]
        by_pair = np.lexsort((v, k))     # stable: each pair's first entry leads its run
        first = np.ones(by_pair.size, bool)
        first[1:] = (k[by_pair][1:] != k[by_pair][:-1]) | (v[by_pair][1:] != v[by_pair][:-1])
        kept = np.sort(by_pair[first])   # each (key, value) once, at its first appearance
        k, v = k[kept], v[kept]
        by_key = np.argsort(k, kind="stable")
        k = k[by_key]
        self._values = v[by_key].tolist()
        count = keys.count
        self._start = np.searchsorted(k, np.arange(count)).tolist()
        self._end = np.searchsorted(k, np.arange(count), side="right").tolist()

    def of(self, k: int | None) -> tuple[int, ...]:
        if k is None:
            return ()
        return tuple(self._values[self._start[k]:self._end[k]])
