"""Batch grading's accounting: the CPU time of the process tree."""

from __future__ import annotations

import time
from multiprocessing.context import BaseContext

from puzzles.grading.batch import TreeUsage
from puzzles.grading.sandbox import context

WORK = range(15_000_000)


def _counted_cpu_of_a_worker(ctx: BaseContext, work: range) -> float:
    """The tree CPU time counted while one worker sums `work`, this process's share
    (measured around the worker's start and join) left out."""
    usage = TreeUsage()
    mine = time.process_time()
    worker = ctx.Process(target=sum, args=(work,))
    worker.start()
    worker.join()
    mine = time.process_time() - mine
    assert worker.exitcode == 0
    return usage.cpu_seconds() - mine


def _cpu_of_summing(work: range) -> float:
    mine = time.process_time()
    sum(work)
    return time.process_time() - mine


def test_cpu_time_counts_a_worker_that_ends_before_any_memory_sample():
    ctx = context()
    _counted_cpu_of_a_worker(ctx, range(1))  # the fork server is up before anything is counted
    # A worker's start-up (re-importing the main module, e.g. pytest's) is counted too and
    # varies by machine, so it is measured with an empty worker and taken off.
    start_up = min(_counted_cpu_of_a_worker(ctx, range(1)) for _ in range(3))
    before = _cpu_of_summing(WORK)
    # The least of two runs: a busy machine only ever adds CPU time.
    counted = min(_counted_cpu_of_a_worker(ctx, WORK) for _ in range(2)) - start_up
    after = _cpu_of_summing(WORK)
    # Not counted at all would be ~0, counted twice ~2x: the bounds sit between.
    assert 0.5 * min(before, after) < counted < 1.5 * max(before, after) + 0.1
