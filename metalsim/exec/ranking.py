"""Ranking the viable candidates of an overloaded call, as C++ [over.match.best] does.

A candidate's `Rank` holds what each argument's conversion costs (exact 0, promotion 1,
conversion 2, user-defined 10), how each argument binds a reference (`T&` or `const T&` to a
modifiable lvalue, the object of a member function included), and what being a template costs
(a non-template beats a template, a more specialized template a less specialized one). One
candidate is better than another where no argument converts worse for it and some converts
better (an argument converting equally, but binding `T&` where the other binds `const T&`,
converts better: [over.ics.rank]/3.2.6); where every argument converts equally, where it is
less of a template. The call is ambiguous unless one candidate is better than every other: so
`f(int)` and `f(const int&)` are ambiguous for an lvalue, while `f(int&)` beats both
`f(const int&)` and a template `f(const T&)`, a template `f(T&)` beats a non-template
`f(const int&)`, and `f(int, float)` and `f(float, int)` are ambiguous for `f(1, 1)`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TypeVar

REF = "ref"              # `T&` bound to a modifiable lvalue
CONST_REF = "const_ref"  # `const T&` bound to a modifiable lvalue
# What an argument a `T&` parameter cannot bind costs: its candidate loses to every candidate
# binding all its arguments (it stays a candidate, so that binding it can report why).
UNBOUND = 100


@dataclass(frozen=True)
class Rank:
    """How well one candidate fits a call (see the module docstring)."""

    conversions: float               # what all arguments' conversions cost together
    bindings: tuple[str, ...] = ()   # per argument: REF, CONST_REF or "" (any other)
    template: float = 0.0
    per_argument: tuple[float, ...] = ()   # what each argument's conversion costs

    def plus_template(self, cost: float) -> Rank:
        return replace(self, template=self.template + cost)

    def with_object(self, binding: str) -> Rank:
        """The rank with the object of a member function call as its first argument."""
        return replace(self, bindings=(binding, *self.bindings),
                       per_argument=(0.0, *self.per_argument))


def better(x: Rank, y: Rank) -> bool:
    """Whether a candidate ranked `x` is better than one ranked `y`."""
    if x.per_argument and len(x.per_argument) == len(y.per_argument) and len(
            x.bindings) == len(y.bindings) == len(x.per_argument):
        x_unbound, y_unbound = (max(r.per_argument) >= UNBOUND for r in (x, y))
        if x_unbound != y_unbound:
            return y_unbound
        steps = [_compare(a, b, ab, bb) for a, b, ab, bb in zip(
            x.per_argument, y.per_argument, x.bindings, y.bindings)]
        if any(steps):
            return min(steps) == -1 and max(steps) < 1
        return x.template < y.template
    if x.conversions != y.conversions:
        return x.conversions < y.conversions
    x_tighter = any(a == REF and b == CONST_REF for a, b in zip(x.bindings, y.bindings))
    y_tighter = any(a == CONST_REF and b == REF for a, b in zip(x.bindings, y.bindings))
    if x_tighter != y_tighter:
        return x_tighter
    return x.template < y.template


def _compare(x_cost: float, y_cost: float, x_binding: str, y_binding: str) -> int:
    """-1 where one argument converts better for the first candidate, 1 where worse, 0 where
    neither ([over.ics.rank])."""
    if x_cost != y_cost:
        return -1 if x_cost < y_cost else 1
    if (x_binding, y_binding) == (REF, CONST_REF):
        return -1
    return 1 if (x_binding, y_binding) == (CONST_REF, REF) else 0


C = TypeVar("C", bound=tuple)


def best(candidates: list[C]) -> list[C]:
    """The candidate (each a tuple whose first item is its `Rank`) better than every other,
    alone; where there is none, those no other candidate is better than (the ambiguity)."""
    for c in candidates:
        if all(better(c[0], o[0]) for o in candidates if o is not c):
            return [c]
    unbeaten = [c for c in candidates if not any(better(o[0], c[0]) for o in candidates)]
    return unbeaten or candidates
