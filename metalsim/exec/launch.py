"""Dispatch a compiled kernel over MLX's grid, batch by batch, and build its Report.

Dispatch follows `mx.fast.metal_kernel`: `grid` counts threads; the threadgroup is clamped to the
grid per dimension; edge threadgroups are smaller and report their real size; SIMD-groups are 32
consecutive threads of a threadgroup's linear order. Whole threadgroups are packed into batches
of at most `LANE_BUDGET` lanes that run in lockstep; batches run one after another.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from metalsim.diagnostics import Coord, SourceMap
from metalsim.efficiency import MemoryEfficiency
from metalsim.exec import memory as mem
from metalsim.exec.arith import quiet_numpy
from metalsim.exec.builtins import BUILTINS
from metalsim.exec.compile import Compiler
from metalsim.exec.compiled import FunctionCode, Var
from metalsim.exec.heap import keep_freed_memory
from metalsim.exec.machine import (
    MAX_THREADGROUP_MEMORY,
    MAX_THREADS_PER_THREADGROUP,
    SIMD_WIDTH,
    Batch,
    KernelStop,
    Lanes,
    Machine,
    StepLimitExceeded,
)
from metalsim.exec.prelude import PRELUDE, PRELUDE_SECTIONS
from metalsim.exec.values import Frame, PtrSlot, RefSlot
from metalsim.lang import ast
from metalsim.lang import types as ty
from metalsim.lang.parser import Prefix as ParsedPrefix
from metalsim.lang.parser import parse, parse_prefix
from metalsim.lang.preprocess import Prefix as PreprocessedPrefix
from metalsim.lang.preprocess import preprocess, preprocess_prefix
from metalsim.report import COUNT_NAMES, BufferTraffic, Report
from metalsim.signature import ATTRIBUTES

THREAD_ATTRIBUTES = frozenset(name for name, _ in ATTRIBUTES)

# Lanes per batch at most: beyond some 100k lanes a batch's per-lane temporaries (1 MiB and
# more each) no longer stay in the caches, and larger batches only run slower (a 1M-thread
# block reduce: 0.14 s in batches of 128k lanes, 0.18 s in one batch).
LANE_BUDGET = 1 << 17
# Entries of a compute encoder's buffer argument table (Metal feature set tables).
MAX_BUFFERS = 31
# Thread-private memory per thread. Metal publishes no figure: private arrays live in registers
# or spill to a per-thread stack, and the compiler or the launch fails long before megabytes.
# metalsim refuses more than this, as a `resource-limit` error.
MAX_THREAD_MEMORY = 64 * 1024
# The step limit counts expression nodes evaluated (see `statements.work`), summed over the
# whole launch: some 100,000 typical statements, about seven times what the heaviest reference
# kernel of the puzzles needs (148,000).
DEFAULT_STEP_LIMIT = 1_000_000
# The simulator's own bytes per lane of a batch, besides threadgroup memory: ids, per-lane
# counts, stamps and attributes, and up to four gathers of them kept for the accesses of one
# statement (`Machine.lanes_of`) (LANE_BYTES), and one value per variable slot (SLOT_BYTES).
LANE_BYTES = 384 + 4 * 8
SLOT_BYTES = 16
COUNTER_BYTES = 6 * 8   # per thread of the grid: the access counts of the report
MAX_TRACED_THREADS = 16_384


@dataclass
class Program:
    """A compiled kernel instantiation, cached by its generated text and math mode."""

    code: FunctionCode
    params: dict[str, Var]
    source_map: SourceMap
    guards: dict[Coord, Coord] = field(default_factory=dict)  # see `Compiler.guarded`
    # The kernel's parameters by name: their attributes (`[[buffer(0)]]`,
    # `[[thread_position_in_grid]]`); MLX's generated kernels name each thread attribute's
    # parameter after it, a whole Metal kernel function (`metalsim.dispatch`) need not.
    param_attributes: dict[str, tuple[ast.Attribute, ...]] = field(default_factory=dict)
    function_constants: dict[str, object] = field(default_factory=dict)   # given, by name

    def attribute_of(self, param: str) -> str:
        """The thread attribute the parameter `param` takes (its own name if none)."""
        for a in self.param_attributes.get(param, ()):
            if a.name in THREAD_ATTRIBUTES:
                return a.name
        return param


# Compiling and running recurse once per nesting level of the kernel's code (a 500-term sum is
# 500 levels, a 1024-deep template recursion, which clang allows, some 10,000 Python frames).
# Python-to-Python calls do not grow the C stack in CPython 3.11+, so the limit can be raised.
RECURSION_LIMIT = 200_000


@contextlib.contextmanager
def deep_recursion():
    """Let the compiler and the executor recurse as deeply as the kernel's code nests."""
    saved = sys.getrecursionlimit()
    sys.setrecursionlimit(max(saved, RECURSION_LIMIT))
    try:
        yield
    finally:
        sys.setrecursionlimit(saved)


@functools.lru_cache(maxsize=4)
def parsed_prelude(fast_math: bool) -> tuple[PreprocessedPrefix, ParsedPrefix]:
    """The prelude preprocessed and parsed once per process, for every kernel to go on from."""
    source_map = SourceMap(PRELUDE, PRELUDE_SECTIONS)
    prefix = preprocess_prefix(PRELUDE, source_map, {"__FAST_MATH__": "1"} if fast_math else None)
    return prefix, parse_prefix(list(prefix.tokens), source_map)


def header_files(include_dirs: tuple[str, ...]) -> tuple[tuple[str, int, int], ...]:
    """(path, size, modification time) of every file `#include` could read from
    `include_dirs`: a compiled program is reused only while these are unchanged."""
    return tuple((str(path), stat.st_size, stat.st_mtime_ns)
                 for d in include_dirs for path in sorted(Path(d).rglob("*"))
                 if path.is_file() for stat in (path.stat(),))


@functools.lru_cache(maxsize=256)
def compile_program(text: str, sections: tuple, math_mode: str, tracing: bool = False,
                    include_dirs: tuple[str, ...] = (),
                    headers: tuple[tuple[str, int, int], ...] = (),
                    host_name: str | None = None,
                    function_constants: tuple[tuple[int | str, bool | int | float], ...] = ()
                    ) -> Program:
    """Preprocess, parse and compile MLX's generated kernel text (with MLX's prelude helpers);
    `#include "..."` reads from `include_dirs`. `headers` (`header_files(include_dirs)`) only
    keys the cache, so that an edited header is compiled again. `host_name` picks the kernel
    (default: the last), `function_constants` are (index or name, value) pairs a pipeline
    sets (see `Compiler.compile_kernel`)."""
    full = PRELUDE + text
    shift = len(PRELUDE)
    all_sections = PRELUDE_SECTIONS + [(n, s + shift, e + shift) for n, s, e in sections]
    source_map = SourceMap(full, all_sections)
    preprocessed, parsed = parsed_prelude(math_mode == "fast")
    tokens = preprocess(full, source_map, after=preprocessed, include_dirs=include_dirs)
    unit = parse(tokens, source_map, after=parsed)
    variant = "fast" if math_mode == "fast" else "precise"
    compiler = Compiler(unit, source_map, BUILTINS, variant, tracing, dict(function_constants))
    code, params = compiler.compile_kernel(host_name)
    attributes = {p.name: tuple(p.attributes) for p in compiler.kernel_def.params}
    return Program(code, params, source_map, compiler.guarded, attributes,
                   compiler.defined_function_constants)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def make_batches(grid: tuple[int, int, int], tg: tuple[int, int, int], budget: int):
    """Yield the Batches of a dispatch: whole threadgroups in linear order, x fastest."""
    gx, gy, gz = grid
    tx, ty_, tz = tg
    nx, ny, nz = _ceil_div(gx, tx), _ceil_div(gy, ty_), _ceil_div(gz, tz)
    total_tgs = nx * ny * nz
    per_group = tx * ty_ * tz
    per_batch = max(1, budget // per_group)
    for start in range(0, total_tgs, per_batch):
        ids = np.arange(start, min(total_tgs, start + per_batch), dtype=np.int64)
        wx, wy, wz = ids % nx, (ids // nx) % ny, ids // (nx * ny)
        ax = np.minimum(tx, gx - wx * tx)
        ay = np.minimum(ty_, gy - wy * ty_)
        az = np.minimum(tz, gz - wz * tz)
        counts = ax * ay * az
        n = int(counts.sum())
        full = n == ids.size * per_group   # no threadgroup cut by the grid's edge
        if gy == gz == 1:  # one-dimensional: lanes are consecutive threads
            tid = np.arange(start * tx, start * tx + n, dtype=np.int64)
            if tx & (tx - 1):
                group = tid // tx
                lin = tid - group * tx
            else:   # a power of two: shifts and masks, several times faster than division
                group, lin = tid >> (tx.bit_length() - 1), tid & (tx - 1)
            local_tg = group - start if start else group

            def pos(tid=tid, n=n):
                return tid, np.zeros(n, np.int64), np.zeros(n, np.int64)

            def local(lin=lin, n=n):
                return lin, np.zeros(n, np.int64), np.zeros(n, np.int64)
        else:
            local_tg, lin, tid, pos, local = (
                _full_groups(grid, tg, (wx, wy, wz)) if full
                else _groups(grid, tg, (wx, wy, wz), (ax, ay), counts))
        if gy == gz == 1 and tx % SIMD_WIDTH == 0:
            # every threadgroup but the last is full: SIMD-groups are consecutive lanes
            tg_global = group
            simd_global = (tid - start * tx if start else tid) >> (SIMD_WIDTH.bit_length() - 1)
        elif full:   # SIMD-groups numbered on from one threadgroup to the next
            tg_global = np.repeat(ids, per_group)
            simd_global = (np.arange(ids.size, dtype=np.int64)[:, None]
                           * _ceil_div(per_group, SIMD_WIDTH)
                           + lin[:per_group] // SIMD_WIDTH).reshape(-1)
        else:
            simds = _ceil_div_arr(counts, SIMD_WIDTH)
            simd_base = np.cumsum(simds) - simds
            tg_global, simd_global = ids[local_tg], simd_base[local_tg] + lin // SIMD_WIDTH
        attrs = _attributes(grid, tg, (nx, ny, nz), pos, local, lin, local_tg,
                            (wx, wy, wz), (ax, ay, az), counts)
        yield Batch(size=n, tid=tid, tg_global=tg_global,
                    tg_local=local_tg, tg_count=ids.size, tg_ids=ids, tg_sizes=counts,
                    simd_global=simd_global, attributes=attrs, consecutive=gy == gz == 1)


def _groups(grid, tg, where, sizes, counts):
    """The lanes of threadgroups at `where` (x, y, z per group) whose sizes (`sizes`: x and y
    per group, `counts`: threads) may be cut by the grid's edge: per lane its group in the
    batch, its linear index in the group and its thread id; and functions giving its (x, y, z)
    in the grid and in the group (built only for the attributes that need them)."""
    gx, gy, _ = grid
    tx, ty_, tz = tg
    wx, wy, wz = where
    ax, ay = sizes
    local_tg = np.repeat(np.arange(wx.size), counts)
    starts = np.cumsum(counts) - counts
    lin = np.arange(int(counts.sum())) - starts[local_tg]
    lax, lay = ax[local_tg], ay[local_tg]
    lx, ly, lz = lin % lax, (lin // lax) % lay, lin // (lax * lay)
    px = wx[local_tg] * tx + lx
    py, pz = wy[local_tg] * ty_ + ly, wz[local_tg] * tz + lz
    tid = pz * gx * gy + py * gx + px
    return local_tg, lin, tid, lambda: (px, py, pz), lambda: (lx, ly, lz)


def _full_groups(grid, tg, where):
    """`_groups` where every threadgroup is whole: the lanes of one group are worked out once,
    and each group's lanes are that pattern offset by the group's place."""
    gx, gy, _ = grid
    tx, ty_, tz = tg
    per, count = tx * ty_ * tz, where[0].size
    one = np.arange(per, dtype=np.int64)
    local_one = one % tx, (one // tx) % ty_, one // (tx * ty_)
    wx, wy, wz = where
    first = wz * tz * gx * gy + wy * ty_ * gx + wx * tx   # each group's lowest thread id
    tid = (first[:, None] + (local_one[2] * gx * gy + local_one[1] * gx + local_one[0]))

    def repeated(pattern: np.ndarray) -> np.ndarray:
        out = np.empty((count, per), np.int64)
        out[:] = pattern
        return out.reshape(-1)

    def pos():
        return tuple((w[:, None] * size + c).reshape(-1)
                     for w, size, c in zip(where, tg, local_one))

    def local():
        return tuple(repeated(c) for c in local_one)
    return np.repeat(np.arange(count), per), repeated(one), tid.reshape(-1), pos, local


def _ceil_div_arr(a: np.ndarray, b: int) -> np.ndarray:
    return -(-a // b)


class Attributes(dict):
    """Per-lane values of the attributes MLX can declare, as `uint`/`uint3` arrays, each built
    on first use: a kernel reads a few of the twenty, and building all of them was most of the
    cost of a large elementwise launch."""

    def __init__(self, makers: dict) -> None:
        super().__init__()
        self.makers = makers

    def __missing__(self, name: str) -> np.ndarray:
        value = self[name] = self.makers[name]()
        value.flags.writeable = False   # shared: `fresh` gives the kernel its own
        return value

    def fresh(self, name: str) -> np.ndarray:
        """A new, writable array of the attribute's values (a kernel may modify its
        parameters, `--thread_index_in_simdgroup`), built anew unless it is already here."""
        if name in self:
            return np.array(self[name])
        value = self.makers[name]()
        return value if value.base is None and value.flags.writeable else np.array(value)


def _attributes(grid, tg, ntgs, pos, local, lin, local_tg, group, actual,
                counts) -> Attributes:
    """The attributes of a batch's lanes (see `Attributes`): `lin` per lane, `pos()` and
    `local()` giving (x, y, z) per lane, `group`, `actual` (threadgroup sizes) and `counts`
    (their threads) per threadgroup."""
    n = lin.size

    def per_lane(per_group: np.ndarray) -> np.ndarray:
        return per_group[local_tg]

    def vec3(parts) -> np.ndarray:
        out = np.empty((n, 3), np.uint32)
        for i, p in enumerate(parts):
            out[:, i] = p
        return out

    def uniform3(values) -> np.ndarray:
        return np.broadcast_to(np.asarray(values, np.uint32), (n, 3))

    def scalar(values) -> np.ndarray:
        values = np.asarray(values, np.uint32)
        return values if values.shape == (n,) else np.broadcast_to(values, (n,))

    dispatch_total = tg[0] * tg[1] * tg[2]
    return Attributes({
        "thread_position_in_grid": lambda: vec3(pos()),
        "thread_position_in_threadgroup": lambda: vec3(local()),
        "threadgroup_position_in_grid": lambda: vec3([per_lane(g) for g in group]),
        "threads_per_threadgroup": lambda: vec3([per_lane(a) for a in actual]),
        "dispatch_threads_per_threadgroup": lambda: uniform3(tg),
        "threadgroups_per_grid": lambda: uniform3(ntgs),
        "threads_per_grid": lambda: uniform3(grid),
        "grid_origin": lambda: uniform3((0, 0, 0)),
        "grid_size": lambda: uniform3(grid),
        "thread_index_in_threadgroup": lambda: scalar(lin),
        "thread_index_in_simdgroup": lambda: scalar(lin & (SIMD_WIDTH - 1)),
        "simdgroup_index_in_threadgroup": lambda: scalar(lin >> (SIMD_WIDTH.bit_length() - 1)),
        "threads_per_simdgroup": lambda: scalar(SIMD_WIDTH),
        "thread_execution_width": lambda: scalar(SIMD_WIDTH),
        "simdgroups_per_threadgroup": lambda: scalar(_ceil_div_arr(per_lane(counts), SIMD_WIDTH)),
        "dispatch_simdgroups_per_threadgroup":
            lambda: scalar(_ceil_div(dispatch_total, SIMD_WIDTH)),
        "thread_index_in_quadgroup": lambda: scalar(lin & 3),
        "quadgroup_index_in_threadgroup": lambda: scalar(lin >> 2),
        "quadgroups_per_threadgroup": lambda: scalar(_ceil_div_arr(per_lane(counts), 4)),
        "dispatch_quadgroups_per_threadgroup": lambda: scalar(_ceil_div(dispatch_total, 4)),
    })


def default_memory_budget() -> int:
    """The bytes a launch may use for its bookkeeping by default: a sixteenth of the RAM."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 16
    except (ValueError, OSError, AttributeError):
        return 1 << 30


@dataclass
class MemoryPlan:
    """What a launch will allocate besides its buffers, and how many lanes a batch gets."""

    fixed: int       # output shadows and per-thread counters, for the whole launch
    per_group: int   # one threadgroup of a batch: its lanes and threadgroup memory with shadow
    lanes: int       # lanes per batch (0: not even one threadgroup fits the budget)


def plan_memory(program: Program, outputs, grid, tg, budget: int) -> MemoryPlan:
    """Size batches so that threadgroup memory, its shadow and the lanes fit `budget`."""
    fixed = grid[0] * grid[1] * grid[2] * COUNTER_BYTES
    for o in outputs:
        granule = o.data.dtype.itemsize
        fixed += -(-o.data.nbytes // granule) * mem.SHADOW_BYTES
    threads = tg[0] * tg[1] * tg[2]
    code = program.code
    per_group = (threads * (LANE_BYTES + SLOT_BYTES * code.nslots) + code.threadgroup_bytes
                 + code.threadgroup_granules * (mem.SHADOW_BYTES + mem.WRITE_MARK_BYTES))
    groups = (budget - fixed) // per_group if budget > fixed else 0
    lanes = min(LANE_BUDGET // threads, groups) * threads if groups else 0
    return MemoryPlan(fixed, per_group, max(lanes, threads) if groups else 0)


def _gigabytes(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**28 else f"{n / 2**20:.1f} MiB"


def _buffer_region(name: str, data: np.ndarray, elem: ty.Type, space: str, **kw) -> mem.Region:
    raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    return mem.Region(name, space, elem, raw.size, data=raw, **kw)


def _pointee(var: Var) -> ty.Type:
    return var.type.pointee if isinstance(var.type, ty.PointerType) else var.type


def bind_buffers(m: Machine, gen, program: Program, inputs, outputs) -> tuple[dict, list]:
    """Regions for every buffer parameter (they live for the whole launch) and traffic rows."""
    regions: dict[str, tuple[mem.Region, int]] = {}
    traffic = []
    for p in gen.params:
        var = program.params.get(p.name)
        if var is None or p.role == "attribute":
            continue
        elem = _pointee(var)
        space = var.type.space if isinstance(var.type, ty.PointerType) else (var.space or
                                                                              "constant")
        if p.role == "input":
            b = inputs[p.index]
            counted = None if b.is_scalar else "global"
            region = _buffer_region(p.name, b.data, elem, space, counted=counted,
                                    element_count=b.size)
            region.data.flags.writeable = False  # a write is reported (`memory.store`)
            regions[p.name] = (region, b.offset * b.data.dtype.itemsize)
            if not b.is_scalar:
                traffic.append((region, "input", b.size * b.data.dtype.itemsize))
                m.buffers[p.name] = {"role": "input", "space": space, "shape": tuple(b.shape),
                                     "type": str(elem)}
        elif p.role == "output":
            o = outputs[p.index]
            region = _buffer_region(p.name, o.data, elem, "device", counted="global",
                                    track_races=True, track_init=not o.initialized,
                                    track_writes=True, element_count=o.data.size)
            regions[p.name] = (region, 0)
            traffic.append((region, "output", o.data.nbytes))
            m.buffers[p.name] = {"role": "output", "space": "device", "shape": tuple(o.shape),
                                 "type": str(elem)}
        else:
            b = inputs[p.index]
            values = {"shape": np.asarray(b.shape, np.int32),
                      "strides": np.asarray(b.strides, np.int64),
                      "ndim": np.asarray([len(b.shape)], np.int32)}[p.role]
            regions[p.name] = (_buffer_region(p.name, values, elem, "constant"), 0)
    return regions, traffic


@dataclass(frozen=True)
class ThreadgroupArgument:
    """Threadgroup memory bound to a kernel argument (`[[threadgroup(n)]]`, the length a
    pipeline's setThreadgroupMemoryLength gives): allocated per batch, one bank per
    threadgroup, uninitialised, checked for races as threadgroup variables are."""

    elem: ty.Type
    nbytes: int


def bind_kernel_frame(m: Machine, program: Program, regions: dict) -> Frame:
    frame = Frame(m, program.code.nslots, is_kernel=True, code=program.code)
    size = m.batch.size
    for name, var in program.params.items():
        if name in regions:
            bound = regions[name]
            if isinstance(bound, ThreadgroupArgument):
                bound = (_threadgroup_argument(m, name, bound), 0)
            region, base = bound
            if var.kind == "ptr":
                frame.vars[var.slot] = PtrSlot(region, size, base)
            else:
                frame.vars[var.slot] = RefSlot(region, np.full(size, base, np.int64), None)
        else:
            # a copy: the kernel may modify its parameters (`--thread_index_in_simdgroup`)
            attribute = program.attribute_of(name)
            frame.vars[var.slot] = as_declared(m.batch.attributes.fresh(attribute), var.type)
    return frame


def _threadgroup_argument(m: Machine, name: str, arg: ThreadgroupArgument) -> mem.Region:
    """The batch's threadgroup memory of argument `name` (made at its first binding)."""
    region = m.tg_regions.get(name)
    if region is None:
        region = m.tg_regions[name] = mem.Region(
            name, "threadgroup", arg.elem, arg.nbytes, m.batch.tg_count, counted="threadgroup",
            track_races=True, track_init=True,
            element_count=arg.nbytes // max(1, arg.elem.size))
        m.buffers.setdefault(name, {"role": "threadgroup", "space": "threadgroup",
                                    "shape": (arg.nbytes // max(1, arg.elem.size),),
                                    "type": str(arg.elem)})
    return region


def as_declared(values: np.ndarray, declared: ty.Type) -> np.ndarray:
    """An attribute's per-lane values (`uint` or `uint3`) as the parameter declares them:
    Metal lets `[[thread_position_in_grid]]` be `uint`, `uint2` or `uint3`, and `ushort`
    forms of each."""
    dtype = ty.scalar_of(declared).dtype
    width = declared.n if isinstance(declared, ty.VectorType) else 0
    if (values.shape[1] if values.ndim == 2 else 0) == width and values.dtype == dtype:
        return values   # as MLX's generated kernels declare it: already a fresh copy
    if width:
        columns = values if values.ndim == 2 else values[:, None]
        return np.array(columns[:, :width], dtype=dtype)
    return np.array(values[:, 0] if values.ndim == 2 else values, dtype=dtype)


def launch(gen, inputs, outputs, grid, threadgroup, template=None, math_mode: str = "safe",
           trace: bool | Collection[int] = False, step_limit: int | None = None,
           time_limit: float | None = None, profile: bool = False,
           memory_budget: int | None = None, include_dirs: tuple[str, ...] = ()) -> Report:
    """Run MLX's generated kernel `gen` in the simulator; outputs are written in place.

    `trace`: True records every access; a collection of linear threadgroup ids records only
    theirs (the rest of the launch runs at nearly untraced speed). `step_limit` bounds the work
    (expression nodes evaluated), `time_limit` the wall time in seconds. `profile` measures
    coalescing and bank conflicts into `report.memory` (see `metalsim.efficiency`).

    `memory_budget` bounds the bytes of the simulator's own bookkeeping (shadows, per-lane
    state, threadgroup memory); batches are sized to fit it, and a launch that cannot fit is a
    `resource-limit` error before anything is allocated. Default: `default_memory_budget()`.
    `include_dirs` are where `#include "..."` looks for files, in order."""
    grid = tuple(int(g) for g in grid)
    for buffer in (*inputs, *outputs):   # MLX (and Metal) take these; the simulator cannot
        if buffer.dtype == "complex64":
            raise ValueError(f"'{buffer.name}' is complex64, which metalsim does not support "
                             "(MLX's complex64_t struct is not modelled); pass the real and "
                             "imaginary parts as two float32 arrays")
    trace_groups = None if isinstance(trace, bool) else frozenset(int(g) for g in trace)
    if trace is True and grid[0] * grid[1] * grid[2] > MAX_TRACED_THREADS:
        raise ValueError(f"[metalsim] trace=True records every memory access and is limited to "
                         f"{MAX_TRACED_THREADS:,} threads; this grid has "
                         f"{grid[0] * grid[1] * grid[2]:,}. Trace a smaller launch.")
    tracing = trace is not False
    keep_freed_memory()   # lane-sized temporaries reuse the heap instead of faulting pages in
    with deep_recursion():
        program = compile_program(gen.text, tuple(gen.sections), math_mode, tracing,
                                  include_dirs, header_files(include_dirs))
    tg = tuple(max(1, min(int(t), g)) for t, g in zip(threadgroup, grid))
    m = Machine(grid, program.source_map, step_limit or DEFAULT_STEP_LIMIT, tracing, trace_groups,
                time_limit, program.guards)
    m.efficiency = MemoryEfficiency() if profile else None
    budget = default_memory_budget() if memory_budget is None else memory_budget
    plan = plan_memory(program, outputs, grid, tg, budget)
    within_limits = (program.code.threadgroup_bytes <= MAX_THREADGROUP_MEMORY
                     and program.code.thread_bytes <= MAX_THREAD_MEMORY
                     and int(np.prod(threadgroup)) <= MAX_THREADS_PER_THREADGROUP)
    if within_limits and not plan.lanes:
        m.report("resource-limit", "error",
                 f"the simulator would need {_gigabytes(plan.fixed + plan.per_group)} for this "
                 f"launch (race and initialisation shadows of the outputs "
                 f"and per-thread counts: {_gigabytes(plan.fixed)}; one threadgroup: "
                 f"{_gigabytes(plan.per_group)}), more than its memory budget of "
                 f"{_gigabytes(budget)}", None, np.empty(0, np.int64),
                 hint="simulate a smaller launch (the checks are the same at any size), or "
                      "pass a larger memory_budget= to simulate()")
        return build_report(m, grid, tg, [])
    regions, traffic_rows = bind_buffers(m, gen, program, inputs, outputs)
    kernel_coord = Coord("source", 1, 1)
    if within_resource_limits(m, program.code, len(regions), threadgroup) and m.total_threads:
        # What a traced second run (`follow_undefined`) starts from; it follows small launches only.
        initial = ([o.data.copy() for o in outputs] if m.total_threads <= MAX_TRACED_THREADS
                   else [])
        with deep_recursion():
            run_batches(m, program, regions, tg, kernel_coord, plan.lanes)
            if m.unfollowed_undefined:
                efficiency = m.efficiency
                m, traffic_rows = follow_undefined(m, gen, inputs, outputs, initial, tg,
                                                   math_mode, traffic_rows, tracing, plan.lanes,
                                                   include_dirs)
                m.efficiency = efficiency
                if m.trace is not None:  # the whole launch is traced now
                    trace_groups = None
    report = build_report(m, grid, tg, traffic_rows)
    report.traced_threadgroups = None if trace_groups is None else tuple(sorted(trace_groups))
    report.memory = m.efficiency
    return report


def within_resource_limits(m: Machine, code: FunctionCode, buffers: int, threadgroup) -> bool:
    """Report the Metal resource limits the launch exceeds, before anything is allocated."""
    none = np.empty(0, np.int64)
    if code.threadgroup_bytes > MAX_THREADGROUP_MEMORY:
        m.report("resource-limit", "error",
                 f"the kernel declares {code.threadgroup_bytes:,} bytes of threadgroup "
                 f"memory; Apple GPUs allow {MAX_THREADGROUP_MEMORY:,}", None, none,
                 hint="use smaller tiles")
    elif int(np.prod(threadgroup)) > MAX_THREADS_PER_THREADGROUP:
        m.report("resource-limit", "error",
                 f"threadgroup of {int(np.prod(threadgroup))} threads; the maximum is "
                 f"{MAX_THREADS_PER_THREADGROUP}", None, none)
    elif code.thread_bytes > MAX_THREAD_MEMORY:
        name, size = code.largest_thread_object
        m.report("resource-limit", "error",
                 f"the kernel declares {code.thread_bytes:,} bytes of thread-private memory "
                 f"per thread ('{name}' alone is {size:,}); metalsim allows "
                 f"{MAX_THREAD_MEMORY:,}", None, none,
                 hint="private arrays live in each thread's registers and stack: keep large "
                      "data in device or threadgroup memory")
    elif buffers > MAX_BUFFERS:
        m.report("resource-limit", "error",
                 f"the kernel binds {buffers} buffers (inputs, outputs and their shape, "
                 f"strides and ndim); Metal's buffer argument table has {MAX_BUFFERS} "
                 f"entries", None, none, hint="pack several inputs into one array")
    else:
        return True
    return False


def follow_undefined(m: Machine, gen, inputs, outputs, initial: list, tg, math_mode: str,
                     traffic_rows: list, keep_trace: bool, lanes: int,
                     include_dirs: tuple[str, ...] = ()) -> tuple[Machine, list]:
    """An untraced launch (or the untraced threadgroups of a partly traced one) read
    uninitialised memory, which matters only where the value goes, and only a traced run follows
    values: run again, traced, from the same outputs, and return that run's machine (with its
    trace if `keep_trace`). Too large a launch keeps its warnings at the read."""
    if m.total_threads > MAX_TRACED_THREADS:
        for f in m.findings.values():
            if f.kind == "uninitialized-read" and f.severity == "warning":
                f.detail += (f"; launches of more than {MAX_TRACED_THREADS:,} threads are not "
                             "followed to where such a value goes")
        return m, traffic_rows
    for o, data in zip(outputs, initial):
        o.data[...] = data
    program = compile_program(gen.text, tuple(gen.sections), math_mode, True, include_dirs,
                              header_files(include_dirs))
    traced = Machine(m.grid, program.source_map, m.step_limit, True, None, m.time_limit,
                     program.guards)
    regions, traffic_rows = bind_buffers(traced, gen, program, inputs, outputs)
    run_batches(traced, program, regions, tg, Coord("source", 1, 1), lanes)
    if not keep_trace:
        traced.trace = None
    return traced, traffic_rows


def run_batches(m: Machine, program: Program, regions: dict, tg, coord: Coord,
                lanes: int = LANE_BUDGET) -> None:
    with quiet_numpy():   # once for the launch, not once per operation (see `quiet_numpy`)
        _run_batches(m, program, regions, tg, lanes)


def _run_batches(m: Machine, program: Program, regions: dict, tg, lanes: int) -> None:
    for batch in make_batches(m.grid, tg, lanes):
        m.start_batch(batch)
        frame = bind_kernel_frame(m, program, regions)
        try:
            program.code.body(frame, Lanes(slice(None), batch.size))
            m.finish_batch()
        except KernelStop as stop:
            m.finish_batch()
            m.report(stop.kind, "error", stop.message, stop.coord, stop.lanes, hint=stop.hint)
            return
        except StepLimitExceeded as stop:
            m.finish_batch()
            if stop.reason:
                message = f"this loop never ends: {stop.reason}, and nothing in its body leaves it"
                hint = stop.hint
            elif stop.timed_out:
                message = (f"the kernel ran longer than {m.time_limit:g} s (max_seconds) and was "
                           f"stopped")
                hint = "raise max_seconds if the kernel is meant to run this long"
            else:
                message = (f"the kernel ran more than {m.step_limit:,} steps (expression "
                           f"nodes evaluated); it probably never ends")
                hint = ("look for a loop whose condition never becomes false, such as a uint "
                        "counter compared with >= 0 or decremented past 0; a kernel meant to "
                        "do this much work can raise the limit with max_steps=")
            m.report("step-limit", "error", message, stop.coord, stop.lanes, hint=hint)
            return


def build_report(m: Machine, grid, tg, traffic_rows) -> Report:
    gx, gy, gz = grid
    counts = {name: getattr(m.counters, name).reshape(gz, gy, gx) for name in COUNT_NAMES}
    traffic = [BufferTraffic(r.name, role, r.bytes_read, r.bytes_written, ideal)
               for r, role, ideal in traffic_rows]
    efficiency = (m.active_lane_steps / (SIMD_WIDTH * m.simd_group_steps)
                  if m.simd_group_steps else 1.0)
    unwritten = {r.name: np.flatnonzero(~r.written) * r.granule // r.unit
                 for r, role, _ in traffic_rows if role == "output"}
    return Report(grid=grid, threadgroup=tg, counts=counts, traffic=traffic,
                  simd_efficiency=efficiency, diagnostics=m.diagnostics(), trace=m.trace,
                  buffers=m.buffers, unwritten=unwritten)
