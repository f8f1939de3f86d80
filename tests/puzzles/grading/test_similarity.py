"""Similarity: pairs of students ranked by identical normalised kernels on non-trivial puzzles
find planted copies (comments added, names changed, respaced) and leave honest students
alone, trivial puzzles and common answers included."""

from __future__ import annotations

import re

from puzzles.catalog import all_puzzles
from puzzles.grading.similarity import (
    MIN_WRITTEN_TOKENS,
    REFERENCE,
    normalise,
    ranked_pairs,
    written_tokens,
)

REFERENCES = {p.number: p.solution() for p in all_puzzles()}
TEMPLATES = {p.number: p.template for p in all_puzzles()}
NONTRIVIAL = [n for n in REFERENCES if written_tokens(REFERENCES[n], TEMPLATES[n])
              >= MIN_WRITTEN_TOKENS]
ASSIGNED = [1, 2, 3, *NONTRIVIAL[:6]]


def honest(student: int, number: int) -> str:
    """A student's own kernel: trivial puzzles as everyone writes them, the others with a
    statement of their own (a different kernel once normalised)."""
    if number not in NONTRIVIAL:
        return REFERENCES[number]
    return REFERENCES[number] + f"\nuint mine_{student} = {student * 7 + number};\n"


def disguised(source: str) -> str:
    """A copy with every comment changed, names renamed and the spacing changed."""
    source = re.sub(r"\blocal_i\b", "lid", source)
    source = re.sub(r"\bmine_(\d+)\b", r"copied_\1", source)
    return "// my own work\n" + "\n".join(f"  {line}   // step" for line in source.split("\n"))


def classroom() -> tuple[dict[str, dict[int, str]], set[tuple[str, str]]]:
    kernels = {f"s{k:02}": {n: honest(k, n) for n in ASSIGNED} for k in range(40)}
    planted = set()
    for k in range(10):
        copier = f"copier{k:02}"
        kernels[copier] = {n: disguised(text) for n, text in kernels[f"s{k:02}"].items()}
        planted.add((copier, f"s{k:02}"))
    return kernels, planted


def test_planted_copies_rank_first_and_honest_students_are_not_listed():
    kernels, planted = classroom()
    pairs = ranked_pairs(kernels, REFERENCES, TEMPLATES)
    assert {(p.first, p.second) for p in pairs} == planted
    assert all(p.puzzles == tuple(NONTRIVIAL[:6]) for p in pairs)


def test_a_common_answer_on_a_nontrivial_puzzle_is_no_evidence():
    kernels, _ = classroom()
    number = NONTRIVIAL[0]
    for k in range(12):  # 12 of 50 students share one answer: a common one
        kernels[f"s{k:02}"][number] = REFERENCES[number] + "\nuint shared_answer = 1;\n"
    pairs = ranked_pairs(kernels, REFERENCES, TEMPLATES)
    assert not any(number in p.puzzles and "copier" not in p.first for p in pairs)


def test_a_copy_of_the_reference_pairs_with_the_reference():
    kernels, _ = classroom()
    kernels["leaker"] = {n: disguised(REFERENCES[n]) for n in ASSIGNED}
    top = ranked_pairs(kernels, REFERENCES, TEMPLATES)[0]
    assert {top.first, top.second} == {"leaker", REFERENCE}
    assert top.puzzles == tuple(NONTRIVIAL[:6])


def test_normalising_drops_comments_spacing_and_names_but_keeps_the_code():
    a = "uint i = thread_position_in_grid.x; // mine\nout[i] = a[i] + 10;"
    b = "/* x */ uint  k=thread_position_in_grid.x;\n\n  out[k]=a[k]+10;"
    assert normalise(a) == normalise(b)
    assert normalise(a) != normalise(a.replace("+ 10", "- 10"))
    assert normalise("float x = 1;") != normalise("int x = 1;")


def test_trivial_puzzles_are_the_ones_with_little_to_write():
    assert 1 not in NONTRIVIAL and 8 not in NONTRIVIAL  # Map, Threadgroup Memory
    assert 19 in NONTRIVIAL  # the tiled matmul
