"""Random C++ programs over name lookup and the constructs around it, run by metalsim (as a
kernel) and by g++ (-std=c++14), for a differential oracle.

Eight families, each a header and a kernel body writing ints to `out`: explicit
specialisations of function templates (called as `f(x)`, `f<T>(x)`, from other templates, with
partly given arguments, `template <> int h<0>()` ending a recursion), name lookup (locals,
blocks and parameters shadowing globals and namespace members, `na::K`, `::G`,
`using namespace`, enumerators, enumerations in structs and anonymous ones), namespaces
(typedefs, overloads, structs, nested namespaces, aliases and using-declarations), scopes (the
same names in the global namespace, `na` and `na::nb`: hiding, overload sets from one scope,
using-directives and -declarations at namespace and block scope, aliases (a block's hiding a
file's until the block ends), reopening, unnamed and inline namespaces, shadowing locals,
parameters and members), inheritance (base members and methods, hiding, several levels,
`d.B::f()`, `B::f()`, base initializers, slicing, `const B&`, multiple bases with pointers,
references and casts to and from them, overloads picking the nearest base, base class templates
initialized as `TB<T>(x)` and named as `d.TB<int>::t`, hidden data members as `d.B::v`,
`using B::get;` beside a derived overload, `class` with access labels, hidden friends)
and lvalues (`++(++a)`, `(a += k) ^= b`, `int& r = ++a`, `(c ? a : b) = k` on locals, struct
members and array elements, references to and returns of `c ? a : b`, `(p = q).x`,
`(a, b) = k`, `*&(++a)`), and operators (operator functions on enumerations, `enum class`es
and a struct with a conversion function, free, member and templates, beside the built-in
operators they compete with), and increments (prefix and postfix `operator++`/`operator--`,
member, const member and free, on a struct and an enumeration, in expressions, through
references and as loop steps). A construct metalsim refuses gives a CompileError: a
"refusal", never a disagreement; a different value is.

Every program of the first six families is valid C++14 whose meaning Metal shares: values stay
small, integer overflow is avoided or wraps under `-fwrapv` as Metal's does, and narrowing
conversions are the ones both define (modulo the width). An operators or increments program
may be ill-formed (an ambiguous or impossible operator): g++ -pedantic-errors, which rejects
what ISO C++ and clang (Metal's compiler) reject, decides; metalsim must refuse those too
(accepting one is a disagreement).
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

N_OUT = 12     # ints each program may write
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
    if g.chance(40):
        _member_and_anonymous_enums(g)
    if g.chance(15):
        # beside na::nf: both in the overload set of `nf` after `using namespace na;`
        g.header.append(f"int nf(float x) {{ return int(x) + {g.small()}; }}")
    return g.program("lookup")


def _member_and_anonymous_enums(g: _Gen) -> None:
    """Enumerations declared in a struct (named `S::SA`, `S::M::MY`, and by its members),
    anonymous ones, and one whose values need an unsigned underlying type."""
    g.header.append(f"struct S {{\n  enum Kind {{ SA = {g.small(-3, 3)}, SB, SC = SB * "
                    f"{g.small()} }};\n  enum class M : {pick(g.ch, ['short', 'uchar', 'int'])} "
                    f"{{ MX = {g.small()}, MY }};\n  Kind k;\n"
                    f"  int get() const {{ return k == SB ? {g.small()} : k + SC; }}\n}};")
    g.header.append(f"enum {{ AW = {g.small()}, AH = AW * {g.small()} }};")
    g.header.append("enum Big { BX = 0x7fffffff, BY };")
    g.header.append("template <S::M O> int by_mode() { return O == S::M::MY ? 7 : 3; }")
    g.body.append(f"S s{{S::{pick(g.ch, ['SA', 'SB', 'SC'])}}};")
    g.out("s.get() * 10 + S::SC")
    g.out(f"static_cast<int>(S::M::{pick(g.ch, ['MX', 'MY'])}) + sizeof(S::M)")
    g.out(f"AH - AW + {g.inp()}")
    g.out(f"int(BY >> {g.small(1, 4)}) + (BY > {g.inp()})")
    g.out(f"by_mode<S::M::{pick(g.ch, ['MX', 'MY'])}>()")


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
    inline namespaces, and locals, parameters and struct members that shadow them; calls
    argument-dependent lookup extends (na's functions of na's struct, enumeration, a pointer
    to the struct and a template instance with it as argument, beside a global template).
    Only unambiguous uses are written: every program is valid C++."""
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
    g.header.append(f"template <typename U> int ad(U x) {{ return int(sizeof(U)) + {g.small()}; }}")
    g.header.append("template <typename U> struct Hold { U u; };")
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
    # Found by argument-dependent lookup from outside na (a non-template beats ::ad's).
    a_ad, a_hold = g.chance(70), g.chance(50)
    if a_ad:
        na.append(f"int ad(S s) {{ return s.v * {g.small(2, 5)} + {g.small(20, 40)}; }}")
        na.append(f"enum Mode {{ MA = {g.small()}, MB }};")
        na.append(f"int ad(Mode m) {{ return m * {g.small(2, 5)} + 100; }}")
        na.append(f"int ad(thread S* p) {{ return p->v + {g.small(200, 300)}; }}")
    if a_hold:   # more specialized than ::ad, found through the template argument S
        na.append(f"template <typename U> int ad(Hold<U> h) {{ return {g.small(500, 600)}; }}")
    k_in_na = " + K" if gk or ak else ""
    na.append(f"int g(int x) {{ S s{{x}}; return f(x) + s.get(){k_in_na}; }}")
    nb = [f"constant constexpr int K = {g.small(10, 15)};"] if bk else []
    k_in_nb = " + K" if gk or ak or bk else ""
    # na::S, so na::ad(S), or ::ad where na declares no ad (which would hide it)
    ad_in_nb = " + ad(S{x})" if (a_ad or not a_hold) and g.chance(50) else ""
    nb.append(f"int h(int x) {{ T t = T(x + {g.small(60000, 70000)}); return f(x) + int(t)"
              f"{k_in_nb}{ad_in_nb}; }}")
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
        target = pick(ch, ["na::nb", "na"])
        g.header.append(f"namespace al = {target};")
        g.out(f"al::{_alias_function(target)}({g.inp()})")
        if g.chance(50):   # a block's alias of the name hides it until the block ends
            other = "na" if target == "na::nb" else "na::nb"
            g.body.append(f"{{ namespace al = {other}; out[{N_OUT - 3}] = "
                          f"al::{_alias_function(other)}({g.inp()}); }}")
            g.out(f"al::{_alias_function(target)}({g.inp()})")
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
    g.out(f"ad(na::S{{{g.inp()}}}) * 1000 + ad({g.inp()})")
    g.body.append(f"Hold<na::S> held{{{{{g.inp()}}}}};")
    if a_ad:
        g.body.append(f"na::S ps{{{g.inp()}}};")
    g.out("ad(held) * 1000" + (" + ad(&ps) + ad(na::MB) * 7" if a_ad else ""))
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


def _alias_function(namespace: str) -> str:
    """The function `scopes` declares in `namespace` (na::nb's h, na's g)."""
    return "h" if namespace == "na::nb" else "g"


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
        key = pick(ch, ["struct C : B {", "class C : public B {\n  int u;\npublic:"])
        g.header.append(f"{key}\n  int u;\n  C(int a, int b) : B{{a}}, u(b) {{}}\n"
                        f"  int get() const {{ return u * {g.small()} + B::get(); }}\n}};"
                        .replace("  int u;\npublic:\n  int u;\n", "  int u;\npublic:\n"))
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
    for extra in (_multiple_bases, _template_base, _hidden_data_member, _using_and_friends):
        if g.chance(35):
            extra(g, three)
    return g.program("inheritance")


def _multiple_bases(g: _Gen, three: bool) -> None:
    """A second base after `B`'s sibling: pointers and references to it move to its subobject
    and back; overloads pick the nearest base."""
    ch = g.ch
    g.header.append(f"struct A {{\n  int a;\n  int geta() const {{ return a * {g.small()}; }}\n"
                    f"}};\nstruct M : A, B {{\n  int m;\n  int all() const {{ return A::a * 100 "
                    f"+ B::v * 10 + m; }}\n}};")
    g.header.append("int via(const thread B* p) { return p->get(); }\n"
                    "int rank(thread B* p) { return 1; }\nint rank(thread D* p) { return 2; }\n"
                    "int rank(B x) { return 3; }")
    g.body.append(f"M mm;\nmm.a = {g.inp()};\nmm.v = {g.small()};\nmm.m = {g.inp()};")
    target = "e" if three and g.chance(50) else "d"
    forms = [
        lambda: g.body.append(f"thread B* pb{len(g.body)} = &mm;\npb{len(g.body)}->v += "
                              f"{g.small()};"),
        lambda: g.out("static_cast<thread M*>(static_cast<thread B*>(&mm))->m + mm.all()"),
        lambda: g.out("static_cast<const thread B&>(mm).get() + B(mm).base_only()"),
        lambda: g.body.append(f"static_cast<thread B&>(mm).v = {g.small()};"),
        lambda: g.out(f"via(&mm) + via(&{target})"),
        lambda: g.out(f"rank(&{target}) * 10 + rank({target}) + rank(&mm) * 100"),
        lambda: g.out("mm.A::a * 7 + mm.B::v + mm.geta()"),
        lambda: g.body.append(f"((thread A&)mm).a = {g.inp()};"),
    ]
    for _ in range(g.small(2, 4)):
        pick(ch, forms)()
    g.out("mm.all()")


def _template_base(g: _Gen, three: bool) -> None:
    """A base class template initialized by name with its arguments."""
    g.header.append(f"template <typename T> struct TB {{\n  T t;\n  TB(T x) : t(x) {{}}\n"
                    f"  T twice() const {{ return t * T({g.small()}); }}\n"
                    f"  friend T peek_t(const thread TB& b) {{ return b.t + T({g.small()}); }}"
                    f"\n}};\n"
                    f"template <typename T> struct TD : TB<T> {{\n  T u;\n"
                    f"  TD(T x) : TB<T>(x + T({g.small()})), u(x) {{}}\n"
                    f"  T both() const {{ return TB<T>::twice() + u + TB<T>::t; }}\n}};\n"
                    f"struct ID : TB<int> {{\n  int k;\n  ID(int x) : TB<int>{{x}}, k({g.small()}) "
                    f"{{}}\n}};")
    t = pick(g.ch, ["int", "short", "uint"])
    g.body.append(f"TD<{t}> td({g.inp()});\nID id({g.inp()});")
    g.out("td.both()")
    g.out("id.twice() * 10 + id.k + id.t")
    if g.chance(50):
        g.out(f"id.TB<int>::t * {g.small()} + id.TB<int>::twice()")
    if g.chance(50):   # the template's hidden friend, through a derived class's argument
        g.out(f"peek_t(td) * {g.small()} + peek_t(id)")


def _hidden_data_member(g: _Gen, three: bool) -> None:
    """A data member hiding a base's, reached qualified."""
    g.header.append(f"struct H : B {{\n  int v;\n  int both() const {{ return v * 10 + B::v + "
                    f"{g.small()}; }}\n}};")
    g.body.append(f"H hh;\nhh.v = {g.inp()};\nhh.B::v = {g.small()};\nhh.H::v += hh.B::v;")
    g.out("hh.both()")
    g.out("hh.get() + hh.B::get()")


def _using_and_friends(g: _Gen, three: bool) -> None:
    """`using B::get;` beside a derived overload (or the overload hiding B's without it), and
    friend functions defined in a struct, found through their struct's argument."""
    using = g.chance(70)
    g.header.append(f"struct U : B {{\n  {'using B::get; ' if using else ''}"
                    f"int get(int k) const {{ return k * {g.small()} + v; }}\n"
                    f"  friend int peek(const thread U& u) {{ return u.v * {g.small()}; }}\n"
                    f"  friend int operator*(U a, int k) {{ return a.v + k * {g.small()}; }}\n}};")
    g.header.append(f"int peek(int x) {{ return x + {g.small(100, 200)}; }}")
    g.body.append(f"U uu;\nuu.v = {g.inp()};")
    g.out(f"uu.get({g.small()})" + (" * 10 + uu.get()" if using else ""))
    g.out(f"peek(uu) * 100 + peek({g.inp()}) + uu * {g.small()}")


def lvalues(ch: Chooser) -> Program:
    g = _Gen(ch)
    g.header.append("struct P { int x; int y; };")
    g.header.append("thread int& pick(thread int& x, thread int& y, int c) "
                    "{ return c ? x : y; }")
    g.body.append(f"int a = {g.inp()} + {g.small()};\nint b = {g.inp()} - {g.small()};\n"
                  f"int c = {g.small(0, 1)};\nint arr[3] = {{{g.inp()}, {g.small()}, "
                  f"{g.inp()}}};\nP p = {{{g.small()}, {g.inp()}}};\nP q = {{{g.inp()}, "
                  f"{g.small()}}};")

    def elem() -> str:
        return pick(ch, ["arr[0]", "arr[1]", "arr[2]", "arr[c]", "arr[c + 1]"])

    def place() -> str:
        return pick(ch, ["a", "b", "p.x", "p.y", "q.x", elem()])

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
        lambda: f"(c ? {place()} : {place()}) += {g.small()};",
        lambda: f"++(c ? {place()} : {place()});",
        lambda: f"((c ? {place()} : {place()}) *= {g.small()}) ^= {place()};",
        lambda: f"thread int& t{g.outs} = c ? {place()} : {place()}; t{g.outs} -= {g.small()};",
        lambda: f"(c ? p : q).y = {g.small()};",
        lambda: f"(c ? {place()} : (a > b ? {place()} : {place()})) = {g.small()};",
        lambda: f"pick(a, {place()}, c) += {g.small()};",
        lambda: f"{place()} = {place()} = {g.small()};",
        lambda: f"({elem()} += {g.small()}) *= {g.small()};",
        lambda: "c = !c;",
        lambda: f"(p = q).x += {g.small()};",
        lambda: f"({place()}, {place()}) = {g.small()};",
        lambda: f"*&(++{place()}) *= {g.small()};",
        lambda: f"b = ++(++a) * {g.small()};",
        lambda: "a += b++;",
        lambda: f"b = (a *= {g.small()}) * {g.small()};",
    ]
    for _ in range(g.small(2, 6)):
        g.body.append(pick(ch, forms)())
        g.out(pick(ch, ["a", "b", "a * 31 + b", "arr[0] + arr[1] * 7 + arr[2] * 49",
                        "p.x * 13 + p.y", "q.x * 13 + q.y"]))
    g.out("a")
    g.out("b")
    return g.program("lvalues")


OPERATOR_TYPES = ["E", "F", "S", "int", "float", "short", "const thread S&",
                  "const thread E&"]
BINARY_OPERATORS = ["+", "*", "-", "==", "<", "|", "&"]


def operators(ch: Chooser) -> Program:
    """Operator functions on an enumeration `E`, an `enum class F` and a struct `S` with one
    conversion function (free, member and a template, by value and by reference) used with
    operands of those types and of int, float and short, so that the built-in operator
    competes with them (wins, loses or ties: an ambiguity)."""
    g = _Gen(ch)
    g.header.append(f"enum E{pick(ch, ['', ' : int', ' : short', ' : uchar'])} {{ EA = "
                    f"{g.small(0, 3)}, EB, EC = {g.small(4, 9)} }};")
    g.header.append(f"enum class F : {pick(ch, ['int', 'short'])} {{ FX = {g.small()}, FY }};")
    conv = pick(ch, ["int", "float", "short", "uint"])
    members = {(pick(ch, BINARY_OPERATORS), pick(ch, OPERATOR_TYPES))
               for _ in range(g.small(0, 2))}
    g.header.append("struct S {\n  int v;\n"
                    + f"  operator {conv}() const {{ return {conv}(v); }}\n"
                    + "".join(f"  int operator{op}({t} b) const {{ return {g.small(10, 90)} + "
                              f"int(b); }}\n" for op, t in sorted(members)) + "};")
    declared: set[tuple[str, str, str]] = set()
    for _ in range(g.small(1, 4)):
        op = pick(ch, BINARY_OPERATORS)
        a, b = pick(ch, OPERATOR_TYPES), pick(ch, OPERATOR_TYPES)
        if not {a, b} & {"E", "F", "S", "const thread S&", "const thread E&"}:
            a = "E"
        if (op, a, b) not in declared:
            declared.add((op, a, b))
            g.header.append(f"int operator{op}({a} a, {b} b) {{ return {g.small(100, 900)} + "
                            f"int(a) * 3 + int(b); }}")
    if g.chance(40):
        g.header.append(f"template <typename T> int operator{pick(ch, BINARY_OPERATORS)}"
                        f"(T a, {pick(ch, ['E', 'F', 'S'])} b) {{ return {g.small(1000, 1900)}"
                        f" + int(b); }}")
    if g.chance(40):
        g.header.append(f"int operator{pick(ch, ['-', '~'])}({pick(ch, ['E', 'S', 'F'])} a) "
                        f"{{ return {g.small(20, 60)} + int(a); }}")
    if g.chance(30):
        g.header.append("void operator|=(thread E& a, E b) { a = E(int(a) | int(b)); }")
    g.body.append(f"E e = {pick(ch, ['EA', 'EB', 'EC'])};\nF f = F::{pick(ch, ['FX', 'FY'])};"
                  f"\nS s{{{g.inp()} + 1}};\nS t{{{g.small()}}};\nint i = {g.inp()};")
    operands = ["EA", "EB", "e", "s", "t", "2", "short(3)", g.inp(), "2.5f", "F::FX", "f"]
    for _ in range(g.small(2, 4)):
        form = g.ch.integer(0, 9)
        if form < 7:   # (rarely what has no built-in `|` or `&`, or none at all)
            x, y = (pick(ch, operands if g.chance(15) else operands[:-3]) for _ in "xy")
            g.out(f"{x} {pick(ch, BINARY_OPERATORS)} {y}")
        elif form == 7:
            g.out(f"{pick(ch, ['-', '~', '!'])}{pick(ch, ['e', 's', 'EB', 'e', 's', 'f'])}")
        elif form == 8:
            g.body.append(f"i {pick(ch, ['+=', '|=', '*='])} {pick(ch, ['s', 'e', 'EB'])};")
            g.out("i")
        else:
            g.body.append(f"e |= {pick(ch, ['EB', 'EC', 'e'])};")
            g.out("e")
    return g.program("operators")


def increments(ch: Chooser) -> Program:
    """Prefix and postfix `operator++`/`operator--` on a struct `P` (each form a member, a
    const member, a free function, both or neither; a postfix one returning the old value or
    one it computes) and on an enumeration `E` (free), in expressions, as statements, through
    references and as loop steps. A form used where none is declared, or declared twice alike
    (ambiguous), makes the program ill-formed."""
    g = _Gen(ch)
    g.header.append("enum E { EA, EB, EC, ED };")
    members, frees = [], []
    const_prefix = False
    for op in ("++", "--"):
        step = f"{op[0]}= {g.small()}"
        where = pick(ch, ["member"] * 9 + ["free"] * 9 + ["both", "none"])
        if where in ("member", "both") and g.chance(20):
            const_prefix = True
            members.append(f"  P operator{op}() const {{ return P{{v * 3 + {g.small()}}}; }}")
        elif where in ("member", "both"):
            members.append(f"  thread P& operator{op}() {{ v {step}; return *this; }}")
        if where in ("free", "both"):
            frees.append(f"thread P& operator{op}(thread P& p) {{ p.v {step}; return p; }}")
        step = f"{op[0]}= {g.small()}"
        result = pick(ch, ["old", "old", f"P{{old.v * 2 + {g.small()}}}"])
        where = pick(ch, ["member"] * 9 + ["free"] * 9 + ["both", "none"])
        if where in ("member", "both"):
            members.append(f"  P operator{op}(int) {{ P old = *this; v {step}; "
                           f"return {result}; }}")
        if where in ("free", "both"):
            frees.append(f"P operator{op}(thread P& p, int) {{ P old = p; p.v {step}; "
                         f"return {result}; }}")
    g.header.append("struct P {\n  int v;\n" + "".join(m + "\n" for m in members) + "};")
    g.header += frees
    if g.chance(90):
        g.header.append("thread E& operator++(thread E& e) { e = E((int(e) + 1) % 4); "
                        "return e; }")
    if g.chance(85):
        g.header.append(f"E operator--(thread E& e, int) {{ E old = e; "
                        f"e = E((int(e) + {g.small(1, 3)}) % 4); return old; }}")
    g.body.append(f"P p{{{g.inp()} + 1}};\nE e = {pick(ch, ['EA', 'EB', 'EC'])};\nint n = 0;")
    forms: list[Callable[[], None]] = [
        lambda: g.out(f"({pick(ch, ['++p', 'p++', '--p', 'p--'])}).v"),
        lambda: g.body.append(f"{pick(ch, ['++p', 'p++', '--p', 'p--'])};"),
        lambda: g.body.append(f"for (int k = 0; k < {g.small(1, 3)}; ++k) "
                              f"{pick(ch, ['++p', 'p++', '--p', 'p--'])};"),
        lambda: g.body.append(f"thread P& r{g.outs} = {pick(ch, ['++p', '--p'])}; "
                              f"r{g.outs}.v += {g.small()};"),
        lambda: g.out("(++(--p)).v"),
        lambda: g.out(f"int({pick(ch, ['++e', 'e--', 'e'])})"),
        lambda: g.body.append("for (E x = EA; x != ED; ++x) n = n * 4 + int(x) + 1;"),
    ]
    if const_prefix:
        forms.append(lambda: g.out(f"(++P{{{g.small()}}}).v + (--P{{{g.small()}}}).v"))
    for _ in range(g.small(2, 5)):
        pick(ch, forms)()
        g.out(pick(ch, ["p.v", "int(e)", "n", "p.v * 4 + int(e)"]))
    g.out("p.v")
    g.out("n * 4 + int(e)")
    return g.program("increments")


FAMILIES: dict[str, Callable[[Chooser], Program]] = {
    "specialisation": specialisation, "lookup": lookup, "namespaces": namespaces,
    "scopes": scopes, "inheritance": inheritance, "lvalues": lvalues, "operators": operators,
    "increments": increments,
}
# Families whose programs may be ill-formed: g++ -pedantic-errors sorts them first.
MAY_BE_ILL_FORMED = frozenset({"operators", "increments"})


def random_program(ch: Chooser) -> Program:
    """A program of a randomly chosen family."""
    return FAMILIES[pick(ch, list(FAMILIES))](ch)


def make_inputs(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 20, N_INPUTS).astype(np.int32)


# --- running both sides -----------------------------------------------------------------------


def _cxx_batch(progs: list[Program], starts: list[int] | None = None) -> str:
    """One C++ program running every program of `progs`, each in a namespace of its own
    (`::x` becomes `::p<n>::x`), printing its outputs one line each; `starts`, if given,
    receives the line each program's namespace begins on."""
    parts = ["#include <cstdlib>", CXX_PRELUDE]
    for n, prog in enumerate(progs):
        header, body = (re.sub(r"(?<![\w>:])::(?=[A-Za-z_])", f"::p{n}::", text)
                        for text in (prog.header, prog.body))
        if starts is not None:
            starts.append(sum(part.count("\n") + 1 for part in parts) + 1)
        parts.append(f"namespace p{n} {{\n{header}\nvoid run(const int* inp, int* out) {{\n"
                     f"{body}}}\n}}")
    parts.append("int main(int argc, char** argv) {\n  int inp[4];\n"
                 "  for (int i = 0; i < 4; ++i) inp[i] = std::atoi(argv[i + 1]);")
    for n in range(len(progs)):
        parts.append(f"  {{ int out[{N_OUT}] = {{0}}; p{n}::run(inp, out); "
                     f"for (int i = 0; i < {N_OUT}; ++i) std::printf(\"%d \", out[i]); "
                     f"std::printf(\"\\n\"); }}")
    parts.append("}\n")
    return "\n".join(parts)


def ill_formed(progs: list[Program]) -> set[int]:
    """The indices of the programs g++ -pedantic-errors rejects (only those of a family that
    may be ill-formed are checked; any other rejected is a generator bug)."""
    if not any(p.family in MAY_BE_ILL_FORMED for p in progs):
        return set()
    starts: list[int] = []
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "batch.cpp"
        src.write_text(_cxx_batch(progs, starts))
        proc = subprocess.run(["g++", *GXX_FLAGS, "-pedantic-errors", "-fsyntax-only",
                               "-fmax-errors=0", str(src)], capture_output=True, text=True)
    lines = {int(m) for m in re.findall(r"batch\.cpp:(\d+):\d+: error", proc.stderr)}
    bad = {max(n for n, start in enumerate(starts) if start <= line) for line in lines}
    wrong = [progs[n] for n in bad if progs[n].family not in MAY_BE_ILL_FORMED]
    if wrong or (proc.returncode != 0 and not bad):
        raise AssertionError(f"g++ rejected the generated C++ (a generator bug):\n"
                             f"{proc.stderr[:3000]}\n{wrong[:1]}")
    return bad


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
    rejected: Counter = field(default_factory=Counter)   # ill-formed, refused by both
    reasons: Counter = field(default_factory=Counter)
    disagreed: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        self.agreed += other.agreed
        self.refused += other.refused
        self.rejected += other.rejected
        self.reasons += other.reasons
        self.disagreed += other.disagreed


def _reason(error: metalsim.CompileError) -> str:
    """A refusal's message without the names it quotes, to count refusals by kind."""
    first = str(error).splitlines()[0].split("error: ", 1)[-1]
    return re.sub(r"'[^']*'", "'…'", first)


def compare(progs: list[Program], inputs: np.ndarray) -> Tally:
    """Run every program on both sides: a CompileError from metalsim is a refusal; an
    internal exception or a different value is a disagreement, shown with the program, as is
    a program metalsim accepts that g++ -pedantic-errors rejects."""
    tally = Tally()
    bad = ill_formed(progs)
    for n in sorted(bad):
        try:
            run_metalsim(progs[n], inputs)
        except metalsim.CompileError:
            tally.rejected[progs[n].family] += 1
            continue
        except Exception as exc:   # noqa: BLE001 -- every other exception is a finding
            tally.disagreed.append(f"metalsim raised {exc!r}\n{progs[n]!r}")
            continue
        tally.disagreed.append(f"metalsim accepts what g++ -pedantic-errors rejects\n"
                               f"{progs[n]!r}")
    progs = [p for n, p in enumerate(progs) if n not in bad]
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
