"""The C++ lookup fuzzer of the test suite at a larger size: random programs over explicit
specialisations, name lookup, namespaces, inheritance, lvalues, operators and increments
(`operator++`/`operator--`), run by metalsim
and by g++ -std=c++14 (`tests/metalsim/cgen_cxx_lookup.py`); prints, by family, how many agree
bit for bit, how many metalsim refuses (with the refusals by message) and how many ill-formed
ones both reject, and every disagreement.

Run: python benchmarks/fuzz_cxx_lookup.py [programs] [seed]   (defaults 5,000 and 0; needs g++)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "metalsim"))

import cgen  # noqa: E402
import cgen_cxx_lookup  # noqa: E402

PER_GXX_RUN = 250


def main(count: int, seed: int) -> int:
    started = time.monotonic()
    tally = cgen_cxx_lookup.Tally()
    done = 0
    while done < count:
        ch = cgen.RandomChooser(seed * 1_000_003 + done)
        batch = [cgen_cxx_lookup.random_program(ch)
                 for _ in range(min(PER_GXX_RUN, count - done))]
        tally.add(cgen_cxx_lookup.compare(batch, cgen_cxx_lookup.make_inputs(seed + done)))
        done += len(batch)
    print(f"{done:,} programs, seed {seed} ({time.monotonic() - started:.0f} s): "
          f"{sum(tally.agreed.values()):,} agree with g++, "
          f"{sum(tally.refused.values()):,} refused, {sum(tally.rejected.values()):,} "
          f"ill-formed and refused by both, {len(tally.disagreed):,} disagree")
    for family in cgen_cxx_lookup.FAMILIES:
        print(f"  {family:15} agree {tally.agreed[family]:6,}  refused "
              f"{tally.refused[family]:6,}  both reject {tally.rejected[family]:6,}")
    print("refusals by message:")
    for reason, n in tally.reasons.most_common():
        print(f"  {n:6,}  {reason}")
    for finding in tally.disagreed:
        print(f"DISAGREEMENT: {finding}")
    return 1 if tally.disagreed else 0


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]] + [5_000, 0][len(sys.argv) - 1:]
    sys.exit(main(*args))
