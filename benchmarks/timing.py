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


def compare_on_gpu(rows: list[tuple[str, Callable[[], object], Callable[[], object]]]) -> None:
    """Print our kernel's time against MLX's built-in for each (label, ours, mlx) row."""
    width = max(len(label) for label, _, _ in rows) + 2
    print(f"{'kernel':{width}}{'ours':>11}{'MLX':>11}{'ours/MLX':>10}")
    for label, ours_fn, mlx_fn in rows:
        ours, theirs = gpu_time(ours_fn), gpu_time(mlx_fn)
        print(f"{label:{width}}{ours * 1e3:>9.3f}ms{theirs * 1e3:>9.3f}ms{ours / theirs:>10.2f}")
