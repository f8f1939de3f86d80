"""Lambdas: the `LambdaCompiler` part of `Compiler`.

A lambda expression's value is an object of its closure type, an empty struct of its own that
clang names `(lambda at file:line:col)`. Calling it runs the lambda's body as a function whose
`auto` parameters are template parameters, instantiated for the call's arguments as a generic
lambda's `operator()` is (C++ [expr.prim.lambda]); MLX's NAX headers pass them to
`const_for_loop` and `dispatch_bool`. The enclosing function's variables the body names are
captured:

- by reference: the body reads and writes the enclosing function's own variable, in the frame
  of that function's call, found at run time up the chain of callers (Metal has no recursion, so
  it is the nearest frame running that function's code);
- by copy: the value at the lambda expression, kept in a slot of the enclosing frame that the
  body alone uses (const unless the lambda is `mutable`). A closure never outlives that call:
  returning one is refused, so no frame is left behind.

`this` is captured by reference too: the members of the enclosing struct are the same object's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from metalsim.exec.compiled import E, FunctionCode, Scope, Var
from metalsim.exec.runtime import bind_argument
from metalsim.exec.structs import thread_object
from metalsim.exec.uses import walk
from metalsim.exec.values import Frame
from metalsim.lang import ast
from metalsim.lang import types as ty
from metalsim.lang.types import ArrayType, PointerType, StructType, Type

# The kinds of name whose value lives in a function's frame: what a lambda's body must capture.
FRAME_KINDS = frozenset({"value", "uniform", "ptr", "region", "ref", "captured"})


@dataclass
class Closure:
    """What a closure type stands for: the lambda, its body as a function, and the scope the
    body sees (the captures, over what the lambda expression sees)."""

    node: ast.Lambda
    call: ast.FunctionDef
    scope: Scope


def creating_frame(f: Frame, code: FunctionCode) -> Frame:
    """The frame, up the callers of `f`, that runs `code` (the function that made a lambda)."""
    f = f.caller
    while f.code is not code:
        f = f.caller
    return f


class LambdaCompiler:
    """Lambda methods of `Compiler` (which supplies `expr`, `instantiate`, `call_code`, ...)."""

    def x_Lambda(self, node: ast.Lambda, scope: Scope) -> E:
        """A lambda expression, compiled once per instance of the enclosing function (a
        declaration's initializer may be compiled twice: its type deduced, then its value)."""
        key = (id(node), id(self.fn))
        made = self.lambdas.get(key)
        if made is None:
            made = self.lambdas[key] = self.compile_lambda(node, scope)
        return made

    def compile_lambda(self, node: ast.Lambda, scope: Scope) -> E:
        explicit = dict(node.captures)
        visible = self.enclosing_names(scope)
        for name in explicit:
            v = visible.get(name)
            if isinstance(v, Var) and v.kind == "unusable":
                self.error(v.name, node)
            if not (isinstance(v, Var) and v.kind in FRAME_KINDS):
                what = "'this' outside of a non-static member function" if name == "this" \
                    else f"'{name}' in capture list does not name a local variable"
                self.error(f"cannot capture {what}" if name == "this" else what, node)
        used = {n.name for n in walk(node.body) if isinstance(n, ast.Name) and n.unqualified}
        used -= {p.name for p in node.params}
        captures: dict[str, Var] = {}
        copies: list[tuple[Var, E]] = []
        for name, v in visible.items():
            if isinstance(v, Var) and v.kind == "unusable":
                captures[name] = v   # (`auto f = [&] { return f; };`: refused in the body)
            if not (isinstance(v, Var) and v.kind in FRAME_KINDS):
                continue
            by_reference = explicit.get(name)
            if by_reference is None and node.default is not None:
                by_reference = node.default == "&" or name == "this"
            if by_reference is None:
                captures[name] = Var("uncaptured", v.type, name=name)
            elif by_reference:
                captures[name] = Var("captured", v.type, readonly=v.readonly, space=v.space,
                                     name=name, captured=(v, self.fn))
            elif name in used:
                copy = self.captured_copy(name, v, node)
                copies.append((copy, self.convert(self.rvalue(self.expr(
                    ast.Name(node.coord, name), scope)), copy.type, node)))
                captures[name] = Var("captured", copy.type, readonly=copy.readonly,
                                     space=copy.space, name=name, captured=(copy, self.fn))
        call = ast.FunctionDef(node.coord, "operator()", node.return_type, node.params,
                               node.body, node.template_params)
        self.closure_access[id(call)] = self.access_from   # its body names what this code may
        closure = Closure(node, call, Scope(captures, scope))
        st = self.closure_type(node, closure)
        if not node.template_params and any(
                captures[n].kind == "unusable" for n in used if n in captures):
            # compiled now, called or not, as C++ does: naming the variable being declared
            # is an error in the body too
            self.instantiate(call, {}, closure.scope)
        return E(st, self.make_closure(copies, st), node.coord)

    def enclosing_names(self, scope: Scope) -> dict[str, Var | Type]:
        """The names `scope` sees up to program scope, the innermost of each."""
        names: dict = {}
        s: Scope | None = scope
        while s is not None and s is not self.globals:
            for name, v in s.names.items():
                names.setdefault(name, v)
            s = s.parent
        return names

    def captured_copy(self, name: str, v: Var, node: ast.Lambda) -> Var:
        """A slot of the enclosing function for the lambda's copy of the variable `name`."""
        t = v.type
        if isinstance(t, ArrayType):
            self.error(f"capturing the array '{name}' by copy is not supported by metalsim",
                       node, hint=f"capture it by reference: '[&{name}]'")
        readonly = not node.mutable
        if isinstance(t, PointerType | ty.NullptrType):
            return Var("ptr", t, self.new_slot(), readonly=readonly)
        if isinstance(t, StructType):
            return Var("region", t, self.new_slot(), readonly=readonly, space="thread",
                       name=name)
        return Var("value", t, self.new_slot(), readonly=readonly)

    def closure_type(self, node: ast.Lambda, closure: Closure) -> StructType:
        """A closure type of its own for each lambda expression compiled (one per instance of
        an enclosing template too), named as clang names it."""
        where = f"{node.coord.section}:{node.coord.line}:{node.coord.column}"
        name, n = f"(lambda at {where})", 1
        taken = {st.name for st in self.closures}   # template instances are keyed by name
        while name in taken:
            n += 1
            name = f"(lambda at {where}, #{n})"
        st = ty.struct_type(name, [])
        self.closures[st] = closure
        return st

    @staticmethod
    def make_closure(copies: list[tuple[Var, E]], st: StructType):
        """The evaluator of a lambda expression: it makes the copies, and its value is the
        (empty) closure object."""
        def ev(f, lanes):
            size = f.m.batch.size
            for var, value in copies:
                v = value.ev(f, lanes)
                if var.kind == "region":
                    f.vars[var.slot] = thread_object(f.m, var.name, var.type, v, lanes,
                                                     value.coord)
                elif var.kind == "ptr":
                    f.vars[var.slot] = bind_argument("ptr", var, v, lanes, size)
                else:
                    arr = f.vars[var.slot]
                    if arr is None:
                        arr = f.vars[var.slot] = np.zeros((size,) + ty.lane_shape(var.type),
                                                          ty.scalar_of(var.type).dtype)
                    arr[lanes.idx] = v
            return np.zeros((lanes.n, 1), np.uint8)
        return ev

    def captured_expr(self, v: Var, node: ast.Node) -> E:
        """A name the lambda's body captured: the enclosing function's variable (or the
        lambda's copy) in the frame of the call that made the closure."""
        if v.kind == "uncaptured":
            self.error(f"variable '{v.name}' cannot be implicitly captured in a lambda with no "
                       "capture-default specified", node, width=len(v.name),
                       hint=f"capture it: '[&{v.name}]' or '[{v.name}]' (or '[&]', '[=]')")
        inner, code = v.captured
        e = self.var_expr(inner, node)
        ev, loc = e.ev, e.loc
        return replace(
            e, ev=None if ev is None else lambda f, lanes: ev(creating_frame(f, code), lanes),
            loc=None if loc is None else lambda f, lanes: loc(creating_frame(f, code), lanes))

    def call_closure(self, node: ast.Call | ast.MethodCall, closure: Closure, st: StructType,
                     scope: Scope, made: E | None = None) -> E:
        """`f(args)` on a closure: its body instantiated for the arguments' types; `made`,
        the lambda expression itself where it is called as it is made (`[&] { ... }()`),
        first makes its copies."""
        args = [self.expr(a, scope) for a in node.args]
        call, notes = closure.call, []
        if call.template_params:
            bindings = self.deduce(call, [], args, closure.scope, notes)
        else:
            bindings = {} if len(args) == len(call.params) else None
        if bindings is None:
            self.error(f"no matching function for call to object of type '{st}'", node,
                       hint="; ".join(notes) or f"it takes {len(call.params)} arguments")
        code = self.instantiate(call, bindings, closure.scope)
        inner = Scope(dict(bindings), closure.scope)
        result = self.call_code(code, self.bind_arguments(code.params, call, args, inner),
                                node.coord)
        if made is None:
            return result
        make, run = made.ev, result.ev

        def ev(f, lanes):
            make(f, lanes)
            return run(f, lanes)
        return replace(result, ev=ev)

    def refuse_returned_closure(self, e: E, node: ast.Node) -> None:
        """A closure must not outlive the call that made it (see the module docstring)."""
        if e.type in self.closures:
            self.error("returning a lambda is not supported by metalsim", node,
                       hint="call it where it is defined, or pass it to the function that "
                            "calls it")
