"""Ranking the viable candidates of an overloaded call, as C++ [over.match.best] does.

A candidate's `Rank` holds what its arguments' conversions cost (summed: exact 0, promotion 1,
conversion 2, user-defined 10), how each argument binds a reference (`T&` or `const T&` to a
modifiable lvalue, the object of a member function included), and what being a template costs
(a non-template beats a template, a more specialized template a less specialized one). One
candidate is better than another where its conversions cost less; where they cost the same,
where it binds some argument to `T&` that the other binds to `const T&` and none the other way
round ([over.ics.rank]/3.2.6); and otherwise where it is less of a template. The call is
ambiguous unless one candidate is better than every other: so `f(int)` and `f(const int&)`
are ambiguous for an lvalue, while `f(int&)` beats both `f(const int&)` and a template
`f(const T&)`, and a template `f(T&)` beats a non-template `f(const int&)`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TypeVar

REF = "ref"              # `T&` bound to a modifiable lvalue
CONST_REF = "const_ref"  # `const T&` bound to a modifiable lvalue


@dataclass(frozen=True)
class Rank:
    """How well one candidate fits a call (see the module docstring)."""

    conversions: float
    bindings: tuple[str, ...] = ()   # per argument: REF, CONST_REF or "" (any other)
    template: float = 0.0

    def plus_template(self, cost: float) -> Rank:
        return replace(self, template=self.template + cost)

    def with_object(self, binding: str) -> Rank:
        """The rank with the object of a member function call as its first argument."""
        return replace(self, bindings=(binding, *self.bindings))


def better(x: Rank, y: Rank) -> bool:
    """Whether a candidate ranked `x` is better than one ranked `y`."""
    if x.conversions != y.conversions:
        return x.conversions < y.conversions
    x_tighter = any(a == REF and b == CONST_REF for a, b in zip(x.bindings, y.bindings))
    y_tighter = any(a == CONST_REF and b == REF for a, b in zip(x.bindings, y.bindings))
    if x_tighter != y_tighter:
        return x_tighter
    return x.template < y.template


C = TypeVar("C", bound=tuple)


def best(candidates: list[C]) -> list[C]:
    """The candidate (each a tuple whose first item is its `Rank`) better than every other,
    alone; where there is none, those no other candidate is better than (the ambiguity)."""
    for c in candidates:
        if all(better(c[0], o[0]) for o in candidates if o is not c):
            return [c]
    unbeaten = [c for c in candidates if not any(better(o[0], c[0]) for o in candidates)]
    return unbeaten or candidates
