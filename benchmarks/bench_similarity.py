"""The similarity report (`puzzles.grading.similarity.ranked_pairs`, which the gradebook runs
over the whole class) on synthetic classes built from the puzzles' real reference kernels
(tests/puzzles/grading/similar_class.py: every puzzle written in each student's own style,
lines of their own, whole and partial copies, all disguised): the CPU time it takes (the
better of two runs) and how many pairs it reports. Its work is normalising every kernel
(linear in the class) and pairing the holders of each shared kernel (the report's size:
quadratic only as far as the report is, shared kernels being at most 5% of the class).

    python benchmarks/bench_similarity.py                       # 100, 300 and 1,000 students
    python benchmarks/bench_similarity.py --students 3000       # one size
    python benchmarks/bench_similarity.py --check               # ...and against all pairs

`--check` also computes the report pair by pair (`all_pairs`: 23 s of CPU at 1,000 students,
3 minutes at 3,000) and says whether the two agree.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from puzzles.grading.similarity import ranked_pairs  # noqa: E402
from tests.puzzles.grading.similar_class import (  # noqa: E402
    REFERENCES,
    TEMPLATES,
    all_pairs,
    make_class,
)


def cpu_seconds(fn, *args):
    """`fn(*args)` and the CPU time it took (the better of two runs)."""
    best, result = float("inf"), None
    for _ in range(2):
        start = time.process_time()
        result = fn(*args)
        best = min(best, time.process_time() - start)
    return result, best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, nargs="*", default=[100, 300, 1000])
    parser.add_argument("--check", action="store_true", help="compare with all pairs")
    args = parser.parse_args()
    print(f"{'students':>8} {'kernels':>8} {'CPU s':>7} {'per student ms':>15} {'pairs':>8}"
          + (f" {'all-pairs s':>12} {'same':>5}" if args.check else ""))
    for students in args.students:
        kernels = make_class(students, seed=students)
        pairs, seconds = cpu_seconds(ranked_pairs, kernels, REFERENCES, TEMPLATES)
        line = (f"{students:>8} {students * len(REFERENCES):>8} {seconds:>7.2f} "
                f"{1e3 * seconds / students:>15.2f} {len(pairs):>8}")
        if args.check:
            start = time.process_time()
            expected = all_pairs(kernels)
            line += f" {time.process_time() - start:>12.2f} {str(expected == pairs):>5}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
