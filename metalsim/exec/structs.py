"""Structs: defining them from the AST, their members and aggregate initializers (the
`StructCompiler` part of `Compiler`), and moving struct objects through memory at run time.

A struct object always lives in memory (a thread variable is a thread-memory `Region`), so a
member is an lvalue at the object's offset plus the member's, and every access to it goes
through `memory.load`/`memory.store` like any other element: counts, bounds, races,
uninitialised reads and traces see the member's own bytes. A struct *rvalue* (a copy, a
temporary, a return value) is its object representation, one row of bytes per lane. Copying a
whole struct accesses memory member by member, as compiled code does, never its padding.

A member function is a function whose first parameter is `this`, a pointer to the object in
its address space, so a member it reads is a load through that pointer (a threadgroup or device
access where the object lives there). As in Metal, `this` is a `thread` pointer unless the
function is qualified (`float get() const threadgroup`): an object elsewhere needs an overload
qualified with its address space.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

import numpy as np

from metalsim.diagnostics import Coord
from metalsim.exec import memory as mem
from metalsim.exec import ranking
from metalsim.exec.compiled import E, FunctionCode, Scope, Var, constant
from metalsim.exec.deduction import DeductionConflict
from metalsim.exec.machine import Lanes, Machine
from metalsim.exec.struct_templates import StructTemplate
from metalsim.exec.values import MemLoc, Ptr
from metalsim.lang import ast
from metalsim.lang import types as ty
from metalsim.lang.types import (
    ArrayType,
    AtomicType,
    PointerType,
    ScalarType,
    StructType,
    Type,
    VectorType,
)

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
    if isinstance(t, PointerType):  # a pointer in memory is an 8-byte word (`pointers`)
        return ((0, ty.LONG),)
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


def this_pointer(obj: E, coord: Coord):
    """An evaluator of `this` for a member function call on the struct `obj`: its address, or
    that of a thread-memory copy of a temporary (C++ materializes it)."""
    st: StructType = obj.type
    if obj.loc is not None:
        loc = obj.loc

        def this(f, lanes):
            where = loc(f, lanes)
            return Ptr(where.region, np.broadcast_to(where.off, (lanes.n,)))
        return this
    value = obj.ev

    def this_temporary(f, lanes):
        region = thread_object(f.m, st.name, st, value(f, lanes), lanes, coord)
        return Ptr(region, np.zeros(lanes.n, np.int64))
    return this_temporary


@dataclass
class StructMethods:
    """A struct's member functions by name, and the scope their bodies see beyond their own
    names: the struct's members, then what the struct's definition sees."""

    overloads: dict[str, list[ast.MemberFunction]]
    scope: Scope
    constructors: list[ast.Constructor]
    static_scope: Scope   # what a static member function sees: no members, no `this`


class StructCompiler:
    """Struct methods of `Compiler` (which supplies `error`, `expr`, `convert`, ...)."""

    def define_struct(self, node: ast.StructDef, scope: Scope, instance: str | None = None,
                      forward: StructType | None = None) -> StructType:
        """Lay out a struct definition, declare its name in `scope` and record its member
        functions. For the `instance` of a struct template (`Acc<float>`), `scope` holds the
        template's arguments and gets the injected class name; for a nested struct, `forward`
        is the incomplete type its enclosing struct's `struct I;` declared."""
        declared = scope.names.get(node.name) if instance is None else forward
        if isinstance(declared, StructType) and not declared.incomplete:
            self.error(f"redefinition of '{node.name}'", node)
        if isinstance(declared, StructType) and declared.union != node.union:
            self.mismatched_tag(node.name, declared.union, node)
        if instance is None and not isinstance(declared, StructType):
            # the name is declared from its `{` on: `thread S* next;` inside S is a member
            declared = scope.names[node.name] = ty.declared_struct(node.name, node.union)
        bases = self.base_classes(node, scope)
        inherited_statics: dict[str, Var] = {}
        inherited_types: dict[str, Type] = {}
        for base in bases:
            inherited_statics |= self.struct_statics.get(base, {})
            inherited_types |= self.struct_types.get(base, {})
        statics, types = self.static_members(node, Scope(inherited_statics | inherited_types,
                                                         scope), instance or node.name)
        statics, types = inherited_statics | statics, inherited_types | types
        body = Scope(statics | types, scope)  # what the data members' declarations see
        # Base class subobjects come first; an empty base takes no room (the empty base
        # optimisation every C++ ABI applies).
        fields: list[tuple[str, Type, bool]] = [
            (ty.BASE_PREFIX + base.name, base, False) for base in bases if base.members]
        for d in node.members:
            if isinstance(d.type, ast.ReferenceType):
                self.error("reference members are not supported by metalsim", d)
            if d.name in statics or d.name in types:
                self.error(f"duplicate member '{d.name}'", d, width=len(d.name))
            t, const, space = self.resolve_decl_type(d.type, body)
            self.require_complete(t, d, "field has incomplete type '{}'")
            self.require_defined_before(t, d)
            if space is not None:
                self.error("field may not be qualified with an address space", d)
            inner = ty.array_shape(t)[1]
            if not isinstance(inner, ScalarType | VectorType | StructType | PointerType
                              | AtomicType):
                self.error(f"a member of type '{t}' is not supported by metalsim", d)
            if isinstance(t, ArrayType) and t.length < 0:
                self.error("flexible array members are not supported by metalsim", d)
            if any(name == d.name for name, _, _ in fields):
                self.error(f"duplicate member '{d.name}'", d, width=len(d.name))
            fields.append((d.name, t, const))
        st = ty.struct_type(instance or node.name, fields, self.struct_alignment(node, body),
                            node.union)
        if isinstance(declared, StructType):
            st = ty.complete_struct(declared, st)
            self.incomplete_now.discard(st)
        scope.names[node.name] = st
        defaults = {d.name: d.init for d in node.members if d.init is not None}
        if defaults:
            # Evaluated where an object is constructed, in the scope of the struct's members.
            member_scope = Scope({m.name: Var("member", m.type, name=m.name)
                                  for m in self.data_members(st)} | statics | types, body)
            self.member_defaults[st] = {n: (i, member_scope) for n, i in defaults.items()}
        types |= {name: st for name, t in types.items() if t is None}
        self.struct_statics[st] = statics
        self.struct_types[st] = types
        self.struct_bases[st] = bases
        if node.restricted or any(a != "public" for a in node.base_access):
            self.struct_access[st] = node
        self.declare_using_members(st, node, scope)
        overloads: dict[str, list[ast.MemberFunction]] = {}
        for fn in node.methods:
            if fn.template_params and instance is None and scope is not self.globals:
                self.error("templates cannot be declared inside of a local class", fn,
                           hint="define the struct at program scope (in the header)")
            if st.member(fn.name) is not None:
                self.error(f"duplicate member '{fn.name}'", fn)
            overloads.setdefault(fn.name, []).append(fn)
        if overloads or node.constructors:
            names: dict = {name: Var("method", ty.VOID, name=name)
                           for name in self.inherited_methods(st)}
            names |= {m.name: Var("member", m.type, name=m.name) for m in self.data_members(st)}
            names |= {name: Var("method", ty.VOID, name=name) for name in overloads}
            names |= statics | types
            outer = self.definition_scope(scope)
            static_fns = {name: Var("method", ty.VOID, name=name) for name, fns in
                          overloads.items() if all(fn.static for fn in fns)}
            self.struct_methods[st] = StructMethods(
                overloads, Scope(names, outer), node.constructors,
                Scope(dict(statics) | types | static_fns, outer))
            if instance is not None:
                return st  # compiled where first used, as C++ instantiates them
            # Compiled now, called or not, as C++ compiles every member function it defines
            # (a member function template only for the arguments of a call).
            for fns in overloads.values():
                for fn in fns:   # (one declared only is compiled where it is defined)
                    if not fn.template_params and fn.body is not None:
                        self.member_code(st, fn, {})
            for ctor in node.constructors:
                if not ctor.template_params:
                    self.constructor_code(st, ctor, {})
        return st

    def base_classes(self, node: ast.StructDef, scope: Scope) -> list[StructType]:
        """The struct types `node` derives from, in order."""
        bases: list[StructType] = []
        for b in node.bases:
            t = self.resolve_type(b, scope)
            if not isinstance(t, StructType):
                self.error(f"base specifier must name a class, not '{t}'", b)
            self.require_complete(t, b, "base class has incomplete type '{}'")
            if t in bases:
                self.error(f"base class '{t}' specified more than once as a direct base class",
                           b)
            bases.append(t)
        return bases

    def data_members(self, st: StructType) -> list[ty.Member]:
        """The data members `st` can name: its own, then those of its bases not hidden."""
        found = [m for m in st.members if not m.name.startswith(ty.BASE_PREFIX)]
        for base in self.struct_bases.get(st, []):
            found += [m for m in self.data_members(base) if all(f.name != m.name for f in found)]
        return found

    def inherited_methods(self, st: StructType) -> set[str]:
        """Names of the member functions `st` inherits from its bases."""
        names: set[str] = set()
        for base in self.struct_bases.get(st, []):
            names |= set(self.methods_of(base)) | self.inherited_methods(base)
        return names

    def base_with_method(self, st: StructType, name: str, obj: E, coord) -> E | None:
        """The base class subobject of `obj` (a `st`) whose class declares or inherits the
        member function `name`, as an object of the base type; None if no base has it."""
        for base in self.struct_bases.get(st, []):
            if name in self.methods_of(base) or name in self.inherited_methods(base):
                member = next((m for m in st.members if m.type is base
                               and m.name.startswith(ty.BASE_PREFIX)), None)
                return self.subobject(obj, base, member.offset if member else 0, coord)
        return None

    def is_base_of(self, base: Type, derived: Type) -> bool:
        """Whether `base` is a direct or indirect base class of `derived`."""
        return any(b == base or self.is_base_of(base, b)
                   for b in self.struct_bases.get(derived, []))

    def derivation_cost(self, base: Type, derived: Type) -> float:
        """How a derived-to-base conversion ranks: a conversion (2), the nearer base the
        better (C++ [over.ics.rank]/4.4: `D` to `B` beats `D` to `A` where `B` derives from
        `A`)."""
        def steps(t: Type) -> int:
            return min((1 if b == base else 1 + steps(b) for b in self.struct_bases.get(t, [])
                        if b == base or self.is_base_of(base, b)), default=0)
        return 2 + 0.001 * steps(derived)

    def as_base(self, obj: E, base: StructType, coord) -> E | None:
        """The subobject of `obj` of its (direct or indirect) base class `base`, as an object
        of that type; None if `base` is not a base of `obj`'s struct."""
        st = obj.type
        if not isinstance(st, StructType):
            return None
        for b in self.struct_bases.get(st, []):
            member = next((m for m in st.members if m.type is b
                           and m.name.startswith(ty.BASE_PREFIX)), None)
            sub = self.subobject(obj, b, member.offset if member else 0, coord)
            found = sub if b == base else self.as_base(sub, base, coord)
            if found is not None:
                return found
        return None

    def base_offset(self, st: Type, base: Type) -> int | None:
        """Where the subobject of (direct or indirect) base class `base` starts inside a
        `st`, in bytes; None where `base` is not a base class of `st`."""
        if not isinstance(st, StructType) or not isinstance(base, StructType):
            return None
        for b in self.struct_bases.get(st, []):
            member = next((m for m in st.members if m.type is b
                           and m.name.startswith(ty.BASE_PREFIX)), None)
            inner = 0 if b == base else self.base_offset(b, base)
            if inner is not None:
                return (member.offset if member else 0) + inner
        return None

    def subobject(self, obj: E, t: StructType, offset: int, coord) -> E:
        """The object of type `t` at byte `offset` inside the object `obj`."""
        if obj.loc is not None:
            bloc = obj.loc

            def loc(f, lanes):
                where = bloc(f, lanes)
                return MemLoc(where.region, where.off + offset)
            return self.with_load(E(t, None, coord, loc=loc, readonly=obj.readonly,
                                    space=obj.space))
        bev = obj.ev
        return E(t, lambda f, lanes: get(bev(f, lanes), offset, t), coord)

    def conversion_function(self, st: StructType, t: Type, explicit: bool
                            ) -> tuple[StructType, ast.ConversionFunction, dict] | None:
        """The conversion function (`operator T()`) of `st` or a base that converts a `st`
        to `t`, with the template arguments of a conversion function template (deduced from
        `t`): one returning `t` exactly, else the only one whose result converts to `t` by a
        standard conversion; None if there is none. `explicit` ones count only in casts."""
        owners = [st]
        candidates = []
        while owners:
            owner = owners.pop(0)
            for fn in self.methods_of(owner).get(ast.CONVERSION, []):
                if explicit or not fn.explicit:
                    scope = self.struct_methods[owner].scope
                    bindings = self.conversion_arguments(fn, t, scope)
                    if bindings is not None:
                        rt = self.resolve_type(fn.return_type, Scope(bindings, scope))
                        candidates.append((owner, fn, bindings, rt))
            owners += self.struct_bases.get(owner, [])
        exact = [(owner, fn, bindings) for owner, fn, bindings, rt in candidates if rt == t]
        if exact:
            return exact[0]
        standard = [(owner, fn, bindings) for owner, fn, bindings, rt in candidates
                    if ty.is_arithmetic(rt) and ty.is_arithmetic(t) and not _enumeration(t)
                    and not (isinstance(rt, ty.ScalarType) and rt.scoped_enum)]
        return standard[0] if len(standard) == 1 else None

    def after_conversion_function(self, found: tuple[StructType, ast.ConversionFunction,
                                                     dict], t: Type) -> int:
        """What the standard conversion from what the conversion function `found` (as
        `conversion_function` gives it) returns to `t` costs (0 exact, 1 promotion, 2 other)."""
        owner, fn, bindings = found
        rt = self.resolve_type(fn.return_type, Scope(bindings, self.struct_methods[owner].scope))
        if rt == t or not (isinstance(rt, ScalarType) and isinstance(t, ScalarType)):
            return 0
        return 1 if ty.is_promotion(rt, t) else 2

    def conversion_arguments(self, fn: ast.ConversionFunction, t: Type,
                             scope: Scope) -> dict | None:
        """The template arguments of conversion function template `fn` for a conversion to
        `t` (`template <typename U> operator U()`: U is `t`), {} for a plain conversion
        function; None where deduction or substitution fails."""
        if not fn.template_params:
            return {}
        bindings: dict = {}
        try:
            self.deduce_from(fn.return_type, t, {p.name for p in fn.template_params}, bindings)
        except DeductionConflict:
            return None
        return self.with_default_arguments(fn.template_params, bindings, scope)

    def call_conversion(self, obj: E, owner: StructType, fn: ast.ConversionFunction,
                        bindings: dict, coord) -> E:
        """`obj.operator T()`: the conversion function `fn` of `owner` (obj's class or a base)
        called on `obj`, for `bindings` of a conversion function template's parameters."""
        if owner is not obj.type:
            member = next((m for m in obj.type.members if m.type is owner
                           and m.name.startswith(ty.BASE_PREFIX)), None)
            obj = self.subobject(obj, owner, member.offset if member else 0, coord)
        code = self.member_code(owner, fn, bindings)
        return self.call_code(code, [("ptr", this_pointer(obj, coord))], coord)

    def struct_alignment(self, node: ast.StructDef, scope: Scope) -> int:
        """The alignment `alignas(n)` asks of the struct (1 if none)."""
        if node.align is None:
            return 1
        n = self.const_int(node.align, scope, "alignment")
        if n <= 0 or n & (n - 1):
            self.error(f"requested alignment is not a positive power of 2 ({n})", node.align)
        return n

    def static_members(self, node: ast.StructDef, scope: Scope, shown: str
                       ) -> tuple[dict[str, Var], dict[str, Type]]:
        """The struct's `static constexpr` data members and its member types, in declaration
        order (each sees those before it): named `S::k`, `S::type` or, in its members, `k`,
        `type`."""
        statics: dict[str, Var] = {}
        types: dict[str, Type] = {}
        for d in node.statics:
            if isinstance(d, ast.StaticAssert):  # checked where the struct is defined
                self.static_assert(d, Scope(statics | types, scope))
                continue
            forward = types.get(d.name) if isinstance(d, ast.StructDef | ast.StructDeclaration
                                                      ) else None
            if not self.is_incomplete(forward) and (d.name in statics or d.name in types):
                self.error(f"duplicate member '{d.name}'", d, width=len(d.name))
            seen = Scope(statics | types, scope)
            if isinstance(d, ast.StructDeclaration):   # `struct I;`: a nested struct to come
                if forward is None:
                    types[d.name] = self.declare_nested_struct(d, f"{shown}::{d.name}")
                continue
            if isinstance(d, ast.EnumDef):  # a member type; unscoped, its enumerators too
                declared = Scope({}, seen)
                types[d.name] = self.define_enum(d, declared, f"{shown}::{d.name}")
                if not d.scoped:
                    statics |= {n: v for n, v in declared.names.items() if n != d.name}
                continue
            if isinstance(d, ast.StructDef):  # a nested struct, named `S::Inner` outside
                types[d.name] = self.define_struct(d, Scope({}, seen), f"{shown}::{d.name}",
                                                   forward)
                if forward is not None:
                    self.nested_defined_at[forward] = d.coord
                continue
            if isinstance(d, ast.TypeAlias) and d.template_params is not None:
                # a member alias template, instantiated where named (`alias_instance`)
                types[d.name] = ("alias_template", d, seen)  # type: ignore[assignment]
                continue
            if isinstance(d, ast.TypeAlias):
                # (the struct's program name is qualified, `na::S`; the injected name is `S`
                # unless the parser resolved it to the program name)
                if isinstance(d.type, ast.NamedType) and (
                        d.type.name in (node.name, node.name.rsplit("::", 1)[-1])) and not (
                        d.type.template_args or d.type.member_of):
                    types[d.name] = None  # the injected class name: the struct, once laid out
                    continue
                types[d.name] = self.resolve_type(d.type, seen)
                continue
            t, _, _ = self.resolve_decl_type(d.type, seen)
            if not isinstance(t, ScalarType | VectorType):
                self.error(f"a static data member of type '{t}' is not supported by metalsim",
                           d, hint="static constexpr members may be scalars or vectors")
            e = self.convert(self.expr(d.init, seen), t, d.init)
            if e.const is None:
                self.error(f"constexpr variable '{d.name}' must be initialized by a constant "
                           "expression", d.init)
            statics[d.name] = Var("const", t, readonly=True, const=e.const)
        return statics, types

    def member_type(self, node: ast.NamedType, scope: Scope) -> Type:
        """`S::type`, `typename S<T>::type`: the member type `node.name` of the struct
        `node.member_of`."""
        owner = self.resolve_type(node.member_of, scope)
        found = self.struct_types.get(owner, {}).get(node.name) if isinstance(
            owner, StructType) else None
        if found is None:
            self.error(f"no type named '{node.name}' in '{owner}'", node,
                       width=len(node.name))
        if isinstance(found, tuple):   # `typename S::template dtype_frag_t<U>`
            return self.alias_instance(found, node, scope)
        return found

    def static_member(self, node: ast.Name, scope: Scope) -> E | None:
        """`S::k`, `S<4>::k` or `S<T>::type::k` for a static data member `k`, or None if the
        qualifier does not name a struct."""
        st = self.qualifier_struct(node, scope)
        if st is None:
            return None
        this = scope.lookup("this")
        if (isinstance(this, Var) and node.name not in self.struct_statics.get(st, {})
                and isinstance(st, StructType) and st.member(node.name) is not None
                and (st == this.type.pointee or self.base_offset(this.type.pointee, st)
                     is not None)):
            # `B::v` in a member function: the data member of this object's `B` subobject.
            obj = self.expr(ast.Unary(node.coord, "*", ast.Name(node.coord, "this")), scope)
            if obj.type != st:
                obj = self.as_base(obj, st, node.coord)
            return self.struct_member(obj, ast.Member(node.coord, obj, node.name))
        v = self.static_of(st, node)
        return constant(v.const, v.type, node.coord)

    def static_of(self, st: Type, node: ast.Name) -> Var:
        """The static data member `node.name` of `st`, or a compile error naming both."""
        v = self.struct_statics.get(st, {}).get(node.name) if isinstance(st, StructType) else None
        if v is None:
            self.error(f"no static member named '{node.name}' in '{st}'", node,
                       width=len(node.name))
        return v

    def qualifier_struct(self, node: ast.Name, scope: Scope) -> StructType | None:
        """The struct a qualified name's qualifier names: `S`, `S<T>` (a struct or alias
        template's instance) then member types (`S<T>::Frag_t`); None if it names none."""
        parts = node.qualifier.split("::")
        for length in range(len(parts), 0, -1):   # the struct's program name may be `na::S`
            head, members = "::".join(parts[:length]), parts[length:]
            found = self.lookup_scope(node, scope).lookup(head)
            if isinstance(found, StructType | StructTemplate) or (
                    isinstance(found, tuple) and found[0] == "alias_template"):
                break
        else:
            return None
        st = self.resolve_type(ast.NamedType(
            node.coord, head, node.template_args if node.args_on_qualifier else None,
            namespace_scope=node.namespace_scope), scope)
        for member in members:
            inner = self.struct_types.get(st, {}).get(member)
            if inner is None:
                self.error(f"no type named '{member}' in '{st}'", node)
            st = inner
        return st if isinstance(st, StructType) else None

    def definition_scope(self, scope: Scope) -> Scope:
        """What the member functions of a struct defined in `scope` see: its types and
        constants; the variables of an enclosing function are not theirs to use (C++)."""
        if scope is self.globals:
            return scope
        names: dict = {}
        s: Scope | None = scope
        while s is not None and s is not self.globals:
            for name, v in s.names.items():
                if name not in names:
                    runtime = isinstance(v, Var) and v.kind not in ("const", "global_region")
                    names[name] = Var("enclosing_local", v.type, name=name) if runtime else v
            s = s.parent
        return Scope(names, self.globals)

    def is_member(self, scope: Scope, name: str, kind: str) -> bool:
        """Whether `name` in `scope` is a member of the struct whose member function this is
        ("member" for data, "method" for a member function)."""
        v = scope.lookup(name)
        return isinstance(v, Var) and v.kind == kind

    def s_StructDef(self, node: ast.StructDef, scope: Scope):
        self.define_struct(node, scope)
        return lambda f, lanes: lanes

    def struct_member(self, base: E, node: ast.Member) -> E:
        """`s.name`: an lvalue in the object's memory, or a value taken from a struct rvalue."""
        st: StructType = base.type
        self.require_complete(st, node, "member access into incomplete type '{}'")
        self.check_access(st, node.name, node)
        member = st.member(node.name)
        static = self.struct_statics.get(st, {}).get(node.name)
        if member is None and static is not None:
            # `idx.value`: a static member named through an object (C++ [expr.ref]); a
            # constant expression where the static is (MLX's `frag_at<idx.value>()`)
            return self.var_expr(static, node)
        if member is None:
            if node.name in self.methods_of(st):
                self.error(f"reference to non-static member function '{node.name}' must be "
                           f"called", node, hint=f"call it: '{node.name}(...)'")
            self.no_member(st, node)
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

    def declare_using_members(self, st: StructType, node: ast.StructDef, scope: Scope
                              ) -> None:
        """Records `node`'s `using B::f;` declarations: B must be a base class of `st`."""
        for target in node.using_members:
            base = self.qualifier_struct(target, scope)
            if base is None or not self.is_base_of(base, st):
                self.error(f"'{target.qualifier}' is not a base class of '{st}'", target)
            if target.name in self.methods_of(base) or target.name in self.inherited_methods(
                    base):
                self.struct_using.setdefault(st, {})[target.name] = base
            elif base.member(target.name) is None and target.name not in self.struct_types.get(
                    base, {}) and target.name not in self.struct_statics.get(base, {}):
                self.error(f"no member named '{target.name}' in '{base}'", target)

    def check_access(self, st: StructType, name: str, node: ast.Node) -> None:
        """Refuse naming `st`'s member `name` through an object where C++ forbids it: a
        private or protected member (or one reached through a private or protected base)
        outside every member function and the friends of the class declaring it. (Inside a
        member function, of any struct, metalsim allows it.)"""
        if not self.struct_access or self.access_from[0] is not None:
            return
        caller, via, owner = self.access_from[1], "", st
        while not self.declares_member(owner, name):
            bases = self.struct_bases.get(owner, [])
            base = next((b for b in bases if b.member(name) is not None
                         or name in self.methods_of(b) or name in self.inherited_methods(b)),
                        None)
            if base is None:
                return
            limited = self.struct_access.get(owner)
            access = limited.base_access[bases.index(base)] if limited is not None else "public"
            if access != "public" and caller not in limited.friends and not via:
                via = f"'{base}' is a {access} base of '{owner}'"
            owner = base
        limited = self.struct_access.get(owner)
        access = limited.restricted.get(name) if limited is not None else None
        if access is not None and caller in limited.friends:
            access = None
        if access is not None or via:
            self.error(f"'{name}' is a {access} member of '{owner}'" if access else
                       f"'{name}' is inaccessible: {via}", node,
                       hint="name it inside a member function or a friend of the class, or "
                            "declare it after 'public:'")

    def declares_member(self, st: StructType, name: str) -> bool:
        """Whether `st` itself declares a data member or member function `name`."""
        return name in self.methods_of(st) or any(
            m.name == name for m in st.members if not m.name.startswith(ty.BASE_PREFIX))

    def used_overloads(self, st: StructType, name: str
                       ) -> list[tuple[StructType, ast.MemberFunction]]:
        """The member functions `name` that `using B::name;` in `st` brings from base B, each
        with the class declaring it, less those `st`'s own of the same parameter types and
        qualifiers hide (C++ [namespace.udecl]/15)."""
        base = self.struct_using.get(st, {}).get(name)
        while base is not None and name not in self.methods_of(base):
            base = next((b for b in self.struct_bases.get(base, [])
                         if name in self.methods_of(b) or name in self.inherited_methods(b)),
                        None)
        if base is None:
            return []
        own = self.methods_of(st).get(name, [])
        scope, base_scope = self.struct_methods[st].scope, self.struct_methods[base].scope

        def signature(fn: ast.MemberFunction, at: Scope) -> tuple:
            return (fn.const, fn.space, tuple(self.resolve_decl_type(p.type, at)
                                              for p in fn.params), bool(fn.template_params))
        hidden = {signature(fn, scope) for fn in own}
        return [(base, fn) for fn in self.methods_of(base)[name]
                if signature(fn, base_scope) not in hidden]

    def methods_of(self, st: StructType) -> dict[str, list[ast.MemberFunction]]:
        """The member functions of `st` by name (none for a plain aggregate)."""
        methods = self.struct_methods.get(st)
        return methods.overloads if methods is not None else {}

    def no_member(self, st: StructType, node: ast.Member | ast.MethodCall) -> None:
        """Report `node` naming no member of `st`, suggesting a close name."""
        names = [m.name for m in self.data_members(st)] + list(self.methods_of(st))
        self.error(f"no member named '{node.name}' in 'struct {st}'", node,
                   hint=self.suggest(node.name, names))

    def qualified_subobject(self, obj: E, node: ast.Member | ast.MethodCall,
                            scope: Scope) -> E:
        """The object whose member `d.B::m` names: `d` itself, or its `B` subobject."""
        qualifier = node.qualifier
        named = self.resolve_type(qualifier if isinstance(qualifier, ast.NamedType)
                                  else ast.NamedType(node.coord, qualifier), scope)
        found = obj if named == obj.type else self.as_base(obj, named, node.coord)
        if found is None:
            self.error(f"'{named}' is not a base of '{obj.type}'", node)
        return found

    # --- member functions -------------------------------------------------------------------
    def call_member(self, obj: E, node: ast.MethodCall, scope: Scope) -> E:
        """`obj.name(args)`: a call of a member function with `this` pointing at `obj` (a
        temporary struct is first placed in thread memory, as C++ materializes it)."""
        if node.qualifier:   # `d.B::f()`: B's member function, on d's B subobject
            obj = self.qualified_subobject(obj, node, scope)
            node = replace(node, qualifier="")
        st: StructType = obj.type
        self.require_complete(st, node, "member access into incomplete type '{}'")
        self.check_access(st, node.name, node)
        overloads = self.methods_of(st).get(node.name)
        if not overloads:
            base = self.base_with_method(st, node.name, obj, node.coord)
            if base is not None:  # a member function of a base class, on that subobject
                return self.call_member(base, node, scope)
        if not overloads and node.name == "operator()":
            self.error(f"type '{st}' does not provide a call operator", node,
                       hint="define 'R operator()(...) const { ... }' in the struct")
        if not overloads:
            member = st.member(node.name)
            if member is not None:
                self.error(f"called object type '{member.type}' is not a function", node)
            self.no_member(st, node)
        args = [self.expr(a, scope) for a in node.args]
        explicit = None if node.template_args is None else [
            self.explicit_argument(a, scope) for a in node.template_args]
        space, const = self.object_space(obj)
        used = self.used_overloads(st, node.name)
        fn, bindings = self.resolve_member(st, node, overloads + [f for _, f in used], args,
                                           space, const, explicit)
        owner = next((base for base, f in used if f is fn), None)
        if owner is not None:   # a base's, brought in by `using B::f;`: on that subobject
            return self.call_member(self.as_base(obj, owner, node.coord), node, scope)
        code = self.member_code(st, fn, bindings)
        arg_evs = [("ptr", this_pointer(obj, node.coord))] + self.bind_arguments(
            code.params[1:], fn, args, scope)
        return self.call_code(code, arg_evs, node.coord)

    def object_space(self, obj: E) -> tuple[str, bool]:
        """The address space and constness that `this` has for a call on `obj` (a temporary
        is a non-const thread object)."""
        return (obj.space or "thread", obj.readonly) if obj.loc is not None else (
            "thread", False)

    def member_code(self, st: StructType, fn: ast.MemberFunction,
                    bindings: dict) -> FunctionCode:
        """The compiled member function (for `bindings` of a member function template's
        parameters), `this` a pointer to `st` as `fn` qualifies it."""
        this = PointerType(st, fn.space or "thread", fn.const)
        methods = self.struct_methods[st]
        # A static member function gets a hidden, unused `this` (so that it is called as the
        # other member functions are) but does not see the members.
        with self.instantiating_member(st, fn):
            return self.instantiate(fn, bindings,
                                    methods.static_scope if fn.static else methods.scope, this)

    def call_static(self, node: ast.Call, scope: Scope) -> E | None:
        """`S::f(args)` for a static member function `f` of struct `S` (or of an instance of a
        struct template, `S<T>::f(args)`); None if the qualifier does not name a struct."""
        name = node.func
        st = self.qualifier_struct(name, scope)
        if st is None:
            return None
        while name.name not in self.methods_of(st) and name.name in self.inherited_methods(st):
            st = next(b for b in self.struct_bases[st]   # a static function of a base class
                      if name.name in self.methods_of(b) or name.name in self.inherited_methods(b))
        overloads = self.methods_of(st).get(name.name, [])
        if not overloads:
            self.error(f"no static member function named '{name.name}' in '{st}'", name,
                       width=len(name.name))
        if not all(fn.static for fn in overloads):
            this = scope.lookup("this")
            obj = None
            if isinstance(this, Var) and this.kind == "ptr":
                obj = self.dereference(self.var_expr(this, name), name)
                obj = obj if obj.type == st else self.as_base(obj, st, node.coord)
            if obj is not None:   # `B::f()` in a member function of a class derived from B
                return self.call_member(obj, ast.MethodCall(node.coord, name, name.name,
                                                            node.args), scope)
            self.error(f"call to non-static member function '{name.name}' without an object "
                       "argument", name, width=len(name.name))
        nowhere = E(st, lambda f, lanes: np.zeros((lanes.n, st.size), np.uint8), node.coord)
        explicit = None if name.args_on_qualifier else name.template_args  # `S::f<T>(...)`
        return self.call_member(nowhere, ast.MethodCall(node.coord, name, name.name, node.args,
                                                        False, explicit), scope)

    def explicit_argument(self, arg: ast.Node, scope: Scope) -> Type | Var:
        """An explicit template argument (`x.template f<T, 4>()`) resolved where it is
        written: a type, or a constant."""
        named_type = isinstance(arg, ast.NamedType) and bool(
            arg.template_args or arg.member_of or arg.name == "decltype" or isinstance(
                scope.lookup(arg.name) or ty.TYPE_NAMES.get(arg.name), Type))
        if isinstance(arg, ast.PointerType | ast.ArrayType) or named_type:
            return self.resolve_type(arg, scope)
        if isinstance(arg, ast.NamedType):  # a bare name parsed as a type
            arg = ast.Name(arg.coord, arg.name)
        e = self.expr(arg, scope)
        if e.const is None:
            self.error("template argument must be a constant", arg)
        return Var("const", e.type, readonly=True, const=e.const)

    def resolve_member(self, st: StructType, node: ast.MethodCall,
                       overloads: list[ast.MemberFunction], args: list[E], space: str,
                       const: bool, explicit: list | None = None
                       ) -> tuple[ast.MemberFunction, dict]:
        """The overload for `args` on an object in `space` (const or not), and the deduced
        arguments of a member function template, as C++ and Metal choose them: `this` never
        changes address space, and a const object needs a const member function; a non-const
        object prefers the non-const overload."""
        outer = self.struct_methods[st].scope
        viable = []
        notes: list[str] = []
        for fn in overloads:
            required = sum(1 for p in fn.params if p.default is None)
            if not required <= len(args) <= len(fn.params):
                continue
            if (explicit is not None and not fn.template_params) or fn.template_params == []:
                # even an empty argument list (`s.g<>(a)`) rules out non-templates; an explicit
                # specialisation replaces the body of the template chosen (`specialized`)
                continue
            bindings = self.deduce(fn, explicit or [], args, outer, notes) if (
                fn.template_params) else {}
            if bindings is not None and not self.substitutes(fn, bindings, notes, outer):
                bindings = None   # SFINAE in the return type (MLX's `Max::operator()`)
            cost = None if bindings is None else self.match_cost(fn, bindings, args, outer)
            if cost is not None:
                # As for free functions: a non-template, then the more specialized, wins.
                if fn.template_params:
                    cost = cost.plus_template(0.5 + 0.1 * self.generic_params(fn))
                viable.append((cost, fn, bindings))
        name = node.name
        if not viable:
            if notes:  # as clang words it, the reason in its note
                self.error(f"no matching member function for call to '{name}'", node,
                           hint=notes[0])
            shown = ", ".join(str(self.rvalue(a).type) for a in args)
            self.error(f"no matching member function for call to '{name}({shown})'", node)
        # The object is the first argument: a non-const one binds better to a non-const
        # `this` than to a const one (C++ [over.ics.rank]/3.2.6).
        fits = [(cost.with_object("" if const or fn.static else ranking.CONST_REF if fn.const
                                  else ranking.REF), fn, bindings)
                for cost, fn, bindings in viable
                if fn.static or (fn.space or "thread") == space and (fn.const or not const)]
        if not fits:
            fn = ranking.best(viable)[0][1]
            if (fn.space or "thread") != space:
                qualifier = f"{'const ' if fn.const else ''}{space}"
                self.error(f"'this' argument to member function '{name}' is in the {space} "
                           f"address space, but the function is not marked '{space}'", node,
                           hint=f"Metal gives 'this' the thread address space unless the "
                                f"member function says otherwise: declare "
                                f"'{name}(...) {qualifier} {{ ... }}'")
            self.error(f"'this' argument to member function '{name}' has type 'const {st}', "
                       f"but function is not marked const", node)
        chosen = ranking.best(fits)
        if len(chosen) > 1:
            self.error(f"call to member function '{name}' is ambiguous", node)
        return self.specialized(*chosen[0][1:], owner=st)

    def aggregate(self, t: StructType, init: ast.InitList, scope: Scope) -> E:
        """A struct temporary from an initializer list (`S{1, 2.0f}`, `return {a, b};`); for
        a struct with constructors, a constructor call."""
        self.require_complete(t, init, "initialization of incomplete type '{}'")
        if self.constructors_of(t):
            return self.construct_temp(t, [self.expr(a, scope) for a in init.items], init)
        parts = [(off, et, self.init_value(et, item, scope).ev)
                 for off, et, item in self.flatten_init(t, init, 0, scope)]
        size = t.size

        def ev(f, lanes):
            buf = np.zeros((lanes.n, size), np.uint8)  # padding bytes of a temporary are 0
            for off, et, pev in parts:
                put(buf, off, et, pev(f, lanes))
            return buf
        return E(t, ev, init.coord)

    def construct_struct(self, t: StructType, node: ast.Construct, scope: Scope) -> E:
        """`S{...}` aggregate-initializes; `S()` value-initializes; `S(s)` copies. C++14 has
        no parenthesised aggregate initialization. A struct with constructors calls one."""
        if self.constructors_of(t):
            return self.construct_temp(t, [self.expr(a, scope) for a in node.args], node)
        if node.braces or not node.args:
            return self.aggregate(t, ast.InitList(node.coord, node.args), scope)
        if len(node.args) == 1:
            arg = self.expr(node.args[0], scope)
            if arg.type == t or self.base_offset(arg.type, t) is not None:
                return self.convert(arg, t, node)   # a copy (of the base subobject: `B(d)`)
        self.error(f"no matching constructor for initialization of '{t}'", node,
                   hint=f"aggregate-initialize with braces: {t}{{...}}")

    def assign_struct(self, t: StructType, node: ast.Assign) -> None:
        """C++ deletes the copy assignment of a struct with a const member."""
        consts = [m.name for m in t.members if m.const]
        if consts:
            self.error(f"cannot assign to a struct '{t}' with const member '{consts[0]}'",
                       node)


def _enumeration(t: Type) -> bool:
    """Whether `t` is an enumeration, which no standard conversion gives."""
    return isinstance(t, ty.ScalarType) and t.enum is not None
