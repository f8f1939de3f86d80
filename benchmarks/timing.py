"""Timing helpers shared by the benchmark scripts (run them as `python benchmarks/<name>.py`)."""

from __future__ import annotations

import time
from collections.abc import Callable

import mlx.core as mx


def best_of(fn: Callable[[], object], repeat: int) -> float:
    """The fastest of `repeat` calls, in seconds (for simulator timings)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def gpu_time(fn: Callable[[], object], repeat: int = 20) -> float:
    """Median seconds of one evaluated call, after a warm-up (which also compiles)."""
    mx.eval(fn())
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        mx.eval(fn())
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]
