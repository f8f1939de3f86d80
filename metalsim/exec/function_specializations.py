"""Explicit specialisations of function templates: the `FunctionSpecializationCompiler` part
of `Compiler`.

`template <> int ft(int x)` and `template <> int f<0>()` are not overload candidates of their
own (C++ [temp.expl.spec]): overload resolution picks a primary template and deduces its
arguments, and only then does an explicit specialisation for exactly those arguments replace
the template's body. Which template a specialisation specialises is deduced from its function
type, as C++ [temp.deduct.decl] does, when the program declares it. Member function templates
may be specialised in the struct's body, as clang (and so Metal) allows (CWG 727): those are
matched to their templates in each struct at its first member call.
"""

from __future__ import annotations

from dataclasses import replace

from metalsim.diagnostics import CompileError
from metalsim.exec.compiled import Scope
from metalsim.exec.deduction import DeductionConflict
from metalsim.exec.struct_templates import argument_key
from metalsim.lang import ast
from metalsim.lang.types import StructType


def is_explicit_specialization(fdef: ast.FunctionDef) -> bool:
    """Whether `fdef` was declared `template <> ...` (which declares no template)."""
    return fdef.template_params == []


def _unreferenced(t: ast.TypeNode) -> ast.TypeNode:
    return t.referee if isinstance(t, ast.ReferenceType) else t


class FunctionSpecializationCompiler:
    """Explicit specialisation methods of `Compiler` (which supplies `functions`, `deduce_from`,
    `template_value`, `resolve_decl_type`, `generic_params`, `error`, `globals`)."""

    def declare_function_specialization(self, spec: ast.FunctionDef,
                                        candidates: list[ast.FunctionDef] | None = None,
                                        scope: Scope | None = None,
                                        owner: StructType | None = None) -> None:
        """Record `spec` as the body of the primary template among `candidates` (by default
        the functions declared before it) whose arguments its function type deduces, its
        types resolved in `scope` (program scope, or the struct `owner`'s); clang's errors
        where none or several match."""
        scope = scope or self.globals
        matches, failures = [], []
        for primary in self.functions.get(spec.name, []) if candidates is None else candidates:
            if not primary.template_params:
                continue
            bindings = self.specialized_arguments(primary, spec, scope, failures)
            if bindings is not None:
                matches.append((0.1 * self.generic_params(primary), primary, bindings))
        if not matches:
            # an error inside a candidate's types (not a mismatch) is likely what to fix
            why = "".join(f"; the template at line {primary.coord.line} did not fit: "
                          f"{err.diagnostic.message}" for primary, err in failures[:1])
            self.error(f"no function template matches function template specialization "
                       f"'{spec.name}'", spec, width=len("template"),
                       hint="declare the primary template before its specialization, with "
                            f"parameters this one's types fit{why}")
        best = min(cost for cost, _, _ in matches)
        chosen = [(primary, bindings) for cost, primary, bindings in matches if cost == best]
        if len(chosen) > 1:
            self.error(f"function template specialization '{spec.name}' ambiguously refers "
                       f"to more than one function template", spec, width=len("template"),
                       hint="explicitly specify the template arguments: "
                            f"'{spec.name}<...>(...)'")
        primary, bindings = chosen[0]
        key = (owner, id(primary), tuple(argument_key(bindings[p.name])
                                         for p in primary.template_params))
        earlier = self.function_specializations.get(key)
        if earlier is not None and earlier.body is not None and spec.body is not None:
            self.error(f"redefinition of the explicit specialization of '{spec.name}'", spec,
                       width=len("template"))
        if earlier is None or spec.body is not None:
            self.function_specializations[key] = spec

    def define_member_specialization(self, fn: ast.MemberFunction) -> None:
        """A member's explicit specialisation written outside its struct: `template <> R
        S::f<A>(...)` (and `template <> template <> R S<B>::f<A>(...)`) joins the overloads of
        `S` (of the instance `S<B>`) as a specialisation of a member function template, as one
        written in the struct would; `template <> R S<B>::f(...)` replaces, in the instance
        `S<B>` only, the body of the member function `f` the template declares with the same
        parameters and qualifiers."""
        owner = ast.NamedType(fn.coord, fn.owner, fn.owner_args)
        st = self.resolve_type(owner, self.globals)
        methods = self.struct_methods.get(st) if isinstance(st, StructType) else None
        overloads = methods.overloads.get(fn.name, []) if methods is not None else []
        if is_explicit_specialization(fn):
            if not any(d.template_params for d in overloads):
                self.error(f"no member function template named '{fn.name}' in '{st}'", fn,
                           width=len("template"))
            if st in self.specialized_structs:
                self.error(f"explicit specialization of '{fn.name}' after instantiation", fn,
                           width=len("template"),
                           hint=f"declare it before the first call of '{st}::{fn.name}'")
            overloads.append(fn)
            return
        params = [self.resolve_type(p.type, methods.scope) for p in fn.params] \
            if methods is not None else []
        for i, decl in enumerate(overloads):
            if (not decl.template_params and decl.const == fn.const and decl.space == fn.space
                    and len(decl.params) == len(params) and all(
                        self.resolve_type(p.type, methods.scope) == t
                        for p, t in zip(decl.params, params))):
                if any(key[0] == id(decl) and key[2] == id(methods.scope)
                       for key in self.instances):
                    self.error(f"explicit specialization of '{st}::{fn.name}' after "
                               "instantiation", fn, width=len("template"),
                               hint="declare it before the member function's first call")
                # the declaration's default arguments, the specialisation's body and names
                params_now = [replace(p, default=d.default)
                              for p, d in zip(fn.params, decl.params)]
                overloads[i] = replace(decl, body=fn.body, params=params_now, coord=fn.coord)
                return
        self.error(f"out-of-line definition of '{fn.name}' does not match any declaration in "
                   f"'{st}'", fn)

    def specialized_arguments(self, primary: ast.FunctionDef, spec: ast.FunctionDef,
                              scope: Scope, failures: list | None = None) -> dict | None:
        """The arguments of `primary` that `spec` specialises (its explicit arguments, then
        those its parameter and return types deduce), or None if it is not one of them; a
        compile error met on the way is added to `failures` (with `primary`)."""
        params = primary.template_params
        explicit = spec.specialization_args or []
        if (len(explicit) > len(params) or len(primary.params) != len(spec.params)
                or any(p.pack for p in params)):
            return None
        bindings: dict = {}
        try:
            for p, a in zip(params, explicit):
                bindings[p.name] = self.template_value(p, a, scope,
                                                       Scope(dict(bindings), scope))
            names = {p.name for p in params[len(explicit):]}
            concrete = [self.resolve_decl_type(_unreferenced(p.type), scope)[0]
                        for p in spec.params]
            for pattern, actual in zip(primary.params, concrete):
                self.deduce_from(_unreferenced(pattern.type), actual, names, bindings)
            self.deduce_from(primary.return_type,
                             self.resolve_decl_type(spec.return_type, scope)[0],
                             names, bindings)
            for p in params:
                if p.name not in bindings:
                    if p.default is None:
                        return None
                    bindings[p.name] = self.template_value(p, p.default,
                                                           Scope(dict(bindings), scope))
            inner = Scope(dict(bindings), scope)
            same = self.function_type(primary, inner) == self.function_type(spec, scope)
        except DeductionConflict:
            return None
        except CompileError as err:
            if failures is not None:
                failures.append((primary, err))
            return None
        return bindings if same else None

    def function_type(self, fdef: ast.FunctionDef, scope: Scope) -> tuple:
        """What makes two function declarations the same function: the return type and each
        parameter's type, reference-ness and (for references) constness and address space."""
        def param(p: ast.Param) -> tuple:
            t, const, space = self.resolve_decl_type(p.type, scope)
            if isinstance(p.type, ast.ReferenceType):
                return t, True, const, space
            return self.param_type(p, scope), False
        return (self.resolve_decl_type(fdef.return_type, scope)[0],
                tuple(param(p) for p in fdef.params))

    def specialized(self, fdef: ast.FunctionDef, bindings: dict,
                    owner: StructType | None = None) -> tuple[ast.FunctionDef, dict]:
        """The function a call of template `fdef` (a member of `owner`) with `bindings` runs:
        an explicit specialisation for those arguments if the program declares one, else the
        template."""
        if not fdef.template_params:
            return fdef, bindings
        if owner is not None and owner not in self.specialized_structs:
            self.specialized_structs.add(owner)
            methods = self.struct_methods[owner]
            for overloads in methods.overloads.values():
                for spec in filter(is_explicit_specialization, overloads):
                    self.declare_function_specialization(spec, overloads, methods.scope, owner)
        key = (owner, id(fdef), tuple(argument_key(bindings[p.name])
                                      for p in fdef.template_params))
        spec = self.function_specializations.get(key)
        return (spec, {}) if spec is not None else (fdef, bindings)
