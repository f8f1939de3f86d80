"""Similarity: pairs of students ranked by identical normalised kernels on non-trivial puzzles
find planted copies (comments added, names changed, respaced) and leave honest students
alone, trivial puzzles and common answers included. The indexed report is the report its
definition gives pair by pair (`all_pairs`), on synthetic classes and on drawn ones (no pair
missed, none added), and normalising is what it was token by token."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from puzzles.catalog import all_puzzles
from puzzles.grading.similarity import (
    KEPT,
    MIN_WRITTEN_TOKENS,
    REFERENCE,
    normalise,
    ranked_pairs,
    written_tokens,
)
from tests.puzzles.grading.similar_class import STYLES, all_pairs, cosmetic, make_class

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


@pytest.mark.parametrize(("students", "seed"), [(20, 1), (60, 2), (100, 3)])
def test_the_indexed_report_is_the_all_pairs_report_on_a_synthetic_class(students, seed):
    kernels = make_class(students, seed)
    expected = all_pairs(kernels)
    assert expected  # the class has copies and shared styles to find
    assert ranked_pairs(kernels, REFERENCES, TEMPLATES) == expected
    assert ranked_pairs(iter(kernels.items()), REFERENCES, TEMPLATES) == expected


DRAWN_PUZZLES = [1, *NONTRIVIAL[:3]]


def variants(number: int) -> list[str]:
    """What a drawn student may hand in for a puzzle: the template, the reference, nothing,
    and a few styles (see `similar_class.STYLES`), so that students often coincide."""
    found = [TEMPLATES[number], REFERENCES[number], ""]
    for k in range(4):
        source = REFERENCES[number]
        for bit, rewrite in enumerate(STYLES):
            if k >> bit & 1:
                source = rewrite(source)
        found.append(source)
    return found


VARIANTS = {n: variants(n) for n in DRAWN_PUZZLES}
# A student: for each puzzle, no kernel (None) or one of its variants (by index).
STUDENT = st.fixed_dictionaries({n: st.none() | st.integers(0, len(VARIANTS[n]) - 1)
                                 for n in DRAWN_PUZZLES})


@settings(max_examples=60, deadline=None)
@given(st.lists(STUDENT, min_size=0, max_size=70), st.randoms(use_true_random=False))
def test_the_indexed_report_is_the_all_pairs_report_on_drawn_classes(students, rng):
    kernels = {f"d{k:02}": {n: cosmetic(VARIANTS[n][v], rng)
                            for n, v in choice.items() if v is not None}
               for k, choice in enumerate(students)}
    assert ranked_pairs(kernels, REFERENCES, TEMPLATES) == all_pairs(kernels)


def normalise_token_by_token(source: str) -> str:
    """Normalising as it was first written, one regex match and one token at a time: the
    oracle for the faster `normalise`."""
    token = re.compile(r"""
        (?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
      | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
      | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<number>\.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.'])*)
      | (?P<space>\s+)
      | (?P<punct>.)
    """, re.S | re.X)
    names: dict[str, str] = {}
    out = []
    for match in token.finditer(source):
        if match.lastgroup in ("comment", "space"):
            continue
        text = match.group()
        if (text[0].isalpha() or text[0] == "_") and text not in KEPT:
            text = names.setdefault(text, f"v{len(names)}")
        out.append(text)
    return " ".join(out)


def test_normalising_every_reference_and_template_is_as_token_by_token():
    for source in [*REFERENCES.values(), *TEMPLATES.values()]:
        assert normalise(source) == normalise_token_by_token(source)


FRAGMENTS = ["// note\n", "/* block */", "/* open", '"a // not a comment"', "'x'", "'\\''",
             '"\\"', '"', "'", "name", "uint", "float4", "_tmp1", "é", "1.0f", ".5", "0x1p+3",
             "1'000", "2e-3", " ", "\n", "\t", "+", "+=", "[", "]", "\\", "#define"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=4), max_size=40))
def test_normalising_drawn_text_is_as_token_by_token(fragments):
    source = "".join(fragments)
    assert normalise(source) == normalise_token_by_token(source)
