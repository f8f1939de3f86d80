"""Run-time helpers the compiled closures call: reading and writing lvalue locations, binding
arguments, reporting per-lane findings, and following provenance in trace mode."""

from __future__ import annotations

import numpy as np

from metalsim.diagnostics import Coord
from metalsim.exec import memory as mem
from metalsim.exec.compiled import Ev, Var
from metalsim.exec.machine import Lanes, Undefined, merge_flow
from metalsim.exec.pointers import load_pointer, store_pointer
from metalsim.exec.values import Frame, MemLoc, Ptr, PtrSlot, RefSlot, VarLoc
from metalsim.lang import types as ty
from metalsim.lang.types import (
    PointerType,
    Type,
)


def load_loc(f: Frame, lanes: Lanes, where, t: Type, coord: Coord):
    """Read the value at an lvalue location for the active lanes."""
    if isinstance(where, VarLoc):
        arr = where.arr
        if isinstance(arr, PtrSlot):
            return arr.get(lanes)
        if where.sources is not None:
            f.m.note_sources(f.m.traced_of(lanes), where.sources)
        if where.init is not None:
            written = read_components(where.init[lanes.idx], where.comps, lanes.n)
            if not written.all():
                f.m.undefined_read(
                    lanes.indices()[~np.broadcast_to(written, (lanes.n,))],
                    Undefined(coord, f"variable '{where.name}'", hint=where.hint))
        v = arr[lanes.idx]
        c = where.comps
        if c is None:
            return v
        if isinstance(c, np.ndarray):  # per lane; -1 where the index was out of range
            return np.where(c >= 0, v[np.arange(lanes.n), c], np.zeros((), v.dtype))
        return v[:, c[0]] if len(c) == 1 else v[:, list(c)]
    if isinstance(t, PointerType):
        return Ptr(*load_pointer(f.m, where.region, lanes.idx, lanes.n, where.off, t, coord))
    if where.comps is None:
        return mem.load(f.m, where.region, lanes.idx, lanes.n, where.off, t, coord)
    elem = ty.scalar_of(t)
    parts = [mem.load(f.m, where.region, lanes.idx, lanes.n, where.off + c * elem.size, elem,
                      coord) for c in where.comps]
    return parts[0] if len(parts) == 1 else np.stack(parts, axis=-1)


def loader(t: Type):
    """`load_loc` for values of type `t`, with the common case picked where compiled: a value
    other than a pointer, at a memory location of whole values, is read from memory directly."""
    if isinstance(t, PointerType):
        return load_loc

    def load_value(f: Frame, lanes: Lanes, where, t: Type, coord: Coord):
        if where.__class__ is MemLoc and where.comps is None:
            return mem.load(f.m, where.region, lanes.idx, lanes.n, where.off, t, coord)
        return load_loc(f, lanes, where, t, coord)
    return load_value


def read_components(written: np.ndarray, comps, n: int) -> np.ndarray:
    """Per lane, whether the components `comps` of a variable (all where None) were written;
    `written` is the variable's "written" shadow for the lanes, one flag per component for a
    vector (a component index out of range, -1, counts as written: it was reported)."""
    if written.ndim == 1:
        return written
    if comps is None:
        return written.all(axis=1)
    if isinstance(comps, np.ndarray):
        return np.where(comps >= 0, written[np.arange(n), comps], True)
    return written[:, list(comps)].all(axis=1)


def write_components(init: np.ndarray, lanes: Lanes, comps) -> None:
    """Mark the components `comps` of a variable (all where None) written for the lanes."""
    if init.ndim == 1 or comps is None:
        init[lanes.idx] = True
    elif isinstance(comps, np.ndarray):
        ok = comps >= 0
        init[lanes.indices()[ok], comps[ok]] = True
    else:
        for c in comps:
            init[lanes.idx, c] = True


def store_loc(f: Frame, lanes: Lanes, where, t: Type, value, coord: Coord) -> None:
    """Write `value` to an lvalue location for the active lanes."""
    if isinstance(where, VarLoc):
        arr = where.arr
        if isinstance(arr, PtrSlot):
            arr.set(lanes, value)
            return
        if where.init is not None:
            write_components(where.init, lanes, where.comps)
        if where.sources is not None:
            record_sources(f, lanes, where)
        c = where.comps
        if c is None:
            arr[lanes.idx] = value
        elif isinstance(c, np.ndarray):  # per lane; -1 (out of range) writes nothing
            ok = c >= 0
            arr[lanes.indices()[ok], c[ok]] = np.broadcast_to(value, ok.shape)[ok]
        elif len(c) == 1:
            arr[lanes.idx, c[0]] = value
        else:
            value = np.asarray(value)
            for j, comp in enumerate(c):
                arr[lanes.idx, comp] = value[..., j]
        return
    if isinstance(t, PointerType):
        store_pointer(f.m, where.region, lanes.idx, lanes.n, where.off, t, value, coord)
        return
    if where.comps is None:
        mem.store(f.m, where.region, lanes.idx, lanes.n, where.off, t, value, coord)
        return
    elem = ty.scalar_of(t)
    value = np.asarray(value)
    for j, c in enumerate(where.comps):
        part = value if len(where.comps) == 1 else value[..., j]
        mem.store(f.m, where.region, lanes.idx, lanes.n, where.off + c * elem.size, elem,
                  part, coord)


def address_only(ev: Ev, coord: Coord) -> Ev:
    """Trace mode: what an index expression reads picks a cell; it does not flow into the
    value read from that cell, so it is left out of the provenance. An uninitialised value
    that reaches an index is reported here."""
    def ev_index(f, lanes):
        m = f.m
        kept, m.flow = m.flow, {}
        value = ev(f, lanes)
        m.check_flow_defined(coord, "is used as an index")
        m.flow = kept
        return value
    return ev_index


def checked_condition(ev: Ev, coord: Coord) -> Ev:
    """Trace mode: a branch or loop condition; an uninitialised value that reaches it is
    reported here, once. The cells it read still flow into the statement (a `?:` picks a
    value by it)."""
    def ev_condition(f, lanes):
        m = f.m
        kept, m.flow = m.flow, {}
        value = ev(f, lanes)
        m.check_flow_defined(coord, "decides a branch or loop condition")
        if not m.undefined_flows:   # (no uninitialised read to drop)
            if kept:
                for lane, cells in m.flow.items():
                    merge_flow(kept, lane, cells)
            else:
                kept.update(m.flow)
        else:
            for lane, cells in m.flow.items():
                if any(c.__class__ is Undefined for c in cells):
                    cells = frozenset(c for c in cells if c.__class__ is not Undefined)
                if cells:
                    merge_flow(kept, lane, cells)
        m.flow = kept
        return value
    return ev_condition


def record_sources(f: Frame, lanes: Lanes, where: VarLoc) -> None:
    """Trace mode: a variable now holds what flowed into the current statement; a write of
    some components keeps what the other components came from."""
    m = f.m
    traced = m.traced_of(lanes)
    if not m.flow:   # the value came from no memory (an index, a counter, a constant)
        if where.comps is None and where.sources:
            for lane in traced.tolist():
                where.sources.pop(lane, None)
        return
    lane_ids = traced.tolist()
    new = m.sources(traced)
    if where.comps is None:
        where.sources.update(zip(lane_ids, new))
    else:
        for lane, cells in zip(lane_ids, new):
            where.sources[lane] = where.sources.get(lane, frozenset()) | cells


def bind_argument(kind: str, var: Var | None, value, lanes: Lanes, size: int):
    """The frame slot content for a parameter (or reference) bound to `value`."""
    if kind == "ref":
        if isinstance(value, VarLoc):
            return value
        off = np.zeros(size, np.int64)
        off[lanes.idx] = value.off
        return RefSlot(value.region, off, value.comps)
    if kind == "ptr":
        slot = PtrSlot(None, size)
        slot.set(lanes, value)
        return slot
    t = var.type
    shape = ty.lane_shape(t)
    arr = np.zeros((size,) + shape, ty.scalar_of(t).dtype)
    arr[lanes.idx] = value
    return arr


def report_lanes(f: Frame, lanes: Lanes, mask: np.ndarray, kind: str, severity: str,
                 message: str, coord: Coord, hint: str = "") -> None:
    mask = np.broadcast_to(mask, (lanes.n,))
    f.m.report(kind, severity, message, coord, lanes.indices()[mask], hint=hint)

