"""Random programs that mean the same in MSL and in C, and a harness running both sides.

The real-compiler oracle: one body text is run by metalsim inside a kernel and compiled by gcc as
the body of a C function called once per thread. The generator only writes code whose C meaning
is defined under `-fwrapv` and that MSL means identically: divisors are guarded against 0 and
INT_MIN / -1, shift counts are masked in the text, float -> int casts are clamped to the target's
range (NaN -> 0) in the text, and float literals always carry the `f` suffix.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

import mlx.core as mx
import numpy as np

import metalsim

N_THREADS = 64
_T = TypeVar("_T")


# --- types -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CType:
    """A scalar type: its spelling (MSL, and C with the typedefs of `C_PRELUDE`) and storage."""

    name: str
    np_dtype: np.dtype
    mx_dtype: mx.Dtype
    kind: str          # "bool", "int" or "float"
    signed: bool
    bits: int
    short: str         # prefix of variable names

    @property
    def is_float(self) -> bool:
        return self.kind == "float"


def _ct(name: str, dtype: str, mxd: mx.Dtype, kind: str, signed: bool, short: str) -> CType:
    npd = np.dtype(dtype)
    return CType(name, npd, mxd, kind, signed, 8 * npd.itemsize, short)


TYPES: dict[str, CType] = {
    t.name: t
    for t in (
        _ct("bool", "bool", mx.bool_, "bool", False, "b"),
        _ct("char", "int8", mx.int8, "int", True, "c"),
        _ct("uchar", "uint8", mx.uint8, "int", False, "uc"),
        _ct("short", "int16", mx.int16, "int", True, "s"),
        _ct("ushort", "uint16", mx.uint16, "int", False, "us"),
        _ct("int", "int32", mx.int32, "int", True, "n"),
        _ct("uint", "uint32", mx.uint32, "int", False, "u"),
        _ct("long", "int64", mx.int64, "int", True, "l"),
        _ct("ulong", "uint64", mx.uint64, "int", False, "ul"),
        _ct("float", "float32", mx.float32, "float", True, "f"),
    )
}
INT_TYPES = [t for t in TYPES.values() if t.kind == "int"]
BOOL, INT, LONG, FLOAT = TYPES["bool"], TYPES["int"], TYPES["long"], TYPES["float"]

# The storage element type of each input/output spelled in C (the MSL side gets MLX's own).
_C_STORAGE = {"bool": "bool", "char": "int8_t", "uchar": "uint8_t", "short": "int16_t",
              "ushort": "uint16_t", "int": "int32_t", "uint": "uint32_t", "long": "int64_t",
              "ulong": "uint64_t", "float": "float"}

C_PRELUDE = """\
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
typedef uint8_t uchar;
typedef uint16_t ushort;
typedef uint32_t uint;
typedef uint64_t ulong;
"""
# -frounding-math: even at -O0, gcc 12 folds `0.0f - (float)int_var` into `-(float)int_var`,
# which is -0.0 where IEEE (and Metal) give +0.0 for an int of 0; this keeps the subtraction.
GCC_FLAGS = ["-O0", "-fwrapv", "-ffp-contract=off", "-fexcess-precision=standard", "-msse2",
             "-mfpmath=sse", "-frounding-math", "-w", "-pipe"]


def promote(t: CType) -> CType:
    """The integer promotion: bool and the 8/16-bit types become int."""
    if t.kind == "bool" or (t.kind == "int" and t.bits < 32):
        return INT
    return t


def common(a: CType, b: CType) -> CType:
    """The usual arithmetic conversions of C (identical in C++ for these types)."""
    if a.is_float or b.is_float:
        return FLOAT
    a, b = promote(a), promote(b)
    if a == b:
        return a
    if a.signed == b.signed:
        return a if a.bits >= b.bits else b
    u, s = (a, b) if not a.signed else (b, a)
    if u.bits >= s.bits:
        return u
    return s  # a signed type wider than the unsigned one (here: long with uint)


def conditional_type(a: CType, b: CType) -> CType:
    """The type of `c ? a : b` in C++: the operands' type when equal, else the common type."""
    return a if a == b else common(a, b)


def type_min_text(t: CType) -> str:
    """The minimum of a signed 32/64-bit type as a constant expression."""
    return "(-2147483647 - 1)" if t.bits == 32 else "(-9223372036854775807L - 1L)"


# Largest-magnitude float literals whose truncation still fits each integer type.
_FLOAT_CLAMP = {
    "char": ("-128.0f", "127.0f"), "uchar": ("0.0f", "255.0f"),
    "short": ("-32768.0f", "32767.0f"), "ushort": ("0.0f", "65535.0f"),
    "int": ("-2147483648.0f", "2147483520.0f"), "uint": ("0.0f", "4294967040.0f"),
    "long": ("-9223372036854775808.0f", "9223371487098961920.0f"),
    "ulong": ("0.0f", "18446742974197923840.0f"),
}


def clamp_float_for(target: CType, text: str) -> str:
    """`text` (a float expression) mapped into `target`'s range, NaN to 0, without library calls."""
    lo, hi = _FLOAT_CLAMP[target.name]
    a = f"({text})"
    return f"({a} != {a} ? 0.0f : ({a} > {hi} ? {hi} : ({a} < {lo} ? {lo} : {a})))"


def cast_text(target: CType, text: str, source: CType) -> str:
    """An explicit cast `(target)(text)` that is defined in C for every value of `source`."""
    if source.is_float and target.kind == "int":
        text = clamp_float_for(target, text)
    return f"(({target.name})({text}))"


# --- choices ---------------------------------------------------------------------------------


class Chooser(Protocol):
    """The source of every random decision: hypothesis' `draw`, or a seeded `random.Random`."""

    def integer(self, lo: int, hi: int) -> int: ...


def pick(ch: Chooser, seq: Sequence[_T]) -> _T:
    """An element of `seq` (lists put the simplest choices first)."""
    return seq[ch.integer(0, len(seq) - 1)]


class DrawChooser:
    """Choices drawn through hypothesis (so its database replays failing examples)."""

    def __init__(self, draw: Callable) -> None:
        from hypothesis import strategies as st

        self._draw, self._st = draw, st

    def integer(self, lo: int, hi: int) -> int:
        return self._draw(self._st.integers(lo, hi))


class RandomChooser:
    """Choices from a seeded `random.Random` (for exploring outside hypothesis)."""

    def __init__(self, seed: int) -> None:
        import random

        self._rng = random.Random(seed)

    def integer(self, lo: int, hi: int) -> int:
        return self._rng.randint(lo, hi)


# --- expressions -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Var:
    """A variable in scope; `length` > 0 makes it a local array (a power of two long)."""

    name: str
    type: CType
    mutable: bool = True
    length: int = 0


@dataclass(frozen=True)
class Function:
    """A helper function defined in the header (pure: scalar parameters by value)."""

    name: str
    ret: CType
    params: tuple[CType, ...]


@dataclass(frozen=True)
class Ex:
    """An expression's text (fully parenthesised) and its static type."""

    text: str
    type: CType


# Float literals, spelled variously; the last ones need a single correct decimal -> float
# rounding (going through double first rounds them wrongly).
_FLOAT_LITERALS = ["1.0f", "0.5f", "2.0f", "0.0f", "3.25f", "0.1f", "1e6f", "16777217.0f",
                   "255.5f", "1e-3f", "3.4e38f", "1e-40f", "2147483648.0f", "7.0f", ".5f",
                   "5.f", "1.5e+3f", "1E-3F", "2.5F", "1.0000000596046448f",
                   "16777217.000000001f"]
_INT_LITERALS = [0, 1, 2, 3, 7, 8, 31, 37, 100, 127, 128, 255, 256, 1000, 32767, 65535,
                 2147483647, 2147483648, 4294967295, 4294967296, 9223372036854775807]
_INT_SUFFIXES = ["", "u", "L", "ul", "U", "l", "UL", "lu", "LU", "uL"]
# Character literals: `char` in MSL (C++), `int` in C; the values agree (char is signed).
_CHAR_LITERALS = ["'a'", "'0'", "'\\n'", "'\\''", "'\\x7f'", "'\\xff'", "'\\x80'", "'\\377'"]


def int_literal_type(value: int, suffix: str, hex_: bool) -> CType:
    """The type C (LP64) and MSL give an integer literal (`[lex.icon]`, no `long long`)."""
    key = "".join(sorted(suffix.lower(), reverse=True))    # "lu" is "ul"
    candidates = {
        ("", False): ["int", "long"], ("", True): ["int", "uint", "long", "ulong"],
        ("u", False): ["uint", "ulong"], ("u", True): ["uint", "ulong"],
        ("l", False): ["long"], ("l", True): ["long", "ulong"],
        ("ul", False): ["ulong"], ("ul", True): ["ulong"],
    }[(key, hex_)]
    for name in candidates:
        t = TYPES[name]
        if value <= np.iinfo(t.np_dtype).max:
            return t
    raise ValueError(value)


class ExprGen:
    """Random expressions over the variables in scope, every one defined in C with `-fwrapv`."""

    def __init__(self, ch: Chooser, scope: list[Var], functions: Sequence[Function] = ()) -> None:
        self.ch = ch
        self.scope = scope
        self.functions = functions

    def literal(self, want_int: bool) -> Ex:
        ch = self.ch
        kind = pick(ch, ["int", "bool", "float"] if not want_int else ["int", "bool"])
        if kind == "bool":
            return Ex(pick(ch, ["true", "false"]), BOOL)
        if kind == "float":
            return Ex(pick(ch, _FLOAT_LITERALS), FLOAT)
        if ch.integer(0, 7) == 0:
            return Ex(pick(ch, _CHAR_LITERALS), TYPES["char"])
        value = pick(ch, _INT_LITERALS)
        suffix = pick(ch, _INT_SUFFIXES)
        base = pick(ch, ["dec", "dec", "hex", "oct"])
        if suffix in ("", "l", "L") and base == "dec" and value > 2**63 - 1:
            suffix += "u"
        digits = {"dec": str(value), "hex": f"0x{value:X}", "oct": f"0{value:o}"}[base]
        return Ex(digits + suffix, int_literal_type(value, suffix, base != "dec"))

    def variable(self, want_int: bool) -> Ex | None:
        vs = [v for v in self.scope if not (want_int and v.type.is_float)]
        if not vs:
            return None
        v = pick(self.ch, vs)
        return Ex(self.lvalue(v), v.type)

    def lvalue(self, v: Var) -> str:
        """`v`'s name, or an element of array `v` at a masked (so in-bounds) random index."""
        if not v.length:
            return v.name
        return f"{v.name}[{self.gen(1, want_int=True).text} & {v.length - 1}]"

    def call(self, depth: int) -> Ex:
        """A call of a header function; arguments convert to the parameter types as C does."""
        f = pick(self.ch, self.functions)
        args = []
        for t in f.params:
            a = self.gen(depth)
            args.append(cast_text(t, a.text, a.type) if a.type.is_float else a.text)
        return Ex(f"{f.name}({', '.join(args)})", f.ret)

    def leaf(self, want_int: bool) -> Ex:
        if self.ch.integer(0, 3) != 3:
            v = self.variable(want_int)
            if v is not None:
                return v
        return self.literal(want_int)

    def gen(self, depth: int, want_int: bool = False) -> Ex:
        """An expression of at most `depth` operator levels; `want_int`: no float type."""
        ch = self.ch
        if depth <= 0 or ch.integer(0, 4) == 0:
            return self.leaf(want_int)
        form = pick(ch, ["arith", "cast", "unary", "compare", "bitwise", "shift", "div",
                         "cond", "logic", "arith", "cast", "call"])
        d = depth - 1
        if form == "call":
            if not self.functions or (want_int and all(f.ret.is_float for f in self.functions)):
                form = "arith"
            else:
                e = self.call(d)
                while want_int and e.type.is_float:
                    e = self.call(d)
                return e
        if form == "arith":
            a, b = self.gen(d, want_int), self.gen(d, want_int)
            op = pick(ch, ["+", "-", "*"])
            return Ex(f"({a.text} {op} {b.text})", common(a.type, b.type))
        if form == "unary":
            a = self.gen(d, want_int)
            ops = ["-", "!", "+"] if a.type.is_float else ["-", "~", "!", "+"]
            op = pick(ch, ops)
            t = BOOL if op == "!" else promote(a.type)
            return Ex(f"({op}{a.text})", t)
        if form == "compare":
            a, b = self.gen(d), self.gen(d)
            op = pick(ch, ["<", "==", ">", "<=", ">=", "!="])
            return Ex(f"({a.text} {op} {b.text})", BOOL)
        if form == "logic":
            a, b = self.gen(d), self.gen(d)
            op = pick(ch, ["&&", "||"])
            return Ex(f"({a.text} {op} {b.text})", BOOL)
        if form == "bitwise":
            a, b = self.gen(d, True), self.gen(d, True)
            op = pick(ch, ["&", "|", "^"])
            return Ex(f"({a.text} {op} {b.text})", common(a.type, b.type))
        if form == "shift":
            a, b = self.gen(d, True), self.gen(d, True)
            t = promote(a.type)
            op = pick(ch, ["<<", ">>"])
            return Ex(f"({a.text} {op} ({b.text} & {t.bits - 1}))", t)
        if form == "div":
            # The guard repeats its operands: keep them shallow.
            a, b = self.gen(min(d, 1), want_int), self.gen(min(d, 1), want_int)
            t = common(a.type, b.type)
            op = "/" if t.is_float else pick(ch, ["/", "%"])
            return Ex(guarded_division(a, op, b.text, t), t)
        if form == "cond":
            c, a, b = self.gen(d), self.gen(d, want_int), self.gen(d, want_int)
            return Ex(f"({c.text} ? {a.text} : {b.text})", conditional_type(a.type, b.type))
        # cast
        target = pick(ch, INT_TYPES + [BOOL] + ([] if want_int else [FLOAT]))
        a = self.gen(min(d, 1)) if target.kind == "int" else self.gen(d)
        return Ex(cast_text(target, a.text, a.type), target)


def guarded_divisor(a_text: str, b_text: str, t: CType) -> str:
    """The divisor `b` of an integer `a / b` in type `t`, replaced by 1 where C is undefined."""
    b = f"(({t.name})({b_text}))"
    bad = f"{b} == 0"
    if t.signed:
        bad = f"({bad} || ({b} == -1 && (({t.name})({a_text})) == {type_min_text(t)}))"
    return f"({bad} ? (({t.name})1) : {b_text})"


def guarded_division(a: Ex, op: str, b_text: str, t: CType) -> str:
    """`a op b` computed in type `t`, defined in C for every value (floats need no guard)."""
    if t.is_float:
        return f"({a.text} {op} {b_text})"
    return f"({a.text} {op} {guarded_divisor(a.text, b_text, t)})"


# --- statements ------------------------------------------------------------------------------


def input_vars() -> list[Var]:
    """Two locals of each type, initialised from the thread's elements of the inputs."""
    return [Var(f"{t.short}{k}", t) for t in TYPES.values() for k in (0, 1)]


def input_decls() -> str:
    return "".join(
        f"{t.name} {t.short}{k} = in_{t.name}[i + {k * N_THREADS}];\n"
        for t in TYPES.values() for k in (0, 1)
    )


class StmtGen:
    """Statements: declarations, compound assignments, ++/--, and (for kernels) control flow."""

    def __init__(self, ch: Chooser, scope: list[Var], functions: Sequence[Function] = ()) -> None:
        self.ch = ch
        self.scope = list(scope)
        self.functions = list(functions)
        self.counter = 0

    def gen(self, scope: list[Var] | None = None) -> ExprGen:
        return ExprGen(self.ch, self.scope if scope is None else scope, self.functions)

    def expr(self, depth: int, want_int: bool = False, scope: list[Var] | None = None) -> Ex:
        return self.gen(scope).gen(depth, want_int)

    def lvalue(self, v: Var) -> str:
        return self.gen().lvalue(v)

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def result(self, t: CType, text: str) -> str:
        """Declare a new local `T r = text;` and keep it in scope (and in the outputs)."""
        v = Var(self.fresh("r"), t)
        self.scope.append(v)
        return f"{t.name} {v.name} = {text};\n"

    def declaration(self, depth: int) -> str:
        """`T r = E;` with T the type of E or an implicit conversion C defines for E's values."""
        e = self.expr(depth)
        if e.type.is_float:
            t = pick(self.ch, [e.type, BOOL])
        else:
            t = pick(self.ch, [e.type, *TYPES.values()])
        return self.result(t, e.text)

    def mutable_vars(self, allow_bool: bool = True) -> list[Var]:
        return [v for v in self.scope if v.mutable and (allow_bool or v.type.kind != "bool")]

    def compound(self, depth: int) -> str:
        """`v op= E`, guarded like the binary operator it stands for."""
        v = pick(self.ch, self.mutable_vars())
        lv = self.lvalue(v)
        if v.type.kind == "bool":
            e = self.expr(depth, want_int=True)
            return f"{lv} {pick(self.ch, ['|', '&', '^'])}= {e.text};\n"
        if v.type.is_float:
            e = self.expr(depth)
            return f"{lv} {pick(self.ch, ['+', '-', '*', '/'])}= {e.text};\n"
        e = self.expr(depth, want_int=True)
        op = pick(self.ch, ["+", "-", "*", "&", "|", "^", "<<", ">>", "/", "%"])
        if op in ("<<", ">>"):
            return f"{lv} {op}= ({e.text} & {promote(v.type).bits - 1});\n"
        if op in ("/", "%"):
            t = common(v.type, e.type)
            return f"{lv} {op}= {guarded_divisor(lv, e.text, t)};\n"
        return f"{lv} {op}= {e.text};\n"

    def incdec_text(self, v: Var) -> str:
        lv = self.lvalue(v)
        return pick(self.ch, [f"{lv}++", f"--{lv}", f"++{lv}", f"{lv}--"])

    def incdec(self, depth: int) -> str:
        """`v++;` alone, or its value used in a declaration whose other operand avoids `v`."""
        v = pick(self.ch, self.mutable_vars(allow_bool=False))
        form = self.incdec_text(v)
        if self.ch.integer(0, 1) == 0:
            return f"{form};\n"
        e = self.expr(depth, scope=[w for w in self.scope if w.name != v.name])
        floaty = v.type.is_float or e.type.is_float
        op = pick(self.ch, ["+", "-", "*"] if floaty else ["+", "-", "*", "^", "&", "|"])
        return self.result(common(v.type, e.type), f"(({form}) {op} {e.text})")

    def side_effect_value(self, v: Var) -> str:
        """An expression that modifies `v` and yields its new (or, postfix, old) value: ++/--,
        a compound assignment or an assignment (whose value is the converted one)."""
        form = self.ch.integer(0, 2)
        if v.type.kind != "bool" and form == 0:
            return self.incdec_text(v)
        if form == 1:
            e = self.expr(1)
            return f"{self.lvalue(v)} = {cast_text(v.type, e.text, e.type)}"
        if v.type.kind == "bool":
            return f"{self.lvalue(v)} |= {self.expr(1, want_int=True).text}"
        return f"{self.lvalue(v)} += {self.expr(1, want_int=not v.type.is_float).text}"

    def lazy(self, depth: int) -> str:
        """A side effect that only some lanes perform: under `?:`, `&&` or `||`."""
        v = pick(self.ch, self.mutable_vars())
        others = [w for w in self.scope if w.name != v.name]
        c = self.expr(depth, scope=others)
        effect = f"({self.side_effect_value(v)})"
        form = pick(self.ch, ["?:", "&&", "||"])
        if form != "?:":
            return self.result(BOOL, f"({c.text} {form} {effect})")
        e = self.expr(depth - 1, scope=others)
        text = (f"({c.text} ? {effect} : {e.text})" if self.ch.integer(0, 1)
                else f"({c.text} ? {e.text} : {effect})")
        return self.result(conditional_type(v.type, e.type), text)   # the effect has v's type

    def comma(self, depth: int) -> str:
        """`T r = (effect, E);`: the comma sequences the effect before E, which may read `v`."""
        effect = self.side_effect_value(pick(self.ch, self.mutable_vars()))
        e = self.expr(depth)
        return self.result(e.type, f"({effect}, {e.text})")

    def assignment(self, depth: int) -> str:
        """`v = E;` or `v = (T)(E);`, converting as C defines it."""
        v = pick(self.ch, self.mutable_vars())
        lv = self.lvalue(v)
        e = self.expr(depth)
        if (e.type.is_float and v.type.kind == "int") or self.ch.integer(0, 2) == 0:
            return f"{lv} = {cast_text(v.type, e.text, e.type)};\n"
        return f"{lv} = {e.text};\n"


# --- control flow (loop kernels) -------------------------------------------------------------

WRITE_MARK = "@WRITE_OUTPUTS@"


class KernelGen(StmtGen):
    """Statement trees with loops, switch, break/continue and early returns; lanes diverge.

    In a kernel (`ret` None) a `return` first writes the outputs (`WRITE_MARK`); in a helper
    function it returns a value of type `ret`.
    """

    def __init__(self, ch: Chooser, scope: list[Var], max_depth: int = 3,
                 functions: Sequence[Function] = (), ret: CType | None = None) -> None:
        super().__init__(ch, scope, functions)
        self.max_depth = max_depth
        self.ret = ret
        self.shadowing = 0    # blocks open that hide an outer variable (no kernel return there)

    def return_value(self) -> str:
        assert self.ret is not None
        e = self.expr(2)
        return cast_text(self.ret, e.text, e.type)

    def block(self, depth: int, loops: int, n_max: int = 2) -> str:
        """A braced block's statements. It may declare locals, visible to its end only, some
        shadowing an outer variable (with another type) until then."""
        saved, shadowing = list(self.scope), self.shadowing
        declared: set[str] = set()  # a name can be declared only once per block
        text = ""
        for _ in range(self.ch.integer(1, n_max)):
            if self.ch.integer(0, 5) == 0:
                plain = [w for w in self.scope if w.mutable and not w.length and w in saved
                         and w.name not in declared]
                if self.ch.integer(0, 1) == 0 and plain:
                    old = pick(self.ch, plain)
                    self.scope.remove(old)    # from here on (initialiser included) it is hidden
                    name = old.name
                    self.shadowing = shadowing + 1   # the output writes would see the new one
                else:
                    name = self.fresh("t")
                e = self.expr(2)
                t = e.type if e.type.is_float else pick(self.ch, [e.type, *INT_TYPES])
                text += f"{t.name} {name} = {e.text};\n"
                declared.add(name)
                self.scope.append(Var(name, t))
            text += self.stmt(depth, loops)
        self.scope[:] = saved
        self.shadowing = shadowing
        return text

    def cond(self) -> str:
        return self.expr(2).text

    def bound(self, loops: int) -> str:
        mask = 7 if loops == 0 else 3
        return f"({self.expr(1, want_int=True).text} & {mask})"

    def stmt(self, depth: int, loops: int) -> str:
        ch = self.ch
        kinds = ["assign", "compound", "incdec", "if"]
        if depth < self.max_depth:
            kinds += ["ifelse", "switch"] + (["loop", "loop"] if loops < 2 else [])
        if loops:
            kinds += ["break", "continue"]
        if self.ret is not None or not self.shadowing:
            kinds.append("return")
        kind = pick(ch, kinds)
        if kind == "assign":
            return self.assignment(2)
        if kind == "compound":
            return self.compound(2)
        if kind == "incdec":
            return f"{self.incdec_text(pick(ch, self.mutable_vars(allow_bool=False)))};\n"
        if kind == "if":
            return f"if ({self.cond()}) {{\n{self.block(depth + 1, loops)}}}\n"
        if kind == "ifelse":
            text = f"if ({self.cond()}) {{\n{self.block(depth + 1, loops)}}}"
            for _ in range(ch.integer(0, 2)):
                text += f" else if ({self.cond()}) {{\n{self.block(depth + 1, loops)}}}"
            return text + f" else {{\n{self.block(depth + 1, loops)}}}\n"
        if kind in ("break", "continue"):
            return f"if ({self.cond()}) {kind};\n"
        if kind == "return" and self.ret is not None:
            return f"if ({self.cond()}) return {self.return_value()};\n"
        if kind == "return":
            return f"if ({self.cond()}) {{\n{WRITE_MARK}return;\n}}\n"
        if kind == "switch":
            return self.switch(depth, loops)
        return self.loop(depth, loops)

    def switch(self, depth: int, loops: int) -> str:
        ch = self.ch
        labels = sorted({ch.integer(-4, 7) for _ in range(ch.integer(1, 4))})
        arms = [f"case {k}:" for k in labels]
        if ch.integer(0, 2) != 0:
            arms.insert(ch.integer(0, len(arms)), "default:")
        selector = self.expr(2, want_int=True).text
        # `% 5` keeps the sign of a negative selector, so `case -1:` can match too.
        text = f"switch ({selector} {pick(ch, ['&', '%'])} {pick(ch, [7, 5])}) {{\n"
        for k, arm in enumerate(arms):
            body = "".join(self.stmt(depth + 1, loops) for _ in range(ch.integer(0, 2)))
            brk = "break;\n" if ch.integer(0, 2) != 0 else ""   # else fall through
            if not body + brk and k == len(arms) - 1:
                brk = ";\n"    # a label must label a statement
            text += f"{arm}\n{body}{brk}"
        return text + "}\n"

    def loop(self, depth: int, loops: int) -> str:
        ch = self.ch
        form = pick(ch, ["for", "while", "do", "fordown"])
        name = self.fresh("j")
        bound = self.bound(loops)
        t = pick(ch, [INT, TYPES["uint"], TYPES["uchar"], TYPES["short"], LONG, TYPES["ulong"]])
        counter = Var(name, t, mutable=False)
        self.scope.append(counter)
        body = self.block(depth + 1, loops + 1)
        self.scope.remove(counter)
        if form == "for":
            return f"for ({t.name} {name} = 0; {name} < {bound}; ++{name}) {{\n{body}}}\n"
        if form == "fordown":
            return f"for ({t.name} {name} = {bound}; {name} > 0; {name}--) {{\n{body}}}\n"
        init = f"{{\n{t.name} {name} = 0;\n"
        if form == "while":
            return f"{init}while ({name} < {bound}) {{\n++{name};\n{body}}}\n}}\n"
        return f"{init}do {{\n{name}++;\n{body}}} while ({name} < {bound});\n}}\n"


# --- inputs ----------------------------------------------------------------------------------


def _special_ints(t: CType) -> list[int]:
    info = np.iinfo(t.np_dtype)
    cands = [0, 1, -1, 2, -2, 7, -7, 8, 31, 32, 33, 63, 64, 127, 128, 200, 255, 256, 32767,
             32768, 65535, 65536, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**63 - 1,
             info.min, info.min + 1, info.max, info.max - 1]
    return [v for v in cands if info.min <= v <= info.max]


_SPECIAL_FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1e6, -1e6, 16777217.0, 2147483648.0,
                   -2147483904.0, 4294967296.0, 3e38, -3e38, 1e-40, -1e-45, 255.5, -128.5,
                   65535.9, 9.3e18, 1.9e19, np.inf, -np.inf, np.nan]


def make_inputs(seed: int) -> dict[str, np.ndarray]:
    """Per-type input arrays (2 elements per thread) mixing boundary and random values."""
    rng = np.random.default_rng(seed)
    n = 2 * N_THREADS
    out: dict[str, np.ndarray] = {}
    for t in TYPES.values():
        which = rng.integers(0, 10, size=n)
        if t.kind == "bool":
            out[t.name] = rng.integers(0, 2, size=n).astype(bool)
            continue
        if t.kind == "int":
            info = np.iinfo(t.np_dtype)
            special = np.array(_special_ints(t), dtype=object)[
                rng.integers(0, len(_special_ints(t)), size=n)]
            small = rng.integers(max(info.min, -40), 41, size=n)
            full = rng.integers(info.min, info.max, size=n, dtype=t.np_dtype, endpoint=True)
            values = [int(special[k]) if w < 4 else int(small[k]) if w < 7 else int(full[k])
                      for k, w in enumerate(which)]
            out[t.name] = np.array(values, dtype=t.np_dtype)
            continue
        special = np.array(_SPECIAL_FLOATS)[rng.integers(0, len(_SPECIAL_FLOATS), size=n)]
        small = rng.integers(-64, 65, size=n) / 4.0
        wide = rng.choice([-1.0, 1.0], size=n) * 10.0 ** rng.uniform(-8, 12, size=n)
        values = np.where(which < 3, special, np.where(which < 7, small, wide))
        out[t.name] = values.astype(np.float32)
    return out


# --- running both sides ----------------------------------------------------------------------


@dataclass
class Program:
    """A body shared by both sides (or one text per side) and its per-type output slots."""

    msl_body: str
    slots: dict[str, int]              # type name -> outputs per thread
    c_body: str | None = None
    header: str = ""                   # helper functions, the same text on both sides
    threadgroup: tuple[int, int, int] = (32, 1, 1)

    def __repr__(self) -> str:   # hypothesis prints it; the failure message shows the text
        return (f"Program(<{self.msl_body.count(chr(10))} lines of body, "
                f"{self.header.count(chr(10))} of header>)")

    @property
    def c_text(self) -> str:
        return self.c_body if self.c_body is not None else self.msl_body


def output_writes(values: list[Var]) -> tuple[str, dict[str, int]]:
    """Statements storing `values` (arrays element by element) in the per-type outputs, and
    the number of slots per thread of each output."""
    slots: dict[str, int] = {}
    index: list[tuple[str, CType, int]] = []
    for v in values:
        for text in [f"{v.name}[{k}]" for k in range(v.length)] if v.length else [v.name]:
            index.append((text, v.type, slots.get(v.type.name, 0)))
            slots[v.type.name] = slots.get(v.type.name, 0) + 1
    writes = "".join(f"o_{t.name}[i * {slots[t.name]} + {k}] = {text};\n"
                     for text, t, k in index)
    return writes, slots


def _c_program(prog: Program) -> str:
    lines = [C_PRELUDE, f"#define N {N_THREADS}"]
    for t in TYPES.values():
        lines.append(f"static {_C_STORAGE[t.name]} in_{t.name}[{2 * N_THREADS}];")
    for name, k in prog.slots.items():
        lines.append(f"static {_C_STORAGE[name]} o_{name}[{N_THREADS * k}];")
    lines.append(prog.header)
    lines.append("static void kernel_body(uint i) {\n" + prog.c_text + "}")
    lines.append("int main(void) {")
    for t in TYPES.values():
        lines.append(f"  if (fread(in_{t.name}, sizeof in_{t.name}, 1, stdin) != 1) return 2;")
    lines.append("  for (uint i = 0; i < N; ++i) kernel_body(i);")
    for name in prog.slots:
        lines.append(f"  fwrite(o_{name}, sizeof o_{name}, 1, stdout);")
    lines.append("  return 0;\n}\n")
    return "\n".join(lines)


class GccRejected(AssertionError):
    """The C side failed: gcc rejected the program or it crashed (a generator bug, or a
    reduction gone too far), so there is no reference result."""


_CACHE_DIR = tempfile.mkdtemp(prefix="metalsim-gcc-oracle-")
atexit.register(shutil.rmtree, _CACHE_DIR, ignore_errors=True)
_COMPILED: dict[str, str] = {}


def compile_c(source: str) -> str:
    """Compile `source` with gcc (cached by text) and return the executable's path."""
    key = hashlib.sha256(source.encode()).hexdigest()[:20]
    if key in _COMPILED:
        return _COMPILED[key]
    src = os.path.join(_CACHE_DIR, f"{key}.c")
    exe = os.path.join(_CACHE_DIR, key)
    with open(src, "w") as fh:
        fh.write(source)
    proc = subprocess.run(["gcc", *GCC_FLAGS, src, "-o", exe], capture_output=True, text=True)
    if proc.returncode != 0:
        raise GccRejected(f"gcc rejected the generated C:\n{proc.stderr}\n{source}")
    _COMPILED[key] = exe
    return exe


def run_c(prog: Program, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The per-type outputs of the C program, shaped (threads, slots)."""
    exe = compile_c(_c_program(prog))
    stdin = b"".join(inputs[t].tobytes() for t in TYPES)
    proc = subprocess.run([exe], input=stdin, capture_output=True, timeout=20)
    if proc.returncode != 0:
        raise GccRejected(f"the C program failed ({proc.returncode}): {proc.stderr!r}")
    out, pos = {}, 0
    for name, k in prog.slots.items():
        dt = TYPES[name].np_dtype
        size = N_THREADS * k * dt.itemsize
        out[name] = np.frombuffer(proc.stdout[pos : pos + size], dtype=dt).reshape(N_THREADS, k)
        pos += size
    return out


def kernel_source(prog: Program) -> str:
    return "uint i = thread_position_in_grid.x;\n" + prog.msl_body


def run_sim(prog: Program, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The per-type outputs of the simulated kernel, shaped (threads, slots)."""
    names = list(prog.slots)
    kernel = metalsim.metal_kernel("oracle", [f"in_{t}" for t in TYPES],
                                   [f"o_{n}" for n in names], kernel_source(prog),
                                   header=prog.header)
    run = metalsim.simulate(
        kernel,
        inputs=[mx.array(inputs[t]) for t in TYPES],
        output_shapes=[(N_THREADS * prog.slots[n],) for n in names],
        output_dtypes=[TYPES[n].mx_dtype for n in names],
        grid=(N_THREADS, 1, 1),
        threadgroup=prog.threadgroup,
    )
    assert not run.report.errors, f"simulator errors: {run.report.errors}\n{prog.msl_body}"
    return {n: np.array(o).reshape(N_THREADS, prog.slots[n]) for n, o in zip(names, run.outputs)}


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise bit equality; any NaN equals any NaN (payloads are not compared)."""
    if a.dtype.kind == "f":
        bits = a.view(np.uint32) == b.view(np.uint32)
        return bits | (np.isnan(a) & np.isnan(b))
    return a == b


def describe_thread(inputs: dict[str, np.ndarray], i: int) -> str:
    return ", ".join(f"{t.short}{k}={inputs[t.name][i + k * N_THREADS]!r}"
                     for t in TYPES.values() for k in (0, 1))


def mismatches(prog: Program, inputs: dict[str, np.ndarray]) -> list[str]:
    """Run both sides; one line per output slot (of a thread) that differs."""
    c_out = run_c(prog, inputs)
    sim_out = run_sim(prog, inputs)
    problems = []
    for name in prog.slots:
        ok = _same(sim_out[name], c_out[name])
        for i, k in zip(*np.nonzero(~ok)):
            problems.append(f"thread {i} o_{name} slot {k}: metalsim {sim_out[name][i, k]!r}, "
                            f"gcc {c_out[name][i, k]!r}   inputs: {describe_thread(inputs, i)}")
    return problems


def failure_kind(prog: Program, inputs: dict[str, np.ndarray]) -> str | None:
    """How `prog` fails: "mismatch", the simulator's exception class, or None if it passes."""
    try:
        return "mismatch" if mismatches(prog, inputs) else None
    except GccRejected:
        return None
    except Exception as exc:
        return type(exc).__name__


def _units(lines: list[str]) -> list[tuple[int, int]]:
    """Deletable line ranges [start, end): simple statements, and whole braced statements (an
    if/else chain, a loop, a switch). Output writes and input reads stay."""
    units = []
    for i, line in enumerate(lines):
        if "o_" in line or "= in_" in line:
            continue
        if line.endswith("{") and not line.startswith("}"):
            depth = 0
            for j in range(i, len(lines)):
                depth += lines[j].count("{") - lines[j].count("}")
                if depth == 0:
                    units.append((i, j + 1))
                    break
        elif line.endswith(";") and line != ";" and "{" not in line and "}" not in line:
            units.append((i, i + 1))
    return units


def reduce_body(prog: Program, inputs: dict[str, np.ndarray], kind: str,
                budget_s: float = 15.0) -> Program:
    """Greedily delete statements from the body while it still fails the same way."""
    deadline = time.monotonic() + budget_s
    lines = prog.msl_body.split("\n")
    progress = True
    while progress and time.monotonic() < deadline:
        progress = False
        for start, end in sorted(_units(lines), key=lambda u: u[0] - u[1]):   # biggest first
            if time.monotonic() >= deadline:
                break
            trial = lines[:start] + lines[end:]
            candidate = replace(prog, msl_body="\n".join(trial), c_body=None)
            if failure_kind(candidate, inputs) == kind:
                lines, progress = trial, True
                break
    return replace(prog, msl_body="\n".join(lines), c_body=None)


def compare(prog: Program, inputs: dict[str, np.ndarray], reduce: bool = True) -> None:
    """Assert that every output slot of every thread is bit-identical on both sides.

    On failure the message shows the body reduced (statements deleted while it still fails
    the same way), then the whole body.
    """
    try:
        problems = mismatches(prog, inputs)
    except GccRejected:
        raise
    except Exception as exc:
        kind = type(exc).__name__
        small = reduce_body(prog, inputs, kind) if reduce and prog.c_body is None else prog
        raise AssertionError(f"metalsim raised {exc!r}\n--- reduced body ---\n"
                             f"{small.msl_body}\n--- body ---\n{prog.msl_body}") from exc
    if problems:
        small = reduce_body(prog, inputs, "mismatch") if reduce and prog.c_body is None else prog
        shown = "\n".join(mismatches(small, inputs)[:6]) if small is not prog else ""
        raise AssertionError(f"{len(problems)} mismatches\n" + "\n".join(problems[:4]) +
                             f"\n--- reduced body ---\n{small.msl_body}\n{shown}\n"
                             f"--- body ---\n{prog.msl_body}")


PURE_STATEMENTS = ("decl", "assign")
SIDE_EFFECT_STATEMENTS = ("compound", "incdec", "lazy", "comma", "decl")


def expression_program(ch: Chooser, n_statements: int, kinds: Sequence[str] = PURE_STATEMENTS,
                       depth: int = 3) -> Program:
    """Straight-line code over the inputs: statements of the given kinds (see `StmtGen`)."""
    gen = StmtGen(ch, input_vars())
    makers = {"decl": gen.declaration, "assign": gen.assignment, "compound": gen.compound,
              "incdec": gen.incdec, "lazy": gen.lazy, "comma": gen.comma}
    body = input_decls()
    for _ in range(n_statements):
        body += makers[pick(ch, kinds)](depth)
    writes, slots = output_writes(gen.scope)
    return Program(body + writes, slots)


def helper_function(ch: Chooser, name: str, earlier: Sequence[Function]) -> tuple[str, Function]:
    """A header function with scalar parameters, divergent control flow and early returns."""
    params = tuple(pick(ch, list(TYPES.values())) for _ in range(ch.integer(1, 3)))
    f = Function(name, pick(ch, list(TYPES.values())), params)
    scope = [Var(f"p{k}", t) for k, t in enumerate(params)]
    locals_ = f"int q = {cast_text(INT, 'p0', params[0])};\nfloat qf = 1.0f;\n"
    gen = KernelGen(ch, [*scope, Var("q", INT), Var("qf", FLOAT)], max_depth=2,
                    functions=earlier, ret=f.ret)
    body = locals_ + "".join(gen.stmt(0, 0) for _ in range(ch.integer(1, 3)))
    plist = ", ".join(f"{t.name} p{k}" for k, t in enumerate(params))
    text = (f"static inline {f.ret.name} {name}({plist}) {{\n{body}"
            f"return {gen.return_value()};\n}}\n")
    return text, f


# Thread-private arrays of the loop kernels: (element type, length).
ARRAYS = (("int", 8), ("float", 4), ("uchar", 8), ("ulong", 4), ("short", 2))


def loop_program(ch: Chooser, n_statements: int, max_depth: int = 2,
                 n_functions: int = 0) -> Program:
    """A kernel with nested loops, switch, break/continue, early returns, local arrays indexed
    per lane and (optionally) calls of helper functions, over the inputs."""
    header, functions = "", []
    for k in range(n_functions):
        text, f = helper_function(ch, f"helper{k}", functions)
        header += text
        functions.append(f)
    inputs = input_vars()
    accs = [Var(f"acc_{t.short}", t) for t in TYPES.values()]
    arrays = [Var(f"arr_{TYPES[t].short}", TYPES[t], length=n) for t, n in ARRAYS]
    gen = KernelGen(ch, inputs + accs, max_depth, functions)
    body = input_decls() + "".join(
        f"{t.name} acc_{t.short} = {'0.0f' if t.is_float else '0'};\n" for t in TYPES.values())
    for a in arrays:   # partly initialised from the inputs, the rest zero
        init = ", ".join(cast_text(a.type, e.text, e.type)
                         for e in (gen.expr(1) for _ in range(ch.integer(0, a.length))))
        body += f"{a.type.name} {a.name}[{a.length}] = {{{init or '0'}}};\n"
    gen.scope += arrays
    body += "".join(gen.stmt(0, 0) for _ in range(n_statements))
    writes, slots = output_writes(inputs + accs + arrays)
    body = body.replace(WRITE_MARK, writes) + writes
    return Program(body, slots, header=header)
