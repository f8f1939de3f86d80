"""The seed of a puzzle's hidden cases for one submission: a keyed hash of the grader's secret,
the student, the puzzle and the kernel's text.

Cases drawn this way differ from student to student and from one version of a kernel to the
next, so a table of the answers of an earlier grading (one's own or a classmate's) is a table
of the wrong cases; grading the same kernel again draws the same cases, so a regrade is
reproducible. The seed is recorded in the instructor's `grades.json`; `puzzle_cases(puzzle,
seed=...)` draws the cases again from it.
"""

from __future__ import annotations

import hashlib
import hmac
import unicodedata

from puzzles.grading.assignment import LEARNER_SEED

SEED_BITS = 62


def case_seed(secret: int, student: str, number: int, header: str, source: str) -> int:
    """A seed in [1, 2**62) from HMAC-SHA256 keyed by `secret` (never `LEARNER_SEED`, the
    seed of the cases learners see)."""
    key = secret.to_bytes(32, "big", signed=True)
    message = "\0".join((unicodedata.normalize("NFC", student), str(number), header, source))
    digest = hmac.new(key, message.encode("utf-8", "surrogatepass"), hashlib.sha256).digest()
    seed = int.from_bytes(digest[:8], "big") >> (64 - SEED_BITS)
    return seed if seed != LEARNER_SEED else 1
