"""gcc as the oracle for pointers: random programs with pointer arithmetic, prefix and postfix
++/-- on pointers (whose values are used), pointers reassigned under divergent branches, `?:`
between pointers into different arrays, arrays of pointers, pointer comparisons, and reads and
writes through them agree with gcc bit for bit: 2,000 programs here, 200 per gcc compile;
`benchmarks/fuzz_pointers_and_mutants.py` runs more. Needs gcc on PATH."""

from __future__ import annotations

import re
import shutil

import cgen
import cgen_pointers
import pytest

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")

PROGRAMS_PER_GCC_RUN = 200


@pytest.mark.parametrize("seed", range(10))
def test_random_pointer_programs_agree_with_gcc(seed: int) -> None:
    ch = cgen.RandomChooser(seed)
    programs = [cgen_pointers.block(ch, ch.integer(3, 10)) for _ in range(PROGRAMS_PER_GCC_RUN)]
    cgen_pointers.compare_batch(programs, cgen.make_inputs(seed))


def test_the_generator_writes_every_pointer_form() -> None:
    """The forms the oracle is meant to cover do occur (the generator is not degenerate)."""
    ch = cgen.RandomChooser(99)
    text = "".join(cgen_pointers.block(ch, 10).msl_body for _ in range(200))
    for form in (r"\*p\d+\+\+", r"\*--p\d+", r"\(p\d+\+\+\)\[", r"\* p\d+ = p\d+\+\+;",
                 r"p\d+ [+-]= \d", r"[+-]{2}p\d+;", r"p\d+[+-]{2};", r"\? \(\(?\w+",
                 r"if .* \{ p\d+ = .*\} else \{", r"\w+\* p\d+\[2\] = \{", r"p\d+ [=!]= p\d+",
                 r"const device (int|float)\*", r"thread (int|float)\*"):
        assert re.search(form, text), form
