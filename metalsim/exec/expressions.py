"""Compiling expressions: conversions, operators, names, indexing, swizzles, casts and
constructors (the `ExpressionCompiler` half of `Compiler`)."""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction

import numpy as np

from metalsim.diagnostics import CompileError, Coord
from metalsim.exec import arith, pointers
from metalsim.exec.compiled import E, Scope, Var, constant, lane_zeros
from metalsim.exec.lvalues import chosen_location
from metalsim.exec.machine import KernelStop
from metalsim.exec.runtime import (
    address_only,
    checked_condition,
    load_loc,
    loader,
    report_lanes,
    store_loc,
)
from metalsim.exec.structs import load_at as load_struct
from metalsim.exec.structs import store_at as store_struct
from metalsim.exec.values import MemLoc, Ptr, VarLoc
from metalsim.lang import ast
from metalsim.lang import types as ty
from metalsim.lang.cuda_names import cuda_hint
from metalsim.lang.types import (
    BOOL,
    FLOAT,
    INT,
    LONG,
    NULLPTR_T,
    ULONG,
    ArrayType,
    AtomicType,
    NullptrType,
    PointerType,
    ScalarType,
    StructType,
    Type,
    VectorType,
    holds_atomic,
)

SWIZZLE = {c: i for i, c in enumerate("xyzw")} | {c: i for i, c in enumerate("rgba")}
# A byte offset no buffer reaches: 64-bit indices whose offset would pass it are held there.
FAR_BYTES = 1 << 62


def null_pointer(f, lanes) -> Ptr:
    """The value of `nullptr` (or a null pointer of any type) on the active lanes."""
    return Ptr(pointers.NULL, np.zeros(lanes.n, np.int64))


def evaluated_for_effects(value: object, t: Type, coord: Coord, *operands: E) -> E:
    """The constant `value` of type `t` where C++ still evaluates `operands` (`f() == nullptr`
    and `(long)f()` call f); a constant expression where each is the literal `nullptr`."""
    result = constant(value, t, coord)
    effects = [e.ev for e in operands if e.ev is not null_pointer and e.const is None]
    if not effects:
        return result
    c = result.const

    def ev(f, lanes):
        for effect in effects:
            effect(f, lanes)
        return c
    return E(t, ev, coord)


def reinterprets_nullptr(e: E, t: Type, style: str) -> bool:
    """Whether a cast of `e` to `t` in `style` is `reinterpret_cast` of a `std::nullptr_t` to
    an integer type, as `(long)nullptr` is; `(bool)nullptr` is the static_cast a C-style cast
    tries first (C++14 [expr.cast]/4)."""
    return (e.type == NULLPTR_T and t in ty.SCALARS and ty.is_integer(t)
            and (style == "reinterpret_cast" or (style == "c" and t != BOOL)))


def pointer_step(t: PointerType) -> int:
    """The bytes that one step of a `t` moves (`p + 1`, `++p`, `p - q`): its pointee's size;
    one for `void*`, as GNU C++ (the default of clang and g++) steps it."""
    return 1 if t.pointee == ty.VOID else t.pointee.size


def held_in_reach(k: np.ndarray, size: int) -> np.ndarray:
    """A 64-bit index `k` into elements of `size` bytes, held to +-FAR_BYTES: past every buffer,
    so the bounds check reports it instead of a byte offset wrapped modulo 2^64 landing back
    inside the buffer (C++ [expr.add]/4 leaves such arithmetic undefined)."""
    limit = FAR_BYTES // size
    if np.size(k) and (np.max(k) > limit or np.min(k) < -limit):
        return np.clip(k, -limit, limit)
    return k


class ExpressionCompiler:
    """Expression methods of `Compiler` (which supplies `error`, `resolve_type`, calls, ...)."""

    # --- conversions ------------------------------------------------------------------------
    def rvalue(self, e: E) -> E:
        """Array-to-pointer decay; everything else is already an rvalue evaluator."""
        if isinstance(e.type, AtomicType):
            self.error(f"an atomic ('{e.type}') cannot be read directly", e.coord,
                       hint="use atomic_load_explicit(&x, memory_order_relaxed)")
        if isinstance(e.type, StructType):   # (before its layout is used, or cached)
            self.require_complete(e.type, e.coord, "incomplete type '{}' where a complete "
                                                   "type is required")
        if isinstance(e.type, StructType) and holds_atomic(e.type):
            self.error(f"'{e.type}' cannot be copied: it holds an atomic, whose copy "
                       "constructor and assignment are deleted", e.coord,
                       hint="use the object through a pointer or reference")
        if isinstance(e.type, ArrayType) and e.loc is not None:
            loc, elem, space = e.loc, e.type.elem, e.space

            def ev(f, lanes):
                where = loc(f, lanes)
                return Ptr(where.region, where.off)
            return E(PointerType(elem, space or "thread", e.readonly), ev, e.coord)
        return e

    def convert(self, e: E, t: Type, where: ast.Node | Coord, explicit: bool = False) -> E:
        """Convert `e` to type `t` as C++ does (implicitly unless `explicit`)."""
        obj, e = e, self.rvalue(e)
        src = e.type
        if src == t:
            return e
        coord = where if isinstance(where, Coord) else where.coord
        if not explicit:
            self.check_enum_conversion(src, t, coord)
        if isinstance(src, StructType) and not isinstance(t, StructType):
            found = self.conversion_function(src, t, explicit)
            if found is not None:  # a user-defined conversion, then a standard one
                return self.convert(self.call_conversion(obj, *found, coord), t, coord,
                                    explicit)
        if isinstance(t, StructType) and isinstance(src, StructType):
            base = self.as_base(obj, t, coord)
            if base is not None:   # slicing: a copy of the base class subobject
                return E(t, base.ev, coord)
        if isinstance(t, StructType) and self.constructors_of(t):
            return self.converting_constructor(e, t, coord, explicit)
        if t == NULLPTR_T or src == NULLPTR_T or (e.null_constant and isinstance(t, PointerType)):
            return self.convert_null(e, t, coord, explicit)
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
        if not explicit and ({src, t} == {ty.HALF, ty.BFLOAT} or (
                t == ty.BFLOAT and src == ty.FLOAT)):
            # MSL 2.22: bfloat converts implicitly only to float, never from float or half.
            self.error(f"cannot convert '{src}' to '{t}' implicitly", coord,
                       hint=f"convert explicitly: {t}(...) or static_cast<{t}>(...)")
        return self.map_value(e, t, lambda v: arith.convert(np.asarray(v), src, t))

    def implicitly_convertible(self, src: Type, t: Type, coord: Coord) -> bool:
        """`is_convertible_v<src, t>`: whether a `src` value converts to `t` implicitly (so
        `float` to `bfloat` does not, MSL 2.22)."""
        if t == ty.VOID or src == ty.VOID:
            return src == t
        try:
            self.convert(E(src, lambda f, lanes: None, coord), t, coord)
        except CompileError:
            return False
        return True

    def check_enum_conversion(self, src: Type, t: Type, coord: Coord) -> None:
        """Integers become enumerations, and `enum class` values anything, only explicitly."""
        if isinstance(t, ScalarType) and t.enum:
            self.error(f"cannot initialize a value of type '{t}' with a value of type '{src}'",
                       coord, hint=f"convert explicitly: static_cast<{t}>(...)")
        if isinstance(src, ScalarType) and src.scoped_enum:
            self.error(f"no implicit conversion from scoped enumeration '{src}' to '{t}'", coord,
                       hint=f"convert explicitly: static_cast<{t}>(...)")

    def map_value(self, e: E, t: Type, fn: Callable) -> E:
        if e.const is not None:
            c = fn(e.const)
            return E(t, lambda f, lanes: c, e.coord, const=c)
        ev = e.ev
        return E(t, lambda f, lanes: fn(ev(f, lanes)), e.coord)

    def convert_null(self, e: E, t: Type, coord: Coord, explicit: bool) -> E:
        """Conversions of `nullptr` and of the null pointer constant 0 (C++14 [conv.ptr]):
        to any pointer type (a null pointer) or to `std::nullptr_t`; `nullptr` to `bool` only
        by direct-initialization ([conv.bool]), as `bool(nullptr)` or a condition."""
        src = e.type
        if isinstance(t, PointerType) or t == NULLPTR_T:
            if src == NULLPTR_T:   # already a null pointer (`p = f()` still calls f)
                return E(t, e.ev, coord)
            if e.null_constant:
                return E(t, null_pointer, coord)
        elif t == BOOL and explicit:
            return evaluated_for_effects(False, BOOL, coord, e)
        elif t == BOOL:
            self.error(f"converting '{src}' to 'bool' requires direct-initialization", coord,
                       hint="write `bool(nullptr)`, or compare a pointer with nullptr")
        self.error(f"cannot convert '{src}' to '{t}'", coord,
                   hint="only the literal 0 and nullptr are null pointer constants"
                   if isinstance(t, PointerType) or t == NULLPTR_T else "")

    def convert_pointer(self, e: E, t: Type, coord: Coord, explicit: bool) -> E:
        src = e.type
        if isinstance(src, PointerType) and t == BOOL:   # [conv.bool]: true unless null
            pev = e.ev
            return E(BOOL, lambda f, lanes: ~pointers.is_null(pev(f, lanes).region, lanes.n),
                     coord)
        if not (isinstance(src, PointerType) and isinstance(t, PointerType)):
            self.error(f"cannot convert '{src}' to '{t}'", coord)
        if src.space != t.space:
            self.error(f"cannot convert '{src}' to '{t}': address spaces differ", coord)
        if src.const and not t.const and not explicit:
            self.error(f"cannot convert '{src}' to '{t}': it drops 'const'", coord)
        up, down = (self.base_offset(src.pointee, t.pointee),
                    self.base_offset(t.pointee, src.pointee))
        if up is not None or (down is not None and explicit):
            # To a base class subobject (implicit), or back to the derived object (a cast).
            return self.offset_by(e, t, up if up is not None else -down, coord)
        if src.pointee != t.pointee and t.pointee != ty.VOID and not explicit:
            # (any object pointer converts to `void*` implicitly: C++14 [conv.ptr]/2)
            self.error(f"cannot convert '{src}' to '{t}' implicitly", coord,
                       hint=f"cast explicitly: ({t})")
        return E(t, e.ev, coord)

    def offset_by(self, e: E, t: PointerType, k: int, coord: Coord) -> E:
        """The pointer `e` moved by `k` bytes, as a `t`."""
        if k == 0:
            return E(t, e.ev, coord)
        pev = e.ev

        def ev(f, lanes):
            p = pev(f, lanes)
            return Ptr(p.region, p.off + k)
        return E(t, ev, coord)

    def arith_operand(self, e: E, node: ast.Node) -> E:
        e = self.rvalue(e)
        if not ty.is_arithmetic(e.type) or (isinstance(e.type, ScalarType)
                                            and e.type.scoped_enum):
            self.error(f"invalid operand of type '{e.type}'", node,
                       hint="a scoped enumeration converts only explicitly: "
                            "static_cast<int>(...)" if ty.is_arithmetic(e.type) else "")
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
        e = constant(node.value % (1 << t.bits) if not t.signed and node.value < 0
                     else node.value, t, node.coord)
        # C++14 [conv.ptr]/1: an integer literal of value zero is a null pointer constant
        # (`0`, `0u`, `0x0`; not `1 - 1`, a `const int` zero, `false` or '\0').
        return replace(e, null_constant=True) if node.value == 0 else e

    def x_NullptrLiteral(self, node: ast.NullptrLiteral, scope: Scope) -> E:
        return E(NULLPTR_T, null_pointer, node.coord)

    def x_FloatLiteral(self, node: ast.FloatLiteral, scope: Scope) -> E:
        t = {"h": ty.HALF, "bf": ty.BFLOAT}.get(node.suffix, FLOAT)
        c = np.asarray(arith.round_from_float64(np.array([odd_double(node)]), t.dtype)[0])
        return E(t, lambda f, lanes: c, node.coord, const=c)

    def x_BoolLiteral(self, node: ast.BoolLiteral, scope: Scope) -> E:
        return constant(node.value, BOOL, node.coord)

    def x_PackExpansion(self, node: ast.PackExpansion, scope: Scope) -> E:
        self.error("pack expansions are not supported by metalsim (variadic templates)", node)

    def x_Name(self, node: ast.Name, scope: Scope) -> E:
        if node.owner is not None:  # `decltype(x)::k`
            return self.var_expr(self.static_of(self.resolve_type(node.owner, scope), node),
                                 node)
        qualified = self.builtins.get(("qualified_name", node.qualifier))
        if qualified is not None:
            return qualified(self, node, scope)
        v = self.lookup_scope(node, scope).lookup(node.name) if not node.qualifier else None
        if isinstance(v, Var):
            if v.kind == "member":  # `n` in a member function is `this->n`
                return self.expr(ast.Member(node.coord, ast.This(node.coord), node.name, True),
                                 scope)
            if v.kind == "method":
                self.error(f"reference to non-static member function '{node.name}' must be "
                           f"called", node, hint=f"call it: '{node.name}(...)'")
            if v.kind == "function_constant":
                self.error(f"function constant '{node.name}' has no value: "
                           "mx.fast.metal_kernel sets no function constants", node,
                           width=len(node.name), hint="use a template parameter instead "
                           "(metal_kernel(..., template=[...]))")
            if v.kind == "enclosing_local":
                self.error(f"reference to local variable '{node.name}' declared in enclosing "
                           f"function", node, width=len(node.name),
                           hint="a member function of a local struct cannot use the "
                                "function's variables: pass the value as an argument")
            return self.var_expr(v, node)
        if isinstance(v, tuple) and v[0] == "variable_template":
            return self.var_expr(self.variable_template(v[1], node, scope), node)
        if node.qualifier:
            static = self.static_member(node, scope) or self.enum_member(node, scope)
            if static is not None:
                return static
        builtin = self.builtins.get(("name", node.qualifier, node.name)) or self.builtins.get(
            ("name", "", node.name))
        if builtin is not None:
            return builtin(self, node, scope)
        if node.name in self.functions or ("call", node.name) in self.builtins:
            self.error(f"'{node.name}' is a function; did you forget the call parentheses?",
                       node)
        names = [k for k in scope.visible() if isinstance(scope.lookup(k), Var)]
        self.error(f"use of undeclared identifier '{node.name}'", node,
                   hint=cuda_hint(node.name) or self.suggest(node.name, names),
                   width=len(node.name))

    def var_expr(self, v: Var, node: ast.Node) -> E:
        if v.kind in ("captured", "uncaptured"):
            return self.captured_expr(v, node)
        if v.kind == "function":
            self.refuse_function_value(v, node)
        if v.kind == "unusable":
            self.error(v.name, node, width=len(getattr(node, "name", "")) or 1)
        coord = node.coord
        slot, t = v.slot, v.type
        if v.kind == "const":
            c = v.const
            return E(t, lambda f, lanes: c, coord, const=c, readonly=True)
        if v.kind == "uniform":   # a loop counter all lanes hold alike (`uniform_counter`)
            return E(t, lambda f, lanes: f.vars[slot], coord, readonly=True)
        if v.kind == "value" and (v.init_slot >= 0 or self.tracing):
            init_slot, name, tracing, hint = v.init_slot, v.name, self.tracing, v.read_hint

            def loc_tracked(f, lanes):
                return VarLoc(f.vars[slot], None, f.vars[init_slot] if init_slot >= 0 else None,
                              name, f.sources.setdefault(slot, {}) if tracing else None, hint)
            return self.with_load(E(t, None, coord, loc=loc_tracked, readonly=v.readonly))
        if v.kind == "value":
            return E(t, lambda f, lanes: f.vars[slot][lanes.idx], coord,
                     loc=lambda f, lanes: VarLoc(f.vars[slot]), readonly=v.readonly)
        if v.kind == "ptr":
            def ev_ptr(f, lanes):
                return f.vars[slot].get(lanes)
            return E(t, ev_ptr, coord, loc=lambda f, lanes: VarLoc(f.vars[slot]),
                     readonly=v.readonly)
        if v.kind in ("region", "global_region"):
            zero = np.zeros((), np.int64)
            if v.kind == "global_region":
                where = MemLoc(v.region, zero)   # (locations are never changed in place)

                def loc(f, lanes):
                    return where
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
        load = load_struct if isinstance(t, StructType) else loader(t)

        def ev(f, lanes):
            return load(f, lanes, loc(f, lanes), t, coord)
        return replace(e, ev=ev)

    # --- operators --------------------------------------------------------------------------
    def x_Binary(self, node: ast.Binary, scope: Scope) -> E:
        op = node.op
        left, right = self.expr(node.left, scope), self.expr(node.right, scope)
        if op in ("&&", "||") and not (isinstance(left.type, StructType)
                                       or isinstance(right.type, StructType)):
            # Built in: the right side only on the lanes that need it (compiled again so that
            # its code runs under that mask). An overloaded `&&` evaluates both, as in C++.
            return self.logical(node, scope)
        structs = isinstance(left.type, StructType) or isinstance(right.type, StructType)
        if op != "," and (structs or self.enumeration_operator(op, [left, right])):
            call = self.struct_operator(op, [left, right], node, scope)
            if call is not None:
                return call
            if op in ("&&", "||"):   # on the operands contextually converted to bool
                return self.logical(node, scope)
            if structs:   # the built-in operator on what the structs convert to
                left, right = self.converted_operands([left, right], node)
        if op == ",":
            return self.comma(self.rvalue(left), right, node)
        left, right = self.rvalue(left), self.rvalue(right)
        if isinstance(left.type, PointerType | NullptrType) or isinstance(
                right.type, PointerType | NullptrType):
            return self.pointer_arith(node, left, right)
        return self.binary(op, left, right, node)

    def binary(self, op: str, left: E, right: E, node: ast.Node,
               operands: tuple[ast.Node, ast.Node] | None = None) -> E:
        lnode, rnode = operands or (node.left, node.right)
        if isinstance(left.type, ty.SimdMatrixType) or isinstance(right.type, ty.SimdMatrixType):
            return self.builtins[("operator", "simdgroup_matrix")](self, op, left, right, node)
        if op in ("<", ">", "<=", ">=", "==", "!=") and left.type == right.type and isinstance(
                left.type, ScalarType) and left.type.scoped_enum:  # `e == E::A`
            u = left.type.underlying
            left, right = (self.convert(left, u, lnode, explicit=True),
                           self.convert(right, u, rnode, explicit=True))
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
        # A constant division by zero is not folded: clang only warns (it is undefined where it
        # runs), so it is reported when executed, and a constant expression needing it fails.
        if a.const is not None and b.const is not None and not (
                check_div and not np.all(b.const != 0)):
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
            apply = arith.binary_fn(op, t)

            def ev(f, lanes):
                return apply(aev(f, lanes), bev(f, lanes))
        return E(result_t, ev, coord)

    def pointer_arith(self, node: ast.Binary, left: E, right: E) -> E:
        op, coord = node.op, node.coord
        if op in ("<", ">", "<=", ">=", "==", "!="):
            left, right = self.null_compared(node, left, right)
        lp, rp = isinstance(left.type, PointerType), isinstance(right.type, PointerType)
        for p in (left, right) if op in ("+", "-") else ():
            if isinstance(p.type, PointerType):
                self.require_complete(p.type.pointee, node, "arithmetic on a pointer to an "
                                                            "incomplete type '{}'")
        if left.type == right.type == NULLPTR_T and op in ("==", "!="):
            return evaluated_for_effects(op == "==", BOOL, coord, left, right)
        if lp and rp:
            if op == "-":
                self.require_subtractable(node, left.type, right.type)
                size = pointer_step(left.type)
                lev, rev = left.ev, right.ev
                return E(LONG, lambda f, lanes: (lev(f, lanes).off - rev(f, lanes).off) // size,
                         coord)
            if op in ("<", ">", "<=", ">=", "==", "!="):
                left, right = self.composite_pointers(node, left, right)
                lev, rev = left.ev, right.ev
                def ev_compare(f, lanes):
                    a, b = lev(f, lanes), rev(f, lanes)
                    result = arith.binary(op, a.off, b.off, LONG)
                    if op in ("==", "!=") and a.region is not b.region:
                        same = pointers.same_region(a.region, b.region, lanes.n)
                        result = result & same if op == "==" else result | ~same
                    return result
                return E(BOOL, ev_compare, coord)
            self.error(f"invalid operands to binary expression ('{left.type}' and "
                       f"'{right.type}')", node)
        if op not in ("+", "-") or (rp and op == "-") or not (lp or rp):
            self.error(f"invalid operands to binary expression ('{left.type}' and "
                       f"'{right.type}')", node)
        ptr, num = (left, right) if lp else (right, left)
        if not ty.is_integer(num.type) or isinstance(num.type, VectorType):
            self.error(f"pointer arithmetic needs an integer offset, not '{num.type}'", node)
        return self.offset_pointer(ptr, num, -1 if op == "-" else 1, coord)

    def require_subtractable(self, node: ast.Binary, lt: PointerType, rt: PointerType) -> None:
        """Refuse `p - q` unless both point, in one address space, to the same type but for
        the pointee's own const (C++14 [expr.add]/2; a derived class's pointer minus its
        base's is refused too). Address spaces do not overlap in Metal, so clang (Metal's
        compiler) refuses a difference across them, as it does for OpenCL's."""
        if lt.space != rt.space:
            self.error(f"arithmetic operation with operands of type ('{lt}' and '{rt}') which "
                       "are pointers to non-overlapping address spaces", node,
                       hint="only pointers into one address space can be subtracted")
        if lt.pointee != rt.pointee:
            self.error(f"'{lt}' and '{rt}' are not pointers to compatible types", node,
                       hint="a pointer difference counts elements of one type: cast one "
                            "pointer to the other's type")

    def composite_pointers(self, node: ast.Binary, left: E, right: E) -> tuple[E, E]:
        """Two compared pointers as their composite pointer type (C++14 [expr]/13): pointers
        to one type (either const), or a derived class's pointer as its base's; others are
        refused, as clang refuses them."""
        lt, rt = left.type, right.type
        if lt.space != rt.space:
            self.error(f"comparison between ('{lt}' and '{rt}') which are pointers to "
                       "non-overlapping address spaces", node)
        if lt.pointee == rt.pointee or ty.VOID in (lt.pointee, rt.pointee):
            return left, right
        if self.base_offset(rt.pointee, lt.pointee) is not None:
            base = lt.pointee
        elif self.base_offset(lt.pointee, rt.pointee) is not None:
            base = rt.pointee
        else:
            self.error(f"comparison of distinct pointer types ('{lt}' and '{rt}')", node,
                       hint="cast one pointer to the other's type")
        t = PointerType(base, lt.space, lt.const or rt.const)
        return self.convert(left, t, node.left), self.convert(right, t, node.right)

    def null_compared(self, node: ast.Binary, left: E, right: E) -> tuple[E, E]:
        """The operands of a comparison where one is `nullptr` or the literal 0, both of the
        other's pointer type (C++14 [expr.eq]/2, composite pointer type); two null pointer
        constants compare as `std::nullptr_t`. Ordered comparisons with a null pointer
        constant are refused, as clang does."""
        nulls = [e.type == NULLPTR_T or (e.null_constant and ty.is_integer(e.type))
                 for e in (left, right)]
        if not any(nulls):
            return left, right
        if node.op not in ("==", "!="):
            zero = "zero" if any(e.type != NULLPTR_T for e in (left, right)) else "nullptr"
            self.error(f"ordered comparison between pointer and {zero} ('{left.type}' and "
                       f"'{right.type}')" if zero == "zero" else
                       f"invalid operands to binary expression ('{left.type}' and "
                       f"'{right.type}')", node,
                       hint="only == and != compare a pointer with a null pointer")
        pointer = next((e.type for e, null in zip((left, right), nulls)
                        if not null and isinstance(e.type, PointerType)), None)
        if pointer is None and not all(nulls):
            other = right if nulls[0] else left
            self.error(f"invalid operands to binary expression ('{left.type}' and "
                       f"'{right.type}')", node,
                       hint=f"'{other.type}' is not a pointer")
        t = pointer or NULLPTR_T
        return (self.convert(left, t, node.left) if nulls[0] else left,
                self.convert(right, t, node.right) if nulls[1] else right)

    def offset_pointer(self, ptr: E, num: E, sign: int, coord: Coord) -> E:
        size = pointer_step(ptr.type)
        pev, nev, src = ptr.ev, num.ev, num.type
        wide = ty.scalar_of(src).size >= 8

        def ev(f, lanes):
            p = pev(f, lanes)
            k = arith.convert(np.asarray(nev(f, lanes)), src, LONG)
            if wide:
                k = held_in_reach(k, size)
            # a ufunc: a constant offset is a 0-d array, and numpy warns when scalars wrap
            return Ptr(p.region, p.off + np.multiply(k, sign * size))
        return E(ptr.type, ev, coord)

    def logical(self, node: ast.Binary, scope: Scope) -> E:
        left, right = self.rvalue(self.expr(node.left, scope)), None
        if not isinstance(left.type, VectorType):
            right = self.rvalue(self.expr(node.right, scope))
        if isinstance(left.type, VectorType) or isinstance(right.type, VectorType):
            right = right or self.rvalue(self.expr(node.right, scope))
            return self.vector_logical(node, left, right)
        left = self.condition(left, node.left)
        right = self.condition(right, node.right)
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

    def condition(self, e: E, node: ast.Node) -> E:
        """A branch or loop condition (`if`, loops, `?:`, `&&`, `||`): `to_bool`, and in trace
        mode a check that no uninitialised value decides it."""
        b = self.to_bool(e, node)
        if not self.tracing or b.const is not None:
            return b
        return E(BOOL, checked_condition(b.ev, node.coord), b.coord)

    def vector_logical(self, node: ast.Binary, left: E, right: E) -> E:
        """`&&`/`||` with a vector operand: component-wise on both operands, evaluated both
        (no short circuit), giving `boolN` (MSL 3.2 logical operators)."""
        left = self.arith_operand(left, node.left)
        right = self.arith_operand(right, node.right)
        try:
            t = ty.common_type(left.type, right.type)
        except ty.ConversionError:
            self.error(f"invalid operands to binary expression ('{left.type}' and "
                       f"'{right.type}')", node)
        bt = ty.bool_like(t)
        a = self.convert(left, VectorType(ty.scalar_of(left.type), t.n), node, explicit=True)
        b = self.convert(right, VectorType(ty.scalar_of(right.type), t.n), node, explicit=True)
        a, b = self.convert(a, bt, node, explicit=True), self.convert(b, bt, node, explicit=True)
        combine = np.logical_and if node.op == "&&" else np.logical_or
        aev, bev = a.ev, b.ev
        return E(bt, lambda f, lanes: combine(aev(f, lanes), bev(f, lanes)), node.coord)

    def comma(self, left: E, right: E, node: ast.Binary) -> E:
        """`a, b`: `a` for its side effects, then `b`, an lvalue where `b` is one."""
        lev, value = left.ev, self.rvalue(right)
        rev = value.ev

        def ev_comma(f, lanes):
            lev(f, lanes)
            return rev(f, lanes)
        if right.loc is None or value is not right:
            return E(value.type, ev_comma, node.coord)
        rloc = right.loc

        def loc_comma(f, lanes):
            lev(f, lanes)
            return rloc(f, lanes)
        return replace(right, ev=ev_comma, coord=node.coord, loc=loc_comma, const=None)

    def to_bool(self, e: E, node: ast.Node) -> E:
        if isinstance(e.type, StructType) and self.conversion_function(e.type, BOOL, True):
            return self.convert(e, BOOL, node, explicit=True)   # contextually, as `if (s)`
        e = self.rvalue(e)
        if isinstance(e.type, VectorType):
            self.error(f"a vector ('{e.type}') cannot be used as a condition", node,
                       hint="use all(...) or any(...)")
        if e.type == NULLPTR_T:   # contextually converted to bool: false
            return constant(False, BOOL, e.coord)
        if isinstance(e.type, PointerType):
            return self.convert(e, BOOL, node)
        if not ty.is_arithmetic(e.type):
            self.error(f"'{e.type}' cannot be used as a condition", node)
        if isinstance(e.type, ScalarType) and e.type.scoped_enum:
            self.error(f"value of type '{e.type}' is not contextually convertible to 'bool'",
                       node, hint=f"compare it with one of '{e.type}''s enumerators")
        return self.convert(e, BOOL, node, explicit=True)

    def x_Unary(self, node: ast.Unary, scope: Scope) -> E:
        op = node.op
        if op in ("++", "--"):
            return self.increment(node, scope, prefix=True)
        operand = self.expr(node.operand, scope)
        if op == "&":  # a unary operator& is refused where it is defined
            return self.address_of(operand, node)
        if isinstance(operand.type, StructType) or self.enumeration_operator(op, [operand]):
            call = self.struct_operator(op, [operand], node, scope)
            if call is not None:
                return call
            operand = self.converted_operands([operand], node)[0]
        if op == "*":
            return self.dereference(self.rvalue(operand), node)
        if op == "!" and isinstance(self.rvalue(operand).type, VectorType):
            operand = self.rvalue(operand)   # component-wise, giving boolN (MSL 3.2)
            bt = ty.bool_like(operand.type)
            b = self.convert(operand, bt, node.operand, explicit=True)
            return self.map_value(replace(b, coord=node.coord), bt,
                                  lambda v: ~np.asarray(v, bool))
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
        hint = ("metalsim supports '&' on memory (arrays, buffers, threadgroup variables) and "
                "on locals it can place in thread memory")
        if operand.space is None:
            self.error("cannot take the address of this local variable", node, hint=hint)
        loc, coord = operand.loc, node.coord

        def ev(f, lanes):
            where = loc(f, lanes)
            if isinstance(where, VarLoc):  # a reference to a caller's local held in a register
                raise KernelStop("unsupported", "cannot take the address of this local variable",
                                 coord, lanes.indices(),
                                 hint + " (those whose address its own function takes)")
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
        if isinstance(target.type, StructType) or self.enumeration_operator(node.op, [target]):
            # `operator++()` / `operator++(int)`: the postfix form passes an extra int 0
            operands = [target] if prefix else [target, constant(0, INT, node.coord)]
            call = self.struct_operator(node.op, operands, node, scope)
            if call is not None:
                return call
        self.check_assignable(target, node.operand, scope)
        t = target.type
        one = ast.IntLiteral(node.coord, 1, text="1")
        op = "+" if node.op == "++" else "-"
        loc, coord = target.loc, node.coord
        if isinstance(t, PointerType):
            self.require_complete(t.pointee, node, "arithmetic on a pointer to an incomplete "
                                                   "type '{}'")
            size = pointer_step(t) * (1 if op == "+" else -1)

            def step(v):
                return Ptr(v.region, v.off + size)
        else:
            if not ty.is_arithmetic(t):
                self.error(f"cannot increment a value of type '{t}'", node)
            if isinstance(t, ScalarType) and t.enum:
                self.error(f"cannot {'increment' if node.op == '++' else 'decrement'} "
                           f"expression of enum type '{t}'", node)
            ct = ty.common_type(t, INT) if not isinstance(t, VectorType) else t
            one_c = self.convert(self.expr(one, scope), ct, node).const

            if ct == t:   # (int, uint, long...: no conversions, each a copy)
                add_one = arith.binary_fn(op, t)

                def step(v):
                    return add_one(v, one_c)
            else:
                def step(v):
                    return arith.convert(arith.binary(op, arith.convert(v, t, ct), one_c, ct),
                                         ct, t)

        def ev(f, lanes):
            where = loc(f, lanes)
            old = load_loc(f, lanes, where, t, coord)
            if not prefix and isinstance(old, np.ndarray):
                old = old.copy()  # a variable load may be a view of the variable itself
            new = step(old)
            store_loc(f, lanes, where, t, new, coord)
            return new if prefix else old
        if not prefix:
            return E(t, ev, coord)

        def loc_after(f, lanes):   # `++a` is the lvalue `a`: `++(++a)`, `int& r = ++a`
            where = loc(f, lanes)
            store_loc(f, lanes, where, t, step(load_loc(f, lanes, where, t, coord)), coord)
            return where
        return E(t, ev, coord, loc=loc_after, space=target.space)

    def check_assignable(self, target: E, node: ast.Node, scope: Scope) -> None:
        if target.loc is None and isinstance(node, ast.Conditional):
            self.error("a conditional expression is assignable only where both operands are "
                       "lvalues of one type", node,
                       hint="C++ makes 'c ? a : b' a temporary otherwise: write "
                            "'if (c) a = ...; else b = ...;'")
        if target.loc is None:
            self.error("expression is not assignable", node)
        if (target.readonly and self.fn is not None and self.fn.this_const
                and self.names_member(node, scope)):
            self.error(f"cannot assign to non-static data member within const member function "
                       f"'{self.fn.name}'", node,
                       hint="drop 'const' after the parameter list if it modifies the object")
        if target.readonly and isinstance(node, ast.Member) and isinstance(
                target.type, VectorType) and len(set(node.name)) < len(node.name) and all(
                c in SWIZZLE for c in node.name):
            self.error(f"a swizzle with repeated components ('.{node.name}') is not assignable",
                       node, hint="each component may be written once: name distinct "
                                  "components, e.g. '.xy'")
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
        value = (self.braced_value(target.type, node.value, scope)
                 if isinstance(node.value, ast.InitList) and node.op == "="
                 else self.expr(node.value, scope))
        if node.op != "=" and isinstance(value.type, StructType) and not isinstance(
                target.type, StructType | ScalarType | VectorType) and not self.free_operators(
                f"operator{node.op}", [target, value], scope, []):
            # `ptr += Int<1>{}`: with no operator function viable, the built-in operator on
            # what the struct converts to (MLX's steel attention `src += str_y`)
            converted = self.converted_operands([value], node)
            if converted is None:
                return self.struct_operator(node.op, [target, value], node, scope)
            value = converted[0]
        if node.op != "=" and (isinstance(target.type, StructType)
                               or isinstance(value.type, StructType)
                               or self.enumeration_operator(node.op, [target, value])):
            call = self.struct_operator(node.op, [target, value], node, scope)
            if call is not None:
                return call
            if isinstance(value.type, StructType):   # the built-in one wins
                value = self.converted_operands([value], node)[0]
        self.check_assignable(target, node.target, scope)
        t, coord, loc = target.type, node.coord, target.loc
        if node.op == "=":
            v = self.convert(value, t, node.value)
            vev = v.ev
            store = store_loc
            if isinstance(t, StructType):
                self.assign_struct(t, node)
                store = store_struct

            def ev(f, lanes):
                val = vev(f, lanes)
                store(f, lanes, loc(f, lanes), t, val, coord)
                return val

            def loc_assigned(f, lanes):   # `(a = b) += c`: the assignment is the lvalue `a`
                val = vev(f, lanes)
                where = loc(f, lanes)
                store(f, lanes, where, t, val, coord)
                return where
            return E(t, ev, coord, loc=loc_assigned, space=target.space)
        op = node.op[:-1]
        if isinstance(t, ScalarType) and t.enum:   # the result, an integer, is not a `t`
            self.error(f"assigning to '{t}' from incompatible type 'int'", node,
                       hint=f"convert explicitly: e = static_cast<{t}>(...)")
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

        def loc_compound(f, lanes):   # `(a += k) ^= b`: the lvalue `a`, once updated
            where = loc(f, lanes)
            slot[0] = load_loc(f, lanes, where, t, coord)
            store_loc(f, lanes, where, t, rev(f, lanes), coord)
            return where
        return E(t, ev_compound, coord, loc=loc_compound, space=target.space)

    def x_Conditional(self, node: ast.Conditional, scope: Scope) -> E:
        cond = self.condition(self.expr(node.cond, scope), node.cond)
        then, otherwise = self.expr(node.then, scope), self.expr(node.otherwise, scope)
        lvalue = self.conditional_lvalue(cond, then, otherwise, node)
        if lvalue is not None and cond.const is not None:
            return then if bool(cond.const) else otherwise
        a, b = self.rvalue(then), self.rvalue(otherwise)
        # Pointers, structs and simdgroup matrices: both operands of one type, copied per lane.
        objects = PointerType | StructType | ty.SimdMatrixType | NullptrType
        a, b = self.null_operands(a, b, node)
        if isinstance(a.type, objects) or isinstance(b.type, objects):
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
                off = np.empty(lanes.n, np.int64)
                off[c] = va.off
                off[~c] = vb.off
                return Ptr(pointers.merge([(np.flatnonzero(c), va.region),
                                           (np.flatnonzero(~c), vb.region)], lanes.n), off)
            out = lane_zeros(t, lanes.n)
            out[c] = va
            out[~c] = vb
            return out
        if lvalue is not None:   # read as a value above; located only where it is an lvalue
            return replace(lvalue, ev=ev)
        return E(t, ev, coord)

    def null_operands(self, a: E, b: E, node: ast.Conditional) -> tuple[E, E]:
        """`c ? p : nullptr` (or `: 0`): the null pointer constant as the other operand's
        pointer type; `c ? nullptr : 0` is a `std::nullptr_t` (C++14 [expr.cond]/6)."""
        nulls = [e.type == NULLPTR_T or (e.null_constant and ty.is_integer(e.type))
                 for e in (a, b)]
        if not any(nulls) or (all(nulls) and NULLPTR_T not in (a.type, b.type)):
            return a, b
        other = b if nulls[0] else a
        t = other.type if isinstance(other.type, PointerType) else (
            NULLPTR_T if all(nulls) else None)
        if t is None:
            return a, b   # refused below: incompatible operand types
        return (self.convert(a, t, node.then) if nulls[0] else a,
                self.convert(b, t, node.otherwise) if nulls[1] else b)

    def conditional_lvalue(self, cond: E, then: E, otherwise: E,
                           node: ast.Conditional) -> E | None:
        """`c ? a : b` as the lvalue it is where `a` and `b` are lvalues of one type in one
        address space (C++ [expr.cond]/4), without its evaluator; None where it is a value."""
        t = then.type
        if (then.loc is None or otherwise.loc is None or t != otherwise.type
                or isinstance(t, ArrayType | AtomicType)
                or (then.space or "thread") != (otherwise.space or "thread")):
            return None
        cev, aloc, bloc, coord = cond.ev, then.loc, otherwise.loc, node.coord

        def loc(f, lanes):
            c = np.broadcast_to(cev(f, lanes), (lanes.n,))
            yes, no = lanes.split(c)
            if no.n == 0:
                return aloc(f, lanes)
            if yes.n == 0:
                return bloc(f, lanes)
            return chosen_location(c, aloc(f, yes), bloc(f, no), t, lanes, coord)
        return E(t, None, coord, loc=loc, readonly=then.readonly or otherwise.readonly,
                 space=then.space or otherwise.space)

    def x_Index(self, node: ast.Index, scope: Scope) -> E:
        base = self.expr(node.base, scope)
        if isinstance(base.type, StructType):
            return self.struct_operator("[]", [base, self.expr(node.index, scope)], node, scope)
        index = self.expr(node.index, scope)
        if isinstance(index.type, StructType):
            # an object with a conversion to an integer (`a[r]` with MLX's `Int<N>`)
            found = self.conversion_function(index.type, ty.LONG, False)
            if found is not None and ty.is_integer(
                    (converted := self.call_conversion(index, *found, index.coord)).type):
                index = converted
        index = self.rvalue(index)
        if not ty.is_integer(index.type) or isinstance(index.type, VectorType):
            self.error(f"array subscript is not an integer ('{index.type}')", node.index)
        if isinstance(base.type, VectorType):
            return self.vector_component(base, index, node)
        # An array inside an object (a row of `tile[ly][lx]`, a member array): C++ [expr.add]/4
        # makes an index past its end undefined even where the object has memory there.
        inner = (base.type.length if isinstance(base.type, ArrayType) and base.type.length > 0
                 and isinstance(node.base, ast.Index | ast.Member) else None)
        array_loc = base.loc if isinstance(base.type, ArrayType) else None
        base = self.rvalue(base)
        t = base.type
        if not isinstance(t, PointerType):
            self.error(f"subscripted value is not an array, pointer, or vector ('{t}')", node)
        self.require_complete(t.pointee, node, "subscript of pointer to incomplete type '{}'")
        size, bev, iev, coord = t.pointee.size, base.ev, index.ev, node.coord
        if array_loc is not None:   # an array: its location, not the pointer its decay makes
            bev = array_loc
        if self.tracing:
            iev = address_only(iev, node.index.coord)
        root = root_name(node)
        index_scalar = ty.scalar_of(index.type)
        wide = index_scalar.size >= 8
        # elements of a power-of-two size: a shift scales the index, a little faster
        shift = size.bit_length() - 1 if size > 1 and not size & (size - 1) else None

        def past_inner_end(f, lanes, bad):
            report_lanes(f, lanes, bad, "out-of-bounds", "error",
                         f"index out of bounds of an inner array of '{root}' ({inner} elements)",
                         coord, hint="an index past the end of a row reaches the next row, "
                                     "which C++ leaves undefined: index within each dimension")

        def uniform_index(f, lanes, p, k: int) -> MemLoc:
            """The element `k` (one index for every lane, at most 32 bits) of `p`."""
            if inner is not None and not 0 <= k < inner:
                past_inner_end(f, lanes, np.True_)
            off = p.off
            if off.__class__ is np.ndarray and off.ndim:
                return MemLoc(p.region, off + k * size)
            return MemLoc(p.region, np.array(int(off) + k * size, np.int64))

        def offset_by(p, k: np.ndarray, fresh: bool) -> MemLoc:
            """`p` moved by the byte offsets `k`, added in place where `fresh` (`k` is no one
            else's)."""
            off = p.off
            if off.__class__ is np.ndarray and not off.ndim and not off:   # a uniform 0
                return MemLoc(p.region, k)
            if fresh:
                k += off
                return MemLoc(p.region, k)
            return MemLoc(p.region, k + off)

        # An index by a variable that keeps its declared value (`uses.fixed_names`) is the
        # same byte offset for the same lanes while the function runs: it is kept in a slot
        # of the frame with the lanes it is for, and reused for them (`acc += As[ly][k]` in
        # a loop converts, checks and scales `ly` once).
        v = scope.lookup(node.index.name) if isinstance(node.index, ast.Name) else None
        kept = (self.new_slot() if isinstance(v, Var) and v.kind == "value"
                and node.index.unqualified and node.index.name in self.fixed_names else -1)

        def loc(f, lanes):
            p = bev(f, lanes)
            if kept >= 0:
                known = f.vars[kept]
                if known is not None and known[0] is lanes:
                    return offset_by(p, known[1], False)
            k = iev(f, lanes)
            if not wide and k.__class__ is np.ndarray and not k.ndim:
                return uniform_index(f, lanes, p, int(k))
            # `arith.convert` to long of an integer (or bool) index: a new array
            k = np.asarray(k).astype(np.int64)
            if wide:
                k = held_in_reach(k, size)
            # (seen as unsigned, a negative index is past the end: one pass for both ends)
            within = not (inner is not None and k.size
                          and np.maximum.reduce(k.view(np.uint64), None) >= inner)
            if not within:
                past_inner_end(f, lanes, (k < 0) | (k >= inner))
            off = p.off
            if k.ndim < (off.ndim if off.__class__ is np.ndarray else np.ndim(off)):
                return MemLoc(p.region, off + np.multiply(k, size))  # see offset_pointer
            if shift is not None:
                k <<= shift
            elif size != 1:
                k *= size
            if kept >= 0 and within:
                f.vars[kept] = (lanes, k)
                return offset_by(p, k, False)
            return offset_by(p, k, True)
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
        bev, iev, bloc, coord, itype = base.ev, index.ev, base.loc, node.coord, index.type

        def component(f, lanes):
            """Each lane's component index; one outside the vector is reported and gives -1
            (reads of it give 0, writes to it are dropped)."""
            k = arith.convert(np.asarray(iev(f, lanes)), itype, LONG)
            k = np.broadcast_to(k, (lanes.n,))
            bad = (k < 0) | (k >= t.n)
            if bad.any():
                report_lanes(f, lanes, bad, "out-of-bounds", "error",
                             f"vector component index out of range for '{t}'", coord,
                             hint=f"a {t} has components 0 to {t.n - 1}")
                k = np.where(bad, -1, k)
            return k

        def ev(f, lanes):
            v = np.broadcast_to(np.asarray(bev(f, lanes)), (lanes.n, t.n))
            k = component(f, lanes)
            return np.where(k >= 0, v[np.arange(lanes.n), k], np.zeros((), elem.dtype))
        e = E(elem, ev, node.coord)
        if bloc is not None:
            def loc(f, lanes):
                where = bloc(f, lanes)
                k = component(f, lanes)
                if isinstance(where, VarLoc):
                    return VarLoc(where.arr, k, where.init, where.name, where.sources, where.hint)
                # an index reported out of range accesses component 0
                return MemLoc(where.region, where.off + np.where(k >= 0, k * elem.size, 0))
            e.loc, e.readonly, e.space = loc, base.readonly, base.space
        return e

    def object_of(self, base: E, node: ast.Member | ast.MethodCall) -> E:
        """The object whose member `node` names: `base` itself, or `*base` after `->`."""
        pointee = base.type.pointee if isinstance(base.type, PointerType) else None
        if node.arrow:
            if not isinstance(base.type, PointerType | ArrayType):
                self.error(f"member reference type '{base.type}' is not a pointer", node,
                           hint="use '.' to name a member of an object")
            return self.dereference(self.rvalue(base), node)
        if isinstance(pointee, StructType):
            self.error(f"member reference type '{base.type}' is a pointer", node,
                       hint="did you mean to use '->'?")
        return base

    def x_Member(self, node: ast.Member, scope: Scope) -> E:
        base = self.object_of(self.expr(node.base, scope), node)
        if isinstance(base.type, StructType) and node.qualifier:   # `d.B::v`: B's member
            base = self.qualified_subobject(base, node, scope)
        if isinstance(base.type, StructType):
            return self.struct_member(base, node)
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
            bloc, coord = base.loc, node.coord

            def pick(where):
                inner = where.comps
                picked = comps if inner is None else tuple(inner[c] for c in comps)
                if isinstance(where, VarLoc):
                    return VarLoc(where.arr, picked, where.init, where.name, where.sources,
                                  where.hint)
                return MemLoc(where.region, where.off, picked)

            def loc(f, lanes):
                return pick(bloc(f, lanes))

            def ev(f, lanes):
                where = bloc(f, lanes)
                if isinstance(where, VarLoc) and where.init is not None:
                    # only these components need to have been written
                    return load_loc(f, lanes, pick(where), rt, coord)
                return np.asarray(load_loc(f, lanes, where, t, coord))[..., sel]
            e.ev, e.loc, e.readonly, e.space = ev, loc, base.readonly, base.space
        return e

    def x_SizeOf(self, node: ast.SizeOf, scope: Scope) -> E:
        operand = node.operand
        if isinstance(operand, ast.NamedType | ast.PointerType | ast.ArrayType):
            t = self.resolve_type(operand, scope)
        else:
            t = self.expr(operand, scope).type
        self.require_complete(t, node, "invalid application of "
                                       f"'{'alignof' if node.align else 'sizeof'}' to an "
                                       "incomplete type '{}'")
        return constant(t.align if node.align else t.size, ULONG, node.coord)

    def x_MethodCall(self, node: ast.MethodCall, scope: Scope) -> E:
        base = self.expr(node.base, scope)
        t = base.type
        if node.name == "operator()" and t in self.closures:   # `[&] { ... }()`
            return self.call_closure(node, self.closures[t], t, scope, made=base)
        pointee = t.pointee if isinstance(t, PointerType) else (
            t.elem if isinstance(t, ArrayType) and node.arrow else None)
        if isinstance(t, StructType) or isinstance(pointee, StructType):
            return self.call_member(self.object_of(base, node), node, scope)
        if node.name == "operator()":
            self.error(f"called object type '{t}' is not a function or function pointer", node)
        handler = self.builtins.get(("method", node.name))
        if handler is None:
            self.error(f"member reference base type '{t}' is not a structure", node)
        return handler(self, node, scope)

    def x_This(self, node: ast.This, scope: Scope) -> E:
        v = scope.lookup("this")
        if v is not None and v.kind == "uncaptured":
            self.error("'this' cannot be implicitly captured in this context", node, width=4,
                       hint="capture it: '[this]' (or '[&]', '[=]')")
        if v is None or v.kind not in ("ptr", "captured"):  # none, or an enclosing function's
            self.error("invalid use of 'this' outside of a non-static member function", node,
                       width=4)
        return E(v.type, self.var_expr(v, node).ev, node.coord)  # a prvalue: no location

    def names_member(self, node: ast.Node, scope: Scope) -> bool:
        """Whether the lvalue `node` is (part of) a data member of `*this`."""
        while isinstance(node, ast.Member | ast.Index):
            if isinstance(node, ast.Member) and node.arrow:
                return isinstance(node.base, ast.This)
            node = node.base
        if isinstance(node, ast.Unary) and node.op == "*":
            return isinstance(node.operand, ast.This)
        return isinstance(node, ast.Name) and self.is_member(scope, node.name, "member")

    def braced_value(self, t: Type, init: ast.InitList, scope: Scope) -> E:
        """A temporary of type `t` initialised by `init`, as the right side of `v = {...}`
        or a `return {...}` (radix.h's `w[0] = {T(a), T(b)}`)."""
        if isinstance(t, StructType):
            return self.aggregate(t, init, scope)
        if isinstance(t, VectorType):
            return self.expr(ast.Construct(init.coord, ast.NamedType(init.coord, t.name),
                                           init.items), scope)
        if len(init.items) > 1:
            self.error("excess elements in scalar initializer", init.items[1])
        if not init.items:
            return self.convert(self.expr(ast.IntLiteral(init.coord, 0, text="0"), scope), t,
                                init)
        return self.expr(init.items[0], scope)

    def x_InitList(self, node: ast.InitList, scope: Scope) -> E:
        self.error("an initializer list can only initialize a declared variable", node)

    def x_StringLiteral(self, node: ast.StringLiteral, scope: Scope) -> E:
        self.error("string literals are not supported in Metal kernels", node)

    def x_Cast(self, node: ast.Cast, scope: Scope) -> E:
        if isinstance(node.type, ast.ReferenceType):
            return self.reference_cast(node, scope)
        t = self.resolve_type(node.type, scope)
        e = self.rvalue(self.expr(node.expr, scope))
        if t == ty.VOID:  # `(void)x`: evaluated, its value discarded
            return E(ty.VOID, e.ev, node.coord)
        if node.style == "as_type":
            return self.as_type(e, t, node)
        if reinterprets_nullptr(e, t, node.style):
            return self.nullptr_as_integer(e, t, node)
        if node.style == "reinterpret_cast" and not isinstance(t, PointerType):
            self.error("reinterpret_cast is only supported between pointer types", node)
        return replace(self.convert(e, t, node, explicit=True), coord=node.coord)

    def nullptr_as_integer(self, e: E, t: ScalarType, node: ast.Cast | ast.Construct) -> E:
        """`(long)nullptr`, `reinterpret_cast<ulong>(nullptr)`: 0, as `(void*)0` converted,
        in an integer type that holds a pointer (C++14 [expr.reinterpret.cast]/4); a
        narrower one is refused, as clang and g++ refuse it."""
        if t.size < NULLPTR_T.size:
            self.error(f"cast from pointer to smaller type '{t}' loses information", node,
                       hint="a pointer is 64 bits in Metal: cast to 'long' or 'ulong'")
        return replace(evaluated_for_effects(0, t, node.coord, e), const=None)

    def reference_cast(self, node: ast.Cast, scope: Scope) -> E:
        """`reinterpret_cast<thread T&>(x)` (or `static_cast`) of an lvalue of type T: the same
        lvalue, as MLX steel views a simdgroup_matrix's `thread_elements()`; a cast that would
        reinterpret the bytes as another type is refused rather than guessed."""
        t, const, _ = self.resolve_decl_type(node.type, scope)
        e = self.expr(node.expr, scope)
        if e.loc is None:
            self.error("a reference cast needs an lvalue", node)
        if e.type != t and node.style != "reinterpret_cast":
            base = self.as_base(e, t, node.coord)   # `static_cast<B&>(d)`: the subobject
            down = self.base_offset(t, e.type)      # `static_cast<D&>(b)`: its object
            if base is not None:
                e = base
            elif down is not None:
                e = self.subobject(e, t, -down, node.coord)
        if e.type != t:
            self.error(f"metalsim supports a cast to a reference only to the object's own type "
                       f"or a base class of it ('{e.type}', not '{t}')", node)
        return replace(e, coord=node.coord, readonly=e.readonly or const)

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
        self.require_complete(t, node, "invalid use of incomplete type '{}'")
        if isinstance(t, StructType):
            return self.construct_struct(t, node, scope)
        args = [self.rvalue(self.expr(a, scope)) for a in node.args]
        if isinstance(t, ScalarType):
            if not args:
                return constant(0, t, node.coord)
            if len(args) != 1:
                self.error(f"too many arguments to construct '{t}'", node)
            if not node.braces and reinterprets_nullptr(args[0], t, "c"):   # `long(nullptr)`
                return self.nullptr_as_integer(args[0], t, node)
            return replace(self.convert(args[0], t, node, explicit=True), coord=node.coord)
        if isinstance(t, VectorType):
            return self.construct_vector(t, args, node)
        if isinstance(t, ty.SimdMatrixType):
            return self.builtins[("construct", "simdgroup_matrix")](self, t, args, node)
        if isinstance(t, PointerType) and len(args) == 1:
            return self.convert(args[0], t, node, explicit=True)
        if t == NULLPTR_T and len(args) <= 1:   # `nullptr_t()`, `nullptr_t(0)`
            return (self.convert(args[0], t, node, explicit=True) if args
                    else E(t, null_pointer, node.coord))
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


def root_name(node: ast.Node) -> str:
    """The variable an lvalue expression such as `tile[ly][lx]` or `s.v[k]` starts from."""
    while isinstance(node, ast.Index | ast.Member):
        node = node.base
    return node.name if isinstance(node, ast.Name) else "the array"


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
