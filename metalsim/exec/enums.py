"""Enumerations: the `EnumCompiler` part of `Compiler`.

An enumeration is a scalar type of its own (`ScalarType` with `enum` set) stored as its
underlying type: `int` unless one is given (`enum E : uchar`; g++ would pick `unsigned int` for
an unscoped one without negative enumerators, which holds and promotes the same values). An
unscoped enumeration's enumerators are named in its scope and convert to integers implicitly (an
integral promotion); an `enum class`'s are named `E::A` only and convert only explicitly
(`static_cast<int>(E::A)`), compare only with their own type. Integers convert to either only
explicitly.
"""

from __future__ import annotations

import numpy as np

from metalsim.exec.compiled import E, Scope, Var
from metalsim.lang import ast
from metalsim.lang import types as ty
from metalsim.lang.namespaces import enclosing_namespace
from metalsim.lang.types import ScalarType


class EnumCompiler:
    """Enumeration methods of `Compiler` (which supplies `resolve_type`, `const_int`, ...)."""

    def define_enum(self, node: ast.EnumDef, scope: Scope) -> ScalarType:
        """Declare `node`'s type and (for an unscoped one) its enumerators in `scope`."""
        underlying = self.resolve_type(node.underlying, scope) if node.underlying else ty.INT
        if not (isinstance(underlying, ScalarType) and underlying.kind == "int"
                and underlying.enum is None and underlying.underlying is None):
            self.error(f"non-integral type '{underlying}' is an invalid underlying type",
                       node.underlying or node)
        t = ScalarType(node.name, underlying.dtype, "int", underlying.signed, underlying.rank,
                       underlying, "enum class" if node.scoped else "enum")
        if node.name in scope.names:
            self.error(f"redefinition of '{node.name}'", node, width=len(node.name))
        scope.names[node.name] = t
        members: dict[str, Var] = {}
        # Inside its braces an enumerator has the underlying type (C++ [dcl.enum]/5).
        before: dict[str, Var] = {}
        # An unscoped enumerator is a member of the enumeration's namespace.
        namespace = enclosing_namespace(node.name)
        prefix = f"{namespace}::" if namespace else ""
        info = np.iinfo(underlying.dtype)
        value = -1
        for en in node.enumerators:
            if en.name in members:
                self.error(f"redefinition of enumerator '{en.name}'", en, width=len(en.name))
            value = value + 1 if en.value is None else self.const_int(
                en.value, Scope(dict(before), scope), "enumerator value")
            if not info.min <= value <= info.max:
                self.error(f"enumerator value {value} is not representable in the underlying "
                           f"type '{underlying}'", en.value or en)
            members[en.name] = Var("const", t, readonly=True,
                                   const=np.asarray(value, underlying.dtype))
            before[en.name] = Var("const", underlying, readonly=True,
                                  const=np.asarray(value, underlying.dtype))
            if not node.scoped:   # (named by its program name in the next one's value)
                scope.names[prefix + en.name] = before[en.name]
        if not node.scoped:
            for name, var in members.items():
                scope.names[prefix + name] = var
        self.enum_members[t] = members
        return t

    def s_EnumDef(self, node: ast.EnumDef, scope: Scope):
        self.define_enum(node, scope)
        return lambda f, lanes: lanes

    def enum_member(self, node: ast.Name, scope: Scope) -> E | None:
        """`E::A`: the enumerator `A` of the enumeration `E`, or None if `E` names none."""
        enum = self.lookup_scope(node, scope).lookup(node.qualifier)
        if not (isinstance(enum, ScalarType) and enum.enum):
            return None
        v = self.enum_members[enum].get(node.name)
        if v is None:
            self.error(f"no member named '{node.name}' in '{enum}'", node,
                       width=len(node.name))
        return self.var_expr(v, node)
