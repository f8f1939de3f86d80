"""Mutated kernels (random token edits of source or header) end in a CompileError or a run with
diagnostics, never an internal exception: 9,000 mutants of the puzzles' solutions and 1,000 of
the corpus's real kernels (replaying the launches the corpus tests make) here, in about a
minute; `benchmarks/fuzz_pointers_and_mutants.py` runs more."""

from __future__ import annotations

import mutate
import pytest


def check(tally: dict[str, int], count: int) -> None:
    assert sum(tally.values()) == count
    assert tally.get("compile-error", 0) > 0 and tally.get("ok", 0) + tally.get(
        "diagnosed", 0) > 0  # both sides of the front end are reached


@pytest.mark.parametrize("seed", range(9))
def test_mutated_solutions_raise_only_compile_errors_or_are_diagnosed(seed: int) -> None:
    check(mutate.fuzz(1_000, seed), 1_000)


@pytest.fixture(scope="module")
def corpus() -> list[mutate.Seed]:
    pool = mutate.corpus_seeds(in_subprocess=True)
    assert len(pool) >= 40, [s.name for s in pool]   # every corpus kernel but a few variants
    return pool


@pytest.mark.parametrize("seed", range(2))
def test_mutated_corpus_kernels_raise_only_compile_errors_or_are_diagnosed(
        corpus: list[mutate.Seed], seed: int) -> None:
    check(mutate.fuzz(500, 100 + seed, corpus), 500)
