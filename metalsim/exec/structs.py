"""Structs: defining them from the AST, their members and aggregate initializers (the
`StructCompiler` part of `Compiler`), and moving struct objects through memory at run time.

A struct object always lives in memory (a thread variable is a thread-memory `Region`), so a
member is an lvalue at the object's offset plus the member's, and every access to it goes
through `memory.load`/`memory.store` like any other element: counts, bounds, races,
uninitialised reads and traces see the member's own bytes. A struct *rvalue* (a copy, a
temporary, a return value) is its object representation, one row of bytes per lane. Copying a
whole struct accesses memory member by member, as compiled code does, never its padding.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from metalsim.diagnostics import Coord
from metalsim.exec import memory as mem
from metalsim.exec.compiled import E, Scope
from metalsim.exec.machine import Lanes, Machine
from metalsim.exec.values import MemLoc
from metalsim.lang import ast
from metalsim.lang import types as ty
from metalsim.lang.types import ArrayType, PointerType, ScalarType, StructType, Type, VectorType

Leaf = ScalarType | VectorType


@cache
def leaves(t: Type) -> tuple[tuple[int, Leaf], ...]:
    """(byte offset, scalar or vector type) of every member of `t`, arrays and nested structs
    flattened: what one copy of a `t` reads and writes."""
    if isinstance(t, StructType):
        return tuple((m.offset + off, leaf) for m in t.members for off, leaf in leaves(m.type))
    if isinstance(t, ArrayType):
        return tuple((i * t.elem.size + off, leaf) for i in range(t.length)
                     for off, leaf in leaves(t.elem))
    return ((0, t),)  # type: ignore[return-value]


def contains_struct(t: Type) -> bool:
    return isinstance(ty.array_shape(t)[1], StructType)


def put(buf: np.ndarray, off: int, t: Type, value) -> None:
    """Write a lane value of type `t` into the object bytes `buf` (n, size) at `off`."""
    n = buf.shape[0]
    if isinstance(t, StructType):
        buf[:, off:off + t.size] = value
        return
    elem, k = ty.scalar_of(t), (t.n if isinstance(t, VectorType) else 1)
    v = np.broadcast_to(np.asarray(value, elem.dtype), (n,) + ty.lane_shape(t))
    buf[:, off:off + elem.size * k] = np.ascontiguousarray(v).view(np.uint8).reshape(
        n, elem.size * k)


def get(buf: np.ndarray, off: int, t: Type) -> np.ndarray:
    """The lane value of type `t` at `off` in the object bytes `buf` (n, size)."""
    if isinstance(t, StructType):
        return buf[:, off:off + t.size].copy()
    elem, k = ty.scalar_of(t), (t.n if isinstance(t, VectorType) else 1)
    raw = np.ascontiguousarray(buf[:, off:off + elem.size * k]).view(elem.dtype)
    return raw if isinstance(t, VectorType) else raw[:, 0]


def load(m: Machine, region: mem.Region, idx, n: int, off, t: StructType,
         coord: Coord) -> np.ndarray:
    """Read a whole struct at byte offsets `off`, one memory access per member."""
    buf = np.zeros((n, t.size), np.uint8)
    off = np.asarray(off, np.int64)
    for leaf_off, leaf in leaves(t):
        put(buf, leaf_off, leaf, mem.load(m, region, idx, n, off + leaf_off, leaf, coord))
    return buf


def store(m: Machine, region: mem.Region, idx, n: int, off, t: StructType, value,
          coord: Coord) -> None:
    """Write the struct bytes `value` at byte offsets `off`, one memory access per member."""
    value = np.broadcast_to(np.asarray(value, np.uint8), (n, t.size))
    off = np.asarray(off, np.int64)
    for leaf_off, leaf in leaves(t):
        mem.store(m, region, idx, n, off + leaf_off, leaf, get(value, leaf_off, leaf), coord)


def load_at(f, lanes: Lanes, where: MemLoc, t: StructType, coord: Coord) -> np.ndarray:
    return load(f.m, where.region, lanes.idx, lanes.n, where.off, t, coord)


def store_at(f, lanes: Lanes, where: MemLoc, t: StructType, value, coord: Coord) -> None:
    store(f.m, where.region, lanes.idx, lanes.n, where.off, t, value, coord)


def thread_region(name: str, t: Type, size: int) -> mem.Region:
    """Thread memory for a variable of type `t`. Memory holding structs is tracked per
    narrowest scalar, so that the trace follows each member's value separately."""
    elem = mem.leaf_scalar(t) if contains_struct(t) else t
    return mem.Region(name, "thread", elem, t.size, size, track_init=True)


def thread_object(m: Machine, name: str, t: StructType, value, lanes: Lanes,
                  coord: Coord) -> mem.Region:
    """A fresh thread-memory object holding the struct bytes `value` (a by-value parameter)."""
    region = thread_region(name, t, m.batch.size)
    store(m, region, lanes.idx, lanes.n, 0, t, value, coord)
    return region


class StructCompiler:
    """Struct methods of `Compiler` (which supplies `error`, `expr`, `convert`, ...)."""

    def define_struct(self, node: ast.StructDef, scope: Scope) -> StructType:
        """Lay out a struct definition and declare its name in `scope`."""
        if isinstance(scope.names.get(node.name), StructType):
            self.error(f"redefinition of '{node.name}'", node)
        fields: list[tuple[str, Type, bool]] = []
        for d in node.members:
            if isinstance(d.type, ast.ReferenceType):
                self.error("reference members are not supported by metalsim", d)
            t, const, space = self.resolve_decl_type(d.type, scope)
            if space is not None:
                self.error("field may not be qualified with an address space", d)
            inner = ty.array_shape(t)[1]
            if isinstance(inner, PointerType):
                self.error("pointer members are not supported by metalsim", d,
                           hint="store an index into the buffer instead")
            if not isinstance(inner, ScalarType | VectorType | StructType):
                self.error(f"a member of type '{t}' is not supported by metalsim", d)
            if isinstance(t, ArrayType) and t.length < 0:
                self.error("flexible array members are not supported by metalsim", d)
            if any(name == d.name for name, _, _ in fields):
                self.error(f"duplicate member '{d.name}'", d, width=len(d.name))
            fields.append((d.name, t, const))
        st = ty.struct_type(node.name, fields)
        scope.names[node.name] = st
        return st

    def s_StructDef(self, node: ast.StructDef, scope: Scope):
        self.define_struct(node, scope)
        return lambda f, lanes: lanes

    def struct_member(self, base: E, node: ast.Member) -> E:
        """`s.name`: an lvalue in the object's memory, or a value taken from a struct rvalue."""
        st: StructType = base.type
        member = st.member(node.name)
        if member is None:
            self.error(f"no member named '{node.name}' in 'struct {st}'", node,
                       hint=self.suggest(node.name, [m.name for m in st.members]))
        mt, moff = member.type, member.offset
        if base.loc is not None:
            bloc = base.loc

            def loc(f, lanes):
                where = bloc(f, lanes)
                return MemLoc(where.region, where.off + moff)
            return self.with_load(E(mt, None, node.coord, loc=loc,
                                    readonly=base.readonly or member.const, space=base.space))
        if isinstance(mt, ArrayType):
            self.error("metalsim does not support using an array member of a temporary "
                       "struct", node, hint="copy the struct into a variable first")
        bev = base.ev
        return E(mt, lambda f, lanes: get(bev(f, lanes), moff, mt), node.coord)

    def aggregate(self, t: StructType, init: ast.InitList, scope: Scope) -> E:
        """A struct temporary from an initializer list (`S{1, 2.0f}`, `return {a, b};`)."""
        parts = [(off, et, self.convert(self.expr(item, scope), et, item).ev)
                 for off, et, item in self.flatten_init(t, init, 0)]
        size = t.size

        def ev(f, lanes):
            buf = np.zeros((lanes.n, size), np.uint8)  # padding bytes of a temporary are 0
            for off, et, pev in parts:
                put(buf, off, et, pev(f, lanes))
            return buf
        return E(t, ev, init.coord)

    def construct_struct(self, t: StructType, node: ast.Construct, scope: Scope) -> E:
        """`S{...}` aggregate-initializes; `S()` value-initializes; `S(s)` copies. C++14 has
        no parenthesised aggregate initialization."""
        if node.braces or not node.args:
            return self.aggregate(t, ast.InitList(node.coord, node.args), scope)
        if len(node.args) == 1:
            arg = self.expr(node.args[0], scope)
            if arg.type == t:
                return self.convert(arg, t, node)
        self.error(f"no matching constructor for initialization of '{t}'", node,
                   hint=f"aggregate-initialize with braces: {t}{{...}}")

    def assign_struct(self, t: StructType, node: ast.Assign) -> None:
        """C++ deletes the copy assignment of a struct with a const member."""
        consts = [m.name for m in t.members if m.const]
        if consts:
            self.error(f"cannot assign to a struct '{t}' with const member '{consts[0]}'",
                       node)
