"""Random C++ programs over name lookup and the constructs around it, run by metalsim (as a
kernel) and by g++ (-std=c++14), for a differential oracle.

Six families, each a header and a kernel body writing ints to `out`: explicit
specialisations of function templates (called as `f(x)`, `f<T>(x)`, from other templates, with
partly given arguments, `template <> int h<0>()` ending a recursion), name lookup (locals,
blocks and parameters shadowing globals and namespace members, `na::K`, `::G`,
`using namespace`, enumerators), namespaces (typedefs, overloads, structs, nested namespaces,
aliases and using-declarations), scopes (the same names in the global namespace, `na` and
`na::nb`: hiding, overload sets from one scope, using-directives and -declarations at
namespace and block scope, aliases, reopening, unnamed and inline namespaces, shadowing locals,
parameters and members), inheritance (base members and methods, hiding, several
levels, `d.B::f()`, `B::f()`, base initializers, slicing, `const B&`) and lvalues
(`++(++a)`, `(a += k) ^= b`, `int& r = ++a`, `(c ? a : b) = k`). Some programs use a
construct metalsim refuses (`(c ? a : b) = k`): a CompileError is a "refusal", never a
disagreement; a different value is.

Every program is valid C++14 whose meaning Metal shares: values stay small, integer overflow
is avoided or wraps under `-fwrapv` as Metal's does, and narrowing conversions are the ones
both define (modulo the width).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import mlx.core as mx
import numpy as np
from cgen import Chooser, pick

import metalsim

N_OUT = 8      # ints each program may write
N_INPUTS = 4   # ints each program may read, `inp[0]` .. `inp[3]`

# What Metal spells and C++ does not.
CXX_PRELUDE = """\
#include <cstdio>
#define thread
#define device
#define constant
#define threadgroup
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;
"""
GXX_FLAGS = ["-std=c++14", "-fwrapv", "-w", "-O0"]

# The types a function template is specialised for and called with.
SPECIALISABLE = ["int", "uint", "short", "char", "float", "ushort"]


@dataclass
class Program:
    """One random program: its family, header (file scope) and kernel body."""

    family: str
    header: str
    body: str

    def __repr__(self) -> str:
        return f"--- {self.family} ---\n{self.header}\n--- body ---\n{self.body}"


class _Gen:
    """Builds one program's text; `ch` makes every choice."""

    def __init__(self, ch: Chooser) -> None:
        self.ch = ch
        self.header: list[str] = []
        self.body: list[str] = []
        self.outs = 0

    def small(self, lo: int = 1, hi: int = 9) -> int:
        return self.ch.integer(lo, hi)

    def chance(self, percent: int) -> bool:
        return self.ch.integer(1, 100) <= percent

    def inp(self) -> str:
        return f"inp[{self.ch.integer(0, N_INPUTS - 1)}]"

    def out(self, text: str) -> None:
        if self.outs < N_OUT:
            self.body.append(f"out[{self.outs}] = int({text});")
            self.outs += 1

    def program(self, family: str) -> Program:
        return Program(family, "\n".join(self.header) + "\n", "\n".join(self.body) + "\n")


def _value_of(t: str, g: _Gen) -> str:
    """An argument of type `t` made from an input (small, so no type overflows it)."""
    return f"{t}({g.inp()} + {g.small(0, 20)})"


def specialisation(ch: Chooser) -> Program:
    g = _Gen(ch)
    a, b = g.small(), g.small()
    g.header.append(f"template <typename T> T f(T x) {{ return T(x * T({a}) + T({b})); }}")
    specialised = [t for t in SPECIALISABLE if g.chance(40)]
    for t in specialised:
        named = f"f<{t}>" if g.chance(50) else "f"
        g.header.append(f"template <> {t} {named}({t} x) {{ return {t}(x * {t}({g.small()}) - "
                        f"{t}({g.small()})); }}")
    g.header.append(f"template <typename T> T w(T x) {{ return T(f<T>(x) + T({g.small()})); }}")
    u = pick(ch, SPECIALISABLE)
    g.header.append(f"template <typename T, typename U> T fu(T x, U y) "
                    f"{{ return T(x + T(y) * T({g.small()})); }}")
    if g.chance(70):
        g.header.append(f"template <> int fu(int x, {u} y) "
                        f"{{ return x * {g.small()} + int(y); }}")
    depth = g.small(0, 4)
    g.header.append(f"template <int N> int h() {{ return N * {g.small()} + h<N - 1>(); }}")
    g.header.append(f"template <> int h<0>() {{ return {g.small()}; }}")
    if depth > 0 and g.chance(40):
        g.header.append(f"template <> int h<{depth}>() {{ return {g.small(10, 40)}; }}")
    for _ in range(g.small(3, N_OUT)):
        t = pick(ch, SPECIALISABLE)
        form = g.ch.integer(0, 5)
        if form == 0:
            g.out(f"f({_value_of(t, g)})")
        elif form == 1:
            g.out(f"f<{t}>({_value_of(t, g)})")
        elif form == 2:
            g.out(f"w<{t}>({_value_of(t, g)})" if g.chance(50) else f"w({_value_of(t, g)})")
        elif form == 3:
            g.out(f"fu<int>({_value_of('int', g)}, {_value_of(u, g)})")
        elif form == 4:
            g.out(f"fu({_value_of('int', g)}, {_value_of(u, g)})")
        else:
            g.out(f"h<{g.small(0, depth + 1)}>()")
    return g.program("specialisation")


def lookup(ch: Chooser) -> Program:
    g = _Gen(ch)
    # Names drawn from small pools, so that shadowing (and sometimes the same name in the
    # global namespace and in `na`) happens by chance.
    ns_name = pick(ch, ["K", "M", "K"])
    global_name = pick(ch, ["G", "G", "G", "K"])
    k, gv = g.small(), g.small(10, 19)
    g.header.append(f"namespace na {{\nconstant constexpr int {ns_name} = {k};\n"
                    f"inline int nf(int x) {{ return x * {ns_name} + {g.small()}; }}\n"
                    f"enum Kind {{ KA = {g.small(-5, 5)}, KB, KC = KB * {g.small()} }};\n"
                    f"namespace nb {{ constant constexpr int D = {ns_name} + {g.small()}; }}\n}}")
    g.header.append(f"enum class Level : {pick(ch, ['int', 'short', 'unsigned char'])} "
                    f"{{ Low = {g.small()}, High }};")
    g.header.append(f"constant constexpr int {global_name} = {gv};")
    g.header.append(f"int h(int {ns_name}) {{ return na::{ns_name} * {g.small()} + "
                    f"{ns_name}; }}")
    if g.chance(50):
        g.header.append(f"int sum_globals(int {global_name}) {{ return ::{global_name} + "
                        f"{global_name}; }}")
        g.out(f"sum_globals({g.inp()})")
    local_ns = g.chance(60)
    local_global = g.chance(60) and not (local_ns and global_name == ns_name)
    if local_ns:
        g.body.append(f"int {ns_name} = {g.inp()} + {g.small()};")
    if local_global:
        g.body.append(f"int {global_name} = {g.inp()} - {g.small()};")
    if g.chance(50):
        g.body.append(f"{{ int {ns_name} = {g.small(20, 29)}; out[{N_OUT - 1}] = "
                      f"{ns_name} + na::{ns_name}; }}")
    g.out(f"na::{ns_name}")
    g.out(f"::{global_name}")
    g.out(f"h({g.inp()})")
    g.out("na::nb::D")
    g.out(pick(ch, ["na::KC + na::Kind::KA", "na::KB * 3", "static_cast<int>(Level::High)",
                    "Level::Low == Level::High"]))
    if local_ns or local_global:
        g.out(ns_name if local_ns else global_name)
    if g.chance(50):
        g.body.append("using namespace na;")
        g.out(f"nf({g.inp()})")
        if not local_ns and ns_name != global_name:
            g.out(ns_name)   # na's, through the using-directive
    else:
        g.out(f"na::nf({g.inp()})")
    if g.chance(15):
        # beside na::nf: both in the overload set of `nf` after `using namespace na;`
        g.header.append(f"int nf(float x) {{ return int(x) + {g.small()}; }}")
    return g.program("lookup")


def namespaces(ch: Chooser) -> Program:
    g = _Gen(ch)
    narrow = pick(ch, ["short", "char", "ushort", "uchar"])
    a = g.small()
    g.header.append(
        f"namespace na {{\ntypedef {narrow} Narrow;\nconstant constexpr int A = {a};\n"
        f"struct P {{ int x; static constexpr constant int k = {g.small()}; "
        f"int twice() const {{ return x * 2 + A; }} }};\n"
        f"inline int over(int x) {{ return x + {g.small()}; }}\n"
        f"inline int over(float x) {{ return int(x) * {g.small()}; }}\n"
        f"namespace nb {{ inline int inner(int x) {{ return over(x) + A; }} "
        f"typedef int Wide; }}\n}}")
    if g.chance(40):   # a namespace reopened
        g.header.append("namespace na { namespace nb { inline int more(int x) "
                        "{ return inner(x) * 2; } } }")
        g.out(f"na::nb::more({g.inp()})")
    if g.chance(40):   # namespace aliases
        g.header.append("namespace al = na::nb;")
        g.body.append("namespace an = na;")
        g.out(f"al::inner({g.inp()}) + an::A")
    g.body.append(f"na::Narrow n = {g.inp()} + {g.small(60000, 70000)};")
    g.out("n")
    g.out("sizeof(na::Narrow)")
    g.body.append(f"na::P p{{{g.inp()}}};")
    g.out("p.twice()")
    g.out("na::P::k")
    g.out(f"na::over({g.small()}.5f) + na::over({g.inp()})")
    g.out(f"na::nb::inner({g.inp()})")
    if g.chance(30):
        g.body.append("using na::nb::inner;")
        g.out(f"inner({g.inp()})")
    clash = g.chance(15)
    if clash:
        g.header.append("typedef int Narrow;")  # beside na::Narrow: `Narrow` would be ambiguous
    if not clash and g.chance(50):
        g.body.append("using namespace na;")
        g.body.append(f"Narrow m = {g.inp()} + {g.small(250, 300)};")
        g.out("m + over(2)")
    else:
        g.body.append(f"na::nb::Wide m = {g.inp()} + {g.small(250, 300)};")
        g.out("m")
    return g.program("namespaces")


def scopes(ch: Chooser) -> Program:
    """The same names (a constant, a typedef, overloads, a struct, a function template) in
    the global namespace, `na` and `na::nb`, each present or not, used unqualified from each
    namespace (the innermost declaration hides the outer ones; an overload set comes from one
    scope), qualified, through using-directives (in a namespace and in a block, which add a
    namespace's names where the directive's and the namespace's scopes meet) and
    using-declarations (which hide), aliases, `namespace na::nb {` reopening, unnamed and
    inline namespaces, and locals, parameters and struct members that shadow them. Only unambiguous
    uses are written: every program is valid C++."""
    g = _Gen(ch)
    gk, ak, bk = g.chance(70), g.chance(70), g.chance(50)   # where a constant K is declared
    at, af, a_tw = g.chance(60), g.chance(70), g.chance(50)   # what na declares beside K
    narrow = pick(ch, ["short", "char", "ushort", "uchar"])
    if gk:
        g.header.append(f"constant constexpr int K = {g.small(1, 5)};")
    g.header.append("typedef int T;")
    g.header.append(f"int f(float x) {{ return int(x) * {g.small()} + {g.small()}; }}")
    g.header.append(f"struct S {{ int v; int get() const {{ return v + {g.small()}; }} }};")
    g.header.append(f"template <typename U> U tw(U x) {{ return x + U({g.small()}); }}")
    na = []
    if ak:
        na.append(f"constant constexpr int K = {g.small(6, 9)};")
    if at:
        na.append(f"typedef {narrow} T;")
    if af:
        na.append(f"int f(int x) {{ return x * {g.small()} + {g.small(10, 20)}; }}")
    if a_tw:
        na.append(f"template <typename U> U tw(U x) {{ return x * U({g.small(2, 4)}); }}")
    na.append(f"struct S {{ int v; int get() const {{ return v * {g.small(2, 5)}; }} }};")
    k_in_na = " + K" if gk or ak else ""
    na.append(f"int g(int x) {{ S s{{x}}; return f(x) + s.get(){k_in_na}; }}")
    nb = [f"constant constexpr int K = {g.small(10, 15)};"] if bk else []
    k_in_nb = " + K" if gk or ak or bk else ""
    nb.append(f"int h(int x) {{ T t = T(x + {g.small(60000, 70000)}); return f(x) + int(t)"
              f"{k_in_nb}; }}")
    member = ak and g.chance(50)   # a struct member of na's constant's name
    if member:
        na.append(f"struct M {{ int get() const {{ return K + {g.small()}; }} int K; }};")
    g.header.append("namespace na {\n" + "\n".join(na) + "\nnamespace nb {\n" + "\n".join(nb)
                    + "\n}\n}")
    if g.chance(50):   # reopened with C++17's nested namespace definition
        g.header.append(f"namespace na::nb {{ int more(int x) {{ return h(x) * {g.small()}; }} }}")
        g.out(f"na::nb::more({g.inp()})")
    if g.chance(40):
        g.header.append(f"namespace {{ constant constexpr int Q = {g.small()}; }}")
        g.out("Q * 3")
    if g.chance(30):   # an inline namespace's names are its enclosing namespace's too
        g.header.append(f"namespace na {{ inline namespace v1 {{ constant constexpr int IV = "
                        f"{g.small()}; }} }}")
        g.out("na::IV * 10 + na::v1::IV")
    both_k = gk and ak   # `using namespace na;` beside a global K makes `K` ambiguous
    if g.chance(50):   # a directive at namespace scope: na's names meet at the global level
        k_in_nc = " + K" if (gk or ak) and not both_k else ""
        tw_in_nc = "" if a_tw else " + tw(x)"   # (two equally good templates: ambiguous)
        g.header.append(f"namespace nc {{ using namespace na; int k2(int x) {{ return f(x) + "
                        f"f(2.5f){tw_in_nc}{k_in_nc}; }} }}")
        g.out(f"nc::k2({g.inp()})")
    if af and g.chance(50):   # a using-declaration at namespace scope hides the global f
        g.header.append("namespace nd { using na::f; int k3() { return f(2.5f); } }")
        g.out("nd::k3()")
    if g.chance(40):
        g.header.append(f"namespace al = {pick(ch, ['na::nb', 'na'])};")
        g.out(f"al::{'h' if 'na::nb' in g.header[-1] else 'g'}({g.inp()})")
    g.out(f"na::g({g.inp()})")
    g.out(f"na::nb::h({g.inp()})")
    if g.chance(50):
        tw_here = "" if a_tw else f" + tw({g.inp()})"
        g.body.append(f"{{ using namespace na; out[{N_OUT - 1}] = f({g.inp()}) + f(1.5f)"
                      f"{tw_here}; }}")
    if af and g.chance(40):
        g.body.append(f"{{ using na::f; out[{N_OUT - 2}] = f(3.5f); }}")
    if g.chance(40):
        g.body.append("namespace an = na::nb;")
        g.out(f"an::h({g.inp()})")
    na_t = "na::T" if at else "T"
    g.body.append(f"{na_t} n = {g.inp()} + {g.small(60000, 70000)};")
    g.out(f"n + T({g.inp()} + {g.small(70000, 80000)}) + int(sizeof({na_t}))")
    g.out(f"na::S{{{g.inp()}}}.get() * 100 + S{{{g.inp()}}}.get()")
    g.out(f"{'na::tw' if a_tw else 'tw<int>'}({g.inp()}) + tw({g.inp()})")
    if member:
        g.body.append(f"na::M m{{{g.inp()}}};")
        g.out("m.get()")
    if bk:
        g.out("na::nb::K")
    if ak and g.chance(50):   # a parameter hides na's K inside a function of na's
        g.header.append("namespace na { int p(int K) { return K * 10 + na::K; } }")
        g.out(f"na::p({g.inp()})")
    if g.chance(50):   # a local hides every K
        g.body.append(f"int K = {g.inp()} + {g.small(20, 29)};")
        g.out("K" + (" + ::K" if gk else "") + (" + na::K" if ak else ""))
    elif gk:
        g.out("K")
    return g.program("scopes")


def inheritance(ch: Chooser) -> Program:
    g = _Gen(ch)
    g.header.append(f"struct B {{\n  int v;\n  int get() const {{ return v * {g.small()}; }}\n"
                    f"  int base_only() const {{ return v + {g.small()}; }}\n}};")
    hides = g.chance(50)
    hidden = f"  int get() const {{ return w * {g.small()}; }}\n" if hides else ""
    g.header.append(f"struct D : B {{\n  int w;\n{hidden}"
                    f"  int sum() const {{ return v + w + base_only(); }}\n}};")
    three = g.chance(40)
    if three:
        g.header.append("struct E : D {\n  int z;\n  int all() const { return z + sum() "
                        "+ get(); }\n};")
    g.body.append(f"D d;\nd.v = {g.inp()} + {g.small()};\nd.w = {g.inp()} - {g.small()};")
    g.out("d.get()")
    g.out("d.sum()")
    g.out("d.base_only()")
    g.out("d.v * 10 + d.w")
    if three:
        g.body.append(f"E e;\ne.v = {g.small()};\ne.w = {g.small()};\ne.z = {g.inp()};")
        g.out("e.all()")
    if g.chance(40):   # base initializers, a qualified call of the hidden base function
        g.header.append(f"struct C : B {{\n  int u;\n  C(int a, int b) : B{{a}}, u(b) {{}}\n"
                        f"  int get() const {{ return u * {g.small()} + B::get(); }}\n}};")
        g.body.append(f"C c({g.inp()}, {g.small()});")
        g.out("c.get()")
    form = g.ch.integer(0, 5)
    if form == 0:
        g.out("d.B::get()")
    elif form == 1:
        g.body.append(f"B sliced = d;\nd.v = {g.small()};")
        g.out("sliced.get()")
    elif form == 2:
        g.body.append(f"const thread B& rb = d;\nd.v = {g.small()};")
        g.out("rb.get()")
    return g.program("inheritance")


def lvalues(ch: Chooser) -> Program:
    g = _Gen(ch)
    g.body.append(f"int a = {g.inp()} + {g.small()};\nint b = {g.inp()} - {g.small()};\n"
                  f"int c = {g.small(0, 1)};")
    forms: list[Callable[[], str]] = [
        lambda: "++(++a);",
        lambda: "--(--b);",
        lambda: f"(a += {g.small()}) ^= b;",
        lambda: f"(b -= {g.small()}) |= a;",
        lambda: f"thread int& r{g.outs} = ++a; r{g.outs} += {g.small()};",
        lambda: f"thread int& s{g.outs} = (b *= {g.small()}); s{g.outs} -= a;",
        lambda: f"(a = b) += {g.small()};",
        lambda: f"--(a -= {g.small()});",
        lambda: f"(c ? a : b) = {g.small(10, 30)};",
        lambda: f"b = ++(++a) * {g.small()};",
        lambda: "a += b++;",
        lambda: f"b = (a *= {g.small()}) * {g.small()};",
    ]
    for _ in range(g.small(2, 6)):
        g.body.append(pick(ch, forms)())
        g.out(pick(ch, ["a", "b", "a * 31 + b"]))
    g.out("a")
    g.out("b")
    return g.program("lvalues")


FAMILIES: dict[str, Callable[[Chooser], Program]] = {
    "specialisation": specialisation, "lookup": lookup, "namespaces": namespaces,
    "scopes": scopes, "inheritance": inheritance, "lvalues": lvalues,
}


def random_program(ch: Chooser) -> Program:
    """A program of a randomly chosen family."""
    return FAMILIES[pick(ch, list(FAMILIES))](ch)


def make_inputs(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 20, N_INPUTS).astype(np.int32)


# --- running both sides -----------------------------------------------------------------------


def _cxx_batch(progs: list[Program]) -> str:
    """One C++ program running every program of `progs`, each in a namespace of its own
    (`::x` becomes `::p<n>::x`), printing its outputs one line each."""
    parts = [CXX_PRELUDE]
    for n, prog in enumerate(progs):
        header, body = (re.sub(r"(?<![\w>:])::(?=[A-Za-z_])", f"::p{n}::", text)
                        for text in (prog.header, prog.body))
        parts.append(f"namespace p{n} {{\n{header}\nvoid run(const int* inp, int* out) {{\n"
                     f"{body}}}\n}}")
    parts.append("int main(int argc, char** argv) {\n  int inp[4];\n"
                 "  for (int i = 0; i < 4; ++i) inp[i] = std::atoi(argv[i + 1]);")
    for n in range(len(progs)):
        parts.append(f"  {{ int out[{N_OUT}] = {{0}}; p{n}::run(inp, out); "
                     f"for (int i = 0; i < {N_OUT}; ++i) std::printf(\"%d \", out[i]); "
                     f"std::printf(\"\\n\"); }}")
    parts.append("}\n")
    return "#include <cstdlib>\n" + "\n".join(parts)


def run_gxx(progs: list[Program], inputs: np.ndarray) -> list[list[int]]:
    """Every program's outputs, from one g++ compile and one run."""
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = Path(tmp) / "batch.cpp", Path(tmp) / "batch"
        src.write_text(_cxx_batch(progs))
        proc = subprocess.run(["g++", *GXX_FLAGS, "-o", str(exe), str(src)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise AssertionError(f"g++ rejected the generated C++ (a generator bug):\n"
                                 f"{proc.stderr[:3000]}")
        out = subprocess.run([str(exe), *map(str, inputs.tolist())], check=True,
                             capture_output=True, text=True, timeout=60).stdout
    return [[int(v) for v in line.split()] for line in out.splitlines()]


def run_metalsim(prog: Program, inputs: np.ndarray) -> list[int]:
    """The program's outputs as a one-thread kernel (a CompileError propagates)."""
    kernel = metalsim.metal_kernel("lookup", ["inp"], ["out"], prog.body, header=prog.header)
    out = kernel(inputs=[mx.array(inputs)], output_shapes=[(N_OUT,)],
                 output_dtypes=[mx.int32], grid=(1, 1, 1), threadgroup=(1, 1, 1),
                 init_value=0)[0]
    return np.array(out).tolist()


@dataclass
class Tally:
    """What a run found, by family: agreements, refusals (by message) and disagreements."""

    agreed: Counter = field(default_factory=Counter)
    refused: Counter = field(default_factory=Counter)
    reasons: Counter = field(default_factory=Counter)
    disagreed: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        self.agreed += other.agreed
        self.refused += other.refused
        self.reasons += other.reasons
        self.disagreed += other.disagreed


def _reason(error: metalsim.CompileError) -> str:
    """A refusal's message without the names it quotes, to count refusals by kind."""
    first = str(error).splitlines()[0].split("error: ", 1)[-1]
    return re.sub(r"'[^']*'", "'…'", first)


def compare(progs: list[Program], inputs: np.ndarray) -> Tally:
    """Run every program on both sides: a CompileError from metalsim is a refusal; an
    internal exception or a different value is a disagreement, shown with the program."""
    tally = Tally()
    for prog, expected in zip(progs, run_gxx(progs, inputs), strict=True):
        try:
            got = run_metalsim(prog, inputs)
        except metalsim.CompileError as error:
            tally.refused[prog.family] += 1
            tally.reasons[_reason(error)] += 1
            continue
        except Exception as exc:   # noqa: BLE001 -- every other exception is a finding
            tally.disagreed.append(f"metalsim raised {exc!r}\n{prog!r}")
            continue
        if got == expected:
            tally.agreed[prog.family] += 1
        else:
            tally.disagreed.append(f"metalsim {got}, g++ {expected} (inputs "
                                   f"{inputs.tolist()})\n{prog!r}")
    return tally
