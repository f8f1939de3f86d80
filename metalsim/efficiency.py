"""How well a kernel uses memory, SIMD-group access by SIMD-group access: coalescing of device
memory and bank conflicts of threadgroup memory.

The model (Apple does not publish its memory system; these are the usual GPU figures, stated
so that the numbers mean something):

- *Coalescing*: device memory moves in 64-byte segments. One load or store of a SIMD-group
  costs one transaction per distinct 64-byte segment its active lanes touch (buffers start on a
  64-byte boundary). The ideal is the fewest segments that could hold the bytes asked for:
  `ceil(distinct addresses × access size / 64)`.
- *Bank conflicts*: threadgroup memory has 32 banks of 4 bytes; 4-byte word `w` lives in bank
  `w % 32`. A SIMD-group's access takes as many cycles as the most distinct words any one bank
  must deliver (lanes reading the same word share it: a broadcast). The ideal is
  `ceil(distinct words / 32)`, one cycle for up to 32 words.

`simulate(kernel, ..., profile=True)` fills `report.memory` with a `MemoryEfficiency`;
`comparison(...)` puts several kernels' figures side by side.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

SEGMENT_BYTES = 64
BANKS = 32
BANK_BYTES = 4
MODEL = (f"model: device memory in {SEGMENT_BYTES}-byte segments; threadgroup memory in "
         f"{BANKS} banks of {BANK_BYTES} bytes (same word: a broadcast, no conflict)")


def _words(offsets: np.ndarray, width: int, unit: int) -> tuple[np.ndarray, np.ndarray]:
    """Per lane, the `unit`-sized blocks its `width` bytes at `offsets` cover: (lane, block)
    pairs, flat."""
    first = offsets // unit
    count = int(((offsets + width - 1) // unit - first).max(initial=0)) + 1
    blocks = first[:, None] + np.arange(count)
    inside = blocks <= ((offsets + width - 1) // unit)[:, None]
    lanes = np.broadcast_to(np.arange(offsets.size)[:, None], blocks.shape)
    return lanes[inside], blocks[inside]


def segments_touched(offsets: np.ndarray, width: int) -> int:
    """Distinct 64-byte segments that accesses of `width` bytes at byte `offsets` touch."""
    offsets = np.asarray(offsets, np.int64)
    if offsets.size == 0:
        return 0
    return int(np.unique(_words(offsets, width, SEGMENT_BYTES)[1]).size)


def bank_cycles(offsets: np.ndarray, width: int) -> int:
    """Cycles one SIMD-group's threadgroup-memory access of `width` bytes at `offsets` takes:
    the most distinct 4-byte words that one bank must deliver (at least 1)."""
    offsets = np.asarray(offsets, np.int64)
    if offsets.size == 0:
        return 0
    words = np.unique(_words(offsets, width, BANK_BYTES)[1])
    return int(np.bincount(words % BANKS, minlength=BANKS).max())


@dataclass
class SpaceTotals:
    """Sums over the SIMD-group accesses to one kind of memory."""

    accesses: int = 0     # SIMD-group accesses (one load or store statement of one SIMD-group)
    cost: int = 0         # segments (device) or cycles (threadgroup) they took
    ideal: int = 0        # what they would take at best
    worst: int = 0        # the most one access took

    @property
    def per_access(self) -> float:
        return self.cost / self.accesses if self.accesses else 0.0

    @property
    def efficiency(self) -> float:
        """ideal / cost: 1.0 when every access was as cheap as it could be."""
        return self.ideal / self.cost if self.cost else 1.0


@dataclass
class MemoryEfficiency:
    """Coalescing of device ("global") accesses and bank conflicts of threadgroup accesses,
    in total and per line of the kernel's source (`by_line[(space, line)]`; accesses in the
    header are under line None). See the module docstring for the model."""

    global_: SpaceTotals = field(default_factory=SpaceTotals)
    threadgroup: SpaceTotals = field(default_factory=SpaceTotals)
    by_line: dict[tuple[str, int | None], SpaceTotals] = field(default_factory=dict)

    def record(self, space: str, simdgroups: np.ndarray, offsets: np.ndarray, width: int,
               line: int | None) -> None:
        """One load or store by the lanes whose SIMD-groups (batch-unique ids) are
        `simdgroups`, at byte `offsets` of `width` bytes; `space` "global" or "threadgroup"."""
        if offsets.size == 0:
            return
        simdgroups = np.broadcast_to(np.asarray(simdgroups, np.int64), offsets.shape)
        groups = np.unique(simdgroups)
        if space == "global":
            cost, ideal = self._segments(groups, simdgroups, offsets, width)
        else:
            cost, ideal = self._cycles(groups, simdgroups, offsets, width)
        for totals in (self.global_ if space == "global" else self.threadgroup,
                       self.by_line.setdefault((space, line), SpaceTotals())):
            totals.accesses += groups.size
            totals.cost += int(cost.sum())
            totals.ideal += int(ideal.sum())
            totals.worst = max(totals.worst, int(cost.max()))

    @staticmethod
    def _segments(groups: np.ndarray, simdgroups: np.ndarray, offsets: np.ndarray,
                  width: int) -> tuple[np.ndarray, np.ndarray]:
        lane, segment = _words(offsets, width, SEGMENT_BYTES)
        pairs = np.unique(np.stack([simdgroups[lane], segment]), axis=1)
        cost = np.bincount(np.searchsorted(groups, pairs[0]), minlength=groups.size)
        # lanes reading one address need its bytes once
        addresses = np.unique(np.stack([simdgroups, offsets]), axis=1)
        distinct = np.bincount(np.searchsorted(groups, addresses[0]), minlength=groups.size)
        return cost, -(-distinct * width // SEGMENT_BYTES)

    @staticmethod
    def _cycles(groups: np.ndarray, simdgroups: np.ndarray, offsets: np.ndarray,
                width: int) -> tuple[np.ndarray, np.ndarray]:
        lane, word = _words(offsets, width, BANK_BYTES)
        pairs = np.unique(np.stack([simdgroups[lane], word]), axis=1)  # distinct words
        group = np.searchsorted(groups, pairs[0])
        per_bank = np.zeros((groups.size, BANKS), np.int64)
        np.add.at(per_bank, (group, pairs[1] % BANKS), 1)
        words = np.bincount(group, minlength=groups.size)
        return per_bank.max(axis=1), -(-words // BANKS)


def comparison(columns: Mapping[str, object]) -> str:
    """A table of launches' memory figures side by side: `columns` maps a heading to a
    `Report` (or a run) simulated with `profile=True`."""
    reports = {name: getattr(r, "report", r) for name, r in columns.items()}
    width = max(12, *(len(name) + 2 for name in reports))
    rows: list[tuple[str, list[str]]] = []

    def row(label: str, cell) -> None:
        rows.append((label, [cell(r) for r in reports.values()]))

    row("global memory traffic, bytes", lambda r: f"{r.bytes_moved:,}")
    row("  ... against each buffer once", lambda r: _ratio(r.bytes_moved, r.ideal_bytes))
    row("SIMD-group efficiency", lambda r: f"{r.simd_efficiency:.0%}")
    row("global SIMD-group accesses", lambda r: f"{r.memory.global_.accesses:,}")
    row("  64-byte segments per access", lambda r: _average(r.memory.global_))
    row("  coalescing (ideal/actual)", lambda r: _percent(r.memory.global_))
    row("threadgroup SIMD-group accesses", lambda r: f"{r.memory.threadgroup.accesses:,}")
    row("  cycles per access (1: no conflict)", lambda r: _average(r.memory.threadgroup))
    row("  worst bank conflict, ways", lambda r: _worst(r.memory.threadgroup))
    row("  bank efficiency (ideal/actual)", lambda r: _percent(r.memory.threadgroup))
    label_w = max(len(label) for label, _ in rows) + 2
    lines = [" " * label_w + "".join(f"{name:>{width}}" for name in reports)]
    lines += [f"{label:<{label_w}}" + "".join(f"{c:>{width}}" for c in cells)
              for label, cells in rows]
    return "\n".join(lines + [MODEL])


def _ratio(moved: int, ideal: int) -> str:
    return f"{moved / ideal:.2f}x" if ideal else "-"


def _average(t: SpaceTotals) -> str:
    return f"{t.per_access:.2f}" if t.accesses else "-"


def _percent(t: SpaceTotals) -> str:
    return f"{t.efficiency:.0%}" if t.accesses else "-"


def _worst(t: SpaceTotals) -> str:
    return str(t.worst) if t.accesses else "-"
