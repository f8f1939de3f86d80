"""Integrity checks: submissions identical to a reference solution or to another student's,
and text made safe to print (no terminal escape codes, no bidirectional overrides)."""

from __future__ import annotations

import re
from collections.abc import Mapping

# C0 and C1 control characters except tab and newline, DEL, and the Unicode bidirectional
# controls that make text display in another order than it is read ("Trojan source").
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def clean_text(text: str) -> str:
    """`text` without control characters (tab and newline are kept), and with any lone
    surrogate replaced, so it can neither rewrite a terminal nor fail to encode."""
    text = _CONTROL.sub("", text)
    return text.encode("utf-8", "replace").decode("utf-8")


def normalise(source: str) -> str:
    """A kernel with every run of whitespace made one space: what "identical" compares."""
    return " ".join(source.split())


def identical_submissions(kernels: Mapping[str, Mapping[int, str]],
                          references: Mapping[int, str],
                          templates: Mapping[int, str]) -> dict[str, list[str]]:
    """Flags per student: puzzles whose kernel equals the reference solution, or another
    student's kernel, after whitespace normalisation. Kernels equal to the template (an
    unsolved puzzle) are never flagged."""
    reference = {number: normalise(text) for number, text in references.items()}
    template = {number: normalise(text) for number, text in templates.items()}
    owners: dict[tuple[int, str], list[str]] = {}
    flags: dict[str, list[str]] = {student: [] for student in kernels}
    for student, by_puzzle in kernels.items():
        for number, source in sorted(by_puzzle.items()):
            text = normalise(source)
            if not text or text == template.get(number):
                continue
            if text == reference.get(number):
                flags[student].append(f"puzzle {number}: identical to the reference solution")
            owners.setdefault((number, text), []).append(student)
    for (number, _text), students in sorted(owners.items(), key=lambda item: item[0][0]):
        if len(students) > 1:
            for student in students:
                others = ", ".join(s for s in students if s != student)
                flags[student].append(f"puzzle {number}: identical to {others}")
    return flags

