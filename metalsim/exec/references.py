"""Functions returning references (C++14 `T&`): the `ReferenceCompiler` part of `Compiler`.

A call of such a function is an lvalue: its location is the one the callee's `return` named,
so what is read or written through it is counted, bounds-checked and race-checked like any
other access to that object. A reference to the callee's own locals would dangle (undefined
behaviour, which clang warns about), so it is refused.
"""

from __future__ import annotations

import numpy as np

from metalsim.diagnostics import Coord
from metalsim.exec.compiled import E, Ev, FunctionCode, Run, Scope, Var
from metalsim.exec.machine import KernelStop, Lanes
from metalsim.exec.statements import EMPTY
from metalsim.exec.values import Frame, MemLoc, VarLoc
from metalsim.lang import ast
from metalsim.lang.types import ArrayType, PointerType, VectorType


class ReturnedRef:
    """The location one call returns: one object for all its lanes (`first`, a thread
    variable or memory), with full-width byte offsets and vector components."""

    __slots__ = ("first", "off", "comps")

    def __init__(self, first: VarLoc | MemLoc, size: int) -> None:
        self.first = first
        self.off = np.zeros(size, np.int64)
        dynamic = isinstance(first.comps, np.ndarray)  # `v[i]` of a vector, per lane
        self.comps = np.zeros(size, np.int64) if dynamic else first.comps

    def same_object(self, where: VarLoc | MemLoc) -> bool:
        first = self.first
        if isinstance(where, VarLoc) != isinstance(first, VarLoc):
            return False
        same = (where.arr is first.arr if isinstance(where, VarLoc)
                else where.region is first.region)
        if isinstance(self.comps, np.ndarray):
            return same and isinstance(where.comps, np.ndarray)
        return same and where.comps == self.comps


def keep_returned(f: Frame, lanes: Lanes, where: VarLoc | MemLoc, coord: Coord) -> None:
    """Record `where` as the reference the active lanes return."""
    ret = f.ret
    if ret is None:
        ret = f.ret = ReturnedRef(where, f.m.batch.size)
    elif not ret.same_object(where):
        raise KernelStop("unsupported", "metalsim cannot follow a returned reference that names "
                         "different objects in different threads of one call", coord,
                         lanes.indices(),
                         hint="return a pointer, or return references into one array")
    if isinstance(where, MemLoc):
        ret.off[lanes.idx] = where.off
    if isinstance(ret.comps, np.ndarray):
        ret.comps[lanes.idx] = where.comps


def returned_location(ret: ReturnedRef | None, lanes: Lanes, name: str,
                      coord: Coord) -> VarLoc | MemLoc:
    """The location a call of `name` returned, for the lanes that called it."""
    if ret is None:
        raise KernelStop("missing-return", f"'{name}' ended without returning a reference "
                         f"(undefined behaviour)", coord, lanes.indices(),
                         hint="return a reference on every path through the function")
    first, comps = ret.first, ret.comps
    if isinstance(comps, np.ndarray):
        comps = comps[lanes.idx]
    if isinstance(first, VarLoc):
        return VarLoc(first.arr, comps, first.init, first.name, first.sources)
    return MemLoc(first.region, ret.off[lanes.idx], comps)


class ReferenceCompiler:
    """Reference-return methods of `Compiler` (which supplies `expr`, `error`, `with_load`)."""

    def reference_return(self, fdef: ast.FunctionDef, scope: Scope,
                         this: PointerType | None) -> tuple[str, bool] | None:
        """(address space, is const) of what `fdef` returns a reference to, or None where it
        returns a value. Unqualified, it is the object's space in a member function (`S&
        operator+=` returns `*this`), else thread, as Metal defaults it."""
        if not isinstance(fdef.return_type, ast.ReferenceType):
            return None
        _, const, space = self.resolve_decl_type(fdef.return_type, scope)
        return space or (this.space if this is not None else "thread"), const

    def reference_call(self, code: FunctionCode, ev: Ev, coord: Coord) -> E:
        """A call of `code` (which returns a reference) as the lvalue it returns; `ev`
        runs the call and gives that location."""
        space, const = code.returns_ref
        return self.with_load(E(code.return_type, None, coord, loc=ev, readonly=const,
                                space=space))

    def return_reference(self, node: ast.Return, scope: Scope) -> Run:
        """`return x;` in a function returning a reference: the callee names `x`'s location."""
        code: FunctionCode = self.fn
        rt, (space, const) = code.return_type, code.returns_ref
        if node.value is None:
            self.error(f"non-void function '{code.name}' should return a value", node)
        value = self.expr(node.value, scope)
        if value.loc is None or value.type != rt:
            if const:  # it would bind to a temporary that dies with the call
                self.error("returning reference to local temporary object", node.value)
            what = "a temporary of type" if value.loc is None else "a value of unrelated type"
            self.error(f"non-const lvalue reference to type '{rt}' cannot bind to {what} "
                       f"'{self.rvalue(value).type}'", node.value)
        if value.readonly and not const:
            self.error(f"binding reference of type '{rt}' to value of type 'const {rt}' drops "
                       f"'const' qualifier", node.value)
        local = self.local_root(node.value, scope)
        if local is not None:
            param = any(local[0] is p for p, _ in code.params)
            self.error(f"reference to stack memory associated with "
                       f"{'parameter' if param else 'local variable'} '{local[1]}' "
                       f"returned", node.value,
                       hint="it is destroyed when the function returns: return a reference "
                            "to memory the caller owns, or return by value")
        if (value.space or "thread") != space:
            self.error(f"a '{space} {rt}&' cannot bind to an object in the {value.space} "
                       f"address space", node.value)
        loc, coord = value.loc, node.value.coord

        def run(f, lanes):
            keep_returned(f, lanes, loc(f, lanes), coord)
            return EMPTY
        return run

    def local_root(self, node: ast.Node, scope: Scope) -> tuple[Var, str] | None:
        """The local variable (or by-value parameter) of the current function, and its name,
        that the lvalue `node` is part of; None where it is reached through a pointer or a
        reference, or is not a local."""
        while isinstance(node, ast.Member | ast.Index):
            if isinstance(node, ast.Member) and node.arrow:
                return None
            if isinstance(node, ast.Index) and not isinstance(
                    self.expr(node.base, scope).type, ArrayType | VectorType):
                return None  # a pointer (or an operator[]) names other memory
            node = node.base
        if not isinstance(node, ast.Name):
            return None
        v = scope.lookup(node.name)
        if isinstance(v, Var) and v.kind in ("value", "ptr", "region") and (
                v.space or "thread") == "thread":
            return v, node.name
        return None
