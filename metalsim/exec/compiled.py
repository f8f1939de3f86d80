"""What compiling produces: compiled expressions (`E`), names in scope (`Var`, `Scope`), and
compiled functions (`FunctionCode`); see `compile.py` for how they are made.

An `E` has its static type, an evaluator `ev(frame, lanes)` returning one value per active
lane, and for lvalues a locator `loc(frame, lanes)`. A compiled statement is a `Run`:
`run(frame, lanes) -> lanes`, the lanes that fall through to the next statement.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from metalsim.diagnostics import Coord
from metalsim.exec.machine import Lanes
from metalsim.exec.values import Frame, MemLoc, VarLoc
from metalsim.lang import types as ty
from metalsim.lang.types import (
    BOOL,
    PointerType,
    Type,
)

Ev = Callable[[Frame, Lanes], object]
Run = Callable[[Frame, Lanes], Lanes]

@dataclass
class E:
    """A compiled expression (see the module docstring)."""

    type: Type
    ev: Ev
    coord: Coord
    const: np.ndarray | None = None       # compile-time value, when there is one
    loc: Callable[[Frame, Lanes], VarLoc | MemLoc] | None = None
    readonly: bool = False                # an lvalue that may not be assigned
    space: str | None = None              # address space of an lvalue in memory
    null_constant: bool = False           # the literal 0: converts to any pointer (C++14)


@dataclass
class Var:
    """A name in scope. `kind`: value, uniform (a loop counter kept as one value for all
    lanes), ptr, ref, region, const, global_region; in a member
    function also member and method (names of its struct, reached through `this`), and
    enclosing_local (a variable of the function enclosing a local struct: C++ forbids it);
    in a lambda's body captured (`captured` names the enclosing function's variable, or the
    copy the lambda made, and that function's code) and uncaptured (`lambdas`); unusable (a
    variable named in its own initializer where C++ forbids it: `name` says why)."""

    kind: str
    type: Type
    slot: int = -1
    readonly: bool = False
    const: np.ndarray | None = None
    space: str | None = None
    region: object = None
    init_slot: int = -1     # slot of the "written" mask of a variable declared uninitialised
    name: str = ""
    captured: tuple[Var, FunctionCode] | None = None
    read_hint: str = ""     # the hint for a read of it while uninitialised, if not the usual


@dataclass
class FunctionCode:
    """A compiled function instantiation."""

    name: str
    return_type: Type
    params: list[tuple[Var, bool]] = field(default_factory=list)  # (var, is_reference)
    nslots: int = 0
    body: Run | None = None
    threadgroup_bytes: int = 0
    thread_bytes: int = 0      # thread-private memory its declarations place (largest first)
    largest_thread_object: tuple[str, int] = ("", 0)  # (name, bytes), for the message
    threadgroup_granules: int = 0  # race/initialisation shadow entries of those bytes
    this_const: bool = False  # a const member function: `*this` may not be modified
    returns_ref: tuple[str, bool] | None = None  # (space, const) of a returned reference
    auto_return: bool = False  # declared `auto`: every return statement deduces the same type


@dataclass
class Scope:
    names: dict[str, Var | Type]
    parent: Scope | None = None

    def lookup(self, name: str) -> Var | Type | None:
        s: Scope | None = self
        while s is not None:
            v = s.names.get(name)
            if v is not None:
                return v
            s = s.parent
        return None

    def visible(self) -> list[str]:
        out, s = [], self
        while s is not None:
            out.extend(s.names)
            s = s.parent
        return out


def constant(value: object, t: Type, coord: Coord) -> E:
    """An E for a compile-time constant of type `t`."""
    dtype = ty.scalar_of(t).dtype
    with np.errstate(over="ignore"):  # a literal too large for its type is inf, as in C++
        c = np.asarray(value, dtype=dtype)
    return E(t, lambda f, lanes: c, coord, const=c)


def truthy(value: np.ndarray, t: Type) -> np.ndarray:
    """C++ contextual conversion to bool of a scalar value."""
    if t == BOOL:
        return np.asarray(value)
    if isinstance(t, PointerType):
        return np.ones(np.shape(value.off), bool)
    return np.asarray(value) != 0


def lane_zeros(t: Type, n: int) -> np.ndarray:
    return np.zeros((n,) + ty.lane_shape(t), ty.scalar_of(t).dtype)
