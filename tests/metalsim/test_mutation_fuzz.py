"""Mutated reference kernels (random token edits of every puzzle's solution and header) end in
a CompileError or a run with diagnostics, never an internal exception: 10,000 of them here, in
under a minute; `benchmarks/fuzz_pointers_and_mutants.py` runs more."""

from __future__ import annotations

import mutate
import pytest


@pytest.mark.parametrize("seed", range(10))
def test_mutated_kernels_raise_only_compile_errors_or_are_diagnosed(seed: int) -> None:
    tally = mutate.fuzz(1_000, seed)
    assert sum(tally.values()) == 1_000
    assert tally.get("compile-error", 0) > 0 and tally.get("ok", 0) + tally.get(
        "diagnosed", 0) > 0  # both sides of the front end are reached
