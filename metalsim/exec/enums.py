"""Enumerations: the `EnumCompiler` part of `Compiler`.

An enumeration is a scalar type of its own (`ScalarType` with `enum` set) stored as its
underlying type: the one given (`enum E : uchar`), `int` for an `enum class`, and for an unscoped
one the first of int, uint, long, ulong holding every enumerator (g++ picks `unsigned int` over
`int` where none is negative, which holds and promotes the same values). Enumerations may be
declared in a struct (`S::K`, `S::A`), and anonymously (`enum { N = 4 };`). An
unscoped enumeration's enumerators are named in its scope and convert to integers implicitly (an
integral promotion); an `enum class`'s are named `E::A` only and convert only explicitly
(`static_cast<int>(E::A)`), compare only with their own type. Integers convert to either only
explicitly.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from metalsim.exec.compiled import E, Scope, Var
from metalsim.lang import ast
from metalsim.lang import types as ty
from metalsim.lang.namespaces import enclosing_namespace
from metalsim.lang.types import ScalarType


class EnumCompiler:
    """Enumeration methods of `Compiler` (which supplies `resolve_type`, `const_int`, ...)."""

    def define_enum(self, node: ast.EnumDef, scope: Scope, shown: str = "") -> ScalarType:
        """Declare `node`'s type (shown as `shown`, by default its name) and, for an unscoped
        one, its enumerators in `scope`."""
        fixed = (self.resolve_type(node.underlying, scope) if node.underlying
                 else ty.INT if node.scoped else None)
        if fixed is not None and not (isinstance(fixed, ScalarType) and fixed.kind == "int"
                                      and fixed.enum is None and fixed.underlying is None):
            self.error(f"non-integral type '{fixed}' is an invalid underlying type",
                       node.underlying or node)
        if node.name in scope.names:
            self.error(f"redefinition of '{node.name}'", node, width=len(node.name))
        values: dict[str, int] = {}
        # Inside its braces an enumerator has the underlying type, or without a fixed one a
        # type that holds its value (C++ [dcl.enum]/5).
        before: dict[str, Var] = {}
        # An unscoped enumerator is a member of the enumeration's namespace, named by its
        # program name in the next one's value.
        namespace = enclosing_namespace(node.name)
        prefix = f"{namespace}::" if namespace else ""
        value = -1
        for en in node.enumerators:
            if en.name in values:
                self.error(f"redefinition of enumerator '{en.name}'", en, width=len(en.name))
            value = value + 1 if en.value is None else self.const_int(
                en.value, Scope(dict(before), scope), "enumerator value")
            held = fixed or _holding([value])
            if held is None or not _fits(held, value):
                self.error(f"enumerator value {value} is not representable in the underlying "
                           f"type '{fixed or ty.ULONG}'", en.value or en)
            values[en.name] = value
            before[en.name] = Var("const", held, readonly=True,
                                  const=np.asarray(value, held.dtype))
            if not node.scoped:   # (named by its program name in the next one's value)
                scope.names[prefix + en.name] = before[en.name]
        underlying = fixed or _holding(list(values.values()) or [0])
        if underlying is None:
            self.error("no integral type can represent all of the enumerator values", node,
                       hint="values range from a signed long's least to an unsigned long's "
                            "greatest, not both")
        t = ScalarType(shown or node.name, underlying.dtype, "int", underlying.signed,
                       underlying.rank, underlying, "enum class" if node.scoped else "enum")
        scope.names[node.name] = t
        members = {name: Var("const", t, readonly=True, const=np.asarray(v, underlying.dtype))
                   for name, v in values.items()}
        if not node.scoped:
            scope.names.update({prefix + name: var for name, var in members.items()})
        self.enum_members[t] = members
        return t

    def s_EnumDef(self, node: ast.EnumDef, scope: Scope):
        self.define_enum(node, scope)
        return lambda f, lanes: lanes

    def enum_member(self, node: ast.Name, scope: Scope) -> E | None:
        """`E::A` or `S::E::A` (an enumeration declared in a struct): the enumerator `A` of
        the enumeration `E`, or None if `E` names none."""
        enum = self.lookup_scope(node, scope).lookup(node.qualifier)
        owner, _, last = node.qualifier.rpartition("::")
        if enum is None and owner:
            st = self.qualifier_struct(replace(node, qualifier=owner), scope)
            enum = self.struct_types.get(st, {}).get(last)
        if not (isinstance(enum, ScalarType) and enum.enum):
            return None
        v = self.enum_members[enum].get(node.name)
        if v is None:
            self.error(f"no member named '{node.name}' in '{enum}'", node,
                       width=len(node.name))
        return self.var_expr(v, node)


def _fits(t: ScalarType, value: int) -> bool:
    info = np.iinfo(t.dtype)
    return bool(info.min <= value <= info.max)


def _holding(values: list[int]) -> ScalarType | None:
    """The underlying type of an unscoped enumeration without a fixed one, holding `values`:
    the first of int, uint, long, ulong that holds them all, which is also the type it
    promotes to (C++ [conv.prom]/3); None where none does."""
    return next((t for t in (ty.INT, ty.UINT, ty.LONG, ty.ULONG)
                 if all(_fits(t, v) for v in values)), None)
