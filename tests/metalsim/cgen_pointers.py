"""Random pointer programs that mean the same in MSL and in C, for the gcc oracle.

Each program is a braced block over the thread's inputs: pointers into the device inputs
(`const device T*`, starting at the thread's element) and into thread arrays (`thread T*`),
moved with `+ k`, `+=`, `-=`, prefix and postfix `++`/`--` (whose value is used), reassigned
under divergent branches, chosen with `?:`, kept in arrays of pointers, compared, and read and
written through `*p`, `p[k]`, `*(p + k)` and `(p++)[k]`. The generator tracks each pointer's
possible targets and offsets, so that every pointer it forms stays within its array (or one
past its end) and every access within it: the C meaning is defined, and equal to MSL's.

C gets the same text without the address-space words; many programs share one gcc executable
(`run_c_batch`), so that thousands are compiled in a few gcc runs.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field

import cgen
import mlx.core as mx
import numpy as np
from cgen import Chooser, pick

import metalsim

ELEMENT_TYPES = ("int", "float")
THREAD_LENGTH = 4          # each thread array
DEVICE_LENGTH = cgen.N_THREADS   # in_T + i: the thread's element and the next 63


@dataclass
class PtrVar:
    """A pointer variable: its family ("device" or "thread"), element type, and the offsets
    it may hold relative to its (possibly per-lane) target, and the targets' lengths."""

    name: str
    family: str
    elem: str
    lo: int
    hi: int
    length: int   # the shortest array it may point into

    def spelled(self) -> str:
        return f"const device {self.elem}*" if self.family == "device" else f"thread {self.elem}*"


@dataclass
class Block:
    """The state of one program while it is generated."""

    ch: Chooser
    tag: str
    lines: list[str] = field(default_factory=list)
    pointers: list[PtrVar] = field(default_factory=list)
    counter: int = 0

    def fresh(self) -> str:
        self.counter += 1
        return f"{self.tag}p{self.counter}"

    def acc(self, elem: str) -> str:
        return f"{self.tag}acc_{elem}"

    def array(self, elem: str, k: int) -> str:
        return f"{self.tag}{elem}{k}"


def _base(b: Block, family: str, elem: str) -> tuple[str, int]:
    """A fresh pointer target: the thread's part of an input, or a thread array."""
    if family == "device":
        return f"(in_{elem} + i)", DEVICE_LENGTH
    return b.array(elem, b.ch.integer(0, 1)), THREAD_LENGTH


def _condition(b: Block) -> str:
    """A per-lane condition, so that lanes diverge."""
    return pick(b.ch, [f"(i % {b.ch.integer(2, 5)} == {b.ch.integer(0, 1)})",
                       f"(in_int[i] > {b.ch.integer(-5, 5)})",
                       f"(in_float[i + 64] < {b.ch.integer(-2, 2)}.0f)",
                       f"((i & {b.ch.integer(1, 15)}) != 0)"])


def _target(b: Block, family: str, elem: str) -> tuple[str, int, int, int]:
    """A pointer expression to a fresh target: (text, lo, hi, length)."""
    base, length = _base(b, family, elem)
    k = b.ch.integer(0, length - 1)
    return f"({base} + {k})", k, k, length


def declare(b: Block) -> None:
    family, elem = pick(b.ch, ["device", "thread"]), pick(b.ch, list(ELEMENT_TYPES))
    text, lo, hi, length = _target(b, family, elem)
    p = PtrVar(b.fresh(), family, elem, lo, hi, length)
    b.lines.append(f"{p.spelled()} {p.name} = {text};")
    b.pointers.append(p)


def _within(b: Block, p: PtrVar) -> int | None:
    """An index k with p[k] in bounds for every offset p may hold, or None."""
    if p.length - 1 - p.hi < -p.lo:
        return None
    return b.ch.integer(-p.lo, p.length - 1 - p.hi)


def read(b: Block) -> None:
    """Accumulate a value read through a pointer, in one of the spellings."""
    p = pick(b.ch, b.pointers)
    k = _within(b, p)
    if k is None:
        return
    form = b.ch.integer(0, 5)
    if form == 0 and k == 0:
        value = f"*{p.name}"
    elif form == 1:
        value = f"*({p.name} + {k})" if k >= 0 else f"*({p.name} - {-k})"
    elif form == 2 and p.lo + k >= 0 and p.hi + 1 <= p.length and k == 0:
        value = f"*{p.name}++"            # the old pointer's element
        p.lo, p.hi = p.lo + 1, p.hi + 1
    elif form == 3 and p.lo - 1 >= 0 and k == 0:
        value = f"*--{p.name}"            # the new pointer's element
        p.lo, p.hi = p.lo - 1, p.hi - 1
    elif form == 4 and p.hi + 1 <= p.length:
        value = f"({p.name}++)[{k}]"
        p.lo, p.hi = p.lo + 1, p.hi + 1
    else:
        value = f"{p.name}[{k}]"
    b.lines.append(f"{b.acc(p.elem)} = {b.acc(p.elem)} * 3 + {value};"
                   if p.elem == "int" else f"{b.acc(p.elem)} += {value};")


def write(b: Block) -> None:
    """Store through a thread pointer (device pointers point into read-only inputs)."""
    ps = [p for p in b.pointers if p.family == "thread"]
    if not ps:
        return
    p = pick(b.ch, ps)
    k = _within(b, p)
    if k is None:
        return
    value = f"{b.acc(p.elem)} + ({p.elem})i"
    if b.ch.integer(0, 1) and k == 0:
        b.lines.append(f"*{p.name} = {value};")
    else:
        b.lines.append(f"{p.name}[{k}] = {value};")


def move(b: Block) -> None:
    """`p += k`, `p -= k`, `p = p + k`, prefix/postfix ++/-- as statements, or `q = p++`."""
    p = pick(b.ch, b.pointers)
    room_up, room_down = p.length - p.hi, p.lo       # may reach one past the end, or 0
    form = b.ch.integer(0, 4)
    if form == 0 and room_up >= 1:
        k = b.ch.integer(1, room_up)
        b.lines.append(pick(b.ch, [f"{p.name} += {k};", f"{p.name} = {p.name} + {k};"]))
        p.lo, p.hi = p.lo + k, p.hi + k
    elif form == 1 and room_down >= 1:
        k = b.ch.integer(1, room_down)
        b.lines.append(pick(b.ch, [f"{p.name} -= {k};", f"{p.name} = {p.name} - {k};"]))
        p.lo, p.hi = p.lo - k, p.hi - k
    elif form == 2 and room_up >= 1:
        b.lines.append(pick(b.ch, [f"{p.name}++;", f"++{p.name};"]))
        p.lo, p.hi = p.lo + 1, p.hi + 1
    elif form == 3 and room_down >= 1:
        b.lines.append(pick(b.ch, [f"{p.name}--;", f"--{p.name};"]))
        p.lo, p.hi = p.lo - 1, p.hi - 1
    elif room_up >= 1:
        q = PtrVar(b.fresh(), p.family, p.elem, p.lo, p.hi, p.length)
        b.lines.append(f"{q.spelled()} {q.name} = {p.name}++;")   # q gets the old pointer
        p.lo, p.hi = p.lo + 1, p.hi + 1
        b.pointers.append(q)


def _merge(p: PtrVar, lo: int, hi: int, length: int) -> None:
    p.lo, p.hi, p.length = min(p.lo, lo), max(p.hi, hi), min(p.length, length)


def diverge(b: Block) -> None:
    """Reassign a pointer on some lanes only: to another target, or to another pointer."""
    p = pick(b.ch, b.pointers)
    others = [q for q in b.pointers if q is not p and (q.family, q.elem) == (p.family, p.elem)]
    if others and b.ch.integer(0, 1):
        q = pick(b.ch, others)
        text, lo, hi, length = q.name, q.lo, q.hi, q.length
    else:
        text, lo, hi, length = _target(b, p.family, p.elem)
    cond = _condition(b)
    if b.ch.integer(0, 2) == 0:
        other_text, olo, ohi, olen = _target(b, p.family, p.elem)
        b.lines.append(f"if {cond} {{ {p.name} = {text}; }} else {{ {p.name} = {other_text}; }}")
        p.lo, p.hi, p.length = min(lo, olo), max(hi, ohi), min(length, olen)
    else:
        b.lines.append(f"if {cond} {{ {p.name} = {text}; }}")
        _merge(p, lo, hi, length)


def choose(b: Block) -> None:
    """`p = c ? x : y` between pointers (into different arrays, per lane)."""
    p = pick(b.ch, b.pointers)
    x, xlo, xhi, xlen = _target(b, p.family, p.elem)
    others = [q for q in b.pointers if (q.family, q.elem) == (p.family, p.elem)]
    q = pick(b.ch, others)
    b.lines.append(f"{p.name} = {_condition(b)} ? {x} : {q.name};")
    p.lo, p.hi, p.length = min(xlo, q.lo), max(xhi, q.hi), min(xlen, q.length)


def pointer_array(b: Block) -> None:
    """An array of pointers, indexed per lane, read and written through."""
    elem = pick(b.ch, list(ELEMENT_TYPES))
    name = b.fresh()
    k0, k1 = b.ch.integer(0, 1), b.ch.integer(0, 1)
    b.lines.append(f"thread {elem}* {name}[2] = {{{b.array(elem, 0)} + {k0}, "
                   f"{b.array(elem, 1)} + {k1}}};")
    j = f"((i + {b.ch.integer(0, 3)}) % 2)"
    if b.ch.integer(0, 1):
        b.lines.append(f"{name}[{b.ch.integer(0, 1)}] = {b.array(elem, b.ch.integer(0, 1))} + "
                       f"{b.ch.integer(0, 1)};")
    k = b.ch.integer(0, THREAD_LENGTH - 2)
    b.lines.append(f"{b.acc(elem)} += {name}[{j}][{k}];")
    if b.ch.integer(0, 1):
        b.lines.append(f"{name}[{j}][{k}] = {b.acc(elem)};")


def compare_pointers(b: Block) -> None:
    """`p == q` and `p != q` (defined in C for any two valid pointers)."""
    # never one past the end: that address may be another array's first (C leaves open
    # whether they compare equal)
    inside = [p for p in b.pointers if p.lo >= 0 and p.hi <= p.length - 1]
    if not inside:
        return
    p = pick(b.ch, inside)
    q = pick(b.ch, [q for q in inside if (q.family, q.elem) == (p.family, p.elem)])
    op = pick(b.ch, ["==", "!="])
    b.lines.append(f"{b.acc('int')} = {b.acc('int')} * 5 + ({p.name} {op} {q.name});")


STATEMENTS = (declare, read, read, write, move, diverge, choose, pointer_array,
              compare_pointers)


def block(ch: Chooser, n_statements: int) -> cgen.Program:
    """One program: a kernel body over the thread's inputs, writing its values (the two
    accumulators and the four thread arrays) to the outputs `o_int` and `o_float`."""
    b = Block(ch, "")
    for elem in ELEMENT_TYPES:
        t = cgen.TYPES[elem]
        b.lines.append(f"{elem} {b.acc(elem)} = {'0.0f' if t.is_float else '0'};")
        for k in (0, 1):
            init = ", ".join(f"in_{elem}[(i + {ch.integer(0, 63)}) % 128]"
                             for _ in range(THREAD_LENGTH))
            b.lines.append(f"{elem} {b.array(elem, k)}[{THREAD_LENGTH}] = {{{init}}};")
    declare(b)
    for _ in range(n_statements):
        pick(ch, list(STATEMENTS))(b)
    per_thread = 1 + 2 * THREAD_LENGTH
    for elem in ELEMENT_TYPES:
        out = f"o_{elem}[i * {per_thread}"
        b.lines.append(f"{out}] = {b.acc(elem)};")
        b.lines.append(f"for (int k = 0; k < {THREAD_LENGTH}; k++) {{ {out} + 1 + k] = "
                       f"{b.array(elem, 0)}[k]; {out} + {1 + THREAD_LENGTH} + k] = "
                       f"{b.array(elem, 1)}[k]; }}")
    body = "\n".join(b.lines) + "\n"
    return cgen.Program(body, {elem: per_thread for elem in ELEMENT_TYPES}, c_body=c_text(body))


def c_text(msl: str) -> str:
    """The C spelling of a pointer program: the same, without address spaces."""
    return re.sub(r"\b(device|thread)\s+", "", msl)


def _c_batch(progs: list[cgen.Program]) -> str:
    """One C program running every program of `progs` over the same inputs, one after
    another, each writing its outputs to stdout."""
    lines = [cgen.C_PRELUDE, f"#define N {cgen.N_THREADS}"]
    for t in cgen.TYPES.values():
        lines.append(f"static {cgen._C_STORAGE[t.name]} in_{t.name}[{2 * cgen.N_THREADS}];")
    for n, prog in enumerate(progs):
        outs = "".join(f"static {cgen._C_STORAGE[name]} p{n}_o_{name}[{cgen.N_THREADS * k}];\n"
                       for name, k in prog.slots.items())
        renamed = prog.c_text
        for name in prog.slots:
            renamed = re.sub(rf"\bo_{name}\b", f"p{n}_o_{name}", renamed)
        lines.append(outs + f"static void body{n}(uint i) {{\n{renamed}}}")
    lines.append("int main(void) {")
    for t in cgen.TYPES.values():
        lines.append(f"  if (fread(in_{t.name}, sizeof in_{t.name}, 1, stdin) != 1) return 2;")
    for n, prog in enumerate(progs):
        lines.append(f"  for (uint i = 0; i < N; ++i) body{n}(i);")
        for name in prog.slots:
            lines.append(f"  fwrite(p{n}_o_{name}, sizeof p{n}_o_{name}, 1, stdout);")
    lines.append("  return 0;\n}\n")
    return "\n".join(lines)


def run_c_batch(progs: list[cgen.Program], inputs: dict) -> list[dict]:
    """The per-type outputs of every program, from one gcc compile and one run."""
    exe = cgen.compile_c(_c_batch(progs))
    stdin = b"".join(inputs[t].tobytes() for t in cgen.TYPES)
    proc = subprocess.run([exe], input=stdin, capture_output=True, timeout=60)
    if proc.returncode != 0:
        raise cgen.GccRejected(f"the C program failed ({proc.returncode}): {proc.stderr!r}")
    results, pos = [], 0
    for prog in progs:
        out = {}
        for name, k in prog.slots.items():
            dt = cgen.TYPES[name].np_dtype
            size = cgen.N_THREADS * k * dt.itemsize
            out[name] = np.frombuffer(proc.stdout[pos:pos + size], dtype=dt).reshape(
                cgen.N_THREADS, k)
            pos += size
        results.append(out)
    return results


def run_sim(prog: cgen.Program, inputs: dict) -> dict:
    """The outputs of the simulated kernel (its inputs: `in_int` and `in_float`)."""
    names = list(prog.slots)
    kernel = metalsim.metal_kernel("pointers", [f"in_{t}" for t in ELEMENT_TYPES],
                                   [f"o_{n}" for n in names], cgen.kernel_source(prog))
    run = metalsim.simulate(
        kernel, inputs=[mx.array(inputs[t]) for t in ELEMENT_TYPES],
        output_shapes=[(cgen.N_THREADS * prog.slots[n],) for n in names],
        output_dtypes=[cgen.TYPES[n].mx_dtype for n in names],
        grid=(cgen.N_THREADS, 1, 1), threadgroup=prog.threadgroup)
    assert not run.report.errors, f"simulator errors: {run.report.errors}"
    return {n: np.array(o).reshape(cgen.N_THREADS, prog.slots[n])
            for n, o in zip(names, run.outputs)}


def compare_batch(progs: list[cgen.Program], inputs: dict) -> None:
    """Every program of `progs` gives bit-identical outputs in metalsim and under gcc."""
    for prog, c_out in zip(progs, run_c_batch(progs, inputs), strict=True):
        try:
            sim_out = run_sim(prog, inputs)
        except Exception as exc:
            raise AssertionError(f"metalsim raised {exc!r}\n--- body ---\n{prog.msl_body}") from exc
        for name in prog.slots:
            bad = ~cgen._same(sim_out[name], c_out[name])
            if bad.any():
                i, k = (int(x[0]) for x in np.nonzero(bad))
                raise AssertionError(
                    f"o_{name}[thread {i}, slot {k}]: metalsim {sim_out[name][i, k]!r}, gcc "
                    f"{c_out[name][i, k]!r}\n--- body ---\n{prog.msl_body}")
