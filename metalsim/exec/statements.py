"""Compiling statements: blocks, declarations (thread, threadgroup and thread-array
memory), control flow with active-lane sets, and `return` (the `StatementCompiler` half of
`Compiler`)."""

from __future__ import annotations

import numpy as np

from metalsim.diagnostics import Coord
from metalsim.exec import mathlib
from metalsim.exec import memory as mem
from metalsim.exec.compiled import E, Ev, Run, Scope, Var, constant
from metalsim.exec.machine import EMPTY, StepLimitExceeded, union
from metalsim.exec.pointers import UNSET, store_pointer
from metalsim.exec.runtime import bind_argument, checked_condition, record_sources
from metalsim.exec.structs import store as store_struct
from metalsim.exec.structs import thread_region
from metalsim.exec.uses import mentions, only_read
from metalsim.exec.values import Ptr, PtrSlot, VarLoc
from metalsim.lang import ast
from metalsim.lang import types as ty
from metalsim.lang.types import (
    ArrayType,
    PointerType,
    StructType,
    Type,
    VectorType,
    holds_atomic,
)

ATTRIBUTE_NAMES = frozenset({
    "dispatch_quadgroups_per_threadgroup", "dispatch_simdgroups_per_threadgroup",
    "dispatch_threads_per_threadgroup", "grid_origin", "grid_size",
    "quadgroup_index_in_threadgroup", "quadgroups_per_threadgroup",
    "simdgroup_index_in_threadgroup", "simdgroups_per_threadgroup", "thread_execution_width",
    "thread_index_in_quadgroup", "thread_index_in_simdgroup", "thread_index_in_threadgroup",
    "thread_position_in_grid", "thread_position_in_threadgroup",
    "threadgroup_position_in_grid", "threadgroups_per_grid", "threads_per_grid",
    "threads_per_simdgroup", "threads_per_threadgroup",
})


def self_init_hint(name: str) -> str:
    """The hint for a read of a variable within its own initializer (clang's warning)."""
    return (f"variable '{name}' is uninitialized when used within its own initialization: "
            f"its scope begins before its initializer, so this '{name}' is not the outer "
            f"one; rename one of them")


# What the step limit counts: expression nodes evaluated, a memory access (`p[i]`, `*p`,
# `p->x`) as MEMORY_ACCESS_WORK of them, about what it costs next to arithmetic. Statements that
# contain blocks count only their own expressions (a loop's per iteration); the statements of
# a block count themselves when they run.
MEMORY_ACCESS_WORK = 4
EXPRESSION_NODES = (ast.IntLiteral, ast.FloatLiteral, ast.BoolLiteral, ast.NullptrLiteral,
                    ast.Name, ast.Unary,
                    ast.Postfix, ast.Binary, ast.Assign, ast.Conditional, ast.Call,
                    ast.MethodCall, ast.Construct, ast.Cast, ast.Index, ast.Member, ast.This,
                    ast.SizeOf, ast.InitList)
STEPPING_STATEMENTS = (ast.Compound, ast.For, ast.While, ast.DoWhile, ast.Switch)


def work(node: ast.Node) -> int:
    """The expression nodes one execution of the statement `node` evaluates (at least 1)."""
    if isinstance(node, ast.Compound):
        return 1  # its statements count themselves
    once = node.init if isinstance(node, ast.For) else None  # before the first iteration
    count = 0
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Index) or (isinstance(n, ast.Unary) and n.op == "*") or (
                isinstance(n, ast.Member) and n.arrow):
            count += MEMORY_ACCESS_WORK
        else:
            count += isinstance(n, EXPRESSION_NODES)
        for value in vars(n).values():
            if isinstance(value, ast.Node):
                if value is not once and not isinstance(value, STEPPING_STATEMENTS):
                    stack.append(value)
            elif isinstance(value, list):
                stack.extend(child for child in value if isinstance(child, ast.Node)
                             and not isinstance(child, STEPPING_STATEMENTS))
    return max(count, 1)


class StatementCompiler:
    """Statement methods of `Compiler` (which supplies `error`, `expr`, `convert`, ...)."""

    # --- statements -------------------------------------------------------------------------
    def stmt(self, node: ast.Node, scope: Scope) -> Run:
        method = getattr(self, "s_" + type(node).__name__, None)
        if method is None:
            if isinstance(node, ast.CaseLabel):
                self.error("'case' label not within a switch statement", node)
            self.error("unsupported statement", node)
        return method(node, scope)

    def block(self, node: ast.Node, scope: Scope, new_scope: bool = True) -> Run:
        if not isinstance(node, ast.Compound):
            return self.fresh_flow(self.stmt(node, Scope({}, scope)))
        inner = Scope({}, scope) if new_scope else scope
        for k, item in enumerate(node.items):
            if (isinstance(item, ast.If) and item.otherwise is None and not item.constexpr
                    and _jumps_out(item.then)):
                self.note_guard(item.cond, node.items[k + 1:])   # `if (i >= n) return;`
        runs = [(self.stmt(item, inner), item.coord, work(item)) for item in node.items
                if not isinstance(item, ast.Empty) or isinstance(item, ast.StructDeclaration)]

        if self.tracing:
            def run_traced(f, lanes):
                m = f.m
                for r, coord, weight in runs:
                    if lanes.n == 0:
                        break
                    m.step(lanes, coord, weight)
                    m.begin_statement()
                    lanes = r(f, lanes)
                return lanes
            return run_traced

        def run(f, lanes):
            step = f.m.step
            for r, coord, weight in runs:
                if lanes.n == 0:
                    break
                step(lanes, coord, weight)
                lanes = r(f, lanes)
            return lanes
        return run

    def note_guard(self, cond: ast.Node, guarded: list[ast.Node]) -> None:
        """Remember that the code of `guarded` runs only where the test `cond` let it (a
        bounds check, when `cond` compares), so that an access there that still goes out of
        bounds says its index, not a missing check, is at fault."""
        if _compares(cond):
            self.guarded.update(dict.fromkeys(_coords(guarded), cond.coord))

    def fresh_flow(self, run: Run) -> Run:
        """Trace mode: `run` (a statement, or a loop's step) starts with no provenance, so
        that what the statements before it read does not flow into what it computes."""
        if not self.tracing:
            return run

        def run_fresh(f, lanes):
            f.m.begin_statement()
            return run(f, lanes)
        return run_fresh

    def s_Compound(self, node: ast.Compound, scope: Scope) -> Run:
        return self.block(node, scope)

    def s_Empty(self, node, scope) -> Run:
        return lambda f, lanes: lanes

    def s_ExprStmt(self, node: ast.ExprStmt, scope: Scope) -> Run:
        ev = self.expr(node.expr, scope).ev

        def run(f, lanes):
            ev(f, lanes)
            return lanes
        return run

    def s_TypeAlias(self, node: ast.TypeAlias, scope: Scope) -> Run:
        if node.template_params:
            self.error("alias templates must be declared at program scope", node)
        if isinstance(node.type, ast.StructDef):
            scope.names[node.name] = self.define_struct(node.type, scope)
        else:
            self.declare_alias(node, scope)
        return lambda f, lanes: lanes

    def s_UsingNamespace(self, node: ast.UsingNamespace, scope: Scope) -> Run:
        return lambda f, lanes: lanes

    def s_StaticAssert(self, node: ast.StaticAssert, scope: Scope) -> Run:
        self.static_assert(node, scope)
        return lambda f, lanes: lanes

    def s_DeclStmt(self, node: ast.DeclStmt, scope: Scope) -> Run:
        runs = [self.declare_local(d, scope) for d in node.decls]
        if len(runs) == 1:
            return runs[0]

        def run(f, lanes):
            for r in runs:
                lanes = r(f, lanes)
            return lanes
        return run

    def declare_local(self, d: ast.VarDecl, scope: Scope) -> Run:
        """A local variable. Its name is in scope from the end of its declarator, before its
        initializer ([basic.scope.pdecl]): `Node c = {4, &c};` takes its own address,
        `int a = a + 1;` reads its own indeterminate value, not an outer `a`."""
        if d.name in scope.names:
            self.error(f"redefinition of '{d.name}'", d, width=len(d.name),
                       hint="a kernel parameter of this name already exists (MLX adds one for "
                            "every attribute the source mentions)" if d.name in ATTRIBUTE_NAMES
                       else "")
        t, const, space = self.resolve_decl_type(d.type, scope)
        if d.static and not (d.constexpr or space == "constant"):
            self.error("static local variables are not allowed in Metal", d, width=len(d.name),
                       hint="drop 'static' for a per-thread variable; a table shared by all "
                            "threads is 'constant' (or 'constexpr')")
        deduced = t is None or isinstance(t, PointerType) and t.pointee is None
        init = None
        if d.init is not None and not isinstance(d.init, ast.InitList) and (
                deduced or isinstance(d.type, ast.ReferenceType)):
            # the type, or what a reference binds to, is not known before the initializer
            init = self.unusable_in_own_initializer(d, t, scope)
        if t is None:
            if init is None:
                self.error("declaration with 'auto' needs an initializer", d)
            t = self.rvalue(init).type
        if isinstance(t, PointerType) and t.pointee is None:  # `const device auto* p = a;`
            source = self.rvalue(init).type if init is not None else None
            if not isinstance(source, PointerType):
                self.error(f"cannot deduce 'auto*' from '{source}'" if source else
                           "'auto*' needs an initializer",
                           d, hint="initialize it with a pointer, or write the pointee type")
            t = PointerType(source.pointee, t.space, t.const)
        if isinstance(t, ArrayType) and t.length < 0:
            if not isinstance(d.init, ast.InitList):
                self.error("an array without a size needs an initializer list", d)
            t = ArrayType(t.elem, len(d.init.items))
        if isinstance(d.type, ast.ReferenceType):
            return self.declare_reference(d, t, const, init, scope)
        if isinstance(t, ArrayType) and ty.array_shape(t)[1] == ty.NULLPTR_T:
            self.error("arrays of 'std::nullptr_t' are not supported by metalsim", d,
                       hint="use an array of pointers, set to nullptr")
        self.require_complete(t, d, "variable has incomplete type '{}'")
        if space == "threadgroup":
            return self.declare_threadgroup(d, t, scope)
        if holds_atomic(t) and space not in ("device", "constant"):
            self.error("atomic variables must live in device or threadgroup memory", d)
        if self.has_constructors(t):
            return self.declare_constructed(d, t, const, scope)
        if space in ("device", "constant"):
            self.error(f"variables in the {space} address space must be declared at program "
                       f"scope", d)
        if isinstance(t, ArrayType | StructType) or d.name in self.address_taken:
            return self.declare_thread_memory(d, t, const, scope)
        # Only an initializer that names the variable can read it before it holds a value:
        # such a variable alone keeps a "written" mask although it has an initializer.
        own = d.init is not None and mentions(d.init, d.name)
        slot = self.new_slot()
        init_slot = self.new_slot() if d.init is None or own else -1
        if isinstance(t, PointerType | ty.NullptrType):   # (`auto n = nullptr;`)
            scope.names[d.name] = Var("ptr", t, slot, readonly=const)
        else:
            scope.names[d.name] = Var("value", t, slot, readonly=const, init_slot=init_slot,
                                      name=d.name, read_hint=self_init_hint(d.name) if own
                                      else "")
        if init is None and d.init is not None:
            init = self.scalar_initializer(d, t, scope)
        value = self.convert(init, t, d.init) if init is not None else None
        if (const or d.constexpr) and value is not None and value.const is not None:
            scope.names[d.name] = Var("const", t, readonly=True, const=value.const)
            return lambda f, lanes: lanes
        if d.constexpr:
            self.error(f"constexpr variable '{d.name}' must be initialized by a constant "
                       f"expression", d)
        vev = value.ev if value is not None else None
        if isinstance(t, PointerType | ty.NullptrType):
            def run_ptr(f, lanes):
                s = f.vars[slot]
                if s is None:
                    s = f.vars[slot] = PtrSlot(None, f.m.batch.size)
                elif own:   # a new object: not the one an earlier iteration left
                    s.set(lanes, Ptr(UNSET, np.zeros(lanes.n, np.int64)))
                if vev is not None:
                    s.set(lanes, vev(f, lanes))
                return lanes
            return run_ptr
        if not (ty.is_arithmetic(t) or isinstance(t, ty.SimdMatrixType)):
            self.error(f"cannot declare a variable of type '{t}'", d)
        shape = ty.lane_shape(t)
        dtype = ty.scalar_of(t).dtype
        tracing = self.tracing

        def run_value(f, lanes):
            arr = f.vars[slot]
            if arr is None:
                arr = f.vars[slot] = np.zeros((f.m.batch.size,) + shape, dtype)
            if init_slot >= 0:
                if f.vars[init_slot] is None:
                    # per component of a vector: `v.x = 1;` leaves `v.y` indeterminate
                    f.vars[init_slot] = np.zeros((f.m.batch.size,) + shape[:1], bool)
                f.vars[init_slot][lanes.idx] = False  # a fresh, indeterminate object
            if vev is not None:
                arr[lanes.idx] = vev(f, lanes)
                if init_slot >= 0:
                    f.vars[init_slot][lanes.idx] = True
                if tracing:
                    record_sources(f, lanes, VarLoc(arr, sources=f.sources.setdefault(slot, {})))
            return lanes
        return run_value

    def scalar_initializer(self, d: ast.VarDecl, t: Type, scope: Scope) -> E:
        """The initializer of a variable of scalar, vector or pointer type `t`: an expression,
        or braces holding one (a vector's: its components)."""
        if not isinstance(d.init, ast.InitList):
            return self.expr(d.init, scope)
        items = d.init.items
        if isinstance(t, VectorType):
            return self.construct_vector(t, [self.rvalue(self.expr(i, scope)) for i in items],
                                         d.init)
        if len(items) > 1:
            self.error("excess elements in scalar initializer", items[1])
        return self.expr(items[0], scope) if items else constant(0, t, d.coord)

    def unusable_in_own_initializer(self, d: ast.VarDecl, t: Type | None, scope: Scope) -> E:
        """Compile the initializer of a variable whose type is deduced from it, or of a
        reference, with the name in scope but refused: clang's errors (and, for a reference,
        its warning: binding a reference to itself is undefined)."""
        if t is None or isinstance(t, PointerType):
            written = "auto" if t is None else "auto*"
            why = (f"variable '{d.name}' declared with deduced type '{written}' cannot appear "
                   f"in its own initializer")
        else:
            why = (f"reference '{d.name}' is not yet bound to a value when used within its own "
                   f"initialization")
        scope.names[d.name] = Var("unusable", ty.VOID, name=why)
        try:
            return self.expr(d.init, scope)
        finally:
            del scope.names[d.name]

    def declare_reference(self, d, t, const, init, scope) -> Run:
        if init is None:
            self.error(f"reference '{d.name}' must be initialized", d)
        if isinstance(t, StructType) and init.loc is not None and init.type != t:
            init = self.as_base(init, t, d.init.coord) or init   # `const B& r = derived;`
        if init.loc is None and isinstance(t, StructType) and const:
            # A const reference to a temporary struct names a const copy of it.
            return self.declare_thread_memory(d, t, True, scope)
        slot = self.new_slot()
        if init.loc is None or init.type != t:
            if not const:
                self.error(f"non-const reference '{d.name}' cannot bind to a temporary of type "
                           f"'{self.rvalue(init).type}'", d.init)
            scope.names[d.name] = Var("value", t, slot, readonly=True)
            vev = self.convert(init, t, d.init).ev
            shape = ty.lane_shape(t)

            def run_temp(f, lanes):
                if f.vars[slot] is None:
                    f.vars[slot] = np.zeros((f.m.batch.size,) + shape, ty.scalar_of(t).dtype)
                f.vars[slot][lanes.idx] = vev(f, lanes)
                return lanes
            return run_temp
        if init.readonly and not const:
            self.error("binding a non-const reference to a const object", d.init)
        scope.names[d.name] = Var("ref", t, slot, readonly=const or init.readonly,
                                  space=init.space)
        loc = init.loc

        def run(f, lanes):
            f.vars[slot] = bind_argument("ref", None, loc(f, lanes), lanes, f.m.batch.size)
            return lanes
        return run

    def declare_threadgroup(self, d: ast.VarDecl, t: Type, scope: Scope) -> Run:
        if d.init is not None:
            self.error("threadgroup variables cannot have an initializer", d.init,
                       hint="have one thread write the initial value, then call "
                            "threadgroup_barrier")
        if self.has_constructors(t):
            self.error(f"threadgroup variable '{d.name}' of type '{t}' needs a constructor "
                       f"that can construct threadgroup memory", d, width=len(d.name),
                       hint="a Metal constructor constructs a thread object unless marked "
                            "'threadgroup', and metalsim does not run those: use a struct "
                            "without constructors, have one thread initialize it, then call "
                            "threadgroup_barrier")
        slot = self.new_slot()
        decl_id = self.decl_ids = self.decl_ids + 1
        self.fn.threadgroup_bytes += t.size
        self.fn.threadgroup_granules += -(-t.size // mem.leaf_scalar(t).size)
        scope.names[d.name] = Var("region", t, slot, space="threadgroup")
        name = d.name

        def run(f, lanes):
            m = f.m
            region = m.tg_regions.get(decl_id)
            if region is None:
                region = m.tg_regions[decl_id] = mem.Region(
                    name, "threadgroup", t, t.size, m.batch.tg_count, counted="threadgroup",
                    track_races=True, track_init=True)
                dims, elem = ty.array_shape(t)
                m.buffers.setdefault(name, {"role": "threadgroup", "space": "threadgroup",
                                            "shape": dims, "type": str(elem)})
            f.vars[slot] = region
            return lanes
        return run

    def declare_thread_memory(self, d: ast.VarDecl, t: Type, const: bool, scope: Scope,
                              init_scope: Scope | None = None) -> Run:
        """A variable in thread memory; its initializer sees it (or, given, `init_scope`)."""
        slot = self.new_slot()
        self.fn.thread_bytes += t.size
        if t.size > self.fn.largest_thread_object[1]:
            self.fn.largest_thread_object = (d.name, t.size)
        scope.names[d.name] = Var("region", t, slot, readonly=const, space="thread")
        stores = []
        if d.init is not None:
            aggregate = isinstance(t, ArrayType) or isinstance(d.init, ast.InitList)
            leaves = self.flatten_init(t, d.init, 0, scope) if aggregate else [(0, t, d.init)]
            for off, et, item in leaves:
                store = (store_struct if isinstance(et, StructType) else store_pointer
                         if isinstance(et, PointerType) else mem.store)
                stores.append((store, off, et, self.convert(self.expr(item, init_scope or scope),
                                                            et, item).ev, item.coord))
        name = d.name
        own = d.init is not None and init_scope is None and mentions(d.init, name)
        hint = self_init_hint(name) if own else ""

        def run(f, lanes):
            m = f.m
            region = f.vars[slot]
            if region is None:
                region = f.vars[slot] = thread_region(name, t, m.batch.size)
                region.init_hint = hint
            elif own:   # a new object: not the one an earlier iteration left
                region.forget_init(lanes.idx)
            for store, off, et, ev, coord in stores:
                store(m, region, lanes.idx, lanes.n, np.asarray(off, np.int64), et,
                      ev(f, lanes), coord)
            return lanes
        return run

    def s_If(self, node: ast.If, scope: Scope) -> Run:
        cond = self.condition(self.expr(node.cond, scope), node.cond)
        if node.constexpr:
            if cond.const is None:
                self.error("'if constexpr' condition is not a constant expression", node.cond)
            chosen = node.then if bool(cond.const) else node.otherwise
            return self.block(chosen, scope) if chosen is not None else (lambda f, lanes: lanes)
        self.note_guard(node.cond, [node.then])
        then = self.block(node.then, scope)
        other = self.block(node.otherwise, scope) if node.otherwise is not None else None
        cev = cond.ev

        def run(f, lanes):
            yes, no = lanes.split(np.asarray(cev(f, lanes)))
            parts = []
            if yes.n:
                parts.append(then(f, yes))
            if no.n:
                parts.append(other(f, no) if other is not None else no)
            return union(f.m.batch.size, parts)
        return run

    def loop(self, cond: E | None, body: Run, step: Ev | None, coord: Coord,
             test_first: bool, never_ends: tuple[str, str] | None = None,
             node: ast.Node | None = None) -> Run:
        """A loop; `never_ends` (why, and a hint) says it cannot end (see `never_ending`):
        the lanes that reach it stop the launch at once instead of spinning to the step
        limit. Each iteration counts the work of the loop statement `node` itself."""
        cev = cond.ev if cond is not None else None
        weight = work(node) if node is not None else 1
        # without a `break` or `continue` in the body, no lists to collect their lanes
        jumps = node is None or _jumps(node.body)

        def run(f, lanes):
            m = f.m
            size = m.batch.size
            active, exited = lanes, []
            first = True
            if never_ends and active.n:
                raise StepLimitExceeded(coord, active.indices(), *never_ends)
            while active.n:
                m.step(active, coord, weight)
                if cev is not None and (test_first or not first):
                    active, done = active.split(np.asarray(cev(f, active)))
                    exited.append(done)
                    if not active.n:
                        break
                first = False
                if not jumps:
                    active = body(f, active)
                else:
                    breaks, conts = [], []
                    f.breaks.append(breaks)
                    f.conts.append(conts)
                    try:
                        after = body(f, active)
                    finally:
                        f.breaks.pop()
                        f.conts.pop()
                    exited.extend(breaks)
                    active = union(size, [after] + conts)
                if step is not None and active.n:
                    step(f, active)
            return union(size, exited)
        return run

    def s_For(self, node: ast.For, scope: Scope) -> Run:
        inner = Scope({}, scope)
        counter = self.uniform_counter(node, inner)   # (init, step), or None
        if counter is None:
            init = self.stmt(node.init, inner) if node.init is not None else None
        cond = self.condition(self.expr(node.cond, inner), node.cond) if node.cond else None
        if counter is None:
            step = (self.fresh_flow(self.expr(node.step, inner).ev) if node.step is not None
                    else None)
        else:
            init, step = counter
        self.loop_depth += 1
        body = self.block(node.body, inner)
        self.loop_depth -= 1
        loop = self.loop(cond, body, step, node.coord, True,
                         self.never_ending(node.cond, cond, node.body, inner), node)
        if init is None:
            return loop
        return lambda f, lanes: loop(f, init(f, lanes))

    def uniform_counter(self, node: ast.For, scope: Scope) -> tuple[Run, Ev] | None:
        """The counter of `for (T k = start; ...; ++k)` (or `--k`, `k++`, `k--`, `k += c`,
        `k -= c`), declared in `scope` as one value for all lanes, with its initialisation and
        step; None for any other loop. It applies where the start and the step are constants
        of an integer type and the loop only reads the counter (`uses.only_read`): every lane
        that runs an iteration then holds the same count, whatever the condition and any
        `break` or `continue` leave of the active lanes, and one value replaces an array of
        them in every operation that uses it."""
        if (self.tracing or not isinstance(node.init, ast.DeclStmt)
                or len(node.init.decls) != 1):
            return None
        d, step = node.init.decls[0], node.step
        target = step.target if isinstance(step, ast.Assign) else getattr(step, "operand", None)
        if not (isinstance(target, ast.Name) and target.name == d.name and target.unqualified):
            return None
        if isinstance(step, ast.Assign) and step.op in ("+=", "-="):
            op, amount = step.op[0], step.value
        elif isinstance(step, ast.Unary | ast.Postfix) and step.op in ("++", "--"):
            op, amount = step.op[0], ast.IntLiteral(step.coord, 1, text="1")
        else:
            return None
        if (not isinstance(d.type, ast.NamedType) or d.init is None or d.static
                or isinstance(d.init, ast.InitList) or d.name in self.address_taken
                or mentions(d.init, d.name) or mentions(amount, d.name)
                or not only_read(d.name, [node.cond, node.body],
                                 lambda name: self.names_builtin(name, scope),
                                 self.fn is None or self.fn.returns_ref is None)):
            return None
        t, const, space = self.resolve_decl_type(d.type, scope)
        if not (isinstance(t, ty.ScalarType) and t.kind == "int" and t.enum is None) or (
                const or space not in (None, "thread")):   # (an enumeration's `++` is a call)
            return None
        start, by = self.expr(d.init, scope), self.expr(amount, scope)
        if start.const is None or by.const is None or not ty.is_arithmetic(start.type):
            return None
        first = self.convert(start, t, d.init).const
        slot = self.new_slot()
        current = E(t, lambda f, lanes: f.vars[slot], step.coord)
        after = self.convert(self.binary(op, current, by, step, (d, amount)), t, step,
                             explicit=True).ev
        scope.names[d.name] = Var("uniform", t, slot, readonly=True, name=d.name)

        def init(f, lanes):
            f.vars[slot] = first
            return lanes

        def advance(f, lanes):
            f.vars[slot] = after(f, lanes)
        return init, advance

    def names_builtin(self, name: ast.Name, scope: Scope) -> bool:
        """Whether a call of `name` in `scope` calls a built-in function (none takes a
        reference to a variable of integer type)."""
        return (name.unqualified and name.name not in self.functions
                and scope.lookup(name.name) is None
                and (("call", name.name) in self.builtins or name.name in mathlib.FUNCTIONS))

    def s_While(self, node: ast.While, scope: Scope) -> Run:
        cond = self.condition(self.expr(node.cond, scope), node.cond)
        self.loop_depth += 1
        body = self.block(node.body, scope)
        self.loop_depth -= 1
        return self.loop(cond, body, None, node.coord, True,
                         self.never_ending(node.cond, cond, node.body, scope), node)

    def s_DoWhile(self, node: ast.DoWhile, scope: Scope) -> Run:
        self.loop_depth += 1
        body = self.block(node.body, scope)
        self.loop_depth -= 1
        cond = self.condition(self.expr(node.cond, scope), node.cond)
        return self.loop(cond, body, None, node.coord, False,
                         self.never_ending(node.cond, cond, node.body, scope), node)

    def never_ending(self, cond_node: ast.Node | None, cond: E | None, body: ast.Node,
                     scope: Scope) -> tuple[str, str] | None:
        """Why a loop can never end, and a hint, if nothing in `body` leaves it (`break`,
        `return`) and its condition is never false: there is none, it is a true constant, or
        it compares an unsigned value `>= 0` (always true, as clang warns)."""
        if _leaves(body, nested=False):
            return None
        hint = "give the loop a condition that becomes false, or a 'break'"
        if cond is None:
            return "it has no condition", hint
        if cond.const is not None:
            return ("its condition is always true", hint) if np.all(cond.const) else None
        if isinstance(cond_node, ast.Binary) and cond_node.op in (">=", "<="):
            value, zero = ((cond_node.left, cond_node.right) if cond_node.op == ">="
                           else (cond_node.right, cond_node.left))
            if isinstance(zero, ast.IntLiteral) and zero.value == 0:
                t = self.expr(value, scope).type
                if isinstance(t, ty.ScalarType) and t.kind == "int" and not t.signed:
                    what = f"'{value.name}'" if isinstance(value, ast.Name) else "the value"
                    return (f"its condition is always true, since {what} is a '{t}' and never "
                            "below 0", "an unsigned counter wraps from 0 to its largest value "
                            "instead of going negative: count with an int, or stop at '> 0'")
        return None

    def s_Break(self, node, scope) -> Run:
        if self.loop_depth == 0 and self.switch_depth == 0:
            self.error("'break' statement not in loop or switch statement", node)

        def run(f, lanes):
            f.breaks[-1].append(lanes)
            return EMPTY
        return run

    def s_Continue(self, node, scope) -> Run:
        if self.loop_depth == 0:
            self.error("'continue' statement not in loop statement", node)

        def run(f, lanes):
            f.conts[-1].append(lanes)
            return EMPTY
        return run

    def deduce_return(self, node: ast.Return, scope: Scope) -> None:
        """The return type of an `auto` function, from `node` (C++ [dcl.spec.auto])."""
        if isinstance(node.value, ast.InitList):
            self.error("cannot deduce return type from initializer list", node.value)
        t = ty.VOID if node.value is None else self.rvalue(self.expr(node.value, scope)).type
        if self.fn.return_type is None:
            self.fn.return_type = t
        elif self.fn.return_type != t:
            self.error(f"'auto' in return type deduced as '{t}' here but deduced as "
                       f"'{self.fn.return_type}' in earlier return statement", node)

    def s_Return(self, node: ast.Return, scope: Scope) -> Run:
        if self.fn.returns_ref is not None:
            return self.return_reference(node, scope)
        if self.fn.auto_return:  # every return statement deduces the same type
            self.deduce_return(node, scope)
        rt = self.fn.return_type
        effect = None   # `return f();` of a void f in a void function: f runs, nothing returns
        if node.value is None:
            if rt != ty.VOID:
                self.error(f"non-void function '{self.fn.name}' should return a value", node)
            vev = None
        elif rt == ty.VOID:
            value = None if isinstance(node.value, ast.InitList) else self.expr(node.value, scope)
            if value is None or value.type != ty.VOID:
                self.error(f"void function '{self.fn.name}' should not return a value", node)
            effect, vev = value.ev, None
        else:
            value = (self.braced_value(rt, node.value, scope)
                     if isinstance(node.value, ast.InitList) else self.expr(node.value, scope))
            self.refuse_returned_closure(value, node.value)
            vev = self.convert(value, rt, node.value).ev
        shape = ty.lane_shape(rt)

        def run(f, lanes):
            m = f.m
            if effect is not None:
                effect(f, lanes)
            if vev is not None:
                v = vev(f, lanes)
                if m.trace is not None:
                    traced = m.traced_of(lanes)
                    f.ret_sources.update(zip(traced.tolist(), m.sources(traced)))
                if isinstance(rt, PointerType | ty.NullptrType):
                    if f.ret is None:
                        f.ret = PtrSlot(None, m.batch.size)
                    f.ret.set(lanes, v)
                else:
                    if f.ret is None:
                        f.ret = np.zeros((m.batch.size,) + shape, ty.scalar_of(rt).dtype)
                    f.ret[lanes.idx] = v
            if f.is_kernel:
                m.alive[lanes.idx] = False
            return EMPTY
        return run

    def s_Switch(self, node: ast.Switch, scope: Scope) -> Run:
        value = self.rvalue(self.expr(node.expr, scope))
        if not ty.is_integer(value.type) or isinstance(value.type, VectorType):
            self.error(f"statement requires expression of integer type ('{value.type}' "
                       f"invalid)", node.expr)
        # An `enum class` condition is not promoted: its case labels are of its own type.
        vt = value.type if getattr(value.type, "scoped_enum", False) else ty.promote(value.type)
        value = self.convert(value, vt, node.expr)
        inner = Scope({}, scope)
        items: list = []
        seen: set = set()
        self.switch_depth += 1
        for item in node.body.items:
            if isinstance(item, ast.CaseLabel):
                if item.value is None:
                    key = None
                else:
                    c = self.convert(self.expr(item.value, inner), vt, item.value).const
                    if c is None:
                        self.error("case value is not a constant expression", item.value)
                    key = int(c)
                if key in seen:
                    self.error("duplicate case value" if key is not None
                               else "multiple default labels in one switch", item)
                seen.add(key)
                items.append(("label", key))
            else:
                items.append(("stmt", self.stmt(item, inner), item.coord))
        self.switch_depth -= 1
        keys = [k for k in seen if k is not None]
        has_default = None in seen
        vev = checked_condition(value.ev, node.expr.coord) if self.tracing else value.ev

        def run(f, lanes):
            m = f.m
            v = np.broadcast_to(np.asarray(vev(f, lanes)), (lanes.n,))
            breaks: list = []
            f.breaks.append(breaks)
            running = EMPTY
            try:
                for item in items:
                    if item[0] == "label":
                        key = item[1]
                        mask = (~np.isin(v, keys)) if key is None else (v == key)
                        running = union(m.batch.size, [running, lanes.select(mask)])
                    elif running.n:
                        m.step(running, item[2])
                        running = item[1](f, running)
            finally:
                f.breaks.pop()
            unmatched = [] if has_default else [lanes.select(~np.isin(v, keys))]
            return union(m.batch.size, [running] + breaks + unmatched)
        return run


_NESTED_BREAK_TARGETS = (ast.For, ast.While, ast.DoWhile, ast.Switch)
COMPARISONS = frozenset({"<", "<=", ">", ">="})


def _compares(cond: ast.Node) -> bool:
    """Whether a condition is a comparison, or comparisons joined by `&&` or `||` (at least
    one): what a bounds check looks like."""
    if not isinstance(cond, ast.Binary):
        return False
    if cond.op in COMPARISONS:
        return True
    return cond.op in ("&&", "||") and (_compares(cond.left) or _compares(cond.right))


def _jumps_out(stmt: ast.Node) -> bool:
    """Whether a statement always leaves what follows it: `return`, `continue` or `break`,
    alone or closing a block."""
    if isinstance(stmt, ast.Compound):
        return any(_jumps_out(item) for item in stmt.items)
    return isinstance(stmt, ast.Return | ast.Continue | ast.Break)


def _coords(nodes: list[ast.Node]) -> set[Coord]:
    """The coordinates of every node in `nodes` and below (iteratively: code nests deeply)."""
    found: set[Coord] = set()
    stack: list[object] = list(nodes)
    while stack:
        x = stack.pop()
        if isinstance(x, list | tuple):
            stack.extend(x)
        elif isinstance(x, ast.Node):
            if x.coord is not None:
                found.add(x.coord)
            stack.extend(vars(x).values())
    return found


def _jumps(node: object) -> bool:
    """Whether a `break` or `continue` is anywhere in `node` (a loop body), nested or not."""
    if isinstance(node, ast.Break | ast.Continue):
        return True
    if isinstance(node, list | tuple):
        return any(_jumps(item) for item in node)
    if isinstance(node, ast.Node):
        return any(_jumps(value) for value in vars(node).values())
    return False


def _leaves(node: object, nested: bool) -> bool:
    """Whether a statement can leave the loop whose body it is: a `return` anywhere, or a
    `break` not inside a nested loop or switch (expressions hold no statements)."""
    if isinstance(node, ast.Return):
        return True
    if isinstance(node, ast.Break):
        return not nested
    if isinstance(node, list):
        return any(_leaves(item, nested) for item in node)
    if not isinstance(node, (ast.Compound, ast.If, *_NESTED_BREAK_TARGETS)):
        return False
    nested = nested or isinstance(node, _NESTED_BREAK_TARGETS)
    return any(_leaves(getattr(node, name), nested) for name in ("items", "then", "otherwise",
                                                                   "body") if hasattr(node, name))
