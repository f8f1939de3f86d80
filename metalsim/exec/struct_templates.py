"""Struct (class) templates: the `StructTemplateCompiler` part of `Compiler`.

A struct template is instantiated when a type names it with arguments (`Acc<float>`), once per
argument list; the instance is an ordinary `StructType` named as clang prints it. As C++
instantiates a class template's member functions only where they are used, an instance's member
functions and constructors are compiled at their first call, and an error inside one points at
the template's line, naming the instance.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from metalsim.diagnostics import CompileError
from metalsim.exec.compiled import Scope, Var
from metalsim.exec.deduction import bind_deduced
from metalsim.lang import ast
from metalsim.lang import types as ty
from metalsim.lang.types import StructType, Type


@dataclass(eq=False)
class StructTemplate:
    """A struct template, what its definition sees, and its instances by argument list."""

    node: ast.StructDef
    scope: Scope
    instances: dict[tuple, StructType] = field(default_factory=dict)


def argument_key(v: Type | Var) -> object:
    """A hashable identity for a template argument: a type, or a constant's type and value."""
    return v if not isinstance(v, Var) else (str(v.type), np.asarray(v.const).item())


def argument_text(v: Type | Var) -> str:
    """A template argument as clang prints it in a type name (`Buf<float, 4>`)."""
    if not isinstance(v, Var):
        return str(v)
    value = np.asarray(v.const).item()
    return ("true" if value else "false") if v.type == ty.BOOL else str(value)


class StructTemplateCompiler:
    """Struct template methods of `Compiler` (which supplies `error`, `define_struct`, ...)."""

    def declare_struct_template(self, node: ast.StructDef, scope: Scope) -> None:
        if scope.lookup(node.name) is not None:
            self.error(f"redefinition of '{node.name}'", node)
        scope.names[node.name] = StructTemplate(node, scope)  # type: ignore[assignment]

    def struct_instance(self, tmpl: StructTemplate, node: ast.NamedType,
                        scope: Scope) -> StructType:
        """The instance of `tmpl` for the template arguments of `node`, resolved in `scope`."""
        params, args = tmpl.node.template_params or [], node.template_args or []
        name = tmpl.node.name
        if len(args) > len(params):
            self.error(f"too many template arguments for class template '{name}'",
                       args[len(params)])
        bound: dict = {}
        for i, p in enumerate(params):
            if i < len(args):
                bound[p.name] = self.template_value(p, args[i], scope,
                                                    Scope(dict(bound), tmpl.scope))
            elif p.default is not None:  # a default sees the parameters before it
                bound[p.name] = self.template_value(p, p.default, Scope(dict(bound), tmpl.scope))
            else:
                self.error(f"too few template arguments for class template '{name}'", node,
                           hint=f"'{name}' has {len(params)} template parameters: "
                                f"{', '.join(q.name for q in params)}", width=len(name))
        key = tuple(argument_key(v) for v in bound.values())
        st = tmpl.instances.get(key)
        if st is None:
            shown = f"{name}<{', '.join(argument_text(v) for v in bound.values())}>"
            with self.instantiating(f"'{shown}'"):
                st = self.define_struct(tmpl.node, Scope(bound, tmpl.scope), shown)
            tmpl.instances[key] = st
            self.instance_of[st] = (tmpl, bound)
        return st

    def deduce_from_instance(self, pattern: ast.NamedType, actual: StructType,
                             names: set[str], bindings: dict) -> None:
        """Bind the template parameters in `pattern` (`Acc<T>`, `Buf<T, N>`) from the
        arguments of the instance `actual`, where it is an instance of that template."""
        tmpl, bound = self.instance_of[actual]
        if tmpl.node.name != pattern.name:
            return
        for arg, value in zip(pattern.template_args or [], bound.values()):
            if not isinstance(value, Var):
                self.deduce_from(arg, value, names, bindings)
            elif getattr(arg, "name", None) in names:
                bind_deduced(bindings, arg.name, value)

    @contextmanager
    def instantiating(self, what: str) -> Iterator[None]:
        """Name the instance `what` in the hint of a compile error raised inside it."""
        try:
            yield
        except CompileError as err:
            d, note = err.diagnostic, f"in instantiation of {what}"
            if note not in d.hint:
                d.hint = f"{d.hint}; {note}" if d.hint else note
                err.args = (d.render(),)
            raise

    @contextmanager
    def instantiating_member(self, st: StructType, fn: ast.FunctionDef) -> Iterator[None]:
        """As `instantiating`, for the member function `fn` of `st` if `st` is a template's
        instance."""
        if st not in self.instance_of:
            yield
            return
        with self.instantiating(f"member function '{st.name}::{fn.name}'"):
            yield
