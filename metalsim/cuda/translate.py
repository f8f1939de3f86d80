"""Translate the kernel MLX would compile (its generated Metal source) into CUDA C++.

The generated text goes through metalsim's own front end (preprocessor and parser), the same the
simulator runs, and the AST is printed back as CUDA C++ inside `namespace metal`, after the
prelude (`metalsim.cuda.prelude`) that gives Metal's types and library their meaning on CUDA.
C++ itself does the typing: the prelude's overloads reproduce Metal's rules, so the printer only
rewrites what differs in syntax:

- address spaces disappear (CUDA pointers are generic); a `threadgroup` variable becomes a
  `__shared__` one;
- unsuffixed floating literals get an `f` (Metal has no double), `h`/`bf` ones a conversion;
- swizzles of two or more components become `swizzle<...>(v)` (or `swizzle_ref` where assigned);
- the `[[kernel]]` function becomes a `__device__` function, called by an `extern "C"
  __global__` entry (`ENTRY`) that computes the thread attributes with MLX's dispatch, lets the
  threads of a partial edge threadgroup beyond its real size return, and binds the buffers.

What cannot be translated raises `metalsim.CompileError` naming the construct, at its line.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

import ml_dtypes
import numpy as np

from metalsim.cuda.prelude import PRELUDE
from metalsim.diagnostics import CompileError, SourceMap
from metalsim.exec.prelude import MLX_SECTION, MLX_TYPEDEFS
from metalsim.lang import ast
from metalsim.lang.parser import parse
from metalsim.lang.preprocess import preprocess
from metalsim.signature import GeneratedKernel

ENTRY = "metalsim_entry"
_SWIZZLE = re.compile(r"^(?:[xyzw]{2,4}|[rgba]{2,4})$")
_COMPONENT = {c: i for i, c in enumerate("xyzw")} | {c: i for i, c in enumerate("rgba")}
# Metal type names that are not a single C++ identifier in CUDA, or mean something else there.
_TYPE_NAMES = {"char": "signed char", "long": "long", "unsigned": "unsigned int",
               "signed": "int", "double": "float"}
_ASSIGNING_UNARY = {"++", "--", "&"}
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
    # MLX's typedefs go first, for the parser to know their names; the CUDA prelude has its own.
    shift = len(MLX_TYPEDEFS)
    source_map = SourceMap(MLX_TYPEDEFS + gen.text, [(MLX_SECTION, 0, shift)] + [
        (name, start + shift, end + shift) for name, start, end in gen.sections])
    predefined = {"__FAST_MATH__": "1"} if math_mode == "fast" else None
    unit = parse(preprocess(MLX_TYPEDEFS + gen.text, source_map, predefined, include_dirs),
                 source_map)
    unit.items = unit.items[MLX_TYPEDEFS.count(";"):]
    _spell_program_names(unit)
    try:
        return _Printer().unit(unit)
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
          ast.EnumDef, ast.VariableTemplate)


def _spell_program_names(unit: ast.TranslationUnit) -> None:
    """Respells the parser's program names of a program's namespace members (`na::K`, see
    `metalsim.lang.namespaces`) as plain identifiers (`na_ns_K`) everywhere in `unit`, for
    the printer, which declares everything in one CUDA namespace."""
    declared = [n.name for n in _walk(unit) if isinstance(n, _NAMED[2:]) and "::" in n.name]
    namespaces = {name.rsplit("::", depth)[0] for name in declared
                  for depth in range(1, name.count("::") + 1)} - {"metal", "metal::fast",
                                                                  "metal::precise"}
    if not namespaces:
        return

    def spelled(text: str) -> str:
        parts = text.split("::")
        for length in range(len(parts) - 1, 0, -1):
            if "::".join(parts[:length]) in namespaces:
                return "_ns_".join(parts[:length + 1]) + "".join(
                    f"::{p}" for p in parts[length + 1:])
        return text

    for node in _walk(unit):
        if isinstance(node, _NAMED):
            for field in ("name", "qualifier", "owner"):
                value = getattr(node, field, None)
                if isinstance(value, str) and "::" in value:
                    setattr(node, field, spelled(value))


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


class _Printer:
    def __init__(self) -> None:
        self.kernel: ast.FunctionDef | None = None
        self.instantiation: ast.ExplicitInstantiation | None = None
        self.anonymous = 0
        self.signatures: set[str] = set()
        self.switches: list[str] = []
        self.members: set[str] = set()

    # --- translation unit ----------------------------------------------------------------

    def unit(self, unit: ast.TranslationUnit) -> Translation:
        # A struct member called like a swizzle (`arr`, `xy`) is the member wherever it is
        # accessed: without types the printer knows no better, and Metal code rarely mixes both.
        self.members = {m.name for node in _walk(unit) if isinstance(node, ast.StructDef)
                        for m in node.members}
        body = []
        for item in unit.items:
            text = self.top_level(item)
            if text:
                body.append(text)
        if self.kernel is None:
            raise _Untranslatable("a source without a [[kernel]] function", unit)
        entry, buffers = self.entry()
        text = (PRELUDE + "\nnamespace metal {\n" + "\n".join(body) + entry
                + "}  // namespace metal\n")
        return Translation(text, buffers)

    def top_level(self, item: ast.Node) -> str:
        if isinstance(item, ast.FunctionDef):
            if any(a.name == "kernel" for a in item.attributes):
                self.kernel = item
                return self.function(item, kernel=True)
            return self.function(item)
        if isinstance(item, ast.ExplicitInstantiation):
            self.instantiation = item
            return ""
        if isinstance(item, ast.DeclStmt):
            return "".join(self.global_decl(d) for d in item.decls)
        if isinstance(item, ast.StructDef):
            return self.struct(item) + ";\n"
        if isinstance(item, ast.TypeAlias):
            return self.alias(item)
        if isinstance(item, ast.UsingNamespace):
            if item.name in ("metal", "metal::fast", "metal::precise", "fast", "precise"):
                name = item.name.removeprefix("metal::").removeprefix("metal")
                return f"using namespace {name};\n" if name else ""
            raise _Untranslatable(f"'using namespace {item.name}'", item)
        if isinstance(item, ast.StaticAssert):
            return self.statement(item, 0)
        raise _Untranslatable(f"a top-level '{type(item).__name__}'", item)

    def global_decl(self, d: ast.VarDecl) -> str:
        """Program-scope variables are `constant` (or constexpr) in Metal: CUDA constant memory."""
        init = f" = {self.initializer(d.init)}" if d.init is not None else ""
        qual = "constexpr" if d.constexpr else "const"
        return f"static __device__ {qual} {self.declare(d.type, d.name, drop_const=True)}{init};\n"

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
            kind = "typename" if p.kind is None else self.type_name(p.kind)
            default = ""
            if p.default is not None:
                default = " = " + self.template_arg(p.default)
            parts.append(f"{kind} {p.name}{default}")
        return f"template <{', '.join(parts)}>\n"

    def template_arg(self, node: ast.Node) -> str:
        if isinstance(node, ast.NamedType | ast.PointerType | ast.ReferenceType | ast.ArrayType):
            return self.type_name(node)
        return self.expr(node)

    def struct(self, s: ast.StructDef) -> str:
        lines = [f"{self.template_header(s.template_params)}struct {s.name} {{"]
        for m in s.members:
            lines.append(f"  {self.declare(m.type, m.name)};")
        for c in s.constructors:
            params = ", ".join(self.param(p) for p in c.params)
            inits = ", ".join(
                f"{i.name}{'{' if i.braces else '('}{', '.join(self.expr(a) for a in i.args)}"
                f"{'}' if i.braces else ')'}" for i in c.inits)
            head = f"  {self.template_header(c.template_params)}__device__ "
            head += f"{'explicit ' if c.explicit else ''}{s.name}({params})"
            if c.body is None:
                lines.append(head + ";")
                continue
            lines.append(head + (f" : {inits}" if inits else "") + " " + self.block(c.body, 1))
        variants: dict[str, list[ast.MemberFunction]] = {}
        for m in s.methods:
            variants.setdefault(self.function(m, indent=1).split("{", 1)[0], []).append(m)
        for head, methods in variants.items():
            if len(methods) == 1:
                lines.append("  " + self.function(methods[0], indent=1))
            else:
                lines.append("  " + head + self.space_dispatch(methods) + "\n")
        lines.append("}")
        return "\n".join(lines)

    def space_dispatch(self, methods: list[ast.MemberFunction]) -> str:
        """One body for member functions overloaded on the object's address space alone
        (`f() thread` / `f() threadgroup`): CUDA's pointers are generic, so the overload is
        chosen where Metal's compiler would, from where `this` lives. Device and constant
        memory are both global memory here; a device overload is preferred there."""
        tests = {"threadgroup": "__isShared(this)", "device": "__isGlobal(this)",
                 "constant": "__isGlobal(this)", "thread": "__isLocal(this)"}
        by_space = {(m.space or "thread"): m for m in reversed(methods)}
        order = [sp for sp in ("threadgroup", "device", "constant", "thread") if sp in by_space]
        fallback = by_space.get("thread", by_space[order[-1]])
        text = "{\n"
        for space in order:
            if by_space[space] is not fallback:
                text += f"    if ({tests[space]}) " + self.block(by_space[space].body, 2) + "\n"
        return text + "    " + self.block(fallback.body, 2) + "\n  }"

    def function(self, f: ast.FunctionDef, kernel: bool = False, indent: int = 0) -> str:
        template = self.template_header(f.template_params)
        params = ", ".join(self.param(p) for p in f.params)
        ret = self.type_name(f.return_type)
        const = " const" if isinstance(f, ast.MemberFunction) and f.const else ""
        inline = "__forceinline__" if kernel else "inline"
        head = f"{template}__device__ {inline} {ret} {f.name}({params}){const}"
        if f.body is None:
            return head + ";\n"
        # Overloads on the address space alone (`device T*` and `constant T*`) print alike:
        # CUDA's generic pointers need only the first.
        if indent == 0 and head in self.signatures:
            return ""
        self.signatures.add(head)
        return head + " " + self.block(f.body, indent) + "\n"

    def param(self, p: ast.Param) -> str:
        name = p.name or ""
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
        params, args, buffers = [], [], []
        for p in kernel.params:
            attribute = next((a.name for a in p.attributes if a.name != "buffer"), None)
            if attribute is not None:
                args.append(f"attribute_as<{self.type_name(p.type)}>::from("
                            f"info.{attribute})")
                continue
            if not any(a.name == "buffer" for a in p.attributes):
                raise _Untranslatable(f"the kernel parameter '{p.name}' without an attribute", p)
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
            f"  {callee}(" + ", ".join(args) + ");\n}\n"
        )
        return text, tuple(buffers)

    # --- types -----------------------------------------------------------------------------

    def type_name(self, t: ast.Node) -> str:
        return self.declare(t, "").strip()

    def named(self, t: ast.NamedType, drop_const: bool = False) -> str:
        name = _TYPE_NAMES.get(t.name, t.name)
        if t.name == "double":
            raise _Untranslatable("'double' (Metal has no double)", t)
        if t.template_args is not None:
            name += "<" + ", ".join(self.template_arg(a) for a in t.template_args) + ">"
        return ("const " if t.const and not drop_const else "") + name

    def declare(self, t: ast.Node, name: str, drop_const: bool = False) -> str:
        """C declarator syntax for `name` of type `t`, address spaces dropped."""
        if isinstance(t, ast.NamedType):
            return f"{self.named(t, drop_const)} {name}".rstrip()
        if isinstance(t, ast.PointerType):
            inner = f"*{' const ' if t.const else ''}{name}"
            if isinstance(t.pointee, ast.ArrayType):
                inner = f"({inner})"
            return self.declare(t.pointee, inner, drop_const)
        if isinstance(t, ast.ReferenceType):
            inner = f"&{name}"
            if isinstance(t.referee, ast.ArrayType):
                inner = f"({inner})"
            return self.declare(t.referee, inner, drop_const)
        if isinstance(t, ast.ArrayType):
            size = self.expr(t.size) if t.size is not None else ""
            return self.declare(t.element, f"{name}[{size}]", drop_const)
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
        inner = "".join(self.statement(s, indent + 1) for s in c.items)
        return "{\n" + inner + pad + "}"

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
            return f"{self.name(e.func)}({', '.join(self.expr(a) for a in e.args)})"
        if isinstance(e, ast.MethodCall):
            dot = "->" if e.arrow else "."
            return f"{self.expr(e.base)}{dot}{e.name}({', '.join(self.expr(a) for a in e.args)})"
        if isinstance(e, ast.Construct):
            args = ", ".join(self.expr(a) for a in e.args)
            name = self.type_name(e.type)
            if " " in name:
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
        if isinstance(e, ast.InitList):
            return "{" + ", ".join(self.expr(i) for i in e.items) + "}"
        raise _Untranslatable(f"the expression '{type(e).__name__}'", e)

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
        qualifier = n.qualifier
        text = f"{qualifier}::{n.name}" if qualifier else n.name
        if n.template_args is not None:
            text += "<" + ", ".join(self.template_arg(a) for a in n.template_args) + ">"
        return text

    def member(self, e: ast.Member, assigned: bool) -> str:
        base = self.expr(e.base, assigned)
        if e.arrow:
            return f"{base}->{e.name}"
        if _SWIZZLE.match(e.name) and e.name not in self.members:
            indices = ", ".join(str(_COMPONENT[c]) for c in e.name)
            func = "swizzle_ref" if assigned else "swizzle"
            return f"{func}<{indices}>({base})"
        return f"{base}.{e.name}"
