"""Translate the kernel MLX would compile (its generated Metal source) into CUDA C++.

The generated text goes through metalsim's own front end (preprocessor and parser, after the
simulator's prelude, whose names the parser must know), the same the simulator runs, and the AST
is printed back as CUDA C++ inside `namespace metal`, after the prelude (`metalsim.cuda.prelude`)
that gives Metal's types and library their meaning on CUDA. C++ itself does the typing: the
prelude's overloads reproduce Metal's rules, so the printer only rewrites what differs in syntax:

- the C++ of MLX's kernel headers prints as written (struct templates with their member types,
  statics, bases and specialisations, member and variable templates, packs, lambdas, enums,
  unions, function pointers, explicit specialisations, `if constexpr`, static_asserts); names
  declared in a program's namespaces are already resolved by the parser to program names
  (`mlx::steel::BlockMMA`), printed as one identifier (`mlx_ns_steel_ns_BlockMMA`), so
  using-directives go; MLX's overloads in Metal's `fast`/`precise` print in those namespaces;
- a `[[kernel]]` template of a header that nothing instantiates is left out, as is an unset
  function constant that nothing reads; MLX's `utils.h` pieces that MLX prepends to a custom
  kernel (`prelude.MLX_UTILS`) come first where the kernel uses them and declares none itself;

- address spaces disappear (CUDA pointers are generic); a `threadgroup` variable becomes a
  `__shared__` one;
- unsuffixed floating literals get an `f` (Metal has no double), `h`/`bf` ones a conversion;
- swizzles of two or more components become `swizzle<...>(v)` (or `swizzle_ref` where assigned);
- the `[[kernel]]` function becomes a `__device__` function, called by an `extern "C"
  __global__` entry (`ENTRY`) that computes the thread attributes with MLX's dispatch, lets the
  threads of a partial edge threadgroup beyond its real size return, and binds the buffers.

`translate_function` translates a whole Metal source instead (what `metalsim.dispatch` runs):
the kernel function it names (or the `[[host_name("...")]]` of an instantiation) is the one
the entry calls, the other `[[kernel]]` functions are left out, and the function constants a
pipeline sets become compile-time constants (a kernel that reads one it leaves unset is
refused).

What cannot be translated raises `metalsim.CompileError` naming the construct, at its line.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

import ml_dtypes
import numpy as np

from metalsim.cuda.prelude import MLX_UTILS, PRELUDE
from metalsim.diagnostics import CompileError, SourceMap
from metalsim.exec.launch import parsed_prelude
from metalsim.exec.prelude import METAL_SECTION, PRELUDE_SECTIONS
from metalsim.exec.prelude import PRELUDE as SIM_PRELUDE
from metalsim.lang import ast
from metalsim.lang.parser import parse
from metalsim.lang.preprocess import preprocess
from metalsim.signature import ATTRIBUTES, GeneratedKernel

ENTRY = "metalsim_entry"
_SWIZZLE = re.compile(r"^(?:[xyzw]{2,4}|[rgba]{2,4})$")
_COMPONENT = {c: i for i, c in enumerate("xyzw")} | {c: i for i, c in enumerate("rgba")}
# Metal type names that are not a single C++ identifier in CUDA, or mean something else there.
_TYPE_NAMES = {"char": "signed char", "long": "long", "unsigned": "unsigned int",
               "signed": "int", "double": "float"}
_METAL_NAMESPACES = frozenset({"fast", "precise", "metal::fast", "metal::precise"})
_MULTIWORD_TYPES = frozenset(n for n in _TYPE_NAMES.values() if " " in n)
_ASSIGNING_UNARY = {"++", "--", "&"}
_THREAD_ATTRIBUTES = frozenset(name for name, _ in ATTRIBUTES)
_CONSTEXPR_SCALARS = {"bool", "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong",
                      "float", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t",
                      "int64_t", "uint64_t", "size_t", "unsigned", "signed"}


@dataclass(frozen=True)
class Translation:
    """A translated kernel: the CUDA source and the entry's buffer parameters in order.

    `buffers` names each buffer argument the entry takes (the generated kernel's parameters
    other than attributes, in declaration order); the entry then takes the grid and the
    threadgroup size as six `unsigned int`s.
    """

    source: str
    buffers: tuple[str, ...]

    @property
    def kernel_text(self) -> str:
        """The translated kernel without the prelude (what golden tests pin)."""
        return self.source[len(PRELUDE):]


_FORMATS = {"float": (np.float32, np.uint32), "half": (np.float16, np.uint16),
            "bfloat": (ml_dtypes.bfloat16, np.uint16)}


def rounded_bits(text: str, kind: str) -> int:
    """The bits of the decimal (or hex) literal `text` rounded to nearest even in `kind`."""
    digits = text.rstrip("fFhH")
    if digits.lower().endswith("b"):  # the "bf" suffix
        digits = digits[:-1]
    exact = Fraction(float.fromhex(digits)) if digits.lower().startswith("0x") else Fraction(digits)
    dtype, word = _FORMATS[kind]
    with np.errstate(over="ignore"):
        guess = int(np.array(float(exact)).astype(dtype).view(word))
    # Infinity stands for 2**(emax + 1) (one ulp above the largest finite value), so a literal
    # past the largest finite value plus half an ulp rounds to it, as IEEE's rounding does.
    overflow = Fraction(2) ** int(ml_dtypes.finfo(dtype).maxexp)
    best = None
    for bits in (guess - 1, guess, guess + 1):
        if not 0 <= bits <= np.iinfo(word).max:
            continue
        with np.errstate(invalid="ignore"):
            value = float(np.array(bits, word).view(dtype).astype(np.float64))
        if math.isnan(value):
            continue
        magnitude = overflow if math.isinf(value) else Fraction(value)
        key = (abs(magnitude - exact), bits & 1)
        if best is None or key < best[0]:
            best = (key, bits)
    return best[1] if best is not None else guess


class _Untranslatable(Exception):
    def __init__(self, message: str, node: ast.Node | None) -> None:
        super().__init__(message)
        self.message = message
        self.node = node


def translate(gen: GeneratedKernel, math_mode: str = "safe",
              include_dirs: tuple[str, ...] = ()) -> Translation:
    """The CUDA C++ translation of MLX's generated source `gen` (see the module docstring);
    `#include "..."` reads from `include_dirs` (MLX's kernel headers, for one)."""
    return _translate_text(gen.text, gen.sections, math_mode, include_dirs, _Printer())


def translate_function(source: str, function: str,
                       function_constants: Mapping[int | str, bool | int | float] | None = None,
                       math_mode: str = "safe", include_dirs: tuple[str, ...] = ()
                       ) -> Translation:
    """The CUDA C++ translation of the kernel function `function` of a whole Metal source (its
    name, or the `[[host_name("...")]]` of an instantiation of a kernel template), with the
    function constants a pipeline sets (by `[[function_constant(i)]]` index or by name), as
    `metalsim.dispatch` runs it. The entry takes every argument that is not a thread
    attribute, in declaration order (`Translation.buffers`)."""
    printer = _Printer(function, dict(function_constants or {}))
    return _translate_text(source, [("source", 0, len(source))], math_mode, include_dirs,
                           printer)


def _translate_text(text: str, sections: list[tuple[str, int, int]], math_mode: str,
                    include_dirs: tuple[str, ...], printer: _Printer) -> Translation:
    # The simulator's prelude goes first, for the parser to know the names it declares (MLX's
    # typedefs, Metal's `integral_constant`, ...); the CUDA prelude declares its own.
    shift = len(SIM_PRELUDE)
    source_map = SourceMap(SIM_PRELUDE + text, PRELUDE_SECTIONS + [
        (name, start + shift, end + shift) for name, start, end in sections])
    preprocessed, parsed = parsed_prelude(math_mode == "fast")
    unit = parse(preprocess(SIM_PRELUDE + text, source_map, after=preprocessed,
                            include_dirs=include_dirs), source_map, after=parsed)
    prelude_sections = {name for name, _, _ in PRELUDE_SECTIONS}
    metal_library = [item for item in unit.items if item.coord.section == METAL_SECTION]
    unit.items = [item for item in unit.items if item.coord.section not in prelude_sections]
    _rename_own_library_types(unit, metal_library)
    try:
        printer.without_adl = _spell_program_names(unit)
        return printer.unit(unit)
    except _Untranslatable as error:
        coord = error.node.coord if error.node is not None else None
        raise CompileError(f"the CUDA back end cannot translate {error.message}", coord,
                           source_map, hint="run this kernel in the simulator instead") from None


def cuda_source(gen: GeneratedKernel, math_mode: str = "safe",
                include_dirs: tuple[str, ...] = ()) -> str:
    """Just the translated text, prelude included (for reading, or for nvcc)."""
    return translate(gen, math_mode, include_dirs).source


def _walk(node: object):
    """Every AST node under `node` (itself included)."""
    if isinstance(node, ast.Node):
        yield node
        for value in vars(node).values():
            yield from _walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item)


_NAMED = (ast.Name, ast.NamedType, ast.FunctionDef, ast.VarDecl, ast.StructDef, ast.TypeAlias,
          ast.EnumDef, ast.VariableTemplate, ast.StructDeclaration)


_TYPE_DECLARATIONS = (ast.StructDef, ast.TypeAlias, ast.StructDeclaration)


def _rename_own_library_types(unit: ast.TranslationUnit, prelude: list[ast.Node]) -> None:
    """A program's own global `integral_constant` (or `array`, `enable_if`, ...: what the
    simulator's prelude declares for Metal's library) replaces Metal's in the whole program,
    as the simulator has it; on CUDA, where the prelude declares Metal's in the same
    namespace, the program's is renamed (`program_integral_constant`) with every use."""
    library = {item.name for item in prelude if isinstance(item, _TYPE_DECLARATIONS)}
    own = {item.name for item in unit.items
           if isinstance(item, _TYPE_DECLARATIONS) and item.name in library}
    for node in _walk(unit):
        if isinstance(node, (ast.Name, ast.NamedType, *_TYPE_DECLARATIONS)) and node.name in own:
            node.name = f"program_{node.name}"


def _spell_program_names(unit: ast.TranslationUnit) -> set[int]:
    """Respells the parser's program names of a program's namespace members (`na::K`, see
    `metalsim.lang.namespaces`) as plain identifiers (`na_ns_K`) everywhere in `unit`, for
    the printer, which declares everything in one CUDA namespace. A hidden friend keeps its
    own name (it is printed in its struct, where argument-dependent lookup finds it), and so
    do the functions of its name in its namespace (its redeclarations among them) and the
    names that call them: one function, one name. Returns the ids of those names written
    qualified (`na::g`), whose calls must not find the hidden friend by argument-dependent
    lookup where C++ does not (the printer writes `(g)(c)`)."""
    declared = [n.name for n in _walk(unit) if isinstance(n, _NAMED[2:]) and "::" in n.name]
    namespaces = {name.rsplit("::", depth)[0] for name in declared
                  for depth in range(1, name.count("::") + 1)} - {"metal", "metal::fast",
                                                                  "metal::precise"}
    friends = _friend_names(unit)
    qualified = {id(n) for n in _walk(unit) if isinstance(n, ast.Name) and n.name in friends
                 and not n.written_unqualified}

    def spelled(text: str) -> str:
        if text in friends:
            return friends[text]
        parts = text.split("::")
        for length in range(len(parts) - 1, 0, -1):
            if "::".join(parts[:length]) in namespaces:
                return "_ns_".join(parts[:length + 1]) + "".join(
                    f"::{p}" for p in parts[length + 1:])
        return text

    for node in _walk(unit):
        if isinstance(node, _NAMED):
            for field in ("name", "qualifier", "owner", "friend_of"):
                value = getattr(node, field, None)
                if isinstance(value, str) and "::" in value:
                    setattr(node, field, spelled(value))
    return qualified


def _friend_names(unit: ast.TranslationUnit) -> dict[str, str]:
    """The printed names of the hidden friends declared in a namespace, by program name: the
    friend's own name, which the functions of that name in its namespace take too. Where
    another function at namespace scope would print alike (a global `g` beside `na::g`), the
    two overload sets would merge in CUDA, and the translation is refused."""
    friends = {item.name: item.name.rpartition("::")[2] for item in unit.items
               if isinstance(item, ast.FunctionDef) and item.friend_of is not None
               and "::" in item.name}
    redeclared = {item.name for item in unit.items if isinstance(item, ast.FunctionDef)
                  and item.friend_of is None and item.name in friends}
    visible: dict[str, str] = {}   # printed name -> the program name it is at namespace scope
    for item in unit.items:
        if isinstance(item, ast.FunctionDef) and item.friend_of is None:
            printed = friends[item.name] if item.name in redeclared else item.name
            other = visible.setdefault(printed, item.name)
            if other != item.name:
                friend = item.name if item.name in redeclared else other
                raise _Untranslatable(
                    f"the hidden friend '{friend}', whose namespace declares functions of its "
                    f"name, beside another function named '{printed}' (CUDA would see one "
                    "overload set)", item)
    return friends


def _hidden_friends(unit: ast.TranslationUnit) -> dict[str, list[ast.FunctionDef]]:
    """The friend functions defined in structs, by their struct's printed name, each as it is
    defined inside the struct: under its own name (a call finds it only by argument-dependent
    lookup, unqualified) and without the struct template's parameters it was given. Printed
    there, it is a hidden friend in CUDA too: printed beside the struct, ordinary lookup would
    find it where C++ does not (`f(1L)` calling a friend `f(long)` over a global `f(int)`)."""
    friends: dict[str, list[ast.FunctionDef]] = {}
    for item in unit.items:
        if isinstance(item, ast.FunctionDef) and item.friend_of is not None:
            friends.setdefault(item.friend_of, []).append(dataclasses.replace(
                item, template_params=None))
    return friends


_MATRIX_FUNCTIONS = {"simdgroup_load", "simdgroup_store", "simdgroup_multiply",
                     "simdgroup_multiply_accumulate"}


def _uses_simdgroup_matrices(node: ast.Node) -> bool:
    """Whether `node` loads, stores, multiplies or reads the elements of a simdgroup_matrix.
    Loops around these get `#pragma unroll` (full unrolling where the trip count is a
    constant, nothing otherwise): an array of matrices indexed by a loop variable that is not
    unrolled lives in local memory, and NVVM's own heuristic gives up on tensor-core loops."""
    return any((isinstance(n, ast.Call) and n.func.name in _MATRIX_FUNCTIONS)
               or (isinstance(n, ast.MethodCall) and n.name == "thread_elements")
               for n in _walk(node))


_PURE_UNARY = {"+", "-", "!", "~"}


def _holds_values(t: ast.Node) -> bool:
    """A variable of type `t` is its own object (a value or an array of values), not a
    reference or a pointer to another."""
    while isinstance(t, ast.ArrayType):
        t = t.element
    return isinstance(t, ast.NamedType)


def _subscripts(e: ast.Node) -> tuple[str | None, list[ast.Node]]:
    """`a[i][j]` as ("a", [i, j]); (None, []) for anything but a name with subscripts."""
    subscripts = []
    while isinstance(e, ast.Index):
        subscripts.insert(0, e.index)
        e = e.base
    if isinstance(e, ast.Name) and not e.qualifier and not e.template_args:
        return e.name, subscripts
    return None, []


def _pure(e: ast.Node) -> bool:
    """Whether evaluating `e` has no side effect: names, integer literals, and indexing,
    members and arithmetic of those."""
    if isinstance(e, ast.Name | ast.IntLiteral):
        return True
    if isinstance(e, ast.Index):
        return _pure(e.base) and _pure(e.index)
    if isinstance(e, ast.Member):
        return _pure(e.base)
    if isinstance(e, ast.Binary):
        return e.op != "," and _pure(e.left) and _pure(e.right)
    if isinstance(e, ast.Unary):
        return e.op in _PURE_UNARY and _pure(e.operand)
    return False


class _Printer:
    def __init__(self, function: str | None = None,
                 function_constants: dict[int | str, bool | int | float] | None = None) -> None:
        self.wanted = function               # None: the source's (last) kernel
        self.constant_values = function_constants or {}   # what the pipeline sets
        self.defined_constants: dict[str, bool] = {}   # function constants: whether set
        self.kernel: ast.FunctionDef | None = None
        self.instantiation: ast.ExplicitInstantiation | None = None
        self.anonymous = 0
        self.signatures: set[str] = set()
        self.switches: list[str] = []
        self.members: set[str] = set()
        self.unset_constants: list[ast.VarDecl] = []   # function constants the launch leaves unset
        self.values: set[str] = set()
        self.without_adl: set[int] = set()   # ids of names whose calls C++ looks up qualified

    # --- translation unit ----------------------------------------------------------------

    def unit(self, unit: ast.TranslationUnit) -> Translation:
        # A struct member called like a swizzle (`arr`, `xy`) is the member wherever it is
        # accessed: without types the printer knows no better, and Metal code rarely mixes both.
        self.members = {m.name for node in _walk(unit) if isinstance(node, ast.StructDef)
                        for m in node.members}
        self.kernel, self.instantiation = self.chosen_kernel(unit)
        self.namespaces = unit.namespaces
        self.hidden_friends = _hidden_friends(unit)
        # Names that are only ever declared as values: two of them are two different objects.
        declared = [n for n in _walk(unit) if isinstance(n, ast.VarDecl | ast.Param)]
        self.values = {n.name for n in declared if isinstance(n, ast.VarDecl)} - {
            n.name for n in declared
            if isinstance(n, ast.Param) or not _holds_values(n.type)}
        body = []
        for item in unit.items:
            text = self.top_level(item)
            if text:
                body.append(text)
        entry, buffers = self.entry()
        for constant in self.unset_constants:
            if any(re.search(rf"\b{re.escape(constant.name)}\b", text) for text in body):
                raise _Untranslatable(
                    f"the function constant '{constant.name}', which this launch leaves unset "
                    "(`mx.fast.metal_kernel` sets none; `metalsim.cuda.dispatch` those its "
                    "`function_constants` give)", constant)
        used = {n.name for n in _walk(unit) if isinstance(n, ast.Name | ast.NamedType)}
        defined = {item.name for item in unit.items
                   if isinstance(item, ast.FunctionDef | ast.StructDef | ast.TypeAlias)}
        body[:0] = [text.lstrip("\n") for names, text in MLX_UTILS.items()
                    if used & names and not defined & names]
        text = (PRELUDE + "\nnamespace metal {\n" + "\n".join(body) + entry
                + "}  // namespace metal\n")
        return Translation(text, buffers)

    def chosen_kernel(self, unit: ast.TranslationUnit
                      ) -> tuple[ast.FunctionDef, ast.ExplicitInstantiation | None]:
        """The kernel function the entry calls, and the explicit instantiation that names it
        (for a template): the one `self.wanted` names, as a pipeline finds it (the
        `[[host_name("...")]]` of an instantiation, else a kernel's own name), or the last
        one instantiated or defined (a header's other kernel templates are left out)."""
        kernels = [f for f in unit.items if isinstance(f, ast.FunctionDef) and f.body is not None
                   and any(a.name == "kernel" for a in f.attributes)]
        if not kernels:
            raise _Untranslatable("a source without a [[kernel]] function", unit)
        instantiations = [i for i in unit.items if isinstance(i, ast.ExplicitInstantiation)]
        if self.wanted is None:   # MLX's generated source: its kernel comes last
            chosen = None
            for item in unit.items:
                if isinstance(item, ast.ExplicitInstantiation):
                    kernel = next((k for k in kernels if k.name == item.name), None)
                    chosen = (kernel, item) if kernel is not None else chosen
                elif item in kernels and item.template_params is None:
                    chosen = (item, None)
            if chosen is None:
                raise _Untranslatable("a template [[kernel]] that is never instantiated",
                                      kernels[-1])
            return chosen
        for item in instantiations:
            if any(a.name == "host_name" and a.args and isinstance(a.args[0], ast.StringLiteral)
                   and a.args[0].value == self.wanted for a in item.attributes):
                kernel = next((k for k in kernels if k.name == item.name), None)
                if kernel is None:
                    raise _Untranslatable(f"'{self.wanted}', an instantiation of '{item.name}', "
                                          "which is not a [[kernel]] function template", item)
                return kernel, item
        kernel = next((k for k in kernels if k.name == self.wanted
                       and not k.template_params), None)
        if kernel is None:
            raise _Untranslatable(f"the kernel '{self.wanted}': no kernel function or "
                                  "[[host_name]] instantiation has that name", unit)
        return kernel, None

    def top_level(self, item: ast.Node) -> str:
        if isinstance(item, ast.FunctionDef) and item.friend_of is not None:
            return ""   # printed in its struct (`struct`)
        if isinstance(item, ast.FunctionDef):
            if any(a.name == "kernel" for a in item.attributes):
                # A pipeline holds one kernel function: the others are left out.
                return self.function(item, kernel=True) if item is self.kernel else ""
            namespace, _, name = item.name.rpartition("::")
            if namespace.removeprefix("metal::") in _METAL_NAMESPACES:
                # MLX's overloads in Metal's `fast` and `precise` (bf16_math.h)
                item.name = name
                body = self.function(item)
                inner = namespace.removeprefix("metal::")
                return f"namespace {inner} {{\n{body}}}\n" if body else ""
            return self.function(item)
        if isinstance(item, ast.VariableTemplate):
            return self.variable_template(item)
        if isinstance(item, ast.EnumDef):
            return self.enum(item)
        if isinstance(item, ast.StructDeclaration):
            return f"{self.template_header(item.template_params)}{item.key} {item.name};\n"
        if isinstance(item, ast.Empty):   # what a namespace alias or using-declaration left
            return ""
        if isinstance(item, ast.ExplicitInstantiation):
            return ""
        if isinstance(item, ast.DeclStmt):
            return "".join(self.global_decl(d) for d in item.decls)
        if isinstance(item, ast.StructDef):
            text = self.struct(item) + ";\n"
            # Specialisations for address spaces alone (`S<device T*>`, `S<thread T*>`)
            # print alike: CUDA's generic pointers need only the first.
            if item.specialization is not None and text in self.signatures:
                return ""
            self.signatures.add(text)
            return text
        if isinstance(item, ast.TypeAlias):
            return self.alias(item)
        if isinstance(item, ast.UsingNamespace):
            if item.name in ("metal", "metal::fast", "metal::precise", "fast", "precise"):
                name = item.name.removeprefix("metal::").removeprefix("metal")
                return f"using namespace {name};\n" if name else ""
            if item.name in self.namespaces:
                # The parser has resolved every name it makes visible (program names).
                return ""
            raise _Untranslatable(f"'using namespace {item.name}'", item)
        if isinstance(item, ast.StaticAssert):
            return self.statement(item, 0)
        raise _Untranslatable(f"a top-level '{type(item).__name__}'", item)

    def global_decl(self, d: ast.VarDecl) -> str:
        """Program-scope variables are `constant` (or constexpr) in Metal: CUDA constant memory."""
        attribute = next((a for a in d.attributes if a.name == "function_constant"), None)
        if attribute is not None:
            return self.function_constant(d, attribute)
        init = f" = {self.initializer(d.init)}" if d.init is not None else ""
        qual = "constexpr" if d.constexpr else "const"
        return f"static __device__ {qual} {self.declare(d.type, d.name, drop_const=True)}{init};\n"

    def function_constant(self, d: ast.VarDecl, attribute: ast.Attribute) -> str:
        """`constant bool has_mask [[function_constant(300)]];`: a compile-time constant of
        the value the pipeline sets (by name, else by index), as Metal's compiler specialises
        the function; one it leaves unset is not declared (`unit` refuses a kernel that
        reads it: its value is undefined), and `is_function_constant_defined` is false."""
        index = attribute.args[0] if len(attribute.args) == 1 else None
        if not isinstance(index, ast.IntLiteral):
            raise _Untranslatable(f"the function constant '{d.name}' without an integer index", d)
        value = self.constant_values.get(d.name, self.constant_values.get(index.value))
        self.defined_constants[d.name] = value is not None
        declared = self.declare(d.type, d.name, drop_const=True)
        if value is None:
            self.unset_constants.append(d)
            return ""
        value = value.item() if isinstance(value, np.generic) else value
        if isinstance(value, bool):
            literal = "true" if value else "false"
        elif isinstance(value, int):
            literal = f"{value}ll"
        else:
            number = float(value)
            literal = self.float_literal(ast.FloatLiteral(d.coord, number, "", repr(number)))
        t = self.type_name(d.type).removeprefix("const ")
        return f"static __device__ constexpr {declared} = static_cast<{t}>({literal});\n"

    def variable_template(self, item: ast.VariableTemplate) -> str:
        """`template <class T> constexpr bool k = ...;` (a constant, as in Metal's program
        scope) and its specialisations (`k<int>`)."""
        d = item.decl
        name = item.name
        if item.specialization is not None:
            name += "<" + ", ".join(self.template_arg(a) for a in item.specialization) + ">"
        init = f" = {self.initializer(d.init)}" if d.init is not None else ""
        return (f"{self.template_header(item.template_params)}constexpr "
                f"{self.declare(d.type, name, drop_const=True)}{init};\n")

    def alias(self, item: ast.TypeAlias) -> str:
        template = self.template_header(item.template_params)
        if isinstance(item.type, ast.StructDef):
            struct = item.type
            if not struct.name:
                self.anonymous += 1
                struct.name = f"metalsim_anonymous_{self.anonymous}"
            return (f"{template}{self.struct(struct)};\n"
                    f"{template}using {item.name} = {struct.name};\n")
        return f"{template}using {item.name} = {self.type_name(item.type)};\n"

    def template_header(self, params: list[ast.TemplateParam] | None) -> str:
        if params is None:
            return ""
        parts = []
        for p in params:
            default = ""
            if p.default is not None:
                default = " = " + self.template_arg(p.default)
            pack = "..." if p.pack else ""
            if p.kind is None:
                parts.append(f"typename{pack} {p.name}{default}")
            else:   # `int N`, `float (*G)(float)`
                parts.append(self.declare(p.kind, f"{pack}{p.name}") + default)
        return f"template <{', '.join(parts)}>\n"

    def template_arg(self, node: ast.Node) -> str:
        if isinstance(node, ast.NamedType | ast.PointerType | ast.ReferenceType | ast.ArrayType
                      | ast.FunctionPointerType):
            return self.type_name(node)
        return self.expr(node)

    def struct(self, s: ast.StructDef, indent: int = 0) -> str:
        """A struct or union: member types and static members first (in their order), then
        data members, constructors and member functions (which C++ lets see every member)."""
        pad = "  " * indent
        key = "union" if s.union else "struct"
        align = f" alignas({self.expr(s.align)})" if s.align is not None else ""
        name = s.name
        if s.specialization is not None:
            name += "<" + ", ".join(self.template_arg(a) for a in s.specialization) + ">"
        bases = ""
        if s.bases:
            bases = " : " + ", ".join(f"public {self.base_name(b)}" for b in s.bases)
        header = self.template_header(s.template_params).replace("\n", "\n" + pad)
        lines = [f"{header}{key}{align} {name}{bases} {{"]
        inner = pad + "  "
        for item in s.statics:
            lines.append(inner + self.member_static(item, indent + 1).rstrip("\n"))
        for m in s.members:
            init = f" = {self.initializer(m.init)}" if m.init is not None else ""
            lines.append(f"{inner}{self.declare(m.type, m.name)}{init};")
        for used in s.using_members:   # `using B::f;`: B's overloads join the struct's own
            lines.append(f"{inner}using {self.expr(used)};")
        printed: set[str] = set()
        for c in s.constructors + s.space_constructors:
            params = ", ".join(self.param(p) for p in c.params)
            inits = ", ".join(
                f"{self.member_init_name(i)}{'{' if i.braces else '('}"
                f"{', '.join(self.expr(a) for a in i.args)}"
                f"{'}' if i.braces else ')'}" for i in c.inits)
            head = f"{inner}{self.template_header(c.template_params)}__device__ "
            head += "constexpr " if c.constexpr else ""
            head += f"{'explicit ' if c.explicit else ''}{s.name}({params})"
            if head in printed:   # `S() thread` and `S() threadgroup`: one constructor here
                continue
            printed.add(head)
            if c.body is None:
                lines.append(head + ";")
                continue
            lines.append(head + (f" : {inits}" if inits else "") + " "
                         + self.block(c.body, indent + 1))
        variants: dict[str, list[ast.MemberFunction]] = {}
        for m in s.methods:
            variants.setdefault(self.function(m, indent=indent + 1).split("{", 1)[0],
                                []).append(m)
        for head, methods in variants.items():
            if len(methods) == 1:
                lines.append(inner + self.function(methods[0], indent=indent + 1).rstrip("\n"))
            else:
                lines.append(inner + head + self.space_dispatch(methods, indent + 1))
        for friend in self.hidden_friends.get(s.name, []):
            lines.append(inner + "friend " + self.function(friend, indent=indent + 1).rstrip())
        lines.append(pad + "}")
        return "\n".join(lines)

    def member_static(self, item: ast.Node, indent: int) -> str:
        """A struct's member type, static data member, static_assert or nested struct."""
        if isinstance(item, ast.VarDecl):
            init = f" = {self.initializer(item.init)}" if item.init is not None else ""
            qual = "constexpr" if item.constexpr else "const"
            return f"static {qual} {self.declare(item.type, item.name, drop_const=True)}{init};"
        if isinstance(item, ast.TypeAlias):
            return self.alias(item)
        if isinstance(item, ast.StaticAssert):
            return self.statement(item, 0)
        if isinstance(item, ast.StructDef):
            return self.struct(item, indent) + ";"
        if isinstance(item, ast.EnumDef):
            return self.enum(item)
        if isinstance(item, ast.StructDeclaration):
            return f"{self.template_header(item.template_params)}{item.key} {item.name};\n"
        if isinstance(item, ast.Empty):   # what a namespace alias or using-declaration left
            return ""
        raise _Untranslatable(f"the member '{type(item).__name__}'", item)

    def base_name(self, t: ast.NamedType) -> str:
        """A base class (no `typename` there: C++ knows it names a type)."""
        return self.named(t, drop_const=True, typename=False)

    def member_init_name(self, init: ast.MemberInit) -> str:
        return self.base_name(init.base) if init.base is not None else init.name

    def enum(self, e: ast.EnumDef) -> str:
        underlying = f" : {self.type_name(e.underlying)}" if e.underlying is not None else ""
        # An unscoped enumerator is a member of the enum's namespace, named by its program
        # name as spelled (`na_ns_Red`, as the enum is `na_ns_Color`); a scoped one through
        # its enum.
        namespace, spelled, _ = e.name.rpartition("_ns_")
        prefix = "" if e.scoped else namespace + spelled
        items = ", ".join(prefix + n.name
                          + (f" = {self.expr(n.value)}" if n.value is not None else "")
                          for n in e.enumerators)
        key = "enum class" if e.scoped else "enum"
        return f"{key} {e.name}{underlying} {{{items}}};\n"

    def space_dispatch(self, methods: list[ast.MemberFunction], indent: int = 1) -> str:
        """One body for member functions overloaded on the object's address space alone
        (`f() thread` / `f() threadgroup`): CUDA's pointers are generic, so the overload is
        chosen where Metal's compiler would, from where `this` lives. Device and constant
        memory are both global memory here; a device overload is preferred there."""
        tests = {"threadgroup": "__isShared(this)", "device": "__isGlobal(this)",
                 "constant": "__isGlobal(this)", "thread": "__isLocal(this)"}
        by_space = {(m.space or "thread"): m for m in reversed(methods)}
        order = [sp for sp in ("threadgroup", "device", "constant", "thread") if sp in by_space]
        fallback = by_space.get("thread", by_space[order[-1]])
        pad = "  " * indent
        text = "{\n"
        for space in order:
            if by_space[space] is not fallback:
                text += (f"{pad}  if ({tests[space]}) "
                         + self.block(by_space[space].body, indent + 1) + "\n")
        return text + f"{pad}  " + self.block(fallback.body, indent + 1) + f"\n{pad}}}"

    def function(self, f: ast.FunctionDef, kernel: bool = False, indent: int = 0) -> str:
        template = self.template_header(f.template_params)
        if indent:
            template = template.replace("\n", "\n" + "  " * indent)
        params = ", ".join(self.param(p) for p in f.params)
        member = isinstance(f, ast.MemberFunction)
        const = " const" if member and f.const else ""
        inline = "__forceinline__" if kernel else "inline"
        specifiers = "static " if member and f.static else ""
        specifiers += "constexpr " if f.constexpr else ""
        name = f.name
        if member and f.owner:   # `R S::f(...) {...}`, defined after S
            owner = f.owner
            if f.owner_args is not None:
                owner += "<" + ", ".join(self.template_arg(a) for a in f.owner_args) + ">"
                if f.template_params is None or (f.template_params == []
                                                 and f.specialization_args is not None):
                    # a member of a class template's instance (`template <> R S<A>::f()`),
                    # or a member template's specialisation for one (two `template <>`)
                    template = "template <>\n" + template
            name = f"{owner}::{name.rsplit('::', 1)[-1]}"
        if f.specialization_args is not None:
            name += "<" + ", ".join(self.template_arg(a) for a in f.specialization_args) + ">"
        if isinstance(f, ast.ConversionFunction):
            explicit = "explicit " if f.explicit else ""
            head = (f"{template}__device__ {inline} {specifiers}{explicit}"
                    f"operator {self.type_name(f.return_type)}(){const}")
        else:
            ret = self.type_name(f.return_type)
            head = f"{template}__device__ {inline} {specifiers}{ret} {name}({params}){const}"
        if f.body is None:
            return head + ";\n"
        # Overloads on the address space alone (`device T*` and `constant T*`) print alike:
        # CUDA's generic pointers need only the first.
        if indent == 0 and head in self.signatures:
            return ""
        self.signatures.add(head)
        return head + " " + self.block(f.body, indent) + "\n"

    def param(self, p: ast.Param) -> str:
        name = ("..." if p.pack else "") + (p.name or "")
        text = self.declare(p.type, name)
        if p.default is not None:
            text += " = " + self.expr(p.default)
        return text

    # --- the kernel's entry --------------------------------------------------------------

    def entry(self) -> tuple[str, tuple[str, ...]]:
        kernel = self.kernel
        assert kernel is not None
        callee = kernel.name
        if kernel.template_params is not None:
            inst = self.instantiation
            if inst is None:
                raise _Untranslatable("a template [[kernel]] that is never instantiated", kernel)
            callee += "<" + ", ".join(self.template_arg(a) for a in inst.template_args) + ">"
        call = f"  {callee}("
        if kernel.template_params and len(inst.template_args) < len(kernel.template_params):
            # Template parameters left to their defaults (`typename MaskType = float`) would be
            # deduced from the buffer arguments first, which fails: the specialisation's
            # address fixes them all, and the arguments convert to its parameter types.
            call = f"  auto* const kernel = &{callee};\n  kernel("
        params, args, buffers = [], [], []
        for p in kernel.params:
            attribute = next((a.name for a in p.attributes if a.name in _THREAD_ATTRIBUTES), None)
            if attribute is not None:
                args.append(f"attribute_as<{self.type_name(p.type)}>::from("
                            f"info.{attribute})")
                continue
            if any(a.name == "threadgroup" for a in p.attributes):
                raise _Untranslatable(f"the threadgroup-memory argument '{p.name}' "
                                      "([[threadgroup(n)]])", p)
            # Every other argument is a buffer (`[[buffer(n)]]`, or numbered in order where
            # none says; the caller binds them by the indices the simulator reads).
            index = len(buffers)
            buffers.append(p.name or "")
            params.append(f"void* b{index}")
            kind = "reference_arg" if isinstance(p.type, ast.ReferenceType) else "pointer_arg"
            args.append(f"{kind}{{b{index}}}")
        params += [f"unsigned int {n}" for n in ("gx", "gy", "gz", "tx", "ty", "tz")]
        text = (
            f'\nextern "C" __global__ void __launch_bounds__(METALSIM_MAX_THREADS) {ENTRY}('
            + ", ".join(params) + ") {\n"
            "  const thread_info info = make_thread_info(gx, gy, gz, tx, ty, tz);\n"
            "  if (!info.exists) return;\n"
            + call + ", ".join(args) + ");\n}\n"
        )
        return text, tuple(buffers)

    # --- types -----------------------------------------------------------------------------

    def type_name(self, t: ast.Node) -> str:
        return self.declare(t, "").strip()

    def named(self, t: ast.NamedType, drop_const: bool = False, typename: bool = True) -> str:
        const = "const " if t.const and not drop_const else ""
        if t.name == "decltype" and t.template_args:
            return f"{const}decltype({self.expr(t.template_args[0])})"
        name = _TYPE_NAMES.get(t.name, t.name) if t.member_of is None else t.name
        if name.startswith("auto:"):   # a generic lambda's parameter, as written
            name = "auto"
        if t.name == "double":
            raise _Untranslatable("'double' (Metal has no double)", t)
        if t.template_args is not None:
            name += "<" + ", ".join(self.template_arg(a) for a in t.template_args) + ">"
            if t.member_of is not None:
                name = "template " + name
        if t.member_of is not None:   # `typename S<T>::type`
            name = (("typename " if typename else "")
                    + self.named(t.member_of, drop_const=True, typename=False) + "::" + name)
        return const + name

    def declare(self, t: ast.Node, name: str, drop_const: bool = False) -> str:
        """C declarator syntax for `name` of type `t`, address spaces dropped."""
        if isinstance(t, ast.NamedType):
            return f"{self.named(t, drop_const)} {name}".rstrip()
        if isinstance(t, ast.PointerType):
            inner = f"*{' const ' if t.const else ''}{name}"
            pointee = t.pointee
            if (isinstance(pointee, ast.NamedType) and pointee.name == "char"
                    and pointee.space == "constant"):
                # A string in constant memory (`constant char* fmt`), which a string literal
                # converts to: C++'s `char`, not the `signed char` that Metal's `char` is here.
                return f"const char {inner}"
            if isinstance(pointee, ast.ArrayType):
                inner = f"({inner})"
            return self.declare(pointee, inner, drop_const)
        if isinstance(t, ast.ReferenceType):
            inner = f"&{name}"
            if isinstance(t.referee, ast.ArrayType):
                inner = f"({inner})"
            return self.declare(t.referee, inner, drop_const)
        if isinstance(t, ast.ArrayType):
            size = self.expr(t.size) if t.size is not None else ""
            return self.declare(t.element, f"{name}[{size}]", drop_const)
        if isinstance(t, ast.FunctionPointerType):   # `R (*name)(P...)`
            params = ", ".join(self.type_name(p) for p in t.params)
            return self.declare(t.result, f"(*{name})({params})", drop_const)
        raise _Untranslatable(f"the type '{type(t).__name__}'", t)

    @staticmethod
    def space(t: ast.Node) -> str | None:
        """The address space of a variable of type `t` itself (not of what it points to)."""
        while isinstance(t, ast.ArrayType):
            t = t.element
        return t.space if isinstance(t, ast.NamedType) else None

    # --- statements --------------------------------------------------------------------------

    def block(self, c: ast.Compound, indent: int) -> str:
        pad = "  " * indent
        inner, i = [], 0
        while i < len(c.items):
            pair = self.product_pair(c.items[i:i + 2])
            if pair:
                inner.append("  " * (indent + 1) + pair + ";\n")
                i += 2
            else:
                inner.append(self.statement(c.items[i], indent + 1))
                i += 1
        return "{\n" + "".join(inner) + pad + "}"

    def distinct(self, x: ast.Node, y: ast.Node) -> bool:
        """Whether the lvalues `x` and `y`, each a name with subscripts, are provably different
        objects: different names that are only ever declared as values (no parameter, no
        reference), or one name with a subscript where the two differ by a constant."""
        (nx, sx), (ny, sy) = _subscripts(x), _subscripts(y)
        if nx is None or ny is None:
            return False
        if nx != ny:
            return nx in self.values and ny in self.values
        return len(sx) == len(sy) and any(
            bx == by and cx != cy for (bx, cx), (by, cy) in
            zip((self.offset(i) for i in sx), (self.offset(i) for i in sy)))

    def offset(self, e: ast.Node) -> tuple[str, int]:
        """A subscript as (what it adds a constant to, the constant): `i + 1` is ("i", 1)."""
        if isinstance(e, ast.IntLiteral):
            return "", e.value
        if (isinstance(e, ast.Binary) and e.op in "+-" and len(e.op) == 1
                and isinstance(e.right, ast.IntLiteral)):
            return self.expr(e.left), e.right.value if e.op == "+" else -e.right.value
        return self.expr(e), 0

    def product_pair(self, items: list[ast.Node]) -> str:
        """Two consecutive `simdgroup_multiply_accumulate(d, a, b, c);` statements with the
        same B operand and side-effect-free arguments, as one call of the prelude's pair
        (which does the second after the first, in one step where it can); "" otherwise."""
        calls = [s.expr for s in items if isinstance(s, ast.ExprStmt)
                 and isinstance(s.expr, ast.Call)
                 and s.expr.func.name == "simdgroup_multiply_accumulate"
                 and not s.expr.func.qualifier and len(s.expr.args) == 4
                 and all(_pure(a) for a in s.expr.args)]
        if len(calls) != 2:
            return ""
        (d1, a1, b1, c1), (d2, a2, b2, c2) = ([self.expr(a) for a in call.args] for call in calls)
        first, second = calls[0].args, calls[1].args
        if b1 != b2 or not all(self.distinct(first[0], x) for x in (second[1], second[2],
                                                                     second[3])):
            return ""
        return f"simdgroup_multiply_accumulate_pair({d1}, {a1}, {c1}, {d2}, {a2}, {c2}, {b1})"

    def statement(self, s: ast.Node, indent: int) -> str:
        pad = "  " * indent
        if isinstance(s, ast.Compound):
            return pad + self.block(s, indent) + "\n"
        if isinstance(s, ast.DeclStmt):
            return "".join(pad + self.local_decl(d) + ";\n" for d in s.decls)
        if isinstance(s, ast.ExprStmt):
            return pad + self.expr(s.expr) + ";\n"
        if isinstance(s, ast.If):
            text = f"{pad}if {'constexpr ' if s.constexpr else ''}({self.expr(s.cond)})\n"
            text += self.nested(s.then, indent)
            if s.otherwise is not None:
                text += f"{pad}else\n" + self.nested(s.otherwise, indent)
            return text
        if isinstance(s, ast.For):
            init = ""
            if isinstance(s.init, ast.DeclStmt):
                init = ", ".join(self.local_decl(d) for d in s.init.decls)
                init = self.merge_declarators(s.init.decls) if len(s.init.decls) > 1 else init
            elif isinstance(s.init, ast.ExprStmt):
                init = self.expr(s.init.expr)
            cond = self.expr(s.cond) if s.cond is not None else ""
            step = self.expr(s.step) if s.step is not None else ""
            unroll = f"{pad}#pragma unroll\n" if _uses_simdgroup_matrices(s.body) else ""
            return (f"{unroll}{pad}for ({init}; {cond}; {step})\n"
                    + self.nested(s.body, indent))
        if isinstance(s, ast.While):
            return f"{pad}while ({self.expr(s.cond)})\n" + self.nested(s.body, indent)
        if isinstance(s, ast.DoWhile):
            body = self.nested(s.body, indent)
            return f"{pad}do\n{body}{pad}while ({self.expr(s.cond)});\n"
        if isinstance(s, ast.Switch):
            subject = self.expr(s.expr)
            self.switches.append(subject)
            body = self.block(s.body, indent)
            self.switches.pop()
            return f"{pad}switch ({subject}) " + body + "\n"
        if isinstance(s, ast.CaseLabel):
            if s.value is None:
                return f"{pad}default:\n"
            # A case value converts to the promoted type of the subject, as Metal's compiler
            # converts it; CUDA's rejects a narrowing there (`case -3:` on an unsigned long).
            return f"{pad}case (decltype(+{self.switches[-1]}))({self.expr(s.value)}):\n"
        if isinstance(s, ast.Break):
            return pad + "break;\n"
        if isinstance(s, ast.Continue):
            return pad + "continue;\n"
        if isinstance(s, ast.Return):
            return pad + ("return;\n" if s.value is None else f"return {self.expr(s.value)};\n")
        if isinstance(s, ast.StructDeclaration):
            return f"{pad}{s.key} {s.name};\n"
        if isinstance(s, ast.Empty):
            return pad + ";\n"
        if isinstance(s, ast.StaticAssert):
            return f"{pad}static_assert({self.expr(s.cond)}, {self.string(s.message)});\n"
        if isinstance(s, ast.StructDef):
            return pad + self.struct(s) + ";\n"
        if isinstance(s, ast.TypeAlias):
            return pad + self.alias(s)
        raise _Untranslatable(f"the statement '{type(s).__name__}'", s)

    def nested(self, s: ast.Node, indent: int) -> str:
        if isinstance(s, ast.Compound):
            return "  " * indent + self.block(s, indent) + "\n"
        return self.statement(s, indent + 1)

    def merge_declarators(self, decls: list[ast.VarDecl]) -> str:
        """`int i = 0, j = 1` in a for-init: one type, several declarators."""
        first = self.local_decl(decls[0])
        rest = []
        for d in decls[1:]:
            text = self.declare(d.type, d.name)
            base = self.declare(d.type, "")
            declarator = text[len(base):].strip() if text.startswith(base) else d.name
            if d.init is not None:
                declarator += f" = {self.initializer(d.init)}"
            rest.append(declarator)
        return ", ".join([first, *rest])

    def local_decl(self, d: ast.VarDecl) -> str:
        shared = self.space(d.type) == "threadgroup"
        prefix = "__shared__ " if shared else ""
        if d.constexpr or self.literal_constant(d):
            prefix += "constexpr "
        elif d.static:
            raise _Untranslatable(f"the static local variable '{d.name}'", d)
        text = prefix + self.declare(d.type, d.name)
        if d.init is not None:
            if shared:
                raise _Untranslatable(f"an initializer for threadgroup variable '{d.name}'", d)
            text += f" = {self.initializer(d.init)}"
        return text

    @staticmethod
    def literal_constant(d: ast.VarDecl) -> bool:
        """`const float k = 3;`: a constant expression, which a local struct's member function
        may use (clang agrees; CUDA's front end wants it constexpr)."""
        init = d.init
        while isinstance(init, ast.Unary) and init.op in "+-":
            init = init.operand
        return (isinstance(d.type, ast.NamedType) and d.type.const and d.type.space is None
                and d.type.name in _CONSTEXPR_SCALARS
                and isinstance(init, ast.IntLiteral | ast.FloatLiteral | ast.BoolLiteral)
                and getattr(init, "suffix", "") not in ("h", "bf"))

    def initializer(self, e: ast.Node) -> str:
        return self.expr(e)

    # --- expressions -------------------------------------------------------------------------

    def string(self, text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

    def expr(self, e: ast.Node, assigned: bool = False) -> str:
        if isinstance(e, ast.IntLiteral):
            return e.text or str(e.value)
        if isinstance(e, ast.FloatLiteral):
            return self.float_literal(e)
        if isinstance(e, ast.BoolLiteral):
            return "true" if e.value else "false"
        if isinstance(e, ast.NullptrLiteral):
            return "nullptr"
        if isinstance(e, ast.StringLiteral):
            return self.string(e.value)
        if isinstance(e, ast.Name):
            return self.name(e)
        if isinstance(e, ast.Unary):
            return f"({e.op}{self.expr(e.operand, e.op in _ASSIGNING_UNARY)})"
        if isinstance(e, ast.Postfix):
            return f"({self.expr(e.operand, True)}{e.op})"
        if isinstance(e, ast.Binary):
            return f"({self.expr(e.left)} {e.op} {self.expr(e.right)})"
        if isinstance(e, ast.Assign):
            return f"({self.expr(e.target, True)} {e.op} {self.expr(e.value)})"
        if isinstance(e, ast.Conditional):
            return f"({self.expr(e.cond)} ? {self.expr(e.then)} : {self.expr(e.otherwise)})"
        if isinstance(e, ast.Call):
            if e.func.name == "is_function_constant_defined" and len(e.args) == 1 and isinstance(
                    e.args[0], ast.Name) and e.args[0].name in self.defined_constants:
                return "true" if self.defined_constants[e.args[0].name] else "false"
            # (a type is an argument of the compiler's built-ins: `__is_empty(T)`)
            callee = self.name(e.func)
            if id(e.func) in self.without_adl:   # `(g)(c)`: no argument-dependent lookup
                callee = f"({callee})"
            return f"{callee}({', '.join(self.template_arg(a) for a in e.args)})"
        if isinstance(e, ast.MethodCall):
            dot = "->" if e.arrow else "."
            name = f"{e.qualifier}::{e.name}" if e.qualifier else e.name
            if e.template_args is not None:   # `x.template f<T>(...)`
                name = "template " + name + "<" + ", ".join(
                    self.template_arg(a) for a in e.template_args) + ">"
            return f"{self.expr(e.base)}{dot}{name}({', '.join(self.expr(a) for a in e.args)})"
        if isinstance(e, ast.Construct):
            args = ", ".join(self.expr(a) for a in e.args)
            name = self.declare(e.type, "", drop_const=True).strip()
            if name in _MULTIWORD_TYPES:   # `unsigned int(x)` is no C++
                return f"(({name})({args}))" if len(e.args) == 1 else f"{name}{{}}"
            return f"{name}{{{args}}}" if e.braces else f"{name}({args})"
        if isinstance(e, ast.Cast):
            t = self.type_name(e.type)
            if e.style == "as_type":
                return f"as_type<{t}>({self.expr(e.expr)})"
            if e.style in ("static_cast", "reinterpret_cast"):
                return f"{e.style}<{t}>({self.expr(e.expr)})"
            return f"(({t})({self.expr(e.expr)}))"
        if isinstance(e, ast.Index):
            return f"{self.expr(e.base, assigned)}[{self.expr(e.index)}]"
        if isinstance(e, ast.Member):
            return self.member(e, assigned)
        if isinstance(e, ast.This):
            return "this"
        if isinstance(e, ast.SizeOf):
            word = "alignof" if e.align else "sizeof"
            operand = e.operand
            if isinstance(operand, ast.NamedType | ast.PointerType | ast.ReferenceType
                          | ast.ArrayType):
                return f"{word}({self.type_name(operand)})"
            return f"{word}({self.expr(operand)})"
        if isinstance(e, ast.Lambda):
            return self.lambda_(e)
        if isinstance(e, ast.PackExpansion):
            return f"{self.template_arg(e.pattern)}..."
        if isinstance(e, ast.InitList):
            return "{" + ", ".join(self.expr(i) for i in e.items) + "}"
        raise _Untranslatable(f"the expression '{type(e).__name__}'", e)

    def lambda_(self, e: ast.Lambda) -> str:
        """A lambda (a device lambda: it is defined in device code); a generic one's invented
        template parameters print as the `auto` they were written as."""
        captures = [e.default] if e.default else []
        captures += [name if name == "this" else ("&" if by_ref else "") + name
                     for name, by_ref in e.captures]
        params = ", ".join(self.param(p) for p in e.params)
        text = f"[{', '.join(captures)}]({params})"
        if e.mutable:
            text += " mutable"
        if not (isinstance(e.return_type, ast.NamedType) and e.return_type.name == "auto"):
            text += f" -> {self.type_name(e.return_type)}"
        return text + " " + self.block(e.body, 1)

    def float_literal(self, e: ast.FloatLiteral) -> str:
        """The literal's value correctly rounded to its type, written exactly (NVRTC rounds
        some decimal literals wrongly: `16777217.0f` became 16777218)."""
        kind = {"h": "half", "bf": "bfloat"}.get(e.suffix, "float")
        bits = rounded_bits(e.text or repr(e.value), kind)
        if kind != "float":
            return f"{kind}::from_bits({bits:#06x})"
        value = float(np.array(bits, np.uint32).view(np.float32))
        if not math.isfinite(value):
            return f"__uint_as_float({bits:#010x}u)"
        return f"{value.hex()}f"

    def name(self, n: ast.Name) -> str:
        args = ""
        if n.template_args is not None:
            args = "<" + ", ".join(self.template_arg(a) for a in n.template_args) + ">"
        if n.owner is not None:   # `decltype(x)::k`
            return f"{self.named(n.owner, drop_const=True, typename=False)}::{n.name}"
        if n.args_on_qualifier:   # `S<T>::k`, `S<T>::Inner::k`
            parts = n.qualifier.split("::")
            at = len(parts) - 1 - n.parts_after_args
            parts[at] += args
            return "::".join(parts) + f"::{n.name}"
        qualifier = n.qualifier
        if qualifier and args and qualifier not in _METAL_NAMESPACES:
            # `S::template f<T>`: C++ needs the keyword where S depends on a template
            # parameter, and allows it elsewhere.
            return f"{qualifier}::template {n.name}{args}"
        return (f"{qualifier}::{n.name}" if qualifier else n.name) + args

    def member(self, e: ast.Member, assigned: bool) -> str:
        base = self.expr(e.base, assigned)
        if e.arrow:
            return f"{base}->{e.name}"
        if _SWIZZLE.match(e.name) and e.name not in self.members:
            indices = ", ".join(str(_COMPONENT[c]) for c in e.name)
            func = "swizzle_ref" if assigned else "swizzle"
            return f"{func}<{indices}>({base})"
        return f"{base}.{e.name}"
