"""Lower the AST to closures over lane arrays, resolving names and C++ types on the way.

Compiling an expression yields an `E`: its static type, an evaluator `ev(frame, lanes)` returning
one value per active lane, and for lvalues a locator `loc(frame, lanes)`. Compiling a statement
yields `run(frame, lanes) -> lanes`, the lanes that fall through to the next statement; lanes
that `break`, `continue` or `return` are parked in the frame until their construct completes.
Name lookup and type checking happen here, once per kernel instantiation, so that running a
kernel costs Python work per AST node executed, never per thread.
"""

from __future__ import annotations

import difflib
import math
import struct
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fractions import Fraction

import numpy as np

from metalsim.diagnostics import CompileError, Coord, SourceMap
from metalsim.exec import arith, mathlib
from metalsim.exec import memory as mem
from metalsim.exec.machine import EMPTY, Lanes, union
from metalsim.exec.values import Frame, MemLoc, Ptr, PtrSlot, RefSlot, VarLoc
from metalsim.lang import ast
from metalsim.lang import types as ty
from metalsim.lang.types import (
    BOOL,
    FLOAT,
    INT,
    LONG,
    ULONG,
    ArrayType,
    AtomicType,
    PointerType,
    ScalarType,
    Type,
    VectorType,
)

Ev = Callable[[Frame, Lanes], object]
Run = Callable[[Frame, Lanes], Lanes]

SWIZZLE = {c: i for i, c in enumerate("xyzw")} | {c: i for i, c in enumerate("rgba")}


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


@dataclass
class Var:
    """A name in scope. `kind`: value, ptr, ref, region, const, global_region."""

    kind: str
    type: Type
    slot: int = -1
    readonly: bool = False
    const: np.ndarray | None = None
    space: str | None = None
    region: object = None
    init_slot: int = -1     # slot of the "written" mask of a variable declared uninitialised
    name: str = ""


@dataclass
class FunctionCode:
    """A compiled function instantiation."""

    name: str
    return_type: Type
    params: list[tuple[Var, bool]] = field(default_factory=list)  # (var, is_reference)
    nslots: int = 0
    body: Run | None = None
    threadgroup_bytes: int = 0


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


def _zeros(t: Type, n: int) -> np.ndarray:
    return np.zeros((n,) + ty.lane_shape(t), ty.scalar_of(t).dtype)


class Compiler:
    """Compiles one translation unit's kernel (and what it calls) for one instantiation."""

    def __init__(self, unit: ast.TranslationUnit, source_map: SourceMap,
                 builtins: dict[str, Callable], math_variant: str = "precise",
                 tracing: bool = False) -> None:
        self.tracing = tracing  # also follow where values come from (for diagrams)
        self.unit = unit
        self.sm = source_map
        self.builtins = builtins
        self.math_variant = math_variant
        self.functions: dict[str, list[ast.FunctionDef]] = {}
        self.globals = Scope({})
        self.instances: dict[tuple, FunctionCode] = {}
        self.fn: FunctionCode | None = None
        self.address_taken: set[str] = set()
        self.decl_ids = 0

    # --- errors -----------------------------------------------------------------------------
    def error(self, message: str, node: ast.Node | Coord, hint: str = "", width: int = 1):
        coord = node if isinstance(node, Coord) else node.coord
        raise CompileError(message, coord, self.sm, hint=hint, width=width)

    def suggest(self, name: str, candidates: list[str]) -> str:
        close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
        return f"did you mean '{close[0]}'?" if close else ""

    # --- translation unit -------------------------------------------------------------------
    def declare_globals(self) -> None:
        for item in self.unit.items:
            if isinstance(item, ast.FunctionDef):
                self.functions.setdefault(item.name, []).append(item)
            elif isinstance(item, ast.TypeAlias):
                if item.template_params:
                    self.globals.names[item.name] = ("alias_template", item)  # type: ignore
                else:
                    self.globals.names[item.name] = self.resolve_type(item.type, self.globals)
            elif isinstance(item, ast.DeclStmt):
                for d in item.decls:
                    self.declare_global_var(d)
            elif isinstance(item, ast.StaticAssert):
                self.static_assert(item, self.globals)

    def declare_global_var(self, d: ast.VarDecl) -> None:
        t, const, space = self.resolve_decl_type(d.type, self.globals)
        if space not in (None, "constant") and not d.constexpr:
            self.error("program scope variable must reside in constant address space", d)
        if d.init is None:
            self.error(f"default initialization of an object of const type '{t}'", d)
        if isinstance(t, ArrayType):
            region = mem.Region(d.name, "constant", t, t.size)
            self.fill_constant_array(region, t, d.init, self.globals)
            self.globals.names[d.name] = Var("global_region", t, readonly=True,
                                             space="constant", region=region)
            return
        e = self.convert(self.expr(d.init, self.globals), t, d)
        if e.const is None:
            self.error("initializer of a program scope variable is not a constant expression",
                       d.init)
        self.globals.names[d.name] = Var("const", t, readonly=True, const=e.const)

    def fill_constant_array(self, region: mem.Region, t: ArrayType, init: ast.Node,
                            scope: Scope) -> None:
        for off, et, item in self.flatten_init(t, init, 0):
            e = self.convert(self.expr(item, scope), et, item)
            if e.const is None:
                self.error("initializer element is not a compile-time constant", item)
            elem = ty.scalar_of(et)
            view = region.view(elem.dtype)
            view[0, off // elem.size: off // elem.size + (et.n if isinstance(et, VectorType)
                                                          else 1)] = e.const
        region.data[0][:] = region.data[0]  # contents are fixed from here on

    def flatten_init(self, t: Type, init: ast.Node, base: int):
        """(byte offset, element type, expression) for each leaf of an aggregate initializer."""
        if isinstance(t, ArrayType):
            if not isinstance(init, ast.InitList):
                self.error("array initializer must be an initializer list", init)
            if len(init.items) > t.length:
                self.error("excess elements in array initializer", init.items[t.length])
            for i in range(t.length):
                off = base + i * t.elem.size
                if i < len(init.items):
                    yield from self.flatten_init(t.elem, init.items[i], off)
                else:
                    yield from self.zero_init(t.elem, off, init.coord)
        elif isinstance(init, ast.InitList):
            if isinstance(t, VectorType):
                yield base, t, ast.Construct(init.coord, ast.NamedType(init.coord, t.name),
                                             init.items)
            elif len(init.items) == 1:
                yield base, t, init.items[0]
            elif not init.items:
                yield from self.zero_init(t, base, init.coord)
            else:
                self.error("excess elements in scalar initializer", init.items[1])
        else:
            yield base, t, init

    def zero_init(self, t: Type, base: int, coord: Coord):
        if isinstance(t, ArrayType):
            for i in range(t.length):
                yield from self.zero_init(t.elem, base + i * t.elem.size, coord)
        else:
            yield base, t, ast.IntLiteral(coord, 0, text="0")

    def static_assert(self, node: ast.StaticAssert, scope: Scope) -> None:
        e = self.expr(node.cond, scope)
        if e.const is None:
            self.error("static_assert expression is not an integral constant expression",
                       node.cond)
        if not bool(np.all(e.const)):
            self.error(f"static assertion failed{': ' + node.message if node.message else ''}",
                       node)

    # --- types ------------------------------------------------------------------------------
    def resolve_type(self, node: ast.Node, scope: Scope) -> Type:
        return self.resolve_decl_type(node, scope)[0]

    def resolve_decl_type(self, node: ast.Node, scope: Scope) -> tuple[Type, bool, str | None]:
        """(type, is the object const, address space) of a declared type; references are
        returned as their referee type with space set (the caller checks ReferenceType)."""
        if isinstance(node, ast.ReferenceType):
            return self.resolve_decl_type(node.referee, scope)
        if isinstance(node, ast.ArrayType):
            elem, const, space = self.resolve_decl_type(node.element, scope)
            if node.size is None:
                return ArrayType(elem, -1), const, space
            n = self.const_int(node.size, scope, "array size")
            if n <= 0:
                self.error(f"array size must be positive (it is {n})", node.size)
            return ArrayType(elem, n), const, space
        if isinstance(node, ast.PointerType):
            pointee, const, space = self.resolve_decl_type(node.pointee, scope)
            if space is None:
                self.error("pointer type must have an explicit address space", node,
                           hint="write e.g. 'device float*', 'threadgroup float*' or "
                                "'thread float*'")
            return PointerType(pointee, space, const), node.const, None
        assert isinstance(node, ast.NamedType)
        return self.named_type(node, scope), node.const, node.space

    def named_type(self, node: ast.NamedType, scope: Scope) -> Type:
        name = node.name
        if name in ("vec", "packed_vec"):
            args = node.template_args or []
            if len(args) != 2:
                self.error("vec<T, N> takes two template arguments", node)
            elem = self.resolve_type(args[0], scope)
            n = self.const_int(args[1], scope, "vector size")
            if not isinstance(elem, ScalarType) or n not in (2, 3, 4):
                self.error(f"invalid vector type vec<{elem}, {n}>", node)
            return VectorType(elem, n, packed=name == "packed_vec")
        if name == "simdgroup_matrix":
            args = node.template_args or []
            elem = self.resolve_type(args[0], scope) if args else None
            dims = [self.const_int(a, scope, "matrix size") for a in args[1:]]
            if elem not in (ty.HALF, ty.BFLOAT, ty.FLOAT) or dims not in ([8, 8], [8]):
                self.error("simdgroup_matrix<T, 8, 8> needs T = half, bfloat or float", node)
            return ty.SimdMatrixType(elem)
        if name == "atomic":
            args = node.template_args or []
            elem = self.resolve_type(args[0], scope) if args else None
            if not isinstance(elem, ScalarType):
                self.error("atomic<T> needs a scalar type argument", node)
            return AtomicType(elem)
        found = scope.lookup(name)
        if isinstance(found, Type):
            return found
        if isinstance(found, tuple) and found[0] == "alias_template":
            alias = found[1]
            inner = Scope(self.bind_template(alias.template_params, node.template_args or [],
                                             scope, node), self.globals)
            return self.resolve_type(alias.type, inner)
        t = ty.TYPE_NAMES.get(name)
        if t is not None:
            return t
        if name == "auto":
            return None  # type: ignore[return-value]  # deduced by the declaration
        candidates = list(ty.TYPE_NAMES) + [k for k in scope.visible()
                                            if isinstance(scope.lookup(k), Type)]
        self.error(f"unknown type name '{name}'", node, hint=self.suggest(name, candidates),
                   width=len(name))

    def bind_template(self, params: list[ast.TemplateParam], args: list, scope: Scope,
                      where: ast.Node) -> dict:
        names: dict = {}
        for i, p in enumerate(params):
            arg = args[i] if i < len(args) else p.default
            if arg is None:
                self.error(f"missing template argument for '{p.name}'", where)
            names[p.name] = self.template_value(p, arg, scope)
        return names

    def template_value(self, p: ast.TemplateParam, arg, scope: Scope):
        if isinstance(arg, (Type, Var)):  # already resolved (deduced or instantiated)
            return arg
        if p.kind is None:
            return self.resolve_type(arg, scope)
        t = self.resolve_type(p.kind, scope)
        e = self.expr(arg, scope) if not isinstance(arg, ast.NamedType) else None
        if e is None or e.const is None:
            self.error(f"template argument for '{p.name}' must be a constant", arg)
        return Var("const", t, readonly=True, const=self.convert(e, t, arg).const)

    def const_int(self, node: ast.Node, scope: Scope, what: str) -> int:
        if isinstance(node, ast.NamedType):  # a bare name parsed as a type in a template list
            node = ast.Name(node.coord, node.name)
        e = self.expr(node, scope)
        if e.const is None or not ty.is_integer(e.type):
            self.error(f"{what} is not an integral constant expression", node)
        return int(e.const)

    # --- conversions ------------------------------------------------------------------------
    def rvalue(self, e: E) -> E:
        """Array-to-pointer decay; everything else is already an rvalue evaluator."""
        if isinstance(e.type, AtomicType):
            self.error(f"an atomic ('{e.type}') cannot be read directly", e.coord,
                       hint="use atomic_load_explicit(&x, memory_order_relaxed)")
        if isinstance(e.type, ArrayType) and e.loc is not None:
            loc, elem, space = e.loc, e.type.elem, e.space

            def ev(f, lanes):
                where = loc(f, lanes)
                return Ptr(where.region, where.off)
            return E(PointerType(elem, space or "thread", e.readonly), ev, e.coord)
        return e

    def convert(self, e: E, t: Type, where: ast.Node | Coord, explicit: bool = False) -> E:
        """Convert `e` to type `t` as C++ does (implicitly unless `explicit`)."""
        e = self.rvalue(e)
        src = e.type
        if src == t:
            return e
        coord = where if isinstance(where, Coord) else where.coord
        if isinstance(t, PointerType) or isinstance(src, PointerType):
            return self.convert_pointer(e, t, coord, explicit)
        if not (ty.is_arithmetic(src) and ty.is_arithmetic(t)):
            self.error(f"cannot convert '{src}' to '{t}'", coord)
        if isinstance(t, VectorType) and isinstance(src, VectorType):
            if src.n == t.n and src.elem == t.elem:  # packed <-> aligned: same values
                return E(t, e.ev, coord, const=e.const)
            if src.n != t.n or not explicit:
                self.error(f"cannot convert '{src}' to '{t}' implicitly" if src.n == t.n
                           else f"cannot convert '{src}' to '{t}'", coord,
                           hint=f"write {t.name}(...) to convert" if src.n == t.n else "")
            return self.map_value(e, t, lambda v: arith.convert(v, src, t))
        if isinstance(src, VectorType):
            self.error(f"cannot convert vector '{src}' to scalar '{t}'", coord,
                       hint="pick a component, e.g. v.x")
        if isinstance(t, VectorType):
            elem = t.elem
            k = t.n

            def splat(v):
                c = arith.convert(np.asarray(v), src, elem)
                return np.repeat(c[..., None], k, axis=-1)
            return self.map_value(e, t, splat)
        if not explicit and {src, t} in ({ty.HALF, ty.BFLOAT},) :
            self.error(f"cannot convert '{src}' to '{t}' implicitly", coord)
        return self.map_value(e, t, lambda v: arith.convert(np.asarray(v), src, t))

    def map_value(self, e: E, t: Type, fn: Callable) -> E:
        if e.const is not None:
            c = fn(e.const)
            return E(t, lambda f, lanes: c, e.coord, const=c)
        ev = e.ev
        return E(t, lambda f, lanes: fn(ev(f, lanes)), e.coord)

    def convert_pointer(self, e: E, t: Type, coord: Coord, explicit: bool) -> E:
        src = e.type
        if not (isinstance(src, PointerType) and isinstance(t, PointerType)):
            self.error(f"cannot convert '{src}' to '{t}'", coord)
        if src.space != t.space:
            self.error(f"cannot convert '{src}' to '{t}': address spaces differ", coord)
        if src.const and not t.const and not explicit:
            self.error(f"cannot convert '{src}' to '{t}': it drops 'const'", coord)
        if src.pointee != t.pointee and not explicit:
            self.error(f"cannot convert '{src}' to '{t}' implicitly", coord,
                       hint=f"cast explicitly: ({t})")
        return E(t, e.ev, coord)

    def arith_operand(self, e: E, node: ast.Node) -> E:
        e = self.rvalue(e)
        if not ty.is_arithmetic(e.type):
            self.error(f"invalid operand of type '{e.type}'", node)
        return e

    # --- expressions ------------------------------------------------------------------------
    def expr(self, node: ast.Node, scope: Scope) -> E:
        method = getattr(self, "x_" + type(node).__name__, None)
        if method is None:
            self.error("unsupported expression", node)
        return method(node, scope)

    def x_IntLiteral(self, node: ast.IntLiteral, scope: Scope) -> E:
        if node.text.startswith("'"):  # a character literal has type char in C++
            return constant((node.value + 128) % 256 - 128, ty.CHAR, node.coord)
        try:
            t = arith.parse_int_literal_type(node.value, node.suffix, node.hex_or_octal)
        except ValueError as exc:
            self.error(str(exc), node)
        return constant(node.value % (1 << t.bits) if not t.signed and node.value < 0
                        else node.value, t, node.coord)

    def x_FloatLiteral(self, node: ast.FloatLiteral, scope: Scope) -> E:
        t = {"h": ty.HALF, "bf": ty.BFLOAT}.get(node.suffix, FLOAT)
        c = np.asarray(arith.round_from_float64(np.array([odd_double(node)]), t.dtype)[0])
        return E(t, lambda f, lanes: c, node.coord, const=c)

    def x_BoolLiteral(self, node: ast.BoolLiteral, scope: Scope) -> E:
        return constant(node.value, BOOL, node.coord)

    def x_Name(self, node: ast.Name, scope: Scope) -> E:
        qualified = self.builtins.get(("qualified_name", node.qualifier))
        if qualified is not None:
            return qualified(self, node, scope)
        v = scope.lookup(node.name) if not node.qualifier else None
        if isinstance(v, Var):
            return self.var_expr(v, node)
        builtin = self.builtins.get(("name", node.qualifier, node.name)) or self.builtins.get(
            ("name", "", node.name))
        if builtin is not None:
            return builtin(self, node, scope)
        if node.name in self.functions or ("call", node.name) in self.builtins:
            self.error(f"'{node.name}' is a function; did you forget the call parentheses?",
                       node)
        names = [k for k in scope.visible() if isinstance(scope.lookup(k), Var)]
        self.error(f"use of undeclared identifier '{node.name}'", node,
                   hint=self.suggest(node.name, names), width=len(node.name))

    def var_expr(self, v: Var, node: ast.Node) -> E:
        coord = node.coord
        slot, t = v.slot, v.type
        if v.kind == "const":
            c = v.const
            return E(t, lambda f, lanes: c, coord, const=c, readonly=True)
        if v.kind == "value" and (v.init_slot >= 0 or self.tracing):
            init_slot, name, tracing = v.init_slot, v.name, self.tracing

            def loc_tracked(f, lanes):
                return VarLoc(f.vars[slot], None, f.vars[init_slot] if init_slot >= 0 else None,
                              name, f.sources.setdefault(slot, {}) if tracing else None)
            return self.with_load(E(t, None, coord, loc=loc_tracked, readonly=v.readonly))
        if v.kind == "value":
            return E(t, lambda f, lanes: f.vars[slot][lanes.idx], coord,
                     loc=lambda f, lanes: VarLoc(f.vars[slot]), readonly=v.readonly)
        if v.kind == "ptr":
            def ev_ptr(f, lanes):
                s = f.vars[slot]
                return Ptr(s.region, s.off[lanes.idx])
            return E(t, ev_ptr, coord, loc=lambda f, lanes: VarLoc(f.vars[slot]),
                     readonly=v.readonly)
        if v.kind in ("region", "global_region"):
            zero = np.zeros((), np.int64)
            if v.kind == "global_region":
                region = v.region

                def loc(f, lanes):
                    return MemLoc(region, zero)
            else:
                def loc(f, lanes):
                    return MemLoc(f.vars[slot], zero)
            e = E(t, None, coord, loc=loc, readonly=v.readonly, space=v.space)
            return self.with_load(e)
        if v.kind == "ref":
            def loc_ref(f, lanes):
                r = f.vars[slot]
                if isinstance(r, VarLoc):
                    return r
                return MemLoc(r.region, r.off[lanes.idx], r.comps)
            e = E(t, None, coord, loc=loc_ref, readonly=v.readonly, space=v.space)
            return self.with_load(e)
        raise AssertionError(v.kind)

    def with_load(self, e: E) -> E:
        """Give an lvalue E the evaluator that loads it."""
        if isinstance(e.type, ArrayType):
            return e  # arrays are only used through decay or indexing
        loc, t, coord = e.loc, e.type, e.coord

        def ev(f, lanes):
            return load_loc(f, lanes, loc(f, lanes), t, coord)
        return replace(e, ev=ev)

    # --- operators --------------------------------------------------------------------------
    def x_Binary(self, node: ast.Binary, scope: Scope) -> E:
        op = node.op
        if op in ("&&", "||"):
            return self.logical(node, scope)
        left = self.rvalue(self.expr(node.left, scope))
        right = self.rvalue(self.expr(node.right, scope))
        if op == ",":
            lev, rev = left.ev, right.ev

            def ev_comma(f, lanes):
                lev(f, lanes)
                return rev(f, lanes)
            return E(right.type, ev_comma, node.coord)
        if isinstance(left.type, PointerType) or isinstance(right.type, PointerType):
            return self.pointer_arith(node, left, right)
        return self.binary(op, left, right, node)

    def binary(self, op: str, left: E, right: E, node: ast.Node,
               operands: tuple[ast.Node, ast.Node] | None = None) -> E:
        lnode, rnode = operands or (node.left, node.right)
        if isinstance(left.type, ty.SimdMatrixType) or isinstance(right.type, ty.SimdMatrixType):
            return self.builtins[("operator", "simdgroup_matrix")](self, op, left, right, node)
        left, right = self.arith_operand(left, lnode), self.arith_operand(right, rnode)
        lt, rt = left.type, right.type
        if op in ("<<", ">>"):
            if not (ty.is_integer(lt) and ty.is_integer(rt)):
                self.error(f"invalid operands to binary expression ('{lt}' and '{rt}')", node)
            t = lt if isinstance(lt, VectorType) else ty.promote(lt)
            if isinstance(rt, VectorType) and not isinstance(lt, VectorType):
                t = VectorType(t, rt.n)
            a, b = self.convert(left, t, node), self.convert(right, t, node, explicit=True)
        else:
            try:
                t = ty.common_type(lt, rt)
            except ty.ConversionError:
                self.error(f"invalid operands to binary expression ('{lt}' and '{rt}')", node)
            if op == "%" and ty.is_float(t):
                self.error(f"invalid operands to binary expression ('{lt}' and '{rt}')", node,
                           hint="use fmod(x, y) for floating-point remainder")
            if op in ("&", "|", "^") and ty.is_float(t):
                self.error(f"invalid operands to binary expression ('{lt}' and '{rt}')", node)
            a, b = self.convert(left, t, node), self.convert(right, t, node)
        result_t = ty.bool_like(t) if op in ("<", ">", "<=", ">=", "==", "!=") else t
        coord = node.coord
        check_div = op in ("/", "%") and ty.is_integer(t)
        check_shift = op in ("<<", ">>")
        if a.const is not None and b.const is not None:
            if check_div and not np.all(b.const != 0):
                self.error("division by zero in a constant expression", node)
            c = arith.binary(op, a.const, b.const, t)
            return E(result_t, lambda f, lanes: c, coord, const=c)
        aev, bev = a.ev, b.ev
        if check_div:
            def ev(f, lanes):
                x, y = aev(f, lanes), bev(f, lanes)
                zero = arith.zero_divisor_mask(y)
                if zero is not None and zero.any():
                    report_lanes(f, lanes, zero, "division-by-zero", "warning",
                                 "integer division by zero", coord,
                                 hint="the result is unspecified on the GPU; guard the divisor")
                return arith.binary(op, x, y, t)
        elif check_shift:
            def ev(f, lanes):
                x, y = aev(f, lanes), bev(f, lanes)
                bad = arith.shift_out_of_range_mask(y, t)
                if bad is not None and bad.any():
                    report_lanes(f, lanes, bad, "shift-out-of-range", "warning",
                                 f"shift count out of range for '{t}'", coord,
                                 hint="Metal uses only the low bits of the count")
                return arith.binary(op, x, y, t)
        else:
            def ev(f, lanes):
                return arith.binary(op, aev(f, lanes), bev(f, lanes), t)
        return E(result_t, ev, coord)

    def pointer_arith(self, node: ast.Binary, left: E, right: E) -> E:
        op, coord = node.op, node.coord
        lp, rp = isinstance(left.type, PointerType), isinstance(right.type, PointerType)
        if lp and rp:
            if op == "-":
                size = left.type.pointee.size or 1
                lev, rev = left.ev, right.ev
                return E(LONG, lambda f, lanes: (lev(f, lanes).off - rev(f, lanes).off) // size,
                         coord)
            if op in ("<", ">", "<=", ">=", "==", "!="):
                lev, rev = left.ev, right.ev
                return E(BOOL, lambda f, lanes: arith.binary(
                    op, lev(f, lanes).off, rev(f, lanes).off, LONG), coord)
            self.error(f"invalid operands to binary expression ('{left.type}' and "
                       f"'{right.type}')", node)
        if op not in ("+", "-") or (rp and op == "-"):
            self.error(f"invalid operands to binary expression ('{left.type}' and "
                       f"'{right.type}')", node)
        ptr, num = (left, right) if lp else (right, left)
        if not ty.is_integer(num.type) or isinstance(num.type, VectorType):
            self.error(f"pointer arithmetic needs an integer offset, not '{num.type}'", node)
        return self.offset_pointer(ptr, num, -1 if op == "-" else 1, coord)

    def offset_pointer(self, ptr: E, num: E, sign: int, coord: Coord) -> E:
        size = ptr.type.pointee.size
        pev, nev, src = ptr.ev, num.ev, num.type

        def ev(f, lanes):
            p = pev(f, lanes)
            k = arith.convert(np.asarray(nev(f, lanes)), src, LONG)
            return Ptr(p.region, p.off + sign * k * size)
        return E(ptr.type, ev, coord)

    def logical(self, node: ast.Binary, scope: Scope) -> E:
        left = self.to_bool(self.expr(node.left, scope), node.left)
        right = self.to_bool(self.expr(node.right, scope), node.right)
        if left.const is not None and right.const is not None:
            c = np.asarray(bool(left.const) and bool(right.const) if node.op == "&&"
                           else bool(left.const) or bool(right.const))
            return E(BOOL, lambda f, lanes: c, node.coord, const=c)
        lev, rev, is_and = left.ev, right.ev, node.op == "&&"

        def ev(f, lanes):
            lv = np.broadcast_to(lev(f, lanes), (lanes.n,))
            need = lv if is_and else ~lv
            out = lv.copy()
            if need.any():
                sub = lanes.select(need)
                out[need] = rev(f, sub)
            return out
        return E(BOOL, ev, node.coord)

    def to_bool(self, e: E, node: ast.Node) -> E:
        e = self.rvalue(e)
        if isinstance(e.type, VectorType):
            self.error(f"a vector ('{e.type}') cannot be used as a condition", node,
                       hint="use all(...) or any(...)")
        if isinstance(e.type, PointerType):  # kernel pointers are never null
            return E(BOOL, lambda f, lanes: np.ones(lanes.n, bool), e.coord)
        if not ty.is_arithmetic(e.type):
            self.error(f"'{e.type}' cannot be used as a condition", node)
        return self.convert(e, BOOL, node, explicit=True)

    def x_Unary(self, node: ast.Unary, scope: Scope) -> E:
        op = node.op
        if op in ("++", "--"):
            return self.increment(node, scope, prefix=True)
        operand = self.expr(node.operand, scope)
        if op == "&":
            return self.address_of(operand, node)
        if op == "*":
            return self.dereference(self.rvalue(operand), node)
        if op == "!":
            b = self.to_bool(operand, node.operand)
            return self.map_value(b, BOOL, lambda v: ~np.asarray(v, bool))
        operand = self.arith_operand(operand, node.operand)
        t = operand.type
        if op == "~" and not ty.is_integer(t):
            self.error(f"invalid argument type '{t}' to unary expression", node)
        rt = t if isinstance(t, VectorType) or t.kind == "float" else ty.promote(t)
        operand = self.convert(operand, rt, node)
        return self.map_value(replace(operand, coord=node.coord), rt,
                              lambda v: arith.unary(op, np.asarray(v), rt))

    def address_of(self, operand: E, node: ast.Node) -> E:
        if operand.loc is None:
            self.error("cannot take the address of an rvalue", node)
        if operand.space is None:
            self.error("cannot take the address of this local variable", node,
                       hint="metalsim supports '&' on memory (arrays, buffers, threadgroup "
                            "variables) and on locals it can place in thread memory")
        loc = operand.loc

        def ev(f, lanes):
            where = loc(f, lanes)
            return Ptr(where.region, np.broadcast_to(where.off, (lanes.n,)))
        return E(PointerType(operand.type, operand.space, operand.readonly), ev, node.coord)

    def dereference(self, operand: E, node: ast.Node) -> E:
        t = operand.type
        if not isinstance(t, PointerType):
            self.error(f"indirection requires a pointer operand ('{t}' invalid)", node)
        pev = operand.ev

        def loc(f, lanes):
            p = pev(f, lanes)
            return MemLoc(p.region, p.off)
        return self.with_load(E(t.pointee, None, node.coord, loc=loc, readonly=t.const,
                                space=t.space))

    def x_Postfix(self, node: ast.Postfix, scope: Scope) -> E:
        return self.increment(node, scope, prefix=False)

    def increment(self, node, scope: Scope, prefix: bool) -> E:
        target = self.expr(node.operand, scope)
        self.check_assignable(target, node.operand)
        t = target.type
        one = ast.IntLiteral(node.coord, 1, text="1")
        op = "+" if node.op == "++" else "-"
        loc, coord = target.loc, node.coord
        if isinstance(t, PointerType):
            size = t.pointee.size * (1 if op == "+" else -1)

            def step(v):
                return Ptr(v.region, v.off + size)
        else:
            if not ty.is_arithmetic(t):
                self.error(f"cannot increment a value of type '{t}'", node)
            ct = ty.common_type(t, INT) if not isinstance(t, VectorType) else t
            one_c = self.convert(self.expr(one, scope), ct, node).const

            def step(v):
                return arith.convert(arith.binary(op, arith.convert(v, t, ct), one_c, ct), ct, t)

        def ev(f, lanes):
            where = loc(f, lanes)
            old = load_loc(f, lanes, where, t, coord)
            if not prefix and isinstance(old, np.ndarray):
                old = old.copy()  # a variable load may be a view of the variable itself
            new = step(old)
            store_loc(f, lanes, where, t, new, coord)
            return new if prefix else old
        return E(t, ev, coord)

    def check_assignable(self, target: E, node: ast.Node) -> None:
        if target.loc is None:
            self.error("expression is not assignable", node)
        if target.readonly:
            name = node.name if isinstance(node, ast.Name) else None
            what = f"variable '{name}'" if name else "a read-only location"
            self.error(f"cannot assign to {what} with const-qualified type '{target.type}'"
                       if name else f"cannot assign to {what} (it is const)", node,
                       hint="inputs are 'const device T*': write to an output buffer instead")
        if isinstance(target.type, ArrayType):
            self.error("array type is not assignable", node)
        if isinstance(target.type, AtomicType):
            self.error(f"cannot assign to an atomic ('{target.type}') with '='", node,
                       hint="use atomic_store_explicit or atomic_fetch_add_explicit")

    def x_Assign(self, node: ast.Assign, scope: Scope) -> E:
        target = self.expr(node.target, scope)
        self.check_assignable(target, node.target)
        t, coord, loc = target.type, node.coord, target.loc
        value = self.expr(node.value, scope)
        if node.op == "=":
            v = self.convert(value, t, node.value)
            vev = v.ev

            def ev(f, lanes):
                val = vev(f, lanes)
                store_loc(f, lanes, loc(f, lanes), t, val, coord)
                return val
            return E(t, ev, coord)
        op = node.op[:-1]
        current = E(t, None, coord)
        slot: list = [None, None]

        def ev_current(f, lanes):
            return slot[0]
        current.ev = ev_current
        if isinstance(t, PointerType):
            combined = self.offset_pointer(current, self.rvalue(value), -1 if op == "-" else 1,
                                           coord) if op in ("+", "-") else self.error(
                "invalid compound assignment to a pointer", node)
        else:
            combined = self.binary(op, current, value, node, (node.target, node.value))
        result = self.convert(combined, t, node, explicit=True)
        rev = result.ev

        def ev_compound(f, lanes):
            where = loc(f, lanes)
            slot[0] = load_loc(f, lanes, where, t, coord)
            val = rev(f, lanes)
            store_loc(f, lanes, where, t, val, coord)
            return val
        return E(t, ev_compound, coord)

    def x_Conditional(self, node: ast.Conditional, scope: Scope) -> E:
        cond = self.to_bool(self.expr(node.cond, scope), node.cond)
        a = self.rvalue(self.expr(node.then, scope))
        b = self.rvalue(self.expr(node.otherwise, scope))
        if isinstance(a.type, PointerType) or isinstance(b.type, PointerType):
            if a.type != b.type:
                self.error(f"incompatible operand types ('{a.type}' and '{b.type}')", node)
            t = a.type
        else:
            try:
                at = self.arith_operand(a, node.then).type
                bt = self.arith_operand(b, node.otherwise).type
                # Operands of one type keep it; otherwise the usual arithmetic conversions.
                t = at if at == bt else ty.common_type(at, bt)
            except ty.ConversionError:
                self.error(f"incompatible operand types ('{a.type}' and '{b.type}')", node)
            a, b = self.convert(a, t, node.then), self.convert(b, t, node.otherwise)
        if cond.const is not None:
            return a if bool(cond.const) else b
        cev, aev, bev, coord = cond.ev, a.ev, b.ev, node.coord

        def ev(f, lanes):
            c = np.broadcast_to(cev(f, lanes), (lanes.n,))
            yes, no = lanes.split(c)
            if no.n == 0:
                return aev(f, lanes)
            if yes.n == 0:
                return bev(f, lanes)
            va, vb = aev(f, yes), bev(f, no)
            if isinstance(t, PointerType):
                if va.region is not vb.region:
                    raise_limit(coord, "a ?: choosing between pointers into different buffers")
                off = np.empty(lanes.n, np.int64)
                off[c] = va.off
                off[~c] = vb.off
                return Ptr(va.region, off)
            out = _zeros(t, lanes.n)
            out[c] = va
            out[~c] = vb
            return out
        return E(t, ev, coord)

    def x_Index(self, node: ast.Index, scope: Scope) -> E:
        base = self.expr(node.base, scope)
        index = self.rvalue(self.expr(node.index, scope))
        if not ty.is_integer(index.type) or isinstance(index.type, VectorType):
            self.error(f"array subscript is not an integer ('{index.type}')", node.index)
        if isinstance(base.type, VectorType):
            return self.vector_component(base, index, node)
        base = self.rvalue(base)
        t = base.type
        if not isinstance(t, PointerType):
            self.error(f"subscripted value is not an array, pointer, or vector ('{t}')", node)
        size, bev, iev, itype = t.pointee.size, base.ev, index.ev, index.type
        if self.tracing:
            iev = address_only(iev)

        def loc(f, lanes):
            p = bev(f, lanes)
            k = arith.convert(np.asarray(iev(f, lanes)), itype, LONG)
            return MemLoc(p.region, p.off + k * size)
        return self.with_load(E(t.pointee, None, node.coord, loc=loc, readonly=t.const,
                                space=t.space))

    def vector_component(self, base: E, index: E, node: ast.Node) -> E:
        t: VectorType = base.type
        elem = t.elem
        if index.const is not None:
            k = int(index.const)
            if not 0 <= k < t.n:
                self.error(f"vector component index {k} is out of range for '{t}'", node.index)
            return self.components(base, (k,), node)
        bev, iev, bloc = base.ev, index.ev, base.loc

        def ev(f, lanes):
            v = np.asarray(bev(f, lanes))
            k = np.broadcast_to(np.asarray(iev(f, lanes)).astype(np.int64), (lanes.n,))
            return np.broadcast_to(v, (lanes.n, t.n))[np.arange(lanes.n), k % t.n]
        e = E(elem, ev, node.coord)
        if bloc is not None:
            def loc(f, lanes):
                where = bloc(f, lanes)
                k = np.broadcast_to(np.asarray(iev(f, lanes)).astype(np.int64), (lanes.n,))
                if isinstance(where, VarLoc):
                    return VarLoc(where.arr, k, where.init, where.name, where.sources)
                return MemLoc(where.region, where.off + k * elem.size)
            e.loc, e.readonly, e.space = loc, base.readonly, base.space
        return e

    def x_Member(self, node: ast.Member, scope: Scope) -> E:
        base = self.expr(node.base, scope)
        if node.arrow:
            base = self.dereference(self.rvalue(base), node)
        if not isinstance(base.type, VectorType):
            self.error(f"member reference base type '{base.type}' is not a vector", node)
        name = node.name
        sets = ("xyzw", "rgba")
        if not name or not any(all(c in s for c in name) for s in sets) or len(name) > 4:
            self.error(f"illegal vector component name '{name}'", node, width=len(name))
        comps = tuple(SWIZZLE[c] for c in name)
        if max(comps) >= base.type.n:
            self.error(f"vector component access exceeds type '{base.type}'", node)
        e = self.components(base, comps, node)
        if len(set(comps)) != len(comps):
            e.readonly = True
        return e

    def components(self, base: E, comps: tuple[int, ...], node: ast.Node) -> E:
        t: VectorType = base.type
        rt = t.elem if len(comps) == 1 else VectorType(t.elem, len(comps))
        sel = comps[0] if len(comps) == 1 else list(comps)
        e = self.map_value(self.rvalue(base), rt, lambda v: np.asarray(v)[..., sel])
        e.coord = node.coord
        if base.loc is not None:
            bloc = base.loc

            def loc(f, lanes):
                where = bloc(f, lanes)
                inner = where.comps
                picked = comps if inner is None else tuple(inner[c] for c in comps)
                if isinstance(where, VarLoc):
                    return VarLoc(where.arr, picked, where.init, where.name, where.sources)
                return MemLoc(where.region, where.off, picked)
            e.loc, e.readonly, e.space = loc, base.readonly, base.space
        return e

    def x_SizeOf(self, node: ast.SizeOf, scope: Scope) -> E:
        operand = node.operand
        if isinstance(operand, ast.NamedType | ast.PointerType | ast.ArrayType):
            t = self.resolve_type(operand, scope)
        else:
            t = self.expr(operand, scope).type
        return constant(t.size, ULONG, node.coord)

    def x_MethodCall(self, node: ast.MethodCall, scope: Scope) -> E:
        handler = self.builtins.get(("method", node.name))
        if handler is None:
            self.error(f"member function '{node.name}' is not supported", node)
        return handler(self, node, scope)

    def x_InitList(self, node: ast.InitList, scope: Scope) -> E:
        self.error("an initializer list can only initialize a declared variable", node)

    def x_StringLiteral(self, node: ast.StringLiteral, scope: Scope) -> E:
        self.error("string literals are not supported in Metal kernels", node)

    def x_Cast(self, node: ast.Cast, scope: Scope) -> E:
        t = self.resolve_type(node.type, scope)
        e = self.rvalue(self.expr(node.expr, scope))
        if node.style == "as_type":
            return self.as_type(e, t, node)
        if node.style == "reinterpret_cast" and not isinstance(t, PointerType):
            self.error("reinterpret_cast is only supported between pointer types", node)
        return replace(self.convert(e, t, node, explicit=True), coord=node.coord)

    def as_type(self, e: E, t: Type, node: ast.Node) -> E:
        src = e.type
        if not (ty.is_arithmetic(src) and ty.is_arithmetic(t)):
            self.error(f"as_type cannot reinterpret '{src}' as '{t}'", node)
        if src.size != t.size:
            self.error(f"as_type needs types of the same size ('{src}' is {src.size} bytes, "
                       f"'{t}' is {t.size})", node)
        src_n = src.n if isinstance(src, VectorType) else 0
        dst_elem, dst_n = ty.scalar_of(t), (t.n if isinstance(t, VectorType) else 0)

        def fn(v):
            a = np.asarray(v, ty.scalar_of(src).dtype)
            if src_n == 3:
                a = np.concatenate([a, np.zeros(a.shape[:-1] + (1,), a.dtype)], axis=-1)
            if not src_n:
                a = a[..., None]
            raw = np.ascontiguousarray(a).view(np.uint8).view(dst_elem.dtype)
            if not dst_n:
                return raw[..., 0]
            return raw[..., :dst_n]
        return self.map_value(e, t, fn)

    def x_Construct(self, node: ast.Construct, scope: Scope) -> E:
        t = self.resolve_type(node.type, scope)
        args = [self.rvalue(self.expr(a, scope)) for a in node.args]
        if isinstance(t, ScalarType):
            if not args:
                return constant(0, t, node.coord)
            if len(args) != 1:
                self.error(f"too many arguments to construct '{t}'", node)
            return replace(self.convert(args[0], t, node, explicit=True), coord=node.coord)
        if isinstance(t, VectorType):
            return self.construct_vector(t, args, node)
        if isinstance(t, ty.SimdMatrixType):
            return self.builtins[("construct", "simdgroup_matrix")](self, t, args, node)
        if isinstance(t, PointerType) and len(args) == 1:
            return self.convert(args[0], t, node, explicit=True)
        self.error(f"cannot construct a value of type '{t}'", node)

    def construct_vector(self, t: VectorType, args: list[E], node: ast.Node) -> E:
        if not args:
            return constant(np.zeros(t.n), t, node.coord)
        if len(args) == 1:
            a = args[0]
            if not ty.is_arithmetic(a.type):
                self.error(f"cannot construct '{t}' from '{a.type}'", node)
            if isinstance(a.type, VectorType) and a.type.n != t.n:
                self.error(f"cannot construct '{t}' from '{a.type}': component counts differ",
                           node)
            return replace(self.convert(a, t, node, explicit=True), coord=node.coord)
        parts, count = [], 0
        for a in args:
            if not ty.is_arithmetic(a.type):
                self.error(f"cannot use '{a.type}' in a vector constructor", a.coord)
            n = a.type.n if isinstance(a.type, VectorType) else 1
            target = VectorType(t.elem, n) if n > 1 else t.elem
            parts.append((self.convert(a, target, a.coord, explicit=True), n))
            count += n
        if count != t.n:
            self.error(f"{'too few' if count < t.n else 'too many'} elements in vector "
                       f"initialization (expected {t.n} elements, have {count})", node)
        evs = [(p.ev, n) for p, n in parts]

        def fn_parts(values):
            cols = []
            for v, n in zip(values, [n for _, n in evs]):
                v = np.asarray(v)
                cols.append(v[..., None] if n == 1 else v)
            shape = np.broadcast_shapes(*(c.shape[:-1] for c in cols))
            return np.concatenate([np.broadcast_to(c, shape + c.shape[-1:]) for c in cols],
                                  axis=-1)
        if all(p.const is not None for p, _ in parts):
            c = fn_parts([p.const for p, _ in parts])
            return E(t, lambda f, lanes: c, node.coord, const=c)
        return E(t, lambda f, lanes: fn_parts([ev(f, lanes) for ev, _ in evs]), node.coord)

    # --- calls ------------------------------------------------------------------------------
    def x_Call(self, node: ast.Call, scope: Scope) -> E:
        name = node.func
        qualified = self.builtins.get(("qualified_call", name.qualifier))
        if qualified is not None:
            return qualified(self, node, scope)
        if name.qualifier not in ("fast", "precise") and name.name in self.functions:
            return self.call_user(node, scope)
        handler = self.builtins.get(("call", name.name))
        if handler is not None:
            return handler(self, node, scope)
        args = [self.rvalue(self.expr(a, scope)) for a in node.args]
        if name.name in mathlib.FUNCTIONS:
            return self.call_math(node, args)
        visible = list(self.functions) + list(mathlib.FUNCTIONS) + [
            k[1] for k in self.builtins if k[0] == "call"]
        self.error(f"use of undeclared identifier '{name.name}'", name,
                   hint=self.suggest(name.name, visible), width=len(name.name))

    def call_math(self, node: ast.Call, args: list[E]) -> E:
        name = node.func.name
        try:
            params, result = mathlib.resolve(name, [a.type for a in args])
        except LookupError as exc:
            self.error(str(exc), node)
        conv = [self.convert(a, p, a.coord, explicit=True) for a, p in zip(args, params)]
        variant = node.func.qualifier if node.func.qualifier in ("fast", "precise") else (
            self.math_variant)
        if all(c.const is not None for c in conv):
            c = mathlib.call(name, [c.const for c in conv], params, result, variant)
            return E(result, lambda f, lanes: c, node.coord, const=c)
        evs = [c.ev for c in conv]
        return E(result, lambda f, lanes: mathlib.call(
            name, [ev(f, lanes) for ev in evs], params, result, variant), node.coord)

    def call_user(self, node: ast.Call, scope: Scope) -> E:
        args = [self.expr(a, scope) for a in node.args]
        fdef, bindings = self.resolve_overload(node, args, scope)
        code = self.instantiate(fdef, bindings)
        arg_evs = []
        for (var, is_ref), a in zip(code.params, args):
            if is_ref:
                if a.loc is None:
                    if not var.readonly:
                        self.error("a non-const reference cannot bind to a temporary", a.coord)
                    arg_evs.append(("value", self.convert(a, var.type, a.coord).ev))
                    continue
                if a.type != var.type:
                    self.error(f"reference of type '{var.type}' cannot bind to '{a.type}'",
                               a.coord)
                if a.readonly and not var.readonly:
                    self.error("binding a non-const reference to a const object", a.coord)
                arg_evs.append(("ref", a.loc))
            else:
                arg_evs.append((var.kind, self.convert(a, var.type, a.coord).ev))
        for p in fdef.params[len(args):]:
            arg_evs.append(("value", self.convert(self.expr(p.default, scope),
                                                  self.resolve_type(p.type, scope), p).ev))
        rt, coord, tracing = code.return_type, node.coord, self.tracing

        def ev(f, lanes):
            m = f.m
            size = m.batch.size
            frame = Frame(m, code.nslots)
            for (var, _), (kind, aev) in zip(code.params, arg_evs):
                frame.vars[var.slot] = bind_argument(kind, var, aev(f, lanes), lanes, size)
            caller_flow = m.flow
            if tracing:
                arrived = dict(zip(lanes.indices().tolist(), m.sources(lanes.indices())))
                for var, _ in code.params:
                    frame.sources[var.slot] = arrived
            m.depth += 1
            if m.depth > 64:
                raise CompileError(f"call depth exceeds 64 (runaway recursion in "
                                   f"'{code.name}'?)", coord)
            try:
                code.body(frame, lanes)
            finally:
                m.depth -= 1
            if tracing:
                m.flow = caller_flow
                m.note_sources(lanes.indices(), frame.ret_sources)
            if rt == ty.VOID:
                return None
            if frame.ret is None:
                return _zeros(rt, lanes.n)
            if isinstance(frame.ret, PtrSlot):
                return Ptr(frame.ret.region, frame.ret.off[lanes.idx])
            return frame.ret[lanes.idx]
        return E(rt, ev, coord)

    def resolve_overload(self, node: ast.Call, args: list[E], scope: Scope):
        name = node.func.name
        explicit = node.func.template_args or []
        best, best_cost, tie = None, None, False
        for fdef in self.functions[name]:
            if fdef.body is None and any(o.body is not None for o in self.functions[name]
                                         if o is not fdef):
                continue
            bindings = self.deduce(fdef, explicit, args, scope)
            if bindings is None:
                continue
            cost = self.match_cost(fdef, bindings, args)
            if cost is None:
                continue
            # C++ prefers non-templates, then the more specialized template: a parameter whose
            # type is a bare template parameter matches anything, so it costs a little.
            cost += 0.5 if fdef.template_params else 0.0
            cost += 0.1 * self.generic_params(fdef)
            if best_cost is None or cost < best_cost:
                best, best_cost, tie = (fdef, bindings), cost, False
            elif cost == best_cost:
                tie = True
        if best is None:
            shown = ", ".join(str(self.rvalue(a).type) for a in args)
            self.error(f"no matching function for call to '{name}({shown})'", node)
        if tie:
            self.error(f"call to '{name}' is ambiguous", node)
        return best

    def deduce(self, fdef: ast.FunctionDef, explicit: list, args: list[E], scope: Scope):
        params = fdef.template_params or []
        if len(explicit) > len(params):
            return None
        bindings: dict = {}
        for p, a in zip(params, explicit):
            bindings[p.name] = self.template_value(p, a, scope)
        names = {p.name for p in params}
        required = sum(1 for p in fdef.params if p.default is None)
        if not required <= len(args) <= len(fdef.params):
            return None
        for p, a in zip(fdef.params, args):
            pt = p.type.referee if isinstance(p.type, ast.ReferenceType) else p.type
            self.deduce_from(pt, self.rvalue(a).type, names, bindings)
        for p in params:
            if p.name not in bindings:
                if p.default is None:
                    return None
                bindings[p.name] = self.template_value(p, p.default, Scope(bindings, scope))
        return bindings

    def deduce_from(self, pattern: ast.Node, actual: Type, names: set[str],
                    bindings: dict) -> None:
        """Bind the template parameters in `pattern` (`T`, `T*`, `vec<T, N>`) from `actual`."""
        if isinstance(pattern, ast.PointerType) and isinstance(actual, PointerType):
            self.deduce_from(pattern.pointee, actual.pointee, names, bindings)
        elif isinstance(pattern, ast.NamedType):
            if pattern.name in names and pattern.name not in bindings:
                bindings[pattern.name] = actual
            elif pattern.name == "vec" and isinstance(actual, VectorType):
                elem, size = (pattern.template_args or [None, None])[:2]
                self.deduce_from(elem, actual.elem, names, bindings)
                name = getattr(size, "name", None)
                if name in names and name not in bindings:
                    bindings[name] = Var("const", INT, readonly=True,
                                         const=np.asarray(actual.n, np.int32))

    @staticmethod
    def generic_params(fdef: ast.FunctionDef) -> int:
        names = {p.name for p in fdef.template_params or []}
        count = 0
        for p in fdef.params:
            t = p.type.referee if isinstance(p.type, ast.ReferenceType) else p.type
            count += isinstance(t, ast.NamedType) and t.name in names
        return count

    def match_cost(self, fdef: ast.FunctionDef, bindings: dict, args: list[E]) -> int | None:
        inner = Scope(dict(bindings), self.globals)
        cost = 0
        for p, a in zip(fdef.params, args):
            try:
                pt = self.resolve_type(p.type, inner)
            except CompileError:
                return None
            at = self.rvalue(a).type
            if pt == at:
                continue
            if isinstance(pt, PointerType) or isinstance(at, PointerType):
                if not (isinstance(pt, PointerType) and isinstance(at, PointerType)
                        and pt.space == at.space and pt.pointee == at.pointee
                        and (pt.const or not at.const)):
                    return None
                cost += 1
            elif isinstance(pt, VectorType) != isinstance(at, VectorType):
                if isinstance(at, VectorType) or not ty.is_arithmetic(at):
                    return None
                cost += 3
            elif ty.is_arithmetic(pt) and ty.is_arithmetic(at):
                if isinstance(pt, VectorType) and pt.n != at.n:
                    return None
                cost += 1 if ty.scalar_of(pt).kind == ty.scalar_of(at).kind else 2
            else:
                return None
        return cost

    def instantiate(self, fdef: ast.FunctionDef, bindings: dict) -> FunctionCode:
        key = (id(fdef), tuple(sorted((k, str(v.type) + str(v.const) if isinstance(v, Var)
                                       else str(v)) for k, v in bindings.items())))
        code = self.instances.get(key)
        if code is not None:
            return code
        if fdef.body is None:
            self.error(f"function '{fdef.name}' is declared but never defined", fdef)
        scope = Scope(dict(bindings), self.globals)
        rt = self.resolve_type(fdef.return_type, scope) if not (
            isinstance(fdef.return_type, ast.NamedType) and fdef.return_type.name == "void"
        ) else ty.VOID
        code = FunctionCode(fdef.name, rt)
        self.instances[key] = code
        saved = self.fn, self.address_taken
        self.fn, self.address_taken = code, addressed_names(fdef.body)
        try:
            for p in fdef.params:
                var = self.declare_param(p, scope)
                code.params.append((var, isinstance(p.type, ast.ReferenceType)))
            code.body = self.block(fdef.body, scope, new_scope=False)
        finally:
            self.fn, self.address_taken = saved
        return code

    def new_slot(self) -> int:
        self.fn.nslots += 1
        return self.fn.nslots - 1

    def declare_param(self, p: ast.Param, scope: Scope) -> Var:
        t, const, space = self.resolve_decl_type(p.type, scope)
        if isinstance(p.type, ast.ReferenceType):
            var = Var("ref", t, self.new_slot(), readonly=const, space=space or "thread")
        elif isinstance(t, PointerType):
            var = Var("ptr", t, self.new_slot(), readonly=const)
        elif isinstance(t, ArrayType):  # C++ adjusts an array parameter to a pointer
            var = Var("ptr", PointerType(t.elem, space or "thread", const), self.new_slot())
        else:
            var = Var("value", t, self.new_slot(), readonly=const)
        if p.name:
            if p.name in scope.names:
                self.error(f"redefinition of parameter '{p.name}'", p)
            scope.names[p.name] = var
        return var

    # --- statements -------------------------------------------------------------------------
    def stmt(self, node: ast.Node, scope: Scope) -> Run:
        method = getattr(self, "s_" + type(node).__name__, None)
        if method is None:
            if isinstance(node, ast.CaseLabel):
                self.error("'case' label not within a switch statement", node)
            self.error("unsupported statement", node)
        return method(node, scope)

    def block(self, node: ast.Node, scope: Scope, new_scope: bool = True) -> Run:
        if not isinstance(node, ast.Compound):
            return self.stmt(node, Scope({}, scope))
        inner = Scope({}, scope) if new_scope else scope
        runs = [(self.stmt(item, inner), item.coord) for item in node.items
                if not isinstance(item, ast.Empty)]

        if self.tracing:
            def run_traced(f, lanes):
                m = f.m
                for r, coord in runs:
                    if lanes.n == 0:
                        break
                    m.step(lanes, coord)
                    m.begin_statement()
                    lanes = r(f, lanes)
                return lanes
            return run_traced

        def run(f, lanes):
            step = f.m.step
            for r, coord in runs:
                if lanes.n == 0:
                    break
                step(lanes, coord)
                lanes = r(f, lanes)
            return lanes
        return run

    def s_Compound(self, node: ast.Compound, scope: Scope) -> Run:
        return self.block(node, scope)

    def s_Empty(self, node, scope) -> Run:
        return lambda f, lanes: lanes

    def s_ExprStmt(self, node: ast.ExprStmt, scope: Scope) -> Run:
        ev = self.expr(node.expr, scope).ev

        def run(f, lanes):
            ev(f, lanes)
            return lanes
        return run

    def s_TypeAlias(self, node: ast.TypeAlias, scope: Scope) -> Run:
        if node.template_params:
            self.error("alias templates must be declared at program scope", node)
        scope.names[node.name] = self.resolve_type(node.type, scope)
        return lambda f, lanes: lanes

    def s_UsingNamespace(self, node: ast.UsingNamespace, scope: Scope) -> Run:
        return lambda f, lanes: lanes

    def s_StaticAssert(self, node: ast.StaticAssert, scope: Scope) -> Run:
        self.static_assert(node, scope)
        return lambda f, lanes: lanes

    def s_DeclStmt(self, node: ast.DeclStmt, scope: Scope) -> Run:
        runs = [self.declare_local(d, scope) for d in node.decls]
        if len(runs) == 1:
            return runs[0]

        def run(f, lanes):
            for r in runs:
                lanes = r(f, lanes)
            return lanes
        return run

    def declare_local(self, d: ast.VarDecl, scope: Scope) -> Run:
        if d.name in scope.names:
            self.error(f"redefinition of '{d.name}'", d, width=len(d.name),
                       hint="a kernel parameter of this name already exists (MLX adds one for "
                            "every attribute the source mentions)" if d.name in ATTRIBUTE_NAMES
                       else "")
        t, const, space = self.resolve_decl_type(d.type, scope)
        init = self.expr(d.init, scope) if d.init is not None and not isinstance(
            d.init, ast.InitList) else None
        if t is None:
            if init is None:
                self.error("declaration with 'auto' needs an initializer", d)
            t = self.rvalue(init).type
        if isinstance(t, ArrayType) and t.length < 0:
            if not isinstance(d.init, ast.InitList):
                self.error("an array without a size needs an initializer list", d)
            t = ArrayType(t.elem, len(d.init.items))
        if isinstance(d.type, ast.ReferenceType):
            return self.declare_reference(d, t, const, init, scope)
        if space == "threadgroup":
            return self.declare_threadgroup(d, t, scope)
        if space in ("device", "constant"):
            self.error(f"variables in the {space} address space must be declared at program "
                       f"scope", d)
        if isinstance(t, AtomicType):
            self.error("atomic variables must live in device or threadgroup memory", d)
        if isinstance(t, ArrayType) or d.name in self.address_taken:
            return self.declare_thread_memory(d, t, const, scope)
        if isinstance(d.init, ast.InitList):
            items = d.init.items
            if isinstance(t, VectorType):
                init = self.construct_vector(t, [self.rvalue(self.expr(i, scope))
                                                 for i in items], d.init)
            elif len(items) <= 1:
                init = self.expr(items[0], scope) if items else constant(0, t, d.coord)
            else:
                self.error("excess elements in scalar initializer", items[1])
        value = self.convert(init, t, d.init) if init is not None else None
        if (const or d.constexpr) and value is not None and value.const is not None:
            scope.names[d.name] = Var("const", t, readonly=True, const=value.const)
            return lambda f, lanes: lanes
        if d.constexpr:
            self.error(f"constexpr variable '{d.name}' must be initialized by a constant "
                       f"expression", d)
        if isinstance(t, PointerType):
            slot = self.new_slot()
            scope.names[d.name] = Var("ptr", t, slot, readonly=const)
            vev = value.ev if value is not None else None

            def run_ptr(f, lanes):
                s = f.vars[slot]
                if s is None:
                    s = f.vars[slot] = PtrSlot(None, f.m.batch.size)
                if vev is not None:
                    p = vev(f, lanes)
                    s.region = p.region
                    s.off[lanes.idx] = p.off
                return lanes
            return run_ptr
        if not (ty.is_arithmetic(t) or isinstance(t, ty.SimdMatrixType)):
            self.error(f"cannot declare a variable of type '{t}'", d)
        slot = self.new_slot()
        init_slot = self.new_slot() if value is None else -1
        scope.names[d.name] = Var("value", t, slot, readonly=const, init_slot=init_slot,
                                  name=d.name)
        vev = value.ev if value is not None else None
        shape = ty.lane_shape(t)
        dtype = ty.scalar_of(t).dtype
        tracing = self.tracing

        def run_value(f, lanes):
            arr = f.vars[slot]
            if arr is None:
                arr = f.vars[slot] = np.zeros((f.m.batch.size,) + shape, dtype)
            if vev is not None:
                arr[lanes.idx] = vev(f, lanes)
                if tracing:
                    record_sources(f, lanes, VarLoc(arr, sources=f.sources.setdefault(slot, {})))
            else:
                if f.vars[init_slot] is None:
                    f.vars[init_slot] = np.zeros(f.m.batch.size, bool)
                f.vars[init_slot][lanes.idx] = False  # a fresh, indeterminate object
            return lanes
        return run_value

    def declare_reference(self, d, t, const, init, scope) -> Run:
        if init is None:
            self.error(f"reference '{d.name}' must be initialized", d)
        slot = self.new_slot()
        if init.loc is None or init.type != t:
            if not const:
                self.error(f"non-const reference '{d.name}' cannot bind to a temporary of type "
                           f"'{self.rvalue(init).type}'", d.init)
            scope.names[d.name] = Var("value", t, slot, readonly=True)
            vev = self.convert(init, t, d.init).ev
            shape = ty.lane_shape(t)

            def run_temp(f, lanes):
                if f.vars[slot] is None:
                    f.vars[slot] = np.zeros((f.m.batch.size,) + shape, ty.scalar_of(t).dtype)
                f.vars[slot][lanes.idx] = vev(f, lanes)
                return lanes
            return run_temp
        if init.readonly and not const:
            self.error("binding a non-const reference to a const object", d.init)
        scope.names[d.name] = Var("ref", t, slot, readonly=const or init.readonly,
                                  space=init.space)
        loc = init.loc

        def run(f, lanes):
            f.vars[slot] = bind_argument("ref", None, loc(f, lanes), lanes, f.m.batch.size)
            return lanes
        return run

    def declare_threadgroup(self, d: ast.VarDecl, t: Type, scope: Scope) -> Run:
        if d.init is not None:
            self.error("threadgroup variables cannot have an initializer", d.init,
                       hint="have one thread write the initial value, then call "
                            "threadgroup_barrier")
        slot = self.new_slot()
        decl_id = self.decl_ids = self.decl_ids + 1
        self.fn.threadgroup_bytes += t.size
        scope.names[d.name] = Var("region", t, slot, space="threadgroup")
        name = d.name

        def run(f, lanes):
            m = f.m
            region = m.tg_regions.get(decl_id)
            if region is None:
                region = m.tg_regions[decl_id] = mem.Region(
                    name, "threadgroup", t, t.size, m.batch.tg_count, counted="threadgroup",
                    track_races=True, track_init=True)
                dims, elem = ty.array_shape(t)
                m.buffers.setdefault(name, {"role": "threadgroup", "space": "threadgroup",
                                            "shape": dims, "type": str(elem)})
            f.vars[slot] = region
            return lanes
        return run

    def declare_thread_memory(self, d: ast.VarDecl, t: Type, const: bool, scope: Scope) -> Run:
        slot = self.new_slot()
        stores = []
        if d.init is not None:
            leaves = self.flatten_init(t, d.init, 0) if isinstance(t, ArrayType) else [
                (0, t, d.init)]
            for off, et, item in leaves:
                stores.append((off, et, self.convert(self.expr(item, scope), et, item).ev,
                               item.coord))
        scope.names[d.name] = Var("region", t, slot, readonly=const, space="thread")
        name = d.name

        def run(f, lanes):
            m = f.m
            region = f.vars[slot]
            if region is None:
                region = f.vars[slot] = mem.Region(name, "thread", t, t.size, m.batch.size,
                                                   track_init=True)
            for off, et, ev, coord in stores:
                mem.store(m, region, lanes.idx, lanes.n, np.asarray(off, np.int64), et,
                          ev(f, lanes), coord)
            return lanes
        return run

    def s_If(self, node: ast.If, scope: Scope) -> Run:
        cond = self.to_bool(self.expr(node.cond, scope), node.cond)
        if node.constexpr:
            if cond.const is None:
                self.error("'if constexpr' condition is not a constant expression", node.cond)
            chosen = node.then if bool(cond.const) else node.otherwise
            return self.block(chosen, scope) if chosen is not None else (lambda f, lanes: lanes)
        then = self.block(node.then, scope)
        other = self.block(node.otherwise, scope) if node.otherwise is not None else None
        cev = cond.ev

        def run(f, lanes):
            yes, no = lanes.split(np.asarray(cev(f, lanes)))
            parts = []
            if yes.n:
                parts.append(then(f, yes))
            if no.n:
                parts.append(other(f, no) if other is not None else no)
            return union(f.m.batch.size, parts)
        return run

    def loop(self, cond: E | None, body: Run, step: Ev | None, coord: Coord,
             test_first: bool) -> Run:
        cev = cond.ev if cond is not None else None

        def run(f, lanes):
            m = f.m
            size = m.batch.size
            active, exited = lanes, []
            first = True
            while active.n:
                m.step(active, coord)
                if cev is not None and (test_first or not first):
                    active, done = active.split(np.asarray(cev(f, active)))
                    exited.append(done)
                    if not active.n:
                        break
                first = False
                breaks, conts = [], []
                f.breaks.append(breaks)
                f.conts.append(conts)
                try:
                    after = body(f, active)
                finally:
                    f.breaks.pop()
                    f.conts.pop()
                exited.extend(breaks)
                active = union(size, [after] + conts)
                if step is not None and active.n:
                    step(f, active)
            return union(size, exited)
        return run

    def s_For(self, node: ast.For, scope: Scope) -> Run:
        inner = Scope({}, scope)
        init = self.stmt(node.init, inner) if node.init is not None else None
        cond = self.to_bool(self.expr(node.cond, inner), node.cond) if node.cond else None
        step = self.expr(node.step, inner).ev if node.step is not None else None
        self.loop_depth += 1
        body = self.block(node.body, inner)
        self.loop_depth -= 1
        loop = self.loop(cond, body, step, node.coord, True)
        if init is None:
            return loop
        return lambda f, lanes: loop(f, init(f, lanes))

    def s_While(self, node: ast.While, scope: Scope) -> Run:
        cond = self.to_bool(self.expr(node.cond, scope), node.cond)
        self.loop_depth += 1
        body = self.block(node.body, scope)
        self.loop_depth -= 1
        return self.loop(cond, body, None, node.coord, True)

    def s_DoWhile(self, node: ast.DoWhile, scope: Scope) -> Run:
        self.loop_depth += 1
        body = self.block(node.body, scope)
        self.loop_depth -= 1
        cond = self.to_bool(self.expr(node.cond, scope), node.cond)
        return self.loop(cond, body, None, node.coord, False)

    def s_Break(self, node, scope) -> Run:
        if self.loop_depth == 0 and self.switch_depth == 0:
            self.error("'break' statement not in loop or switch statement", node)

        def run(f, lanes):
            f.breaks[-1].append(lanes)
            return EMPTY
        return run

    def s_Continue(self, node, scope) -> Run:
        if self.loop_depth == 0:
            self.error("'continue' statement not in loop statement", node)

        def run(f, lanes):
            f.conts[-1].append(lanes)
            return EMPTY
        return run

    def s_Return(self, node: ast.Return, scope: Scope) -> Run:
        rt = self.fn.return_type
        if node.value is None:
            if rt != ty.VOID:
                self.error(f"non-void function '{self.fn.name}' should return a value", node)
            vev = None
        else:
            if rt == ty.VOID:
                self.error(f"void function '{self.fn.name}' should not return a value", node)
            vev = self.convert(self.expr(node.value, scope), rt, node.value).ev
        shape = ty.lane_shape(rt)

        def run(f, lanes):
            m = f.m
            if vev is not None:
                v = vev(f, lanes)
                if m.trace is not None:
                    f.ret_sources.update(zip(lanes.indices().tolist(),
                                             m.sources(lanes.indices())))
                if isinstance(rt, PointerType):
                    if f.ret is None:
                        f.ret = PtrSlot(v.region, m.batch.size)
                    f.ret.region = v.region
                    f.ret.off[lanes.idx] = v.off
                else:
                    if f.ret is None:
                        f.ret = np.zeros((m.batch.size,) + shape, ty.scalar_of(rt).dtype)
                    f.ret[lanes.idx] = v
            if f.is_kernel:
                m.alive[lanes.idx] = False
            return EMPTY
        return run

    def s_Switch(self, node: ast.Switch, scope: Scope) -> Run:
        value = self.rvalue(self.expr(node.expr, scope))
        if not ty.is_integer(value.type) or isinstance(value.type, VectorType):
            self.error(f"statement requires expression of integer type ('{value.type}' "
                       f"invalid)", node.expr)
        vt = ty.promote(value.type)
        value = self.convert(value, vt, node.expr)
        inner = Scope({}, scope)
        items: list = []
        seen: set = set()
        self.switch_depth += 1
        for item in node.body.items:
            if isinstance(item, ast.CaseLabel):
                if item.value is None:
                    key = None
                else:
                    c = self.convert(self.expr(item.value, inner), vt, item.value).const
                    if c is None:
                        self.error("case value is not a constant expression", item.value)
                    key = int(c)
                if key in seen:
                    self.error("duplicate case value" if key is not None
                               else "multiple default labels in one switch", item)
                seen.add(key)
                items.append(("label", key))
            else:
                items.append(("stmt", self.stmt(item, inner), item.coord))
        self.switch_depth -= 1
        keys = [k for k in seen if k is not None]
        has_default = None in seen
        vev = value.ev

        def run(f, lanes):
            m = f.m
            v = np.broadcast_to(np.asarray(vev(f, lanes)), (lanes.n,))
            breaks: list = []
            f.breaks.append(breaks)
            running = EMPTY
            try:
                for item in items:
                    if item[0] == "label":
                        key = item[1]
                        mask = (~np.isin(v, keys)) if key is None else (v == key)
                        running = union(m.batch.size, [running, lanes.select(mask)])
                    elif running.n:
                        m.step(running, item[2])
                        running = item[1](f, running)
            finally:
                f.breaks.pop()
            unmatched = [] if has_default else [lanes.select(~np.isin(v, keys))]
            return union(m.batch.size, [running] + breaks + unmatched)
        return run

    # --- the kernel -------------------------------------------------------------------------
    def compile_kernel(self) -> tuple[FunctionCode, dict[str, Var]]:
        """Compile the `[[kernel]]` function; returns its code and its parameters by name."""
        self.loop_depth = self.switch_depth = 0
        self.declare_globals()
        kernels = [f for f in self.unit.items if isinstance(f, ast.FunctionDef)
                   and any(a.name == "kernel" for a in f.attributes) and f.body is not None]
        if not kernels:
            self.error("no [[kernel]] function found", self.unit)
        fdef = kernels[-1]
        bindings: dict = {}
        if fdef.template_params:
            inst = [i for i in self.unit.items if isinstance(i, ast.ExplicitInstantiation)
                    and i.name == fdef.name]
            if not inst:
                self.error(f"kernel template '{fdef.name}' is never instantiated", fdef)
            bindings = self.bind_template(fdef.template_params, inst[-1].template_args,
                                          self.globals, inst[-1])
        code = self.instantiate(fdef, bindings)
        params = {p.name: var for p, (var, _) in zip(fdef.params, code.params)}
        # What the whole launch declares, wherever the declarations are.
        code.threadgroup_bytes = sum(c.threadgroup_bytes for c in self.instances.values())
        return code, params


ATTRIBUTE_NAMES = frozenset({
    "dispatch_quadgroups_per_threadgroup", "dispatch_simdgroups_per_threadgroup",
    "dispatch_threads_per_threadgroup", "grid_origin", "grid_size",
    "quadgroup_index_in_threadgroup", "quadgroups_per_threadgroup",
    "simdgroup_index_in_threadgroup", "simdgroups_per_threadgroup", "thread_execution_width",
    "thread_index_in_quadgroup", "thread_index_in_simdgroup", "thread_index_in_threadgroup",
    "thread_position_in_grid", "thread_position_in_threadgroup",
    "threadgroup_position_in_grid", "threadgroups_per_grid", "threads_per_grid",
    "threads_per_simdgroup", "threads_per_threadgroup",
})


# --- run-time helpers used by the closures ------------------------------------------------------

def load_loc(f: Frame, lanes: Lanes, where, t: Type, coord: Coord):
    """Read the value at an lvalue location for the active lanes."""
    if isinstance(where, VarLoc):
        arr = where.arr
        if isinstance(arr, PtrSlot):
            return Ptr(arr.region, arr.off[lanes.idx])
        if where.sources is not None:
            f.m.note_sources(lanes.indices(), where.sources)
        if where.init is not None:
            written = where.init[lanes.idx]
            if not written.all():
                report_lanes(f, lanes, ~written, "uninitialized-read", "error",
                             f"read of uninitialised variable '{where.name}'", coord,
                             hint="give the variable an initial value where it is declared")
        v = arr[lanes.idx]
        c = where.comps
        if c is None:
            return v
        if isinstance(c, np.ndarray):
            return v[np.arange(lanes.n), c]
        return v[:, c[0]] if len(c) == 1 else v[:, list(c)]
    if isinstance(t, PointerType):
        raise CompileError("metalsim does not support pointers stored in memory yet", coord)
    if where.comps is None:
        return mem.load(f.m, where.region, lanes.idx, lanes.n, where.off, t, coord)
    elem = ty.scalar_of(t)
    parts = [mem.load(f.m, where.region, lanes.idx, lanes.n, where.off + c * elem.size, elem,
                      coord) for c in where.comps]
    return parts[0] if len(parts) == 1 else np.stack(parts, axis=-1)


def store_loc(f: Frame, lanes: Lanes, where, t: Type, value, coord: Coord) -> None:
    """Write `value` to an lvalue location for the active lanes."""
    if isinstance(where, VarLoc):
        arr = where.arr
        if isinstance(arr, PtrSlot):
            arr.region = value.region
            arr.off[lanes.idx] = value.off
            return
        if where.init is not None:
            where.init[lanes.idx] = True
        if where.sources is not None:
            record_sources(f, lanes, where)
        c = where.comps
        if c is None:
            arr[lanes.idx] = value
        elif isinstance(c, np.ndarray):
            arr[lanes.indices(), c] = value
        elif len(c) == 1:
            arr[lanes.idx, c[0]] = value
        else:
            value = np.asarray(value)
            for j, comp in enumerate(c):
                arr[lanes.idx, comp] = value[..., j]
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


def odd_double(node: ast.FloatLiteral) -> float:
    """The literal's exact decimal value rounded to double *to odd*, so that one more rounding
    to float, half or bfloat is the correct single rounding of the decimal (no double rounding
    through the nearest double)."""
    text = node.text.rstrip("fFhH")
    if text.lower().endswith("b"):  # the "bf" suffix
        text = text[:-1]
    exact = Fraction(float.fromhex(text)) if text.lower().startswith("0x") else Fraction(text)
    nearest = float(exact)
    if Fraction(nearest) == exact or not math.isfinite(nearest):
        return nearest
    toward_zero = nearest if abs(Fraction(nearest)) < abs(exact) else math.nextafter(nearest, 0.0)
    bits = struct.unpack("<q", struct.pack("<d", toward_zero))[0] | 1
    return struct.unpack("<d", struct.pack("<q", bits))[0]


def address_only(ev: Ev) -> Ev:
    """Trace mode: what an index expression reads picks a cell; it does not flow into the
    value read from that cell, so it is left out of the provenance."""
    def ev_index(f, lanes):
        m = f.m
        kept = {lane: set(cells) for lane, cells in m.flow.items()}
        value = ev(f, lanes)
        m.flow = kept
        return value
    return ev_index


def record_sources(f: Frame, lanes: Lanes, where: VarLoc) -> None:
    """Trace mode: a variable now holds what flowed into the current statement; a write of
    some components keeps what the other components came from."""
    lane_ids = lanes.indices().tolist()
    new = f.m.sources(lanes.indices())
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
        slot = PtrSlot(value.region, size)
        slot.off[lanes.idx] = value.off
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


def raise_limit(coord: Coord, what: str):
    raise CompileError(f"metalsim does not support {what}", coord)


def addressed_names(node: ast.Node) -> set[str]:
    """Names whose address is taken with `&` somewhere under `node` (they live in memory)."""
    found: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Unary) and n.op == "&" and isinstance(n.operand, ast.Name):
            found.add(n.operand.name)
        for value in vars(n).values():
            if isinstance(value, ast.Node):
                stack.append(value)
            elif isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, ast.Node))
    return found
