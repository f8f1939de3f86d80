"""Similarity: pairs of students ranked by how many non-trivial puzzles they solved with the
same kernel, up to comments, whitespace and the names of variables.

A trivial puzzle (Map: one line to write) has one natural answer, so identical kernels there
prove nothing; nor does a kernel that many students share. What is rare is two students with
the same kernel, once normalised, on several puzzles that each take real writing: that is what
the report counts and ranks. The reference solutions take part as one more "student", so a
copy of the solutions bundle shows up too.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from metalsim.lang.types import TYPE_NAMES

REFERENCE = "(reference solution)"
MIN_WRITTEN_TOKENS = 50  # tokens a puzzle's reference adds to its template: below, trivial
COMMON_SHARE = 0.05      # a kernel shared by more than this share of the class is common
MIN_COMMON = 3           # ...and by more than this many students in a small class

_TOKEN = re.compile(r"""
    (?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<number>\.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.'])*)
  | (?P<space>\s+)
  | (?P<punct>.)
""", re.S | re.X)
# Words that are the language's, not the student's: kept as they are.
KEPT = frozenset({
    "if", "else", "for", "while", "do", "switch", "case", "default", "break", "continue",
    "return", "sizeof", "const", "constexpr", "static", "true", "false", "device",
    "constant", "threadgroup", "thread", "unsigned", "signed", "auto", "struct", "typedef",
    "using", "template", "inline", "volatile", "define", "include", "ifdef", "ifndef", "endif",
}) | frozenset(TYPE_NAMES)


@dataclass(frozen=True)
class Pair:
    """Two students (or a student and the reference) and the puzzles where their normalised
    kernels are identical."""

    first: str
    second: str
    puzzles: tuple[int, ...]


def tokens(source: str) -> list[str]:
    """The kernel's tokens without comments or whitespace."""
    return [m.group() for m in _TOKEN.finditer(source)
            if m.lastgroup not in ("comment", "space")]


def normalise(source: str) -> str:
    """The kernel with comments and whitespace dropped and every name that is not the
    language's renamed by order of first appearance (`v0`, `v1`, ...): two kernels that
    differ only in those normalise alike."""
    names: dict[str, str] = {}
    out = []
    for token in tokens(source):
        if (token[0].isalpha() or token[0] == "_") and token not in KEPT:
            token = names.setdefault(token, f"v{len(names)}")
        out.append(token)
    return " ".join(out)


def written_tokens(solution: str, template: str) -> int:
    """How many tokens the reference solution adds to the template: a puzzle's size."""
    left = Counter(tokens(solution))
    left.subtract(Counter(tokens(template)))
    return sum(n for n in left.values() if n > 0)


def ranked_pairs(kernels: Mapping[str, Mapping[int, str]]
                 | Iterable[tuple[str, Mapping[int, str]]],
                 references: Mapping[int, str], templates: Mapping[int, str]) -> list[Pair]:
    """Pairs with at least one identical non-trivial kernel, most identical first (then by
    name). A kernel equal to its template, or shared by more than a common share of the
    class, counts for nobody. `kernels` (each student's kernels by puzzle) may be a stream:
    only a digest of each normalised kernel is kept."""
    nontrivial = {n for n, text in references.items()
                  if written_tokens(text, templates.get(n, "")) >= MIN_WRITTEN_TOKENS}
    owners: dict[tuple[int, bytes], list[str]] = {}
    given = {n: normalise(text) for n, text in templates.items()}
    students = 0
    stream = kernels.items() if isinstance(kernels, Mapping) else kernels
    for student, by_puzzle in itertools.chain(stream, [(REFERENCE, references)]):
        students += student != REFERENCE
        for number, source in by_puzzle.items():
            if number not in nontrivial:
                continue
            text = normalise(source)
            if text and text != given.get(number, ""):
                digest = hashlib.blake2b(text.encode(), digest_size=16).digest()
                owners.setdefault((number, digest), []).append(student)
    common = max(MIN_COMMON, int(COMMON_SHARE * students))
    shared: dict[tuple[str, str], list[int]] = {}
    for (number, _text), students in owners.items():
        if len(students) < 2 or len([s for s in students if s != REFERENCE]) > common:
            continue
        for first, second in itertools.combinations(sorted(students), 2):
            shared.setdefault((first, second), []).append(number)
    pairs = [Pair(a, b, tuple(sorted(p))) for (a, b), p in shared.items()]
    return sorted(pairs, key=lambda p: (-len(p.puzzles), p.first, p.second))
