"""Lower the AST to closures over lane arrays, resolving names and C++ types on the way.

`Compiler` holds what a translation unit declares (globals, functions, types, templates),
resolves calls and instantiates functions; compiling expressions is `expressions.py`, compiling
statements `statements.py` (both mixed into `Compiler`), and what compiling produces is in
`compiled.py`. Lanes that `break`, `continue` or `return` are parked in the frame until their
construct completes. Name lookup and type checking happen here, once per kernel instantiation,
so that running a kernel costs Python work per AST node executed, never per thread.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from metalsim.diagnostics import CompileError, Coord, SourceMap
from metalsim.exec import mathlib, ranking, simd
from metalsim.exec import memory as mem
from metalsim.exec.compiled import E, FunctionCode, Scope, Var, constant, lane_zeros
from metalsim.exec.constant_calls import ConstantCallCompiler
from metalsim.exec.constructors import ConstructorCompiler
from metalsim.exec.deduction import DeductionConflict, bind_deduced, substituted
from metalsim.exec.enums import EnumCompiler
from metalsim.exec.expressions import ExpressionCompiler
from metalsim.exec.function_pointers import FunctionPointerCompiler
from metalsim.exec.function_specializations import (
    FunctionSpecializationCompiler,
    is_explicit_specialization,
)
from metalsim.exec.incomplete_types import IncompleteTypeCompiler
from metalsim.exec.lambdas import Closure, LambdaCompiler
from metalsim.exec.operators import OperatorCompiler
from metalsim.exec.prelude import replaced_stand_ins
from metalsim.exec.ranking import Rank
from metalsim.exec.references import ReferenceCompiler, returned_location
from metalsim.exec.runtime import bind_argument
from metalsim.exec.statements import ATTRIBUTE_NAMES, StatementCompiler
from metalsim.exec.struct_templates import (
    StructTemplate,
    StructTemplateCompiler,
    argument_key,
    argument_text,
)
from metalsim.exec.structs import StructCompiler, StructMethods, thread_object
from metalsim.exec.uses import fixed_names, uses, walk
from metalsim.exec.values import Frame, MemLoc, PtrSlot, VarLoc
from metalsim.lang import ast
from metalsim.lang import types as ty
from metalsim.lang.cuda_names import cuda_hint
from metalsim.lang.namespaces import enclosing_namespace, program_name
from metalsim.lang.types import (
    INT,
    ArrayType,
    AtomicType,
    FunctionPointerType,
    PointerType,
    ScalarType,
    StructType,
    Type,
    VectorType,
)

# clang's default -ftemplate-depth: how deeply function instantiations may nest.
MAX_INSTANTIATION_DEPTH = 1024


class Compiler(ExpressionCompiler, StatementCompiler, StructCompiler, ConstructorCompiler,
               StructTemplateCompiler, OperatorCompiler, ReferenceCompiler,
               FunctionSpecializationCompiler, EnumCompiler, LambdaCompiler,
               FunctionPointerCompiler, ConstantCallCompiler, IncompleteTypeCompiler):
    """Compiles one translation unit's kernel (and what it calls) for one instantiation."""

    def __init__(self, unit: ast.TranslationUnit, source_map: SourceMap,
                 builtins: dict[str, Callable], math_variant: str = "precise",
                 tracing: bool = False,
                 function_constants: dict[int | str, bool | int | float] | None = None) -> None:
        self.tracing = tracing  # also follow where values come from (for diagrams)
        # What a pipeline sets (`MTLFunctionConstantValues`), by index or name; none for
        # mx.fast.metal_kernel.
        self.function_constants = function_constants or {}
        self.defined_function_constants: dict[str, object] = {}   # those given: their values
        self.kernel_def: ast.FunctionDef | None = None   # the kernel `compile_kernel` chose
        self.loop_depth = self.switch_depth = 0  # for `break`/`continue` checks
        self.unit = unit
        self.sm = source_map
        self.builtins = builtins
        self.math_variant = math_variant
        self.functions: dict[str, list[ast.FunctionDef]] = {}   # explicit specialisations too
        # Friend functions defined in structs, by the name written: found only through an
        # argument of their struct (`hidden_friends_for`).
        self.hidden_friends: dict[str, list[ast.FunctionDef]] = {}
        # A struct template's hidden friend for one instance: a non-template copy, by the
        # friend's id and the instance, and the arguments (and injected name) its copy sees.
        self.friend_copies: dict[tuple[int, StructType], ast.FunctionDef] = {}
        self.friend_bindings: dict[int, dict] = {}
        # How many `functions` there were and the bare names of those in namespaces then.
        self.namespaced_names: tuple[int, set[str]] = (-1, set())
        # (id of a function template, its argument keys) -> its explicit specialisation
        self.function_specializations: dict[tuple, ast.FunctionDef] = {}
        self.specialized_structs: set[StructType] = set()  # member specialisations matched
        self.closures: dict[StructType, Closure] = {}   # lambdas' closure types
        self.lambdas: dict[tuple[int, int], E] = {}   # by (lambda, enclosing function code)
        # functions named by template arguments of function pointer type: (function, its
        # template arguments) -> (index, function, template arguments)
        self.pointed_functions: dict[tuple, tuple[int, ast.FunctionDef, dict]] = {}
        self.enum_members: dict[ScalarType, dict[str, Var]] = {}   # enumerators by enumeration
        self.globals = Scope({})
        self.instances: dict[tuple, FunctionCode] = {}
        self.open_instances: list[FunctionCode] = []  # functions being compiled, outermost first
        self.struct_methods: dict[StructType, StructMethods] = {}
        self.struct_statics: dict[StructType, dict[str, Var]] = {}   # `static constexpr` members
        self.struct_types: dict[StructType, dict[str, Type]] = {}    # member types
        self.struct_bases: dict[StructType, list[StructType]] = {}   # direct base classes
        # `using B::f;` in a struct: the base class each named member function comes from
        self.struct_using: dict[StructType, dict[str, StructType]] = {}
        self.struct_access: dict[StructType, ast.StructDef] = {}   # where some access is limited
        # default member initializers (`T m = e;`) by struct: member -> (initializer, scope)
        self.member_defaults: dict[StructType, dict[str, tuple[ast.Node, Scope]]] = {}
        self.variable_instances: dict[tuple, Var] = {}   # values of variable templates
        # Each struct template instance: its template and template arguments.
        self.instance_of: dict[StructType, tuple[StructTemplate, dict]] = {}
        # the definition each instance was made from (the primary's, or a specialisation's)
        self.instance_definition: dict[StructType, ast.StructDef] = {}
        self.fn: FunctionCode | None = None
        # Whose private members the code being compiled may name: the struct of the member
        # function (None outside one) and the function's name (for friend declarations).
        self.access_from: tuple[StructType | None, str] = (None, "")
        self.closure_access: dict[int, tuple[StructType | None, str]] = {}   # by id(body)
        self.address_taken: set[str] = set()
        self.fixed_names: set[str] = set()   # see `uses.fixed_names`
        self.decl_ids = 0
        # code that runs only where a comparison let it: its coordinates -> the comparison's
        self.guarded: dict[Coord, Coord] = {}
        self.init_incomplete_types()

    # --- errors -----------------------------------------------------------------------------
    def error(self, message: str, node: ast.Node | Coord, hint: str = "", width: int = 1):
        coord = node if isinstance(node, Coord) else node.coord
        raise CompileError(message, coord, self.sm, hint=hint, width=width)

    def lookup_scope(self, node: ast.Name | ast.NamedType, scope: Scope) -> Scope:
        """Where `node` is looked up: `scope`, or program scope for a name qualified by a
        namespace (`na::K`, `::G`), which no local, parameter or member hides."""
        return self.globals if node.namespace_scope else scope

    def suggest(self, name: str, candidates: list[str]) -> str:
        close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
        return f"did you mean '{close[0]}'?" if close else ""

    # --- translation unit -------------------------------------------------------------------
    def declare_globals(self) -> None:
        replaced = replaced_stand_ins(self.unit.items)
        for item in self.unit.items:
            if id(item) in replaced:
                continue   # the program declares the name the prelude's item stands in for
            if isinstance(item, ast.MemberFunction) and item.owner is not None and (
                    item.owner_args is not None or is_explicit_specialization(item)):
                self.define_member_specialization(item)
            elif isinstance(item, ast.MemberFunction) and item.owner is not None:
                self.define_member_outside(item)
            elif isinstance(item, ast.FunctionDef) and is_explicit_specialization(item):
                self.declare_function_specialization(item)
                self.functions.setdefault(item.name, []).append(item)
            elif isinstance(item, ast.FunctionDef) and item.friend_of is not None:
                self.hidden_friends.setdefault(item.name.rpartition("::")[2], []).append(item)
                self.note_function_definition(item)
            elif isinstance(item, ast.FunctionDef):
                self.functions.setdefault(item.name, []).append(item)
                self.note_function_definition(item)
            elif isinstance(item, ast.VariableTemplate) and item.specialization is not None:
                primary = self.globals.names.get(item.name)
                if not (isinstance(primary, tuple) and primary[0] == "variable_template"):
                    self.error(f"explicit specialization of undeclared template "
                               f"'{item.name}'", item)
                primary[1].specializations.append(item)
            elif isinstance(item, ast.VariableTemplate):
                self.globals.names[item.name] = (  # type: ignore[assignment]
                    "variable_template", StructTemplate(item, self.globals))  # type: ignore
            elif isinstance(item, ast.StructDef) and item.specialization is not None:
                self.declare_specialization(item, self.globals)
            elif isinstance(item, ast.StructDef) and item.template_params:
                self.declare_struct_template(item, self.globals)
            elif isinstance(item, ast.StructDef):
                self.define_struct(item, self.globals)
            elif isinstance(item, ast.StructDeclaration) and item.template_params is None:
                self.declare_struct(item, self.globals)
            elif isinstance(item, ast.TypeAlias):
                if isinstance(item.type, ast.StructDef):
                    self.globals.names[item.name] = self.define_struct(item.type, self.globals)
                elif item.template_params:
                    self.globals.names[item.name] = ("alias_template", item)  # type: ignore
                else:
                    self.declare_alias(item, self.globals)
            elif isinstance(item, ast.DeclStmt):
                for d in item.decls:
                    self.declare_global_var(d)
            elif isinstance(item, ast.StaticAssert):
                self.static_assert(item, self.globals)
            elif isinstance(item, ast.EnumDef):
                self.define_enum(item, self.globals)
        for friends in self.hidden_friends.values():
            for friend in list(friends):
                if any(self.same_parameters(friend, f) for f in self.functions.get(
                        friend.name, ())):   # declared in its namespace too: visible
                    friends.remove(friend)
                    self.functions[friend.name].append(friend)

    def same_parameters(self, f: ast.FunctionDef, g: ast.FunctionDef) -> bool:
        """Whether non-template functions `f` and `g` take the same parameter types."""
        if f.template_params is not None or g.template_params is not None or len(
                f.params) != len(g.params):
            return False
        return all(self.resolve_decl_type(p.type, self.globals) == self.resolve_decl_type(
            q.type, self.globals) for p, q in zip(f.params, g.params))

    def define_member_outside(self, fn: ast.MemberFunction) -> None:
        """`R S::f(params) {...}`: the body of the member function `S` declared with the same
        parameter types and qualifiers."""
        st = self.globals.lookup(fn.owner)
        methods = self.struct_methods.get(st) if isinstance(st, StructType) else None
        if methods is None:
            self.error(f"'{fn.owner}' is not a struct with member functions", fn)
        params = [self.resolve_type(p.type, methods.scope) for p in fn.params]
        for decl in methods.overloads.get(fn.name, []):
            if (decl.body is None and decl.const == fn.const and decl.space == fn.space
                    and len(decl.params) == len(params) and all(
                        self.resolve_type(p.type, methods.scope) == t
                        for p, t in zip(decl.params, params))):
                decl.body, decl.params = fn.body, fn.params
                self.member_code(st, decl, {})   # compiled, as one defined in the struct
                return
        self.error(f"out-of-line definition of '{fn.name}' does not match any declaration in "
                   f"'{fn.owner}'", fn)

    def declare_alias(self, node: ast.TypeAlias, scope: Scope) -> None:
        """`typedef T name;` or `using name = T;` in `scope`. Declaring a name again for the
        same type is legal C++ (`typedef bfloat bfloat16_t;` twice); for another type it is
        an error, never a silent replacement. Types spelled alike count as the same."""
        t = self.resolve_type(node.type, scope)
        previous = scope.names.get(node.name)
        if isinstance(previous, Type) and str(previous) != str(t):
            self.error(f"typedef redefinition with different types ('{t}' vs '{previous}')",
                       node)
        scope.names[node.name] = t

    def declare_global_var(self, d: ast.VarDecl) -> None:
        t, const, space = self.resolve_decl_type(d.type, self.globals)
        self.require_complete(t, d, "variable has incomplete type '{}'")
        if space != "constant" and not d.constexpr:
            self.error("program scope variable must reside in constant address space", d,
                       hint="declare it 'constant' (program-scope values are read-only)")
        attribute = next((a for a in d.attributes if a.name == "function_constant"), None)
        if attribute is not None:
            value = self.function_constant_value(d, attribute, t)
            if value is not None:
                self.globals.names[d.name] = Var("const", t, readonly=True, const=value,
                                                 name=d.name)
                self.defined_function_constants[d.name] = value.item()
                return
            # Set when a pipeline is created, which mx.fast.metal_kernel never does: reading
            # one is an error (`x_Name`), `is_function_constant_defined` is false.
            self.globals.names[d.name] = Var("function_constant", t, readonly=True, name=d.name)
            return
        if d.init is None:
            self.error(f"default initialization of an object of const type '{t}'", d)
        if isinstance(t, StructType) and not self.data_members(t) and isinstance(
                d.init, ast.Construct):
            # `constant mlx::os_log logger("mlx", "ops");`: a constexpr constructor of an
            # object with no data members has nothing to compute.
            self.globals.names[d.name] = Var("global_region", t, readonly=True, space="constant",
                                             region=mem.Region(d.name, "constant", t, t.size))
            return
        if self.has_constructors(t):
            self.error(f"metalsim does not run constructors at compile time, so a program-scope "
                       f"constant of type '{t}' cannot be initialized", d,
                       hint="use a struct without constructors, initialized with braces")
        # The name is in scope from its declarator on, its initializer included (`constant
        # int n = sizeof(n);`); a read of its value there is not a constant expression.
        if isinstance(t, ArrayType | StructType):
            region = mem.Region(d.name, "constant", t, t.size)
            self.globals.names[d.name] = Var("global_region", t, readonly=True,
                                             space="constant", region=region)
            self.fill_constant_array(region, t, d.init, self.globals)
            return
        self.globals.names[d.name] = Var("value", t, readonly=True, name=d.name)
        e = self.convert(self.expr(d.init, self.globals), t, d)
        if e.const is None:
            self.error("initializer of a program scope variable is not a constant expression",
                       d.init)
        self.globals.names[d.name] = Var("const", t, readonly=True, const=e.const)

    def function_constant_value(self, d: ast.VarDecl, attribute: ast.Attribute,
                                t: Type) -> np.ndarray | None:
        """The value the pipeline gives the function constant `d` (by its name, or by the
        index in `[[function_constant(i)]]`), converted to its type; None if not given."""
        index = attribute.args[0] if len(attribute.args) == 1 else None
        if not isinstance(index, ast.IntLiteral):
            self.error("a function constant's attribute takes its index: "
                       "[[function_constant(i)]]", attribute)
        if d.name in self.function_constants:
            value = self.function_constants[d.name]
        elif index.value in self.function_constants:
            value = self.function_constants[index.value]
        else:
            return None
        if not isinstance(t, ScalarType):
            self.error(f"metalsim sets function constants of scalar types only, not '{t}'", d)
        return np.asarray(value).astype(t.dtype)

    def fill_constant_array(self, region: mem.Region, t: ArrayType, init: ast.Node,
                            scope: Scope) -> None:
        for off, et, item in self.flatten_init(t, init, 0, scope):
            e = self.convert(self.expr(item, scope), et, item)
            if e.const is None:
                self.error("initializer element is not a compile-time constant", item)
            elem = ty.scalar_of(et)
            view = region.view(elem.dtype)
            view[0, off // elem.size: off // elem.size + (et.n if isinstance(et, VectorType)
                                                          else 1)] = e.const
        region.data[0][:] = region.data[0]  # contents are fixed from here on

    def flatten_init(self, t: Type, init: ast.Node, base: int, scope: Scope | None = None):
        """(byte offset, element type, expression) for each leaf of an aggregate initializer.

        A struct member initialised by an expression (not a braced list) is one leaf: a copy.
        Braces around nested arrays, vectors and structs may be elided, as C++ allows
        ([dcl.init.aggr]/12): `float2 m[2] = {1, 2, 3, 4}` (given `scope`, the types of the
        items decide where a struct or vector is initialised by one expression)."""
        if isinstance(t, StructType) and isinstance(init, ast.InitList) and (
                self.constructors_of(t)):
            yield base, t, init  # not an aggregate: the braces call a constructor (init_value)
        elif isinstance(t, StructType) and isinstance(init, ast.InitList) and (
                t in self.member_defaults):
            self.error(f"metalsim does not support aggregate initialization of '{t}', which has "
                       "default member initializers", init,
                       hint="give it a constructor, or assign the members after declaring it")
        elif isinstance(t, ArrayType | StructType) and isinstance(init, ast.InitList):
            leaves, used = self.fill_braced(t, init.items, 0, base, init.coord, scope)
            if used < len(init.items):
                what = "array" if isinstance(t, ArrayType) else f"initializer of struct '{t}'"
                self.error(f"excess elements in {what}" + (" initializer" if isinstance(
                    t, ArrayType) else ""), init.items[used])
            yield from leaves
        elif isinstance(t, ArrayType):
            self.error("array initializer must be an initializer list", init,
                       hint="an array is initialized by braces: '= {...}'")
        elif isinstance(init, ast.InitList):
            if isinstance(t, VectorType):
                yield base, t, ast.Construct(init.coord, ast.NamedType(init.coord, t.name),
                                             init.items)
            elif len(init.items) == 1:
                yield base, t, init.items[0]
            elif not init.items:
                yield from self.zero_init(t, base, init.coord)
            else:
                self.error("excess elements in scalar initializer", init.items[1])
        else:
            yield base, t, init

    def fill_braced(self, t: ArrayType | StructType, items: list[ast.Node], pos: int, base: int,
                    coord: Coord, scope: Scope | None) -> tuple[list, int]:
        """The leaves of aggregate `t` taken from `items[pos:]`, and the position after them."""
        if isinstance(t, ArrayType):
            elements = [(t.elem, base + i * t.elem.size) for i in range(t.length)]
        else:   # a union's braces initialise its first member (C++ [dcl.init.aggr]/16)
            members = t.members[:1] if t.union else t.members
            elements = [(m.type, base + m.offset) for m in members]
        leaves: list = []
        for et, off in elements:
            if pos >= len(items):
                leaves += self.zero_init(et, off, coord)
            elif not self.elides_braces(et, items[pos], scope):
                leaves += self.flatten_init(et, items[pos], off, scope)
                pos += 1
            elif isinstance(et, VectorType):
                comps = items[pos:pos + et.n]
                pos += len(comps)
                comps += [ast.IntLiteral(coord, 0, text="0")] * (et.n - len(comps))
                leaves.append((off, et, ast.Construct(coord, ast.NamedType(coord, et.name),
                                                      comps)))
            else:
                sub, pos = self.fill_braced(et, items, pos, off, coord, scope)
                leaves += sub
        return leaves, pos

    def elides_braces(self, t: Type, item: ast.Node, scope: Scope | None) -> bool:
        """Whether `item`, not in braces, starts the elements of aggregate or vector `t` rather
        than initialising all of `t` (an array always; a struct or vector unless its type)."""
        if isinstance(item, ast.InitList):
            return False
        if isinstance(t, ArrayType):
            return True
        if not (isinstance(t, VectorType) or isinstance(t, StructType) and not (
                self.constructors_of(t))) or scope is None:
            return False
        item_t = self.rvalue(self.expr(item, scope)).type
        if isinstance(t, VectorType):
            return not (isinstance(item_t, VectorType) and item_t.n == t.n)
        return item_t != t

    def zero_init(self, t: Type, base: int, coord: Coord):
        if isinstance(t, ArrayType):
            for i in range(t.length):
                yield from self.zero_init(t.elem, base + i * t.elem.size, coord)
        elif isinstance(t, StructType) and self.constructors_of(t):
            yield base, t, ast.InitList(coord, [])  # value-initialized by its constructor
        elif isinstance(t, StructType):
            for member in t.members:
                yield from self.zero_init(member.type, base + member.offset, coord)
        else:
            yield base, t, ast.IntLiteral(coord, 0, text="0")

    def static_assert(self, node: ast.StaticAssert, scope: Scope) -> None:
        """Check a `static_assert`. One whose condition calls a constexpr function with
        constant arguments is checked (`constant_calls`); one that calls anything else or
        constructs an object (complex.h's `(complex_t<half>{1, 2} * complex_t<half>{3,
        4}).real == -5`) is compiled, so it must be valid, but not checked: metalsim runs no
        other code at compile time."""
        e = self.expr(node.cond, scope)
        if e.const is None and any(isinstance(n, ast.Call | ast.MethodCall | ast.Construct)
                                   for n in walk(node.cond)):
            return
        if e.const is None:
            self.error("static_assert expression is not an integral constant expression",
                       node.cond)
        if not bool(np.all(e.const)):
            self.error(f"static assertion failed{': ' + node.message if node.message else ''}",
                       node)

    # --- types ------------------------------------------------------------------------------
    def resolve_type(self, node: ast.Node, scope: Scope) -> Type:
        return self.resolve_decl_type(node, scope)[0]

    def resolve_decl_type(self, node: ast.Node, scope: Scope) -> tuple[Type, bool, str | None]:
        """(type, is the object const, address space) of a declared type; references are
        returned as their referee type with space set (the caller checks ReferenceType)."""
        if isinstance(node, ast.ReferenceType):
            return self.resolve_decl_type(node.referee, scope)
        if isinstance(node, ast.ArrayType):
            elem, const, space = self.resolve_decl_type(node.element, scope)
            if elem is None:
                self.error("an array's element type cannot be 'auto'", node,
                           hint="write the element type")
            if isinstance(elem, ArrayType) and elem.length < 0:
                self.error("array has incomplete element type (an array of unknown size)", node,
                           hint="only the first dimension of an array may be left empty")
            if node.size is None:
                return ArrayType(elem, -1), const, space
            n = self.const_int(node.size, scope, "array size")
            if n <= 0:
                self.error(f"array size must be positive (it is {n})", node.size)
            return ArrayType(elem, n), const, space
        if isinstance(node, ast.FunctionPointerType):
            return self.function_pointer_type(node, scope), False, None
        if isinstance(node, ast.PointerType):
            pointee, const, space = self.resolve_decl_type(node.pointee, scope)
            if space is None:
                self.error("pointer type must have an explicit address space", node,
                           hint="write e.g. 'device float*', 'threadgroup float*' or "
                                "'thread float*'")
            return PointerType(pointee, space, const), node.const, None
        assert isinstance(node, ast.NamedType)
        return self.named_type(node, scope), node.const, node.space

    def named_type(self, node: ast.NamedType, scope: Scope) -> Type:
        if node.member_of is not None:
            return self.member_type(node, scope)
        name = node.name
        if name == "decltype":  # the type of an expression, which is compiled, never run
            return self.expr(node.template_args[0], scope).type
        if name in ("vec", "packed_vec"):
            args = node.template_args or []
            if len(args) != 2:
                self.error("vec<T, N> takes two template arguments", node)
            elem = self.resolve_type(args[0], scope)
            n = self.const_int(args[1], scope, "vector size")
            if not isinstance(elem, ScalarType) or n not in (1, 2, 3, 4):
                self.error(f"invalid vector type vec<{elem}, {n}>", node)
            return VectorType(elem, n, packed=name == "packed_vec")
        if name == "uniform":
            # MSL 2.3's uniform<T>: a T the program promises is the same in every thread of
            # the dispatch; it computes and converts as T (make_uniform is the identity).
            args = node.template_args or []
            if len(args) != 1:
                self.error("uniform<T> takes one template argument", node)
            return self.resolve_type(args[0], scope)
        if name == "conditional_t":
            args = node.template_args or []
            if len(args) != 3:
                self.error("conditional_t<B, T, F> takes three template arguments", node)
            cond = args[0] if not isinstance(args[0], ast.NamedType) else ast.Name(
                args[0].coord, args[0].name)
            c = self.expr(cond, scope)
            if c.const is None:
                self.error("the condition of conditional_t must be a constant", args[0])
            return self.resolve_type(args[1] if bool(c.const) else args[2], scope)
        if name == "enable_if_t":
            args = node.template_args or []
            if len(args) not in (1, 2):
                self.error("enable_if_t<B, T = void> takes one or two template arguments", node)
            cond = args[0] if not isinstance(args[0], ast.NamedType) else ast.Name(
                args[0].coord, args[0].name)
            c = self.expr(cond, scope)
            if c.const is None:
                self.error("the condition of enable_if_t must be a constant", args[0])
            if not bool(c.const):   # in a template's default argument: removes the candidate
                self.error("no type named 'type' in 'enable_if<false>'", node,
                           hint="'enable_if_t' cannot be used to disable this declaration")
            return self.resolve_type(args[1], scope) if len(args) == 2 else ty.VOID
        if name in ("remove_cv_t", "remove_addrspace_t"):
            args = node.template_args or []
            if len(args) != 1:
                self.error(f"{name}<T> takes one template argument", node)
            return self.resolve_type(args[0], scope)   # qualifiers are not part of a Type
        if name == "simdgroup_matrix":
            args = node.template_args or []
            elem = self.resolve_type(args[0], scope) if args else None
            dims = [self.const_int(a, scope, "matrix size") for a in args[1:]]
            if elem not in (ty.HALF, ty.BFLOAT, ty.FLOAT) or dims not in ([8, 8], [8]):
                self.error("simdgroup_matrix<T, 8, 8> needs T = half, bfloat or float", node)
            return ty.SimdMatrixType(elem)
        if name == "atomic":
            args = node.template_args or []
            elem = self.resolve_type(args[0], scope) if args else None
            if not isinstance(elem, ScalarType):
                self.error("atomic<T> needs a scalar type argument", node)
            return AtomicType(elem)
        found = self.lookup_scope(node, scope).lookup(name)
        if node.template_args is not None and isinstance(found, StructType) and (
                found in self.instance_of):
            found = self.instance_of[found][0]  # `Acc<int>` inside the body of `Acc<float>`
        if isinstance(found, StructTemplate):
            return self.struct_instance(found, node, scope)
        if isinstance(found, Type):
            return found
        if isinstance(found, tuple) and found[0] == "alias_template":
            return self.alias_instance(found, node, scope)
        t = ty.TYPE_NAMES.get(name)
        if t is not None:
            return t
        if name == "auto":
            return None  # type: ignore[return-value]  # deduced by the declaration
        if re.fullmatch(r"(float|half)[234]x[234]", name):
            self.error(f"matrix types ('{name}') are not supported by metalsim", node,
                       width=len(name),
                       hint="use an array of vectors (column-major, as Metal's matrices), or "
                            "simdgroup_matrix for 8x8 tiles")
        candidates = list(ty.TYPE_NAMES) + [k for k in scope.visible()
                                            if isinstance(scope.lookup(k), Type)]
        self.error(f"unknown type name '{name}'", node, hint=self.suggest(name, candidates),
                   width=len(name))

    def alias_instance(self, found: tuple, node: ast.NamedType, scope: Scope) -> Type:
        """The type an alias template (`("alias_template", alias[, its struct's scope])`)
        names for the template arguments of `node`, resolved in `scope`."""
        alias, where = found[1], found[2] if len(found) > 2 else self.globals
        inner = Scope(self.bind_template(alias.template_params, node.template_args or [],
                                         scope, node), where)
        return self.resolve_type(alias.type, inner)

    def bind_template(self, params: list[ast.TemplateParam], args: list, scope: Scope,
                      where: ast.Node) -> dict:
        self.check_not_variadic(params, getattr(where, "name", "template"), where)
        names: dict = {}
        for i, p in enumerate(params):
            arg = args[i] if i < len(args) else p.default
            if arg is None:
                self.error(f"missing template argument for '{p.name}'", where)
            bound = Scope(dict(names), scope)
            # A default argument may name the parameters before it (`typename AccT = T`).
            names[p.name] = self.template_value(p, arg, scope if i < len(args) else bound, bound)
        return names

    def template_value(self, p: ast.TemplateParam, arg, scope: Scope,
                       params_scope: Scope | None = None):
        """The value of template parameter `p` for `arg` (resolved in `scope`); the type of a
        non-type parameter may name the parameters before it (`template <typename T, T v>`),
        bound in `params_scope`."""
        if isinstance(arg, (Type, Var)):  # already resolved (deduced or instantiated)
            return arg
        type_node = isinstance(arg, ast.NamedType | ast.PointerType | ast.ArrayType)
        if p.kind is None:
            if not type_node:
                self.error(f"template argument for template type parameter '{p.name}' must "
                           f"be a type", arg)
            return self.resolve_type(arg, scope)
        t = self.resolve_type(p.kind, params_scope or scope)
        if isinstance(t, FunctionPointerType):
            return self.function_argument(t, arg, scope)
        if isinstance(arg, ast.NamedType) and not arg.template_args and not isinstance(
                scope.lookup(arg.name) or ty.TYPE_NAMES.get(arg.name), Type):
            arg = ast.Name(arg.coord, arg.name)  # a bare name parsed as a type: `Buf<T, N>`
        if type_node and not isinstance(arg, ast.Name):
            self.error(f"template argument for non-type template parameter '{p.name}' must be "
                       f"an expression", arg)
        e = self.expr(arg, scope)
        if e.const is None:
            self.error(f"template argument for '{p.name}' must be a constant", arg)
        return Var("const", t, readonly=True, const=self.convert(e, t, arg).const)

    def variable_template(self, tmpl: StructTemplate, node: ast.Name, scope: Scope) -> Var:
        """The value of the variable template `tmpl` (its node an `ast.VariableTemplate`, with
        its specialisations) for the template arguments of `node` (`is_integral_v<T>`),
        evaluated once per argument list, from the most specialised definition that
        matches them, as for a struct template."""
        vt = tmpl.node
        if node.template_args is None:
            self.error(f"use of variable template '{vt.name}' requires template arguments",
                       node, width=len(vt.name))
        bound = self.bind_template(vt.template_params, node.template_args, scope, node)
        key = (id(vt), tuple(argument_key(v) for v in bound.values()))
        value = self.variable_instances.get(key)
        if value is None:
            definition, bindings = self.specialization_for(tmpl, bound, node)
            d, inner = definition.decl, Scope(bindings, self.globals)
            shown = f"{vt.name}<{', '.join(argument_text(v) for v in bound.values())}>"
            with self.instantiating(f"'{shown}'"):
                if not d.constexpr or d.init is None:
                    self.error("metalsim supports constexpr variable templates only", d,
                               hint=f"declare it 'constexpr constant ... {vt.name} = ...;'")
                t, _, _ = self.resolve_decl_type(d.type, inner)
                e = self.convert(self.expr(d.init, inner), t, d)
                if e.const is None:
                    self.error(f"constexpr variable '{vt.name}' must be initialized by a "
                               "constant expression", d.init)
            value = self.variable_instances[key] = Var("const", t, readonly=True, const=e.const)
        return value

    def const_int(self, node: ast.Node, scope: Scope, what: str) -> int:
        if isinstance(node, ast.NamedType):  # a bare name parsed as a type in a template list
            node = ast.Name(node.coord, node.name)
        e = self.expr(node, scope)
        if e.const is None or not ty.is_integer(e.type):
            self.error(f"{what} is not an integral constant expression", node)
        return int(e.const)

    # --- calls ------------------------------------------------------------------------------
    def x_Call(self, node: ast.Call, scope: Scope) -> E:
        name = node.func
        qualified = self.builtins.get(("qualified_call", name.qualifier))
        if qualified is not None:
            return qualified(self, node, scope)
        if name.unqualified and self.is_member(scope, name.name, "method"):
            # `add(x)` in a member function calls `this->add(x)`.
            return self.x_MethodCall(ast.MethodCall(node.coord, ast.This(node.coord), name.name,
                                                    node.args, True, name.template_args), scope)
        v = self.lookup_scope(name, scope).lookup(name.name) if not name.qualifier else None
        if isinstance(v, Var) and v.type in self.closures:
            return self.call_closure(node, self.closures[v.type], v.type, scope)
        if isinstance(v, Var) and isinstance(v.type, StructType):
            # `op(a, b)` on a function object calls its `operator()`.
            return self.x_MethodCall(ast.MethodCall(node.coord, name, "operator()", node.args),
                                     scope)
        if name.qualifier and name.qualifier not in ("fast", "precise"):
            static = self.call_static(node, scope)
            if static is not None:
                return static
        if isinstance(v, Var) and v.kind == "function":
            return self.call_function_pointer(node, v, scope)
        if isinstance(v, Var) and v.kind == "unusable":   # `auto f = f(1);`
            self.var_expr(v, name)
        if isinstance(v, Var) and v.kind != "method":
            self.error(f"called object type '{v.type}' is not a function", name,
                       width=len(name.name),
                       hint=f"'{name.name}' is a kernel parameter that MLX declares from the "
                            f"attribute, not a function: drop the '()'"
                       if name.name in ATTRIBUTE_NAMES else "")
        if self.overload_candidates(name, self.adl_arguments(node, scope)) and not (
                self.prefers_builtin(node, scope)):
            return self.call_user(node, scope)
        handler = self.builtins.get(("call", name.name))
        if handler is not None:
            return handler(self, node, scope)
        args = [self.rvalue(self.expr(a, scope)) for a in node.args]
        if name.name in mathlib.FUNCTIONS:
            return self.call_math(node, args)
        visible = list(self.functions) + [n for n in mathlib.FUNCTIONS if n[:2] != "__"] + [
            k[1] for k in self.builtins if k[0] == "call"]
        self.error(f"use of undeclared identifier '{name.name}'", name,
                   hint=cuda_hint(name.name) or self.suggest(name.name, visible),
                   width=len(name.name))

    def adl_arguments(self, node: ast.Call, scope: Scope) -> list[E] | None:
        """The arguments whose types argument-dependent lookup looks at, for a call written
        unqualified in a program with namespaces (None otherwise)."""
        name = node.func
        bare = name.name.rpartition("::")[2]
        if name.written_unqualified and node.args and bare in self.hidden_friends:
            return [self.expr(a, scope) for a in node.args]
        if not (name.written_unqualified and self.unit.namespaces and node.args):
            return None
        if len(self.functions) != self.namespaced_names[0]:
            self.namespaced_names = (len(self.functions), {
                k.rpartition("::")[2] for k in self.functions if "::" in k})
        if bare not in self.namespaced_names[1] and (name.name == bare
                                                     or bare not in self.functions):
            return None   # no other namespace declares a function of the name
        return [self.expr(a, scope) for a in node.args]

    def overload_candidates(self, name: ast.Name, args: list[E] | None = None
                            ) -> list[ast.FunctionDef]:
        """The program's functions a call of `name` chooses among: its program name's and
        its overload set's others, and for a call `f(args)` written unqualified those that
        argument-dependent lookup adds; for `fast::f` and `precise::f`, those the program
        declares in `metal::fast` and `metal::precise` (beside Metal's own)."""
        if name.qualifier in ("fast", "precise"):
            return self.functions.get(f"metal::{name.qualifier}::{name.name}", [])
        found = self.functions.get(name.name, [])
        for other in name.overloads:
            found = found + self.functions.get(other, [])
        if args and name.written_unqualified and self.unit.namespaces:
            bare = name.name.rpartition("::")[2]   # what was written, not what lookup found
            found = found + [f for namespace in self.associated_namespaces(args)
                             for f in self.functions.get(program_name(namespace, bare), [])
                             if f not in found]
        if args and name.written_unqualified:
            found = found + self.hidden_friends_for(name.name.rpartition("::")[2], args)
        return found

    def hidden_friends_for(self, name: str, args: list[E]) -> list[ast.FunctionDef]:
        """The friend functions named `name` defined in the structs associated with `args`
        (each argument's struct, its bases and its template arguments' structs)."""
        friends = self.hidden_friends.get(name)
        if not friends:
            return []
        classes: set[StructType] = set()
        for a in args:
            self.add_associated(a.type, set(), set(), classes)
        found = [f for f in friends if f.template_params is None
                 and f.friend_of in {c.name for c in classes}]
        for c in classes:
            instance = self.instance_of.get(c)
            if instance is None or self.instance_definition.get(c) is not instance[0].node:
                continue   # (a specialisation's instance has the friends it defines)
            for f in friends:
                if f.template_params is not None and f.friend_of == instance[0].node.name:
                    found.append(self.friend_copy(f, c, instance[1]))
        return found

    def friend_copy(self, friend: ast.FunctionDef, instance: StructType, bound: dict
                    ) -> ast.FunctionDef:
        """The function `friend` (defined in a struct template) is for `instance`: not a
        template, its parameters' and body's template parameters and the template's name
        meaning the instance's (as `deduce` gives them)."""
        key = (id(friend), instance)
        copy = self.friend_copies.get(key)
        if copy is None:
            copy = self.friend_copies[key] = replace(friend, template_params=None)
            self.friend_bindings[id(copy)] = {**bound, friend.friend_of: instance}
        return copy

    def associated_namespaces(self, args: list[E]) -> set[str]:
        """The namespaces argument-dependent lookup searches for a call with `args` (C++
        [basic.lookup.argdep]/2): for each argument of (pointer or array to) a class or an
        enumeration, the innermost namespace enclosing it, its base classes, and the types
        of a class template instance's type arguments."""
        found: set[str] = set()
        for a in args:
            self.add_associated(a.type, found, set())
        return found

    def add_associated(self, t: Type, found: set[str], seen: set[Type],
                       named: set[StructType] | None = None) -> None:
        """Adds to `found` the namespaces associated with type `t` (and to `named` its
        associated structs)."""
        while isinstance(t, PointerType | ArrayType):
            t = t.pointee if isinstance(t, PointerType) else t.elem
        if isinstance(t, ScalarType) and t.enum is not None:
            found.add(self.declaring_namespace(t.name))
        if not isinstance(t, StructType) or t in seen:
            return
        seen.add(t)
        classes = [t]
        while classes:   # the class and its bases, direct and indirect
            c = classes.pop()
            found.add(self.declaring_namespace(c.name))
            if named is not None:
                named.add(c)
            classes += self.struct_bases.get(c, [])
        instance = self.instance_of.get(t)
        for v in instance[1].values() if instance is not None else ():
            if not isinstance(v, Var):
                self.add_associated(v, found, seen, named)

    def declaring_namespace(self, program: str) -> str:
        """The innermost namespace enclosing the type named `program` (`na::S<nb::T>::In`
        -> `na`; "" for the global one)."""
        path = program.split("<")[0]
        while path and path not in self.unit.namespaces:
            path = enclosing_namespace(path)
        return path

    def prefers_builtin(self, node: ast.Call, scope: Scope) -> bool:
        """Whether Metal's own function of the name wins over the program's overloads of it
        (MLX's bf16_math.h adds bfloat overloads of Metal's math and SIMD-group functions):
        where none of them is viable, or Metal's converts the arguments at no more cost than
        the best of them does (`pow(2, x)` with a float `x` calls Metal's `pow(float, float)`,
        not the bfloat one); a SIMD-group function where it takes the arguments exactly."""
        name = node.func.name
        if name not in mathlib.FUNCTIONS and ("call", name) not in self.builtins:
            return False
        args = [self.expr(a, scope) for a in node.args]
        types = [self.rvalue(a).type for a in args]
        if name not in mathlib.FUNCTIONS and simd.takes_exactly(name, types):
            # No overload converting the data beats it, however those rank among themselves
            # (MLX's int64_t, uint64_t, bool and complex64_t shuffles, for `int` data).
            return True
        try:
            fdef, bindings = self.resolve_overload(node, args, scope)
        except CompileError as failure:
            if failure.diagnostic.message.startswith("no matching function"):
                return True
            raise
        if name not in mathlib.FUNCTIONS:
            return False
        try:
            params, _ = mathlib.resolve(name, types)
        except LookupError:
            return False
        costs = [arithmetic_cost(a, p) for a, p in zip(types, params)]
        chosen = self.match_cost(fdef, bindings, args)
        return None not in costs and (chosen is None or sum(costs) <= chosen.conversions)

    def call_math(self, node: ast.Call, args: list[E]) -> E:
        name = node.func.name
        try:
            params, result = mathlib.resolve(name, [a.type for a in args])
        except LookupError as exc:
            self.error(str(exc), node)
        conv = [self.convert(a, p, a.coord, explicit=True) for a, p in zip(args, params)]
        variant = node.func.qualifier if node.func.qualifier in ("fast", "precise") else (
            self.math_variant)
        if all(c.const is not None for c in conv):
            c = mathlib.call(name, [c.const for c in conv], params, result, variant)
            return E(result, lambda f, lanes: c, node.coord, const=c)
        evs = [c.ev for c in conv]
        return E(result, lambda f, lanes: mathlib.call(
            name, [ev(f, lanes) for ev in evs], params, result, variant), node.coord)

    def call_user(self, node: ast.Call, scope: Scope) -> E:
        args = [self.expr(a, scope) for a in node.args]
        fdef, bindings = self.specialized(*self.resolve_overload(node, args, scope))
        code = self.instantiate(fdef, bindings)
        # Default arguments are evaluated where the function is declared (`T step = T(2)`).
        declared = Scope(dict(bindings), self.globals)
        call = self.call_code(code, self.bind_arguments(code.params, fdef, args, declared),
                              node.coord)
        return self.constant_call(fdef, call, args)

    def default_argument(self, t: Type, default: ast.Node, scope: Scope) -> E:
        """The value of a default argument; braces (`S s = {}`) copy-list-initialize."""
        if not isinstance(default, ast.InitList):
            return self.expr(default, scope)
        if isinstance(t, StructType):
            return (self.init_value(t, default, scope) if self.constructors_of(t)
                    else self.aggregate(t, default, scope))
        if not default.items:  # `int x = {}`: value-initialized
            return constant(0, t, default.coord)
        return self.convert(self.expr(default.items[0], scope), t, default)

    def bind_arguments(self, params: list[tuple[Var, bool]], fdef: ast.FunctionDef,
                       args: list[E], scope: Scope) -> list[tuple[str, Callable]]:
        """How each argument (default arguments included) initialises its parameter: a
        (kind, evaluator) pair per parameter, for `call_code`."""
        args = args + [self.default_argument(var.type, p.default, scope) for (var, _), p in
                       list(zip(params, fdef.params))[len(args):]]
        arg_evs = []
        for (var, is_ref), a in zip(params, args):
            if is_ref:
                if isinstance(var.type, StructType) and a.loc is not None and a.type != var.type:
                    a = self.as_base(a, var.type, a.coord) or a   # a derived object's base
                if a.loc is None or (var.readonly and a.type != var.type):
                    if not var.readonly:
                        self.error("a non-const reference cannot bind to a temporary", a.coord)
                    # The temporary (also one converted from an lvalue of another type, as
                    # `const int&` binds a `short`) lives in the callee's frame, and the
                    # reference names it.
                    kind = "object_ref" if isinstance(var.type, StructType) else "temp"
                    arg_evs.append((kind, self.convert(a, var.type, a.coord).ev))
                    continue
                if a.type != var.type:
                    self.error(f"reference of type '{var.type}' cannot bind to '{a.type}'",
                               a.coord)
                if a.readonly and not var.readonly:
                    self.error("binding a non-const reference to a const object", a.coord)
                if a.space is not None and a.space != var.space:
                    self.error(f"a '{var.space} {var.type}&' cannot bind to an object in the "
                               f"{a.space} address space", a.coord)
                arg_evs.append(("ref", a.loc))
            else:
                arg_evs.append((var.kind, self.convert(a, var.type, a.coord).ev))
        return arg_evs

    def call_code(self, code: FunctionCode, arg_evs: list[tuple[str, Callable]],
                  coord: Coord) -> E:
        """A call of the compiled function `code`, its parameters bound by `arg_evs`."""
        rt, tracing, by_ref = code.return_type, self.tracing, code.returns_ref

        def ev(f, lanes):
            m = f.m
            size = m.batch.size
            frame = Frame(m, code.nslots, caller=f, code=code)
            for (var, _), (kind, aev) in zip(code.params, arg_evs):
                value = aev(f, lanes)
                if kind == "region":  # a struct passed by value: a copy in thread memory
                    frame.vars[var.slot] = thread_object(m, var.name, var.type, value, lanes,
                                                         coord)
                elif kind == "object_ref":
                    region = thread_object(m, var.name, var.type, value, lanes, coord)
                    frame.vars[var.slot] = bind_argument(
                        "ref", None, MemLoc(region, np.zeros(lanes.n, np.int64)), lanes, size)
                elif kind == "temp":   # a `const T&` bound to a temporary (a pointer's too)
                    held = "ptr" if isinstance(var.type, PointerType | ty.NullptrType) else "value"
                    frame.vars[var.slot] = VarLoc(bind_argument(held, var, value, lanes, size))
                else:
                    frame.vars[var.slot] = bind_argument(kind, var, value, lanes, size)
            caller_flow = m.flow
            if tracing:
                traced = m.traced_of(lanes)
                arrived = dict(zip(traced.tolist(), m.sources(traced)))
                for var, _ in code.params:
                    frame.sources[var.slot] = arrived
            code.body(frame, lanes)
            if tracing:
                m.flow = caller_flow
                m.note_sources(m.traced_of(lanes), frame.ret_sources)
            if by_ref is not None:
                return returned_location(frame.ret, lanes, code.name, coord)
            if rt == ty.VOID:
                return None
            if frame.ret is None:
                return lane_zeros(rt, lanes.n)
            if isinstance(frame.ret, PtrSlot):
                return frame.ret.get(lanes)
            return frame.ret[lanes.idx]
        if by_ref is not None:
            return self.reference_call(code, ev, coord)
        return E(rt, ev, coord)

    def resolve_overload(self, node: ast.Call, args: list[E], scope: Scope):
        name = node.func.name
        explicit = node.func.template_args or []
        candidates: list[tuple[Rank, ast.FunctionDef, dict]] = []
        notes: list[str] = []
        overloads = self.overload_candidates(node.func, args)
        for fdef in overloads:
            if fdef.body is None and any(o.body is not None for o in overloads
                                         if o is not fdef and o.name == fdef.name):
                continue
            # Specialisations replace a chosen template's body; a template argument list,
            # even an empty one (`g<>(a)`), rules out every non-template (C++ [temp.arg.explicit]).
            if is_explicit_specialization(fdef) or (
                    node.func.template_args is not None and fdef.template_params is None):
                continue
            bindings = self.deduce(fdef, explicit, args, scope, notes)
            if bindings is None or not self.substitutes(fdef, bindings, notes):
                continue
            rank = self.match_cost(fdef, bindings, args)
            if rank is None:
                continue
            # C++ prefers non-templates, then the more specialized template: a parameter whose
            # type is a bare template parameter matches anything, so it costs a little.
            rank = rank.plus_template((0.5 if fdef.template_params else 0.0)
                                      + 0.1 * self.generic_params(fdef))
            candidates.append((rank, fdef, bindings))
        if not candidates:
            if notes:  # as clang words it, the reason in its note
                self.error(f"no matching function for call to '{name}'", node, hint=notes[0])
            shown = ", ".join(str(self.rvalue(a).type) for a in args)
            self.error(f"no matching function for call to '{name}({shown})'", node)
        chosen = ranking.best(candidates)
        if len(chosen) != 1:
            self.error(f"call to '{name}' is ambiguous", node)
        return chosen[0][1:]

    def substitutes(self, fdef: ast.FunctionDef, bindings: dict, notes: list[str],
                    outer: Scope | None = None) -> bool:
        """Whether a template's return type is valid for `bindings` (SFINAE: a failure, such as
        `enable_if_t<false, T>`, removes the candidate instead of being an error); `outer` is
        where its names resolve (a member function's struct; default program scope)."""
        if not fdef.template_params:
            return True
        try:
            self.resolve_type(fdef.return_type, Scope(dict(bindings), outer or self.globals))
        except CompileError as failure:
            notes.append(f"candidate template ignored: {failure.diagnostic.message}")
            return False
        return True

    def deduce(self, fdef: ast.FunctionDef, explicit: list, args: list[E], scope: Scope,
               notes: list[str] | None = None):
        """The template arguments of `fdef` for a call with `args`, or None where deduction
        fails (a conflict is explained in `notes`, as clang's note says it)."""
        fixed = self.friend_bindings.get(id(fdef))
        if fixed is not None:   # a struct template's hidden friend, for one instance
            return dict(fixed) if len(args) == len(fdef.params) and not explicit else None
        params = fdef.template_params or []
        if len(explicit) > len(params):
            return None
        if any(p.pack for p in params) or any(p.pack for p in fdef.params):
            if notes is not None:
                notes.append("candidate template ignored: variadic templates are not supported "
                             "by metalsim")
            return None
        bindings: dict = {}
        for p, a in zip(params, explicit):
            bindings[p.name] = self.template_value(p, a, scope, Scope(dict(bindings), scope))
        # Explicitly specified parameters take no part in deduction (C++ [temp.arg.explicit]).
        names = {p.name for p in params[len(explicit):]}
        required = sum(1 for p in fdef.params if p.default is None)
        if not required <= len(args) <= len(fdef.params):
            return None
        try:
            for p, a in zip(fdef.params, args):
                if isinstance(p.type, ast.ReferenceType):   # binds `a` itself: no decay
                    self.deduce_from(p.type.referee, a.type, names, bindings, scope)
                else:
                    self.deduce_from(p.type, self.rvalue(a).type, names, bindings, scope)
        except DeductionConflict as conflict:
            if notes is not None:
                notes.append(str(conflict))
            return None
        return self.with_default_arguments(params, bindings, scope, notes)

    def with_default_arguments(self, params: list[ast.TemplateParam], bindings: dict,
                               scope: Scope, notes: list[str] | None = None) -> dict | None:
        """`bindings` completed by the default arguments of the parameters deduction left
        unbound, or None where one has none or its substitution fails (SFINAE: the candidate
        is not viable, `typename = enable_if_t<...>`)."""
        for p in params:
            if p.name not in bindings:
                if p.default is None:
                    return None
                try:
                    bindings[p.name] = self.template_value(p, p.default, Scope(bindings, scope))
                except CompileError as failure:
                    if notes is not None:
                        notes.append(f"candidate template ignored: {failure.diagnostic.message}")
                    return None
        return bindings

    def deduce_from(self, pattern: ast.Node, actual: Type, names: set[str],
                    bindings: dict, scope: Scope | None = None) -> None:
        """Bind the template parameters in `pattern` (`T`, `T*`, `vec<T, N>`, an alias
        template's `frag_t<T>`, looked up in `scope`) from `actual`."""
        if isinstance(pattern, ast.PointerType) and isinstance(actual, PointerType):
            self.deduce_from(pattern.pointee, actual.pointee, names, bindings, scope)
        elif isinstance(pattern, ast.ArrayType) and isinstance(actual, PointerType):
            self.deduce_from(pattern.element, actual.pointee, names, bindings, scope)
        elif isinstance(pattern, ast.ArrayType) and isinstance(actual, ArrayType):
            self.deduce_from(pattern.element, actual.elem, names, bindings, scope)  # `T (&a)[N]`
            size = getattr(pattern.size, "name", None)
            if size in names:
                bind_deduced(bindings, size, Var("const", INT, readonly=True,
                                                 const=np.asarray(actual.length, np.int32)))
        elif isinstance(pattern, ast.NamedType):
            if pattern.name in names:
                bind_deduced(bindings, pattern.name, actual)
            elif self.deduce_through_alias(pattern, actual, names, bindings, scope):
                pass
            elif pattern.template_args and actual in self.instance_of:
                self.deduce_from_instance(pattern, actual, names, bindings, scope)
            elif pattern.name == "vec" and isinstance(actual, VectorType):
                elem, size = (pattern.template_args or [None, None])[:2]
                self.deduce_from(elem, actual.elem, names, bindings, scope)
                name = getattr(size, "name", None)
                if name in names:
                    bind_deduced(bindings, name, Var("const", INT, readonly=True,
                                                     const=np.asarray(actual.n, np.int32)))
            elif pattern.name == "simdgroup_matrix" and isinstance(actual, ty.SimdMatrixType):
                elem = (pattern.template_args or [None])[0]
                self.deduce_from(elem, actual.elem, names, bindings, scope)

    def deduce_through_alias(self, pattern: ast.NamedType, actual: Type, names: set[str],
                             bindings: dict, scope: Scope | None) -> bool:
        """Deduce through an alias template, which C++ sees through ([temp.alias]): with
        `template <typename U> using frag_t = vec<U, 2>;`, `frag_t<T>` deduces `T` as
        `vec<T, 2>` does (MLX's steel `BaseMMAFrag::mma` takes `dtype_frag_t<Atype>&`).
        False where `pattern` names no alias template visible in `scope`."""
        if scope is None or not pattern.template_args or pattern.member_of:
            return False
        found = self.lookup_scope(pattern, scope).lookup(pattern.name)
        if not (isinstance(found, tuple) and found[0] == "alias_template"):
            return False
        params = found[1].template_params or []
        given = {p.name: a for p, a in zip(params, pattern.template_args)}
        self.deduce_from(substituted(found[1].type, given), actual, names, bindings, scope)
        return True

    @staticmethod
    def generic_params(fdef: ast.FunctionDef) -> int:
        names = {p.name for p in fdef.template_params or []}
        count = 0
        for p in fdef.params:
            t = p.type.referee if isinstance(p.type, ast.ReferenceType) else p.type
            count += isinstance(t, ast.NamedType) and t.name in names
        return count

    def match_cost(self, fdef: ast.FunctionDef, bindings: dict, args: list[E],
                   outer: Scope | None = None) -> Rank | None:
        """How converting `args` to the parameters of `fdef` (whose types are resolved in
        `outer`, by default program scope) ranks, or None where one does not convert."""
        inner = Scope(dict(bindings), outer or self.globals)
        costs: list[float] = []
        kinds: list[str] = []
        for p, a in zip(fdef.params, args):
            try:
                pt = self.param_type(p, inner)
            except CompileError:
                return None
            kinds.append("")
            costs.append(0)
            if isinstance(p.type, ast.ReferenceType):
                at = a.type   # bound, not copied (a struct holding an atomic cannot be)
                penalty, kinds[-1] = self.reference_binding(p, inner, a, pt)
                costs[-1] += penalty
            else:
                at = self.rvalue(a).type
            if pt == at or (isinstance(pt, ArrayType) and pt == a.type):  # `T (&a)[N]`
                continue
            if isinstance(pt, StructType) and self.is_base_of(pt, at):
                costs[-1] += self.derivation_cost(pt, at)   # derived to base: a conversion
            elif isinstance(pt, StructType) and self.constructors_of(pt):
                if not self.converts_implicitly(a, pt):
                    return None
                costs[-1] += 10  # a user-defined conversion ranks below every standard one
            elif isinstance(at, StructType) and not isinstance(pt, StructType):
                found = self.conversion_function(at, pt, False)
                if found is None:
                    return None
                # a user-defined conversion, then what converts its result (which ranks
                # sequences through the same conversion function)
                costs[-1] += 10 + self.after_conversion_function(found, pt)
            elif at == ty.NULLPTR_T or (a.null_constant and isinstance(
                    pt, PointerType | ty.NullptrType)):
                if not isinstance(pt, PointerType | ty.NullptrType):
                    return None   # (not to bool: that needs direct-initialization)
                costs[-1] += 2    # a pointer conversion ([conv.ptr]/1)
            elif isinstance(pt, PointerType) or isinstance(at, PointerType):
                if not (isinstance(pt, PointerType) and isinstance(at, PointerType)
                        and pt.space == at.space and (pt.const or not at.const)):
                    return None
                if pt.pointee == at.pointee:
                    costs[-1] += 1
                elif self.base_offset(at.pointee, pt.pointee) is not None:
                    costs[-1] += self.derivation_cost(pt.pointee, at.pointee)
                elif pt.pointee == ty.VOID:
                    # a conversion, worse than to a base class's pointer ([over.ics.rank]/4.4)
                    costs[-1] += 2.5
                else:
                    return None
            else:
                step = arithmetic_cost(at, pt)
                if step is None:
                    return None
                costs[-1] += step
        return Rank(sum(costs), tuple(kinds), per_argument=tuple(costs))

    def reference_binding(self, p: ast.Param, scope: Scope, a: E, pt: Type
                          ) -> tuple[float, str]:
        """How a reference parameter (to `pt`) binds argument `a`: what it costs beyond the
        conversion, and how it ranks (`ranking.REF`, `CONST_REF` or ""). `T&` binds only a
        modifiable lvalue of its type or a derived one (else it is as good as not viable,
        and binding it reports why); it binds one better than `const T&` does."""
        const = self.resolve_decl_type(p.type, scope)[1]
        modifiable = a.loc is not None and not a.readonly
        if not const:
            # A struct is bound, not loaded (one holding an atomic cannot be copied).
            at = a.type if isinstance(a.type, StructType) else self.rvalue(a).type
            fits = at == pt or a.type == pt or self.is_base_of(pt, at)
            return (0, ranking.REF) if modifiable and fits else (ranking.UNBOUND, "")
        return 0, ranking.CONST_REF if modifiable else ""

    def instantiate(self, fdef: ast.FunctionDef, bindings: dict, outer: Scope | None = None,
                    this: PointerType | None = None) -> FunctionCode:
        """Compile `fdef` for `bindings` of its template parameters, once. A member function
        has the names of its struct in `outer` and `this`, its implicit first parameter."""
        key = (id(fdef), tuple(sorted((k, str(v.type) + str(v.const) if isinstance(v, Var)
                                       else str(v)) for k, v in bindings.items())), id(outer))
        code = self.instances.get(key)
        if code is not None:
            if code.body is None:  # called from its own body, directly or not
                self.error(f"recursive call of '{fdef.name}': Metal does not support recursive "
                           f"function calls", fdef, width=len(fdef.name),
                           hint="write the recursion as a loop, or as a template recursion "
                                "ended by 'if constexpr'")
            return code
        if fdef.body is None:
            self.error(f"function '{fdef.name}' is declared but never defined", fdef)
        scope = Scope(dict(bindings), outer or self.globals)
        # `auto` (None) is deduced from the first return statement.
        rt = self.resolve_type(fdef.return_type, scope) if not (
            isinstance(fdef.return_type, ast.NamedType) and fdef.return_type.name == "void"
        ) else ty.VOID
        code = FunctionCode(fdef.name, rt, this_const=this is not None and this.const,
                            returns_ref=self.reference_return(fdef, scope, this),
                            auto_return=rt is None)
        self.instances[key] = code
        # A body is compiled where it is first called, perhaps in a loop: its own `break`s
        # are checked against its own loops.
        if len(self.open_instances) >= MAX_INSTANTIATION_DEPTH:
            self.error(f"recursive template instantiation exceeded maximum depth of "
                       f"{MAX_INSTANTIATION_DEPTH}", fdef, width=len(fdef.name),
                       hint="end the recursion with 'if constexpr' on a template parameter")
        self.open_instances.append(code)
        saved = (self.fn, self.address_taken, self.fixed_names, self.loop_depth,
                 self.switch_depth, self.access_from, self.incomplete_here)
        self.access_from = ((this.pointee, "") if this is not None else self.closure_access.get(
            id(fdef), (None, fdef.name.rpartition("::")[2])))
        params = {p.name for p in fdef.params}
        found = uses([fdef.body], lambda name: name.name not in params
                     and self.names_builtin(name, scope), code.returns_ref is None)
        self.fn, self.address_taken = code, found.addressed
        self.fixed_names = set() if this is not None or self.tracing else fixed_names(found)
        self.loop_depth = self.switch_depth = 0
        # a function defined before a struct's definition sees it incomplete
        self.incomplete_here = self.incomplete_before.get(id(fdef), frozenset())
        try:
            if not isinstance(fdef.return_type, ast.ReferenceType):
                self.require_complete(rt, fdef, "incomplete result type '{}' in function "
                                                "definition")
            if this is not None:
                var = Var("ptr", this, self.new_slot(), readonly=True)
                scope.names["this"] = var
                code.params.append((var, False))
            copies = []
            for p in fdef.params:
                var = self.declare_param(p, scope)
                code.params.append((var, isinstance(p.type, ast.ReferenceType)))
                if p.name in found.addressed and var.kind in ("value", "ptr"):
                    copies.append(self.param_to_memory(p, var, scope))
            inits = (self.member_initializers(fdef, scope) if isinstance(fdef, ast.Constructor)
                     else None)
            body = self.block(fdef.body, scope, new_scope=False)
            for run in reversed([*copies, *([inits] if inits is not None else [])]):
                body = sequence(run, body)
            code.body = body
            if code.return_type is None:  # `auto` with no return statement
                code.return_type = ty.VOID
        finally:
            (self.fn, self.address_taken, self.fixed_names, self.loop_depth,
             self.switch_depth, self.access_from, self.incomplete_here) = saved
            self.open_instances.pop()
        return code

    def new_slot(self) -> int:
        self.fn.nslots += 1
        return self.fn.nslots - 1

    def param_type(self, p: ast.Param, scope: Scope) -> Type:
        """The type of parameter `p`: an array parameter is adjusted to a pointer to its
        element (C++14 [dcl.fct]/5), so `f(x_strides)` matches `f(constant int64_t s[2])`."""
        t, const, space = self.resolve_decl_type(p.type, scope)
        if isinstance(t, ArrayType) and not isinstance(p.type, ast.ReferenceType):
            return PointerType(t.elem, space or "thread", const)
        return t

    def declare_param(self, p: ast.Param, scope: Scope) -> Var:
        t, const, space = self.resolve_decl_type(p.type, scope)
        if isinstance(p.type, ast.ReferenceType):
            var = Var("ref", t, self.new_slot(), readonly=const, space=space or "thread")
        elif isinstance(t, PointerType | ty.NullptrType):
            var = Var("ptr", t, self.new_slot(), readonly=const)
        elif isinstance(t, ArrayType):
            var = Var("ptr", self.param_type(p, scope), self.new_slot())
        elif isinstance(t, StructType):  # a by-value struct is an object in thread memory
            self.require_complete(t, p, "variable has incomplete type '{}'")
            var = Var("region", t, self.new_slot(), readonly=const, space="thread",
                      name=p.name or "")
        else:
            var = Var("value", t, self.new_slot(), readonly=const)
        if p.name:
            if p.name in scope.names:
                self.error(f"redefinition of parameter '{p.name}'", p)
            scope.names[p.name] = var
        return var

    def param_to_memory(self, p: ast.Param, var: Var, scope: Scope) -> Callable:
        """Move by-value parameter `p` (held as `var`) into thread memory when its function takes
        its address (`&x`, `*(thread uint*)&x`): as for a local so used, the name then names
        an object in memory, which the call's argument initialises."""
        copy = ast.VarDecl(p.coord, p.name, p.type, ast.Name(p.coord, p.name))
        # (the copy's initializer names the parameter, not the copy)
        return self.declare_thread_memory(copy, var.type, var.readonly, scope,
                                          Scope({p.name: var}, scope))

    # --- the kernel -------------------------------------------------------------------------
    def compile_kernel(self, host_name: str | None = None) -> tuple[FunctionCode, dict[str, Var]]:
        """Compile the `[[kernel]]` function (the last one, or the one a pipeline names
        `host_name`: a kernel function's name, or the `[[host_name("...")]]` of an explicit
        instantiation of a kernel template); returns its code and its parameters by name."""
        self.declare_globals()
        self.check_early_definitions()
        kernels = [f for f in self.unit.items if isinstance(f, ast.FunctionDef)
                   and any(a.name == "kernel" for a in f.attributes) and f.body is not None]
        if not kernels:
            self.error("no [[kernel]] function found", self.unit)
        if host_name is None:
            fdef, inst = kernels[-1], None
        else:
            fdef, inst = self.named_kernel(kernels, host_name)
        bindings: dict = {}
        if fdef.template_params:
            if inst is None:
                inst = next((i for i in reversed(self.unit.items)
                             if isinstance(i, ast.ExplicitInstantiation)
                             and i.name == fdef.name), None)
            if inst is None:
                self.error(f"kernel template '{fdef.name}' is never instantiated", fdef)
            bindings = self.bind_template(fdef.template_params, inst.template_args,
                                          self.globals, inst)
        self.kernel_def = fdef
        code = self.instantiate(fdef, bindings)
        params = {p.name: var for p, (var, _) in zip(fdef.params, code.params)}
        # What the whole launch declares, wherever the declarations are.
        code.threadgroup_bytes = sum(c.threadgroup_bytes for c in self.instances.values())
        code.thread_bytes = sum(c.thread_bytes for c in self.instances.values())
        code.largest_thread_object = max((c.largest_thread_object
                                          for c in self.instances.values()), key=lambda x: x[1])
        code.threadgroup_granules = sum(c.threadgroup_granules
                                        for c in self.instances.values())
        return code, params

    def named_kernel(self, kernels: list[ast.FunctionDef], host_name: str
                     ) -> tuple[ast.FunctionDef, ast.ExplicitInstantiation | None]:
        """The kernel function a pipeline named `host_name` runs, and the explicit
        instantiation that named it (None for a kernel that is not a template)."""
        names: list[str] = []
        for item in self.unit.items:
            if not isinstance(item, ast.ExplicitInstantiation):
                continue
            for a in item.attributes:
                if a.name == "host_name" and a.args and isinstance(a.args[0], ast.StringLiteral):
                    names.append(a.args[0].value)
                    if a.args[0].value == host_name:
                        fdef = next((k for k in kernels if k.name == item.name), None)
                        if fdef is None:
                            self.error(f"'{host_name}' instantiates '{item.name}', which is not "
                                       "a [[kernel]] function template defined here", item)
                        return fdef, item
        plain = [k for k in kernels if not k.template_params]
        for k in plain:
            if k.name == host_name:
                return k, None
        names += [k.name for k in plain]
        raise CompileError(f"no kernel function named '{host_name}'", None, self.sm,
                           hint=self.suggest(host_name, names) or (
                               "the kernels here: " + ", ".join(names) if names
                               else "a kernel template runs under the [[host_name(\"...\")]] "
                                    "of an explicit instantiation, which this source has none of"))


def arithmetic_cost(at: Type, pt: Type) -> int | None:
    """What converting a value of arithmetic type `at` to `pt` costs in overload ranking
    (0 none, 1 a promotion, 2 another conversion, 3 a scalar splatted into a vector), or
    None where it does not convert implicitly."""
    if at == pt:
        return 0
    if isinstance(pt, VectorType) != isinstance(at, VectorType):
        if isinstance(at, VectorType) or not ty.is_arithmetic(at):
            return None
        return 3
    if not (ty.is_arithmetic(pt) and ty.is_arithmetic(at)):
        return None
    if isinstance(pt, ScalarType) and pt.enum or isinstance(at, ScalarType) and at.scoped_enum:
        return None   # nothing converts to an enumeration implicitly, nor an `enum class`
    if isinstance(pt, VectorType) and pt.n != at.n:
        return None
    # C++ ranks a promotion above every other conversion: `f(1u)` with `f(int)` and
    # `f(float)` is ambiguous, `f(short(1))` calls `f(int)`; a vector's is never a promotion.
    return 1 if isinstance(at, ScalarType) and ty.is_promotion(at, pt) else 2


def sequence(first: Callable, then: Callable) -> Callable:
    """A Run doing `first`, then `then` on the lanes it leaves."""
    def run(f, lanes):
        return then(f, first(f, lanes))
    return run
