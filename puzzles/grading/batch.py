"""Grading a whole class: find the submissions in a folder, grade them `jobs` at a time (each in
its own worker, see `sandbox`), print one progress line per finished student, and measure the
memory and CPU time of the whole process tree.

Scheduling is fair to the students behind a slow one: submissions start in class order, and
one whose puzzle runs past the per-puzzle time limit gives its worker up (that puzzle is a
"timeout") and goes to the back of the queue for its other puzzles. So a slow submission
delays those behind it by at most one puzzle's limit per turn, never by its whole budget;
the budget (the time its workers ran, over all its turns) still ends it."""

from __future__ import annotations

import multiprocessing.connection
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from puzzles.grading.assignment import Assignment
from puzzles.grading.intake import Submission
from puzzles.grading.integrity import clean_text
from puzzles.grading.sandbox import Outcome, SubmissionRun, context

# How long the parent waits for a worker's message before it checks the time limits again,
# and how often it adds up the process tree's memory (a /proc scan, some milliseconds of CPU
# on a busy machine; `Memory.tree_bytes` bounds what falls between two samples anyway).
POLL_SECONDS = 0.1
SAMPLE_SECONDS = 1.0


@dataclass
class BatchResult:
    """What a batch took: the seed the hidden cases were drawn from, how many submissions
    were graded, the wall time, the CPU time of the process tree, and memory (see `Memory`).
    `outcomes` holds every outcome (in submission order) only where no `on_outcome` took them
    as they came."""

    seed: int
    graded: int
    seconds: float
    cpu_seconds: float
    memory: Memory
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def peak_memory_bytes(self) -> int:
        return self.memory.tree_bytes


@dataclass(frozen=True)
class Memory:
    """Peak memory over the whole run: the parent's own (its high-water mark, read at the end,
    so the writing of the outputs counts), the largest worker's (as each reported it, or as
    sampled), and the process tree's: the largest sampled sum of every live process's peak,
    or, where larger, the parent and fork server plus `jobs` of the largest worker, a bound
    that a worker living between two samples cannot escape."""

    parent_bytes: int
    largest_worker_bytes: int
    tree_bytes: int


def grade_all(submissions: list[Submission], assignment: Assignment, jobs: int = 1,
              progress: Callable[[str], None] | None = None,
              on_outcome: Callable[[Outcome], None] | None = None) -> BatchResult:
    """Grade every submission, at most `jobs` at once, handing each outcome to `on_outcome`
    as it finishes (or keeping them all in the result where there is none). `assignment.seed`
    must be set. A refused or missing submission gets its outcome without a worker. On
    Ctrl-C the workers are stopped and KeyboardInterrupt goes on up: what `on_outcome` took
    is all there is."""
    assert assignment.seed is not None, "call Assignment.with_seed() first"
    progress = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    kept: dict[int, Outcome] = {}
    done = 0

    def finish(index: int, outcome: Outcome) -> None:
        nonlocal done
        done += 1
        progress(progress_line(outcome, assignment, done, len(submissions)))
        if on_outcome is None:
            kept[index] = outcome
        else:
            on_outcome(outcome)

    ctx = context()
    assigned = list(assignment.points) or None
    pending: deque[int | SubmissionRun] = deque()  # not started, or waiting for a turn
    for index, s in enumerate(submissions):
        if s.refused or s.missing:
            finish(index, Outcome(s, error=s.refused or "nothing handed in"))
        else:
            pending.append(index)
    position: dict[int, int] = {}
    running: list[SubmissionRun] = []
    usage = TreeUsage()
    started = time.monotonic()
    next_sample = 0.0
    interrupted = _CtrlC()
    try:
        while pending or running:
            interrupted.check()
            while pending and len(running) < max(jobs, 1):
                turn = pending.popleft()
                if isinstance(turn, SubmissionRun):
                    turn.resume()
                    running.append(turn)
                    continue
                run = SubmissionRun(submissions[turn], assigned, assignment.seed,
                                    assignment.limits, ctx)
                position[id(run)] = turn
                running.append(run)
            multiprocessing.connection.wait([r.connection for r in running], POLL_SECONDS)
            now = time.monotonic()
            for run in running:
                run.receive()
                run.check_time(now)
            if now >= next_sample:
                usage.sample()
                next_sample = now + SAMPLE_SECONDS
            interrupted.check()  # a worker Ctrl-C reached too is not a result
            for run in [r for r in running if r.waiting]:
                running.remove(run)
                pending.append(run)
            for run in [r for r in running if r.done]:
                running.remove(run)
                usage.worker(run.peak_bytes)
                finish(position.pop(id(run)), run.outcome())
    finally:
        interrupted.restore()
        for run in running:
            run.stop()
    usage.sample()
    return BatchResult(assignment.seed, done, time.monotonic() - started, usage.cpu_seconds(),
                       usage.memory(jobs), [kept[i] for i in sorted(kept)])


class _CtrlC:
    """Ctrl-C noted, not raised wherever the parent happens to be (half-way through starting
    a worker, say): `check` raises KeyboardInterrupt between steps of the loop."""

    def __init__(self) -> None:
        self.seen = False
        self.previous = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._note)

    def _note(self, _signum: int, _frame: object) -> None:
        self.seen = True

    def check(self) -> None:
        if self.seen:
            raise KeyboardInterrupt

    def restore(self) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)


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
    """The memory and CPU time of this process and all its descendants. Each memory sample
    adds up every live process's peak resident size (VmHWM), an upper bound of the tree's
    resident memory at that moment; `peak` is the largest sample. Workers also report their
    own peak when they finish (`worker`). CPU time is exact, not sampled (a worker may live
    a few milliseconds): this process's own user and system time plus, for each child (the
    fork server), its own and that of the children it has reaped (every worker, killed ones
    too), counted from the moment the usage was created."""

    def __init__(self) -> None:
        self.peak = 0
        self.largest_worker = 0
        self.cpu_at_start = _tree_cpu_ticks()

    def sample(self) -> int:
        pids = _descendants(os.getpid()) | {os.getpid()}
        total = sum(_peak_rss(pid) for pid in pids)
        self.peak = max(self.peak, total)
        return total

    def worker(self, peak_bytes: int) -> None:
        """A finished worker's own peak, as it reported it."""
        self.largest_worker = max(self.largest_worker, peak_bytes)

    def memory(self, jobs: int) -> Memory:
        """The run's peaks (see `Memory`); call after the last `sample`."""
        me = os.getpid()
        parent = _peak_rss(me)
        children = _descendants(me)
        workers = [_peak_rss(pid) for pid in children]
        largest = max([self.largest_worker, *workers])
        helpers = sum(workers)  # the fork server (and any worker still alive)
        bound = parent + helpers + max(jobs, 1) * largest
        return Memory(parent, largest, max(self.peak, bound))

    def cpu_seconds(self) -> float:
        """CPU time since the usage was created; call once every worker has been joined."""
        return (_tree_cpu_ticks() - self.cpu_at_start) / os.sysconf("SC_CLK_TCK")


def peak_memory_of_this_process() -> int:
    """This process's peak resident size so far (0 where there is no /proc)."""
    return _peak_rss(os.getpid())


def _children() -> dict[int, list[int]]:
    """Every process's children, from /proc (none where there is no /proc, e.g. macOS)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return children
    for entry in entries:
        if not entry.isdigit():
            continue
        fields = _stat_fields(int(entry))
        if fields is not None:
            children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def _descendants(root: int) -> set[int]:
    """The processes below `root`."""
    children = _children()
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _tree_cpu_ticks() -> int:
    """This process's user and system time, plus each child's own and that of the children it
    waited for (its descendants that have ended), in clock ticks."""
    me = os.getpid()
    total = _cpu_ticks(me, reaped=False)
    for child in _children().get(me, []):
        total += _cpu_ticks(child, reaped=True)
    return total


def _cpu_ticks(pid: int, reaped: bool) -> int:
    fields = _stat_fields(pid)
    if fields is None:
        return 0
    # utime, stime, then cutime, cstime (fields 14 to 17 of /proc/PID/stat)
    return sum(int(f) for f in fields[11:15 if reaped else 13])


def _stat_fields(pid: int) -> list[bytes] | None:
    """/proc/PID/stat from its third field (the state) on, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2:].split()


def _peak_rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0
