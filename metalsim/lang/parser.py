"""The parser: preprocessed tokens to the AST of `metalsim.lang.ast`.

A hand-written recursive descent parser in the style of pycparser: one method per grammar rule,
each documented with the rule it parses. C++ cannot be parsed without knowing which names are
types and which are templates, so the parser keeps a stack of scopes recording every type alias,
template parameter, function template and variable it has seen; built-in names come from
`metalsim.lang.types`. Binary operators use precedence climbing, which gives C++'s exact
precedence and associativity without one method per level.

Representation choices the compiler relies on:
  * A name that a namespace declares is resolved where it is used, by C++'s lookup rules, to
    its program name (`na::K`; see `metalsim.lang.namespaces`): declarations at namespace
    scope carry it, and so do the names that refer to them. `metal::` names Metal's own
    (bare) names; `fast::`/`precise::` and struct qualifiers stay in `Name.qualifier`.
  * A member of a class template instance, `numeric_limits<float>::max()`, is
    `Call(Name("max", qualifier="numeric_limits", template_args=[float]))`: the template arguments
    are those of the qualifying class.
  * Multi-word integer types are normalised (`unsigned int` -> "uint"; `long long` is refused).
  * `VarDecl` and `Param` coords point at the declared name (as a compiler's "declared here"
    does); every other node's coord is its first token.
  * `typedef` / `using` inside a function body appear in `Compound.items` as TypeAlias /
    UsingNamespace nodes.
  * `T x(args);` in a function body is a VarDecl initialised with `Construct(T, args)`.
"""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import TypeVar

from metalsim.diagnostics import CompileError, Coord, SourceMap
from metalsim.lang import ast
from metalsim.lang.cuda_names import CUDA_QUALIFIERS, cuda_hint
from metalsim.lang.lexer import Token
from metalsim.lang.namespaces import METAL, NamespaceTable, program_name
from metalsim.lang.preprocess import preprocess
from metalsim.lang.types import BUILTIN_TYPE_TEMPLATES, TYPE_NAMES

_R = TypeVar("_R")

# Words that combine into one integer type; keys are the sorted words.
_INT_WORDS = frozenset({"unsigned", "signed", "short", "long", "int", "char"})


def _int_combinations() -> dict[tuple[str, ...], str]:
    combos: dict[tuple[str, ...], str] = {}
    bases = {("int",): "int", ("char",): "char", ("short",): "short", ("short", "int"): "short",
             ("long",): "long", ("long", "int"): "long"}
    for words, name in bases.items():
        combos[tuple(sorted(words))] = name
        combos[tuple(sorted((*words, "signed")))] = name
        combos[tuple(sorted((*words, "unsigned")))] = "u" + name
    combos[("signed",)] = "int"
    combos[("unsigned",)] = "uint"
    return combos


_INT_COMBINATIONS = _int_combinations()

# More type names: Metal types the type system does not model (yet), which the compiler rather
# than the parser reports, `auto`, and `double`, which the parser rejects with a clear message.
_EXTRA_TYPES = frozenset(
    {"simdgroup_float8x8", "simdgroup_half8x8", "simdgroup_bfloat8x8", "auto", "double"}
    | {f"{e}{r}x{c}" for e in ("float", "half") for r in (2, 3, 4) for c in (2, 3, 4)}
)
# `metal::` type traits that name a type (resolved by the compiler).
_TYPE_TRAITS = frozenset({"conditional_t", "remove_cv_t", "remove_addrspace_t", "enable_if_t",
                          "uniform"})
_TYPE_TEMPLATES = BUILTIN_TYPE_TEMPLATES | {"simdgroup_matrix"} | _TYPE_TRAITS
_BUILTIN_TYPE_WORDS = frozenset(TYPE_NAMES) | _INT_WORDS | _EXTRA_TYPES | _TYPE_TEMPLATES

# Built-in names after which `<` opens a template argument list rather than comparing.
_BUILTIN_TEMPLATES = frozenset({
    "make_filled_simdgroup_matrix", "numeric_limits", "elem_to_loc", "elem_to_loc_1",
    "elem_to_loc_2", "elem_to_loc_3", "elem_to_loc_2_nd", "elem_to_loc_3_nd",
    "max", "min", "clamp", "abs", "select", "_disjunction", "_conjunction",
}) | {f"{trait}{suffix}" for trait in ("is_same", "is_integral", "is_floating_point", "is_signed",
                                        "is_unsigned", "is_arithmetic", "is_convertible")
    for suffix in ("", "_v")}
_CASTS = frozenset({"static_cast", "reinterpret_cast", "as_type"})
# Metal's texture and sampler types: MLX binds no textures to a custom kernel.
_TEXTURE_TYPES = frozenset(
    {f"{kind}{dim}" for kind in ("texture", "depth") for dim in
     ("1d", "1d_array", "2d", "2d_array", "2d_ms", "2d_ms_array", "3d", "cube", "cube_array")}
    | {"texture_buffer", "sampler"})

# Class templates of Metal's <metal_type_traits> that metalsim does not model (its type traits
# are built in, as `is_same<T, U>::value` and `is_same_v<T, U>`).
_UNMODELLED_TRAIT_CLASSES = frozenset({"integral_constant", "bool_constant", "true_type",
                                       "false_type"})

# Metal 4's tensors (<metal_tensor>) and MetalPerformancePrimitives (`mpp::tensor_ops`), which
# MLX's NAX kernels use and metalsim does not model (tests/metalsim/test_mlx_kernel_headers.py
# says what they would take).
_METAL4_TENSOR_NAMES = frozenset({"tensor", "dextents", "extents", "tensor_inline",
                                  "tensor_handle", "tensor_offset", "cooperative_tensor",
                                  "execution_simdgroup", "execution_simdgroups",
                                  "execution_thread", "dynamic_extent"})

_ADDRESS_SPACES = frozenset({"device", "constant", "threadgroup", "thread"})
_QUALIFIERS = _ADDRESS_SPACES | {"const", "volatile"}  # may precede the type in a type-name
# Words that can only begin a declaration (besides type names).
_DECL_WORDS = _ADDRESS_SPACES | {"const", "volatile", "constexpr", "static", "inline", "extern",
                                  "typename", "__attribute__"}
_UNSUPPORTED_DECLARATIONS = frozenset({"namespace", "struct", "class", "union"})
# A union's members share its storage; a class's members and bases are private until an access
# label says otherwise, which changes no value (metalsim does not check access).
_CLASS_KEYS = frozenset({"struct", "class", "union"})
_KEYWORDS = frozenset({
    "if", "else", "for", "while", "do", "switch", "case", "default", "break", "continue",
    "return", "goto", "sizeof", "alignof", "typedef", "using", "namespace", "template",
    "class", "struct", "union", "enum", "true", "false", "nullptr", "static_assert", "decltype",
    "kernel", "operator", "this", "new", "delete", "const_cast", "dynamic_cast",
}) | _DECL_WORDS | _CASTS
_RESERVED = _KEYWORDS | _BUILTIN_TYPE_WORDS

_BINARY_PRECEDENCE = {
    "||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6, "<": 7, ">": 7, "<=": 7, ">=": 7,
    "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10,
}
_ASSIGN_OPS = frozenset({"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="})
_PREFIX_OPS = frozenset({"+", "-", "!", "~", "*", "&", "++", "--"})
_CLOSERS = {"(": ")", "[": "]", "{": "}"}
# Operators a struct may overload in metalsim (besides `()` and `[]`).
_OVERLOADABLE = frozenset(_BINARY_PRECEDENCE) | _ASSIGN_OPS - {"="} | {"!", "~", "++", "--"}
_NOT_OVERLOADABLE = {"=": "the implicit copy assignment copies every member"}

# What follows the name a member declarator declares: `int n;`, `T f(...)`, `int a[4]`, ...
_DECLARATOR_ENDS = frozenset({";", ",", "=", "(", "[", "{", ":"})

# What a scope records about a name.
_TYPE, _TYPE_TEMPLATE, _TEMPLATE, _VALUE = "type", "type template", "template", "value"
_ENTITY = "entity"   # a local using-declaration's name: which entity, under `_USING_KEY`
# Keys of a block scope that no identifier spells: its using-directives' namespaces
# (newline-separated), and the program names a using-declaration's name stands for.
_DIRECTIVES_KEY = "\0using namespace"
_USING_KEY = "\0using "
_ALIAS_KEY = "\0namespace "   # a block's namespace alias: the namespace it names
# `metal::fast::f` and `metal::precise::f` stay qualified: the compiler merges Metal's
# variants with what a program declares there.
_METAL_VARIANTS = frozenset({"fast", "precise"})


@dataclass
class _Specifiers:
    """The declaration specifiers in front of a declarator: `static constexpr constant float`."""

    type: ast.NamedType
    constexpr: bool = False
    static: bool = False
    attributes: list[ast.Attribute] = field(default_factory=list)


def _declared_names(node: ast.Node) -> set[str]:
    """The names a file-scope declaration declares (functions, variables, types)."""
    if isinstance(node, ast.DeclStmt):
        return {d.name for d in node.decls}
    name = getattr(node, "name", None)
    return {name} if isinstance(name, str) and name else set()


def _member_names(tokens: list[Token], pos: int) -> set[str]:
    """The names a struct body starting at `tokens[pos]` (just after its `{`) declares:
    each identifier at the body's own brace depth that a declarator ends with."""
    names: set[str] = set()
    depth = 0
    for tok, following in zip(tokens[pos:], tokens[pos + 1:]):
        if tok.kind == "punct" and tok.text in ("{", "(", "["):
            depth += 1
        elif tok.kind == "punct" and tok.text in ("}", ")", "]"):
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and tok.kind == "ident" and following.text in _DECLARATOR_ENDS:
            names.add(tok.text)
    return names


def _spelled(t: ast.TypeNode) -> str:
    """A type as a message spells it (`const float`, `int &`, `S *`)."""
    if isinstance(t, ast.PointerType):
        return f"{_spelled(t.pointee)} *"
    if isinstance(t, ast.ReferenceType):
        return f"{_spelled(t.referee)} &"
    if isinstance(t, ast.ArrayType):
        return f"{_spelled(t.element)}[]"
    if isinstance(t, ast.NamedType):
        return " ".join(w for w in ("const" if t.const else "", t.space or "", t.name) if w)
    return "function pointer"


def _names_in(node: object) -> set[str]:
    """The names a type (with its template arguments) spells, at any depth."""
    if isinstance(node, list):
        return set().union(*(_names_in(n) for n in node))
    if not isinstance(node, ast.Node):
        return set()
    names = {node.name} if isinstance(node, ast.NamedType | ast.Name) else set()
    return names.union(*(_names_in(getattr(node, f.name)) for f in fields(node)
                         if f.name != "coord"))


def _with_element(array: ast.TypeNode, element: ast.TypeNode) -> ast.TypeNode:
    """The array type `array` (of `NamedType`s) with its innermost element type `element`."""
    if isinstance(array, ast.ArrayType):
        return ast.ArrayType(array.coord, _with_element(array.element, element), array.size)
    return element


class _Parser:
    """Parses one translation unit; `pos` indexes `tokens`, which ends with an "eof" token."""

    def __init__(self, tokens: list[Token], source_map: SourceMap) -> None:
        # Our own copy: closing `>>` of nested template lists splits tokens in place.
        self.tokens = list(tokens)
        if not self.tokens or self.tokens[-1].kind != "eof":
            end = len(source_map.text)
            self.tokens.append(Token("eof", "", end))
        self.pos = 0
        self.sm = source_map
        self.scopes: list[dict[str, str]] = [{}]
        self.no_gt = False  # inside a template argument list, where `>` closes the list
        self.struct_templates: set[str] = set()
        self.namespaces = NamespaceTable()
        self.namespace: list[str] = []               # the namespace being defined
        # Struct templates being defined: their bare name is the injected class name.
        self.injected: list[str] = []
        # The names each struct being defined declares as members, which hide namespace
        # members in its member functions (whose bodies see members declared after them).
        self.member_names: list[set[str]] = []
        self.struct_members: dict[str, set[str]] = {}   # by the struct's name, for its bases
        # Names of member types (`typedef T type;` in a struct): `S::type` names a type where
        # one of these follows `::`, as C++ knows from S's definition; after `typename`, any.
        self.member_types: set[str] = set()
        self.member_alias_templates: set[str] = set()  # `template <...> using` in a struct
        self.member_templates: set[str] = set()  # names of member function templates
        self.switch_depth = 0
        self.block_depth = 0   # compound statements open (function bodies among them)
        # Structs an elaborated type (`struct C* p;`) declared, for the namespace scope.
        self.implicit_structs: list[ast.StructDeclaration] = []
        self.failed: dict[tuple[str, int], Token] = {}  # speculations known to fail
        # Friend functions defined in the struct being read, for its namespace scope.
        self.hidden_friends: list[ast.FunctionDef] = []
        self.friend_names: list[str] = []   # what the structs being read declare friends
        # The struct templates being read: their parameters, and whether a specialisation
        self.template_structs: list[tuple[list[ast.TemplateParam], bool]] = []
        self.pack_names: set[str] = set()   # the template parameter packs in scope
        self._pasted: CompileError | bool | None = None   # `_pasted_kernel`, once looked for

    # --- Tokens and errors ---------------------------------------------------------------------

    def peek(self, k: int = 0) -> Token:
        try:   # the parser's hottest path: no bounds check until past the end
            return self.tokens[self.pos + k]
        except IndexError:
            return self.tokens[-1]

    def at(self, text: str, k: int = 0) -> bool:
        tok = self.peek(k)
        return tok.text == text and tok.kind in ("punct", "ident")

    def advance(self) -> Token:
        tok = self.tokens[self.pos]
        if tok.kind != "eof":
            self.pos += 1
        return tok

    def accept(self, text: str) -> Token | None:
        return self.advance() if self.at(text) else None

    def expect(self, text: str, message: str = "", hint: str = "") -> Token:
        if self.at(text):
            return self.advance()
        message = message or f"expected '{text}'"
        if text == ";":
            raise self.error_after_previous(message, hint or "add a ';' here")
        raise self.error(message, hint=hint)

    def coord(self, tok: Token) -> Coord:
        return self.sm.coord(tok.offset)

    def error(self, message: str, tok: Token | None = None, hint: str = "",
              width: int = 1) -> CompileError:
        """A CompileError at `tok` (default: the current token).

        At the end of input, or at the first token MLX generated after the user's code (the
        kernel's closing `}`), the error goes just after the user's last token instead.
        """
        tok = tok or self.peek()
        explained = self.explained_error(tok)
        if explained is not None:
            return explained
        where = self.coord(tok)
        if self.pos > 0 and tok is self.peek() and (
                tok.kind == "eof" or (where.section == "generated" and self.sm.sections
                                      and self.coord(self.tokens[self.pos - 1]).section
                                      != "generated")):
            return self.error_after_previous(message, hint)
        return CompileError(message, where, self.sm, hint=hint, width=width)

    def error_after_previous(self, message: str, hint: str = "") -> CompileError:
        """A CompileError just after the previous token, where clang reports a missing ';'."""
        prev = self.tokens[max(self.pos - 1, 0)]
        explained = self.explained_error(prev)
        if explained is not None:
            return explained
        # Tokens from macro expansions carry the macro name's offset; point at the name then.
        if prev.text and self.sm.text.startswith(prev.text, prev.offset):
            last = self.sm.coord(prev.offset + len(prev.text) - 1)
            where = Coord(last.section, last.line, last.column + 1)
        else:
            where = self.coord(prev)
        return CompileError(message, where, self.sm, hint=hint)

    def explained_error(self, tok: Token) -> CompileError | None:
        """The error that names the cause, where a syntax error has a known one: a whole
        kernel function pasted as `source`, or a CUDA qualifier at (or just before) `tok`."""
        if self._pasted is None:
            self._pasted = _pasted_kernel(self.sm) or False
        if self._pasted:
            return self._pasted
        before = self.tokens[self.pos - 1] if self.pos > 0 and tok is self.peek() else None
        cuda = next((t for t in (tok, before) if t is not None and t.kind == "ident"
                     and t.text in CUDA_QUALIFIERS), None)
        if cuda is None:
            return None
        return CompileError(f"'{cuda.text}' is CUDA, not Metal", self.coord(cuda), self.sm,
                            hint=cuda_hint(cuda.text), width=len(cuda.text))

    def speculate(self, rule: Callable[[], _R]) -> _R | None:
        """Runs `rule`; on a syntax error rewinds to where it started and returns None.

        Failures are remembered: nested casts like `(vec<(vec<(...` would otherwise be tried
        twice at every level, taking time exponential in the depth.
        """
        pos, no_gt = self.pos, self.no_gt
        tok = self.tokens[pos]
        # Keyed by the token's id; the value keeps the token alive so the id stays unique.
        key = (rule.__name__, id(tok))
        if self.failed.get(key) is tok:
            return None
        try:
            return rule()
        except CompileError:
            self.pos, self.no_gt = pos, no_gt
            self.failed[key] = tok
            return None

    def nested(self, rule: Callable[[], _R]) -> _R:
        """Runs `rule` inside brackets, where `>` is an operator again."""
        saved, self.no_gt = self.no_gt, False
        try:
            return rule()
        finally:
            self.no_gt = saved

    # --- Scopes --------------------------------------------------------------------------------

    def lookup(self, name: str) -> str | None:
        """What `name` (unqualified, or a program name such as `na::K`) is, where it is used."""
        scopes = self.scopes
        for depth in range(len(scopes) - 1, 0, -1):
            kind = scopes[depth].get(name)
            if kind is not None:
                return kind
        if not self.namespaces.in_use or "::" in name:
            return scopes[0].get(name)
        for entity in self.namespace_entities(name):
            kind = scopes[0].get(entity)
            if kind is not None:
                return kind
        return None

    def declare(self, name: str, kind: str, file_scope: bool = False) -> None:
        if file_scope or len(self.scopes) == 1:   # at namespace scope
            path = self.namespace_path()
            if kind == _VALUE and path in ("", METAL):
                self.check_metal_apart(name, path)
            name = self.namespaces.declare(path, name)
            self.scopes[0][name] = kind
        else:
            self.scopes[-1][name] = kind

    def check_metal_apart(self, name: str, path: str) -> None:
        """Refuse a variable in `metal` (or the global namespace) that the other one declares
        too: metalsim gives both namespaces' names one program name (`metal` is always
        used), so the two would silently become one."""
        other = "" if path == METAL else METAL
        if name in self.namespaces.members.get(other, ()) and (
                name not in self.namespaces.metal_own):
            here, there = (("namespace 'metal'", "the global namespace") if path == METAL
                           else ("the global namespace", "namespace 'metal'"))
            raise self.error(f"'{name}' is declared in {here} and in {there}, which metalsim "
                             "keeps as one (Metal programs say 'using namespace metal;')",
                             self.peek(), hint=f"rename one of the two '{name}'s")

    def namespace_path(self) -> str:
        return "::".join(self.namespace)

    def namespace_entities(self, name: str) -> tuple[str, ...]:
        """Unqualified lookup of `name` in the enclosing namespaces (no local declares it)."""
        local = [n for scope in self.scopes[1:] for n in scope.get(_DIRECTIVES_KEY, "").split()]
        return self.namespaces.unqualified(self.namespace, name, local)

    def local_scope_of(self, name: str) -> dict[str, str] | None:
        """The innermost block, parameter or template scope that declares `name`, if any."""
        for depth in range(len(self.scopes) - 1, 0, -1):
            if name in self.scopes[depth]:
                return self.scopes[depth]
        return None

    def resolve(self, tok: Token, namespace: str | None) -> tuple[str, tuple[str, ...]]:
        """The program name `tok` refers to, qualified by `namespace` ("" after a bare
        `::`) or unqualified (None), with the other program names of its overload set.

        A local (or a template parameter, or the injected name of the struct template being
        defined) keeps its name; so does a name no namespace declares (Metal's own, or an
        undeclared one, which the compiler reports). Two entities that are not all functions
        are ambiguous, as in C++."""
        name = tok.text
        if namespace is None:
            local = self.local_scope_of(name)
            if local is not None and not (name in self.injected and local.get(name) == _TYPE):
                using = local.get(_USING_KEY + name)
                return (name, ()) if using is None else self.overload_set(tok, using.split())
            if not self.namespaces.in_use or any(name in m for m in self.member_names):
                return name, ()
            # (the injected name of a struct template is the template's program name)
            found = self.namespace_entities(name)
        else:
            found = self.namespaces.qualified(namespace, name)
            if not found and namespace and namespace.split("::")[0] != METAL:
                raise self.error(f"no member named '{name}' in namespace '{namespace}'", tok,
                                 width=len(name))
        return self.overload_set(tok, list(found)) if found else (name, ())

    def overload_set(self, tok: Token, found: list[str]) -> tuple[str, tuple[str, ...]]:
        if len(found) > 1:
            found = [f for f in found if f not in self.namespaces.metal_own] or found
        if len(found) > 1 and not all(f in self.namespaces.functions for f in found):
            shown = [re.sub(r"__unnamed\w*", "(anonymous namespace)", f) for f in found]
            raise self.error(f"reference to '{tok.text}' is ambiguous", tok, width=len(tok.text),
                             hint="it names " + " and ".join(f"'{f}'" for f in shown)
                             + ": qualify it")
        return found[0], tuple(found[1:])

    def type_at(self, k: int = 0) -> bool:
        """Whether the tokens `k` ahead begin a type name (`float`, `metal::vec`, `T`, ...)."""
        rooted = self.at("::", k)
        if rooted:
            k += 1
        k, namespace = self.namespace_prefix(k, rooted)
        tok = self.peek(k)
        if tok.kind != "ident":
            return False
        if tok.text in _BUILTIN_TYPE_WORDS or tok.text == "decltype":
            return True
        if namespace is None:
            return self.lookup(tok.text) in (_TYPE, _TYPE_TEMPLATE)
        found = self.namespaces.qualified(namespace, tok.text) or (tok.text,)
        return any(self.scopes[0].get(e) in (_TYPE, _TYPE_TEMPLATE) for e in found)

    def type_name_at(self, k: int = 0) -> bool:
        """Whether a type-name (a type possibly after qualifiers) begins `k` tokens ahead."""
        tok = self.peek(k)
        return (tok.kind == "ident" and tok.text in (*_QUALIFIERS, "typename")
                ) or self.type_at(k)

    def is_template(self, name: str, qualified: bool = False) -> bool:
        """Whether `name` (a program name where `qualified`) names a template."""
        if name in self.injected:  # a struct template's own name may take arguments
            return True
        kind = self.scopes[0].get(name) if qualified else self.lookup(name)
        if kind is not None:
            return kind in (_TEMPLATE, _TYPE_TEMPLATE)
        return name in _BUILTIN_TEMPLATES

    def unknown_type(self, tok: Token) -> CompileError:
        """"unknown type name 'flaot'", suggesting the closest known type name."""
        if tok.text in _UNMODELLED_TRAIT_CLASSES:
            return self.error(f"'metal::{tok.text}' (Metal's <metal_type_traits>) is not "
                              "supported by metalsim", tok, width=len(tok.text),
                              hint="metalsim's type traits are built in: use "
                                   "'is_same<T, U>::value' or 'is_same_v<T, U>'; to write your "
                                   "own, declare 'static constexpr constant bool value = ...;'")
        if tok.text in _TEXTURE_TYPES:
            return self.error(f"'{tok.text}' is a Metal texture type, which metalsim does not "
                              "support", tok, width=len(tok.text),
                              hint="mx.fast.metal_kernel passes only buffers: read the data "
                                   "from a device array")
        i = self.tokens.index(tok) if self.at("::", 1) else -1
        member = self.tokens[i + 2].text if i >= 0 and self.tokens[i + 2].kind == "ident" else ""
        if tok.text in ("metal", "mpp") and member:
            close = difflib.get_close_matches(member, _BUILTIN_TYPE_WORDS, n=1)
            hint = ("Metal 4's tensors and MetalPerformancePrimitives tensor ops are not "
                    "modelled by metalsim" if tok.text == "mpp" or member in _METAL4_TENSOR_NAMES
                    else f"did you mean 'metal::{close[0]}'?" if close else "")
            return self.error(f"no type named '{member}' in namespace '{tok.text}'", tok,
                              hint, width=len(tok.text) + 2 + len(member))
        known = [n for scope in self.scopes for n, k in scope.items() if k == _TYPE]
        close = difflib.get_close_matches(tok.text, [*_BUILTIN_TYPE_WORDS, *known], n=1)
        hint = f"did you mean '{close[0]}'?" if close else ""
        return self.error(f"unknown type name '{tok.text}'", tok, hint, width=len(tok.text))

    # --- Translation unit ----------------------------------------------------------------------

    def translation_unit(self) -> ast.TranslationUnit:
        """translation-unit: (namespace-definition | namespace-alias | external-declaration)*"""
        start = self.peek()
        items: list = []
        while self.peek().kind != "eof":
            if self.coord(self.peek()).section == "source":
                # MLX wraps `source` in the kernel's body, so reaching file scope inside it
                # means a stray '}' closed the kernel early; say where.
                stray = _unbalanced_brackets(self.tokens, self.sm)
                if stray is not None:
                    raise stray
            items += self.namespace_member()
        return ast.TranslationUnit(self.coord(start), items,
                                   frozenset(self.namespaces.members) - {""})

    def namespace_member(self) -> list[ast.Node]:
        """One declaration at namespace scope, the declarations it holds given their program
        names (`metalsim.lang.namespaces`)."""
        if self.accept(";"):
            return []   # an empty declaration
        inline = 1 if self.at("inline") and self.at("namespace", 1) else 0
        if self.at("namespace", inline) and (self.at("{", inline + 1) or (
                self.peek(inline + 1).kind == "ident" and (
                    self.at("{", inline + 2) or self.at("::", inline + 2)))):
            return self.namespace_definition()
        if self.namespace_alias_at():
            self.namespace_alias()
            return []
        prelude = self.coord(self.peek()).section == "prelude"
        before = set(self.scopes[0]) if prelude else set()
        item = self.external_declaration()
        self.name_declaration(item)
        if prelude:
            self.namespaces.metal_own |= set(self.scopes[0]) - before | _declared_names(item)
        friends, self.hidden_friends = self.hidden_friends, []
        implicit, self.implicit_structs = self.implicit_structs, []
        return [*implicit, item, *friends]

    def name_declaration(self, item: ast.Node) -> None:
        """Gives what `item` declares at namespace scope its program name: qualified by the
        namespace being defined, or, for a specialisation or a member defined outside its
        struct, the name of what it specialises or defines."""
        path = self.namespace_path()
        if isinstance(item, ast.FunctionDef) and not isinstance(item, ast.MemberFunction):
            if item.template_params == [] or item.specialization_args is not None:
                item.name = self.declared_entity(item.name, item)
            else:
                item.name = self.namespaces.declare(path, item.name, function=True)
            return
        if not path or path == METAL:
            return
        if isinstance(item, ast.DeclStmt):
            for d in item.decls:
                d.name = program_name(path, d.name)
        elif isinstance(item, ast.MemberFunction):
            if item.owner is not None:
                item.owner = self.declared_entity(item.owner, item)
        elif isinstance(item, ast.StructDef | ast.VariableTemplate) and (
                item.specialization is not None):
            item.name = self.declared_entity(item.name, item)
        elif isinstance(item, ast.TypeAlias) and isinstance(item.type, ast.StructDef):
            item.name = item.type.name = program_name(path, item.name)
        elif isinstance(item, ast.StructDef | ast.TypeAlias | ast.EnumDef | ast.VariableTemplate
                        ) and item.name:
            item.name = program_name(path, item.name)

    def declared_entity(self, name: str, item: ast.Node) -> str:
        """The program name of the entity `name` names where `item` (which redeclares or
        specialises it) is: an unqualified lookup."""
        found = self.namespace_entities(name)
        if len(found) > 1 and not isinstance(item, ast.FunctionDef):
            raise self.error(f"reference to '{name}' is ambiguous", self.peek())
        return found[0] if found else name

    def namespace_definition(self) -> list[ast.Node]:
        """namespace-definition: ['inline'] 'namespace' [name ('::' name)*] '{'
        namespace-member* '}'

        A namespace may be reopened; `namespace a::b {` opens `b` inside `a`. An unnamed
        namespace (`namespace { ... }`) is one of its own, named by no one, with an implicit
        using-directive in the enclosing one (C++ [namespace.unnamed]), so its names are
        visible there, beside (not instead of) the enclosing namespace's own; so is an inline
        namespace, whose names qualified lookup in the enclosing namespace finds too."""
        inline = self.accept("inline") is not None
        self.advance()
        if self.at("{"):
            parts = [f"__unnamed{self.coord(self.peek()).line}_{self.pos}"]
        else:
            parts = [self.identifier("expected a namespace name").text]
        while self.accept("::"):
            parts.append(self.identifier("expected a namespace name").text)
        open_ = self.expect("{", "expected '{' after the namespace name")
        outer = self.namespace
        self.namespace = [*outer, *parts]
        self.namespaces.open(self.namespace)
        if inline or parts[0].startswith("__unnamed"):
            self.namespaces.declare_directive("::".join(outer), "::".join(self.namespace))
        items: list[ast.Node] = []
        try:
            while not self.accept("}"):
                if self.peek().kind == "eof":
                    raise self.error("expected '}' to match this '{'", open_)
                items += self.namespace_member()
        finally:
            self.namespace = outer
        return items

    def namespace_alias_at(self) -> bool:
        return self.at("namespace") and self.peek(1).kind == "ident" and self.at("=", 2)

    def namespace_alias(self) -> ast.Empty:
        """namespace-alias-definition: 'namespace' name '=' ['::'] name ('::' name)* ';'

        In a block, the alias stays declared after it (metalsim keeps aliases by namespace)."""
        start = self.advance()
        alias = self.identifier("expected a namespace alias name")
        self.expect("=")
        rooted = self.accept("::") is not None
        first = self.identifier("expected a namespace name")
        parts = [first.text]
        while self.accept("::"):
            parts.append(self.identifier("expected a namespace name").text)
        target = self.find_namespace("::".join(parts), not rooted)
        if target is None:
            raise self.error("expected namespace name", first, width=len(first.text),
                             hint=f"no namespace '{'::'.join(parts)}' is declared before "
                                  "this line")
        self.expect(";", "expected ';' after namespace alias definition")
        if len(self.scopes) == 1:
            self.namespaces.declare_alias(self.namespace_path(), alias.text, target)
        else:
            self.scopes[-1][_ALIAS_KEY + alias.text] = target
        return ast.Empty(self.coord(start))

    def namespace_prefix(self, k: int = 0, rooted: bool = False) -> tuple[int, str | None]:
        """The namespace qualifiers `metal::`, `mlx::steel::` ... starting `k` tokens ahead
        (after `::` when `rooted`): (tokens they take, the namespace they name, "" for
        `::` alone, None for no qualifier). `metal::fast::` and `metal::precise::` name
        Metal's variants, which stay in the name's qualifier."""
        path: str | None = "" if rooted else None
        while self.peek(k).kind == "ident" and self.at("::", k + 1):
            word = self.peek(k).text
            if word == METAL and not path:
                inner: str | None = METAL
            elif path == METAL and word in _METAL_VARIANTS:
                break
            elif path:
                inner = self.namespaces.nested(path, word)
            else:
                inner = self.find_namespace(word, path is None)
            if inner is None:
                break
            path = inner
            k += 2
        return k, path

    def find_namespace(self, name: str, relative: bool) -> str | None:
        """The full name of namespace `name` as seen from the one being defined (searching the
        enclosing namespaces outwards when `relative`), or None. A block's namespace alias
        hides every namespace of its name."""
        if relative and len(self.scopes) > 1:
            first, _, rest = name.partition("::")
            for scope in reversed(self.scopes[1:]):
                target = scope.get(_ALIAS_KEY + first)
                if target is not None:
                    return self.namespaces.find(f"{target}::{rest}" if rest else target, None)
        found = self.namespaces.find(name, self.namespace if relative else None)
        if found is None and relative and (self.namespaces.directives or any(
                _DIRECTIVES_KEY in scope for scope in self.scopes[1:])):
            # a namespace nested in one a using-directive nominates (`using namespace na;
            # nb::D` for `na::nb::D`)
            nominated = [n for scope in self.scopes[1:]
                         for n in scope.get(_DIRECTIVES_KEY, "").split()]
            for depth in range(len(self.namespace) + 1):
                nominated += self.namespaces.directives.get(
                    "::".join(self.namespace[:depth]), ())
            inner = {f"{n}::{name}" for n in nominated} & self.namespaces.members.keys()
            if len(inner) == 1:
                return inner.pop()
        return found

    def names_type_member(self) -> bool:
        """Whether the type name ahead is followed by `::` (after its template arguments)."""
        k = self.namespace_prefix()[0]
        if self.at("::", k + 1):
            return True
        if not self.at("<", k + 1):
            return False
        depth, k = 0, k + 1
        while True:
            tok = self.peek(k)
            if tok.kind == "eof" or tok.text in (";", "{", "}"):
                return False
            depth += {"<": 1, "(": 1, "[": 1, ">": -1, ")": -1, "]": -1, ">>": -2}.get(
                tok.text, 0) if tok.kind == "punct" else 0
            if depth <= 0:
                return self.at("::", k + 1)
            k += 1

    def external_declaration(self) -> ast.Node:
        """external-declaration: template-declaration | alias | static_assert | function
        | program-scope variable"""
        tok = self.peek()
        word = tok.text if tok.kind == "ident" else ""
        if word == "template":
            return self.template_declaration()
        if word in ("typedef", "using"):
            return self.alias_declaration()
        if word == "static_assert":
            return self.static_assert()
        if word in _CLASS_KEYS and self.struct_definition_at():
            return self.struct_declaration()
        if word in _CLASS_KEYS and self.peek(1).kind == "ident" and self.at(";", 2):
            return self.struct_forward_declaration()
        if word == "enum":
            return self.enum_declaration()
        if word in _UNSUPPORTED_DECLARATIONS - _CLASS_KEYS:
            return self.misplaced()
        if self.at("}"):
            raise self.error("extraneous closing brace ('}')")
        if not (word in _DECL_WORDS or word in ("kernel", "struct", "class") or self.type_at()
                or self.at("[")):
            following = self.peek(1)
            if tok.kind == "ident" and word not in _RESERVED and (
                    following.kind == "ident" or following.text in ("*", "&", "<", "::")):
                raise self.unknown_type(tok)
            raise self.error("expected a declaration", tok,
                             hint="statements belong inside a function body")
        return self.declaration(None)

    def declaration(self, template_params: list[ast.TemplateParam] | None,
                    member_template: bool = False) -> ast.Node:
        """function-definition | declaration, at file scope; `member_template` after
        `template <> template <>`."""
        start = self.peek()
        specs = self.specifiers(allow_kernel=True)
        name, type_ = self.declarator(specs.type, stop_at_paren=True)
        assert name is not None
        specialization = None
        if template_params is not None and self.accept("<"):
            # `template <> int f<0>(...)`, or a variable template's (partial) specialisation
            specialization = self.template_arguments()
            if template_params == [] and self.at("(") and not member_template:
                fdef = self.function(start, specs, name, type_, template_params)
                fdef.specialization_args = specialization
                return fdef
        if template_params == [] and self.at("::") and (
                specialization is not None or self.lookup(name.text) == _TYPE):
            return self.member_specialization(start, specs, name, type_, specialization,
                                              member_template)
        if member_template:
            raise self.error("expected a member of a class template's instance after "
                             "'template <> template <>'", name, width=len(name.text))
        if template_params is None and self.at("::") and self.lookup(name.text) == _TYPE:
            return self.out_of_class_member(start, specs, name, type_)
        if self.at("(") and not self.parenthesized_initializer_at():
            if specialization is not None:
                raise self.error("a partial specialization of a function template is not "
                                 "C++", hint="overload the function template instead")
            return self.function(start, specs, name, type_, template_params)
        decls = self.init_declarators(specs, name, type_, file_scope=True)
        self.expect(";", "expected ';' after top level declarator")
        if template_params is not None:
            if len(decls) != 1:
                raise self.error("a variable template declares one variable", start)
            self.declare(name.text, _TEMPLATE, file_scope=True)
            return ast.VariableTemplate(self.coord(start), name.text, decls[0], template_params,
                                        specialization)
        return ast.DeclStmt(self.coord(start), decls)

    def function(self, start: Token, specs: _Specifiers, name: Token, return_type: ast.TypeNode,
                 template_params: list[ast.TemplateParam] | None,
                 friend: bool = False) -> ast.FunctionDef:
        """function-definition: specifiers declarator '(' params ')' (compound | ';'); a
        `friend` one declares no name that lookup finds."""
        if template_params is not None:
            # Declared before the body so that recursive calls `f<T>(...)` parse.
            self.declare(name.text, _TEMPLATE, file_scope=True)
        if template_params != [] and not friend:   # (nor does an explicit specialisation)
            self.namespaces.declare(self.namespace_path(), name.text, function=True)
        self.scopes.append({})
        try:
            params = self.parameters()
            self.check_operator(name, params, member=False)
            return_type = self.trailing_return_type(return_type)
            body = None
            if self.at("{"):
                body = self.compound()
            elif not self.accept(";"):
                raise self.error("expected function body after function declarator")
        finally:
            self.scopes.pop()
        return ast.FunctionDef(self.coord(start), name.text, return_type, params, body,
                               template_params, specs.attributes, constexpr=specs.constexpr)

    def trailing_return_type(self, declared: ast.TypeNode) -> ast.TypeNode:
        """['->' type-name] after a function's parameters (and qualifiers): the return type of
        a function declared `auto f(...) -> T`, or `declared`."""
        arrow = self.accept("->")
        if arrow is None:
            return declared
        if not (isinstance(declared, ast.NamedType) and declared.name == "auto"):
            raise self.error("function with trailing return type must specify return type "
                             "'auto'", arrow, width=2)
        return self.type_name()

    def parameters(self) -> list[ast.Param]:
        """parameter-list: '(' [void | parameter (',' parameter)*] ')'"""
        self.expect("(")
        params: list[ast.Param] = []
        if self.at("void") and self.at(")", 1):
            self.advance()
        elif not self.at(")"):
            while True:
                self.refuse_c_variadic()
                params.append(self.parameter())
                if self.at(")", 1):   # `int n...`, C's spelling of `int n, ...`
                    self.refuse_c_variadic()
                if not self.accept(","):
                    break
        self.expect(")")
        return params

    def refuse_c_variadic(self) -> None:
        """A C variadic function's `...` (`int f(int n, ...)`): Metal's library has no
        `va_list` to read such arguments with, and metalsim runs none. A parameter pack
        (`T... xs`) is parsed by `parameter`."""
        if self.at("..."):
            raise self.error("metalsim does not support C variadic functions", self.peek(),
                             width=3, hint="pass a fixed list of parameters, or an array "
                                           "and its length")

    def parameter(self) -> ast.Param:
        """parameter: specifiers declarator? attribute* ['=' default]"""
        start = self.peek()
        if not (start.kind == "ident" or self.at("[")):
            raise self.error("expected parameter declarator")
        specs = self.specifiers()
        if self.at("...") and not _names_in(specs.type) & (self.pack_names | {"auto"}):
            self.refuse_c_variadic()   # `int...`, C's spelling of `int, ...`
        pack = bool(self.accept("..."))
        name, type_ = self.declarator(specs.type, abstract=None)
        attributes = specs.attributes + self.attributes()
        default = None
        if self.accept("="):
            default = self.init_list() if self.at("{") else self.assignment()
        if name is not None:
            self.declare(name.text, _VALUE)
        return ast.Param(self.coord(name or start), name.text if name else None, type_,
                         attributes, default, pack)

    def template_declaration(self) -> ast.Node:
        """template-declaration: 'template' '<' template-params '>' (function | alias)"""
        tmpl = self.advance()
        if not self.at("<"):
            return self.explicit_instantiation(tmpl)
        self.advance()
        self.scopes.append({})
        packs = set(self.pack_names)
        try:
            params = self.template_parameters()
            if self.at("using"):
                alias = self.alias_declaration(params)
                self.declare(alias.name, _TYPE_TEMPLATE, file_scope=True)
                alias.coord = self.coord(tmpl)
                return alias
            if params == [] and self.at("template") and self.at("<", 1) and self.at(">", 2):
                # `template <> template <> R S<A>::f<B>(...)`: a member function template's
                # explicit specialisation for an instance of a class template
                self.pos += 3
                node = self.declaration([], member_template=True)
                node.coord = self.coord(tmpl)
                return node
            if self.at("template"):
                raise self.error("nested template declarations are not supported by metalsim")
            if self.peek().text in _CLASS_KEYS and self.at(";", 2):
                return self.struct_template_declaration(tmpl, params)
            if self.struct_definition_at() or (
                    self.peek().text in _CLASS_KEYS and self.peek(1).text in self.struct_templates
                    and self.at("<", 2)):
                node = self.struct_template(params)
            else:
                node = self.declaration(params)
        finally:
            self.scopes.pop()
            self.pack_names = packs
        node.coord = self.coord(tmpl)
        return node

    def struct_template_declaration(self, tmpl: Token,
                                    params: list[ast.TemplateParam]) -> ast.StructDeclaration:
        """`template <...> struct S;`: declares the template's name, for the definition to
        come (MLX's complex.h names `complex_t<T>` before defining it)."""
        self.advance()
        name = self.identifier("expected a struct name")
        self.expect(";")
        self.declare(name.text, _TYPE_TEMPLATE, file_scope=True)
        self.struct_templates.add(name.text)
        return ast.StructDeclaration(self.coord(tmpl), program_name(self.namespace_path(),
                                                                    name.text), params)

    def struct_forward_declaration(self) -> ast.StructDeclaration:
        """`struct C;`: declares the struct's name, an incomplete type until its definition
        (pointers and references to it may be used before then)."""
        key = self.advance()
        name = self.identifier(f"expected a struct name after '{key.text}'")
        self.expect(";")
        self.declare(name.text, _TYPE, file_scope=True)
        return ast.StructDeclaration(self.coord(key), program_name(self.namespace_path(),
                                                                   name.text), key=key.text)

    def implicit_struct(self, key: Token, name: Token) -> None:
        """`struct C* p;` naming no declared type, outside any block, declares the struct `C`
        (C++ [basic.scope.pdecl]/7) in the namespace around the declaration, which a
        struct's member declarations and a function's parameters belong to. (In a block it
        would declare a local struct: metalsim says the name is unknown.)"""
        self.declare(name.text, _TYPE, file_scope=True)
        self.implicit_structs.append(ast.StructDeclaration(
            self.coord(key), program_name(self.namespace_path(), name.text), key=key.text))

    def struct_template(self, params: list[ast.TemplateParam]) -> ast.StructDef:
        """class-template: 'template' '<' params '>' struct-declaration, where a (partial)
        specialisation names its arguments after the name (`struct S<T*>`). Inside its body
        the bare name is the injected class name, the instance being defined (C++
        [temp.local])."""
        name = self.peek(1)
        if self.at("<", 2):
            if name.text not in self.struct_templates:
                raise self.error(f"explicit specialization of non-template struct "
                                 f"'{name.text}'", name, width=len(name.text))
            return self.struct_specialization(params)
        self.declare(name.text, _TYPE_TEMPLATE, file_scope=True)
        self.struct_templates.add(name.text)
        return self.template_struct(name.text, params)

    def struct_specialization(self, params: list[ast.TemplateParam]) -> ast.StructDef:
        """`struct Name<args> [: bases] { ... };` after `template <params>`."""
        return self.template_struct(self.peek(1).text, params)

    def template_struct(self, name: str, params: list[ast.TemplateParam]) -> ast.StructDef:
        """The struct declaration after `template <params>`, in which `name` (the template's
        injected name) stands for the struct being defined."""
        self.injected.append(name)
        self.template_structs.append((params, self.at("<", 2)))
        try:
            struct = self.struct_declaration()
        finally:
            self.injected.pop()
            self.template_structs.pop()
        struct.template_params = params
        return struct

    def template_parameters(self) -> list[ast.TemplateParam]:
        """template-parameter-list: template-parameter (',' template-parameter)* '>'"""
        params: list[ast.TemplateParam] = []
        while not self.at(">"):
            tok = self.peek()
            if self.accept("typename") or self.accept("class"):
                pack = bool(self.accept("..."))
                # An unnamed parameter (`typename = enable_if_t<...>`) gets a name no one uses.
                unnamed = self.at("=") or self.at(",") or self.at(">")
                name = f"__unnamed{len(params)}" if unnamed else self.identifier(
                    "expected a template parameter name").text
                default = self.template_default(self.type_name)
                self.declare(name, _TYPE)
                params.append(ast.TemplateParam(self.coord(tok), name, None, default, pack))
            else:
                kind = self.specifiers().type
                pointer = None
                if self.at("(") and self.at("*", 1):   # `void (*f)(int)`
                    pointer, kind = self.function_pointer_declarator(kind, kind, None)
                pack = bool(self.accept("..."))
                # unnamed too: `enable_if_t<cond, bool> = true`
                unnamed = self.at("=") or self.at(",") or self.at(">")
                name = pointer.text if pointer is not None else (
                    f"__unnamed{len(params)}" if unnamed else self.identifier(
                        "expected a template parameter name").text)
                default = self.template_default(self.conditional)
                self.declare(name, _VALUE)
                params.append(ast.TemplateParam(self.coord(tok), name, kind, default, pack))
            if not self.accept(","):
                break
        self.close_angle()
        self.pack_names |= {p.name for p in params if p.pack}   # (the caller restores them)
        return params

    def template_default(self, rule: Callable[[], ast.Node]) -> ast.Node | None:
        if not self.accept("="):
            return None
        saved, self.no_gt = self.no_gt, True
        try:
            return rule()
        finally:
            self.no_gt = saved

    def explicit_instantiation(self, tmpl: Token) -> ast.ExplicitInstantiation:
        """explicit-instantiation: 'template' attribute* ['kernel'] decltype(...) name '<' args '>'
        ';' -- the one form MLX generates for a templated kernel."""
        attributes = self.attributes()
        if self.at("kernel"):
            attributes.append(ast.Attribute(self.coord(self.advance()), "kernel"))
        self.expect("decltype", "expected 'decltype(...)' in the explicit instantiation",
                    hint="metalsim supports `template [[host_name(\"n\")]] [[kernel]] "
                         "decltype(f<T>) f<T>;`")
        self.skip_balanced()
        name = self.identifier("expected the name of the instantiated function")
        self.expect("<", "expected '<' after the name of the instantiated function")
        args = self.template_arguments()
        self.expect(";", "expected ';' after explicit instantiation")
        return ast.ExplicitInstantiation(self.coord(tmpl), name.text, args, attributes)

    def defines_function(self) -> bool:
        """Whether the `(...)` ahead is followed by a function body's `{`."""
        depth, k = 0, 0
        while True:
            tok = self.peek(k)
            if tok.kind == "eof":
                return False
            if tok.kind == "punct" and tok.text in ("(", ")"):
                depth += 1 if tok.text == "(" else -1
                if depth == 0:
                    return self.peek(k + 1).text == "{"
            k += 1

    def skip_balanced(self) -> None:
        """Skips a parenthesised token group, `(...)`, whose contents are not needed."""
        open_ = self.expect("(")
        depth = 1
        while depth:
            tok = self.advance()
            if tok.kind == "eof":
                raise self.error("expected ')' to match this '('", open_)
            if tok.kind == "punct":
                depth += {"(": 1, ")": -1}.get(tok.text, 0)

    def alias_declaration(self, template_params: list[ast.TemplateParam] | None = None
                          ) -> ast.TypeAlias | ast.UsingNamespace | ast.Empty:
        """alias: 'typedef' specifiers declarator ';' | 'using' name '=' type-name ';'
        | 'using' 'namespace' name ';' | using-declaration"""
        start = self.advance()
        if start.text == "typedef" and self.struct_definition_at():
            struct = self.struct_definition(typedef=True)
            name = self.identifier("expected a name for the struct after '}'")
            if not struct.name:
                struct.name = name.text  # `typedef struct {...} Name;`: the struct's name
            self.expect(";", "expected ';' after typedef")
            self.declare(name.text, _TYPE)
            return ast.TypeAlias(self.coord(start), name.text, struct)
        if start.text == "using" and self.peek().kind == "ident" and self.at("=", 1) and (
                self.peek(2).text in _CLASS_KEYS and self.at("{", 3)):
            name = self.advance()   # `using Name = union { ... };` (MLX's cexpf.h)
            self.advance()
            struct = self.struct_definition(typedef=True)
            struct.name = name.text
            self.expect(";", "expected ';' after alias declaration")
            self.declare(name.text, _TYPE)
            return ast.TypeAlias(self.coord(start), name.text, struct)
        if start.text == "typedef":
            specs = self.specifiers()
            name, type_ = self.declarator(specs.type)
            assert name is not None
            self.expect(";", "expected ';' after typedef")
        elif self.accept("namespace"):
            first = self.identifier("expected a namespace name")
            parts = [first.text]
            while self.accept("::"):
                parts.append(self.identifier("expected a namespace name").text)
            nominated = METAL if parts == [METAL] else self.find_namespace(
                "::".join(parts), True)
            if nominated is None:
                raise self.error("expected namespace name", first, width=len(first.text),
                                 hint=f"no namespace '{'::'.join(parts)}' is declared before "
                                      "this line")
            self.expect(";", "expected ';' after namespace name")
            if len(self.scopes) == 1:
                self.namespaces.declare_directive(self.namespace_path(), nominated)
            elif nominated != METAL:
                scope = self.scopes[-1]
                scope[_DIRECTIVES_KEY] = f"{scope.get(_DIRECTIVES_KEY, '')} {nominated}"
            return ast.UsingNamespace(self.coord(start), "::".join(parts))
        elif self.using_declaration_at():
            return self.using_declaration(start)
        else:
            name = self.identifier("expected a name after 'using'")
            self.expect("=", "expected '=' after the alias name",
                        hint="metalsim supports `using Name = Type;` and `using namespace N;`")
            type_ = self.type_name()
            self.expect(";", "expected ';' after alias declaration")
        if template_params is None:
            self.declare(name.text, _TYPE)
        return ast.TypeAlias(self.coord(start), name.text, type_, template_params)

    def using_declaration_at(self) -> bool:
        """Whether a namespace member's qualified name (`na::f`, `::g`) follows `using`."""
        k = 1 if self.at("::") else 0
        skip, _ = self.namespace_prefix(k)
        return (skip > k or k == 1) and self.peek(skip).kind == "ident" and self.at(";", skip + 1)

    def using_declaration(self, start: Token) -> ast.Empty:
        """using-declaration: 'using' ['::'] namespace '::' ... name ';' -- declares the name
        in this scope, standing for the namespace member(s) it names."""
        rooted = self.accept("::") is not None
        skip, namespace = self.namespace_prefix(0, rooted)
        for _ in range(skip):
            self.advance()
        member = self.advance()
        entity, others = self.resolve(member, namespace)
        if namespace == "" and self.scopes[0].get(entity) is None and not (
                self.namespaces.qualified("", member.text)):
            raise self.error(f"no member named '{member.text}' in the global namespace", member,
                             width=len(member.text))
        self.expect(";", "expected ';' after using declaration")
        entities = (entity, *others)
        if len(self.scopes) == 1:
            self.namespaces.declare_using(self.namespace_path(), member.text, entities)
        else:
            self.scopes[-1][member.text] = self.scopes[0].get(entity, _ENTITY)
            self.scopes[-1][_USING_KEY + member.text] = " ".join(entities)
        return ast.Empty(self.coord(start))

    def enum_declaration(self) -> ast.EnumDef:
        """enum-declaration: 'enum' ['class' | 'struct'] name [':' type-name]
        '{' [enumerator ['=' constant] (',' enumerator ['=' constant])* [',']] '}' ';'"""
        start = self.advance()
        scoped = bool(self.accept("class") or self.accept("struct"))
        anonymous = self.at("{") or self.at(":")
        if anonymous and scoped:
            raise self.error("scoped enumeration requires a name")
        # An anonymous one's type cannot be named; it is shown as clang shows it.
        name = start if anonymous else self.identifier("expected an enumeration name")
        shown = (f"(unnamed enum at {self.coord(start)})" if anonymous else name.text)
        underlying = self.type_name() if self.accept(":") else None
        if not self.at("{"):
            raise self.error("declaring an enumeration without defining it is not supported "
                             "by metalsim", hint=f"define it here: 'enum {name.text} {{ ... }};'")
        open_ = self.advance()
        if not anonymous:
            self.declare(name.text, _TYPE)
        enumerators: list[ast.Enumerator] = []
        while not self.at("}"):
            if self.peek().kind == "eof":
                raise self.error("expected '}' to match this '{'", open_)
            tok = self.identifier("expected an enumerator name")
            value = self.nested(self.conditional) if self.accept("=") else None
            if not scoped:  # an unscoped enumeration's enumerators are named where it is
                self.declare(tok.text, _VALUE)
            enumerators.append(ast.Enumerator(self.coord(tok), tok.text, value))
            if not self.accept(","):
                break
        self.expect("}", "expected '}' or ',' after an enumerator")
        if self.peek().kind == "ident":
            raise self.error("declaring a variable in an enum definition is not supported "
                             "by metalsim", hint=f"declare it separately: "
                                                 f"'{shown} {self.peek().text};'")
        self.expect(";", "expected ';' after enum")
        return ast.EnumDef(self.coord(start), shown, scoped, underlying, enumerators)

    def static_assert(self) -> ast.StaticAssert:
        """static-assert: 'static_assert' '(' expression [',' string] ')' ';'"""
        start = self.advance()
        self.expect("(", "expected '(' after 'static_assert'")
        cond = self.nested(self.assignment)
        message = ""
        if self.accept(","):
            if self.peek().kind != "string":
                raise self.error("expected a string literal as the static_assert message")
            message = self.string_literal().value
        self.expect(")")
        self.expect(";", "expected ';' after static_assert")
        return ast.StaticAssert(self.coord(start), cond, message)

    def attributes(self) -> list[ast.Attribute]:
        """attribute-specifier*: '[[' [attribute (',' attribute)*] ']]'"""
        attributes: list[ast.Attribute] = []
        while self.at("[") and self.at("[", 1):
            self.advance()
            self.advance()
            while not self.at("]"):
                # Attribute names may be keywords: `[[kernel]]`, `[[threadgroup(0)]]`.
                name = self.attribute_name()
                text = name.text
                while self.accept("::"):
                    text += "::" + self.attribute_name().text
                args = self.call_arguments() if self.at("(") else []
                attributes.append(ast.Attribute(self.coord(name), text, args))
                if not self.accept(","):
                    break
            self.expect("]", "expected ']]' to close the attribute")
            self.expect("]", "expected ']]' to close the attribute")
        return attributes

    def attribute_name(self) -> Token:
        if self.peek().kind != "ident":
            raise self.error("expected an attribute name")
        return self.advance()

    def identifier(self, message: str) -> Token:
        tok = self.peek()
        if tok.kind != "ident" or tok.text in _RESERVED:
            raise self.error(message)
        return self.advance()

    # --- Declarations and types ----------------------------------------------------------------

    def specifiers(self, allow_kernel: bool = False) -> _Specifiers:
        """decl-specifiers: (storage | cv | address-space | attribute | type-specifier)+

        Qualifiers may sit on either side of the type name (`const device float`,
        `device float const`); they all land on the NamedType.
        """
        first: Token | None = None  # the type's coord: its first word, after any attributes
        const = constexpr = static = False
        space: str | None = None
        attributes: list[ast.Attribute] = []
        base: ast.NamedType | None = None
        words: list[Token] = []  # integer type words: `unsigned long`
        typename = False
        while True:
            tok = self.peek()
            text = tok.text
            if tok.kind != "ident":
                if text == "[" and self.at("[", 1):
                    attributes += self.attributes()
                    continue
                break
            first = first or tok
            if text == "const":
                const = True
            elif text == "constexpr":
                constexpr = True
            elif text == "static":
                static = True
            elif text == "typename":
                typename = True
            elif text in ("volatile", "inline", "extern"):
                pass  # no effect on what the simulator computes
            elif text in _ADDRESS_SPACES:
                if space is not None and space != text:
                    raise self.error(f"conflicting address spaces '{space}' and '{text}'", tok,
                                     width=len(text))
                space = text
            elif text == "__attribute__":
                self.advance()
                self.skip_balanced()
                continue
            elif text == "kernel" and allow_kernel:
                attributes.append(ast.Attribute(self.coord(tok), "kernel"))
            elif text in ("struct", "class") and base is None and not words:
                # `struct Params p;`: the elaborated form names the same type.
                following = self.peek(1)
                if not self.type_at(1) and following.kind == "ident" and (
                        following.text not in _RESERVED) and not (
                        self.at("::", 2) or self.block_depth):
                    self.implicit_struct(tok, following)
                if not self.type_at(1):
                    if following.kind == "ident" and following.text not in _RESERVED:
                        raise self.unknown_type(following)
                    raise self.error("expected a struct name after 'struct'", following)
            elif text in _INT_WORDS and base is None:
                words.append(tok)
            elif base is None and not words and self.type_at():
                base = self.type_specifier(typename)
                continue
            elif base is not None or words:
                if text in _BUILTIN_TYPE_WORDS:
                    previous = base.name if base is not None else words[-1].text
                    raise self.error(f"cannot combine with previous '{previous}' declaration "
                                     "specifier", tok, width=len(text))
                break  # the declarator's name
            elif text in _RESERVED:
                break
            elif self.peek(1).kind == "ident" or self.peek(1).text in ("*", "&", "<", "::"):
                raise self.unknown_type(tok)
            else:
                raise self.error(f"expected a type before '{text}'", tok, width=len(text),
                                 hint="every declaration needs a type, e.g. 'int'")
            self.advance()
        if words:
            key = tuple(sorted(w.text for w in words))
            if key.count("long") > 1:
                raise self.error("'long long' is not a Metal type", words[0], width=9,
                                 hint="'long' is 64 bits in Metal")
            if key not in _INT_COMBINATIONS:
                spelled = " ".join(w.text for w in words)
                raise self.error(f"'{spelled}' is not a valid type", words[0],
                                 width=len(spelled))
            base = ast.NamedType(self.coord(words[0]), _INT_COMBINATIONS[key])
        if base is None:
            raise self.error("expected a type", hint="every declaration needs a type, e.g. 'int'")
        base.const, base.space = const, space
        base.coord = self.coord(first or self.peek())
        return _Specifiers(base, constexpr, static, attributes)

    def type_specifier(self, typename: bool = False) -> ast.NamedType:
        """type-specifier: ['::'] ['metal' '::']* name ['<' template-args '>'] ('::' name)*

        `::name` after the type names a member type: one the parser saw declared in a struct,
        or any name after `typename` (a member of a template parameter, `typename T::type`)."""
        start = self.peek()
        if self.accept("decltype"):
            self.expect("(", "expected '(' after 'decltype'")
            operand = self.nested(self.expression)
            self.expect(")")
            return self.member_types_of(ast.NamedType(self.coord(start), "decltype", [operand]),
                                        typename, start)
        rooted = self.accept("::") is not None
        skip, namespace = self.namespace_prefix(0, rooted)
        for _ in range(skip):
            self.advance()
        tok = self.advance()
        name = tok.text
        injected = name in self.injected and namespace is None
        if name not in _BUILTIN_TYPE_WORDS:
            name = self.resolve(tok, namespace)[0]
        if name == "double":
            raise self.error("'double' is not supported in Metal", tok, hint="use 'float'",
                             width=6)
        if name in _INT_WORDS:
            name = _INT_COMBINATIONS[(name,)]
        args = None
        # The injected class name of a struct template may take arguments (`Acc<T>`) or not.
        kind = self.scopes[0].get(name) if namespace is not None else self.lookup(name)
        if name in _TYPE_TEMPLATES or (kind == _TYPE_TEMPLATE and not injected) or (
                injected and self.at("<")):
            if not self.accept("<"):
                if name in self.struct_templates:  # C++14 deduces no class template arguments
                    raise self.error(f"use of class template '{name}' requires template "
                                     f"arguments", tok, hint=f"write them out: '{name}<...>'",
                                     width=len(name))
                raise self.error(f"use of template '{name}' requires template arguments", tok,
                                 hint=f"e.g. '{name}<float, 4>'" if name == "vec" else "",
                                 width=len(name))
            args = self.template_arguments()
        # (the injected class name is the instance being defined, which the scope of its
        # members declares under the template's program name)
        named = ast.NamedType(self.coord(start), name, args,
                              namespace_scope=namespace not in (None, METAL)
                              or (name != tok.text and not injected))
        return self.member_types_of(named, typename, start)

    def member_types_of(self, named: ast.NamedType, typename: bool, start: Token
                        ) -> ast.NamedType:
        """`named` followed by `::type` ...: the member types it names; `::template
        name<args>` names an instance of a member alias template."""
        while self.at("::") and self.peek(1).kind == "ident" and (
                typename or self.peek(1).text in self.member_types):
            self.advance()
            template = self.accept("template") is not None
            member = self.advance()
            args = self.template_arguments() if (
                template or member.text in self.member_alias_templates) and self.accept(
                "<") else None
            named = ast.NamedType(self.coord(start), member.text, args, member_of=named)
        return named

    def type_name(self) -> ast.TypeNode:
        """type-name: specifiers abstract-declarator, as in casts and template arguments"""
        return self.declarator(self.specifiers().type, abstract=True)[1]

    def declarator(self, base: ast.NamedType, abstract: bool | None = False,
                   stop_at_paren: bool = False) -> tuple[Token | None, ast.TypeNode]:
        """declarator: ('*' cv* | '&')* name? ('[' size? ']')*

        `abstract` is True where no name may appear (casts), None where it is optional
        (parameters). Returns the name token and the declared type.
        """
        type_: ast.TypeNode = base
        while True:
            if self.accept("*"):
                const = False
                while self.peek().text in ("const", "volatile", "restrict", "__restrict"):
                    const = const or self.advance().text == "const"
                type_ = ast.PointerType(base.coord, type_, const)
            elif self.accept("&"):
                type_ = ast.ReferenceType(base.coord, type_)
            elif self.at("&&"):
                raise self.error("rvalue references are not supported by metalsim")
            else:
                break
        name = None
        tok = self.peek()
        if stop_at_paren and tok.text == "operator":
            return self.operator_name(), type_
        if self.at("(") and self.at("&", 1) and not abstract and (
                self.at(")", 3) or self.at(")", 2)):
            return self.array_reference_declarator(type_, base)
        if self.at("(") and self.at("*", 1) and (self.at(")", 2) or self.at(")", 3)):
            return self.function_pointer_declarator(type_, base, abstract)
        if not abstract and tok.kind == "ident" and tok.text not in _RESERVED:
            name = self.advance()
        elif abstract is False:
            raise self.error("expected identifier" if tok.kind != "ident"
                             else f"expected identifier; '{tok.text}' is a reserved word",
                             hint="" if tok.kind != "eof" else "the declaration is incomplete")
        if stop_at_paren and self.at("("):
            return name, type_
        sizes: list[ast.Expr | None] = []
        while self.at("[") and not self.at("[", 1):
            self.advance()
            sizes.append(None if self.at("]") else self.nested(self.conditional))
            self.expect("]")
        for size in reversed(sizes):
            type_ = ast.ArrayType(base.coord, type_, size)
        return name, type_

    def array_reference_declarator(self, element: ast.TypeNode, base: ast.NamedType
                                   ) -> tuple[Token | None, ast.TypeNode]:
        """'(' '&' name? ')' ('[' size ']')+: a reference to an array, `T (&a)[N]`."""
        self.advance()
        self.advance()
        name = self.advance() if self.peek().kind == "ident" else None
        self.expect(")")
        if not self.at("["):
            raise self.error("expected '[' after a parenthesized reference declarator",
                             hint="metalsim supports references to arrays: 'T (&a)[N]'")
        _, array = self.declarator(base, abstract=True)
        return name, ast.ReferenceType(base.coord, _with_element(array, element))

    def function_pointer_declarator(self, result: ast.TypeNode, base: ast.NamedType,
                                    abstract: bool | None) -> tuple[Token | None, ast.TypeNode]:
        """'(' '*' name? ')' '(' params ')': a pointer to a function, `R (*f)(P...)`."""
        self.advance()
        self.advance()
        name = None
        if self.peek().kind == "ident":
            if abstract:
                raise self.error("expected ')'")
            name = self.advance()
        elif abstract is False:
            raise self.error("expected identifier")
        self.expect(")")
        self.scopes.append({})
        try:
            params = [p.type for p in self.parameters()]
        finally:
            self.scopes.pop()
        return name, ast.FunctionPointerType(base.coord, result, params)

    def operator_name(self) -> Token:
        """operator-function-id: 'operator' overloadable-operator, as one name token
        (`operator+`, `operator[]`, `operator()`); the operators metalsim cannot overload are
        refused here."""
        start = self.advance()
        tok = self.peek()
        text = tok.text
        if text in ("(", "[") and self.at(_CLOSERS[text], 1):
            self.advance()
            self.advance()
            text += _CLOSERS[text]
        elif tok.kind == "punct" and text in _OVERLOADABLE:
            self.advance()
        elif tok.kind == "punct" or text in ("new", "delete"):
            raise self.error(f"overloading 'operator{text}' is not supported by metalsim", tok,
                             width=len(text), hint=_NOT_OVERLOADABLE.get(
                                 text, "write a named function instead"))
        else:
            raise self.error("conversion function must be a non-static member function", start,
                             width=len(start.text),
                             hint="declare 'operator T() const { ... }' in the struct")
        return replace(start, text="operator" + text)

    def check_operator(self, name: Token, params: list[ast.Param], member: bool) -> None:
        """An operator function's parameter count (`this` included), checked as clang does, and
        a postfix `operator++(int)`'s `int`; a unary `operator&` (address-of) is refused, as
        metalsim always takes the address."""
        op = name.text[len("operator"):] if name.text.startswith("operator") else None
        if op is None:
            return
        arity = len(params) + member
        if op == "[]" and not member:
            raise self.error("overloaded 'operator[]' must be a non-static member function",
                             name, width=len(name.text))
        if op == "()":
            if not member:
                raise self.error("overloaded 'operator()' must be a non-static member "
                                 "function", name, width=len(name.text))
            return
        if op == "&" and arity == 1:
            raise self.error("overloading unary 'operator&' is not supported by metalsim",
                             name, width=len(name.text),
                             hint="'&' takes the address of the object")
        if op in ("++", "--") and arity == 2:
            self.check_postfix_parameter(op, params[-1])
        unary_ok, binary_ok = op in ("+", "-", "*", "&", "!", "~", "++", "--"), op not in (
            "!", "~")
        if (arity == 1 and unary_ok) or (arity == 2 and binary_ok):
            return
        kind = ("a unary or binary" if unary_ok and binary_ok
                else "a unary" if unary_ok else "a binary")
        raise self.error(f"overloaded '{name.text}' must be {kind} operator (has {arity} "
                         f"parameter{'s' if arity != 1 else ''})", name, width=len(name.text))

    def check_postfix_parameter(self, op: str, param: ast.Param) -> None:
        """A postfix `operator++`/`operator--` tells itself from the prefix one by a last
        parameter of type `int` (C++ [over.inc]), as clang checks. A name the parser cannot
        resolve (a typedef, a template parameter) passes here."""
        t = param.type
        if isinstance(t, ast.NamedType) and (t.name == "int" or t.name not in TYPE_NAMES) and (
                not t.template_args and t.space is None):
            return
        kind = "increment" if op == "++" else "decrement"
        raise CompileError(f"parameter of overloaded post-{kind} operator must have type 'int' "
                           f"(not '{_spelled(t)}')", param.type.coord, self.sm,
                           hint=f"write 'operator{op}(int)' for the postfix form, "
                                f"'operator{op}()' for the prefix one")

    def init_declarators(self, specs: _Specifiers, name: Token, type_: ast.TypeNode,
                         file_scope: bool = False) -> list[ast.VarDecl]:
        """init-declarator-list: declarator [initializer] (',' declarator [initializer])*

        The first declarator has been parsed already; later ones get copies of the specifiers'
        NamedType so that no two declarations share a node.
        """
        decls: list[ast.VarDecl] = []
        while True:
            init = None
            attributes = self.attributes() if file_scope else []
            if self.accept("="):
                init = self.initializer()
            elif self.at("{"):
                init = self.init_list()
            elif self.at("(") and file_scope and self.parenthesized_initializer_at():
                # `constant mlx::os_log logger("mlx", "binary_ops");`
                init = ast.Construct(self.coord(name), type_, self.call_arguments())
            elif self.at("(") and not file_scope:
                if self.defines_function():
                    raise self.error(f"function definition is not allowed here: '{name.text}' "
                                     "is defined inside a function body", name,
                                     width=len(name.text),
                                     hint="helper functions belong in the kernel's header: "
                                          "pass them as metal_kernel(..., header=...)")
                # `float4 v(1, 2, 3, 4);` direct initialisation
                if self.at(")", 1):
                    raise self.error("empty parentheses declare a function, not a variable",
                                     hint=f"write '{name.text}{{}}' or drop the '()'")
                init = ast.Construct(self.coord(name), type_, self.call_arguments())
            self.declare(name.text, _VALUE, file_scope)
            decls.append(ast.VarDecl(self.coord(name), name.text, type_, init, specs.constexpr,
                                     specs.static, attributes))
            if not self.accept(","):
                return decls
            named, type_ = self.declarator(copy.copy(specs.type))
            assert named is not None
            name = named

    def parenthesized_initializer_at(self) -> bool:
        """Whether the '(' after a declarator at file scope opens constructor arguments
        rather than a parameter list: it is followed by a literal."""
        return self.at("(") and self.peek(1).kind in ("int", "float", "string", "char")

    def initializer(self) -> ast.Expr:
        """initializer: assignment-expression | init-list"""
        return self.init_list() if self.at("{") else self.assignment()

    def init_list(self) -> ast.InitList:
        """init-list: '{' [initializer (',' initializer)* [',']] '}'"""
        return ast.InitList(self.coord(self.peek()), self.nested(self.brace_items))

    def brace_items(self) -> list[ast.Expr]:
        open_ = self.expect("{")
        items: list[ast.Expr] = []
        while not self.at("}"):
            items.append(self.initializer())
            if not self.accept(","):
                break
        if not self.at("}"):
            if self.peek().kind == "eof":
                raise self.error("expected '}' to match this '{'", open_)
            raise self.error("expected '}' or ',' in initializer list")
        self.advance()
        return items

    # --- Structs -------------------------------------------------------------------------------

    def struct_definition_at(self) -> bool:
        """Whether `struct [alignas(n)] [name] {` (a definition, not an elaborated type) begins
        here."""
        return self.peek().text in _CLASS_KEYS and (self.at("{", 1) or self.at("alignas", 1) or (
            self.peek(1).kind == "ident" and self.peek(1).text not in _RESERVED
            and self.peek(2).text in ("{", ":")))

    def struct_declaration(self) -> ast.StructDef:
        """struct-declaration: struct-definition ';'"""
        struct = self.struct_definition()
        if self.peek().kind == "ident":
            raise self.error("declaring a variable in a struct definition is not supported "
                             "by metalsim", hint=f"declare it separately: "
                                                 f"'{struct.name or 'S'} {self.peek().text};'")
        self.expect(";", "expected ';' after struct definition")
        return struct

    def struct_definition(self, typedef: bool = False) -> ast.StructDef:
        """struct-definition: ('struct' | 'union') [name] '{' member-declaration* '}'"""
        start = self.advance()
        name = ""
        specialization: list[ast.Node] | None = None
        align: ast.Expr | None = None
        if self.accept("alignas"):
            self.expect("(", "expected '(' after 'alignas'")
            align = self.nested(self.conditional)
            self.expect(")")
        if not self.at("{"):
            tok = self.identifier("expected a struct name")
            name = tok.text
            if self.at("<") and name in self.struct_templates:  # a specialisation's arguments
                self.advance()
                specialization = self.template_arguments()
            # The name is declared from here on, as in C++ (`S* next;` inside S parses).
            self.declare(name, _TYPE)
        elif not typedef:
            raise self.error("anonymous structs are not supported by metalsim", start,
                             hint="give the struct a name: 'struct Name { ... };'", width=6)
        bases: list[ast.NamedType] = []
        access = "private" if start.text == "class" else "public"
        base_access: list[str] = []
        if self.accept(":"):  # base-clause: [access] type (',' [access] type)*
            while True:
                if self.peek().text == "virtual":
                    raise self.error("virtual base classes are not supported by metalsim",
                                     width=7)
                base_access.append(access)
                if self.peek().text in ("public", "private", "protected"):
                    base_access[-1] = self.advance().text
                if not self.type_at():
                    k = self.namespace_prefix()[0]
                    if self.peek(k).kind == "ident" and self.peek(k).text not in _RESERVED:
                        raise self.unknown_type(self.peek(k))
                    raise self.error("expected class name", width=max(1, len(self.peek().text)))
                bases.append(self.type_specifier(typename=True))
                if not self.accept(","):
                    break
        open_ = self.expect("{")
        members: list[ast.VarDecl] = []
        methods: list[ast.MemberFunction] = []
        constructors: list[ast.Constructor] = []
        space_constructors: list[ast.Constructor] = []
        statics: list[ast.VarDecl | ast.TypeAlias] = []
        using: list[ast.Name] = []
        restricted: dict[str, str] = {}
        friends_before = len(self.friend_names)
        self.scopes.append({})  # the member types
        inherited = set().union(*(self.struct_members.get(b.name, ()) for b in bases))
        declared = _member_names(self.tokens, self.pos) - {name} | inherited
        self.member_names.append(declared)
        try:
            while not self.accept("}"):
                if self.peek().kind == "eof":
                    raise self.error("expected '}' to match this '{'", open_)
                if self.peek().text in ("public", "private", "protected") and self.at(":", 1):
                    access = self.advance().text
                    self.advance()
                    continue
                for item in self.member_declaration(name):
                    if access != "public" and isinstance(item, ast.VarDecl | ast.MemberFunction):
                        restricted[item.name] = access
                    if isinstance(item, ast.Name):
                        using.append(item)
                    elif isinstance(item, ast.Constructor):
                        # metalsim constructs objects in thread memory only (kernel locals);
                        # one for threadgroup, device or constant objects is never called
                        if item.space == "thread":
                            constructors.append(item)
                        else:
                            space_constructors.append(item)
                    elif isinstance(item, ast.VarDecl) and item.static or isinstance(
                            item, ast.TypeAlias | ast.StaticAssert | ast.StructDef
                            | ast.StructDeclaration | ast.EnumDef):
                        statics.append(item)
                    elif isinstance(item, ast.MemberFunction):
                        methods.append(item)
                    else:
                        members.append(item)
        finally:
            self.scopes.pop()
            self.member_names.pop()
        friends = set(self.friend_names[friends_before:])
        del self.friend_names[friends_before:]
        self.struct_members[program_name(self.namespace_path(), name)] = declared
        return ast.StructDef(self.coord(start), name, members, methods, constructors,
                             statics=statics, bases=bases, specialization=specialization,
                             align=align, union=start.text == "union",
                             space_constructors=space_constructors, using_members=using,
                             restricted=restricted, base_access=base_access, friends=friends)

    def using_member(self, struct: str) -> ast.Name:
        """member-using-declaration: 'using' base-class '::' name ';' -- names a base class's
        member in the struct: a member function's overloads join the struct's own."""
        start = self.advance()
        target = self.qualified_name()
        if target.name == "operator":   # `using B::operator+;`
            self.pos -= 1
            target.name = self.operator_name().text
        self.expect(";", "expected ';' after using declaration")
        base = target.qualifier.rpartition("::")[2]
        if not target.qualifier:
            raise self.error("using declaration in a struct refers to a member of a base "
                             "class ('using B::f;')", start, width=5)
        if target.name == base:
            raise self.error(f"inheriting constructors ('using {base}::{base};') are not "
                             "supported by metalsim", start, width=5,
                             hint=f"declare the constructors in '{struct}' and initialize "
                                  f"the base with '{base}(...)'")
        return target

    def friend_declaration(self, struct: str) -> None:
        """friend-declaration: 'friend' ('struct' | 'class') name ';' | 'friend' function

        The names it declares friends may access the struct's private members; a friend
        function defined here (a hidden friend) is a function of the struct's namespace
        that only argument-dependent lookup finds (C++ [namespace.memdef]/3)."""
        friend = self.advance()
        if self.peek().text in _CLASS_KEYS or self.at(";", 1):
            while not self.accept(";"):
                if self.peek().kind == "eof" or self.at("}"):
                    raise self.error_after_previous("expected ';' after friend declaration")
                self.friend_names.append(self.advance().text)
            return
        template = self.template_structs[-1] if self.injected else None
        if len(self.member_names) > 1 or len(self.scopes) > (3 if template else 2) or (
                template is not None and template[1]):
            raise self.error("a friend function defined in a struct template's specialisation, "
                             "a nested or local struct, or as a template is not supported by "
                             "metalsim", friend, width=6,
                             hint="declare the function after the struct, as a template if "
                                  "the struct is one")
        start = self.peek()
        specs = self.specifiers()
        name, type_ = self.declarator(specs.type, stop_at_paren=True)
        if name is None or not self.at("("):
            raise self.error("expected a function after 'friend'", start)
        fdef = self.function(start, specs, name, type_, None, friend=True)
        self.friend_names.append(name.text)
        if fdef.body is None:
            return   # (a friend declaration of a function declared at namespace scope)
        fdef.name = program_name(self.namespace_path(), name.text)
        fdef.friend_of = program_name(self.namespace_path(), struct)
        if template is not None:   # one function per instance, of the instance's arguments
            fdef.template_params = template[0]
        self.hidden_friends.append(fdef)

    def member_declaration(self, struct: str) -> list[ast.Node]:
        """member-declaration: specifiers declarator (',' declarator)* ';' | member-function
        | member-type | access-label ':'

        Data members and non-static member functions defined in the body; what else C++ allows
        in a class is refused here, with what to write instead.
        """
        tok = self.peek()
        if tok.text in ("public", "private", "protected") and self.at(":", 1):
            self.advance()
            self.advance()
            return []
        if self.accept(";"):
            return []
        if tok.text == "virtual":
            raise self.error("virtual functions are not allowed in Metal", tok, width=7,
                             hint="Metal has no virtual dispatch: call the function of the type "
                                  "you have (d.f(), d.B::f()), or choose one with a template "
                                  "parameter")
        if tok.text == "friend":
            self.friend_declaration(struct)
            return []
        if tok.text == "enum":   # a member type; an unscoped one's enumerators are members
            enum = self.enum_declaration()
            self.member_types.add(enum.name)
            return [enum]
        if tok.text == "template":
            return [self.member_template(struct)]
        if tok.text == "static_assert":
            return [self.static_assert()]
        if tok.text == "using" and self.type_at(1) and not self.at("=", 2):
            return [self.using_member(struct)]
        if tok.text in ("typedef", "using"):
            alias = self.alias_declaration()
            if isinstance(alias, ast.UsingNamespace | ast.Empty):
                what = "using-directive" if isinstance(alias, ast.UsingNamespace) else (
                    "using-declaration of a namespace member")
                raise self.error(f"a {what} is not allowed in a struct", tok,
                                 width=len(tok.text), hint="put it at namespace scope")
            if isinstance(alias.type, ast.StructDef):
                raise self.error("a struct defined in a struct is not supported by metalsim",
                                 tok, width=len(tok.text), hint="define it before the struct")
            self.member_types.add(alias.name)
            return [alias]
        only_data = "a struct may hold data members, member functions and constructors"
        k = 0  # `inline` (MLX's METAL_FUNC), `constexpr`, `explicit` before a constructor
        while self.peek(k).text in ("inline", "constexpr", "explicit"):
            k += 1
        if struct and self.peek(k).text == struct and self.at("(", k + 1):
            words = [self.advance().text for _ in range(k)]
            ctor = self.constructor(tok, "explicit" in words)
            ctor.constexpr = "constexpr" in words
            return [ctor]
        if self.at("~"):
            self.destructor(struct)
            return []
        k = 0
        while self.peek(k).text in ("inline", "constexpr", "explicit"):
            k += 1
        if self.at("operator", k) and self.peek(k + 1).kind == "ident":
            return [self.conversion_function(k)]
        if tok.text in _CLASS_KEYS and self.peek(1).kind == "ident" and self.at(";", 2):
            declared = self.local_struct_declaration()
            self.member_types.add(declared.name)
            return [declared]
        if tok.text in _CLASS_KEYS and self.struct_definition_at():  # a nested class
            nested = self.struct_declaration()
            if not nested.name:
                raise self.error("anonymous structs are not supported by metalsim", tok)
            self.member_types.add(nested.name)
            return [nested]
        elaborated = tok.text in ("struct", "class") and not self.struct_definition_at()
        if tok.kind == "ident" and tok.text in _KEYWORDS - _DECL_WORDS and not elaborated:
            raise self.error(f"'{tok.text}' inside a struct is not supported by metalsim", tok,
                             hint=only_data, width=len(tok.text))
        specs = self.specifiers()
        members: list[ast.VarDecl] = []
        while True:
            named = copy.copy(specs.type) if members else specs.type
            name, type_ = self.declarator(named, stop_at_paren=True)
            assert name is not None
            if self.at("(") and not members:
                return [self.member_function(tok, specs, name, type_)]
            if specs.static and (specs.constexpr or specs.type.const) and self.accept("="):
                # `static constexpr constant T k = ...;` (MLX's STEEL_CONST), or `static const`
                # (utils.h's Limits): a constant of the struct, used as `S::k` or by its
                # member functions.
                members.append(ast.VarDecl(self.coord(name), name.text, type_,
                                           self.initializer(), True, True))
                if not self.accept(","):
                    break
                continue
            if specs.static or specs.constexpr:
                raise self.error("static data members are not supported by metalsim unless "
                                 "'static constexpr' with an initializer", tok,
                                 hint="write 'static constexpr constant int k = ...;', or "
                                      "declare a 'constant' variable at program scope")
            if self.at("("):
                raise self.error("declare a member function on its own, not in a list of "
                                 "data members", name, width=len(name.text))
            default = None  # a default member initializer: `T m = e;` or `T m{...};`
            if self.accept("="):
                default = self.initializer()
            elif self.at("{"):
                default = self.init_list()
            if self.at(":"):
                raise self.error("bit-fields are not supported by metalsim")
            members.append(ast.VarDecl(self.coord(name), name.text, type_, default))
            if not self.accept(","):
                break
        self.expect(";", "expected ';' at end of declaration list")
        return members

    def member_template(self, struct: str) -> ast.MemberFunction | ast.TypeAlias:
        """member-template: 'template' '<' template-params '>' (member-function | constructor
        | conversion-function | alias-declaration)"""
        start = self.advance()
        self.expect("<", "expected '<' after 'template'")
        self.scopes.append({})
        alias = None
        packs = set(self.pack_names)
        try:
            params = self.template_parameters()
            if self.at("using"):   # a member alias template
                alias = self.alias_declaration(params)
            else:
                args = self.specialization_arguments() if not params else None
                items = self.member_declaration(struct)
        finally:
            self.scopes.pop()
            self.pack_names = packs
        if isinstance(alias, ast.TypeAlias):
            alias.coord = self.coord(start)
            self.declare(alias.name, _TYPE_TEMPLATE)
            self.member_types.add(alias.name)
            self.member_alias_templates.add(alias.name)
            return alias
        if len(items) != 1 or type(items[0]) not in (ast.MemberFunction, ast.Constructor,
                                                     ast.ConversionFunction):
            raise self.error("member templates other than member functions, constructors and "
                             "conversion functions are not supported by metalsim", start,
                             width=len(start.text),
                             hint="template the struct instead: 'template <typename T> "
                                  "struct S { ... };'")
        fn = items[0]
        fn.template_params, fn.coord = params, self.coord(start)
        fn.specialization_args = args
        if type(fn) is ast.MemberFunction:
            self.member_templates.add(fn.name)
        return fn

    def specialization_arguments(self) -> list[ast.Node] | None:
        """The template arguments after the name of an explicit specialisation of a member
        function template (`T get<0>() {...}`), which are taken out of the tokens so that the
        member function parses as any other; None if it names none."""
        depth, k = 0, 0
        while not (depth == 0 and self.at("(", k)):   # the parameter list's '('
            tok = self.peek(k)
            if tok.kind == "eof" or tok.text in (";", "{", "}"):
                return None
            if tok.kind == "punct":
                depth += {"<": 1, ">": -1, ">>": -2}.get(tok.text, 0)
            k += 1
        if not self.at(">", k - 1) or self.at("operator", k - 2):
            return None
        open_, depth = k - 1, 0
        while True:   # back to the '<' that opens the arguments
            depth += {">": 1, "<": -1}.get(self.peek(open_).text, 0)
            if depth == 0:
                break
            open_ -= 1
            if open_ < 0:
                return None
        start = self.pos
        self.pos += open_ + 1
        args = self.template_arguments()
        end, self.pos = self.pos, start
        del self.tokens[start + open_:end]
        return args

    def conversion_function(self, specifiers: int) -> ast.ConversionFunction:
        """conversion-function: ('inline' | 'constexpr' | 'explicit')* 'operator' type-name
        '(' ')' qualifiers compound"""
        start = self.peek()
        words = [self.advance().text for _ in range(specifiers)]
        explicit = "explicit" in words
        self.advance()  # operator
        target = self.type_name()
        self.scopes.append({})
        try:
            self.expect("(", "expected '(' after the conversion's type")
            self.expect(")", "a conversion function takes no parameters")
            const, space = self.member_qualifiers()
            if not self.at("{"):
                raise self.error("expected function body after function declarator")
            body = self.compound()
        finally:
            self.scopes.pop()
        return ast.ConversionFunction(self.coord(start), ast.CONVERSION, target, [], body,
                                      None, [], const, space, False, explicit=explicit,
                                      constexpr="constexpr" in words)

    def member_qualifiers(self) -> tuple[bool, str | None]:
        """A member function's `const`, address space and `noexcept`, in any order."""
        const, space = False, None
        while self.peek().text in _QUALIFIERS or self.at("noexcept"):
            tok = self.advance()
            if tok.text == "const":
                const = True
            elif tok.text in _ADDRESS_SPACES:
                if space is not None and space != tok.text:
                    raise self.error(f"conflicting address spaces '{space}' and "
                                     f"'{tok.text}'", tok, width=len(tok.text))
                space = tok.text
        return const, space

    def member_function(self, start: Token, specs: _Specifiers, name: Token,
                        return_type: ast.TypeNode) -> ast.MemberFunction:
        """member-function: specifiers declarator '(' params ')' ('const' | address-space)*
        compound"""
        self.scopes.append({})
        try:
            params = self.parameters()
            self.check_operator(name, params, member=True)
            const, space = self.member_qualifiers()
            if specs.static and (const or space):
                qualifier = "const" if const else space
                raise self.error(f"static member function cannot have '{qualifier}' qualifier",
                                 self.tokens[self.pos - 1])
            if self.at("&") or self.at("&&"):
                raise self.error("ref-qualified member functions are not supported by metalsim")
            return_type = self.trailing_return_type(return_type)
            body = None   # declared only: defined after the struct (`S::f(...) {...}`)
            if not self.accept(";"):
                if not self.at("{"):
                    raise self.error("expected function body after function declarator")
                body = self.compound()
        finally:
            self.scopes.pop()
        return ast.MemberFunction(self.coord(start), name.text, return_type, params, body,
                                  None, specs.attributes, const, space, specs.static,
                                  constexpr=specs.constexpr)

    def out_of_class_member(self, start: Token, specs: _Specifiers, struct: Token,
                            return_type: ast.TypeNode) -> ast.MemberFunction:
        """`R S::f(params) qualifiers { ... }` at file scope: the definition of a member
        function `S` declares (MLX's unary_ops.h defines `ArcCos::operator()` so)."""
        self.expect("::")
        name = self.operator_name() if self.at("operator") else self.identifier(
            "expected a member function name after '::'")
        fn = self.member_function(start, specs, name, return_type)
        if fn.body is None:
            raise self.error(f"expected the body of '{struct.text}::{name.text}'")
        fn.owner = struct.text
        return fn

    def member_specialization(self, start: Token, specs: _Specifiers, struct: Token,
                              return_type: ast.TypeNode, struct_args: list[ast.Node] | None,
                              member_template: bool) -> ast.MemberFunction:
        """An explicit specialisation of a member, outside its struct (C++ [temp.expl.spec]):
        `template <> R S::f<A>(...)` or `template <> R S::f(...)` of a member function template
        of the struct `S`; `template <> R S<A>::f(...)`, the member function `f` of the
        instance `S<A>` of a class template (MLX's fft/readwrite.h); and
        `template <> template <> R S<A>::f<B>(...)`, a member function template's
        specialisation for an instance."""
        if struct_args is not None and struct.text not in self.struct_templates:
            raise self.error(f"explicit specialization of non-template struct '{struct.text}'",
                             struct, width=len(struct.text))
        if member_template and struct_args is None:
            raise self.error(f"'{struct.text}' is not a class template: its member's "
                             "specialisation takes one 'template <>'", struct,
                             width=len(struct.text))
        self.expect("::")
        name = self.operator_name() if self.at("operator") else self.identifier(
            "expected a member function name after '::'")
        member_args = self.template_arguments() if self.accept("<") else None
        if struct_args is not None and member_args is not None and not member_template:
            raise self.error("a member function template's specialisation for a class "
                             "template's instance takes 'template <> template <>'", start,
                             width=len(start.text))
        fn = self.member_function(start, specs, name, return_type)
        fn.owner, fn.owner_args = struct.text, struct_args
        # a function template's specialisation has empty template parameters (`FunctionDef`);
        # a member function of an instance specialised is an ordinary member function
        fn.template_params = [] if member_template or struct_args is None else None
        fn.specialization_args = member_args
        return fn

    def constructor(self, start: Token, explicit: bool) -> ast.Constructor:
        """constructor: ['explicit'] name '(' params ')' [':' member-init (',' member-init)*]
        compound"""
        name = self.advance()
        self.scopes.append({})
        try:
            params = self.parameters()
            # The address space of the objects it constructs (Metal's default: thread).
            space = self.advance().text if self.peek().text in _ADDRESS_SPACES else "thread"
            if self.peek().text in _QUALIFIERS:
                raise self.error(f"'{self.peek().text}' qualifier is not allowed on a "
                                 "constructor", width=len(self.peek().text))
            if self.at("="):
                raise self.error("defaulted and deleted constructors are not supported by "
                                 "metalsim", hint=f"define it: '{name.text}() {{}}'")
            inits: list[ast.MemberInit] = []
            if self.accept(":"):
                while True:
                    # A base class named with template arguments or a qualifier: `B<T>(x)`.
                    member = self.peek()
                    base = (self.type_specifier() if self.type_at() and self.peek(1).text in (
                        "<", "::") or self.at("::") else None)
                    if base is None:
                        self.identifier("expected a member name in the initializer list")
                    braces = self.at("{")
                    if braces:
                        args = self.nested(self.brace_items)
                    elif self.at("("):
                        args = self.call_arguments()
                    else:
                        raise self.error(f"expected '(' or '{{' after member '{member.text}'")
                    inits.append(ast.MemberInit(self.coord(member), base.name if base
                                                else member.text, args, braces, base))
                    if not self.accept(","):
                        break
            if self.at(";"):
                raise self.error("metalsim needs a constructor defined in the struct body",
                                 hint=f"write its body here: '{name.text}(...) {{ ... }}'")
            if not self.at("{"):
                raise self.error("expected function body after constructor declarator")
            body = self.compound()
        finally:
            self.scopes.pop()
        void = ast.NamedType(self.coord(name), "void")
        return ast.Constructor(self.coord(start), name.text, void, params, body, None, [],
                               space=space, inits=inits, explicit=explicit)

    def destructor(self, struct: str) -> None:
        """destructor: '~' name '(' ')' '{' '}' -- accepted only empty, where it does nothing
        (a Metal struct owns nothing to release)."""
        tilde = self.advance()
        name = self.identifier("expected the struct's name after '~'")
        if name.text != struct:
            raise self.error(f"expected the struct's name '{struct}' after '~'", name,
                             width=len(name.text))
        self.expect("(")
        self.expect(")", "a destructor takes no parameters")
        if not (self.at("{") and self.at("}", 1)):
            raise self.error("destructors with a body are not supported by metalsim", tilde,
                             hint=f"a struct in Metal holds nothing to release: drop "
                                  f"'~{struct}()'", width=1)
        self.advance()
        self.advance()

    # --- Statements ----------------------------------------------------------------------------

    def compound(self, allow_case: bool = False) -> ast.Compound:
        """compound-statement: '{' statement* '}' (case labels only directly in a switch body)"""
        open_ = self.expect("{")
        self.scopes.append({})
        self.block_depth += 1
        items: list = []
        try:
            while not self.accept("}"):
                if self.peek().kind == "eof":
                    raise self.error("expected '}' to match this '{'", open_,
                                     hint="this '{' is never closed")
                if allow_case and self.peek().text in ("case", "default"):
                    items.append(self.case_label())
                else:
                    items.append(self.statement())
        finally:
            self.scopes.pop()
            self.block_depth -= 1
        return ast.Compound(self.coord(open_), items)

    def statement(self) -> ast.Node:
        """statement: compound | selection | iteration | jump | declaration | expression ';'"""
        tok = self.peek()
        if tok.kind == "punct":
            if tok.text == "{":
                return self.compound()
            if tok.text == ";":
                return ast.Empty(self.coord(self.advance()))
            if tok.text == "[" and self.at("[", 1):
                self.attributes()  # `[[unroll]]` and the like change nothing we simulate
                return self.statement()
            if tok.text == "}":
                raise self.error("expected a statement before '}'")
        elif tok.kind == "ident":
            rule = self.STATEMENT_RULES.get(tok.text)
            if rule is not None:
                return rule(self)
            if tok.text not in _RESERVED and self.at(":", 1):
                raise self.error(f"label '{tok.text}' is not allowed in Metal", tok,
                                 width=len(tok.text),
                                 hint="the Metal Shading Language has no goto, so a label has "
                                      "no use: leave the code with a loop's break or continue, "
                                      "or a flag")
            if self.starts_declaration():
                return self.declaration_statement()
            if tok.text not in _RESERVED and self.peek(1).kind == "ident" \
                    and self.peek(1).text not in _RESERVED:
                raise self.unknown_type(tok)
        return self.expression_statement()

    def starts_declaration(self) -> bool:
        """Whether a statement beginning here is a declaration: it starts with a specifier or a
        type name that is not a functional cast (`float4(...)`, `float2{...}`)."""
        tok = self.peek()
        if tok.text in _DECL_WORDS:
            return True
        if not self.type_at():
            return False
        start = self.pos
        parsed = self.speculate(self.type_specifier)
        following = self.peek().text
        self.pos = start
        return parsed is None or following not in ("(", "{", "::")

    def declaration_statement(self, in_for: bool = False) -> ast.DeclStmt:
        """declaration: specifiers init-declarator-list ';'"""
        start = self.peek()
        specs = self.specifiers()
        name, type_ = self.declarator(specs.type)
        assert name is not None
        if in_for and self.at(":"):
            raise self.error("range-based for loops are not supported by metalsim",
                             hint="loop over an index: for (int i = 0; i < n; i++)")
        decls = self.init_declarators(specs, name, type_)
        self.expect(";", "expected ';' at end of declaration")
        return ast.DeclStmt(self.coord(start), decls)

    def expression_statement(self) -> ast.ExprStmt:
        """expression-statement: expression ';'"""
        expr = self.expression()
        self.expect(";", "expected ';' after expression")
        return ast.ExprStmt(expr.coord, expr)

    def if_statement(self) -> ast.If:
        """if: 'if' ['constexpr'] '(' expression ')' statement ['else' statement]"""
        start = self.advance()
        constexpr = self.accept("constexpr") is not None
        cond = self.condition("if")
        then = self.statement()
        otherwise = self.statement() if self.accept("else") else None
        return ast.If(self.coord(start), cond, then, otherwise, constexpr)

    def condition(self, keyword: str) -> ast.Expr:
        """'(' expression ')' after if, while and switch"""
        self.expect("(", f"expected '(' after '{keyword}'")
        cond = self.nested(self.expression)
        self.expect(")")
        return cond

    def for_statement(self) -> ast.For:
        """for: 'for' '(' (declaration | expression? ';') expression? ';' expression? ')' stmt"""
        start = self.advance()
        self.expect("(", "expected '(' after 'for'")
        self.scopes.append({})
        try:
            init: ast.DeclStmt | ast.ExprStmt | None = None
            if self.starts_declaration():
                init = self.nested(lambda: self.declaration_statement(in_for=True))
            elif not self.accept(";"):
                expr = self.nested(self.expression)
                self.expect(";", "expected ';' in 'for' statement specifier")
                init = ast.ExprStmt(expr.coord, expr)
            cond = None if self.at(";") else self.nested(self.expression)
            self.expect(";", "expected ';' in 'for' statement specifier")
            step = None if self.at(")") else self.nested(self.expression)
            self.expect(")")
            body = self.statement()
        finally:
            self.scopes.pop()
        return ast.For(self.coord(start), init, cond, step, body)

    def while_statement(self) -> ast.While:
        """while: 'while' '(' expression ')' statement"""
        start = self.advance()
        cond = self.condition("while")
        return ast.While(self.coord(start), cond, self.statement())

    def do_statement(self) -> ast.DoWhile:
        """do-while: 'do' statement 'while' '(' expression ')' ';'"""
        start = self.advance()
        body = self.statement()
        self.expect("while", "expected 'while' in do/while loop")
        cond = self.condition("while")
        self.expect(";", "expected ';' after do/while statement")
        return ast.DoWhile(self.coord(start), body, cond)

    def switch_statement(self) -> ast.Switch:
        """switch: 'switch' '(' expression ')' '{' (case-label | statement)* '}'"""
        start = self.advance()
        expr = self.condition("switch")
        if not self.at("{"):
            raise self.error("expected '{' after 'switch (...)'",
                             hint="metalsim needs the cases of a switch in a { } block")
        self.switch_depth += 1
        try:
            body = self.compound(allow_case=True)
        finally:
            self.switch_depth -= 1
        return ast.Switch(self.coord(start), expr, body)

    def case_label(self) -> ast.CaseLabel:
        """case-label: 'case' constant-expression ':' | 'default' ':'"""
        tok = self.advance()
        value = self.conditional() if tok.text == "case" else None
        self.expect(":", f"expected ':' after '{tok.text}'"
                    if tok.text == "default" else "expected ':' after 'case' value")
        return ast.CaseLabel(self.coord(tok), value)

    def misplaced_case(self) -> ast.Node:
        tok = self.peek()
        if self.switch_depth:
            raise self.error(f"'{tok.text}' label inside a nested block of a switch is not "
                             "supported by metalsim", tok, width=len(tok.text))
        raise self.error(f"'{tok.text}' statement not in switch statement", tok,
                         width=len(tok.text))

    def jump_statement(self) -> ast.Node:
        """jump: 'break' ';' | 'continue' ';'"""
        tok = self.advance()
        self.expect(";", f"expected ';' after {tok.text} statement")
        node = ast.Break if tok.text == "break" else ast.Continue
        return node(self.coord(tok))

    def return_statement(self) -> ast.Return:
        """return: 'return' [expression | init-list] ';'"""
        tok = self.advance()
        value = None
        if not self.at(";"):
            value = self.init_list() if self.at("{") else self.expression()
        self.expect(";", "expected ';' after return statement")
        return ast.Return(self.coord(tok), value)

    def struct_statement(self) -> ast.Node:
        """struct-definition ';' | declaration with an elaborated `struct Name` type"""
        if self.struct_definition_at():
            return self.struct_declaration()
        if self.peek(1).kind == "ident" and self.at(";", 2):
            return self.local_struct_declaration()
        return self.declaration_statement()

    def local_struct_declaration(self) -> ast.StructDeclaration:
        """`struct C;` in a block or a struct's body: declares `C` there, an incomplete type
        until its definition in the same scope."""
        key = self.advance()
        name = self.advance()
        self.advance()
        self.declare(name.text, _TYPE)
        return ast.StructDeclaration(self.coord(key), name.text, key=key.text)

    def namespace_statement(self) -> ast.Node:
        """A namespace alias in a block (`namespace st = mlx::steel;`); no other namespace
        declaration belongs there."""
        return self.namespace_alias() if self.namespace_alias_at() else self.misplaced()

    def misplaced(self) -> ast.Node:
        tok = self.peek()
        if tok.text == "else":
            raise self.error("'else' without a matching 'if'", tok, width=4)
        if tok.text == "template":
            raise self.error("a template cannot be declared inside a function", tok, width=8)
        if tok.text == "goto":
            raise self.error("'goto' is not allowed in Metal", tok, width=4,
                             hint="the Metal Shading Language has no goto: use a loop with "
                                  "break or continue, or a flag")
        if tok.text in _UNSUPPORTED_DECLARATIONS:
            raise self.error(f"'{tok.text}' declarations are not supported by metalsim", tok,
                             width=len(tok.text))
        raise self.error(f"'{tok.text}' is not supported by metalsim", tok, width=len(tok.text))

    STATEMENT_RULES: dict[str, Callable[[_Parser], ast.Node]] = {
        "if": if_statement, "for": for_statement, "while": while_statement, "do": do_statement,
        "switch": switch_statement, "case": misplaced_case, "default": misplaced_case,
        "break": jump_statement, "continue": jump_statement, "return": return_statement,
        "static_assert": static_assert, "typedef": alias_declaration,
        "using": alias_declaration,
        "else": misplaced, "template": misplaced, "goto": misplaced,
    } | dict.fromkeys(_UNSUPPORTED_DECLARATIONS, misplaced) | {
        "struct": struct_statement, "class": struct_statement, "namespace": namespace_statement,
        "enum": enum_declaration}

    # --- Expressions ---------------------------------------------------------------------------

    def expression(self) -> ast.Expr:
        """expression: assignment (',' assignment)*"""
        expr = self.assignment()
        while self.accept(","):
            expr = ast.Binary(expr.coord, ",", expr, self.assignment())
        return expr

    def assignment(self) -> ast.Expr:
        """assignment: conditional | logical-or assignment-op assignment (right-associative)"""
        left = self.binary(1)
        tok = self.peek()
        if tok.kind != "punct":
            return left
        if tok.text == "?":
            return self.conditional_rest(left, self.assignment)
        if tok.text in _ASSIGN_OPS and not (self.no_gt and tok.text == ">>="):
            self.advance()
            if tok.text == "=" and self.at("{"):   # `v = {a, b}`: a braced temporary
                return ast.Assign(left.coord, tok.text, left, self.init_list())
            return ast.Assign(left.coord, tok.text, left, self.assignment())
        return left

    def conditional(self) -> ast.Expr:
        """conditional: logical-or ['?' expression ':' conditional] (constant expressions)"""
        cond = self.binary(1)
        return self.conditional_rest(cond, self.conditional) if self.at("?") else cond

    def conditional_rest(self, cond: ast.Expr, otherwise: Callable[[], ast.Expr]) -> ast.Expr:
        """'?' expression ':' otherwise -- right-associative through `otherwise`"""
        self.advance()
        then = self.expression()
        self.expect(":", "expected ':' in conditional expression")
        return ast.Conditional(cond.coord, cond, then, otherwise())

    def binary(self, min_precedence: int) -> ast.Expr:
        """Binary operators from `||` (1) to `*` (10), left-associative, by precedence climbing."""
        left = self.unary()
        while True:
            tok = self.peek()
            precedence = _BINARY_PRECEDENCE.get(tok.text) if tok.kind == "punct" else None
            if precedence is None or precedence < min_precedence:
                return left
            if self.no_gt and tok.text in (">", ">>"):
                return left  # the end of a template argument list
            self.advance()
            right = self.binary(precedence + 1)
            left = ast.Binary(left.coord, tok.text, left, right)

    def unary(self) -> ast.Expr:
        """unary: ('++' | '--' | unary-op) unary | '(' type-name ')' unary | sizeof | postfix"""
        tok = self.peek()
        if tok.kind == "punct":
            if tok.text in _PREFIX_OPS:
                self.advance()
                return ast.Unary(self.coord(tok), tok.text, self.unary())
            if tok.text == "(" and self.type_name_at(1):
                cast_type = self.speculate(self.parenthesised_type)
                if cast_type is not None:
                    return ast.Cast(self.coord(tok), cast_type, self.unary(), "c")
        elif tok.text in ("sizeof", "alignof"):
            self.advance()
            align = tok.text == "alignof"
            if self.at("(") and self.type_name_at(1):
                operand = self.speculate(self.parenthesised_type)
                if operand is not None:
                    return ast.SizeOf(self.coord(tok), operand, align)
            return ast.SizeOf(self.coord(tok), self.unary(), align)
        return self.postfix()

    def parenthesised_type(self) -> ast.TypeNode:
        """'(' type-name ')', the head of a C-style cast or of sizeof(type)"""
        self.expect("(")
        type_ = self.nested(self.type_name)
        self.expect(")")
        return type_

    def postfix(self) -> ast.Expr:
        """postfix: primary ('[' expression ']' | '(' args ')' | '.' name | '->' name | '++'
        | '--')*"""
        expr = self.primary()
        while True:
            tok = self.peek()
            if tok.kind != "punct":
                return expr
            text = tok.text
            if text == "[":
                self.advance()
                index = self.nested(self.expression)
                self.expect("]")
                expr = ast.Index(expr.coord, expr, index)
            elif text == "(":
                if isinstance(expr, ast.Name):
                    expr = ast.Call(expr.coord, expr, self.call_arguments())
                elif isinstance(expr, ast.Member):
                    expr = ast.MethodCall(expr.coord, expr.base, expr.name,
                                          self.call_arguments(), expr.arrow,
                                          qualifier=expr.qualifier)
                else:  # a function object: `Op()(a, b)`, `ops[i](a, b)`
                    expr = ast.MethodCall(expr.coord, expr, "operator()",
                                          self.call_arguments())
            elif text in (".", "->") and self.at("operator", 1):
                expr = self.explicit_operator_call(expr, self.advance().text == "->")
            elif text in (".", "->"):
                self.advance()
                template = self.accept("template")  # `x.template f<T>(...)`
                name = self.peek()
                if name.kind != "ident":
                    raise self.error(f"expected a member name after '{text}'")
                self.advance()
                qualifier: str | ast.NamedType = ""
                if self.at("::") and self.peek(1).kind == "ident" and not self.at("::", 2):
                    qualifier = name.text   # `d.B::f()`
                    self.advance()
                    name = self.advance()
                elif self.at("<") or self.at("::"):   # `d.B<int>::v`, `d.na::B::v`
                    self.pos -= 1
                    qualified = self.speculate(self.member_qualifier)
                    if qualified is None:
                        self.advance()
                    else:
                        qualifier, name = qualified
                expr = ast.Member(expr.coord, expr, name.text, text == "->", qualifier)
                if self.at("<") and (template or name.text in self.member_templates):
                    # Explicit arguments of a member function template; without `template`,
                    # only where they parse as such and a call follows (else `x.n < 3`).
                    start = self.pos
                    self.advance()
                    args = self.speculate(self.template_arguments)
                    if args is not None and self.at("("):
                        expr = ast.MethodCall(expr.coord, expr.base, name.text,
                                              self.call_arguments(), text == "->", args)
                    elif template:
                        raise self.error("expected '(' after a member template's arguments")
                    else:
                        self.pos = start
            elif text in ("++", "--"):
                self.advance()
                expr = ast.Postfix(expr.coord, text, expr)
            else:
                return expr

    def call_arguments(self) -> list[ast.Expr]:
        """arguments: '(' [assignment (',' assignment)*] ')'"""
        return self.nested(self.argument_list)

    def argument_list(self) -> list[ast.Expr]:
        open_ = self.expect("(")
        args: list[ast.Expr] = []
        if not self.at(")"):
            while True:
                args.append(self.init_list() if self.at("{") else self.assignment())
                if self.at("..."):
                    args[-1] = ast.PackExpansion(self.coord(self.advance()), args[-1])
                if not self.accept(","):
                    break
        if not self.at(")"):
            if self.peek().kind == "eof":
                raise self.error("expected ')' to match this '('", open_)
            raise self.error("expected ')'")
        self.advance()
        return args

    def primary(self) -> ast.Expr:
        """primary: literal | name | '(' expression ')' | cast<T>(e) | type '(' args ')'
        | type '{' items '}'"""
        tok = self.peek()
        kind = tok.kind
        if kind == "int":
            self.advance()
            body = tok.text[: len(tok.text) - len(tok.suffix)]
            # Unsuffixed hex, octal and binary literals may take unsigned types (C++ [lex.icon]).
            return ast.IntLiteral(self.coord(tok), tok.value, tok.suffix, tok.text,
                                  len(body) > 1 and body[0] == "0")
        if kind == "float":
            self.advance()
            return ast.FloatLiteral(self.coord(tok), tok.value, tok.suffix, tok.text)
        if kind == "char":
            self.advance()
            return ast.IntLiteral(self.coord(tok), tok.value, "", tok.text)
        if kind == "string":
            return self.string_literal()
        if kind == "ident":
            text = tok.text
            if text in ("true", "false"):
                self.advance()
                return ast.BoolLiteral(self.coord(tok), text == "true")
            if text == "nullptr":
                return ast.NullptrLiteral(self.coord(self.advance()))
            if text in _CASTS:
                return self.named_cast()
            if text == "this":
                return ast.This(self.coord(self.advance()))
            if text == "operator" and self.peek(1).kind == "punct":
                # `operator>=(b, a)`: an operator function called by its name
                return ast.Name(self.coord(tok), self.operator_name().text)
            if text in _TEXTURE_TYPES:
                raise self.unknown_type(tok)
            if text == "__is_empty":  # clang's type-trait intrinsic: takes a type
                self.advance()
                self.expect("(", "expected '(' after '__is_empty'")
                operand = self.type_name()
                self.expect(")")
                return ast.Call(self.coord(tok), ast.Name(self.coord(tok), text), [operand])
            if text == "typename":   # `typename X::type(1)`: a functional cast of a member type
                self.advance()
                return self.construct_of(tok, self.type_specifier(typename=True))
            if text == "decltype":   # `decltype(x)::k`, or a functional cast `decltype(x)(1)`
                owner = self.type_specifier()
                if self.at("::") and self.peek(1).kind == "ident":
                    self.advance()
                    member = self.advance()
                    return ast.Name(self.coord(tok), member.text, owner=owner)
                return self.construct_of(tok, owner)  # type: ignore[arg-type]
            if self.type_at() and self.names_type_member():
                return self.qualified_name()   # `S::k`, `Tile<T, 4>::kRows`
            if self.type_at():
                return self.construct()
            if text not in _RESERVED:
                return self.qualified_name()
        elif self.at("::"):
            return self.qualified_name()
        elif self.at("("):
            self.advance()
            expr = self.nested(self.expression)
            if not self.at(")"):
                if self.peek().kind == "eof":
                    raise self.error("expected ')' to match this '('", tok)
                raise self.error("expected ')'")
            self.advance()
            return expr
        elif self.at("[") and not self.at("[", 1):
            return self.lambda_expression()
        raise self.error("expected expression", width=max(1, len(tok.text)))

    def lambda_expression(self) -> ast.Lambda:
        """lambda-expression: '[' [capture-default] [',' capture]* ']' ['(' params ')']
        ['mutable'] ['->' type-name] compound, a capture being ['&'] name or 'this'."""
        open_ = self.expect("[")
        default, captures = None, []
        while not self.accept("]"):
            if captures or default:
                self.expect(",", "expected ',' or ']' in the lambda's capture list")
            default_at = self.at("&") or self.at("=")
            if not captures and default is None and default_at and (
                    self.at(",", 1) or self.at("]", 1)):
                default = self.advance().text
                continue
            by_reference = bool(self.accept("&"))
            if self.at("=") or self.at("*"):
                raise self.error("metalsim does not support this capture (C++17's '*this', "
                                 "init-captures)", width=1)
            name = self.advance() if self.at("this") else self.identifier(
                "expected a variable name or 'this' in the lambda's capture list")
            if self.at("=") or self.at("..."):
                raise self.error("init-captures and capture packs are not supported by "
                                 "metalsim", width=1)
            captures.append((name.text, by_reference or name.text == "this"))
        self.scopes.append({})
        try:
            params = self.parameters() if self.at("(") else []
            mutable = bool(self.accept("mutable"))
            auto = ast.NamedType(self.coord(open_), "auto")
            return_type = self.trailing_return_type(auto)
            if not self.at("{"):
                raise self.error("expected the lambda's body '{ ... }'")
            body = self.compound()
        finally:
            self.scopes.pop()
        invented = _invent_auto_parameters(params)
        return ast.Lambda(self.coord(open_), default, captures, params, return_type, body,
                          invented or None, mutable)

    def string_literal(self) -> ast.StringLiteral:
        """string-literal+ (adjacent literals concatenate)"""
        first = self.peek()
        parts = []
        while self.peek().kind == "string":
            parts.append(self.advance().value)
        return ast.StringLiteral(self.coord(first), "".join(parts))

    def later_member_template_arguments(self, member_template: bool) -> list[ast.Node] | None:
        """`load_unsafe<AccT>(...)` in a member function, calling a member function template
        the struct declares further down (its body sees the whole class): a name followed by
        `<`, a type, and a template argument list closed before a call's `(` is a template's
        (`i < float(n)` is not: a type does not begin a comparison's operand list). The name
        of a `member_template` declared before takes any arguments (MLX's NAX tiles call
        `frag_at<idx_row.value, idx_col.value>()`)."""
        start = self.pos
        self.advance()
        args = self.speculate(self.template_arguments)
        if args is not None and self.at("(") and (member_template or isinstance(
                args[0], ast.TypeNode)):
            return args
        self.pos = start
        return None

    def explicit_operator_call(self, obj: ast.Expr, arrow: bool) -> ast.Expr:
        """`x.operator+(y)`, or `this->operator float16_t()` (MLX's fp4.h): a conversion
        function called by name is the conversion, `static_cast<float16_t>(*this)`."""
        if self.peek(1).kind == "punct":
            name = self.operator_name()
            return ast.MethodCall(obj.coord, obj, name.text, self.call_arguments(), arrow)
        start = self.advance()
        target = self.type_name()
        self.expect("(", "expected '(' after the conversion function's name")
        self.expect(")", "a conversion function takes no arguments")
        base = ast.Unary(obj.coord, "*", obj) if arrow else obj
        return ast.Cast(self.coord(start), target, base, "static_cast")

    def named_cast(self) -> ast.Cast:
        """named-cast: ('static_cast' | 'reinterpret_cast' | 'as_type') '<' type '>' '(' e ')'"""
        tok = self.advance()
        self.expect("<", f"expected '<' after '{tok.text}'")
        saved, self.no_gt = self.no_gt, True
        try:
            type_ = self.type_name()
        finally:
            self.no_gt = saved
        self.close_angle()
        self.expect("(", f"expected '(' after '{tok.text}<...>'")
        expr = self.nested(self.expression)
        self.expect(")")
        return ast.Cast(self.coord(tok), type_, expr, tok.text)

    def construct(self) -> ast.Construct:
        """functional-cast: type-specifier ('(' args ')' | '{' items '}')"""
        start = self.peek()
        return self.construct_of(start, self.type_specifier())

    def construct_of(self, start: Token, type_: ast.NamedType) -> ast.Construct:
        """The arguments of a functional cast of the type `type_` just parsed."""
        braces = self.at("{")
        if self.at("("):
            args = self.call_arguments()
        elif braces:
            args = self.nested(self.brace_items)
        else:
            raise self.error("expected '(' for function-style cast or type construction",
                             hint=f"'{type_.name}' is a type, not a value")
        return ast.Construct(type_.coord, type_, args, braces)

    def member_qualifier(self) -> tuple[ast.NamedType, Token]:
        """The class and member named after `.` or `->` in `d.B<int>::v` or `d.na::B::v`."""
        start = self.peek()
        skip, namespace = self.namespace_prefix()
        for _ in range(skip):
            self.advance()
        tok = self.identifier("expected a class name")
        name, _ = self.resolve(tok, namespace)
        args = None
        if self.at("<") and self.is_template(name, namespace is not None):
            self.advance()
            args = self.template_arguments()
        self.expect("::")
        member = self.identifier("expected a member name")
        return ast.NamedType(self.coord(start), name, args,
                             namespace_scope=namespace is not None), member

    def qualified_name(self) -> ast.Name:
        """qualified-name: ['::'] name ['<' args '>'] ('::' name ['<' args '>'])*"""
        start = self.peek()
        rooted = self.accept("::") is not None
        skip, namespace = self.namespace_prefix(0, rooted)
        for _ in range(skip):
            self.advance()
        parts: list[tuple[str, list[ast.Node] | None]] = []
        overloads: tuple[str, ...] = ()
        while True:
            # `F::template row_reduce<Op>(...)`: the keyword says a template's name follows
            template = bool(parts) and self.accept("template") is not None
            tok = self.peek()
            if tok.kind != "ident":
                raise self.error("expected identifier after '::'")
            self.advance()
            text = tok.text
            if not parts:
                text, overloads = self.resolve(tok, namespace)
                found_elsewhere = text != tok.text   # a namespace member, named unqualified
            args = None
            # A member of a class template instance (`Limits<T>::min`) is not itself a
            # template here unless the `template` keyword says so.
            member = any(part_args is not None for _, part_args in parts)
            if self.at("<") and (template or not member and (self.is_template(
                    text, not parts and namespace is not None) or (
                    parts and tok.text in self.member_templates))):
                self.advance()
                args = self.template_arguments()
            elif self.at("<") and not parts and (self.type_at(1)
                                                 or tok.text in self.member_templates):
                args = self.later_member_template_arguments(tok.text in self.member_templates)
            parts.append((text, args))
            if not (self.at("::") and self.peek(1).kind == "ident"):
                break
            self.advance()
        name, args = parts[-1]
        if parts[0][0] == "std" and len(parts) > 1:
            raise self.error("use of undeclared identifier 'std'", start, width=3,
                             hint=f"Metal has no C++ standard library: use 'metal::{name}'")
        qualified = [(part, part_args) for part, part_args in parts[:-1] if part != "metal"]
        qualifier = [part for part, _ in qualified]
        scoped = [part_args for _, part_args in qualified if part_args is not None]
        after_args = 0
        if scoped:
            if args is not None or len(scoped) > 1:
                raise self.error("nested template qualifiers are not supported by metalsim",
                                 start)
            args = scoped[0]
            after_args = len(qualified) - 1 - next(
                i for i, (_, part_args) in enumerate(qualified) if part_args is not None)
        return ast.Name(self.coord(start), name, "::".join(qualifier), args, None, bool(scoped),
                        namespace_scope=namespace not in (None, METAL) or found_elsewhere,
                        overloads=overloads, written_unqualified=namespace is None
                        and len(parts) == 1, parts_after_args=after_args)

    def template_arguments(self) -> list[ast.Node]:
        """template-argument-list (after '<'): [(type-name | conditional) (',' ...)*] '>'"""
        saved, self.no_gt = self.no_gt, True
        try:
            args: list[ast.Node] = []
            while not self.peek().text.startswith(">"):
                start = self.pos
                arg = self.speculate(self.type_name) if self.type_name_at() else None
                if arg is None or self.at("::"):  # not a type, or `S<T>::value`: a value
                    self.pos = start
                    arg = self.conditional()
                args.append(arg)
                if self.at("..."):
                    args[-1] = ast.PackExpansion(self.coord(self.advance()), args[-1])
                if not self.accept(","):
                    break
            self.close_angle()
            return args
        finally:
            self.no_gt = saved

    def close_angle(self) -> None:
        """Consumes the '>' closing a template list, splitting `>>` (`vec<vec<int, 2>>`)."""
        tok = self.peek()
        if tok.kind != "punct" or not tok.text.startswith(">"):
            raise self.error("expected '>' to close the template argument list")
        if tok.text != ">":
            rest = replace(tok, text=tok.text[1:], offset=tok.offset + 1, space_before=False)
            self.tokens[self.pos : self.pos + 1] = [replace(tok, text=">"), rest]
        self.advance()


def _unbalanced_brackets(tokens: list[Token], source_map: SourceMap) -> CompileError | None:
    """The first bracket left unmatched within one of the user's sections, if any.

    An unclosed `{` in a kernel body is only noticed in code MLX generated after it; pointing
    there would not help, so such errors are traced back to the user's own brackets.
    """
    for _, start, end in source_map.sections:
        stack: list[Token] = []
        for tok in tokens:
            if tok.kind != "punct" or not start <= tok.offset < end:
                continue
            if tok.text in _CLOSERS:
                stack.append(tok)
            elif tok.text in (")", "]", "}"):
                if not stack or _CLOSERS[stack[-1].text] != tok.text:
                    what = "brace ('}')" if tok.text == "}" else f"'{tok.text}'"
                    return CompileError(f"extraneous closing {what}",
                                        source_map.coord(tok.offset), source_map,
                                        hint="it matches no opening bracket")
                stack.pop()
        if stack:
            tok = stack[-1]
            return CompileError(f"expected '{_CLOSERS[tok.text]}' to match this '{tok.text}'",
                                source_map.coord(tok.offset), source_map,
                                hint=f"this '{tok.text}' is never closed")
    return None


def _invent_auto_parameters(params: list[ast.Param]) -> list[ast.TemplateParam]:
    """A generic lambda's parameter declared `auto` (`auto x`, `thread auto& t`, `const auto
    x`) has a template parameter of its own (C++ [expr.prim.lambda.closure]/3): name each
    `auto` so, and return those template parameters."""
    invented = []
    for p in params:
        t = p.type
        while isinstance(t, ast.ReferenceType | ast.PointerType):
            t = t.referee if isinstance(t, ast.ReferenceType) else t.pointee
        if isinstance(t, ast.NamedType) and t.name == "auto" and not t.template_args:
            t.name = f"auto:{len(invented) + 1}"   # as clang names them
            invented.append(ast.TemplateParam(t.coord, t.name))
    return invented


@dataclass(frozen=True)
class Prefix:
    """A parsed first part of translation units, to go on from (see `parse`): how many tokens
    it has, what it declares, and the parser's record of names at its end."""

    length: int
    unit: ast.TranslationUnit
    names: dict


# Parser attributes that belong to one pass over the tokens; all others record names.
_PER_PASS = frozenset({"tokens", "pos", "sm", "failed"})


def parse_prefix(tokens: list[Token], source_map: SourceMap) -> Prefix:
    """Parses `tokens` (without "eof"), whole declarations that begin translation units."""
    parser = _Parser(tokens, source_map)
    unit = parser.translation_unit()
    names = {k: v for k, v in vars(parser).items() if k not in _PER_PASS}
    return Prefix(len(tokens), unit, copy.deepcopy(names))


def parse(tokens: list[Token], source_map: SourceMap,
          after: Prefix | None = None) -> ast.TranslationUnit:
    """Parses preprocessed `tokens` (ending with "eof") into a TranslationUnit.

    `after`, a `parse_prefix` of the first tokens, stands for parsing them again: the unit
    shares the prefix's declarations (which nothing modifies), and the names it declares are
    this unit's own copy. Raises CompileError, and nothing else, for any input that is not
    valid Metal.
    """
    parser = _Parser(tokens, source_map)
    if after is not None:
        vars(parser).update(copy.deepcopy(after.names))
        parser.pos = after.length
    try:
        unit = parser.translation_unit()
        if after is None:
            return unit
        return replace(after.unit, items=[*after.unit.items, *unit.items],
                       namespaces=unit.namespaces)
    except RecursionError:
        raise parser.error("expression too deeply nested",
                           hint="split the expression into several statements") from None
    except CompileError as error:
        # Stopped in code MLX generated: the user's code may have left a bracket open.
        if parser.coord(parser.peek()).section == "generated":
            raise _unbalanced_brackets(tokens, source_map) or error from None
        raise


def parse_source(text: str, sections: list[tuple[str, int, int]] = ()
                 ) -> tuple[ast.TranslationUnit, SourceMap]:
    """Preprocesses and parses `text`; `sections` are as for SourceMap."""
    source_map = SourceMap(text, sections)
    return parse(preprocess(text, source_map), source_map), source_map


# A kernel function's head, or a kernel parameter's attribute: what MLX generates itself.
_KERNEL_HEAD = re.compile(r"(\[\[\s*kernel\s*\]\]|\bkernel\b|\b__global__\b)[^;{}]*?\bvoid\s+"
                          r"(\w+)\s*\(|\[\[\s*(buffer\s*\(|thread_position_in_grid\s*\]\])")
PASTED_KERNEL_HINT = (
    "MLX writes the kernel function itself: from name=, input_names= and output_names= it "
    "generates `[[kernel]] void custom_kernel_<name>(const device float* a [[buffer(0)]], "
    "device float* out [[buffer(1)]], uint3 thread_position_in_grid "
    "[[thread_position_in_grid]], ...)`, with a parameter for each thread attribute your body "
    "mentions, and puts `source` between its braces. Pass as source only the statements inside "
    "your function's braces: the buffers are there under the names of input_names and "
    "output_names, and the thread's position under its Metal name "
    "(thread_position_in_grid.x). Helper functions go in header=. VERBOSE=1, or "
    "metalsim.source(kernel, ...), prints the code MLX generates.")


def _pasted_kernel(sm: SourceMap) -> CompileError | None:
    """A CompileError at a kernel function written in the user's `source`, which MLX pastes
    into the body of the kernel it generates (a parse error follows there, but not one that
    says why)."""
    section = next(((start, end) for name, start, end in sm.sections if name == "source"), None)
    if section is None:
        return None
    match = _KERNEL_HEAD.search(sm.text, *section)
    if match is None:
        return None
    name = f"'{match.group(2)}' is" if match.group(2) else "this is"
    cuda = " (`__global__` is CUDA's `kernel`)" if match.group(1) == "__global__" else ""
    return CompileError(f"{name} a whole kernel function{cuda}, but `source` is only the body "
                        "of one", sm.coord(match.start()), sm, hint=PASTED_KERNEL_HINT,
                        width=len(match.group(1) or match.group(0)))
