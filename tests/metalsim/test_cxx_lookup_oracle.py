"""g++ as the oracle for C++ lookup: random programs over explicit specialisations, name
lookup (enumerations included), namespaces (aliases, using-declarations), namespace scoping
(the same names in the global namespace and nested namespaces, argument-dependent lookup),
inheritance (multiple and template bases, pointer and reference conversions, casts,
qualified members, `using B::f;`, hidden friends), lvalues (conditional, comma and
assignment lvalues on locals, members, elements and references), operators (operator
functions on enumerations and structs beside the built-in operators) and increments (prefix
and postfix `operator++`/`operator--`, member and free) (`cgen_cxx_lookup`) give
the same ints in metalsim and compiled by g++ -std=c++14; a construct metalsim refuses with a
CompileError is counted, never a different value, and what g++ -pedantic-errors rejects
metalsim refuses too. 400 programs here, one g++ compile per 100;
`benchmarks/fuzz_cxx_lookup.py` runs more. Needs g++ on PATH."""

from __future__ import annotations

import re
import shutil

import cgen
import cgen_cxx_lookup
import pytest

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

PROGRAMS_PER_GXX_RUN = 100


@pytest.mark.parametrize("seed", range(4))
def test_random_lookup_programs_agree_with_gxx_or_are_refused(seed: int) -> None:
    ch = cgen.RandomChooser(seed)
    programs = [cgen_cxx_lookup.random_program(ch) for _ in range(PROGRAMS_PER_GXX_RUN)]
    tally = cgen_cxx_lookup.compare(programs, cgen_cxx_lookup.make_inputs(seed))
    assert not tally.disagreed, tally.disagreed[0]
    # Most programs run: every family agrees somewhere, and refusals stay the exception.
    assert set(tally.agreed) == set(cgen_cxx_lookup.FAMILIES), tally.agreed
    assert sum(tally.agreed.values()) >= 0.7 * PROGRAMS_PER_GXX_RUN, tally.reasons


def test_the_generator_writes_every_construct_it_is_meant_to_cover() -> None:
    """The forms the oracle is meant to cover do occur (the generator is not degenerate)."""
    ch = cgen.RandomChooser(99)
    programs = [cgen_cxx_lookup.random_program(ch) for _ in range(300)]
    text = "".join(p.header + p.body for p in programs)
    for form in (r"template <> \w+ f<\w+>\(", r"template <> \w+ f\(", r"f<T>\(x\)",
                 r"fu<int>\(", r"template <> int h<\d>\(\)", r"\bna::[KM]\b", r"[^:\w]::G\b",
                 r"int h\(int [KM]\)", r"using namespace na;", r"na::nb::", r"na::P::k",
                 r"struct D : B", r"struct E : D", r"\+\+\(\+\+a\)", r"\(a \+= \d\) \^= b",
                 r"thread int& r\d+ = \+\+a", r"\(a = b\) \+= \d", r"d\.B::get\(\)",
                 r"B sliced = d;", r"const thread B& rb = d;", r"C\(int a, int b\) : B\{a\}",
                 r"namespace al = na::nb;", r"using na::nb::inner;", r"enum class Level",
                 r"na::KC", r"\(c \? \w+(\.\w|\[[\w +]+\])? : ", r"\+\+\(c \? ",
                 r"thread int& t\d+ = c \? ", r"\(c \? p : q\)\.y = ", r"pick\(a, ",
                 r"struct M : A, B", r"thread B\* pb\d+ = &mm;", r"static_cast<thread M\*>",
                 r"static_cast<thread B&>\(mm\)", r"B\(mm\)", r"rank\(&\w+\)",
                 r"\(\(thread A&\)mm\)", r"TD\(T x\) : TB<T>\(", r"TB<int>\{x\}",
                 r"TB<T>::t", r"hh\.B::v = ", r"return v \* 10 \+ B::v",
                 r"enum Kind \{ SA", r"\(p = q\)\.x \+= ", r"\(\w+(\.\w|\[[\w +]+\])?, \w+",
                 r"\*&\(\+\+", r"S::M::M[XY]", r"enum \{ AW", r"by_mode<",
                 r"namespace na::nb \{", r"namespace \{ constant",
                 r"namespace nc \{ using namespace na;", r"namespace nd \{ using na::f;",
                 r"\{ using na::f;", r"int p\(int K\)", r"struct M \{ int get\(\)",
                 r"namespace an = na::nb;", r"inline namespace v1", r"ad\(na::S\{",
                 r"ad\(held\)", r"ad\(&ps\)", r"int ad\(Hold<U> h\)", r"\+ ad\(S\{x\}\)",
                 r"\{ namespace al = na(::nb)?; out\[", r"using B::get;", r"friend int peek\(",
                 r"friend int operator\*\(U a", r"class C : public B", r"id\.TB<int>::t",
                 r"peek_t\(td\)", r"enum class F", r"operator (int|float|short|uint)\(\) const",
                 r"template <typename T> int operator", r"int operator[-~]\([ESF] a\)",
                 r"void operator\|=\(thread E& a", r"int operator[^(]+\(const thread S&",
                 r"  P operator(\+\+|--)\(int\) \{", r"P operator(\+\+|--)\(thread P& p, int\)",
                 r"thread P& operator(\+\+|--)\(thread P& p\)",
                 r"  thread P& operator(\+\+|--)\(\) \{", r"P operator(\+\+|--)\(\) const",
                 r"return P\{old\.v \* 2", r"for \(E x = EA; x != ED; \+\+x\)",
                 r"thread P& r\d+ = (\+\+|--)p;", r"\(\+\+P\{\d\}\)\.v", r"int\(e--\)"):
        assert re.search(form, text), form
