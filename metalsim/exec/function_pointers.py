"""Function pointers as template arguments: the `FunctionPointerCompiler` part of `Compiler`.

MLX's fft.h declares `using RadixFunc = void (*)(thread vec<T, 2>*, thread vec<T, 2>*);`, takes
`RadixFunc<T> radix_func` as a template parameter, passes `radix2<T>` and calls
`radix_func(x, y)`. Such an argument names one function at compile time, so the call is a call
of that function. A function pointer as a run-time value (a variable, an argument, a
comparison) is refused: metalsim does not model Metal's function pointers (visible functions
and function tables, which mx.fast.metal_kernel never sets up).
"""

from __future__ import annotations

import numpy as np

from metalsim.diagnostics import CompileError
from metalsim.exec.compiled import E, Scope, Var
from metalsim.lang import ast
from metalsim.lang import types as ty
from metalsim.lang.types import FunctionPointerType


class FunctionPointerCompiler:
    """Function pointer methods of `Compiler` (which supplies `functions`, `instantiate`,
    `function_type`, `call_code`, ...)."""

    def function_pointer_type(self, node: ast.FunctionPointerType, scope: Scope
                              ) -> FunctionPointerType:
        params = tuple(self.param_type(ast.Param(t.coord, None, t), scope) for t in node.params)
        result = self.resolve_type(node.result, scope)
        return FunctionPointerType(ty.VOID if result is None else result, params)

    def function_argument(self, t: FunctionPointerType, arg: ast.Node, scope: Scope) -> Var:
        """The value of a template argument of function pointer type `t`: the function `arg`
        names (`radix2<T>`), or the function a template parameter already holds."""
        name = arg if isinstance(arg, ast.Name) else ast.Name(arg.coord, getattr(
            arg, "name", ""), template_args=getattr(arg, "template_args", None))
        held = scope.lookup(name.name) if not name.qualifier else None
        if isinstance(held, Var) and held.kind == "function":
            if held.type != t:
                self.error(f"cannot convert '{held.type}' to '{t}'", arg)
            return held
        matches = []
        for fdef in self.functions.get(name.name, []):
            if fdef.body is None or fdef.template_params == []:
                continue   # declarations and explicit specialisations
            bindings = self.pointed_arguments(fdef, name, t, scope)
            if bindings is not None:
                matches.append((fdef, bindings))
        if len(matches) != 1:
            self.error(f"address of overloaded function '{name.name}' does not match required "
                       f"type '{t}'" if not matches else
                       f"address of overloaded function '{name.name}' is ambiguous", arg,
                       width=len(name.name))
        fdef, bindings = self.specialized(*matches[0])
        key = (id(fdef), tuple(sorted((k, str(v)) for k, v in bindings.items())))
        index = self.pointed_functions.setdefault(key, (len(self.pointed_functions), fdef,
                                                        bindings))[0]
        return Var("function", t, readonly=True, const=np.asarray(index), name=name.name)

    def pointed_arguments(self, fdef: ast.FunctionDef, name: ast.Name, t: FunctionPointerType,
                          scope: Scope) -> dict | None:
        """The template arguments (explicit ones, the rest deduced from `t`) with which
        `fdef` has the function type `t`, or None."""
        if len(fdef.params) != len(t.params):
            return None
        explicit = name.template_args or []
        if fdef.template_params is None and explicit:
            return None
        bindings: dict = {}
        if fdef.template_params:
            args = [E(p, None, name.coord) for p in t.params]
            bindings = self.deduce(fdef, explicit, args, scope)
            if bindings is None:
                return None
        inner = Scope(dict(bindings), self.globals)
        try:
            params = tuple(self.param_type(p, inner) for p in fdef.params)
            result = self.resolve_type(fdef.return_type, inner)
        except CompileError:   # a substitution failure: not this one
            return None
        return bindings if params == t.params and (result or ty.VOID) == t.result else None

    def call_function_pointer(self, node: ast.Call, v: Var, scope: Scope) -> E:
        """`radix_func(x, y)` for a template parameter of function pointer type: a call of the
        function it names."""
        _, fdef, bindings = next(entry for entry in self.pointed_functions.values()
                                 if entry[0] == int(v.const))
        args = [self.expr(a, scope) for a in node.args]
        if len(args) != len(fdef.params):
            self.error(f"too {'many' if len(args) > len(fdef.params) else 'few'} arguments to "
                       f"function call, expected {len(fdef.params)}, have {len(args)}", node)
        code = self.instantiate(fdef, bindings)
        declared = Scope(dict(bindings), self.globals)
        return self.call_code(code, self.bind_arguments(code.params, fdef, args, declared),
                              node.coord)

    def refuse_function_value(self, v: Var, node: ast.Node) -> None:
        """A function pointer used other than by a call or as a template argument."""
        self.error(f"metalsim supports function pointers only as template arguments, called "
                   f"by name: '{v.name}' cannot be used as a value here", node,
                   width=len(v.name), hint="call it, or pass it on as a template argument")

