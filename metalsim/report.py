"""What a simulated launch measured: per-thread counts, traffic, SIMD efficiency, findings,
trace."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from metalsim.diagnostics import Diagnostic
from metalsim.efficiency import MemoryEfficiency

SIMD_WIDTH = 32  # lanes of a SIMD-group on Apple GPUs
COUNT_NAMES = ("global_reads", "global_writes", "threadgroup_reads", "threadgroup_writes",
               "atomics", "barriers")


@dataclass
class BufferTraffic:
    """Bytes a launch moved through one kernel buffer, against reading/writing it once."""

    name: str
    role: str            # "input" or "output"
    bytes_read: int
    bytes_written: int
    ideal_bytes: int

    @property
    def bytes_moved(self) -> int:
        return self.bytes_read + self.bytes_written


@dataclass
class Report:
    """Everything one simulated launch measured.

    `counts[name]` is an int array shaped like the grid, indexed `[z, y, x]` by thread position;
    `max_per_thread()` gives the puzzle score (the maximum over threads of each count).
    """

    grid: tuple[int, int, int]
    threadgroup: tuple[int, int, int]
    counts: dict[str, np.ndarray]
    traffic: list[BufferTraffic]
    simd_efficiency: float
    diagnostics: list[Diagnostic] = field(default_factory=list)
    trace: list[dict] | None = None
    buffers: dict[str, dict] = field(default_factory=dict)  # name -> role, space, shape, type
    # per output, the flat indices of the elements no thread wrote (they keep their initial
    # value: `init_value`, or poison)
    unwritten: dict[str, np.ndarray] = field(default_factory=dict)
    # The threadgroups `trace` covers (linear ids); None when it covers the whole launch.
    traced_threadgroups: tuple[int, ...] | None = None
    # Coalescing and bank conflicts (simulate(..., profile=True)): a MemoryEfficiency.
    memory: MemoryEfficiency | None = None

    # `trace` (with trace=True) lists every access in execution order, each a dict:
    # kind ("read", "write" or "atomic"), buffer, space, and per thread of the access the arrays
    # thread (linear id), threadgroup (linear id), element (index in the buffer, or in the
    # threadgroup's copy of threadgroup memory), epoch (barriers passed by that threadgroup);
    # line and section of the source; type; value, what the cell held right after the access
    # (the value read or written; a row of components for vectors; for atomics, after all the
    # lanes of that statement); and for writes `sources`,
    # one frozenset per thread
    # of the cells (buffer, threadgroup or -1, element) whose values flowed into the stored value.
    # An access past the end of a buffer is recorded with `outside` True and no value (it did
    # not happen: the simulator skipped it and reported it).

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def max_per_thread(self) -> dict[str, int]:
        return {k: int(v.max()) if v.size else 0 for k, v in self.counts.items()}

    def totals(self) -> dict[str, int]:
        return {k: int(v.sum()) for k, v in self.counts.items()}

    def per_thread(self, x: int, y: int = 0, z: int = 0) -> dict[str, int]:
        return {k: int(v[z, y, x]) for k, v in self.counts.items()}

    @property
    def bytes_moved(self) -> int:
        return sum(t.bytes_moved for t in self.traffic)

    @property
    def ideal_bytes(self) -> int:
        return sum(t.ideal_bytes for t in self.traffic)

    @property
    def simd_launch_bound(self) -> float:
        """The highest SIMD-group efficiency this launch allows, whatever the kernel does: its
        threads over the lanes of the SIMD-groups they fill (a threadgroup of 9 threads fills
        one SIMD-group of 32 lanes: 28% at most)."""
        sizes = [[t] * (g // t) + ([g % t] if g % t else []) if t else []
                 for g, t in zip(self.grid, self.threadgroup)]
        threads = lanes = 0
        for shape, count in _shapes(sizes):
            n = math.prod(shape)
            threads += n * count
            lanes += -(-n // SIMD_WIDTH) * SIMD_WIDTH * count
        return threads / lanes if lanes else 1.0

    def summary(self) -> str:
        m, t = self.max_per_thread(), self.totals()
        lines = [
            f"grid {self.grid}, threadgroup {self.threadgroup}",
            f"{'':22}{'max/thread':>12}{'total':>12}",
        ]
        lines += [f"{name.replace('_', ' '):22}{m[name]:>12}{t[name]:>12}"
                  for name in COUNT_NAMES]
        lines.append(f"SIMD-group efficiency {self.simd_efficiency:.0%}")
        for b in self.traffic:
            lines.append(f"traffic {b.name:>10}: {b.bytes_moved:>12,} bytes "
                         f"(ideal {b.ideal_bytes:,})")
        if self.traffic:
            ratio = self.bytes_moved / self.ideal_bytes if self.ideal_bytes else float("nan")
            lines.append(f"traffic total: {self.bytes_moved:,} bytes, {ratio:.2f}x ideal")
        for d in self.diagnostics:
            lines.append(d.render())
        return "\n".join(lines)

    __str__ = summary


def _shapes(sizes: list[list[int]]) -> list[tuple[tuple[int, ...], int]]:
    """The distinct threadgroup shapes of a launch and how many threadgroups have each, from
    the threadgroup sizes along each dimension (full ones, then a partial one)."""
    per_dim = [sorted({n: d.count(n) for n in d}.items()) for d in sizes]
    return [(tuple(n for n, _ in combo), math.prod(c for _, c in combo))
            for combo in itertools.product(*per_dim)]
