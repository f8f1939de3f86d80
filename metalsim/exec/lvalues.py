"""A conditional expression as an lvalue (C++ [expr.cond]/4: `c ? a : b` with both operands
lvalues of one type names `a` or `b`): the location it names, lane by lane.

Each lane names the location of the operand its condition picked. Locations in memory merge
into one location whose lanes point into different allocations (as a `?:` of pointers does), so
reads and writes through it are bounds-checked, race-checked and counted per allocation like
any other access. Variables named by such an operand are placed in thread memory when the
function is compiled (`uses.Uses.addressed`), so the operands are normally both in memory.
"""

from __future__ import annotations

import numpy as np

from metalsim.diagnostics import Coord
from metalsim.exec import pointers
from metalsim.exec.machine import KernelStop, Lanes
from metalsim.exec.values import MemLoc, VarLoc
from metalsim.lang import types as ty
from metalsim.lang.types import Type


def _whole(where: MemLoc, t: Type) -> MemLoc | None:
    """`where` with its components folded into the offset (one component of a vector in
    memory is a scalar at its own address); None where they cannot be (a swizzle)."""
    comps = where.comps
    if comps is None:
        return where
    if isinstance(comps, tuple) and len(comps) == 1:
        return MemLoc(where.region, where.off + comps[0] * ty.scalar_of(t).size)
    return None


def _lane_components(comps, k: int) -> np.ndarray | None:
    """One component index per lane for `k` lanes naming `comps` of a vector variable (None:
    the whole variable or a swizzle, which cannot be chosen lane by lane)."""
    if isinstance(comps, np.ndarray):
        return comps
    if comps is not None and len(comps) == 1:
        return np.full(k, comps[0], np.int64)
    return None


def _same_variable(a: VarLoc, b: VarLoc, picked: np.ndarray) -> VarLoc | None:
    """`a` and `b`, both in one thread variable, as one location; None where they cannot be."""
    if a.arr is not b.arr:
        return None
    if not isinstance(a.comps, np.ndarray) and a.comps == b.comps:
        return a
    k = int(np.count_nonzero(picked))
    ca, cb = _lane_components(a.comps, k), _lane_components(b.comps, picked.size - k)
    if ca is None or cb is None:
        return None
    comps = np.empty(picked.size, np.int64)
    comps[picked], comps[~picked] = ca, cb
    return VarLoc(a.arr, comps, a.init, a.name, a.sources, a.hint)


def chosen_location(picked: np.ndarray, a, b, t: Type, lanes: Lanes, coord: Coord):
    """The location of `c ? x : y` for the active lanes, where `picked` (one flag per lane)
    says which took `x`, located at `a` (for those lanes) and `y` at `b` (for the others)."""
    n = lanes.n
    if isinstance(a, MemLoc) and isinstance(b, MemLoc):
        wa, wb = _whole(a, t), _whole(b, t)
        if wa is not None and wb is not None:
            off = np.empty(n, np.int64)
            off[picked] = wa.off
            off[~picked] = wb.off
            region = pointers.merge([(np.flatnonzero(picked), wa.region),
                                     (np.flatnonzero(~picked), wb.region)], n)
            return MemLoc(region, off)
    elif isinstance(a, VarLoc) and isinstance(b, VarLoc):
        same = _same_variable(a, b, picked)
        if same is not None:
            return same
    raise KernelStop("unsupported", "metalsim cannot follow a conditional lvalue whose threads "
                     "pick different variables kept in registers here", coord, lanes.indices(),
                     hint="assign in an 'if' instead: if (c) a = v; else b = v;")
