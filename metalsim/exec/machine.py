"""The state of one kernel launch while it runs: lanes, active sets, counters, epochs, findings.

Every thread of a batch of whole threadgroups is one *lane*: lane arrays hold each thread's
built-in attributes, and an active set (`Lanes`) names the lanes executing the current statement.
Threadgroups of a batch run in lockstep, which is a legal Metal schedule; the race detector works
on barrier epochs, so it reports schedule-dependent kernels instead of silently picking an order.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from metalsim.diagnostics import Coord, Diagnostic, SourceMap, render_excerpt

SIMD_WIDTH = 32
MAX_THREADS_PER_THREADGROUP = 1024
MAX_THREADGROUP_MEMORY = 32 * 1024
MAX_CELLS_PER_FINDING = 256
CLOCK_CHECK_STEPS = 2_000   # how often (in steps) the wall-time limit is looked at


class Lanes:
    """An active set: sorted lane indices (`idx`), or every lane of the batch (`idx` is a slice).

    Indexing a full-width lane array with `idx` works for both forms; the slice form avoids
    copying in the common case of uniform control flow.
    """

    __slots__ = ("idx", "n")

    def __init__(self, idx: np.ndarray | slice, n: int) -> None:
        self.idx = idx
        self.n = n

    @property
    def is_all(self) -> bool:
        return self.idx.__class__ is slice

    def indices(self) -> np.ndarray:
        return np.arange(self.n) if self.is_all else self.idx  # type: ignore[return-value]

    def select(self, mask: np.ndarray) -> Lanes:
        """The lanes of this set where `mask` (aligned with this set) is true."""
        if mask.ndim == 0 or mask.shape[0] != self.n:
            mask = np.broadcast_to(mask, (self.n,))
        if self.is_all:
            chosen = np.flatnonzero(mask)
            return self if chosen.size == self.n else Lanes(chosen, chosen.size)
        chosen = self.idx[mask]  # type: ignore[index]
        return Lanes(chosen, chosen.size)

    def split(self, mask: np.ndarray) -> tuple[Lanes, Lanes]:
        """The lanes where `mask` is true, and those where it is false."""
        if mask.ndim == 0:   # one value for every lane (a uniform condition)
            return (self, EMPTY) if mask else (EMPTY, self)
        if mask.shape[0] != self.n:
            mask = np.broadcast_to(mask, (self.n,))
        # (the reductions directly: `mask.all()` goes through a Python wrapper)
        if np.logical_and.reduce(mask, None):   # uniform control flow: no index arrays
            return self, EMPTY
        if not np.logical_or.reduce(mask, None):
            return EMPTY, self
        return self.select(mask), self.select(~mask)

    def position_in(self, outer: Lanes) -> np.ndarray:
        """Where each lane of this set sits inside `outer` (this set must be a subset)."""
        if outer.is_all:
            return self.indices()
        return np.searchsorted(outer.idx, self.indices())  # type: ignore[arg-type]


def union(total: int, parts: list[Lanes]) -> Lanes:
    """The union of disjoint active sets of a batch with `total` lanes."""
    parts = [p for p in parts if p.n]
    if not parts:
        return Lanes(np.empty(0, np.int64), 0)
    if len(parts) == 1:
        return parts[0]
    n = sum(p.n for p in parts)
    if n == total:
        return Lanes(slice(None), total)
    merged = np.sort(np.concatenate([p.indices() for p in parts]))
    return Lanes(merged, n)


EMPTY = Lanes(np.empty(0, np.int64), 0)
NOTHING: frozenset = frozenset()


def merge_flow(flow: dict[int, frozenset], lane: int, cells) -> None:
    """Add `cells` to what flowed into `lane`. The sets are frozen, so a variable's provenance
    is handed on without copying, and a new set is made only when something is new: in a loop
    like `acc += a[k] * b[k]`, copying `acc`'s growing provenance at every step was most of a
    traced run's time."""
    got = flow.get(lane)
    if got is None:
        flow[lane] = cells if cells.__class__ is frozenset else frozenset(cells)
    elif got is not cells and not got.issuperset(cells):
        flow[lane] = got.union(cells)


COUNTS = ("global_reads", "global_writes", "threadgroup_reads", "threadgroup_writes", "atomics",
          "barriers")


@dataclass
class Counters:
    """Per-thread counts over the whole grid (index = linear thread id)."""

    global_reads: np.ndarray
    global_writes: np.ndarray
    threadgroup_reads: np.ndarray
    threadgroup_writes: np.ndarray
    atomics: np.ndarray
    barriers: np.ndarray

    @classmethod
    def zeros(cls, n: int) -> Counters:
        return cls(*(np.zeros(n, np.int64) for _ in range(6)))


def _per_lane(per_group: np.ndarray, group: np.ndarray, mask: int, shift: int):
    """`(per_group[group] & mask) << shift`: one value where every group has the same (a
    barrier every group reached), the per-lane gather only where they differ."""
    if per_group.size == 0 or (np.minimum.reduce(per_group, None)
                               == np.maximum.reduce(per_group, None)):   # (no wrappers)
        return (int(per_group[0]) & mask) << shift if per_group.size else 0
    return (per_group[group] & mask) << shift


class StepLimitExceeded(Exception):
    """Raised inside the executor to abandon a launch that runs too long, or that entered a
    loop which cannot end (`reason` says why, `hint` what to do)."""

    def __init__(self, coord: Coord, lanes: np.ndarray, reason: str = "",
                 hint: str = "", timed_out: bool = False) -> None:
        super().__init__("step limit")
        self.coord = coord
        self.lanes = lanes
        self.reason = reason
        self.hint = hint
        self.timed_out = timed_out  # the wall-time limit, not the step limit


class KernelStop(Exception):
    """Raised inside the executor where a launch cannot go on (a construct metalsim cannot
    follow in the way these threads use it, behaviour without any result): reported as an
    error of `kind` for the threads `lanes`, and the launch ends. Compile errors are never
    raised once threads run."""

    def __init__(self, kind: str, message: str, coord: Coord, lanes: np.ndarray,
                 hint: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.coord = coord
        self.lanes = lanes
        self.hint = hint


@dataclass
class Finding:
    """A diagnostic being accumulated: the threads that hit it, merged by (kind, place, what)."""

    kind: str
    severity: str
    message: str
    coord: Coord | None
    threads: list[tuple[int, int, int]] = field(default_factory=list)
    seen: np.ndarray | None = None   # which threads of the grid hit it
    cells: set = field(default_factory=set)
    detail: str = ""
    hint: str = ""

    @property
    def count(self) -> int:
        return int(self.seen.sum()) if self.seen is not None else 0


@dataclass(frozen=True)
class Undefined:
    """In a value's provenance (trace mode), an uninitialised read that flowed into it: where it
    was read, what was read ("threadgroup memory 'tile'"), the cell (for diagrams) and a hint.

    Like Valgrind's Memcheck or compute-sanitizer's initcheck, metalsim reports such a read only
    where the value matters: see `Machine.check_defined`."""

    coord: Coord | None
    what: str
    cell: tuple | None = field(default=None, compare=False)
    hint: str = field(default="", compare=False)

    def where(self) -> str:
        """" at line 7" (" of the header" where it is there), or "" where unknown."""
        return at_line(self.coord)


def at_line(coord: Coord | None) -> str:
    """" at line 7" (" of the header" where it is there), or "" where unknown."""
    if coord is None or coord.line is None:
        return ""
    return f" at line {coord.line}" + (" of the header" if coord.section == "header" else "")


@dataclass
class Batch:
    """The lanes of one batch: whole threadgroups, threadgroup-major, then linear index."""

    size: int
    tid: np.ndarray               # linear thread id in the grid, per lane
    tg_global: np.ndarray         # linear threadgroup id in the grid, per lane
    tg_local: np.ndarray          # index of the lane's threadgroup within the batch
    tg_count: int                 # threadgroups in this batch
    tg_ids: np.ndarray            # linear threadgroup ids of the batch's threadgroups
    tg_sizes: np.ndarray          # live threads per threadgroup of the batch
    simd_global: np.ndarray       # a batch-unique id of the lane's SIMD-group
    attributes: dict[str, np.ndarray]
    consecutive: bool = False     # whether `tid` counts up by one from lane to lane


class Machine:
    """Everything a running kernel touches besides its own variables."""

    def __init__(self, grid: tuple[int, int, int], source_map: SourceMap, step_limit: int,
                 trace: bool, trace_groups: frozenset[int] | None = None,
                 time_limit: float | None = None,
                 guards: dict[Coord, Coord] | None = None) -> None:
        self.grid = grid
        self.guards = guards or {}   # code behind a bounds check (`Compiler.guarded`)
        self.total_threads = grid[0] * grid[1] * grid[2]
        self.source_map = source_map
        self.counters = Counters.zeros(self.total_threads)
        self.findings: dict[tuple, Finding] = {}
        self.step_limit = step_limit
        self.steps = 0
        self.time_limit = time_limit
        self.deadline = time.monotonic() + time_limit if time_limit is not None else math.inf
        self.next_clock_check = CLOCK_CHECK_STEPS if time_limit is not None else math.inf
        self.trace: list[dict] | None = [] if trace else None
        self.efficiency = None   # a metalsim.efficiency.MemoryEfficiency when profiling
        # Trace only these threadgroups (None: all): the other lanes skip the provenance work.
        self.trace_groups = trace_groups
        self.lane_traced: np.ndarray | None = None   # per batch lane, when trace_groups is set
        self.traced_lanes: np.ndarray | None = None  # their indices
        self.sites: dict[Coord | None, int] = {}
        # `sites` by the id of the Coord object (the compiled code holds one per access and
        # asks at every access; hashing a Coord's fields each time cost more than the lookup)
        self._site_of: dict[int, tuple[Coord | None, int]] = {}
        self.active_lane_steps = 0
        self.simd_group_steps = 0
        self.batch: Batch | None = None
        self.alive: np.ndarray | None = None       # lanes that have not returned from the kernel
        self.tg_epoch: np.ndarray | None = None    # threadgroup-memory barrier count per group
        self.dev_epoch: np.ndarray | None = None   # device-memory barrier count per group
        # threadgroup allocations of this batch: by declaration, or by a threadgroup argument's
        # name (`metalsim.dispatch`)
        self.tg_regions: dict[int | str, object] = {}
        # Bumped by a threadgroup-memory barrier that every threadgroup of the batch reached:
        # threadgroup-memory accesses of an older generation are ordered before all later ones.
        self.tg_generation = 0
        # Provenance while tracing: for each lane, the memory cells whose values flowed into
        # what the current statement computed so far (see `note_cells` and `sources`).
        self.flow: dict[int, frozenset] = {}
        # Whether an uninitialised read has joined some provenance (trace mode): until one
        # has, no provenance set holds an `Undefined`, and none needs searching for one.
        self.undefined_flows = False
        self.buffers: dict[str, dict] = {}   # name -> role, space, shape, dtype (for diagrams)
        # Without a trace an uninitialised read cannot be followed to where it matters; it is
        # reported as a warning at the read, and `launch` runs the kernel again traced.
        self.unfollowed_undefined = False

    # --- batches --------------------------------------------------------------------------
    def start_batch(self, batch: Batch) -> None:
        self.batch = batch
        self.alive = np.ones(batch.size, bool)
        self.tg_epoch = np.zeros(batch.tg_count, np.int64)
        self.dev_epoch = np.zeros(batch.tg_count, np.int64)
        simdgroups = int(batch.simd_global[-1]) + 1 if batch.size else 0
        self.batch_simdgroups = simdgroups   # what a step of every lane adds to SIMD-group steps
        self.simd_tg_epoch = np.zeros(simdgroups, np.int64)
        self.simd_dev_epoch = np.zeros(simdgroups, np.int64)
        self.tg_regions = {}
        self.lane_counts: dict[str, np.ndarray] = {}   # per lane, where not every lane counts
        # Accesses made by every lane of the batch, per count: added to `lane_counts` once, at
        # the end of the batch, instead of one pass over the lanes per access.
        self.all_lane_counts: dict[str, int] = {}
        self._bank_bases: dict[tuple[str, int], np.ndarray] = {}
        self._gathered: dict[tuple[int, int], tuple] = {}
        if self.trace_groups is not None:
            self.lane_traced = np.isin(batch.tg_global, np.fromiter(self.trace_groups, np.int64))
            self.traced_lanes = np.flatnonzero(self.lane_traced)
        self.counted: set[str] = set()   # the counts this batch touched
        self._stamps: dict[bool, np.ndarray] = {}
        self._stamp_base: np.ndarray | None = None

    def finish_batch(self) -> None:
        """Move the batch's per-lane counts into the per-thread counters of the grid."""
        tid = self.batch.tid
        if tid.size and int(tid[-1]) - int(tid[0]) == tid.size - 1 and (
                tid.size == 1 or self.batch.consecutive or bool((np.diff(tid) == 1).all())):
            tid = slice(int(tid[0]), int(tid[0]) + tid.size)  # consecutive threads: no gather
        whole_grid = isinstance(tid, slice) and tid == slice(0, self.total_threads)
        for name in self.counted:
            lane = self.lane_counts.get(name)
            times = self.all_lane_counts.get(name, 0)
            if lane is None:   # only accesses of every lane
                getattr(self.counters, name)[tid] += times
                continue
            if times:
                lane += times
            if whole_grid:   # one batch holds every thread: its counts are the grid's
                setattr(self.counters, name, lane)
            else:
                getattr(self.counters, name)[tid] += lane

    def count(self, name: str, idx: np.ndarray | slice) -> None:
        if idx.__class__ is slice:   # every lane (`Lanes.idx`)
            self.all_lane_counts[name] = self.all_lane_counts.get(name, 0) + 1
        else:
            lane = self.lane_counts.get(name)
            if lane is None:
                lane = self.lane_counts[name] = np.zeros(self.batch.size, np.int64)
            lane[idx] += 1  # lanes of one access are distinct threads
        self.counted.add(name)

    def lanes_of(self, full: np.ndarray, idx: np.ndarray | slice) -> np.ndarray:
        """`full[idx]` for a per-lane array of the batch that does not change (ids, stamps
        of one epoch), remembered for the latest few: the accesses of one statement share
        their active set, and gather the same lanes of the same arrays."""
        if idx.__class__ is slice:   # every lane (`Lanes.idx` is only ever `slice(None)`)
            return full
        key = (id(full), id(idx))
        known = self._gathered.get(key)
        if known is not None and known[0] is full and known[1] is idx:
            return known[2]
        if len(self._gathered) >= 4:   # (`launch.LANE_BYTES` counts them)
            self._gathered.clear()
        value = full[idx]
        self._gathered[key] = (full, idx, value)   # (holding both, their ids stay theirs)
        return value

    def bank_bases(self, space: str, per_bank: int) -> np.ndarray:
        """Per lane, where its bank of a `space` ("threadgroup": one per threadgroup,
        "thread": one per lane) starts in a flat array of `per_bank` entries per bank."""
        key = (space, per_bank)
        bases = self._bank_bases.get(key)
        if bases is None:
            banks = (self.batch.tg_local if space == "threadgroup"
                     else np.arange(self.batch.size, dtype=np.int64))
            bases = self._bank_bases[key] = banks * per_bank
        return bases

    def stamps(self, idx: np.ndarray | slice, device: bool) -> np.ndarray:
        """Per lane, for race checks, one int64: threadgroup id (bits 32-63), threadgroup
        barrier epoch (16-31), SIMD-group index in the threadgroup (11-15) and SIMD-group
        barrier epoch (0-10). See `memory.unordered` for how two stamps are compared."""
        full = self._stamps.get(device)
        if full is None:
            b = self.batch
            if self._stamp_base is None:   # the part no barrier changes
                simd_local = b.attributes["simdgroup_index_in_threadgroup"].astype(np.int64)
                simd_local <<= 11
                self._stamp_base = (b.tg_global << 32) | simd_local
            full = self._stamp_base
            epoch = self.dev_epoch if device else self.tg_epoch
            simd_epoch = self.simd_dev_epoch if device else self.simd_tg_epoch
            for part in (_per_lane(epoch, b.tg_local, 0xFFFF, 16),
                         _per_lane(simd_epoch, b.simd_global, 0x7FF, 0)):
                if part.__class__ is not int or part:
                    full = full | part
            self._stamps[device] = full
        return full if idx.__class__ is slice else self.lanes_of(full, idx)

    def new_epoch(self, reached: np.ndarray, threadgroup_memory: bool, device_memory: bool,
                  simdgroups: bool = False) -> None:
        """A barrier ordered memory for the threadgroups (or, with `simdgroups`, the SIMD-groups)
        in `reached`."""
        tg_epoch, dev_epoch = ((self.simd_tg_epoch, self.simd_dev_epoch) if simdgroups
                               else (self.tg_epoch, self.dev_epoch))
        if threadgroup_memory:
            tg_epoch[reached] += 1
            self._stamps.pop(False, None)
            if not simdgroups and reached.all():
                self.tg_generation += 1
        if device_memory:
            dev_epoch[reached] += 1
            self._stamps.pop(True, None)

    def site(self, coord: Coord | None) -> int:
        """A small number for a source location, kept in race shadows to name the earlier
        access of a race."""
        known = self._site_of.get(id(coord))
        if known is not None and known[0] is coord:
            return known[1]
        site = self.sites.setdefault(coord, len(self.sites))
        self._site_of[id(coord)] = (coord, site)   # (holding it, its id stays its own)
        return site

    def site_coord(self, site: int) -> Coord | None:
        return next((c for c, i in self.sites.items() if i == site), None)

    def thread_positions(self, tids: np.ndarray, limit: int = 8) -> list[tuple[int, int, int]]:
        """Grid positions of the lowest `limit` thread ids (in O(n), for huge reports)."""
        gx, gy, _ = self.grid
        if tids.size > limit:
            tids = np.partition(tids, limit)[:limit]
        out = []
        for t in np.unique(tids):
            t = int(t)
            out.append((t % gx, (t // gx) % gy, t // (gx * gy)))
        return out

    # --- provenance (trace mode) ---------------------------------------------------------
    def traced(self, lanes: np.ndarray) -> np.ndarray:
        """The lanes (batch indices) among `lanes` whose threadgroup is traced."""
        if self.lane_traced is None:
            return lanes
        if lanes.size == self.batch.size:  # every lane (callers do not depend on the order)
            return self.traced_lanes
        return lanes[self.lane_traced[lanes]]

    def traced_of(self, lanes: Lanes) -> np.ndarray:
        """`traced(lanes.indices())`, without listing every lane when all are active (the
        common case of uniform control flow, at every read and write of a traced run)."""
        if self.lane_traced is not None and lanes.is_all and lanes.n == self.batch.size:
            return self.traced_lanes
        return self.traced(lanes.indices())

    def begin_statement(self) -> None:
        self.flow = {}

    def note_cells(self, lanes: np.ndarray, buffer: str, owners: np.ndarray,
                   elements: np.ndarray) -> None:
        """Lanes `lanes` read the cells (buffer, owner, element), one per lane, in the
        current statement."""
        flow = self.flow
        get = flow.get   # (bound once: a traced loop runs this for every lane at each read)
        for lane, owner, element in zip(lanes.tolist(), owners.tolist(), elements.tolist()):
            cell = (buffer, owner, element)
            got = get(lane)
            if got is None:
                flow[lane] = frozenset((cell,))
            elif cell not in got:
                flow[lane] = got | {cell}

    def note_sources(self, lanes: np.ndarray, sources: dict) -> None:
        """Traced lanes `lanes` read a variable whose value came from `sources` (lane ->
        cells)."""
        if not sources:   # (most variables: indices and counters come from no memory)
            return
        flow = self.flow
        for lane in lanes.tolist():
            cells = sources.get(lane)
            if cells:
                # `merge_flow`, inlined: a traced loop runs this for every lane at each read
                got = flow.get(lane)
                if got is None:
                    flow[lane] = cells if cells.__class__ is frozenset else frozenset(cells)
                elif got is not cells and not got.issuperset(cells):
                    flow[lane] = got.union(cells)

    def sources(self, lanes: np.ndarray) -> list[frozenset]:
        """What flowed into each lane's current value: the cells it read, directly or through
        variables, in the statement being executed (and `Undefined` reads among them)."""
        flow = self.flow
        return [flow.get(lane, NOTHING) for lane in lanes.tolist()]

    # --- definedness ----------------------------------------------------------------------
    def undefined_read(self, lanes: np.ndarray, origin: Undefined, detail: str = "") -> None:
        """Lanes `lanes` read an uninitialised value. Traced, it joins the value's provenance
        and is reported only where it matters; untraced, it is a warning at the read."""
        if self.trace is not None:
            traced = self.traced(lanes)
            self.undefined_flows = True
            self.note_sources(traced, dict.fromkeys(traced.tolist(), (origin,)))
            if traced.size == lanes.size:
                return
            lanes = lanes[~self.lane_traced[lanes]]  # the untraced threadgroups' lanes
        self.unfollowed_undefined = True
        self.report("uninitialized-read", "warning", f"read of uninitialised {origin.what}",
                    origin.coord, lanes, key=("read", origin.what), detail=detail,
                    hint=origin.hint, cells=[origin.cell] if origin.cell else [])

    def check_defined(self, lanes: np.ndarray, sources: list, coord: Coord | None,
                      use: str) -> None:
        """Report the lanes whose value (`sources`, one provenance set per lane of `lanes`)
        holds an uninitialised read, at `coord` where it matters; `use` says how ("is stored
        to 'out'", "decides a branch", ...)."""
        if not self.undefined_flows:
            return
        by_origin: dict[Undefined, list[int]] = {}
        for lane, cells in zip(lanes.tolist(), sources):
            for c in cells:
                if c.__class__ is Undefined:
                    by_origin.setdefault(c, []).append(lane)
        for origin, hit in by_origin.items():
            read_at = origin.where()
            # One finding per origin line and use (reads in several columns of a line merge).
            self.report("uninitialized-read", "error",
                        f"uninitialised value {use} (read from {origin.what}{read_at})",
                        coord, np.asarray(hit, np.int64), key=(origin.what, read_at, use),
                        detail=f"the value read{read_at} before anything was written there "
                               f"reaches this use{at_line(coord)}",
                        hint=origin.hint, cells=[origin.cell] if origin.cell else [])

    def check_flow_defined(self, coord: Coord | None, use: str) -> None:
        """`check_defined` for everything the current statement has read so far."""
        if self.flow and self.undefined_flows:
            lanes = np.fromiter(self.flow, np.int64, len(self.flow))
            self.check_defined(lanes, list(self.flow.values()), coord, use)

    # --- accounting -----------------------------------------------------------------------
    def step(self, lanes: Lanes, coord: Coord, weight: int = 1) -> None:
        """Count one executed statement, which evaluates `weight` expression nodes: the step
        and time limits, and SIMD-group efficiency."""
        self.steps += weight
        if self.steps > self.step_limit:
            raise StepLimitExceeded(coord, lanes.indices())
        if self.steps >= self.next_clock_check:
            self.next_clock_check = self.steps + CLOCK_CHECK_STEPS
            if time.monotonic() > self.deadline:
                raise StepLimitExceeded(coord, lanes.indices(), timed_out=True)
        self.active_lane_steps += lanes.n
        if lanes.idx.__class__ is slice:   # every lane of the batch
            self.simd_group_steps += self.batch_simdgroups
            return
        simd = self.batch.simd_global[lanes.idx]
        if simd.size:
            self.simd_group_steps += 1 + int(np.count_nonzero(np.diff(simd)))

    # --- findings -------------------------------------------------------------------------
    def report(self, kind: str, severity: str, message: str, coord: Coord | None,
               lanes: np.ndarray, *, key: object = None, detail: str = "",
               hint: str = "", cells: list[tuple] = ()) -> None:
        """Record that the batch lanes `lanes` hit a problem; merges repeats of the same one.

        `cells` are the memory cells involved, as (buffer, threadgroup or -1, element), so that
        diagrams can mark them."""
        tids = self.batch.tid[lanes] if self.batch is not None else np.empty(0, np.int64)
        k = (kind, coord, key if key is not None else message)
        f = self.findings.get(k)
        if f is None:
            f = self.findings[k] = Finding(kind, severity, message, coord, detail=detail,
                                           hint=hint)
        room = MAX_CELLS_PER_FINDING - len(f.cells)
        if room > 0:
            f.cells.update(list(dict.fromkeys(cells))[:room])
        if f.seen is None:
            f.seen = np.zeros(self.total_threads, bool)
        f.seen[tids] = True
        if len(f.threads) < 8:
            known = set(f.threads)
            fresh = [p for p in self.thread_positions(tids, 8) if p not in known]
            f.threads.extend(fresh[:8 - len(f.threads)])

    def diagnostics(self) -> list[Diagnostic]:
        out = []
        for f in self.findings.values():
            c = f.coord
            detail = f.detail
            if f.count > len(f.threads) and f.threads:
                detail = (detail + "; " if detail else "") + f"{f.count} threads in all"
            out.append(Diagnostic(
                kind=f.kind, severity=f.severity, message=f.message,
                line=c.line if c else None, column=c.column if c else None,
                threads=f.threads, detail=detail, section=c.section if c else "source",
                hint=f.hint, excerpt=render_excerpt(self.source_map, c),
                cells=sorted(f.cells, key=str),
            ))
        order = {"error": 0, "warning": 1}
        out.sort(key=lambda d: (order.get(d.severity, 2), d.line or 0))
        return out
