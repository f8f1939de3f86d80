"""Run-time values that are not plain lane arrays: pointers, locations, and a call frame.

Scalars and vectors are numpy arrays aligned with the active lanes (`(n,)` or `(n, k)`), or 0-d
arrays for lane-uniform constants. Pointers and lvalue locations are small objects defined here.
"""

from __future__ import annotations

import numpy as np

from metalsim.exec import pointers
from metalsim.exec.machine import Lanes, Machine
from metalsim.exec.memory import Region
from metalsim.exec.pointers import UNSET


class Ptr:
    """A pointer value: a region (a `Region`, or a `pointers.LaneRegions` where lanes point
    into different allocations) and a byte offset per active lane (or one uniform offset)."""

    __slots__ = ("region", "off")

    def __init__(self, region, off: np.ndarray) -> None:
        self.region = region
        self.off = off


class PtrSlot:
    """A pointer variable: per lane, an index into a table of regions and a byte offset
    (full-width arrays; the offset may be one 0-d array while every lane has the same, as a
    buffer parameter's). The table starts as `UNSET`, where a pointer declared without a
    value points."""

    __slots__ = ("regions", "which", "off")

    def __init__(self, region: Region | None, size: int, offset: int | None = None) -> None:
        self.regions: list = [UNSET if region is None else region]
        self.which = np.zeros(size, np.int32)
        self.off = (np.zeros(size, np.int64) if offset is None
                    else np.asarray(offset, np.int64))

    def get(self, lanes: Lanes) -> Ptr:
        """The pointer value of the active lanes (a copy: later writes do not change it)."""
        off = self.off
        if off.ndim:
            off = off[lanes.idx]
            if lanes.is_all:
                off = off.copy()
        else:   # one offset for every lane: never written in place, so shared
            off = off.copy()
        if len(self.regions) == 1:
            return Ptr(self.regions[0], off)
        return Ptr(pointers.at(self.regions, self.which[lanes.idx]), off)

    def set(self, lanes: Lanes, value: Ptr) -> None:
        if not self.off.ndim:
            self.off = np.full(self.which.size, self.off, np.int64)
        self.off[lanes.idx] = value.off
        if lanes.is_all and isinstance(value.region, Region | pointers.Unset):
            self.regions = [value.region]
            self.which[:] = 0
            return
        table, which = pointers.lane_table(value.region, lanes.n)
        index = []
        for r in table:
            k = next((j for j, known in enumerate(self.regions) if known is r), None)
            if k is None:
                self.regions.append(r)
                k = len(self.regions) - 1
            index.append(k)
        self.which[lanes.idx] = np.asarray(index, np.int32)[which]


class VarLoc:
    """An lvalue in a thread variable: the full-width array and optional vector components.

    `init` is the variable's full-width "has been written" mask when it was declared without
    an initializer, or with one that names it (so reading it first can be reported); `name`
    names it in that report and `hint` says what to do.
    """

    __slots__ = ("arr", "comps", "init", "name", "sources", "hint")

    def __init__(self, arr: np.ndarray, comps: tuple[int, ...] | np.ndarray | None = None,
                 init: np.ndarray | None = None, name: str = "",
                 sources: dict | None = None, hint: str = "") -> None:
        self.arr = arr
        self.comps = comps
        self.init = init
        self.name = name
        self.sources = sources  # trace mode: lane -> cells the variable's value came from
        self.hint = hint or "give the variable an initial value where it is declared"


class MemLoc:
    """An lvalue in memory: a region, byte offsets aligned with the active lanes, components."""

    __slots__ = ("region", "off", "comps")

    def __init__(self, region: Region, off: np.ndarray,
                 comps: tuple[int, ...] | None = None) -> None:
        self.region = region
        self.off = off
        self.comps = comps


class RefSlot:
    """A reference variable bound to memory: region, full-width offsets and components."""

    __slots__ = ("region", "off", "comps")

    def __init__(self, region: Region, off: np.ndarray, comps: tuple[int, ...] | None) -> None:
        self.region = region
        self.off = off
        self.comps = comps


class Frame:
    """The variables of one function activation, plus control-flow bookkeeping."""

    __slots__ = ("m", "vars", "breaks", "conts", "ret", "returned", "is_kernel", "sources",
                 "ret_sources", "caller", "code")

    def __init__(self, m: Machine, nslots: int, is_kernel: bool = False,
                 caller: Frame | None = None, code: object = None) -> None:
        self.m = m
        # the calling frame and the compiled function this frame runs: a lambda's body finds
        # the frame of the function that created it here (`lambdas`)
        self.caller = caller
        self.code = code
        self.vars: list = [None] * nslots
        self.breaks: list[list] = []
        self.conts: list[list] = []
        self.ret: np.ndarray | None = None
        self.returned: list = []
        self.is_kernel = is_kernel
        self.sources: dict[int, dict] = {}   # trace mode: slot -> lane -> cells
        self.ret_sources: dict[int, frozenset] = {}
