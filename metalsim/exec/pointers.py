"""Pointer values per lane: which allocation each lane's pointer points into, and pointers kept
in memory.

A pointer is an allocation and a byte offset, per lane. In uniform code every lane's pointer
names one `Region`; after `if (c) p = b;` lanes differ, and the pointer's region is a
`LaneRegions`: a small table of regions and, per lane, an index into it. Memory accesses through
such a pointer are split by region (`memory.load`/`store`/`atomic_update` hand them here), so
every lane reads the buffer its own pointer names, as on the GPU.

A pointer that was never given a value points at `UNSET`, a null pointer at `NULL`;
dereferencing either is reported, not crashed on. Pointers stored in memory (arrays of
pointers) are 8-byte words, an allocation number in the high bits and the byte offset in the
low ones, so they can be copied, indexed and chosen per lane like any other value; a word that
names no allocation (memory never written) reads back as an `UNSET` pointer.
"""

from __future__ import annotations

import itertools
import weakref

import numpy as np

from metalsim.diagnostics import Coord
from metalsim.exec import memory as mem
from metalsim.exec.machine import Machine
from metalsim.lang.types import LONG


class Unset:
    """Where an uninitialised pointer points: every access through it is reported."""

    name = "<uninitialised pointer>"
    space = "thread"

    def _report(self, m: Machine, idx, coord: Coord) -> None:
        lanes = np.arange(m.batch.size)[idx]
        m.report("uninitialized-read", "error", "dereference of an uninitialised pointer",
                 coord, lanes, key="pointer",
                 hint="give the pointer a value (the address of a buffer or an array) before "
                      "using it")

    def load(self, m: Machine, idx, n: int, off, t, coord: Coord) -> np.ndarray:
        self._report(m, idx, coord)
        return np.zeros((n,) + _components(t), mem.leaf_scalar(t).dtype)

    def store(self, m: Machine, idx, n: int, off, t, value, coord: Coord) -> None:
        self._report(m, idx, coord)

    def atomic_update(self, m: Machine, idx, n: int, off, t, update, coord: Coord,
                      **kw) -> np.ndarray:
        self._report(m, idx, coord)
        return np.zeros(n, t.dtype)


UNSET = Unset()


class Null(Unset):
    """Where a null pointer points (`nullptr`, or the literal 0 as a pointer): every access
    through it is reported."""

    name = "<null pointer>"

    def _report(self, m: Machine, idx, coord: Coord) -> None:
        lanes = np.arange(m.batch.size)[idx]
        m.report("null-dereference", "error", "dereference of a null pointer", coord, lanes,
                 key="pointer",
                 hint="test the pointer (`if (p != nullptr)`) before using it, or point it at "
                      "memory (a buffer, an array) first")


NULL = Null()


def is_null(region, n: int) -> np.ndarray:
    """Per lane, whether a pointer value with this region is a null pointer."""
    table, which = lane_table(region, n)
    return np.array([r is NULL for r in table], bool)[which]


def _components(t) -> tuple[int, ...]:
    layout = mem._access_layout(t)[1]
    return () if layout == 1 else (layout,)


class LaneRegions:
    """The allocations of a pointer whose lanes point into different ones: `regions[which[k]]`
    for the k-th active lane."""

    __slots__ = ("regions", "which")

    def __init__(self, regions: tuple, which: np.ndarray) -> None:
        self.regions = regions
        self.which = which

    @property
    def name(self) -> str:
        return "/".join(r.name for r in self.regions)

    @property
    def space(self) -> str:
        return self.regions[0].space

    def groups(self, lanes: np.ndarray, n: int, off):
        """(region, lane indices, positions among the active lanes, offsets) per region."""
        off = np.broadcast_to(np.asarray(off, np.int64), (n,))
        for k in np.unique(self.which).tolist():
            pos = np.flatnonzero(self.which == k)
            yield self.regions[k], lanes[pos], pos, off[pos]

    def load(self, m: Machine, idx, n: int, off, t, coord: Coord) -> np.ndarray:
        out = np.zeros((n,) + _components(t), mem.leaf_scalar(t).dtype)
        for region, sub, pos, o in self.groups(_indices(m, idx), n, off):
            out[pos] = mem.load(m, region, sub, sub.size, o, t, coord)
        return out

    def store(self, m: Machine, idx, n: int, off, t, value, coord: Coord) -> None:
        value = np.broadcast_to(np.asarray(value), (n,) + _components(t))
        for region, sub, pos, o in self.groups(_indices(m, idx), n, off):
            mem.store(m, region, sub, sub.size, o, t, value[pos], coord)

    def atomic_update(self, m: Machine, idx, n: int, off, t, update, coord: Coord,
                      **kw) -> np.ndarray:
        kw.pop("fast", None)  # its operands are aligned with all the active lanes
        old = np.zeros(n, t.dtype)
        for region, sub, pos, o in self.groups(_indices(m, idx), n, off):
            def part(current, lanes, pos=pos):
                return update(current, pos[lanes])
            old[pos] = mem.atomic_update(m, region, sub, sub.size, o, t, part, coord, **kw)
        return old


def _indices(m: Machine, idx) -> np.ndarray:
    return np.arange(m.batch.size)[idx] if isinstance(idx, slice) else np.asarray(idx)


def at(region, which: np.ndarray):
    """The region of a pointer value from a table and per-lane indices: the one region when
    every lane agrees (the common, uniform case), else a `LaneRegions`."""
    if which.size == 0 or len(region) == 1:
        return region[0]
    first = which[0]
    if (which == first).all():
        return region[int(first)]
    return LaneRegions(tuple(region), which)


def lane_table(region, n: int) -> tuple[list, np.ndarray]:
    """A pointer value's region as a table and one index per lane."""
    if isinstance(region, LaneRegions):
        return list(region.regions), region.which
    return [region], np.zeros(n, np.int32)


def merge(parts: list[tuple[np.ndarray, object]], n: int):
    """The region of a pointer whose lanes at positions `pos` come from pointers with region
    `r`, for each (pos, r) of `parts` (a `?:` choosing between pointers)."""
    table: list = []
    which = np.zeros(n, np.int32)
    for pos, region in parts:
        regions, sub = lane_table(region, pos.size)
        index = []
        for r in regions:
            k = next((j for j, known in enumerate(table) if known is r), None)
            if k is None:
                table.append(r)
                k = len(table) - 1
            index.append(k)
        which[pos] = np.asarray(index, np.int32)[sub]
    return at(table, which)


def same_region(a, b, n: int) -> np.ndarray:
    """Per lane, whether two pointer values point into the same allocation."""
    ta, wa = lane_table(a, n)
    tb, wb = lane_table(b, n)
    ida = np.array([id(r) for r in ta], np.int64)[wa]
    idb = np.array([id(r) for r in tb], np.int64)[wb]
    return ida == idb


# --- pointers stored in memory ---------------------------------------------------------------
OFFSET_BITS = 40
_BIAS = 1 << (OFFSET_BITS - 1)
_numbers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_regions: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_next = itertools.count(1)


def _number(region) -> int:
    if region is UNSET:
        return 0
    k = _numbers.get(region)
    if k is None:
        k = _numbers[region] = next(_next)
        _regions[k] = region
    return k


def encode(region, off: np.ndarray, n: int) -> np.ndarray:
    """Pointer values as the 8-byte words memory holds."""
    table, which = lane_table(region, n)
    numbers = np.array([_number(r) for r in table], np.int64)[which]
    return (numbers << OFFSET_BITS) + (np.broadcast_to(off, (n,)) + _BIAS) - _BIAS


def decode(words: np.ndarray):
    """(region, offsets) of the pointer values in `words`; unknown words are `UNSET`."""
    words = np.asarray(words, np.int64)
    numbers = (words + _BIAS) >> OFFSET_BITS
    off = words - (numbers << OFFSET_BITS)
    keys, which = np.unique(numbers, return_inverse=True)
    table = [_regions.get(int(k), UNSET) if k else UNSET for k in keys.tolist()]
    return at(table, which.astype(np.int32).reshape(-1)), off


def load_pointer(m: Machine, region, idx, n: int, off, t, coord: Coord):
    """Read pointer values (of pointer type `t`) from memory: (region, offsets)."""
    return decode(mem.load(m, region, idx, n, off, LONG, coord))


def store_pointer(m: Machine, region, idx, n: int, off, t, value, coord: Coord) -> None:
    """Write the pointer value `value` (a `Ptr`) to memory."""
    mem.store(m, region, idx, n, off, LONG, encode(value.region, value.off, n), coord)
