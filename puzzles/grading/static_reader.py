"""Reading the kernels of a notebook without running it: a small evaluator of a safe, bounded
subset of Python over `ast`.

Cells are read in notebook order. What the evaluator understands: string, number, bool and
None literals (implicit concatenation included); `+`, `*` and `+=` on them; f-strings whose
parts are constants; `textwrap.dedent`, `.strip()`/`.lstrip()`/`.rstrip()`, `.format(...)`,
`.replace(...)`, `.join(...)`, `.upper()`/`.lower()`; lists and tuples, changed in place by
`.append`/`.insert`/`.extend` and `+=` (shared by every name bound to them, as in Python);
names assigned earlier, in any earlier cell; `global` and `nonlocal` in functions; `if`/`else`
(the branch taken when the condition is a constant, otherwise both, which must agree or the
name is "ambiguous"); functions defined with `def` or `lambda` (called with what is known of
their arguments; default values bound at definition); `MetalKernel(...)` with any of its
arguments (positional or keyword), whatever name `MetalKernel` was imported under; and
`MetalProblem(title, fn, ...)`, whose kernel is what `fn` returns at the problem's
`.check()` (as `check()` calls it then), or at the end of the notebook if it is never checked.

Nothing is ever executed, and every value is bounded: strings, lists, integers, nesting,
calls and the total of characters built, so no notebook can make the reader allocate much or
loop long. Whatever falls outside the subset becomes an `Unknown` value carrying the line and
the reason; using it for a kernel argument gives a clear "could not read this statically"
message, never a wrong verdict. A list that code the reader does not follow may have changed
(a loop, an unknown call, `.pop()`, an item assignment, an undecidable `if`) is "tainted":
reading it later is unreadable too, never its stale value. A function is read once when it is
defined (to find kernels built by name outside any problem) without any effect on the
notebook's state.
"""

from __future__ import annotations

import ast
import string
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field

MAX_STRING = 1 << 20        # characters in any string built
MAX_ITEMS = 256             # items of any list or tuple
MAX_INT_BITS = 64           # integers stay within 64 bits
MAX_DEPTH = 64              # nesting of expressions and calls evaluated
MAX_WORK = 64 << 20         # characters built in all, per notebook
MAX_FORMAT_WIDTH = 10_000   # widths and precisions inside format specs
MAX_STEPS = 100_000         # statements and expressions evaluated, per notebook (calls included)

# `MetalKernel`'s fields in their order, as Metal-Puzzles and utils.py declare them (the header
# comes before the source).
KERNEL_PARAMETERS = ("name", "input_names", "output_names", "header", "source",
                     "ensure_row_contiguous", "atomic_outputs")
STRIP_METHODS = ("strip", "lstrip", "rstrip")


class Unreadable(Exception):
    """Something the reader does not evaluate; `line` is where (in the cell)."""

    def __init__(self, message: str, line: int | None, ambiguous: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.ambiguous = ambiguous

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}" if self.line else self.message


class OutOfSteps(Unreadable):
    """The notebook needs more evaluation steps, or builds more characters, than the reader
    allows: reading stops, and the message names the grader's limit."""


class _DryRun(Unreadable):
    """A function read at its definition would change the notebook's state: stop reading it
    (its effects happen when it is really called)."""

    def __init__(self) -> None:
        super().__init__("the function changes state outside itself", None)


@dataclass(frozen=True)
class Unknown:
    """A name bound to something the reader could not evaluate, and why."""

    reason: str
    line: int | None
    ambiguous: bool = False


@dataclass(frozen=True)
class Builtin:
    """A callable the reader knows: "MetalKernel", "MetalProblem", "dedent", or a module."""

    name: str


@dataclass(frozen=True)
class Function:
    """A function defined in the notebook (`def` or `lambda`), with the scope it closes over."""

    node: ast.FunctionDef | ast.Lambda = field(compare=False)
    scope: Scope = field(compare=False)
    line: int
    defaults: tuple[object, ...] = field(default=(), compare=False)
    kw_defaults: tuple[tuple[str, object], ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class KernelCall:
    """The arguments of one `MetalKernel(...)` call, as read."""

    name: str
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    source: str
    header: str = ""
    ensure_row_contiguous: bool = True
    atomic_outputs: bool = False
    line: int = field(default=0, compare=False)


@dataclass(frozen=True)
class ProblemCall:
    """A `MetalProblem(title, fn, ...)` call: its title and what calling `fn` returns."""

    title: str
    kernel: KernelCall | Unreadable
    line: int


@dataclass(eq=False)
class Problem:
    """A `MetalProblem(title, fn, ...)` object: `check()` calls `fn` when it runs (not when
    the problem is built), so its kernel is read at the problem's `.check()` call, or at the
    end of the notebook if it is never checked."""

    title: str
    fn: object
    line: int
    cell: int
    checked: bool = False
    read: ProblemCall | None = None  # its kernel as last read (at a check(), or the end)
    read_in: int = 0                 # the cell where it was read


class Scope:
    """Names bound in one function call (or the notebook's globals), looked up outwards;
    `declared` holds the names a `global` or `nonlocal` statement sends elsewhere."""

    def __init__(self, parent: Scope | None = None) -> None:
        self.names: dict[str, object] = {}
        self.parent = parent
        self.declared: dict[str, str] = {}

    def lookup(self, name: str) -> object | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        return None


# The names a notebook has without importing anything (the learner's own imports rebind them).
_PRELUDE = {"MetalKernel": Builtin("MetalKernel"), "MetalProblem": Builtin("MetalProblem")}
_MODULE_MEMBERS = {
    ("utils", "MetalKernel"): "MetalKernel", ("utils", "MetalProblem"): "MetalProblem",
    ("textwrap", "dedent"): "dedent",
}


@dataclass
class _Returned:
    value: object


class NotebookReader:
    """Reads cell after cell; `kernels` and `problems` collect what was built, in order, with
    the index of the cell (each entry is `(cell, KernelCall | Unreadable)`)."""

    def __init__(self) -> None:
        self.globals = Scope()
        self.globals.names.update(_PRELUDE)
        self.kernels: list[tuple[int, KernelCall | Unreadable, str | None]] = []
        self.problems: list[tuple[int, ProblemCall]] = []
        self.cell = 0
        self.work = 0
        self.depth = 0
        self.steps = 0
        self.collect = True
        self.exhausted: Unreadable | None = None
        self.built: list[Problem] = []
        self.tainted: dict[int, tuple[list, Unknown]] = {}
        self.dry = 0         # > 0 while a function is read at its definition, without effects
        self.fresh: dict[int, list] = {}   # lists made during that reading (free to change)
        self.branching = 0   # > 0 inside both branches of an `if` the reader cannot decide
        self._names: dict[ast.AST, tuple[str, ...]] = {}  # the names used in a node

    # --- statements ---------------------------------------------------------------------------

    def read_cell(self, index: int, tree: ast.Module) -> None:
        """Evaluate the statements of one (parsed) cell in the notebook's global scope."""
        if self.exhausted is not None:
            return
        self.cell = index
        self.collect = True
        try:
            self._block(tree.body, self.globals)
        except Unreadable as exc:
            self.exhausted = exc

    def finish(self) -> None:
        """After the last cell: problems never checked get the kernel their function returns
        with the notebook's final state (what a `check()` run then would use); `problems`
        lists every problem in the order they were built (the last one of a title wins)."""
        for problem in self.built:
            if not problem.checked and self.exhausted is None:
                try:
                    self._settle(problem, problem.cell)
                except OutOfSteps as exc:
                    self.exhausted = exc
        self.problems = [(p.read_in, p.read) for p in self.built if p.read is not None]

    def _block(self, body: list[ast.stmt], scope: Scope) -> _Returned | None:
        for stmt in body:
            returned = self._statement(stmt, scope)
            if returned is not None:
                return returned
        return None

    def _statement(self, stmt: ast.stmt, scope: Scope) -> _Returned | None:
        self._step(stmt)
        if isinstance(stmt, ast.Return):
            return _Returned(None if stmt.value is None else self._value(stmt.value, scope))
        if isinstance(stmt, ast.If):
            return self._if(stmt, scope)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._define(stmt, scope)
        elif isinstance(stmt, ast.Assign):
            value = self._value(stmt.value, scope)
            for target in stmt.targets:
                self._bind(target, value, scope, stmt.lineno)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self._bind(stmt.target, self._value(stmt.value, scope), scope, stmt.lineno)
        elif isinstance(stmt, ast.AugAssign):
            self._augmented(stmt, scope)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            self._import(stmt, scope)
        elif isinstance(stmt, ast.Expr):
            self._value(stmt.value, scope)
        elif isinstance(stmt, ast.Delete):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    self._store(scope, target.id, Unknown("it was deleted", stmt.lineno),
                                stmt.lineno)
                else:
                    self._taint_names(target, scope, "it is changed by a `del` the grader "
                                      "does not follow", stmt.lineno)
        elif isinstance(stmt, (ast.Global, ast.Nonlocal)):
            kind = "global" if isinstance(stmt, ast.Global) else "nonlocal"
            for name in stmt.names:
                scope.declared[name] = kind
        else:
            self._opaque(stmt, scope)
        return None

    def _opaque(self, stmt: ast.stmt, scope: Scope) -> None:
        """A statement the reader does not follow (a loop, `try`, `with`, a class, ...): every
        name it may bind becomes Unknown, and the kernels built inside are still collected."""
        kind = type(stmt).__name__.lower().replace("asyncfor", "for").replace("asyncwith", "with")
        reason = f"it is assigned inside a `{kind}` statement (line {stmt.lineno})"
        for node in ast.walk(stmt):
            names: list[str] = []
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                names = [node.id]
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names = [node.name]
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [(a.asname or a.name).split(".")[0] for a in node.names]
            for name in names:
                self._store(scope, name, Unknown(reason, stmt.lineno), stmt.lineno)
        self._taint_names(stmt, scope, f"it may be changed inside a `{kind}` statement (line "
                          f"{stmt.lineno}), which the grader does not follow", stmt.lineno)
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and self._callee(node.func, scope) in (
                    Builtin("MetalKernel"), Builtin("MetalProblem")):
                self._value(node, scope)

    def _if(self, stmt: ast.If, scope: Scope) -> _Returned | None:
        try:
            taken = bool(self._value(stmt.test, scope, strict=True))
        except Unreadable:
            taken = None
        if taken is not None:
            return self._block(stmt.body if taken else stmt.orelse, scope)
        branches = []
        self.branching += 1
        try:
            for body in (stmt.body, stmt.orelse):
                branch = Scope(scope.parent)
                branch.names = dict(scope.names)
                branch.declared = scope.declared
                branches.append((branch, self._block(body, branch)))
        finally:
            self.branching -= 1
        (yes, yes_returned), (no, no_returned) = branches
        where = f"the `if` on line {stmt.lineno}"
        if yes_returned is not None and no_returned is not None:
            return _Returned(_merge(yes_returned.value, no_returned.value, where, stmt.lineno))
        if yes_returned is not None or no_returned is not None:
            return _Returned(Unknown(f"it is returned in one branch of {where} only, whose "
                                     "condition the grader cannot evaluate", stmt.lineno, True))
        for name in set(yes.names) | set(no.names):
            missing = Unknown(f"it is assigned in one branch of {where} only", stmt.lineno, True)
            scope.names[name] = _merge(yes.names.get(name, missing), no.names.get(name, missing),
                                       where, stmt.lineno)
        return None

    # --- binding names, and what changes values in place ----------------------------------

    def _store(self, scope: Scope, name: str, value: object, line: int | None) -> None:
        """Bind `name` in `scope`, or where a `global`/`nonlocal` statement sends it."""
        kind = scope.declared.get(name)
        target = scope
        if kind == "global":
            target = self.globals
        elif kind == "nonlocal":
            target = scope.parent  # type: ignore[assignment]
            while target is not None and target is not self.globals and \
                    name not in target.names:
                target = target.parent  # type: ignore[assignment]
            if target is None or target is self.globals:
                raise Unreadable(f"`nonlocal {name}` names no enclosing function's variable",
                                 line)
        if target is not scope:
            if self.dry:
                raise _DryRun()
            if self.branching:
                value = Unknown(f"it is assigned (through `{kind}`) inside an `if` whose "
                                "condition the grader cannot evaluate", line, True)
        target.names[name] = value

    def _mutable(self, items: list, line: int | None) -> None:
        """Allow changing `items` in place, or say why the reader cannot follow it."""
        if self.dry and id(items) not in self.fresh:
            raise _DryRun()
        if self.branching:
            reason = Unknown("it is changed inside an `if` whose condition the grader cannot "
                             "evaluate", line, True)
            self.tainted[id(items)] = (items, reason)
            raise Unreadable(reason.reason, line, True)

    def _new_list(self, items: list) -> list:
        if self.dry:
            self.fresh[id(items)] = items
        return items

    def _taint_names(self, node: ast.AST, scope: Scope, reason: str | Callable[[], str],
                     line: int | None) -> None:
        """Mark every list reachable from the names in `node` as changed in a way the reader
        does not follow: reading it later is "unreadable", never a stale value. `reason` may
        be a function, called only if there is a list (this runs on every failed read)."""
        names = self._names.get(node)
        if names is None:
            names = self._names[node] = tuple(
                {n.id for n in ast.walk(node) if isinstance(n, ast.Name)})
        for name in names:
            value = scope.lookup(name)
            if isinstance(value, (list, tuple)):
                self._taint(value, Unknown(reason if isinstance(reason, str) else reason(),
                                           line), 0)

    def _taint(self, value: object, reason: Unknown, depth: int) -> None:
        if isinstance(value, (list, tuple)) and depth < MAX_DEPTH:
            if isinstance(value, list) and id(value) not in self.tainted:
                self.tainted[id(value)] = (value, reason)
            for item in value:
                self._taint(item, reason, depth + 1)

    def _untainted(self, value: object, line: int | None, depth: int = 0) -> object:
        """`value`, unless a list in it was changed in a way the reader does not follow."""
        if isinstance(value, (list, tuple)) and self.tainted and depth < MAX_DEPTH:
            if isinstance(value, list) and id(value) in self.tainted:
                reason = self.tainted[id(value)][1]
                raise Unreadable(f"a list it uses could not be read: {reason.reason}",
                                 reason.line or line, reason.ambiguous)
            for item in value:
                self._untainted(item, line, depth + 1)
        return value

    def _define(self, stmt: ast.FunctionDef | ast.AsyncFunctionDef, scope: Scope) -> None:
        function = self._function(stmt, scope, stmt.lineno)
        self._store(scope, stmt.name, function, stmt.lineno)
        if scope is self.globals and any(
                isinstance(node, ast.Call) for node in ast.walk(stmt)):
            # A kernel built in a function that no MetalProblem uses is still found by its
            # name. Reading it here must change nothing: a change of a global or of a list
            # made elsewhere stops this reading (_DryRun).
            self.dry += 1
            try:
                self._call_function(function, [], {}, stmt.lineno, collect_only=True)
            except OutOfSteps:
                raise
            except Unreadable:
                pass  # what it builds is collected; its return value does not matter here
            finally:
                self.dry -= 1
                if not self.dry:
                    self.fresh.clear()

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
                  scope: Scope, line: int) -> Function:
        """A function value; its default values are evaluated now, as Python does."""
        defaults = tuple(self._value(d, scope) for d in node.args.defaults)
        kw_defaults = tuple((p.arg, self._value(d, scope)) for p, d in
                            zip(node.args.kwonlyargs, node.args.kw_defaults) if d is not None)
        return Function(node, scope, line, defaults, kw_defaults)  # type: ignore[arg-type]

    def _bind(self, target: ast.expr, value: object, scope: Scope, line: int) -> None:
        if isinstance(target, ast.Name):
            self._store(scope, target.id, value, line)
            return
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (tuple, list)) \
                and len(value) == len(target.elts) and not any(
                    isinstance(t, ast.Starred) for t in target.elts):
            for t, v in zip(target.elts, value):
                self._bind(t, v, scope, line)
            return
        if isinstance(target, (ast.Subscript, ast.Attribute)):
            self._taint_names(target, scope, f"an item or attribute of it is assigned on line "
                              f"{line}, which the grader does not follow", line)
            return
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                self._store(scope, node.id, Unknown("it is assigned by unpacking the grader "
                                                    "does not follow", line), line)

    def _augmented(self, stmt: ast.AugAssign, scope: Scope) -> None:
        if not isinstance(stmt.target, ast.Name):
            self._taint_names(stmt.target, scope, f"an item or attribute of it is changed on "
                              f"line {stmt.lineno}, which the grader does not follow",
                              stmt.lineno)
            return
        if scope.declared.get(stmt.target.id) == "global":
            old = self.globals.names.get(stmt.target.id)
        else:
            old = scope.names.get(stmt.target.id)
            if old is None:
                old = scope.lookup(stmt.target.id)
        value = self._value(stmt.value, scope)
        try:
            if isinstance(old, Unknown):
                raise Unreadable(old.reason, old.line, old.ambiguous)
            if isinstance(value, Unknown):
                raise Unreadable(value.reason, value.line, value.ambiguous)
            if isinstance(old, list) and isinstance(value, (list, tuple)) and \
                    isinstance(stmt.op, ast.Add):
                result = self._extend(old, value, stmt.lineno)  # `+=` changes a list in place
            else:
                result = self._operate(stmt.op, old, value, stmt.lineno)
        except Unreadable as exc:
            result = Unknown(exc.message, exc.line, exc.ambiguous)
        self._store(scope, stmt.target.id, result, stmt.lineno)

    def _import(self, stmt: ast.Import | ast.ImportFrom, scope: Scope) -> None:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname is None:
                    top = alias.name.split(".")[0]
                    self._store(scope, top, Builtin(f"module {top}"), stmt.lineno)
                else:
                    self._store(scope, alias.asname, Builtin(f"module {alias.name}"),
                                stmt.lineno)
            return
        module = stmt.module or ""
        for alias in stmt.names:
            known = _MODULE_MEMBERS.get((module, alias.name))
            self._store(scope, alias.asname or alias.name, (
                Builtin(known) if known else
                Unknown(f"it is imported from `{module}`, which the grader does not run",
                        stmt.lineno)), stmt.lineno)

    # --- expressions --------------------------------------------------------------------------

    def _value(self, node: ast.expr, scope: Scope, strict: bool = False) -> object:
        """The value of an expression, or Unknown (with the reason). With `strict`, an
        Unreadable is raised instead of returning Unknown."""
        try:
            return self._eval(node, scope)
        except _DryRun:
            raise
        except Unreadable as exc:
            # What the reader could not evaluate may have changed a list it was given.
            line = exc.line or _line(node)
            message = exc.message
            self._taint_names(node, scope, lambda: f"it is passed to code the grader does not "
                              f"follow (line {line}: {message})", line)
            if strict:
                raise
            return Unknown(exc.message, exc.line, exc.ambiguous)

    def _step(self, node: ast.AST) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise OutOfSteps(f"reading the notebook takes more than {MAX_STEPS} steps, the "
                             "grader's limit; it stopped reading here", _line(node))
        if self.work > MAX_WORK:
            raise OutOfSteps(f"the notebook builds more than {MAX_WORK} characters of strings, "
                             "the grader's limit; it stopped reading here", _line(node))

    def _eval(self, node: ast.expr, scope: Scope) -> object:
        self._step(node)
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise Unreadable("the expression is nested too deeply", _line(node))
            value = self._eval_node(node, scope)
        finally:
            self.depth -= 1
        if isinstance(value, Unknown):
            raise Unreadable(value.reason, value.line, value.ambiguous)
        return value

    def _eval_node(self, node: ast.expr, scope: Scope) -> object:
        line = _line(node)
        if isinstance(node, ast.Constant):
            return self._checked(node.value, line)
        if isinstance(node, ast.Name):
            value = scope.lookup(node.id)
            if value is None:
                raise Unreadable(f"`{node.id}` has no value the grader can read", line)
            if isinstance(value, Unknown):
                nested = value.reason.startswith(("`", "the kernel's"))
                reason = value.reason if nested else f"`{node.id}` could not be read: " \
                    f"{value.reason}"
                raise Unreadable(reason, value.line or line, value.ambiguous)
            return self._untainted(value, line) if self.tainted else value
        if isinstance(node, ast.JoinedStr):
            return self._checked("".join(self._formatted(part, scope) for part in node.values),
                                 line)
        if isinstance(node, ast.BinOp):
            return self._operate(node.op, self._eval(node.left, scope),
                                 self._eval(node.right, scope), line)
        if isinstance(node, ast.UnaryOp):
            return self._unary(node, scope)
        if isinstance(node, (ast.List, ast.Tuple)):
            if len(node.elts) > MAX_ITEMS:
                raise Unreadable(f"a list of more than {MAX_ITEMS} items", line)
            if any(isinstance(e, ast.Starred) for e in node.elts):
                raise Unreadable("`*` unpacking inside a list", line)
            items = [self._eval(e, scope) for e in node.elts]
            return self._new_list(items) if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.Attribute):
            base = self._eval(node.value, scope)
            if isinstance(base, Builtin) and base.name.startswith("module "):
                known = _MODULE_MEMBERS.get((base.name.removeprefix("module "), node.attr))
                if known:
                    return Builtin(known)
            raise Unreadable(f"the attribute `.{node.attr}`", line)
        if isinstance(node, ast.Call):
            return self._call(node, scope)
        if isinstance(node, ast.IfExp):
            return self._if_expression(node, scope)
        if isinstance(node, ast.Compare):
            return self._compare(node, scope)
        if isinstance(node, ast.BoolOp):
            values = [self._eval(v, scope) for v in node.values]
            result = values[0]
            for v in values[1:]:
                if isinstance(node.op, ast.And) != bool(result):
                    break
                result = v
            return result
        if isinstance(node, ast.Lambda):
            return self._function(node, scope, line or 0)
        raise Unreadable(f"a {_describe(node)}, which the grader does not evaluate", line)

    def _checked(self, value: object, line: int | None) -> object:
        if isinstance(value, str):
            if len(value) > MAX_STRING:
                raise Unreadable(f"a string longer than {MAX_STRING} characters", line)
            self.work += len(value)
            if self.work > MAX_WORK:
                raise Unreadable(f"the notebook builds more than {MAX_WORK} characters of "
                                 "strings", line)
        elif isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
            raise Unreadable(f"an integer of more than {MAX_INT_BITS} bits", line)
        elif isinstance(value, (list, tuple)) and len(value) > MAX_ITEMS:
            raise Unreadable(f"a list of more than {MAX_ITEMS} items", line)
        elif not isinstance(value, (str, int, float, bool, type(None), list, tuple,
                                    KernelCall, Builtin, Function, Problem)):
            raise Unreadable(f"a {type(value).__name__} value", line)
        return value

    def _formatted(self, part: ast.expr, scope: Scope) -> str:
        if isinstance(part, ast.Constant):
            return str(part.value)
        assert isinstance(part, ast.FormattedValue)
        value = self._eval(part.value, scope)
        if not isinstance(value, (str, int, float, bool, type(None))):
            raise Unreadable("an f-string part that is not a string or a number", _line(part))
        spec = "" if part.format_spec is None else str(self._eval(part.format_spec, scope))
        value = {-1: value, 115: str(value), 114: repr(value), 97: ascii(value)}[part.conversion]
        return self._format(value, spec, _line(part))

    def _format(self, value: object, spec: str, line: int | None) -> str:
        digits = "".join(c if c in "0123456789" else " " for c in spec).split()
        if any(len(d) > 5 or int(d) > MAX_FORMAT_WIDTH for d in digits):
            raise Unreadable(f"a format width above {MAX_FORMAT_WIDTH}", line)
        try:
            return str(self._checked(format(value, spec), line))
        except (ValueError, TypeError) as exc:
            raise Unreadable(f"formatting failed: {exc}", line) from None

    def _operate(self, op: ast.operator, left: object, right: object, line: int | None) -> object:
        numbers = (int, float)
        joinable = isinstance(left, (str, list, tuple)) and type(left) is type(right)
        if isinstance(op, ast.Add) and joinable:
            limit = MAX_STRING if isinstance(left, str) else MAX_ITEMS
            if len(left) + len(right) > limit:
                raise Unreadable(f"a value longer than the grader's limit ({limit})", line)
            joined = left + right
            return self._checked(self._new_list(joined) if isinstance(joined, list) else joined,
                                 line)
        if isinstance(op, ast.Mult):
            if isinstance(right, (str, list, tuple)):
                left, right = right, left
            if isinstance(left, (str, list, tuple)) and isinstance(right, int):
                limit = MAX_STRING if isinstance(left, str) else MAX_ITEMS
                if len(left) * max(right, 0) > limit:
                    raise Unreadable(f"a repetition longer than the grader's limit ({limit})",
                                     line)
                repeated = left * right
                return self._checked(self._new_list(repeated) if isinstance(repeated, list)
                                     else repeated, line)
        if isinstance(left, numbers) and isinstance(right, numbers):
            return self._arithmetic(op, left, right, line)
        raise Unreadable(f"`{_OPERATORS.get(type(op), '?')}` on {type(left).__name__} and "
                         f"{type(right).__name__}", line)

    def _arithmetic(self, op: ast.operator, left: float, right: float, line: int | None
                    ) -> object:
        if isinstance(op, (ast.LShift, ast.Pow)) and isinstance(right, int):
            size = right if isinstance(op, ast.LShift) else \
                max(abs(int(left)).bit_length(), 1) * right
            if size > MAX_INT_BITS:
                raise Unreadable(f"an integer of more than {MAX_INT_BITS} bits", line)
        function = _ARITHMETIC.get(type(op))
        if function is None:
            raise Unreadable(f"the operator `{_OPERATORS.get(type(op), '?')}`", line)
        try:
            return self._checked(function(left, right), line)
        except (ArithmeticError, ValueError, TypeError) as exc:
            raise Unreadable(f"arithmetic failed: {exc}", line) from None

    def _unary(self, node: ast.UnaryOp, scope: Scope) -> object:
        value = self._eval(node.operand, scope)
        if isinstance(node.op, ast.Not):
            return not value
        if isinstance(value, (int, float)) and not isinstance(node.op, ast.Invert):
            return -value if isinstance(node.op, ast.USub) else +value
        if isinstance(value, int) and isinstance(node.op, ast.Invert):
            return ~value
        raise Unreadable("a unary operator on a non-number", _line(node))

    def _compare(self, node: ast.Compare, scope: Scope) -> bool:
        left = self._eval(node.left, scope)
        for op, comparator in zip(node.ops, node.comparators):
            right = self._eval(comparator, scope)
            compare = _COMPARISONS.get(type(op))
            if compare is None or not isinstance(left, (str, int, float, bool, type(None))) \
                    or not isinstance(right, type(left) if isinstance(left, str) else
                                      (int, float, bool, type(None))):
                raise Unreadable("a comparison the grader does not evaluate", _line(node))
            if not compare(left, right):
                return False
            left = right
        return True

    def _if_expression(self, node: ast.IfExp, scope: Scope) -> object:
        try:
            taken = bool(self._eval(node.test, scope))
        except Unreadable:
            yes, no = self._value(node.body, scope), self._value(node.orelse, scope)
            value = _merge(yes, no, f"the conditional expression on line {node.lineno}",
                           node.lineno)
            if isinstance(value, Unknown):
                raise Unreadable(value.reason, value.line, value.ambiguous) from None
            return value
        return self._eval(node.body if taken else node.orelse, scope)

    # --- calls --------------------------------------------------------------------------------

    def _callee(self, func: ast.expr, scope: Scope) -> object:
        try:
            return self._eval(func, scope)
        except Unreadable:
            return None

    def _call(self, node: ast.Call, scope: Scope) -> object:
        line = _line(node)
        if isinstance(node.func, ast.Attribute):
            method = node.func.attr
            base = self._callee(node.func.value, scope)
            if isinstance(base, str):
                return self._string_method(base, method, node, scope)
            if isinstance(base, list):
                return self._list_method(base, method, node, scope)
            if isinstance(base, Problem):
                if method == "check":
                    self._settle(base, self.cell)
                return None  # show(), hint(), explore(), ... build no kernel
        callee = self._callee(node.func, scope)
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
                k.arg is None for k in node.keywords):
            raise Unreadable("a call with `*` or `**` arguments", line)
        if callee == Builtin("MetalKernel"):
            return self._kernel(node, scope)
        if callee == Builtin("MetalProblem"):
            return self._problem(node, scope)
        if callee == Builtin("dedent"):
            args = [self._eval(a, scope) for a in node.args]
            if len(args) != 1 or node.keywords or not isinstance(args[0], str):
                raise Unreadable("textwrap.dedent takes one string", line)
            return self._checked(textwrap.dedent(args[0]), line)
        if isinstance(callee, Function):
            args = [self._value(a, scope) for a in node.args]
            kwargs = {k.arg: self._value(k.value, scope) for k in node.keywords if k.arg}
            return self._call_function(callee, args, kwargs, line)
        self._taint_names(node, scope, lambda: f"it is passed to `{_describe_callee(node.func)}` "
                          f"on line {line}, which the grader does not run", line)
        raise Unreadable(f"a call to `{_describe_callee(node.func)}`", line)

    def _list_method(self, items: list, method: str, node: ast.Call, scope: Scope) -> None:
        """`append`, `insert` and `extend`, which change the list in place (and every name
        bound to it); any other method makes the list unreadable from here on."""
        line = _line(node)
        args = [self._eval(a, scope) for a in node.args]
        if node.keywords or method not in ("append", "insert", "extend") or len(args) != (
                2 if method == "insert" else 1):
            self._taint(items, Unknown(f"`.{method}(...)` on line {line} changes it in a way "
                                       "the grader does not follow", line), 0)
            raise Unreadable(f"the list method `.{method}(...)` with these arguments", line)
        self._mutable(items, line)
        if method == "extend":
            if not isinstance(args[0], (list, tuple)):
                raise Unreadable("`.extend(...)` of something that is not a list", line)
            self._extend(items, args[0], line)
            return None
        if len(items) + 1 > MAX_ITEMS:
            raise Unreadable(f"a list of more than {MAX_ITEMS} items", line)
        if method == "append":
            items.append(args[0])
        elif not isinstance(args[0], int) or isinstance(args[0], bool):
            raise Unreadable("`.insert(...)` at a position that is not an integer", line)
        else:
            items.insert(args[0], args[1])
        return None

    def _extend(self, items: list, more: list | tuple, line: int | None) -> list:
        self._mutable(items, line)
        if len(items) + len(more) > MAX_ITEMS:
            raise Unreadable(f"a list of more than {MAX_ITEMS} items", line)
        items.extend(more)
        return items

    def _string_method(self, text: str, method: str, node: ast.Call, scope: Scope) -> object:
        line = _line(node)
        args = [self._eval(a, scope) for a in node.args]
        kwargs = {k.arg: self._eval(k.value, scope) for k in node.keywords if k.arg}
        if any(k.arg is None for k in node.keywords) or any(
                isinstance(a, ast.Starred) for a in node.args):
            raise Unreadable("a call with `*` or `**` arguments", line)
        if method in STRIP_METHODS and not kwargs and len(args) <= 1 and all(
                isinstance(a, (str, type(None))) for a in args):
            return getattr(text, method)(*args)
        if method in ("upper", "lower") and not args and not kwargs:
            return self._checked(getattr(text, method)(), line)
        if method == "replace" and not kwargs and len(args) == 2 and all(
                isinstance(a, str) for a in args):
            old, new = args
            growth = text.count(old) * (len(new) - len(old)) if old else (len(text) + 1) * len(new)
            if len(text) + growth > MAX_STRING:
                raise Unreadable(f"a string longer than {MAX_STRING} characters", line)
            return self._checked(text.replace(old, new), line)
        if method == "join" and not kwargs and len(args) == 1 and isinstance(
                args[0], (list, tuple)) and all(isinstance(a, str) for a in args[0]):
            items = args[0]
            if sum(map(len, items)) + len(text) * len(items) > MAX_STRING:
                raise Unreadable(f"a string longer than {MAX_STRING} characters", line)
            return self._checked(text.join(items), line)
        if method == "format":
            return self._format_method(text, args, kwargs, line)
        raise Unreadable(f"the string method `.{method}(...)` with these arguments", line)

    def _format_method(self, template: str, args: list[object], kwargs: dict[str, object],
                       line: int | None) -> str:
        pieces: list[str] = []
        automatic = 0
        try:
            parsed = list(string.Formatter().parse(template))
        except ValueError as exc:
            raise Unreadable(f"`.format` failed: {exc}", line) from None
        for literal, field_name, spec, conversion in parsed:
            pieces.append(literal)
            if field_name is None:
                continue
            if "." in field_name or "[" in field_name or "{" in (spec or ""):
                raise Unreadable("a `.format` field with attributes, indexes or nested fields",
                                 line)
            if field_name == "":
                key: int | str = automatic
                automatic += 1
            else:
                key = int(field_name) if field_name.isdigit() else field_name
            source = args if isinstance(key, int) else kwargs
            try:
                value = source[key]  # type: ignore[index]
            except (IndexError, KeyError):
                raise Unreadable(f"`.format` has no argument {key!r}", line) from None
            if not isinstance(value, (str, int, float, bool, type(None))):
                raise Unreadable("a `.format` argument that is not a string or a number", line)
            if conversion:
                value = {"s": str, "r": repr, "a": ascii}[conversion](value)
            pieces.append(self._format(value, spec or "", line))
            if sum(map(len, pieces)) > MAX_STRING:
                raise Unreadable(f"a string longer than {MAX_STRING} characters", line)
        return str(self._checked("".join(pieces), line))

    def _call_function(self, function: Function, args: list[object],
                       kwargs: dict[str, object], line: int | None,
                       collect_only: bool = False) -> object:
        if self.depth > MAX_DEPTH:
            raise Unreadable("functions call each other too deeply", line)
        node = function.node
        local = Scope(function.scope)
        params = node.args
        positional = [*params.posonlyargs, *params.args]
        for k, param in enumerate(positional):
            local.names[param.arg] = args[k] if k < len(args) else kwargs.get(
                param.arg, Unknown(f"`{param.arg}` is a parameter of the function on line "
                                   f"{function.line}", function.line))
        for param in params.kwonlyargs:
            local.names[param.arg] = kwargs.get(param.arg, Unknown(
                f"`{param.arg}` is a parameter of the function on line {function.line}",
                function.line))
        for extra in (params.vararg, params.kwarg):
            if extra is not None:
                local.names[extra.arg] = Unknown("a `*` parameter", function.line)
        self._defaults(function, positional, args, kwargs, local)
        self.depth += 1
        saved = self.collect
        self.collect = collect_only or self.collect
        try:
            if isinstance(node, ast.Lambda):
                return self._eval(node.body, local)
            returned = self._block(node.body, local)
        finally:
            self.depth -= 1
            self.collect = saved
        value = None if returned is None else returned.value
        if isinstance(value, Unknown):
            raise Unreadable(value.reason, value.line, value.ambiguous)
        return value

    def _defaults(self, function: Function, positional: list[ast.arg], args: list[object],
                  kwargs: dict[str, object], local: Scope) -> None:
        """Parameters not passed take their default value (evaluated when the function was
        defined, as Python does)."""
        defaults = function.defaults
        for index, param in enumerate(positional):
            k = index - (len(positional) - len(defaults))
            if k >= 0 and index >= len(args) and param.arg not in kwargs:
                local.names[param.arg] = defaults[k]
        for name, default in function.kw_defaults:
            if name not in kwargs:
                local.names[name] = default

    def _arguments(self, node: ast.Call, names: tuple[str, ...], scope: Scope,
                   what: str) -> dict[str, ast.expr]:
        if len(node.args) > len(names):
            raise Unreadable(f"{what} takes at most {len(names)} positional arguments",
                             _line(node))
        given = dict(zip(names, node.args))
        for keyword in node.keywords:
            if keyword.arg not in names:
                raise Unreadable(f"{what} has no argument `{keyword.arg}`", _line(node))
            if keyword.arg in given:
                raise Unreadable(f"{what} got `{keyword.arg}` twice", _line(node))
            given[keyword.arg] = keyword.value
        return given

    def _kernel(self, node: ast.Call, scope: Scope) -> KernelCall:
        line = _line(node)
        given = self._arguments(node, KERNEL_PARAMETERS, scope, "MetalKernel(...)")
        name_node = given.get("name")
        name = self._value(name_node, scope) if name_node is not None else None
        label = name if isinstance(name, str) else None
        try:
            kernel = self._kernel_from(given, scope, line)
        except Unreadable as exc:
            if self.collect:
                self.kernels.append((self.cell, exc, label))
            raise
        if self.collect:
            self.kernels.append((self.cell, kernel, kernel.name))
        return kernel

    def _kernel_from(self, given: dict[str, ast.expr], scope: Scope, line: int | None
                     ) -> KernelCall:
        values: dict[str, object] = {}
        for key in ("name", "input_names", "output_names", "source"):
            if key not in given:
                raise Unreadable(f"MetalKernel(...) has no `{key}` argument", line)
        for key, expr in given.items():
            try:
                values[key] = self._untainted(self._eval(expr, scope), line)
            except _DryRun:
                raise
            except Unreadable as exc:
                raise Unreadable(f"the kernel's `{key}`: {exc.message}",
                                 exc.line or line, exc.ambiguous) from None
        for key in ("name", "source", "header"):
            if key in values and not isinstance(values[key], str):
                raise Unreadable(f"the kernel's `{key}` is not a string", line)
        for key in ("input_names", "output_names"):
            names = values[key]
            if not isinstance(names, (list, tuple)) or not all(
                    isinstance(n, str) for n in names):
                raise Unreadable(f"the kernel's `{key}` is not a list of strings", line)
        for key in ("ensure_row_contiguous", "atomic_outputs"):
            if key in values and not isinstance(values[key], bool):
                raise Unreadable(f"the kernel's `{key}` is not True or False", line)
        return KernelCall(
            name=str(values["name"]), input_names=tuple(values["input_names"]),  # type: ignore
            output_names=tuple(values["output_names"]), source=str(values["source"]),  # type: ignore
            header=str(values.get("header", "")),
            ensure_row_contiguous=bool(values.get("ensure_row_contiguous", True)),
            atomic_outputs=bool(values.get("atomic_outputs", False)), line=line or 0)

    def _problem(self, node: ast.Call, scope: Scope) -> Problem | Unknown:
        line = _line(node) or 0
        title_node = node.args[0] if node.args else next(
            (k.value for k in node.keywords if k.arg == "name"), None)
        fn_node = node.args[1] if len(node.args) > 1 else next(
            (k.value for k in node.keywords if k.arg == "fn"), None)
        title = self._value(title_node, scope) if title_node is not None else None
        if not isinstance(title, str):
            return Unknown("it is a MetalProblem whose title the grader cannot read", line)
        fn: object = Unreadable("MetalProblem(...) has no kernel function", line)
        if fn_node is not None:
            value = self._value(fn_node, scope)
            fn = value if isinstance(value, Function) else Unreadable(
                "MetalProblem's second argument is not a function defined in this notebook",
                line)
        problem = Problem(title, fn, line, self.cell)
        if self.collect and not self.dry:
            self.built.append(problem)
        return problem

    def _settle(self, problem: Problem, cell: int) -> None:
        """Record the kernel `problem.check()` would check now: what its function returns
        (called twice: a function whose kernel changes from call to call is unreadable, since
        `check()` calls it once per case)."""
        if self.dry:
            raise _DryRun()
        problem.checked = True
        kernel: KernelCall | Unreadable
        try:
            if isinstance(problem.fn, Unreadable):
                raise problem.fn
            fn = problem.fn
            assert isinstance(fn, Function)
            saved = self.collect
            self.collect = False  # the problem's kernel is recorded as the problem's
            try:
                first = self._call_function(fn, [], {}, problem.line)
                again = self._call_function(fn, [], {}, problem.line)
            finally:
                self.collect = saved
            if not isinstance(first, KernelCall):
                raise Unreadable(f"the function given to MetalProblem (line {fn.line}) does "
                                 "not return a MetalKernel(...)", problem.line)
            if first != again:
                raise Unreadable(f"the function given to MetalProblem (line {fn.line}) returns "
                                 "a different kernel each time it is called, and check() calls "
                                 "it once per case", problem.line)
            kernel = first
        except OutOfSteps:
            raise
        except Unreadable as exc:
            kernel = exc
        problem.read, problem.read_in = ProblemCall(problem.title, kernel, problem.line), cell


def _merge(a: object, b: object, where: str, line: int) -> object:
    """The value of a name after both branches of an `if` the grader cannot decide."""
    if isinstance(a, Unknown) and not a.ambiguous:
        return a
    if isinstance(b, Unknown) and not b.ambiguous:
        return b
    if isinstance(a, Unknown):
        return a
    if isinstance(b, Unknown):
        return b
    if type(a) is type(b) and a == b:
        return a
    return Unknown(f"ambiguous: it takes different values in the branches of {where}, whose "
                   "condition the grader cannot evaluate", line, True)


def _line(node: ast.AST) -> int | None:
    return getattr(node, "lineno", None)


def _describe(node: ast.AST) -> str:
    names = {"Subscript": "subscript (`x[...]`)", "ListComp": "list comprehension",
             "GeneratorExp": "generator expression", "Dict": "dict", "Set": "set",
             "NamedExpr": "`:=` expression", "Await": "`await`", "Starred": "`*` expression",
             "Slice": "slice", "DictComp": "dict comprehension", "SetComp": "set comprehension",
             "Yield": "`yield`", "YieldFrom": "`yield from`"}
    return names.get(type(node).__name__, type(node).__name__)


def _describe_callee(func: ast.expr) -> str:
    parts = []
    while isinstance(func, ast.Attribute) and len(parts) < 4:
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    elif isinstance(func, ast.Call):
        parts.append(_describe_callee(func.func) + "(...)")
    else:
        parts.append("(...)")
    return ".".join(reversed(parts))


_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
              ast.Mod: "%", ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|",
              ast.BitAnd: "&", ast.BitXor: "^", ast.MatMult: "@"}
_ARITHMETIC = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b, ast.Pow: lambda a, b: a ** b,
    ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b,
    ast.BitOr: lambda a, b: a | b, ast.BitAnd: lambda a, b: a & b,
    ast.BitXor: lambda a, b: a ^ b,
}
_COMPARISONS = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
                ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,
                ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b}
