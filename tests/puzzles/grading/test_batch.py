"""Batch grading's accounting: the CPU time of the process tree."""

from __future__ import annotations

import time

from puzzles.grading.batch import TreeUsage
from puzzles.grading.sandbox import context

WORK = range(15_000_000)


def test_cpu_time_counts_a_worker_that_ends_before_any_memory_sample():
    ctx = context()
    started = ctx.Process(target=sum, args=(range(1),))  # the fork server is up before...
    started.start()
    started.join()
    usage = TreeUsage()  # ...the count starts, so only the worker below is counted
    mine = time.process_time()
    sum(WORK)
    mine = time.process_time() - mine
    worker = ctx.Process(target=sum, args=(WORK,))
    worker.start()
    worker.join()
    counted = usage.cpu_seconds() - mine  # this process's own share is counted too
    assert worker.exitcode == 0
    assert 0.5 * mine < counted < 1.5 * mine + 0.1
