"""What the syntax alone tells the compiler about how a function uses its variables: whose
address is taken (they live in memory), which are only ever read (a loop counter may then be
kept as one value for all lanes), and which keep the value they were declared with (a location
computed from them may be kept while the function runs)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from metalsim.lang import ast
from metalsim.lang.types import BUILTIN_TYPE_TEMPLATES, TYPE_NAMES

Builtin = Callable[[ast.Name], bool]   # whether a call of this name calls a built-in function


def children(node: ast.Node) -> list[ast.Node]:
    """The nodes directly under `node`."""
    found = []
    for value in vars(node).values():
        if isinstance(value, ast.Node):
            found.append(value)
        elif value.__class__ is list:
            found.extend(v for v in value if isinstance(v, ast.Node))
    return found


def walk(node: ast.Node):
    """`node` and every node under it."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(children(n))


def mentions(node: ast.Node, name: str) -> bool:
    """Whether the name `name` (unqualified) appears anywhere under `node`."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Name) and n.name == name and n.unqualified:
            return True
        stack.extend(children(n))
    return False


@dataclass
class Uses:
    """How the names under some nodes are used: those whose address is taken with `&` (they
    live in memory), those used other than by reading their value (see `_read_in`), the
    declarations of each name (with whether it is inside a loop), the names called, and
    whether a struct is defined there."""

    addressed: set[str] = field(default_factory=set)
    not_only_read: set[str] = field(default_factory=set)
    declarations: dict[str, list[tuple[ast.VarDecl, bool]]] = field(default_factory=dict)
    called: set[str] = field(default_factory=set)
    defines_struct: bool = False

    def calls_a_local(self) -> bool:
        """Whether a local variable is called (a function object: it may take a reference,
        which `builtin` cannot know from the name)."""
        return not self.called.isdisjoint(self.declarations)


def uses(nodes: list[ast.Node | None], builtin: Builtin, returns_value: bool) -> Uses:
    """One walk over `nodes` (see `Uses`); `builtin` and `returns_value` as for `only_read`."""
    found = Uses()
    aliases: dict[str, set[str]] = {}   # a reference's name: the names of what it is bound to
    stack = [(n, None, False) for n in nodes if n is not None]
    while stack:
        n, parent, in_loop = stack.pop()
        if isinstance(n, ast.Name) and n.unqualified:
            if not _read_in(n, parent, builtin, returns_value):
                found.not_only_read.add(n.name)
                if isinstance(parent, ast.Unary) and parent.op == "&":
                    found.addressed.add(n.name)
        elif isinstance(n, ast.VarDecl):
            found.declarations.setdefault(n.name, []).append((n, in_loop))
            if isinstance(n.type, ast.ReferenceType) and n.init is not None:
                aliases.setdefault(n.name, set()).update(_lvalue_roots([n.init]))
        elif isinstance(n, ast.StructDef):
            found.defines_struct = True
        elif isinstance(n, ast.Call):
            found.called.add(n.func.name)
        elif n.__class__ in _LVALUE_CONTEXTS:   # (one test for the three, as this runs often)
            if n.__class__ is ast.Conditional:
                # Its operands are used as the conditional is: `(c ? a : b) = 1` writes `a`.
                context = n
                if not _read_in(n, parent, builtin, returns_value):
                    context = parent
                    for name in _lvalue_roots([n.then, n.otherwise]):
                        found.addressed.add(name)   # one location per lane: in memory
                stack.append((n.cond, n, in_loop))
                stack.extend((branch, context, in_loop) for branch in (n.then, n.otherwise))
                continue
            if n.__class__ is ast.Binary and n.op == ",":
                # `(a, b) = 1` writes `b`: the right operand is used as the comma expression is.
                read = _read_in(n, parent, builtin, returns_value)
                stack.append((n.left, n, in_loop))
                stack.append((n.right, n if read else parent, in_loop))
                continue
            if n.__class__ is ast.Unary and n.op == "&" and isinstance(
                    n.operand, ast.Assign | ast.Unary):
                found.addressed.update(_lvalue_roots([n.operand]))   # `&(++a)`, `&(a = b)`
        in_loop = in_loop or isinstance(n, ast.For | ast.While | ast.DoWhile)
        for child in children(n):
            stack.append((child, n, in_loop))
    # `thread int& r = a; &r` takes `a`'s address: what a reference is bound to, transitively.
    pending = [name for name in found.addressed if name in aliases]
    while pending:
        for root in aliases.pop(pending.pop(), ()):
            found.addressed.add(root)
            if root in aliases:
                pending.append(root)
    return found


# Nodes whose operands may be lvalues used in the node's own context.
_LVALUE_CONTEXTS = frozenset({ast.Conditional, ast.Binary, ast.Unary})


def _lvalue_roots(nodes: list[ast.Node]) -> list[str]:
    """The local names whose objects the lvalue expressions `nodes` name (part of): `a`
    in `a`, `a.x`, `a[i]`, `a = v`, `++a` and in either operand of `c ? a : b`."""
    roots, stack = [], list(nodes)
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Name) and n.unqualified:
            roots.append(n.name)
        elif isinstance(n, ast.Member) and not n.arrow or isinstance(n, ast.Index):
            stack.append(n.base)
        elif isinstance(n, ast.Assign):
            stack.append(n.target)
        elif isinstance(n, ast.Unary) and n.op in ("++", "--"):
            stack.append(n.operand)
        elif isinstance(n, ast.Conditional):
            stack.extend((n.then, n.otherwise))
    return roots


def only_read(name: str, nodes: list[ast.Node | None], builtin: Builtin,
              returns_value: bool) -> bool:
    """Whether every use of the variable `name` under `nodes` only reads its value.

    A use counts as a read only where its context cannot write the variable nor bind a
    reference to it: an operand (not of `&`, `++`, `--`), an index, a condition, a
    conversion to a value type, the value of an assignment or of a declaration, an argument of
    a built-in function (`builtin`), a value returned (`returns_value`: not by reference).
    Anything else (an argument of a user function, method or constructor, a redeclaration, a
    local struct, an initializer list) says no, so a "yes" never changes what a kernel does.
    """
    found = uses(nodes, builtin, returns_value)
    return not (name in found.not_only_read or name in found.declarations
                or found.defines_struct or found.calls_a_local())


def fixed_names(found: Uses) -> set[str]:
    """The local variables of a function body (`found = uses([body], ...)`) whose value in each
    thread never changes once declared: declared once, outside any loop, with a value (not a
    reference), and only read (as `only_read` sees it) everywhere in the body. Each thread runs
    such a declaration at most once per call, so what is computed from these variables alone
    holds for the whole call."""
    if found.calls_a_local():
        return set()
    return {name for name, [(d, in_loop)] in
            ((n, ds) for n, ds in found.declarations.items() if len(ds) == 1)
            if not in_loop and d.init is not None and not d.static
            and not isinstance(d.type, ast.ReferenceType) and name not in found.not_only_read}


def _read_in(n: ast.Name, parent: ast.Node | None, builtin: Builtin,
             returns_value: bool) -> bool:
    if isinstance(parent, ast.Binary | ast.Index | ast.Conditional | ast.SizeOf | ast.ExprStmt
                  | ast.If | ast.While | ast.DoWhile | ast.For | ast.Switch | ast.ArrayType):
        return True
    if isinstance(parent, ast.Unary):
        return parent.op not in ("&", "++", "--", "*")
    if isinstance(parent, ast.Assign):
        return parent.value is n
    if isinstance(parent, ast.Cast):
        return not isinstance(parent.type, ast.ReferenceType)
    if isinstance(parent, ast.Construct):
        return isinstance(parent.type, ast.NamedType) and (
            parent.type.name in TYPE_NAMES or parent.type.name in BUILTIN_TYPE_TEMPLATES)
    if isinstance(parent, ast.Call):
        return parent.func is not n and builtin(parent.func)
    if isinstance(parent, ast.VarDecl):
        return parent.init is n and not isinstance(parent.type, ast.ReferenceType)
    if isinstance(parent, ast.Return):
        return returns_value
    return False
