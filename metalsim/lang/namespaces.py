"""C++ namespaces for the parser: what each namespace declares, and C++'s rules for finding
the declaration a name refers to ([basic.lookup]).

The parser resolves every name at namespace scope to a *program name*, unique in the
program: `na::K` for `K` declared in namespace `na`, the bare name in the global namespace
and in `metal`. Metal's own functions and types are bare, and every Metal program says
`using namespace metal;`, so what a program declares in `metal` (MLX's bfloat overloads of
`abs`) joins Metal's names; `metal::fast` and `metal::precise` keep their program names
(`metal::fast::abs`) and the compiler adds them to the overload set of `fast::abs`. The
compiler then needs no namespaces: its program scope holds program names.

Rules modelled: a name in an inner namespace hides an outer (or global) one; an overload
set comes from the innermost namespace that declares the name; a using-directive makes a
namespace's names visible as if declared in the nearest namespace enclosing both the
directive and the nominated namespace (so it never hides a name of a nearer namespace);
qualified lookup searches the namespace's members, then, only if it declares none, the
namespaces its using-directives nominate (transitively); a using-declaration declares the
named entities in its scope; namespace aliases. Argument-dependent lookup is modelled for
operators only (see `program_name`).
"""

from __future__ import annotations

METAL = "metal"
# The namespaces whose names the compiler keeps bare.
_BARE = frozenset({"", METAL})


def program_name(namespace: str, name: str) -> str:
    """The program-wide name of `name` declared in `namespace` ("" for the global one).

    Operator functions stay bare: C++ finds them by argument-dependent lookup, in the
    namespaces of their operands' types, which metalsim approximates by one program-wide
    overload set per operator."""
    if namespace in _BARE or _is_operator(name):
        return name
    return f"{namespace}::{name}"


def _is_operator(name: str) -> bool:
    return name.startswith("operator") and not (name[8:9].isalnum() or name[8:9] == "_")


def enclosing_namespace(program: str) -> str:
    """The namespace of a program name (`na::nb::K` -> `na::nb`; a bare name -> "")."""
    return program.rpartition("::")[0]


def common_namespace(a: str, b: str) -> str:
    """The innermost namespace enclosing both `a` and `b` (paths such as `na::nb`)."""
    common: list[str] = []
    for x, y in zip(a.split("::") if a else [], b.split("::") if b else []):
        if x != y:
            break
        common.append(x)
    return "::".join(common)


class NamespaceTable:
    """The namespaces of one translation unit, filled as the parser reads it (so that a name
    means what is declared before it, as in C++)."""

    def __init__(self) -> None:
        self.members: dict[str, set[str]] = {"": set()}   # namespace -> names declared in it
        # namespace -> the namespaces its using-directives nominate
        self.directives: dict[str, list[str]] = {}
        self.using: dict[str, dict[str, tuple[str, ...]]] = {}   # using-declarations
        self.functions: set[str] = set()   # program names of functions (overloadable)
        # What metalsim's prelude declares for Metal (`integral_constant`): it gives way to a
        # program's own declaration that a lookup finds beside it (MLX's
        # `mlx::steel::integral_constant` through `using namespace mlx::steel;`), the two
        # meaning the same.
        self.metal_own: set[str] = set()
        self.aliases: dict[str, str] = {}  # "outer::al" -> "outer::inner"
        # Whether a namespace other than the global one and `metal` has appeared: until then
        # lookup is the flat lookup of a program without namespaces.
        self.in_use = False

    # --- declaring -------------------------------------------------------------------------

    def open(self, path: list[str]) -> None:
        for depth in range(1, len(path) + 1):
            self.members.setdefault("::".join(path[:depth]), set())
        if path and path[0] != METAL:
            self.in_use = True

    def declare(self, namespace: str, name: str, function: bool = False) -> str:
        """Records `name` as declared in `namespace`; its program name."""
        self.members.setdefault(namespace, set()).add(name)
        program = program_name(namespace, name)
        if function:
            self.functions.add(program)
        return program

    def declare_directive(self, namespace: str, nominated: str) -> None:
        """`using namespace nominated;` at the scope of `namespace`."""
        if nominated != METAL:   # Metal's names are visible everywhere already
            self.directives.setdefault(namespace, []).append(nominated)
            self.in_use = True

    def declare_using(self, namespace: str, name: str, entities: tuple[str, ...]) -> None:
        """`using na::f;` at the scope of `namespace`: `name` there means `entities`."""
        scope = self.using.setdefault(namespace, {})
        scope[name] = tuple(dict.fromkeys((*scope.get(name, ()), *entities)))
        self.in_use = True

    def declare_alias(self, namespace: str, alias: str, target: str) -> None:
        self.aliases[program_name(namespace, alias) if namespace else alias] = target
        self.in_use = True

    # --- finding namespaces ----------------------------------------------------------------

    def find(self, name: str, relative_to: list[str] | None) -> str | None:
        """The full name of namespace `name` as written inside namespace `relative_to`
        (searching its enclosing namespaces outwards), or from the global namespace
        (`relative_to` None, after `::` or another namespace); None if there is none."""
        outer = relative_to or []
        for depth in range(len(outer), -1, -1):
            full = self.unaliased("::".join([*outer[:depth], name]))
            if full in self.members:
                return full
        return None

    def nested(self, namespace: str, name: str) -> str | None:
        """The namespace `namespace::name` names: a namespace nested in it, else (qualified
        lookup) one nested in a namespace its using-directives nominate."""
        searched: set[str] = set()
        frontier = [namespace]
        while frontier:
            found = {self.unaliased(f"{at}::{name}") for at in frontier} & self.members.keys()
            if len(found) == 1:
                return found.pop()
            searched.update(frontier)
            frontier = [n for at in frontier for n in self.directives.get(at, ())
                        if n not in searched]
        return None

    def unaliased(self, path: str) -> str:
        """`path` with the namespace alias it begins with replaced."""
        parts = path.split("::")
        for depth in range(len(parts), 0, -1):
            target = self.aliases.get("::".join(parts[:depth]))
            if target is not None:
                return "::".join([target, *parts[depth:]])
        return path

    # --- looking names up ------------------------------------------------------------------

    def declared_in(self, namespace: str, name: str) -> list[str]:
        """The entities `name` names as a member of `namespace` (its own declarations and
        using-declarations; Metal's names are members of the global namespace too, as every
        Metal program's `using namespace metal;` makes them)."""
        found = [program_name(namespace, name)] if name in self.members.get(namespace, ()) \
            else []
        found += self.using.get(namespace, {}).get(name, ())
        if namespace == "" and name in self.members.get(METAL, ()):
            found.append(name)
        return found

    def unqualified(self, namespace: list[str], name: str,
                    local_directives: list[str]) -> tuple[str, ...]:
        """Unqualified lookup, from inside `namespace`, of a name no local scope declares: the
        program names found in the innermost namespace where it is found (several: an
        overload set, or an ambiguity), () if none declares it."""
        if not self.in_use:
            return (name,) if self.declared_in("", name) else ()
        here = "::".join(namespace)
        by_level: dict[str, list[str]] = {}
        pending = [(here, n) for n in local_directives]
        for depth in range(len(namespace) + 1):
            at = "::".join(namespace[:depth])
            pending += [(at, n) for n in self.directives.get(at, ())]
        seen: set[tuple[str, str]] = set()
        while pending:   # a directive's namespace's own directives apply too
            origin, nominated = pending.pop()
            if (origin, nominated) in seen:
                continue
            seen.add((origin, nominated))
            by_level.setdefault(common_namespace(origin, nominated), []).append(nominated)
            pending += [(origin, n) for n in self.directives.get(nominated, ())]
        for depth in range(len(namespace), -1, -1):
            at = "::".join(namespace[:depth])
            found = self.declared_in(at, name)
            for nominated in by_level.get(at, ()):
                found += self.declared_in(nominated, name)
            if found:
                return tuple(dict.fromkeys(found))
        return ()

    def qualified(self, namespace: str, name: str) -> tuple[str, ...]:
        """Qualified lookup of `namespace::name`: its members, else (only then) the members of
        the namespaces its using-directives nominate, transitively."""
        searched: set[str] = set()
        frontier = [namespace]
        while frontier:
            found: list[str] = []
            following: list[str] = []
            for at in frontier:
                if at in searched:
                    continue
                searched.add(at)
                found += self.declared_in(at, name)
                following += self.directives.get(at, ())
            if found:
                return tuple(dict.fromkeys(found))
            frontier = following
        return ()
