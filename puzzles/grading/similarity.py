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
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from metalsim.lang.types import TYPE_NAMES

REFERENCE = "(reference solution)"
MIN_WRITTEN_TOKENS = 50  # tokens a puzzle's reference adds to its template: below, trivial
COMMON_SHARE = 0.05      # a kernel shared by more than this share of the class is common
MIN_COMMON = 3           # ...and by more than this many students in a small class

# A token (a string or character literal, a name, a number, any other character) is the
# group; comments and spacing match outside it, so `findall` gives every token, and an empty
# string for each comment or space, without a Python loop.
_TOKEN = re.compile(r"""
    //[^\n]*|/\*.*?(?:\*/|\Z)|\s+
  | ("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'
    | [A-Za-z_][A-Za-z0-9_]*
    | \.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.'])*
    | .)
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
    return list(filter(None, _TOKEN.findall(source)))


def normalise(source: str) -> str:
    """The kernel with comments and whitespace dropped and every name that is not the
    language's renamed by order of first appearance (`v0`, `v1`, ...): two kernels that
    differ only in those normalise alike."""
    found = tokens(source)
    names: dict[str, str] = {}
    for token in dict.fromkeys(found):  # each distinct token once, in order of appearance
        if (token[0].isalpha() or token[0] == "_") and token not in KEPT:
            names[token] = f"v{len(names)}"
    return " ".join(map(names.get, found, found))


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
    only a digest of each normalised kernel is kept, indexed by puzzle and digest, and only
    the students under one entry are paired (see `_pairs`): no pair of students is compared
    that shares nothing."""
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
    return _pairs([(number, group) for (number, _), group in owners.items() if len(group) > 1
                   and sum(s != REFERENCE for s in group) <= common])


def _pairs(groups: list[tuple[int, list[str]]]) -> list[Pair]:
    """Every two students of a group (the holders of one kernel) paired, with the puzzle of
    each group they share. Students are numbered in name order and a pair is one number
    (first * count + second), so counting and ranking pairs compares numbers, not names;
    the work is the size of the report (the pairs within groups), never all pairs."""
    names = sorted({student for _, group in groups for student in group})
    number_of = {name: k for k, name in enumerate(names)}
    count = len(names)
    shared: defaultdict[int, list[int]] = defaultdict(list)
    for puzzle, group in sorted(groups, key=lambda g: g[0]):  # each pair's puzzles in order
        for first, second in itertools.combinations(sorted(map(number_of.__getitem__, group)), 2):
            shared[first * count + second].append(puzzle)
    ranked = sorted(shared.items(), key=lambda item: (-len(item[1]), item[0]))
    return [Pair(names[key // count], names[key % count], tuple(puzzles))
            for key, puzzles in ranked]
