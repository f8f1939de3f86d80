"""A synthetic class for the similarity report, built from the puzzles' real reference kernels:
each student writes every puzzle in a style of their own (the choices real students make
between equivalent spellings: `k++` or `++k`, `int` or `uint`, `a += b` or `a = a + b`, ...,
some choices more popular than others, so a few styles are common and many are rare), about
a third add a line of their own, and everyone changes what normalising drops anyway
(comments, spacing, names). Some students copy another's whole submission, some a few
puzzles of it, disguised. `make_class(students, seed)` returns the class's kernels;
`all_pairs` is the report computed pair by pair, as its definition says."""

from __future__ import annotations

import itertools
import random
import re
from collections import Counter
from collections.abc import Callable

from puzzles.catalog import all_puzzles
from puzzles.grading.similarity import (
    COMMON_SHARE,
    MIN_COMMON,
    MIN_WRITTEN_TOKENS,
    REFERENCE,
    Pair,
    normalise,
    written_tokens,
)

REFERENCES = {p.number: p.solution() for p in all_puzzles()}
TEMPLATES = {p.number: p.template for p in all_puzzles()}


def _first(pattern: str, replacement: str) -> Callable[[str], str]:
    return lambda source: re.sub(pattern, replacement, source, count=1)


def _every(pattern: str, replacement: str) -> Callable[[str], str]:
    return lambda source: re.sub(pattern, replacement, source)


# Rewrites that keep the kernel's meaning but not its normalised text: a student's style is
# the subset they apply (a rewrite that finds nothing to change leaves the kernel as it is).
STYLES: tuple[Callable[[str], str], ...] = (
    _every(r"\+\+(\w+)", r"\1++"),                           # k++ for ++k
    _first(r"\b(\w+) \+= ", r"\1 = \1 + "),                  # a = a + b for a += b
    _first(r"\buint (\w+) = ", r"int \1 = "),                # int for uint
    _every(r"\b0\.0f\b", "0"),                               # 0 for 0.0f
    _first(r"\b(\w+) < (\w+)", r"\2 > \1"),                  # n > i for i < n
    _first(r"\buint (\w+) = ", r"const uint \1 = "),         # const locals
    _first(r"\bfloat (\w+) = ", r"float \1;\n\1 = "),       # declare, then assign
    _every(r"\bunsigned\b|\buint\b", "unsigned int"),        # unsigned int for uint
)
COPY_SHARE = 0.04     # students who copy another's whole submission
PARTIAL_SHARE = 0.06  # ...and who copy two or three puzzles of it
OWN_LINE_SHARE = 0.3  # a student's kernel with a statement nobody else wrote


def cosmetic(source: str, rng: random.Random) -> str:
    """What normalising drops: comments, spacing and the names of variables."""
    names = sorted(set(re.findall(r"\b(?:local_[a-z]|acc|size|row|col)\b", source)))
    for name in names:
        source = re.sub(rf"\b{name}\b", f"{name}_{rng.randrange(1000)}", source)
    lines = [("  " * rng.randrange(3)) + line + ("  // here" if rng.random() < 0.2 else "")
             for line in source.split("\n")]
    return f"// puzzle, attempt {rng.randrange(9)}\n" + "\n".join(lines)


def written(number: int, student: int, popularity: list[float], rng: random.Random) -> str:
    """A student's own kernel for puzzle `number`: a style drawn by the rewrites' popularity,
    sometimes a line of their own, always cosmetic changes."""
    source = REFERENCES[number]
    for rewrite, share in zip(STYLES, popularity, strict=True):
        if rng.random() < share:
            source = rewrite(source)
    if rng.random() < OWN_LINE_SHARE:
        source += f"\nuint mine = {student * 31 + number};\n"
    return cosmetic(source, rng)


def make_class(students: int, seed: int = 0,
               puzzles: list[int] | None = None) -> dict[str, dict[int, str]]:
    """`students` submissions of every puzzle in `puzzles` (all of them by default)."""
    rng = random.Random(seed)
    numbers = puzzles or sorted(REFERENCES)
    popularity = {n: [rng.uniform(0.05, 0.6) for _ in STYLES] for n in numbers}
    kernels = {f"s{k:04}": {n: written(n, k, popularity[n], rng) for n in numbers}
               for k in range(students)}
    ids = list(kernels)
    for sid in ids:
        share = rng.random()
        if share < COPY_SHARE + PARTIAL_SHARE:
            source = kernels[rng.choice(ids)]
            copied = numbers if share < COPY_SHARE else rng.sample(numbers, min(3, len(numbers)))
            for n in copied:
                kernels[sid][n] = cosmetic(source[n], rng)
    return kernels


def all_pairs(kernels: dict[str, dict[int, str]]) -> list[Pair]:
    """The similarity report by its definition, pair by pair (the oracle the indexed report
    must match): for every two students (the reference solutions one more), the non-trivial
    puzzles where both normalised kernels are the same, neither its template nor empty, and
    held by at most the common number of students."""
    nontrivial = {n for n, text in REFERENCES.items()
                  if written_tokens(text, TEMPLATES.get(n, "")) >= MIN_WRITTEN_TOKENS}
    everyone = {**kernels, REFERENCE: REFERENCES}
    texts = {sid: {n: normalise(source) for n, source in by_puzzle.items() if n in nontrivial}
             for sid, by_puzzle in everyone.items()}
    common = max(MIN_COMMON, int(COMMON_SHARE * len(kernels)))
    holders = Counter((n, text) for sid, by_puzzle in texts.items() if sid != REFERENCE
                      for n, text in by_puzzle.items())
    pairs = []
    for first, second in itertools.combinations(sorted(everyone), 2):
        same = tuple(sorted(
            n for n, text in texts[first].items()
            if texts[second].get(n) == text and text
            and text != normalise(TEMPLATES.get(n, "")) and holders[n, text] <= common))
        if same:
            pairs.append(Pair(first, second, same))
    return sorted(pairs, key=lambda p: (-len(p.puzzles), p.first, p.second))
