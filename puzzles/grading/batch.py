"""Grading a whole class: find the submissions in a folder, grade them `jobs` at a time (each in
its own worker, see `sandbox`), print one progress line per finished student, and measure the
memory of the whole process tree while it runs."""

from __future__ import annotations

import multiprocessing.connection
import os
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from puzzles.grading.assignment import Assignment
from puzzles.grading.intake import Submission
from puzzles.grading.integrity import clean_text
from puzzles.grading.sandbox import Outcome, SubmissionRun, context

SAMPLE_SECONDS = 0.1


@dataclass
class BatchResult:
    """Every submission's outcome (in submission order), the seed the hidden cases were drawn
    from, the wall time, and the peak memory and CPU time of the process tree (see
    `TreeUsage`)."""

    outcomes: list[Outcome]
    seed: int
    seconds: float
    peak_memory_bytes: int
    cpu_seconds: float


def grade_all(submissions: list[Submission], assignment: Assignment, jobs: int = 1,
              progress: Callable[[str], None] | None = None) -> BatchResult:
    """Grade every submission, at most `jobs` at once. `assignment.seed` must be set. A
    refused or missing submission gets its outcome without a worker."""
    assert assignment.seed is not None, "call Assignment.with_seed() first"
    progress = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    ctx = context()
    assigned = list(assignment.points) or None
    finished: dict[int, Outcome] = {}  # by position: ids of refused entries may repeat
    for index, s in enumerate(submissions):
        if s.refused or s.missing:
            finished[index] = Outcome(s, error=s.refused or "nothing handed in")
            progress(progress_line(finished[index], assignment, len(finished), len(submissions)))
    pending = deque(index for index in range(len(submissions)) if index not in finished)
    position: dict[int, int] = {}
    running: list[SubmissionRun] = []
    usage = TreeUsage()
    started = time.monotonic()
    next_sample = 0.0
    while pending or running:
        while pending and len(running) < max(jobs, 1):
            index = pending.popleft()
            run = SubmissionRun(submissions[index], assigned, assignment.seed,
                                assignment.limits, ctx)
            position[id(run)] = index
            running.append(run)
        multiprocessing.connection.wait([r.connection for r in running], SAMPLE_SECONDS)
        now = time.monotonic()
        for run in running:
            run.receive()
            run.check_time(now)
        if now >= next_sample:
            usage.sample()
            next_sample = now + SAMPLE_SECONDS
        for run in [r for r in running if r.done]:
            running.remove(run)
            outcome = run.outcome()
            finished[position.pop(id(run))] = outcome
            progress(progress_line(outcome, assignment, len(finished), len(submissions)))
    usage.sample()
    return BatchResult([finished[index] for index in range(len(submissions))], assignment.seed,
                       time.monotonic() - started, usage.peak, usage.cpu_seconds())


def progress_line(outcome: Outcome, assignment: Assignment, done: int, total: int) -> str:
    """`[#####.....]  3/30  alice: 7/10 points (pass 3, timeout 1) in 2.1 s`."""
    width = 20
    filled = width * done // max(total, 1)
    bar = "#" * filled + "." * (width - filled)
    statuses: dict[str, int] = {}
    for row in outcome.rows:
        statuses[str(row["status"])] = statuses.get(str(row["status"]), 0) + 1
    summary = ", ".join(f"{k} {v}" for k, v in sorted(statuses.items()))
    score, best = assignment.score(outcome.rows)
    what = f"{outcome.status.upper()}: {outcome.error}" if outcome.error else \
        f"{score:g}/{best:g} points ({summary})"
    return clean_text(f"[{bar}] {done:>{len(str(total))}}/{total}  {outcome.submission.id}: "
                      f"{what} in {outcome.seconds:.1f} s")


class TreeUsage:
    """The memory and CPU time of this process and all its descendants, sampled. Each sample
    adds up every live process's peak resident size (VmHWM), an upper bound of the tree's
    resident memory at that moment; `peak` is the largest sample. CPU time is each process's
    user and system time when last seen (so it misses at most one sampling period of each)."""

    def __init__(self) -> None:
        self.peak = 0
        self.cpu_ticks: dict[int, int] = {}

    def sample(self) -> int:
        pids = _descendants(os.getpid()) | {os.getpid()}
        total = sum(_peak_rss(pid) for pid in pids)
        for pid in pids:
            ticks = _cpu_ticks(pid)
            if ticks is not None:
                self.cpu_ticks[pid] = ticks
        self.peak = max(self.peak, total)
        return total

    def cpu_seconds(self) -> float:
        return sum(self.cpu_ticks.values()) / os.sysconf("SC_CLK_TCK")


def _descendants(root: int) -> set[int]:
    """The processes below `root`, from /proc (none where there is no /proc, e.g. macOS)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return set()
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _cpu_ticks(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()
    return int(fields[11]) + int(fields[12])  # utime and stime (fields 14 and 15 of stat)


def _peak_rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0
