"""The abstract syntax tree of the Metal Shading Language subset metalsim runs.

Read top to bottom, the node list is the grammar: types, expressions, statements, then the
declarations of a translation unit. Every node carries `coord`, the position of its first token in
the section the user wrote (see `metalsim.diagnostics.Coord`), so any later stage can point at it.
Nodes hold syntax only; types and names are resolved by the compiler (`metalsim.exec.compile`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from metalsim.diagnostics import Coord


@dataclass(eq=False)
class Node:
    coord: Coord


# --- Types -------------------------------------------------------------------------------------
# A declared type is a chain: ArrayType -> PointerType/ReferenceType -> NamedType. Qualifiers that
# C++ lets appear on either side of the name (`const device float*`, `device const float*`) are
# normalised onto the NamedType they qualify.

@dataclass(eq=False)
class NamedType(Node):
    """`[const] [address space] name[<args>]`, e.g. `const device float`, `vec<half, 4>`.

    `name` keeps namespace qualifiers stripped of `metal::` (`metal::float4` -> "float4");
    `template_args` holds TypeNodes and Exprs (for `vec<float, 4>`, `atomic<int>`).
    A member type (`typename S<T>::type`) is named `name` in the struct `member_of`;
    `decltype(e)` is named "decltype" with `e` as its one template argument.
    """

    name: str
    template_args: list[Node] | None = None
    const: bool = False
    space: str | None = None  # "device", "constant", "threadgroup", "thread" or None
    member_of: NamedType | None = None
    namespace_scope: bool = False  # `na::TT`, `::TT`: as for `Name`, never a local's type


@dataclass(eq=False)
class PointerType(Node):
    pointee: TypeNode
    const: bool = False  # `T* const p`: the pointer itself is const


@dataclass(eq=False)
class ReferenceType(Node):
    referee: TypeNode


@dataclass(eq=False)
class ArrayType(Node):
    element: TypeNode
    size: Expr | None  # None for `T a[] = {...}`


@dataclass(eq=False)
class FunctionPointerType(Node):
    """`R (*)(P...)`, the type of a pointer to a function."""

    result: TypeNode
    params: list[TypeNode]


TypeNode = NamedType | PointerType | ReferenceType | ArrayType | FunctionPointerType


# --- Expressions -------------------------------------------------------------------------------

@dataclass(eq=False)
class IntLiteral(Node):
    value: int
    suffix: str = ""  # lower-cased: "", "u", "l", "ul", ...
    text: str = ""    # as written, for messages
    hex_or_octal: bool = False  # C++ types unsuffixed hex/octal literals differently


@dataclass(eq=False)
class FloatLiteral(Node):
    value: float
    suffix: str = ""  # "", "f", "h", "bf"
    text: str = ""


@dataclass(eq=False)
class BoolLiteral(Node):
    value: bool


@dataclass(eq=False)
class NullptrLiteral(Node):
    """`nullptr`."""


@dataclass(eq=False)
class StringLiteral(Node):
    value: str


@dataclass(eq=False)
class Name(Node):
    """An identifier, possibly qualified (`mem_flags::mem_threadgroup`, `metal::fast::exp`).

    `qualifier` is the namespace path with `metal` dropped ("" for none, "fast", "precise",
    "mem_flags", ...); `template_args` is set for `f<T, 3>` in a call or a variable template.
    """

    name: str
    qualifier: str = ""
    template_args: list[Node] | None = None
    owner: NamedType | None = None  # the type of a static member named `decltype(x)::k`
    # Whether `template_args` belong to the qualifier (`S<T>::k`), not the name (`S::f<T>`).
    args_on_qualifier: bool = False
    # With them, how many parts of the qualifier follow the one they belong to
    # (`S<T>::Inner::k`: 1).
    parts_after_args: int = 0
    # A namespace member (`na::K`, `::G`, `na::S::k`, or `K` found in an enclosing namespace,
    # `name` then being its program name, see `metalsim.lang.namespaces`): looked up at
    # program scope, never among locals or members.
    namespace_scope: bool = False
    # The program names of the rest of its overload set: functions of the same name that
    # other namespaces declare, found together (through using-directives or -declarations).
    overloads: tuple[str, ...] = ()
    # Written without any qualifier (`f`, not `na::f` nor `::f`): a call of it also finds
    # functions in its arguments' namespaces (argument-dependent lookup).
    written_unqualified: bool = False

    @property
    def unqualified(self) -> bool:
        """Whether the name is plain (`K`): one a local, parameter or member may be."""
        return not self.qualifier and not self.namespace_scope


@dataclass(eq=False)
class Unary(Node):
    op: str  # "+", "-", "!", "~", "*" (dereference), "&" (address of), "++", "--" (prefix)
    operand: Expr


@dataclass(eq=False)
class Postfix(Node):
    op: str  # "++" or "--"
    operand: Expr


@dataclass(eq=False)
class Binary(Node):
    op: str  # every C binary operator, including "&&", "||" and ","
    left: Expr
    right: Expr


@dataclass(eq=False)
class Assign(Node):
    op: str  # "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="
    target: Expr
    value: Expr


@dataclass(eq=False)
class Conditional(Node):
    cond: Expr
    then: Expr
    otherwise: Expr


@dataclass(eq=False)
class Call(Node):
    """A call of a named function: `f(x)`, `metal::exp(x)`, `max<int>(a, b)`."""

    func: Name
    args: list[Expr]


@dataclass(eq=False)
class MethodCall(Node):
    """`base.name(args)`: a struct's member function, or a built-in one such as
    `m.thread_elements()` of a simdgroup_matrix."""

    base: Expr
    name: str
    args: list[Expr]
    arrow: bool = False
    template_args: list[Node] | None = None  # `x.template f<T, 4>(...)`
    # the class of `d.B::f()`, as for Member: B's member function, on d's B subobject
    qualifier: str | NamedType = ""


@dataclass(eq=False)
class Construct(Node):
    """A functional cast or constructor: `float4(1, 2, 3, 4)`, `uint(x)`, `T(x)`, `float2{a, b}`;
    `braces` for the `T{...}` form (which alone aggregate-initializes a struct)."""

    type: TypeNode
    args: list[Expr]
    braces: bool = False


@dataclass(eq=False)
class PackExpansion(Node):
    """`pattern...` in a template or call argument list (`make_void<Ts...>`, `sum(us...)`)."""

    pattern: Node


@dataclass(eq=False)
class Cast(Node):
    """An explicit conversion; `style` is "c", "static_cast", "reinterpret_cast" or "as_type"."""

    type: TypeNode
    expr: Expr
    style: str = "c"


@dataclass(eq=False)
class Index(Node):
    base: Expr
    index: Expr


@dataclass(eq=False)
class Member(Node):
    """`base.name` (vector components and swizzles) or `base->name`."""

    base: Expr
    name: str
    arrow: bool = False
    # the class named in `d.B::f` (a call's; see MethodCall): its name, or the type where it
    # has template arguments or namespace qualifiers (`d.B<int>::v`, `d.na::B::v`)
    qualifier: str | NamedType = ""


@dataclass(eq=False)
class This(Node):
    """`this`, in a member function."""


@dataclass(eq=False)
class SizeOf(Node):
    """`sizeof(T)`, `sizeof x`, or with `align` set `alignof(T)`."""

    operand: TypeNode | Expr
    align: bool = False


@dataclass(eq=False)
class InitList(Node):
    """`{a, b, {c, d}}` in an initializer."""

    items: list[Expr]


@dataclass(eq=False)
class Lambda(Node):
    """`[captures](params) mutable -> R { body }`. `default` is the capture-default ('&', '='
    or None); `captures` the captures listed, as (name, by reference), `this` named 'this'. A
    generic lambda's `auto` parameters are its invented template parameters
    (`template_params`, None for none); `return_type` is `auto` unless given."""

    default: str | None
    captures: list[tuple[str, bool]]
    params: list[Param]
    return_type: TypeNode
    body: Compound
    template_params: list[TemplateParam] | None = None
    mutable: bool = False


Expr = (IntLiteral | FloatLiteral | BoolLiteral | NullptrLiteral | StringLiteral | Name | Unary
        | Postfix | Binary | Assign | Conditional | Call | MethodCall | Construct | Cast | Index
        | Member | This | SizeOf | InitList | Lambda)


# --- Statements --------------------------------------------------------------------------------

@dataclass(eq=False)
class VarDecl(Node):
    """One declarator: `type name [= init]`. `constexpr` and `static` are kept for checking."""

    name: str
    type: TypeNode
    init: Expr | None = None
    constexpr: bool = False
    static: bool = False
    attributes: list[Attribute] = field(default_factory=list)  # `[[function_constant(0)]]`


@dataclass(eq=False)
class DeclStmt(Node):
    """A declaration statement; `int i = 0, j;` holds two VarDecls."""

    decls: list[VarDecl]


@dataclass(eq=False)
class ExprStmt(Node):
    expr: Expr


@dataclass(eq=False)
class Compound(Node):
    items: list[Stmt]


@dataclass(eq=False)
class If(Node):
    cond: Expr
    then: Stmt
    otherwise: Stmt | None = None
    constexpr: bool = False


@dataclass(eq=False)
class For(Node):
    init: DeclStmt | ExprStmt | None
    cond: Expr | None
    step: Expr | None
    body: Stmt


@dataclass(eq=False)
class While(Node):
    cond: Expr
    body: Stmt


@dataclass(eq=False)
class DoWhile(Node):
    body: Stmt
    cond: Expr


@dataclass(eq=False)
class Switch(Node):
    """`switch (expr) { ... }`; the body's items include CaseLabel markers."""

    expr: Expr
    body: Compound


@dataclass(eq=False)
class CaseLabel(Node):
    value: Expr | None  # None for `default:`


@dataclass(eq=False)
class Break(Node):
    pass


@dataclass(eq=False)
class Continue(Node):
    pass


@dataclass(eq=False)
class Return(Node):
    value: Expr | None = None


@dataclass(eq=False)
class Empty(Node):
    pass


@dataclass(eq=False)
class StructDeclaration(Empty):
    """`struct S;` or `template <typename T> struct S;`: names a struct (template) defined
    later, an incomplete type until then."""

    name: str = ""
    template_params: list[TemplateParam] | None = None
    key: str = "struct"   # "struct", "class" or "union", as written


@dataclass(eq=False)
class StaticAssert(Node):
    cond: Expr
    message: str = ""


@dataclass(eq=False)
class StructDef(Node):
    """`struct name { members };`: data members (each a VarDecl without an initializer) and
    member functions defined in the body. `typedef struct {...} Alias;` is a TypeAlias whose
    type is a StructDef. A struct template has `template_params`."""

    name: str
    members: list[VarDecl]
    methods: list[MemberFunction] = field(default_factory=list)
    constructors: list[Constructor] = field(default_factory=list)
    template_params: list[TemplateParam] | None = None
    # `static constexpr T k = ...;`, member types (`typedef T type;`, `using type = T;`,
    # nested structs) and static_asserts, in declaration order: each sees those before it.
    statics: list[VarDecl | TypeAlias | StaticAssert | StructDef | EnumDef] = field(
        default_factory=list)
    bases: list[NamedType] = field(default_factory=list)  # `struct D : B, C<T> {...}`
    # A (partial) specialisation's arguments: `template <typename T> struct S<T*> {...}`
    specialization: list[Node] | None = None
    align: Expr | None = None  # `struct alignas(n) S`
    union: bool = False  # `union name { ... };`: every member at offset 0
    # Constructors of objects in device, constant or threadgroup memory (`S() constant`),
    # which metalsim never runs (it constructs thread objects only); the CUDA back end prints
    # them, an object's address space choosing no constructor there.
    space_constructors: list[Constructor] = field(default_factory=list)
    # `using B::f;`: base class members named in the struct, as qualified names (`B::f`)
    using_members: list[Name] = field(default_factory=list)
    # Access: the members declared `private` or `protected` (by name), each base's access
    # (a `class`'s default is private), and the functions and classes declared its friends.
    restricted: dict[str, str] = field(default_factory=dict)
    base_access: list[str] = field(default_factory=list)
    friends: set[str] = field(default_factory=set)


Stmt = (DeclStmt | ExprStmt | Compound | If | For | While | DoWhile | Switch | CaseLabel | Break
        | Continue | Return | Empty | StaticAssert | StructDef)


# --- Declarations of a translation unit --------------------------------------------------------

@dataclass(eq=False)
class Attribute(Node):
    """`[[name(args)]]`, e.g. `[[buffer(0)]]`, `[[thread_position_in_grid]]`, `[[kernel]]`."""

    name: str
    args: list[Expr] = field(default_factory=list)


@dataclass(eq=False)
class TemplateParam(Node):
    """`typename T`, `int N`, `bool B = true`; `kind` is None for `typename`/`class`; `pack`
    for a parameter pack (`typename... Ts`)."""

    name: str
    kind: NamedType | FunctionPointerType | None = None
    default: Node | None = None
    pack: bool = False


@dataclass(eq=False)
class Param(Node):
    name: str | None
    type: TypeNode
    attributes: list[Attribute] = field(default_factory=list)
    default: Expr | None = None
    pack: bool = False  # a function parameter pack (`Us... us`)


@dataclass(eq=False)
class FunctionDef(Node):
    """A function (a declaration only when `body` is None); kernels have the `kernel` attribute.

    An explicit specialisation (`template <> int f<0>()`, `template <> int f(int)`) has empty
    `template_params`; `specialization_args` holds the arguments written after its name."""

    name: str
    return_type: TypeNode
    params: list[Param]
    body: Compound | None
    template_params: list[TemplateParam] | None = None
    attributes: list[Attribute] = field(default_factory=list)
    specialization_args: list[Node] | None = field(default=None, kw_only=True)
    constexpr: bool = field(default=False, kw_only=True)   # may be evaluated at compile time
    # A friend function defined in a struct (a "hidden friend"): that struct's program name.
    # Only argument-dependent lookup finds it, through an argument of that struct.
    friend_of: str | None = field(default=None, kw_only=True)


@dataclass(eq=False)
class MemberFunction(FunctionDef):
    """A member function defined in a struct body. `const` and `space` qualify the object it
    is called on (`this`): `float get() const threadgroup { ... }`; Metal's default space is
    `thread`. A `static` one has no object: `S::f(...)`, or `s.f(...)` ignoring `s`."""

    const: bool = False
    space: str | None = None
    static: bool = False
    owner: str | None = None  # the struct of a definition outside it: `int S::f() {...}`
    owner_args: list[Node] | None = None  # its template arguments: `template <> int S<A>::f()`


@dataclass(eq=False)
class MemberInit(Node):
    """`name(args)` or `name{args}` in a constructor's member initializer list; `name` is the
    struct's own for a delegating constructor. `base` is the type of a base class named with
    template arguments or a qualifier (`B<T>(x)`, `ns::B(x)`)."""

    name: str
    args: list[Expr]
    braces: bool = False
    base: NamedType | None = None


@dataclass(eq=False)
class ConversionFunction(MemberFunction):
    """`operator T() const`: converts the object to its return type `T` wherever C++ converts
    implicitly (`explicit` ones only in casts). Its name is `CONVERSION`."""

    explicit: bool = False


CONVERSION = "operator <conversion>"


@dataclass(eq=False)
class Constructor(MemberFunction):
    """A constructor defined in a struct body (its return type is `void`): the members are
    initialised, in the order the struct declares them, before its body runs. `explicit` ones
    take no part in implicit conversions."""

    inits: list[MemberInit] = field(default_factory=list)
    explicit: bool = False


@dataclass(eq=False)
class Enumerator(Node):
    name: str
    value: Expr | None  # None: one more than the previous enumerator (0 for the first)


@dataclass(eq=False)
class EnumDef(Node):
    """`enum Name [: type] { A, B = 3 };`, or with `scoped` `enum class Name ...` (its
    enumerators named `Name::A` only, converted to integers only explicitly). An anonymous
    one's name is how it is shown, "(unnamed enum at ...)", which no program can write."""

    name: str
    scoped: bool
    underlying: TypeNode | None
    enumerators: list[Enumerator]


@dataclass(eq=False)
class TypeAlias(Node):
    """`typedef T name;` or `using name = T;` (optionally templated)."""

    name: str
    type: TypeNode | StructDef
    template_params: list[TemplateParam] | None = None


@dataclass(eq=False)
class VariableTemplate(Node):
    """`template <typename T> constexpr constant bool is_x_v = is_x<T>::value;`"""

    name: str
    decl: VarDecl
    template_params: list[TemplateParam]
    # the arguments of a (partial) specialisation: `is_complex_v<complex_t<T>>`
    specialization: list | None = None


@dataclass(eq=False)
class UsingNamespace(Node):
    name: str


@dataclass(eq=False)
class ExplicitInstantiation(Node):
    """`template [[host_name("n")]] [[kernel]] decltype(f<A, B>) f<A, B>;` as MLX writes it."""

    name: str
    template_args: list[Node]
    attributes: list[Attribute] = field(default_factory=list)


@dataclass(eq=False)
class TranslationUnit(Node):
    items: list[FunctionDef | DeclStmt | TypeAlias | UsingNamespace | ExplicitInstantiation
                | StaticAssert | StructDef]
    namespaces: frozenset[str] = frozenset()   # the full names of those the program declares
