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
from metalsim.exec.deduction import DeductionConflict, bind_deduced
from metalsim.exec.uses import walk
from metalsim.lang import ast
from metalsim.lang import types as ty
from metalsim.lang.types import StructType, Type


@dataclass(eq=False)
class StructTemplate:
    """A struct template, what its definition sees, and its instances by argument list; a
    variable template too (`node` an `ast.VariableTemplate`), whose specialisations are
    chosen the same way."""

    node: ast.StructDef | ast.VariableTemplate
    scope: Scope
    instances: dict[tuple, StructType] = field(default_factory=dict)
    specializations: list = field(default_factory=list)  # partial and explicit


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
        existing = scope.lookup(node.name)
        if existing is not None and not (isinstance(existing, StructTemplate)
                                         and existing.node.coord.section == "prelude"):
            self.error(f"redefinition of '{node.name}'", node)
        scope.names[node.name] = StructTemplate(node, scope)  # type: ignore[assignment]

    def declare_specialization(self, node: ast.StructDef, scope: Scope) -> None:
        """`template <...> struct S<args> {...}`: a specialisation of the template `S`, used
        for the instances whose arguments it matches (the most specialised one that does)."""
        tmpl = scope.lookup(node.name)
        if not isinstance(tmpl, StructTemplate):
            self.error(f"explicit specialization of non-template struct '{node.name}'", node)
        params = tmpl.node.template_params or []
        given = node.specialization or []
        missing = params[len(given):]
        # `template <> struct Init<complex64_t>` of `template <typename T, typename = void>`:
        # the left-out arguments are the defaults, where they name no other parameter.
        names = {q.name for q in params}
        if missing and all(p.default is not None and not any(
                getattr(n, "name", None) in names for n in walk(p.default)) for p in missing):
            node.specialization = given = [*given, *(p.default for p in missing)]
        if len(given) != len(params):
            self.error(f"a specialization of '{node.name}' must give all {len(params)} template "
                       f"arguments in metalsim", node,
                       hint=f"'{node.name}' has parameters: "
                            f"{', '.join(p.name for p in params)}")
        tmpl.specializations.append(node)

    def specialization_for(self, tmpl: StructTemplate, bound: dict, node: ast.NamedType
                           ) -> tuple[ast.StructDef, dict]:
        """The definition an instance with arguments `bound` uses: the most specialised
        specialisation that matches them (C++ [temp.class.spec.match]), or the primary
        template; with the bindings of its own parameters."""
        matches = [(spec, b) for spec in tmpl.specializations
                   if (b := self.match_specialization(tmpl, spec, bound)) is not None]
        if not matches:
            return tmpl.node, bound
        best = [m for m in matches
                if all(o is m or self.at_least_as_specialized(m[0], o[0]) for o in matches)]
        if len(best) != 1:
            shown = ", ".join(argument_text(v) for v in bound.values())
            self.error(f"ambiguous partial specializations of '{tmpl.node.name}<{shown}>'", node,
                       hint="; ".join(f"partial specialization matches (line {s.coord.line})"
                                      for s, _ in matches))
        return best[0]

    def match_specialization(self, tmpl: StructTemplate, spec: ast.StructDef,
                             bound: dict) -> dict | None:
        """The bindings of `spec`'s parameters that make its arguments `bound`'s, or None:
        deduced from the arguments, then checked by substituting them back."""
        names = {p.name for p in spec.template_params or []}
        bindings: dict = {}
        actual = list(bound.values())
        try:
            for pattern, value in zip(spec.specialization or [], actual):
                if not isinstance(value, Var):
                    self.deduce_from(pattern, value, names, bindings)
                elif getattr(pattern, "name", None) in names and not getattr(
                        pattern, "template_args", None):
                    bind_deduced(bindings, pattern.name, value)
        except DeductionConflict:
            return None
        if not names <= set(bindings):
            return None
        scope = Scope(dict(bindings), tmpl.scope)
        params = tmpl.node.template_params or []
        try:
            for i, (p, pattern) in enumerate(zip(params, spec.specialization or [])):
                kinds = Scope(dict(zip(bound, actual[:i])), tmpl.scope)
                value = self.template_value(p, pattern, scope, kinds)
                if argument_key(value) != argument_key(actual[i]):
                    return None
        except CompileError:
            return None
        return bindings

    @staticmethod
    def at_least_as_specialized(a: ast.StructDef, b: ast.StructDef) -> bool:
        """Whether every argument list `a` matches, `b` matches too: `b`'s pattern deduces
        from `a`'s (with `a`'s parameters as unique types), C++'s partial ordering."""
        names = {p.name for p in b.template_params or []}
        bindings: dict = {}
        return all(_pattern_matches(pb, pa, names, bindings)
                   for pa, pb in zip(a.specialization or [], b.specialization or []))

    def struct_instance(self, tmpl: StructTemplate, node: ast.NamedType,
                        scope: Scope) -> StructType:
        """The instance of `tmpl` for the template arguments of `node`, resolved in `scope`."""
        params, args = tmpl.node.template_params or [], node.template_args or []
        name = tmpl.node.name
        self.check_not_variadic(params, name, node)
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
                definition, own = self.specialization_for(tmpl, bound, node)
                st = self.define_struct(definition, Scope(dict(own), tmpl.scope), shown)
            tmpl.instances[key] = st
            self.instance_of[st] = (tmpl, bound)
            self.instance_definition[st] = definition
        return st

    def check_not_variadic(self, params: list[ast.TemplateParam], name: str,
                           where: ast.Node) -> None:
        """Refuse to instantiate a variadic template (`template <typename... Ts>`)."""
        pack = next((p for p in params if p.pack), None)
        if pack is not None:
            self.error(f"variadic templates are not supported by metalsim: '{name}' has the "
                       f"parameter pack '{pack.name}'", where,
                       hint="write the template for a fixed number of arguments")

    def deduce_from_instance(self, pattern: ast.NamedType, actual: StructType,
                             names: set[str], bindings: dict, scope=None) -> None:
        """Bind the template parameters in `pattern` (`Acc<T>`, `Buf<T, N>`) from the
        arguments of the instance `actual`, where it is an instance of that template
        (`scope`: where names in `pattern` are looked up, see `deduce_from`)."""
        tmpl, bound = self.instance_of[actual]
        if tmpl.node.name != pattern.name:
            return
        for arg, value in zip(pattern.template_args or [], bound.values()):
            if not isinstance(value, Var):
                self.deduce_from(arg, value, names, bindings, scope)
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


def _pattern_key(node: ast.Node) -> tuple:
    """What identifies a template argument as written, for partial ordering."""
    if isinstance(node, ast.IntLiteral | ast.BoolLiteral):
        return ("value", int(node.value))
    if isinstance(node, ast.Name | ast.NamedType) and not node.template_args and not getattr(
            node, "member_of", None):
        return ("name", getattr(node, "qualifier", ""), node.name,
                getattr(node, "space", None), getattr(node, "const", False))
    if isinstance(node, ast.NamedType):
        return ("type", node.name, node.space, node.const,
                tuple(_pattern_key(a) for a in node.template_args or []),
                None if node.member_of is None else _pattern_key(node.member_of))
    if isinstance(node, ast.PointerType):
        return ("pointer", node.const, _pattern_key(node.pointee))
    return ("node", id(node))


def _pattern_matches(pattern: ast.Node, target: ast.Node, names: set[str],
                     bindings: dict) -> bool:
    """Whether `pattern` (whose parameters are `names`) matches the argument `target` as
    written, binding the parameters to parts of it."""
    if isinstance(pattern, ast.Name | ast.NamedType) and pattern.name in names and not (
            pattern.template_args or getattr(pattern, "member_of", None)):
        key = _pattern_key(target)
        if isinstance(pattern, ast.NamedType) and (pattern.space or pattern.const):
            if not isinstance(target, ast.NamedType) or (target.space, target.const) != (
                    pattern.space, pattern.const):
                return False
            key = ("name", "", target.name, None, False) if not target.template_args else key
        return bindings.setdefault(pattern.name, key) == key
    if isinstance(pattern, ast.PointerType):
        return isinstance(target, ast.PointerType) and pattern.const == target.const and \
            _pattern_matches(pattern.pointee, target.pointee, names, bindings)
    if isinstance(pattern, ast.NamedType) and pattern.template_args:
        return isinstance(target, ast.NamedType) and target.name == pattern.name and len(
            target.template_args or []) == len(pattern.template_args) and all(
            _pattern_matches(p, t, names, bindings)
            for p, t in zip(pattern.template_args, target.template_args or []))
    return _pattern_key(pattern) == _pattern_key(target)
