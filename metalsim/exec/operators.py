"""Overloaded operators on structs: the `OperatorCompiler` part of `Compiler`.

As in C++14, an operator expression with a struct operand (`a + b`, `-a`, `a += b`, `a[i]`)
calls the best of the left operand's member `operator@` functions and the free `operator@`
functions, ranked as any overloaded call is; `operator[]` must be a member. Only expressions
with a struct operand come here, so built-in operators compile (and run) as before.
"""

from __future__ import annotations

from metalsim.exec import ranking
from metalsim.exec.compiled import E, Scope
from metalsim.exec.structs import this_pointer
from metalsim.lang import ast
from metalsim.lang import types as ty
from metalsim.lang.types import StructType

COMPOUND = frozenset({"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="})


class OperatorCompiler:
    """Operator methods of `Compiler` (which supplies `deduce`, `match_cost`, `call_code`...)."""

    def free_operators(self, name: str, operands: list[E], scope: Scope,
                       notes: list[str]) -> list[tuple]:
        """The viable free `operator@` functions for `operands`, as (cost, function, template
        arguments, False) candidates."""
        candidates = []
        frees = self.functions.get(name, [])
        for fdef in frees:
            if len(fdef.params) != len(operands) or fdef.template_params == [] or (
                    fdef.body is None and any(o.body is not None for o in frees
                                              if o is not fdef)):
                continue  # a declaration of a function defined too is not a candidate;
                # nor is an explicit specialisation (it replaces its template's body)
            bindings = self.deduce(fdef, [], operands, scope, notes)
            cost = None if bindings is None else self.match_cost(fdef, bindings, operands)
            if cost is not None:
                candidates.append((cost.plus_template(self.template_cost(fdef)), fdef, bindings,
                                   False))
        return candidates

    def struct_operator(self, op: str, operands: list[E], node: ast.Node, scope: Scope) -> E:
        """`operands[0] op operands[1]` (or `op operands[0]`, or `operands[0][operands[1]]`
        for op "[]") where an operand is a struct: a call of the operator function that C++
        overload resolution picks."""
        name, left = f"operator{op}", operands[0]
        notes: list[str] = []
        candidates = []  # (cost, function, template arguments, is a member)
        if isinstance(left.type, StructType):
            if not self.methods_of(left.type).get(name):   # a base class's operator, if any
                left = self.base_with_method(left.type, name, left, node.coord) or left
            candidates += self.member_operators(name, left, operands[1:], notes)
        if op != "[]":  # operator[] can only be a member (C++ [over.sub])
            candidates += self.free_operators(name, operands, scope, notes)
        shown = [str(self.rvalue(e).type) for e in operands]
        if not candidates and len(operands) == 2 and op not in COMPOUND and op != "[]":
            builtin = self.converted_operands(operands, node)
            if builtin is not None:  # the built-in operator on what the structs convert to
                return self.binary(op, *builtin, node)
        if not candidates:
            self.no_viable_operator(op, shown, isinstance(left.type, StructType), node,
                                    notes[0] if notes else "")
        chosen = ranking.best(candidates)
        if len(chosen) > 1:
            types = (f"with operand types '{shown[0]}' and '{shown[1]}'" if len(shown) == 2
                     else f"operand type '{shown[0]}'")
            self.error(f"use of overloaded operator '{op}' is ambiguous ({types})", node)
        _, fn, bindings, member = chosen[0]
        if member:
            fn, bindings = self.specialized(fn, bindings, owner=left.type)
            code = self.member_code(left.type, fn, bindings)
            arg_evs = [("ptr", this_pointer(left, node.coord))] + self.bind_arguments(
                code.params[1:], fn, operands[1:], scope)
        else:
            fn, bindings = self.specialized(fn, bindings)
            code = self.instantiate(fn, bindings)
            arg_evs = self.bind_arguments(code.params, fn, operands, scope)
        return self.call_code(code, arg_evs, node.coord)

    def member_operators(self, name: str, obj: E, args: list[E], notes: list[str]) -> list:
        """The viable member `name` functions of `obj`'s struct for `args`, with their costs:
        as for any member call, `this` keeps its address space and a const object needs a
        const member function."""
        st: StructType = obj.type
        overloads = self.methods_of(st).get(name, [])
        if not overloads:
            return []
        outer = self.struct_methods[st].scope
        space, const = self.object_space(obj)
        viable = []
        for fn in overloads:
            if len(fn.params) != len(args) or fn.template_params == []:
                continue   # (an explicit specialisation replaces its template's body)
            bindings = self.deduce(fn, [], args, outer, notes) if fn.template_params else {}
            cost = None if bindings is None else self.match_cost(fn, bindings, args, outer)
            if cost is None:
                continue
            if (fn.space or "thread") != space:
                notes.append(f"candidate function not viable: 'this' argument is in the {space} "
                             f"address space, but '{name}' is not marked '{space}'")
            elif const and not fn.const:
                notes.append(f"candidate function not viable: 'this' argument has type 'const "
                             f"{st}', but '{name}' is not marked const")
            else:
                # The object is the first argument: a non-const one binds better to a non-const
                # `this` than to a const one (C++ [over.ics.rank]/3.2.6).
                rank = cost.plus_template(self.template_cost(fn)).with_object(
                    "" if const else ranking.CONST_REF if fn.const else ranking.REF)
                viable.append((rank, fn, bindings, True))
        return viable

    def converted_operands(self, operands: list[E], node: ast.Node) -> list[E] | None:
        """The operands converted to arithmetic types for a built-in operator, each struct
        by its one conversion function to an arithmetic type; None if a struct has none."""
        converted = []
        for e in operands:
            if isinstance(e.type, StructType):
                targets = {self.resolve_type(fn.return_type, self.struct_methods[e.type].scope)
                           for fn in self.methods_of(e.type).get(ast.CONVERSION, [])
                           if not fn.explicit}
                arithmetic = [t for t in targets if ty.is_arithmetic(t)]
                if len(arithmetic) != 1:
                    return None
                e = self.convert(e, arithmetic[0], node)
            converted.append(self.rvalue(e))
        return converted

    def template_cost(self, fdef: ast.FunctionDef) -> float:
        """As for calls: a non-template beats a template, and the more specialized wins."""
        return 0.5 + 0.1 * self.generic_params(fdef) if fdef.template_params else 0.0

    def no_viable_operator(self, op: str, shown: list[str], struct_target: bool,
                           node: ast.Node, hint: str) -> None:
        """Report an operator with no viable function, in clang's words for each kind."""
        if op == "[]":
            self.error(f"type '{shown[0]}' does not provide a subscript operator", node,
                       hint=hint or f"define 'T operator[](uint i) const {{ ... }}' in "
                                    f"'{shown[0]}'")
        if len(shown) == 1:
            self.error(f"invalid argument type '{shown[0]}' to unary expression", node,
                       hint=hint)
        if op in COMPOUND and struct_target:
            self.error(f"no viable overloaded '{op}'", node, hint=hint)
        self.error(f"invalid operands to binary expression ('{shown[0]}' and '{shown[1]}')",
                   node, hint=hint)
