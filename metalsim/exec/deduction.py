"""Template argument deduction's agreement rule, shared by function templates, member function
templates and struct template instances as patterns (`Acc<T>`)."""

from __future__ import annotations

import numpy as np

from metalsim.exec.compiled import Var
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
