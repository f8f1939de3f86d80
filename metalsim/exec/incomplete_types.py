"""Forward-declared structs: the `IncompleteTypeCompiler` part of `Compiler`.

`struct C;` names an incomplete type (C++ [basic.types]/5): pointers and references to it may
be declared, passed and stored before its definition, which completes the same type in place
(`types.complete_struct`). Until then, what needs the object's layout (a variable, a member, a
by-value parameter or result of a function definition, `sizeof`, a member access, pointer
arithmetic) is refused as clang refuses it. A non-template function defined before a struct's
definition sees the struct incomplete in its body, which is checked whether it is called or
not (a template's body only where it is instantiated, as in C++).
"""

from __future__ import annotations

from metalsim.diagnostics import Coord
from metalsim.exec.compiled import FunctionCode, Scope
from metalsim.lang import ast
from metalsim.lang import types as ty
from metalsim.lang.types import ArrayType, StructType, Type


class IncompleteTypeCompiler:
    """Forward declaration methods of `Compiler` (which supplies `error`, `globals`, ...)."""

    def init_incomplete_types(self) -> None:
        self.struct_declared_at: dict[StructType, Coord] = {}   # the first `struct C;`
        self.incomplete_now: set[StructType] = set()   # declared, not yet defined, so far
        # what was incomplete where each non-template function was defined, by its id
        self.incomplete_before: dict[int, frozenset[StructType]] = {}
        self.incomplete_here: frozenset[StructType] = frozenset()   # in the function compiled
        self.defined_early: list[ast.FunctionDef] = []   # those non-template functions
        self.checked_early: list[FunctionCode] = []   # their code, compiled to check them
        # where each nested struct a `struct I;` in its enclosing struct declared is defined
        self.nested_defined_at: dict[StructType, Coord] = {}

    def declare_struct(self, node: ast.StructDeclaration, scope: Scope) -> None:
        """`struct S;`: names the incomplete struct `S` in `scope`, unless it is declared (or
        defined) already; a name declared otherwise is refused."""
        union = node.key == "union"
        previous = scope.names.get(node.name)
        if previous is None:
            st = ty.declared_struct(node.name, union)
            scope.names[node.name] = st
            self.struct_declared_at[st] = node.coord
            if scope is self.globals:   # (a local one is compiled in order, where it is)
                self.incomplete_now.add(st)
        elif not isinstance(previous, StructType):
            self.error(f"redefinition of '{node.name}' as a different kind of symbol", node,
                       hint="give the struct another name")
        elif previous.union != union:
            self.mismatched_tag(node.name, previous.union, node)

    def declare_nested_struct(self, node: ast.StructDeclaration, shown: str) -> StructType:
        """`struct I;` in a struct's body: the incomplete member type `shown` (`O::I`)."""
        st = ty.declared_struct(shown, node.key == "union")
        self.struct_declared_at[st] = node.coord
        return st

    def require_defined_before(self, t: Type | None, member: ast.VarDecl) -> None:
        """Refuse a data member of a nested struct's type (or an array of it) declared
        before the nested struct's definition: metalsim lays out the nested structs first,
        C++ in declaration order."""
        inner = ty.array_shape(t)[1] if isinstance(t, ArrayType) else t
        defined = self.nested_defined_at.get(inner)   # type: ignore[arg-type]
        if defined is not None and (member.coord.line, member.coord.column) < (
                defined.line, defined.column):
            declared = self.struct_declared_at[inner]   # type: ignore[index]
            self.error(f"field has incomplete type '{inner}'", member,
                       hint=f"'{inner}' is declared ({declared.section} line "
                            f"{declared.line}) but defined after this member: define it "
                            f"first, or use a pointer or reference to it")

    def s_StructDeclaration(self, node: ast.StructDeclaration, scope: Scope):
        """`struct C;` in a block: the statement declares `C` in the block."""
        self.declare_struct(node, scope)
        return lambda f, lanes: lanes

    def mismatched_tag(self, name: str, was_union: bool, node: ast.Node) -> None:
        """A union declared as a struct, or the other way round (C++ [dcl.type.elab])."""
        self.error(f"use of '{name}' with tag type that does not match previous declaration",
                   node, hint=f"'{name}' was declared a {'union' if was_union else 'struct'}: "
                              "use the same class key")

    def note_function_definition(self, fdef: ast.FunctionDef) -> None:
        """Check the non-template `fdef`'s by-value parameters and result where it is defined,
        and remember which structs are still incomplete there: its body, compiled later, must
        not use them by value."""
        if not self.incomplete_now or fdef.body is None or fdef.template_params is not None:
            return
        self.incomplete_before[id(fdef)] = frozenset(self.incomplete_now)
        self.defined_early.append(fdef)
        if not isinstance(fdef.return_type, ast.ReferenceType | ast.PointerType):
            self.require_complete(self.resolve_type(fdef.return_type, self.globals), fdef,
                                  "incomplete result type '{}' in function definition")
        for p in fdef.params:
            if isinstance(p.type, ast.NamedType):
                self.require_complete(self.resolve_type(p.type, self.globals), p,
                                      "variable has incomplete type '{}'")

    def check_early_definitions(self) -> None:
        """Compile each non-template function defined while a struct was incomplete, called or
        not: C++ refuses a body that uses the struct by value where it is defined. (Its code
        is dropped: a call compiles it again, and an uncalled function adds nothing to the
        launch.)"""
        for fdef in self.defined_early:
            before = dict(self.instances)
            self.instantiate(fdef, {})
            # kept alive: caches such as `lambdas` are keyed by a function code's id
            self.checked_early.extend(c for k, c in self.instances.items() if k not in before)
            self.instances = before

    def is_incomplete(self, t: Type | None) -> bool:
        """Whether `t` is a struct not (yet, where the code being compiled is) defined."""
        return isinstance(t, StructType) and (t.incomplete or t in self.incomplete_here)

    def require_complete(self, t: Type | None, node: ast.Node | Coord, message: str) -> None:
        """Refuse `node`'s use of the incomplete struct `t` (or an array of it) by value;
        `message` says which use, with `{}` for the type."""
        inner = ty.array_shape(t)[1] if isinstance(t, ArrayType) else t
        if not self.is_incomplete(inner):
            return
        if isinstance(t, ArrayType) and "{}" in message and message.startswith("variable"):
            message = "array has incomplete element type '{}'"
        declared = self.struct_declared_at.get(inner)
        if declared is None:   # used inside its own definition
            hint = (f"'{inner}' is not complete until the '}}' that ends its definition: use a "
                    f"pointer or reference to it here")
        else:
            hint = (f"'{inner}' is declared ({declared.section} line {declared.line}) but not "
                    f"defined before this use: define it first, or use a pointer or reference "
                    f"to it")
        self.error(message.format(inner), node, hint=hint)
