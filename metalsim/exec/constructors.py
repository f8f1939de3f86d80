"""Constructors (the `ConstructorCompiler` part of `Compiler`): which one a declaration or a
temporary calls, member initializer lists, and the default construction of members and array
elements.

A constructor is compiled like a member function: a `void` function whose first parameter is
`this`, a thread pointer to the object under construction. An initialization compiles to
*steps*, each given the object's base pointer when it runs: a constructor call or a store of a
member's value. A struct with a user-declared constructor is no longer an aggregate (C++14
[dcl.init.aggr]), so braces call a constructor too; an aggregate holding such a struct calls its
constructors for those members.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from metalsim.diagnostics import CompileError, Coord
from metalsim.exec import memory as mem
from metalsim.exec import pointers, ranking
from metalsim.exec.compiled import E, FunctionCode, Run, Scope, Var, constant
from metalsim.exec.machine import Lanes
from metalsim.exec.statements import self_init_hint
from metalsim.exec.structs import load, store, thread_region
from metalsim.exec.uses import mentions
from metalsim.exec.values import Frame, Ptr
from metalsim.lang import ast
from metalsim.lang import types as ty
from metalsim.lang.types import ArrayType, PointerType, StructType, Type, VectorType

# Initializes (part of) an object, given the object's base pointer.
Step = Callable[[Frame, Lanes, Ptr], None]


class ConstructorCompiler:
    """Constructor methods of `Compiler` (which supplies `error`, `expr`, `convert`, ...)."""

    def constructors_of(self, st: StructType) -> list[ast.Constructor]:
        methods = self.struct_methods.get(st)
        return methods.constructors if methods is not None else []

    def has_constructors(self, t: Type) -> bool:
        """Whether initializing a `t` may call a user-declared constructor (or run default
        member initializers)."""
        if isinstance(t, ArrayType):
            return self.has_constructors(t.elem)
        return isinstance(t, StructType) and (
            bool(self.constructors_of(t)) or t in self.member_defaults
            or any(self.has_constructors(m.type) for m in t.members))

    def constructor_code(self, st: StructType, fn: ast.Constructor,
                         bindings: dict) -> FunctionCode:
        """The compiled constructor (for `bindings` of a constructor template's parameters)."""
        with self.instantiating_member(st, fn):
            return self.instantiate(fn, bindings, self.struct_methods[st].scope,
                                    PointerType(st, "thread", False))

    def constructor_cost(self, st: StructType, fn: ast.Constructor, args: list[E]
                         ) -> tuple[float, dict] | None:
        """What converting `args` to `fn`'s parameters costs, with the template arguments of
        a constructor template deduced from them (a substitution failure in its default
        template arguments, `typename = enable_if_t<...>`, rules it out); None if not viable.
        As for functions, a template costs a little more than a non-template."""
        required = sum(1 for p in fn.params if p.default is None)
        if not required <= len(args) <= len(fn.params):
            return None
        outer = self.struct_methods[st].scope
        bindings: dict | None = {}
        if fn.template_params:
            bindings = self.deduce(fn, [], args, outer)
        if bindings is None:
            return None
        cost = self.match_cost(fn, bindings, args, outer)
        if cost is None:
            return None
        return cost.plus_template(0.5 + 0.1 * self.generic_params(fn) if fn.template_params
                                  else 0), bindings

    def resolve_constructor(self, st: StructType, args: list[E], where: ast.Node | Coord,
                            implicit: bool = False) -> tuple[ast.Constructor, dict] | None:
        """The constructor C++ picks for `args` and its template arguments (None: the
        implicit copy constructor). `implicit` (a conversion) leaves out `explicit` ones."""
        if len(args) == 1 and args[0].type == st:
            return None
        outer = self.struct_methods[st].scope
        viable = []
        for fn in self.constructors_of(st):
            if not implicit or not fn.explicit:
                found = self.constructor_cost(st, fn, args)
                if found is not None:
                    viable.append((found[0], fn, found[1]))
        if not viable and implicit:
            src = self.rvalue(args[0]).type
            explicit = [fn for fn in self.constructors_of(st) if fn.explicit]
            self.error(f"no viable conversion from '{src}' to '{st}'", where,
                       hint=f"its constructor is 'explicit': write {st}(...)" if explicit
                       else "")
        if not viable:
            shown = ", ".join(str(self.rvalue(a).type) for a in args)
            candidates = "; ".join(
                f"{st}({', '.join(str(self.resolve_type(p.type, outer)) for p in fn.params)})"
                if not fn.template_params else f"a constructor template of {len(fn.params)} "
                "parameter(s)" for fn in self.constructors_of(st))
            self.error(f"no matching constructor for initialization of '{st}' from "
                       f"({shown})", where, hint=f"candidates: {candidates}")
        chosen = ranking.best(viable)
        if len(chosen) > 1:
            self.error(f"call to constructor of '{st}' is ambiguous", where)
        return chosen[0][1:]

    def converts_implicitly(self, a: E, st: StructType) -> bool:
        """Whether a non-explicit constructor of `st` takes `a` alone (a user-defined
        conversion, for overload resolution)."""
        return any(not fn.explicit and fn.params and self.constructor_cost(st, fn, [a])
                   is not None for fn in self.constructors_of(st))

    def construct_step(self, st: StructType, args: list[E], where: ast.Node | Coord,
                       off: int = 0, implicit: bool = False) -> Step:
        """Construct an `st` from `args` at `off` from the base pointer."""
        coord = where if isinstance(where, Coord) else where.coord
        chosen = self.resolve_constructor(st, args, where, implicit)
        if chosen is None:
            return self.store_step(off, st, self.convert(args[0], st, coord), coord)
        fn, bindings = chosen
        code = self.constructor_code(st, fn, bindings)
        outer = Scope(dict(bindings), self.struct_methods[st].scope)
        # `this` for the call: a stack, as a delegating constructor may re-enter this step.
        this: list[Ptr] = []
        bound = self.bind_arguments(code.params[1:], fn, args, outer)
        call = self.call_code(code, [("ptr", lambda f, lanes: this[-1])] + bound, coord).ev

        def step(f, lanes, p):
            this.append(Ptr(p.region, p.off + off))
            try:
                call(f, lanes)
            finally:
                this.pop()
        return step

    def store_step(self, off: int, t: Type, e: E, coord: Coord) -> Step:
        put = (store if isinstance(t, StructType) else pointers.store_pointer
               if isinstance(t, PointerType) else mem.store)
        ev = e.ev

        def step(f, lanes, p):
            put(f.m, p.region, lanes.idx, lanes.n, p.off + off, t, ev(f, lanes), coord)
        return step

    def default_steps(self, t: Type, off: int, where: ast.Node) -> list[Step]:
        """Default-initialization: constructors of the structs in `t` that have them; other
        members and elements keep indeterminate values."""
        if isinstance(t, ArrayType):
            return [s for i in range(t.length)
                    for s in self.default_steps(t.elem, off + i * t.elem.size, where)]
        if isinstance(t, StructType):
            if self.constructors_of(t):
                return [self.construct_step(t, [], where, off)]
            defaults = self.member_defaults.get(t, {})
            if defaults:  # the implicit default constructor runs the default initializers
                return [s for m in t.members for s in (
                    self.init_steps(m.type, defaults[m.name][0], defaults[m.name][1], where,
                                    off + m.offset) if m.name in defaults
                    else self.default_steps(m.type, off + m.offset, where))]
            return [s for m in t.members for s in self.default_steps(m.type, off + m.offset,
                                                                     where)]
        return []

    def init_steps(self, t: Type, init: ast.Node | None, scope: Scope, where: ast.Node,
                   off: int = 0) -> list[Step]:
        """How a declaration `t x <init>;` initializes x (at `off` from the base pointer)."""
        if init is None:
            return self.default_steps(t, off, where)
        if isinstance(t, StructType) and self.constructors_of(t) and (
                isinstance(init, ast.InitList) or isinstance(init, ast.Construct) and (
                    self.resolve_type(init.type, scope) == t)):
            items = init.items if isinstance(init, ast.InitList) else init.args
            return [self.construct_step(t, [self.expr(a, scope) for a in items], init, off)]
        if isinstance(t, ArrayType) or isinstance(init, ast.InitList):
            return [self.store_step(off + o, et, self.init_value(et, item, scope), item.coord)
                    for o, et, item in self.flatten_init(t, init, 0, scope)]
        return [self.store_step(off, t, self.convert(self.expr(init, scope), t, init),
                                init.coord)]

    def init_value(self, t: Type, item: ast.Node, scope: Scope) -> E:
        """The value a leaf of an aggregate initializer gives an element of type `t` (a braced
        leaf is left only for a struct with constructors, which it calls)."""
        if isinstance(item, ast.InitList):
            return self.construct_temp(t, [self.expr(a, scope) for a in item.items], item)
        return self.convert(self.expr(item, scope), t, item)

    def construct_temp(self, st: StructType, args: list[E], where: ast.Node | Coord,
                       implicit: bool = False) -> E:
        """A temporary `st` built by a constructor, in thread memory as C++ materializes it."""
        coord = where if isinstance(where, Coord) else where.coord
        step = self.construct_step(st, args, where, implicit=implicit)
        name = st.name

        def ev(f, lanes):
            region = thread_region(name, st, f.m.batch.size)
            step(f, lanes, Ptr(region, np.zeros(lanes.n, np.int64)))
            return load(f.m, region, lanes.idx, lanes.n, 0, st, coord)
        return E(st, ev, coord)

    def converting_constructor(self, e: E, st: StructType, coord: Coord, explicit: bool) -> E:
        """`S s = x;`, an argument `x` for an `S` parameter, `(S)x`: a constructor taking one
        argument converts (an `explicit` one only in a cast)."""
        return self.construct_temp(st, [e], coord, implicit=not explicit)

    def declare_constructed(self, d: ast.VarDecl, t: Type, const: bool, scope: Scope) -> Run:
        """A thread variable whose initialization may call constructors, built in place."""
        slot = self.new_slot()
        scope.names[d.name] = Var("region", t, slot, readonly=const, space="thread")
        steps = self.init_steps(t, d.init, scope, d)   # (in the scope of the variable)
        name = d.name
        own = d.init is not None and mentions(d.init, name)
        hint = self_init_hint(name) if own else ""

        def run(f, lanes):
            region = f.vars[slot]
            if region is None:
                region = f.vars[slot] = thread_region(name, t, f.m.batch.size)
                region.init_hint = hint
            elif own:   # a new object: not the one an earlier iteration left
                region.forget_init(lanes.idx)
            p = Ptr(region, np.zeros(lanes.n, np.int64))
            for step in steps:
                step(f, lanes, p)
            return lanes
        return run

    def initialized_base(self, st: StructType, init: ast.MemberInit,
                         scope: Scope) -> StructType | None:
        """The base class of `st` a member initializer names by a type other than its own
        name (`B<T>(x)`, a typedef `Base(x)`); None where it names a member or its struct."""
        bases = self.struct_bases.get(st, [])
        if init.base is None and (st.member(init.name) is not None or init.name == st.name
                                  or any(str(b) == init.name for b in bases)):
            return None
        try:
            t = self.resolve_type(init.base or ast.NamedType(init.coord, init.name), scope)
        except CompileError:
            return None   # not a type: reported as an unknown member below
        if t not in bases:
            self.error(f"type '{t}' is not a direct base of '{st}'", init,
                       width=len(init.name))
        return t

    def member_initializers(self, fn: ast.Constructor, scope: Scope) -> Run:
        """What a constructor does before its body: each member initialized in the order the
        struct declares it, from its member initializer or by default; or, delegating, the
        target constructor."""
        this = scope.lookup("this")
        st: StructType = this.type.pointee
        this_ev = self.var_expr(this, fn).ev
        given: dict[str, ast.MemberInit] = {}
        steps: list[Step] = []
        for init in fn.inits:
            if init.name == st.name:
                if len(fn.inits) > 1:
                    self.error("an initializer for a delegating constructor must appear alone",
                               init, width=len(init.name))
                steps = [self.construct_step(st, [self.expr(a, scope) for a in init.args],
                                             init)]
                break
            base = self.initialized_base(st, init, scope)
            if base is not None:
                init = replace(init, name=base.name)
            if st.member(ty.BASE_PREFIX + init.name) is not None:   # a base class: `B(x)`
                init = replace(init, name=ty.BASE_PREFIX + init.name)
            elif any(str(b) == init.name for b in self.struct_bases.get(st, [])) and (
                    not init.args):
                continue   # an empty base class, value-initialized: nothing to store
            if st.member(init.name) is None:
                self.error(f"member initializer '{init.name}' does not name a non-static data "
                           f"member", init, width=len(init.name),
                           hint=self.suggest(init.name, [m.name for m in st.members]))
            if init.name in given:
                self.error(f"multiple initializations given for non-static member "
                           f"'{init.name}'", init, width=len(init.name))
            given[init.name] = init
        else:
            for m in st.members:
                init = given.get(m.name)
                if init is not None:
                    steps += self.member_steps(m.type, init, scope, m.offset)
                    continue
                default = self.member_defaults.get(st, {}).get(m.name)
                if default is not None:  # its default member initializer
                    steps += self.init_steps(m.type, default[0], scope, fn, m.offset)
                    continue
                if m.const and not (isinstance(m.type, StructType) and self.constructors_of(
                        m.type)):
                    self.error(f"constructor for '{st}' must explicitly initialize the const "
                               f"member '{m.name}'", fn)
                steps += self.default_steps(m.type, m.offset, fn)

        def run(f, lanes):
            p = this_ev(f, lanes)
            for step in steps:
                step(f, lanes, p)
            return lanes
        return run

    def member_steps(self, t: Type, init: ast.MemberInit, scope: Scope, off: int) -> list[Step]:
        """`m(args)` or `m{args}` in a member initializer list."""
        args = init.args
        if isinstance(t, StructType) and self.constructors_of(t):
            return [self.construct_step(t, [self.expr(a, scope) for a in args], init, off)]
        if isinstance(t, ArrayType | StructType):
            if init.braces or not args:  # `m{...}` aggregate-, `m()` value-initializes
                return self.init_steps(t, ast.InitList(init.coord, args), scope, init, off)
            if len(args) == 1:
                return self.init_steps(t, args[0], scope, init, off)
            self.error(f"no matching constructor for initialization of '{t}'", init,
                       width=len(init.name), hint="initialize an aggregate member with braces")
        values = [self.rvalue(self.expr(a, scope)) for a in args]
        if isinstance(t, VectorType):
            value = self.construct_vector(t, values, init)
        elif not values:  # `m()`: value-initialized, zero
            value = constant(0, t, init.coord)
        elif len(values) > 1:
            self.error("excess elements in scalar initializer", args[1])
        else:
            value = self.convert(values[0], t, init)
        return [self.store_step(off, t, value, init.coord)]
