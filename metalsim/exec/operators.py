"""Overloaded operators on structs: the `OperatorCompiler` part of `Compiler`.

As in C++14 [over.match.oper], an operator expression with a struct operand (`a + b`, `-a`,
`a += b`, `a[i]`, `++a`, `a++`) calls the best of the left operand's member `operator@`
functions, the free `operator@` functions and the built-in operator, ranked as any overloaded
call is (`operator[]` must be a member; a postfix `a++` passes the int 0 to `operator++(int)`,
the form its extra parameter tells apart); so does one with an enumeration operand where the
program declares a free `operator@` (a candidate only where a parameter takes the
enumeration). The built-in candidate takes a struct by its one conversion function to an
arithmetic type (a user-defined conversion) and an unscoped enumeration by promotion; with its
operands of the same enumeration type, a comparison's by value; it is no candidate where a free
one takes the same parameter types. Where it wins the caller compiles the built-in operator, so
expressions without a struct or such an enumeration operand compile (and run) as before.
"""

from __future__ import annotations

from metalsim.exec import ranking
from metalsim.exec.compiled import E, Scope
from metalsim.exec.structs import this_pointer
from metalsim.lang import ast
from metalsim.lang import types as ty
from metalsim.lang.types import StructType

COMPOUND = frozenset({"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="})
COMPARISONS = frozenset({"<", ">", "<=", ">=", "==", "!="})
LOGICAL = frozenset({"&&", "||", "!"})
INCREMENTS = frozenset({"++", "--"})   # a postfix one has the int 0 as its second operand
INTEGRAL_ONLY = frozenset({"%", "&", "|", "^", "<<", ">>", "~", "%=", "&=", "|=", "^=", "<<=",
                           ">>="})
BUILTIN = "built-in"   # the last item of the built-in operator's candidate


class OperatorCompiler:
    """Operator methods of `Compiler` (which supplies `deduce`, `match_cost`, `call_code`...)."""

    def free_operators(self, name: str, operands: list[E], scope: Scope,
                       notes: list[str]) -> list[tuple]:
        """The viable free `operator@` functions for `operands`, as (cost, function, template
        arguments, False) candidates. Without a struct operand, only those taking an
        enumeration operand's type (or a reference to it) in its place are candidates."""
        no_struct = not any(isinstance(e.type, StructType) for e in operands)
        candidates = []
        frees = self.functions.get(name, []) + self.hidden_friends_for(name, operands)
        for fdef in frees:
            if len(fdef.params) != len(operands) or fdef.template_params == [] or (
                    fdef.body is None and any(o.body is not None for o in frees
                                              if o is not fdef)):
                continue  # a declaration of a function defined too is not a candidate;
                # nor is an explicit specialisation (it replaces its template's body)
            bindings = self.deduce(fdef, [], operands, scope, notes)
            cost = None if bindings is None else self.match_cost(fdef, bindings, operands)
            if cost is not None and no_struct and not self.takes_an_enumeration(
                    fdef, bindings, operands):
                continue
            if cost is not None:
                candidates.append((cost.plus_template(self.template_cost(fdef)), fdef, bindings,
                                   False))
        return candidates

    def takes_an_enumeration(self, fdef: ast.FunctionDef, bindings: dict,
                             operands: list[E]) -> bool:
        """Whether a parameter of `fdef` takes its operand's enumeration type (C++
        [over.match.oper]/3.2: what makes a free function a candidate without a struct)."""
        inner = Scope(dict(bindings), self.globals)
        return any(isinstance(e.type, ty.ScalarType) and e.type.enum is not None
                   and self.param_type(p, inner) == e.type
                   for p, e in zip(fdef.params, operands))

    def enumeration_operator(self, op: str, operands: list[E]) -> bool:
        """Whether `op` on `operands` (no struct among them) may call an operator function: an
        operand is an enumeration and the program declares a free `operator@`."""
        return any(isinstance(e.type, ty.ScalarType) and e.type.enum is not None
                   for e in operands) and bool(self.functions.get(f"operator{op}"))

    def struct_operator(self, op: str, operands: list[E], node: ast.Node, scope: Scope
                        ) -> E | None:
        """`operands[0] op operands[1]` (or `op operands[0]`, or `operands[0][operands[1]]`
        for op "[]") where an operand is a struct or an enumeration: a call of the operator
        function that C++ overload resolution picks, or None where the built-in operator wins
        or, without a struct operand, nothing fits (the caller compiles the built-in operator,
        on the operands `converted_operands` gives)."""
        name, left = f"operator{op}", operands[0]
        notes: list[str] = []
        # (cost, function, template arguments, is a member (or the base class whose member
        # `using B::operator@;` names) or BUILTIN)
        candidates = []
        if isinstance(left.type, StructType):
            if not self.methods_of(left.type).get(name):   # a base class's operator, if any
                left = self.base_with_method(left.type, name, left, node.coord) or left
            candidates += self.member_operators(name, left, operands[1:], notes)
        if op != "[]":  # operator[] can only be a member (C++ [over.sub])
            candidates += self.free_operators(name, operands, scope, notes)
        builtin = self.builtin_candidate(op, operands, candidates)
        if builtin is not None:
            candidates.append(builtin)
        shown = [str(self.rvalue(e).type) for e in operands[:1 if op in INCREMENTS else 2]]
        if not candidates and not any(isinstance(e.type, StructType) for e in operands):
            return None   # the built-in operator on enumerations reports why it does not fit
        if not candidates:
            self.no_viable_operator(op, shown, isinstance(left.type, StructType), node,
                                    notes[0] if notes else "")
        chosen = ranking.best(candidates)
        if len(chosen) > 1:
            types = (f"with operand types '{shown[0]}' and '{shown[1]}'" if len(shown) == 2
                     else f"operand type '{shown[0]}'")
            among = [f"the built-in '{op}'" if c[3] == BUILTIN else f"'{c[1].name}'"
                     for c in chosen]
            self.error(f"use of overloaded operator '{op}' is ambiguous ({types})", node,
                       hint=f"candidates: {', '.join(dict.fromkeys(among))}; convert an "
                            "operand explicitly")
        _, fn, bindings, member = chosen[0]
        if member == BUILTIN:
            return None
        if isinstance(member, StructType):   # a base's, brought in by `using B::operator@;`
            left, member = self.as_base(left, member, node.coord), True
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

    def builtin_candidate(self, op: str, operands: list[E], others: list[tuple]
                          ) -> tuple | None:
        """The built-in operator `op` as a candidate beside the operator functions `others`,
        ranked by its best parameter types; None where no built-in one takes `operands`."""
        if op == "[]" or op in INCREMENTS or (op in COMPOUND and not (
                isinstance(operands[0].type, ty.ScalarType | ty.VectorType)
                and operands[0].type.enum is None and operands[0].loc is not None)):
            return None   # (a compound assignment's or an increment's operand binds to an
            # arithmetic `L&`, which a conversion function's value is not)
        types = [self.arithmetic_target(e.type) if isinstance(e.type, StructType)
                 else self.rvalue(e).type for e in operands]
        if not all(isinstance(t, ty.ScalarType | ty.VectorType) for t in types) or (
                op in INTEGRAL_ONLY and any(ty.is_float(t) for t in types)):
            return None
        enums = [t for t in types if isinstance(t, ty.ScalarType) and t.enum is not None]
        # `bool operator==(E, E)` for an enumeration E, unless a free function takes (E, E)
        same_enum = op in COMPARISONS and len(enums) == 2 and types[0] == types[1] and not any(
            not member and [self.param_type(p, self.globals) for p in fn.params] == types
            and not any(isinstance(p.type, ast.ReferenceType) for p in fn.params)
            for _, fn, _, member in others if not fn.template_params)
        if any(t.scoped_enum for t in enums) and not same_enum:
            return None   # an `enum class` has no other built-in operator
        costs = []
        for e, t in zip(operands, types):
            if isinstance(e.type, StructType):   # a user-defined conversion, then a promotion
                costs.append(10.0 + (isinstance(t, ty.ScalarType) and ty.promote(t) != t))
            elif op in LOGICAL:
                costs.append(0.0 if t == ty.BOOL else 2.0)   # a boolean conversion
            elif same_enum or isinstance(t, ty.VectorType) or t.kind == "float":
                costs.append(0.0)
            else:
                costs.append(0.0 if t.enum is None and ty.promote(t) == t else 1.0)
        return (ranking.Rank(sum(costs), ("",) * len(costs), per_argument=tuple(costs)),
                None, None, BUILTIN)

    def arithmetic_target(self, st: StructType) -> ty.Type | None:
        """The arithmetic type of the one non-explicit conversion function of `st` that
        converts to one, or None (also where a conversion function template converts to any
        type, MLX's `complex64_t`: the built-in operator is then left out)."""
        conversions = [fn for fn in self.methods_of(st).get(ast.CONVERSION, [])
                       if not fn.explicit]
        if any(fn.template_params for fn in conversions):
            return None
        targets = {self.resolve_type(fn.return_type, self.struct_methods[st].scope)
                   for fn in conversions}
        arithmetic = [t for t in targets if ty.is_arithmetic(t)]
        return arithmetic[0] if len(arithmetic) == 1 else None

    def member_operators(self, name: str, obj: E, args: list[E], notes: list[str]) -> list:
        """The viable member `name` functions of `obj`'s struct for `args`, with their costs:
        as for any member call, `this` keeps its address space and a const object needs a
        const member function."""
        st: StructType = obj.type
        overloads = self.methods_of(st).get(name, [])
        if not overloads:
            return []
        owners = {id(fn): base for base, fn in self.used_overloads(st, name)}
        overloads = overloads + [fn for base, fn in self.used_overloads(st, name)]
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
                viable.append((rank, fn, bindings, owners.get(id(fn), True)))
        return viable

    def converted_operands(self, operands: list[E], node: ast.Node) -> list[E] | None:
        """The operands converted to arithmetic types for a built-in operator, each struct
        by its one conversion function to an arithmetic type; None if a struct has none."""
        converted = []
        for e in operands:
            if isinstance(e.type, StructType):
                target = self.arithmetic_target(e.type)
                if target is None:
                    return None
                e = self.convert(e, target, node)
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
        if op in INCREMENTS:
            self.error(f"cannot {'increment' if op == '++' else 'decrement'} value of type "
                       f"'{shown[0]}'", node, hint=hint or f"define 'S& operator{op}()' (prefix) "
                                                           f"or 'S operator{op}(int)' (postfix) "
                                                           f"in '{shown[0]}'")
        if len(shown) == 1:
            self.error(f"invalid argument type '{shown[0]}' to unary expression", node,
                       hint=hint)
        if op in COMPOUND and struct_target:
            self.error(f"no viable overloaded '{op}'", node, hint=hint)
        self.error(f"invalid operands to binary expression ('{shown[0]}' and '{shown[1]}')",
                   node, hint=hint)
