"""Random programs that mean the same in MSL and in C, and a harness running both sides.

The real-compiler oracle: one body text is run by metalsim inside a kernel and compiled by gcc as
the body of a C function called once per thread. The generator only writes code whose C meaning
is defined under `-fwrapv` and that MSL means identically: divisors are guarded against 0 and
INT_MIN / -1, shift counts are masked in the text, float -> int casts are clamped to the target's
range (NaN -> 0) in the text, and float literals always carry the `f` suffix.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
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
GCC_FLAGS = ["-O0", "-fwrapv", "-ffp-contract=off", "-fexcess-precision=standard", "-msse2",
             "-mfpmath=sse", "-w", "-pipe"]


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
    """An element of `seq`; shrinking favours the first ones."""
    return seq[ch.integer(0, len(seq) - 1)]


class DrawChooser:
    """Choices drawn through hypothesis (so failing examples shrink)."""

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
    name: str
    type: CType
    mutable: bool = True


@dataclass(frozen=True)
class Ex:
    """An expression's text (fully parenthesised) and its static type."""

    text: str
    type: CType


_FLOAT_LITERALS = ["1.0f", "0.5f", "2.0f", "0.0f", "3.25f", "0.1f", "1e6f", "16777217.0f",
                   "255.5f", "1e-3f", "3.4e38f", "1e-40f", "2147483648.0f", "7.0f"]
_INT_LITERALS = [0, 1, 2, 3, 7, 8, 31, 37, 100, 127, 128, 255, 256, 1000, 32767, 65535,
                 2147483647, 2147483648, 4294967295, 4294967296, 9223372036854775807]


def int_literal_type(value: int, suffix: str, hex_: bool) -> CType:
    """The type C (LP64) and MSL give an integer literal, for the suffixes used here."""
    candidates = {
        ("", False): ["int", "long"], ("", True): ["int", "uint", "long", "ulong"],
        ("u", False): ["uint", "ulong"], ("u", True): ["uint", "ulong"],
        ("L", False): ["long"], ("L", True): ["long", "ulong"],
        ("ul", False): ["ulong"], ("ul", True): ["ulong"],
    }[(suffix, hex_)]
    for name in candidates:
        t = TYPES[name]
        if value <= np.iinfo(t.np_dtype).max:
            return t
    raise ValueError(value)


class ExprGen:
    """Random expressions over the variables in scope, every one defined in C with `-fwrapv`."""

    def __init__(self, ch: Chooser, scope: list[Var]) -> None:
        self.ch = ch
        self.scope = scope

    def literal(self, want_int: bool) -> Ex:
        ch = self.ch
        kind = pick(ch, ["int", "bool", "float"] if not want_int else ["int", "bool"])
        if kind == "bool":
            return Ex(pick(ch, ["true", "false"]), BOOL)
        if kind == "float":
            return Ex(pick(ch, _FLOAT_LITERALS), FLOAT)
        value = pick(ch, _INT_LITERALS)
        suffix = pick(ch, ["", "u", "L", "ul"])
        hex_ = ch.integer(0, 3) == 0
        if suffix == "" and not hex_ and value > 2**63 - 1:
            suffix = "u"
        text = (hex(value).upper().replace("0X", "0x") if hex_ else str(value)) + suffix
        return Ex(text, int_literal_type(value, suffix, hex_))

    def variable(self, want_int: bool, scope: list[Var] | None = None) -> Ex | None:
        vs = [v for v in (scope or self.scope) if not (want_int and v.type.is_float)]
        if not vs:
            return None
        v = pick(self.ch, vs)
        return Ex(v.name, v.type)

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
                         "cond", "logic", "arith", "cast"])
        d = depth - 1
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

    def __init__(self, ch: Chooser, scope: list[Var]) -> None:
        self.ch = ch
        self.scope = list(scope)
        self.results: list[Var] = []
        self.counter = 0

    def expr(self, depth: int, want_int: bool = False, scope: list[Var] | None = None) -> Ex:
        return ExprGen(self.ch, scope if scope is not None else self.scope).gen(depth, want_int)

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def declaration(self, depth: int) -> str:
        """`T r = E;` with T the type of E or an implicit conversion C defines for E's values."""
        e = self.expr(depth)
        if e.type.is_float:
            t = pick(self.ch, [e.type, BOOL])
        else:
            t = pick(self.ch, [e.type, *TYPES.values()])
        name = self.fresh("r")
        v = Var(name, t)
        self.scope.append(v)
        self.results.append(v)
        return f"{t.name} {name} = {e.text};\n"

    def mutable_vars(self) -> list[Var]:
        return [v for v in self.scope if v.mutable]

    def compound(self, depth: int) -> str:
        """`v op= E`, guarded like the binary operator it stands for."""
        v = pick(self.ch, self.mutable_vars())
        if v.type.kind == "bool":
            e = self.expr(depth, want_int=True)
            return f"{v.name} {pick(self.ch, ['|', '&', '^'])}= {e.text};\n"
        if v.type.is_float:
            e = self.expr(depth)
            return f"{v.name} {pick(self.ch, ['+', '-', '*', '/'])}= {e.text};\n"
        e = self.expr(depth, want_int=True)
        op = pick(self.ch, ["+", "-", "*", "&", "|", "^", "<<", ">>", "/", "%"])
        if op in ("<<", ">>"):
            return f"{v.name} {op}= ({e.text} & {promote(v.type).bits - 1});\n"
        if op in ("/", "%"):
            t = common(v.type, e.type)
            return f"{v.name} {op}= {guarded_divisor(v.name, e.text, t)};\n"
        return f"{v.name} {op}= {e.text};\n"

    def incdec(self, depth: int) -> str:
        """`v++;` alone, or its value used in a declaration whose other operand avoids `v`."""
        vs = [v for v in self.mutable_vars() if v.type.kind != "bool"]
        v = pick(self.ch, vs)
        form = pick(self.ch, [f"{v.name}++", f"--{v.name}", f"++{v.name}", f"{v.name}--"])
        if self.ch.integer(0, 1) == 0:
            return f"{form};\n"
        others = [w for w in self.scope if w.name != v.name]
        e = self.expr(depth, scope=others)
        floaty = v.type.is_float or e.type.is_float
        op = pick(self.ch, ["+", "-", "*"] if floaty else ["+", "-", "*", "^", "&", "|"])
        t = common(v.type, e.type)
        name = self.fresh("r")
        r = Var(name, t)
        self.scope.append(r)
        self.results.append(r)
        return f"{t.name} {name} = (({form}) {op} {e.text});\n"

    def assignment(self, depth: int) -> str:
        """`v = E;` or `v = (T)(E);`, converting as C defines it."""
        v = pick(self.ch, self.mutable_vars())
        e = self.expr(depth)
        if (e.type.is_float and v.type.kind == "int") or self.ch.integer(0, 2) == 0:
            return f"{v.name} = {cast_text(v.type, e.text, e.type)};\n"
        return f"{v.name} = {e.text};\n"


# --- control flow (loop kernels) -------------------------------------------------------------

WRITE_MARK = "@WRITE_OUTPUTS@"


class KernelGen(StmtGen):
    """Statement trees with loops, switch, break/continue and early returns; lanes diverge."""

    def __init__(self, ch: Chooser, scope: list[Var], max_depth: int = 3) -> None:
        super().__init__(ch, scope)
        self.max_depth = max_depth

    def block(self, depth: int, loops: int, n_max: int = 2) -> str:
        n = self.ch.integer(1, n_max)
        return "".join(self.stmt(depth, loops) for _ in range(n))

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
        kinds.append("return")
        kind = pick(ch, kinds)
        if kind == "assign":
            return self.assignment(2)
        if kind == "compound":
            return self.compound(2)
        if kind == "incdec":
            v = pick(ch, [v for v in self.mutable_vars() if v.type.kind != "bool"])
            return f"{pick(ch, ['++', '--'])}{v.name};\n"
        if kind == "if":
            return f"if ({self.cond()}) {{\n{self.block(depth + 1, loops)}}}\n"
        if kind == "ifelse":
            text = f"if ({self.cond()}) {{\n{self.block(depth + 1, loops)}}}"
            for _ in range(ch.integer(0, 2)):
                text += f" else if ({self.cond()}) {{\n{self.block(depth + 1, loops)}}}"
            return text + f" else {{\n{self.block(depth + 1, loops)}}}\n"
        if kind in ("break", "continue"):
            return f"if ({self.cond()}) {kind};\n"
        if kind == "return":
            return f"if ({self.cond()}) {{\n{WRITE_MARK}return;\n}}\n"
        if kind == "switch":
            return self.switch(depth, loops)
        return self.loop(depth, loops)

    def switch(self, depth: int, loops: int) -> str:
        ch = self.ch
        labels = sorted({ch.integer(-1, 7) for _ in range(ch.integer(1, 4))})
        arms = [f"case {k}:" for k in labels]
        if ch.integer(0, 2) != 0:
            arms.insert(ch.integer(0, len(arms)), "default:")
        text = f"switch ({self.expr(2, want_int=True).text} & 7) {{\n"
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
        counter = Var(name, INT, mutable=False)
        self.scope.append(counter)
        body = self.block(depth + 1, loops + 1)
        self.scope.remove(counter)
        if form == "for":
            return f"for (int {name} = 0; {name} < {bound}; ++{name}) {{\n{body}}}\n"
        if form == "fordown":
            return f"for (int {name} = {bound}; {name} > 0; {name}--) {{\n{body}}}\n"
        if form == "while":
            return (f"{{\nint {name} = 0;\nwhile ({name} < {bound}) {{\n++{name};\n{body}}}\n"
                    "}\n")
        return (f"{{\nint {name} = 0;\ndo {{\n{name}++;\n{body}}} while ({name} < {bound});\n"
                "}\n")


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
    threadgroup: tuple[int, int, int] = (32, 1, 1)
    extra: dict = field(default_factory=dict)

    @property
    def c_text(self) -> str:
        return self.c_body if self.c_body is not None else self.msl_body


def output_writes(values: list[Var]) -> tuple[str, dict[str, int]]:
    """Statements storing `values` in the per-type outputs, and the slot counts."""
    slots: dict[str, int] = {}
    index: list[tuple[Var, int]] = []
    for v in values:
        index.append((v, slots.get(v.type.name, 0)))
        slots[v.type.name] = slots.get(v.type.name, 0) + 1
    text = "".join(f"o_{v.type.name}[i * {slots[v.type.name]} + {k}] = {v.name};\n"
                   for v, k in index)
    return text, slots


def _c_program(prog: Program) -> str:
    lines = [C_PRELUDE, f"#define N {N_THREADS}"]
    for t in TYPES.values():
        lines.append(f"static {_C_STORAGE[t.name]} in_{t.name}[{2 * N_THREADS}];")
    for name, k in prog.slots.items():
        lines.append(f"static {_C_STORAGE[name]} o_{name}[{N_THREADS * k}];")
    lines.append("static void kernel_body(uint i) {\n" + prog.c_text + "}")
    lines.append("int main(void) {")
    for t in TYPES.values():
        lines.append(f"  if (fread(in_{t.name}, sizeof in_{t.name}, 1, stdin) != 1) return 2;")
    lines.append("  for (uint i = 0; i < N; ++i) kernel_body(i);")
    for name in prog.slots:
        lines.append(f"  fwrite(o_{name}, sizeof o_{name}, 1, stdout);")
    lines.append("  return 0;\n}\n")
    return "\n".join(lines)


_CACHE_DIR = tempfile.mkdtemp(prefix="metalsim-gcc-oracle-")
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
        raise AssertionError(f"gcc rejected the generated C:\n{proc.stderr}\n{source}")
    _COMPILED[key] = exe
    return exe


def run_c(prog: Program, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The per-type outputs of the C program, shaped (threads, slots)."""
    exe = compile_c(_c_program(prog))
    stdin = b"".join(inputs[t].tobytes() for t in TYPES)
    proc = subprocess.run([exe], input=stdin, capture_output=True, timeout=20)
    if proc.returncode != 0:
        raise AssertionError(f"the C program failed ({proc.returncode}): {proc.stderr!r}")
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
                                   [f"o_{n}" for n in names], kernel_source(prog))
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


def compare(prog: Program, inputs: dict[str, np.ndarray]) -> None:
    """Run both sides and assert that every output slot of every thread is bit-identical."""
    c_out = run_c(prog, inputs)
    sim_out = run_sim(prog, inputs)
    problems = []
    for name in prog.slots:
        ok = _same(sim_out[name], c_out[name])
        for i, k in zip(*np.nonzero(~ok)):
            problems.append(f"thread {i} o_{name} slot {k}: metalsim {sim_out[name][i, k]!r}, "
                            f"gcc {c_out[name][i, k]!r}   inputs: {describe_thread(inputs, i)}")
    if problems:
        shown = "\n".join(problems[:6])
        raise AssertionError(f"{len(problems)} mismatches\n{shown}\n--- body ---\n"
                             f"{prog.msl_body}")


def expression_program(ch: Chooser, n_statements: int, depth: int = 3) -> Program:
    """Straight-line code: declarations, compound assignments and ++/-- over the inputs."""
    gen = StmtGen(ch, input_vars())
    body = input_decls()
    for _ in range(n_statements):
        kind = pick(ch, ["decl", "compound", "incdec", "assign", "decl"])
        body += {"decl": gen.declaration, "compound": gen.compound, "incdec": gen.incdec,
                 "assign": gen.assignment}[kind](depth)
    writes, slots = output_writes(gen.scope)
    return Program(body + writes, slots)


def loop_program(ch: Chooser, n_statements: int, max_depth: int = 2) -> Program:
    """A kernel with nested loops, switch, break/continue and early returns over the inputs."""
    scope = input_vars() + [Var(f"acc_{t.short}", t) for t in TYPES.values()]
    gen = KernelGen(ch, scope, max_depth)
    body = input_decls() + "".join(
        f"{t.name} acc_{t.short} = {'0.0f' if t.is_float else '0'};\n" for t in TYPES.values())
    body += "".join(gen.stmt(0, 0) for _ in range(n_statements))
    writes, slots = output_writes(scope)
    body = body.replace(WRITE_MARK, writes) + writes
    return Program(body, slots)
