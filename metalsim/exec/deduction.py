"""Template argument deduction's agreement rule, shared by function templates, member function
templates and struct template instances as patterns (`Acc<T>`)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from metalsim.exec.compiled import Var
from metalsim.lang import ast
from metalsim.lang.types import Type


class DeductionConflict(Exception):
    """Two arguments deduce different values for one template parameter (clang's note)."""


def bind_deduced(bindings: dict, name: str, value: Type | Var) -> None:
    """Bind the template parameter `name` to a deduced type or constant; C++ requires every
    argument that deduces it to agree (no conversions during deduction)."""
    bound = bindings.get(name)
    if bound is None:
        bindings[name] = value
    elif not isinstance(value, Var):
        if bound != value:
            raise DeductionConflict(f"candidate template ignored: deduced conflicting types "
                                    f"for parameter '{name}' ('{bound}' vs. '{value}')")
    elif (old := np.asarray(bound.const).item()) != (new := np.asarray(value.const).item()):
        raise DeductionConflict(f"candidate template ignored: deduced conflicting values for "
                                f"parameter '{name}' ({old} vs. {new})")


def substituted(pattern: ast.Node, given: dict[str, ast.Node]) -> ast.Node:
    """`pattern` (a type, or an expression among template arguments) with each plain name in
    `given` replaced by its node: an alias template's aliased type for the arguments named
    where it is used, for deduction to look through the alias."""
    if isinstance(pattern, ast.NamedType):
        if pattern.name in given and not (pattern.template_args or pattern.member_of):
            return given[pattern.name]
        args = pattern.template_args
        return replace(pattern, template_args=None if args is None
                       else [substituted(a, given) for a in args])
    if isinstance(pattern, ast.Name) and pattern.name in given and not pattern.qualifier:
        return given[pattern.name]
    if isinstance(pattern, ast.PointerType):
        return replace(pattern, pointee=substituted(pattern.pointee, given))
    if isinstance(pattern, ast.ReferenceType):
        return replace(pattern, referee=substituted(pattern.referee, given))
    if isinstance(pattern, ast.ArrayType):
        return replace(pattern, element=substituted(pattern.element, given))
    return pattern
