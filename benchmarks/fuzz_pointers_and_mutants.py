"""The two fuzzers of the test suite at a larger size: random pointer programs against gcc,
and mutated kernels that must give a CompileError or a diagnosed run, never an internal
exception: the puzzles' solutions, and the corpus's real kernels (the corpus tests run first,
recording their launches, which the mutants replay).

Run: python benchmarks/fuzz_pointers_and_mutants.py [pointer programs] [mutants] [seed]
(defaults 2,000, 10,000 and 0; needs gcc on PATH for the first part)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "metalsim"))

import cgen  # noqa: E402
import cgen_pointers  # noqa: E402
import mutate  # noqa: E402

PER_GCC_RUN = 200


def pointer_programs(count: int, seed: int) -> None:
    started = time.monotonic()
    done = 0
    while done < count:
        ch = cgen.RandomChooser(seed * 1_000_003 + done)
        batch = [cgen_pointers.block(ch, ch.integer(3, 10))
                 for _ in range(min(PER_GCC_RUN, count - done))]
        cgen_pointers.compare_batch(batch, cgen.make_inputs(seed + done))
        done += len(batch)
    print(f"pointer programs agreeing with gcc: {done:,} "
          f"({-(-done // PER_GCC_RUN)} gcc compiles, {time.monotonic() - started:.0f} s)")


def mutants(count: int, seed: int) -> None:
    solutions, corpus = mutate.seeds(), mutate.corpus_seeds()
    started = time.monotonic()
    tally = mutate.fuzz(count, seed, solutions + corpus)
    shown = ", ".join(f"{k} {v:,}" for k, v in sorted(tally.items()))
    print(f"mutated kernels without an internal exception: {count:,} of {len(solutions)} "
          f"solutions and {len(corpus)} corpus kernels ({shown}; "
          f"{time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]] + [2_000, 10_000, 0][len(sys.argv) - 1:]
    pointer_programs(args[0], args[2])
    mutants(args[1], args[2])
