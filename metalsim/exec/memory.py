"""Typed, byte-addressed memory with shadow state: bounds, initialisation, races, counts.

A `Region` is one allocation: a kernel buffer (`device`/`constant`), a threadgroup variable (one
bank per threadgroup of the batch) or a thread-private array (one bank per lane). Its bytes can be
read through any element type, so `(device float4*)p` and `(threadgroup half*)shmem` work as on
the GPU. Shadow state is kept per *granule*, the size of the region's declared element type:
whether a granule was ever written, and who last wrote and read it in which barrier epoch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from metalsim.diagnostics import Coord
from metalsim.exec.machine import Machine, Undefined
from metalsim.lang.types import (
    AtomicType,
    ScalarType,
    SimdMatrixType,
    StructType,
    Type,
    VectorType,
    array_shape,
    scalar_of,
)

POISON_BYTE = 0xBE
STORE, RMW = 1, 2  # kinds of atomic access in the race shadow (0: a load)
# Shadow bytes per granule of a region tracking races and initialisation: the init and written
# flags, the last writer's, reader's and atomic's thread and stamp (int64) and site (int32), and
# the atomic access's kind (int8).
SHADOW_BYTES = 2 + 6 * 8 + 3 * 4 + 1
# Besides, per granule of threadgroup memory: the marks with which a write looks for conflicts
# among the reads of its generation still in the read log (`_reads_may_conflict`).
WRITE_MARK_BYTES = 8


def leaf_scalar(t: Type) -> ScalarType:
    """The scalar a type is built from (`float` for `float4[8]`, `int` for `atomic_int`)."""
    t = array_shape(t)[1]
    if isinstance(t, AtomicType):
        return t.value
    if isinstance(t, StructType):
        return t.narrowest  # so that two members never share a granule
    return scalar_of(t)


class Region:
    """One allocation of typed memory; see the module docstring."""

    def __init__(self, name: str, space: str, elem: Type, nbytes: int, banks: int = 1, *,
                 counted: str | None = None, track_races: bool = False,
                 track_init: bool = False, track_writes: bool = False,
                 data: np.ndarray | None = None, element_count: int | None = None) -> None:
        self.name = name
        self.space = space            # "device", "constant", "threadgroup", "thread"
        self.elem = elem              # declared element type (for messages and granules)
        self.nbytes = nbytes
        self.banks = banks
        self.counted = counted        # "global", "threadgroup" or None
        self.track_races = track_races
        self.track_init = track_init
        self.unit = max(1, array_shape(elem)[1].size)  # messages count innermost elements
        self.element_count = element_count if element_count is not None else nbytes // self.unit
        if data is None:
            data = np.full((banks, nbytes), POISON_BYTE, np.uint8)
        self.data = data.reshape(banks, nbytes)
        self.granule = leaf_scalar(elem).size
        self.granules = -(-nbytes // self.granule)
        size = banks * self.granules  # shadow state is flat: index = bank * granules + granule
        self.init = np.zeros(size, bool) if track_init else None
        self.init_hint = ""   # the hint for a read before a write, where not the usual one
        # Whether every granule was written (None: not known since the latest write): reads of
        # a fully written region need not gather their granules' flags (`fully_written`).
        self.all_written: bool | None = False
        # granules some thread wrote (for outputs, which may start initialised); needs races
        self.written = np.zeros(size, bool) if track_writes else None
        self.shadow_size = size if track_races else 0
        # `Machine.tg_generation` of the latest write, read and atomic access recorded (-1:
        # none): a kind of access never recorded, or (threadgroup memory) recorded only in an
        # older generation, cannot conflict with anything, so its shadow is not even gathered.
        self.w_gen = self.r_gen = self.a_gen = -1
        # Threadgroup memory records its reads lazily: (granules, threads, stamps, site) per
        # read of the current generation, applied to the reader shadow only when a write or an
        # atomic of that generation needs it, and dropped once a barrier orders them.
        self.read_log: list[tuple] = []
        self.read_log_gen = -1
        self.read_log_size = 0
        self._views: dict[np.dtype, np.ndarray] = {}
        self._accesses: dict[int, Access] = {}   # by id of the accessed type (`access`)
        self.bytes_read = 0
        self.bytes_written = 0
        # the loads and stores of `_check_lost_update` (None until an atomic load)
        self.atomic_loads: LoadShadow | None = None
        self.provenance: dict[tuple, frozenset] = {}  # thread memory, trace mode only
        # trace mode: threadgroup cells holding a value that came from uninitialised reads
        self.undefined: dict[tuple, frozenset] = {}

    # Race shadow, built on first use (a kernel that only writes an output never needs the
    # reader and atomic arrays): the last writer, reader and atomic access (an atomic never
    # races with another atomic) per granule, with stamps and sites (`Machine.site`).
    _SHADOW = {"w_tid": (-1, np.int64), "w_stamp": (0, np.int64), "w_site": (0, np.int32),
               "r_tid": (-1, np.int64), "r_stamp": (0, np.int64), "r_site": (0, np.int32),
               "a_tid": (-1, np.int64), "a_stamp": (0, np.int64), "a_site": (0, np.int32),
               "a_kind": (0, np.int8),  # the atomic access was a load, STORE or RMW
               "write_mark": (-1, np.int64)}  # see `_reads_may_conflict`

    def __getattr__(self, name: str) -> np.ndarray:
        spec = Region._SHADOW.get(name)
        if spec is None or not self.__dict__.get("shadow_size"):
            raise AttributeError(name)
        fill, dtype = spec
        array = (np.zeros if fill == 0 else np.full)(self.shadow_size, *(
            (dtype,) if fill == 0 else (fill, dtype)))
        setattr(self, name, array)
        return array

    def fully_written(self) -> bool:
        """Whether every granule was written (initialisation shadow), looked at again only
        after a write: once true it stays true until `forget_init`."""
        if self.all_written is None:
            self.all_written = bool(self.init.all())
        return self.all_written

    def forget_init(self, banks: np.ndarray | slice) -> None:
        """The objects of banks `banks` (lanes, for thread memory) begin their lifetime again:
        indeterminate until written (a variable declared anew in each loop iteration)."""
        self.init.reshape(self.banks, self.granules)[banks] = False
        self.all_written = False

    def note_init(self, flat: np.ndarray | slice) -> None:
        """Granules `flat` were written."""
        self.init[flat] = True
        if self.all_written is False:
            self.all_written = None

    def view(self, dtype: np.dtype) -> np.ndarray:
        v = self._views.get(dtype)
        if v is None:
            usable = self.nbytes - self.nbytes % dtype.itemsize
            v = self._views[dtype] = self.data[:, :usable].view(dtype)
        return v

    def flat_view(self, dtype: np.dtype) -> np.ndarray:
        """The region's bytes, bank after bank, as one flat array of `dtype` (whose size
        divides the bank's): element `bank * (nbytes // itemsize) + i` is `view(dtype)[bank,
        i]`, and one gather or scatter reaches the elements of every bank."""
        key = ("flat", dtype)
        v = self._views.get(key)
        if v is None:
            v = self._views[key] = self.data.reshape(-1).view(dtype)
        return v

    def bank(self, m: Machine, idx: np.ndarray | slice) -> np.ndarray | int:
        if self.space == "threadgroup":
            return m.batch.tg_local[idx]
        if self.space == "thread":
            return np.arange(m.batch.size)[idx]
        return 0

    def describe_element(self, t: Type) -> str:
        return f"'{self.name}' has {self.element_count} element{'s' * (self.element_count != 1)}"


def _access_layout(t: Type) -> tuple[ScalarType, int]:
    """The scalar element type and component count of a load/store of type `t`."""
    known = _LAYOUTS.get(id(t))
    if known is not None and known[0] is t:   # (the type itself: an id can be reused)
        return known[1]
    if isinstance(t, VectorType):
        layout = t.elem, t.n
    elif isinstance(t, SimdMatrixType):
        layout = t.elem, t.per_lane
    else:
        layout = t, 1
    if len(_LAYOUTS) < 4096:
        _LAYOUTS[id(t)] = (t, layout)
    return layout  # type: ignore[return-value]


_LAYOUTS: dict[int, tuple[Type, tuple[ScalarType, int]]] = {}


class Access:
    """What a load or store of type `t` in one region needs besides the offsets, worked out
    once per region and type (`access`) instead of at every access."""

    __slots__ = ("t", "elem", "comps", "width", "align", "limit", "flat", "shift", "banked",
                 "counts", "_data", "_view", "_batch", "_bases")

    def __init__(self, region: Region, t: Type) -> None:
        self.t = t
        self.elem, self.comps = elem, comps = _access_layout(t)
        self.width = elem.size * comps   # bytes one lane touches
        # Aligned vectors need their own alignment (16 bytes for float4), packed ones the
        # element's.
        self.align = t.align if isinstance(t, VectorType) else elem.size
        self.limit = region.nbytes - self.width   # the largest offset in bounds
        # A scalar access of the region's granule type (the common case): its granules are
        # its elements (`_flat_index`).
        self.flat = comps == 1 and elem.size == region.granule and not region.nbytes % elem.size
        self.shift = _SHIFTS.get(elem.size)
        self.banked = region.space in ("threadgroup", "thread")
        # the counters of a read and of a write, where the region is counted
        self.counts = ((_COUNT_NAMES[region.counted, False], _COUNT_NAMES[region.counted, True])
                       if region.counted is not None else None)
        self._data = self._view = self._batch = self._bases = None

    def view(self, region: Region) -> np.ndarray:
        """`region.flat_view` of the element type, kept while the region's bytes are the same
        array (a write to an input replaces them)."""
        if self._data is not region.data:
            self._data, self._view = region.data, region.flat_view(self.elem.dtype)
        return self._view

    def bases(self, m: Machine, region: Region) -> np.ndarray:
        """`m.bank_bases` of a banked region, for every lane of the batch."""
        if self._batch is not m.batch:
            self._batch, self._bases = m.batch, m.bank_bases(region.space, region.granules)
        return self._bases


def access(region: Region, t: Type) -> Access:
    """The `Access` of type `t` in `region`, made on first use."""
    known = region._accesses.get(id(t))
    if known is None or known.t is not t:   # (the type itself: an id can be reused)
        known = region._accesses[id(t)] = Access(region, t)
    return known


def cells_of(m: Machine, region: Region, lanes: np.ndarray, element: np.ndarray) -> list:
    """Memory cells as diagrams name them: (buffer, threadgroup or -1, element index)."""
    lanes, element = lanes[:MAX_CELLS], np.ravel(element)[:MAX_CELLS]
    owner = (m.batch.tg_global[lanes] if region.space == "threadgroup"
             else np.full(lanes.size, -1))
    return [(region.name, int(g), int(e)) for g, e in zip(owner.tolist(), element.tolist())]


MAX_CELLS = 64


BOUNDS_HINT = "guard the access with a bounds check such as `if (i < n)`"
GUARDED_HINT = ("this access is already behind the test at {where}, yet its index goes past "
                "the end: the index expression is likely wrong, and another bounds check "
                "would only hide it. Work out the index by hand for one of the threads above: "
                "which thread position gives the row and which the column (rows and columns "
                "swapped?), and how long a row is.")
# An element index this large is a negative one in 32-bit unsigned arithmetic: no buffer a
# kernel indexes with a uint has 2**31 elements.
WRAPPED_BELOW = 1 << 31
WRAP_HINT = ("a `uint` never goes below 0: subtracting past 0 wraps around to about 4 billion, "
             "so a test such as `i - 1 >= 0` is always true for an unsigned `i`. Test the "
             "unsigned value before you subtract from it, or compute the index in `int`.")


def _check(m: Machine, region: Region, idx: np.ndarray | slice, off: np.ndarray, t: Type,
           write: bool, coord: Coord, a: Access | None = None) -> np.ndarray | None:
    """Bounds and alignment; returns a mask of the lanes (of `idx`) whose access is valid
    (None: every lane's). `off` holds int64 byte offsets; `a` is `access(region, t)`."""
    a = a or access(region, t)
    if off.size == 0 or _all_valid(off, a.limit, a.align):
        return None
    width, align = a.width, a.align
    bad = (off < 0) | (off + width > region.nbytes)
    misaligned = (off % align) != 0
    lanes = np.arange(m.batch.size)[idx]
    if bad.any():
        first = off[bad] if off.ndim else off
        index = int(np.ravel(first)[0]) // region.unit
        verb = "wrote" if write else "read"
        offenders = np.broadcast_to(lanes, bad.shape)[bad] if bad.ndim else lanes
        message = f"out-of-bounds {'write' if write else 'read'}: {region.describe_element(t)}"
        detail, hint = f"a thread {verb} element {index} of '{region.name}'", BOUNDS_HINT
        if WRAPPED_BELOW <= index < 1 << 32:
            message += ", and the index is an unsigned one that went below zero"
            detail += (f": {index} is {index - (1 << 32)} wrapped around, as unsigned "
                       f"arithmetic does (`0u - 1` is 4294967295)")
            hint = WRAP_HINT
        elif (guard := m.guards.get(coord)) is not None:
            where = f"line {guard.line}" + ("" if guard.section == "source"
                                            else f" of the {guard.section}")
            hint = GUARDED_HINT.format(where=where)
        m.report("out-of-bounds", "error", message,
                 coord, offenders, key=(region.name, write), detail=detail, hint=hint,
                 cells=cells_of(m, region, offenders, np.broadcast_to(off, bad.shape)[bad]
                                // region.unit))
        if m.trace is not None and region.space != "thread":
            _record_outside(m, region, offenders, np.broadcast_to(off, bad.shape)[bad], t,
                            write, coord)
    if misaligned.any():
        m.report("out-of-bounds", "error",
                 f"misaligned {t} access to '{region.name}' (needs {align}-byte alignment)",
                 coord,
                 np.broadcast_to(lanes, misaligned.shape)[misaligned] if misaligned.ndim
                 else lanes, key=(region.name, "align"))
    return ~(bad | misaligned)


def _all_valid(off: np.ndarray, limit: int, align: int) -> bool:
    """Whether every offset (int64) is in `[0, limit]` and a multiple of `align` (a power of
    two), in as few numpy passes as possible. The bitwise or of the offsets is negative where
    one is, at least the largest where none is, and misaligned exactly where one is: one pass
    decides the common case, and the largest offset is looked for only when the or is past
    the limit (a buffer whose size is no power of two). Byte accesses need no alignment: the
    largest offset seen as unsigned (a negative one is past any buffer) decides in one."""
    if align == 1:
        return np.maximum.reduce(off.view(np.uint64), None) <= limit
    bits = np.bitwise_or.reduce(off, None)
    return (bits >= 0 and not bits & (align - 1)
            and (bits <= limit or np.maximum.reduce(off, None) <= limit))


_SHIFTS = {1: 0, 2: 1, 4: 2, 8: 3}


def _divide(off: np.ndarray, size: int) -> np.ndarray:
    """`off // size` for byte offsets inside a region (never negative): a shift for the
    power-of-two sizes of scalar types, several times faster than numpy's integer division."""
    shift = _SHIFTS.get(size)
    return off >> shift if shift is not None else off // size


def _granules(region: Region, off: np.ndarray, t: Type) -> np.ndarray:
    elem, n = _access_layout(t)
    g = region.granule
    first = _divide(off, g)
    if n == 1 and elem.size <= g:
        return first
    last = _divide(off + elem.size * n - 1, g)
    count = int(np.max(last - first)) + 1 if np.size(off) else 1
    return first[..., None] + np.arange(count)


def _flat_index(m: Machine, region: Region, idx: np.ndarray | slice, off: np.ndarray,
                a: Access) -> np.ndarray | None:
    """For a scalar access of the region's granule type (the common case: `a.flat`), each
    lane's granule in the flat shadow layout (`bank * granules + granule`), which is also the
    index of its element in `region.flat_view`; None for other accesses. `off` must be in
    bounds."""
    if not a.flat:
        return None
    flat = off >> a.shift if a.shift is not None else off // a.elem.size
    if a.banked:
        bases = a._bases if a._batch is m.batch else a.bases(m, region)
        flat += bases if idx.__class__ is slice else m.lanes_of(bases, idx)
    return flat


def _lane_indices(m: Machine, idx: np.ndarray | slice) -> np.ndarray:
    return np.arange(m.batch.size)[idx] if isinstance(idx, slice) else idx


def _per_lane(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """`x` with one entry per lane (a uniform value broadcast); as is when it has them."""
    return x if x.shape == shape else np.broadcast_to(x, shape)


def _banks_per_lane(bank) -> bool:
    """Whether `bank` (from `Region.bank`) holds a bank per lane rather than one for all (what
    `np.ndim` would say, without its dispatch: this is asked at every access)."""
    return getattr(bank, "ndim", 0) > 0


def _cells(region: Region, bank, off: np.ndarray, t: Type) -> np.ndarray:
    """The values of type `t` at byte offsets `off` (one row of components per lane for
    vectors), as a copy: what a load reads, and what the trace records after an access."""
    elem, comps = _access_layout(t)
    view, first = region.view(elem.dtype), _divide(off, elem.size)
    if comps == 1:
        return view[bank, first]
    return view[np.asarray(bank)[..., None] if _banks_per_lane(bank) else bank,
                first[:, None] + np.arange(comps)]


def _offsets_access(region: Region, n: int, off: np.ndarray, t: Type
                     ) -> tuple[np.ndarray, Access]:
    """The int64 byte offsets of `n` lanes (a uniform one broadcast) and `access(region, t)`,
    its lookup inline (the hottest path of every load and store)."""
    off = np.asarray(off, np.int64)
    if off.shape != (n,):
        off = np.broadcast_to(off, (n,))
    a = region._accesses.get(id(t))
    if a is None or a.t is not t:
        a = access(region, t)
    return off, a


def load(m: Machine, region: Region, idx: np.ndarray | slice, n: int, off: np.ndarray,
         t: Type, coord: Coord) -> np.ndarray:
    """Read a value of type `t` at byte offsets `off` (one per active lane)."""
    if region.__class__ is not Region:  # lanes' pointers into several allocations, or none
        return region.load(m, idx, n, off, t, coord)
    off, a = _offsets_access(region, n, off, t)
    ok = (None if n == 0 or _all_valid(off, a.limit, a.align)
          else _check(m, region, idx, off, t, False, coord, a))
    if ok is not None:
        idx, off = _lane_indices(m, idx)[ok], off[ok]
    flat = _flat_index(m, region, idx, off, a)
    bank = None
    if flat is not None:
        cells = a.view(region).take(flat)   # (faster than `[flat]`)
    else:
        bank = region.bank(m, idx)
        cells = _cells(region, bank, off, t)
    if ok is None:
        value = cells
    else:  # out-of-bounds lanes read zeros (the buffer may have no element at all)
        value = np.zeros((n,) if a.comps == 1 else (n, a.comps), a.elem.dtype)
        value[ok] = cells
    _after_access(m, region, idx, bank, off, t, False, coord, a, flat=flat)
    return value


def store(m: Machine, region: Region, idx: np.ndarray | slice, n: int, off: np.ndarray,
          t: Type, value: np.ndarray, coord: Coord) -> None:
    """Write `value` (type `t`) at byte offsets `off` (one per active lane)."""
    if region.__class__ is not Region:
        region.store(m, idx, n, off, t, value, coord)
        return
    off, a = _offsets_access(region, n, off, t)
    elem, comps = a.elem, a.comps
    value = _per_lane(np.asarray(value, elem.dtype), (n,) if comps == 1 else (n, comps))
    ok = (None if n == 0 or _all_valid(off, a.limit, a.align)
          else _check(m, region, idx, off, t, True, coord, a))
    if ok is not None:
        off, value, idx = off[ok], value[ok], _lane_indices(m, idx)[ok]
    if not region.data.flags.writeable:
        _write_to_input(m, region, idx, coord)
    flat = _flat_index(m, region, idx, off, a)
    bank = None
    if flat is not None:
        a.view(region)[flat] = value
    else:
        bank = region.bank(m, idx)
        view = region.view(elem.dtype)
        first = _divide(off, elem.size)
        if comps == 1:
            view[bank, first] = value
        else:
            view[np.asarray(bank)[..., None] if _banks_per_lane(bank) else bank,
                 first[:, None] + np.arange(comps)] = value

    def identical() -> np.ndarray:  # per lane: its value is what memory holds after the store
        if flat is not None:
            return a.view(region)[flat] == value
        same = _cells(region, bank, off, t) == value
        return same if comps == 1 else same.all(axis=1)
    _after_access(m, region, idx, bank, off, t, True, coord, a, identical, flat)


def _write_to_input(m: Machine, region: Region, idx, coord: Coord) -> None:
    """A write through a pointer cast from an input's `const device T*`. C++ allows the cast
    and the GPU performs the write, but MLX arrays are immutable: the write changes the
    caller's array (and any array sharing its buffer) behind MLX's back, or is lost where MLX
    passed a contiguous copy. The simulator writes its own copy and reports an error."""
    m.report("input-write", "error", f"write to input buffer '{region.name}'", coord,
             _lane_indices(m, idx),
             hint="MLX arrays are immutable; write the result to an output buffer")
    region.data = region.data.copy()
    region._views.clear()


_COUNT_NAMES = {("global", False): "global_reads", ("global", True): "global_writes",
                ("threadgroup", False): "threadgroup_reads",
                ("threadgroup", True): "threadgroup_writes"}


def _after_access(m: Machine, region: Region, idx: np.ndarray | slice, bank, off: np.ndarray,
                  t: Type, write: bool, coord: Coord, a: Access, identical=None,
                  flat: np.ndarray | None = None) -> None:
    """Counts, initialisation and race shadow for the lanes `idx` whose access was in bounds;
    `bank` is their bank (None: not computed yet), `flat` their granules (`_flat_index`) where
    known; `a` is `access(region, t)`."""
    n = off.shape[0]
    if n == 0:
        return
    if write:
        region.bytes_written += n * a.width
    else:
        region.bytes_read += n * a.width
    if a.counts is not None:
        m.count(a.counts[write], idx)
        if m.efficiency is not None:
            m.efficiency.record(region.counted, m.batch.simd_global[idx], off, a.width,
                                coord.line if coord and coord.section == "source" else None)
    if bank is None and (m.trace is not None or flat is None):
        bank = region.bank(m, idx)
    if m.trace is not None:
        _record(m, region, _lane_indices(m, idx), bank, off, t, write, coord)
    if not (region.track_init or region.track_races):
        return
    if flat is None:
        g = _granules(region, off, t)
        if _banks_per_lane(bank):
            bank = bank[:, None] if g.ndim > 1 else bank
            flat = bank * region.granules + g
        else:
            flat = g if not bank else bank * region.granules + g
    # Where a write's granules are one consecutive run (each thread its own element, in
    # order), the shadows are updated through a slice: a copy, not a scatter.
    at = _run_of(flat) if write else flat
    if region.track_init:
        if write:
            region.note_init(at)
        elif not (region.all_written or region.fully_written()):
            seen = region.init[flat]
            if not seen.all():
                bad = ~seen if seen.ndim == 1 else ~seen.all(axis=1)
                offenders = _lane_indices(m, idx)[bad]
                element = int(np.ravel(off[bad])[0]) // region.unit
                m.undefined_read(
                    offenders, Undefined(coord, _what(region),
                                         cells_of(m, region, offenders[:1], off[bad][:1]
                                                  // region.unit)[0], _init_hint(region)),
                    detail=f"element {element} of '{region.name}' was read before any thread "
                           "wrote it")
    if write and region.written is not None:
        region.written[at] = True
    if region.track_races:
        _race_check(m, region, idx, flat, write, coord, identical, at)


def _what(region: Region) -> str:
    """How a message names a region: "threadgroup memory 'tile'", "output 'out'", ..."""
    kind = {"threadgroup": "threadgroup memory", "device": "output",
            "thread": "variable"}.get(region.space, "memory")
    return f"{kind} '{region.name}'"


def _defined_only(sources: list[frozenset]) -> list[frozenset]:
    """Provenance as the trace records it: memory cells, without `Undefined` reads."""
    return [s if not any(c.__class__ is Undefined for c in s)
            else frozenset(c for c in s if c.__class__ is not Undefined) for s in sources]


def _record(m: Machine, region: Region, lanes: np.ndarray, bank, off: np.ndarray, t: Type,
            write: bool, coord: Coord) -> None:
    """Trace one access: who touched which cell, when, with what value; and for writes, where
    the value came from. A cell is (buffer, threadgroup or -1, element); thread-private memory
    is not traced but values flow through it.

    Definedness follows the same provenance: a value that came from an uninitialised read is
    reported when it is stored to device memory; stored to threadgroup memory, the cell keeps
    its origin and passes it on to whoever reads it."""
    if m.lane_traced is not None:  # only the chosen threadgroups are traced
        keep = m.lane_traced[lanes]
        lanes, off = lanes[keep], off[keep]
        bank = bank[keep] if _banks_per_lane(bank) else bank
        if lanes.size == 0:
            return
    b = m.batch
    owner = b.tg_global[lanes] if region.space == "threadgroup" else (
        b.tid[lanes] if region.space == "thread" else np.full(lanes.size, -1))
    element = off // region.unit

    def cells() -> list[tuple[str, int, int]]:   # (built only where needed)
        return [(region.name, g, e) for g, e in zip(owner.tolist(), element.tolist())]
    if region.space == "thread":
        # Private memory is not drawn, but values flow through it: keep what was stored.
        if write:
            for cell, sources in zip(cells(), m.sources(lanes)):
                region.provenance[cell] = sources
        else:
            m.note_sources(lanes, {lane: region.provenance.get(cell, ())
                                   for lane, cell in zip(lanes.tolist(), cells())})
        return
    sources = m.sources(lanes) if write else None
    if write:
        if region.space == "device":
            m.check_defined(lanes, sources, coord, f"is stored to '{region.name}'")
        elif m.undefined_flows or region.undefined:
            for cell, came in zip(cells(), sources):
                undefined = frozenset(c for c in came if c.__class__ is Undefined)
                if undefined:
                    region.undefined[cell] = undefined
                else:
                    region.undefined.pop(cell, None)
    else:
        m.note_cells(lanes, region.name, owner, element)
        if region.undefined:
            m.note_sources(lanes, {lane: region.undefined.get(cell, ())
                                   for lane, cell in zip(lanes.tolist(), cells())})
    m.trace.append({
        "kind": "write" if write else "read", "buffer": region.name, "space": region.space,
        "thread": b.tid[lanes], "threadgroup": b.tg_global[lanes], "element": element,
        "epoch": m.tg_epoch[b.tg_local[lanes]].copy(), "line": coord.line if coord else None,
        "section": coord.section if coord else None, "type": str(t),
        "value": _cells(region, bank, off, t),
        "sources": (_defined_only(sources) if m.undefined_flows else sources) if write else None,
    })


def _record_outside(m: Machine, region: Region, lanes: np.ndarray, off: np.ndarray, t: Type,
                    write: bool, coord: Coord) -> None:
    """Trace accesses past the end of a buffer (`outside`: they did not happen), so that the
    explorer can list them beside the thread's other accesses."""
    if m.lane_traced is not None:
        keep = m.lane_traced[lanes]
        lanes, off = lanes[keep], off[keep]
    if lanes.size == 0:
        return
    b = m.batch
    m.trace.append({
        "kind": "write" if write else "read", "buffer": region.name, "space": region.space,
        "thread": b.tid[lanes], "threadgroup": b.tg_global[lanes],
        "element": off // region.unit, "epoch": m.tg_epoch[b.tg_local[lanes]].copy(),
        "line": coord.line if coord else None, "section": coord.section if coord else None,
        "type": str(t), "value": None, "sources": None, "outside": True})


def _init_hint(region: Region) -> str:
    if region.init_hint:
        return region.init_hint
    if region.space == "threadgroup":
        return ("threadgroup memory starts as garbage in every threadgroup: write it (and "
                "call threadgroup_barrier) before reading it")
    if region.space == "device":
        return "outputs start uninitialised; pass init_value=... or write before reading"
    return "initialise the variable before reading it"


READ_LOG_LIMIT = 1 << 22  # granules of pending reads kept before they are applied


def _can_conflict(m: Machine, region: Region, gen: int) -> bool:
    """Whether a recorded access of generation `gen` (`Region.w_gen` and friends) may be
    unordered with an access now: any recorded one for device memory (threadgroups are never
    ordered), one of the current generation for threadgroup memory."""
    return gen >= 0 and (region.space != "threadgroup" or gen == m.tg_generation)


def _apply_read_log(m: Machine, region: Region) -> None:
    """Record the pending reads of the current generation in the reader shadow, in order."""
    log, region.read_log, region.read_log_size = region.read_log, [], 0
    if region.read_log_gen != m.tg_generation:
        return  # a barrier reached by every threadgroup ordered them: nothing to record
    # Reads recorded before this generation are ordered before these: the first of them need
    # not look at the shadow (see `_record_reads`).
    alone = region.r_gen != m.tg_generation
    for flat, tid, stamp, site in log:
        _record_reads(region, flat, tid, stamp, site, alone)
        alone = False
    region.r_gen = m.tg_generation


def _reads_may_conflict(region: Region, flat: np.ndarray, at: np.ndarray | slice,
                        tid: np.ndarray) -> bool:
    """Whether a write of the distinct granules `flat` (`at` for scatters) by the threads
    `tid` may conflict with a read in the read log: whether another thread read one of them.
    Where none did, the reader shadow would show no conflict either, and the log is kept
    unapplied (the write is checked against it again by the next write, until a barrier)."""
    mark = region.write_mark
    mark[at] = tid
    try:
        for read, reader, _, _ in region.read_log:
            writer = mark[read]
            if ((writer != -1) & (writer != reader)).any():
                return True
        return False
    finally:
        mark[at] = -1


def _record_reads(region: Region, flat: np.ndarray, tid, stamp, site: int,
                  alone: bool = False) -> None:
    """The reader shadow after a read: the reading thread, or -2 where another thread read the
    granule in the same threadgroup epoch (several readers). `alone`: no read recorded in the
    shadow can be in the same epoch (a barrier every threadgroup reached came after them)."""
    if alone:
        readers = np.broadcast_to(tid, flat.shape)
    else:
        r_tid = region.r_tid[flat]
        shared = (((region.r_stamp[flat] >> 16) == (stamp >> 16)) & (r_tid != -1)
                  & (r_tid != tid))
        readers = np.where(shared, -2, tid)
    region.r_tid[flat] = readers
    region.r_stamp[flat] = stamp
    region.r_site[flat] = site
    repeated = region.r_tid[flat] != readers  # two lanes of this read hit one granule
    if repeated.any():
        region.r_tid[flat[repeated]] = -2


def _run_of(flat: np.ndarray) -> np.ndarray | slice:
    """Granules that are one run of consecutive ones, in order, as a slice; others as they
    are."""
    if flat.ndim != 1 or not flat.size or int(flat[-1]) - int(flat[0]) != flat.size - 1:
        return flat
    return slice(int(flat[0]), int(flat[-1]) + 1) if _increasing(flat) else flat


def _increasing(flat: np.ndarray) -> bool:
    """Whether the granules of an access are distinct because they strictly increase."""
    return flat.ndim == 1 and bool(np.logical_and.reduce(flat[1:] > flat[:-1], None))


def _race_check(m: Machine, region: Region, idx: np.ndarray | slice, flat: np.ndarray,
                write: bool, coord: Coord, identical=None,
                at: np.ndarray | slice | None = None) -> None:
    """Two accesses to one granule race unless they come from the same thread, or from one
    threadgroup with a barrier ordering this memory between them; one must be a write.

    Per granule the shadow keeps the last writer and the last reader (-2: several readers in
    one epoch), each with the (threadgroup, epoch) stamp of the access. Only the kinds of
    earlier access that can conflict (`_can_conflict`) are gathered.
    """
    stamp = m.stamps(idx, region.space == "device")
    tid = m.batch.tid if idx.__class__ is slice else m.lanes_of(m.batch.tid, idx)
    site = m.site(coord)
    if flat.ndim > 1:
        stamp, tid = stamp[:, None], tid[:, None]
    if not write:
        gen = m.tg_generation   # whether no write nor atomic can conflict (`_can_conflict`)
        if (region.w_gen != gen and region.a_gen != gen if region.space == "threadgroup"
                else region.w_gen < 0 and region.a_gen < 0):
            _note_read(m, region, flat, tid, stamp, site)   # the common read: nothing to see
            return
    at = flat if at is None else at   # `_run_of(flat)`, for a write's scatters
    distinct = write and (at.__class__ is slice or _increasing(flat))
    if write and region.read_log and (region.read_log_gen != m.tg_generation or not distinct
                                      or _reads_may_conflict(region, flat, at, tid)):
        _apply_read_log(m, region)
    # no conflict: one 0-d false (broadcast where a mask is needed), not an array per access
    with_writer = with_atomic = with_reader = conflict = _NO_CONFLICT
    if _can_conflict(m, region, region.w_gen):
        w_tid = region.w_tid[flat]
        with_writer = _unordered_with(region.w_stamp, flat, (w_tid >= 0) & (w_tid != tid),
                                      stamp)
    if _can_conflict(m, region, region.a_gen):
        a_tid = region.a_tid[flat]
        with_atomic = _unordered_with(region.a_stamp, flat, (a_tid >= 0) & (a_tid != tid),
                                      stamp)
    if write and _can_conflict(m, region, region.r_gen):
        r_tid = region.r_tid[flat]
        with_reader = _unordered_with(region.r_stamp, flat, (r_tid != -1) & (r_tid != tid),
                                      stamp)
    for mask in (with_writer, with_atomic, with_reader):
        if mask is not _NO_CONFLICT:
            conflict = mask if conflict is _NO_CONFLICT else conflict | mask
    # The earlier accesses a lane may conflict with: (mask, thread, stamp, site, what it did);
    # gathered only for a race, and before this access overwrites the shadow.
    earlier = []
    if conflict is not _NO_CONFLICT and conflict.any():
        def every_lane(mask):
            return np.broadcast_to(mask, flat.shape)
        earlier = [
            (every_lane(with_writer), region.w_tid[flat], region.w_stamp[flat],
             region.w_site[flat], "wrote"),
            (every_lane(with_atomic), region.a_tid[flat], region.a_stamp[flat],
             region.a_site[flat], "loaded atomically"
             if not region.a_kind[flat][every_lane(with_atomic)].any() else "updated atomically")]
        if write:
            earlier.append((every_lane(with_reader), region.r_tid[flat], region.r_stamp[flat],
                            region.r_site[flat], "read"))
    if write:
        region.w_tid[at] = tid
        region.w_stamp[at] = stamp
        region.w_site[at] = site
        region.w_gen = m.tg_generation
        if region.atomic_loads is not None and flat.ndim == 1:   # after an atomic load
            lanes = _lane_indices(m, idx)
            _check_lost_update(m, region, lanes, flat, np.broadcast_to(tid, flat.shape),
                               np.broadcast_to(stamp, flat.shape), True, coord)
        if not distinct:
            same_store = region.w_tid[flat] != tid  # two lanes of this store hit one granule
            if same_store.any() and identical is not None:
                same_value = identical()
                same_value = same_value if flat.ndim == 1 else same_value[:, None]
                # benign only where every write of the statement to the element agrees
                differing = np.isin(flat, flat[same_store & ~same_value])
                benign = same_store & ~conflict & ~differing
                if benign.any():
                    same_store &= ~benign
                    _report_benign_race(m, region, idx, flat, benign, coord)
            if same_store.any():
                conflict = conflict | same_store
                earlier.append((same_store, region.w_tid[flat], region.w_stamp[flat],
                                np.full(flat.shape, -1), None))
    else:
        _note_read(m, region, flat, tid, stamp, site)
    if conflict is not _NO_CONFLICT and conflict.any():
        # Whether some conflicting access came from another threadgroup (for the hint).
        across = any(bool(np.any(mask & ((stamps >> 32) != (stamp >> 32))))
                     for mask, _, stamps, _, _ in earlier)
        detail, situation = _race_detail(m, region, np.broadcast_to(tid, flat.shape), flat,
                                         conflict, "writes" if write else "reads", earlier,
                                         coord)
        _report_race(m, region, idx, flat, conflict, "write" if write else "read", coord,
                     across, detail, situation)


_NO_CONFLICT = np.zeros((), bool)


def _note_read(m: Machine, region: Region, flat: np.ndarray, tid, stamp, site: int) -> None:
    """Record a read in the reader shadow; threadgroup memory logs it instead, to be applied
    only where a write or an atomic of its generation needs it (`_apply_read_log`)."""
    if region.space != "threadgroup":
        _record_reads(region, flat, tid, stamp, site)
        region.r_gen = m.tg_generation
        return
    if region.read_log_gen != m.tg_generation:
        region.read_log, region.read_log_size = [], 0
    region.read_log.append((flat, tid, stamp, site))
    region.read_log_gen = m.tg_generation
    region.read_log_size += flat.size
    if region.read_log_size > READ_LOG_LIMIT:
        _apply_read_log(m, region)


def _report_benign_race(m: Machine, region: Region, idx, flat: np.ndarray, benign: np.ndarray,
                        coord: Coord) -> None:
    """Several threads of one statement wrote the same value to one element: whichever
    write lands last, memory holds that value, so it is a warning (an error with strict)."""
    bad = benign if benign.ndim == 1 else benign.any(axis=1)
    offenders = _lane_indices(m, idx)[bad]
    elements = (np.ravel(flat[bad]) % region.granules) * region.granule // region.unit
    m.report("race", "warning", f"benign race on '{region.name}': identical values", coord,
             offenders, key=(region.name, "benign"),
             cells=cells_of(m, region, offenders, elements[:offenders.size]),
             detail=f"threads of one statement wrote the same value to element "
                    f"{int(elements[0])} of '{region.name}' with no order between them",
             hint="if one writer is meant, let one thread write it (e.g. `if (i == 0)`); if each "
                  "thread should write its own element, the index repeats across threads")


def _unordered_with(stamps: np.ndarray, flat: np.ndarray, candidates: np.ndarray,
                    stamp: np.ndarray) -> np.ndarray:
    """`candidates` (lanes where another thread's access is recorded) narrowed to those no
    barrier orders before this access; the stamps are gathered only when there are any, which
    the common case (each thread touching its own cells) never has."""
    if not candidates.any():
        return candidates
    return candidates & _unordered(stamps[flat], stamp)


def _race_detail(m: Machine, region: Region, tid: np.ndarray, flat: np.ndarray,
                 conflict: np.ndarray, verb: str, earlier: list[tuple],
                 coord: Coord | None = None) -> tuple[str, str]:
    """The first race of an access in words: which thread did what to which element, and the
    other thread's access it conflicts with, with its line; and the situation, which picks the
    hint: "writers" (two threads write one element: a barrier would not help), "next-iteration"
    (the other access comes later in the source, so from the iteration before), or ""."""
    at = tuple(np.argwhere(conflict)[0])
    element = int(flat[at]) % region.granules * region.granule // region.unit
    [me] = m.thread_positions(np.array([tid[at]]), 1)
    mask, other, _, site, did = next(e for e in earlier if e[0][at])
    other = int(other[at])
    who = ("other threads" if other < 0
           else "thread ({}, {}, {})".format(*m.thread_positions(np.array([other]), 1)[0]))
    access = f"thread {me} {verb} element {element} of '{region.name}'"
    writers = "writers" if verb == "writes" and did in (None, "wrote") else ""
    if did is None:
        return f"{access}, and so does {who} in the same statement", writers
    where = m.site_coord(int(site[at]))
    line = "" if where is None or where.line is None else (
        f" at line {where.line}" + (" of the header" if where.section == "header" else ""))
    if (coord is not None and where is not None and where.line is not None
            and coord.line is not None and where.section == coord.section
            and where.line > coord.line):
        loop = _loop_line(m, coord, coord.line)
        return (f"{access} in the next iteration of the loop{loop}, which {who} {did}{line} "
                f"in the iteration before, with no barrier between them", "next-iteration")
    return f"{access}, which {who} {did}{line}, with no barrier between them", writers


_LOOP_START = re.compile(r"\s*(}\s*)?(for|while)\s*\(|\s*do\b")


def _loop_line(m: Machine, coord: Coord, before: int) -> str:
    """" at line N" for the nearest line above `before` that starts a loop, or "" (only used
    to name the loop in a message)."""
    for line in range(before, 0, -1):
        text = m.source_map.line_text(Coord(coord.section, line, 1))
        if _LOOP_START.match(text):
            return f" at line {line}"
    return ""


def _report_race(m: Machine, region: Region, idx, flat: np.ndarray, conflict: np.ndarray,
                 what: str, coord: Coord, across_groups: bool = True,
                 detail: str = "", situation: str = "") -> None:
    if conflict.any():
        bad = conflict if conflict.ndim == 1 else conflict.any(axis=1)
        element = int(np.ravel(flat[bad])[0]) % region.granules * region.granule // region.unit
        one_writer = ("several threads write this element, and a barrier would not change "
                      "that: let one thread write it (e.g. `if (thread_position_in_threadgroup"
                      ".x == 0)`), give each thread its own element, or use atomics")
        if what == "atomic order":
            hint = ("the value left depends on whether the store comes before or after the "
                    "other threads' updates: order them with a barrier")
        elif situation == "writers" and not (across_groups and region.space == "device"):
            hint = one_writer
        elif situation == "next-iteration":
            hint = ("the iteration before was still reading it: add a threadgroup_barrier at "
                    "the end of the loop body, after the last read, before the next iteration "
                    "writes")
        elif what == "atomic":
            hint = ("every access to a location that is updated atomically must be atomic "
                    "(atomic_load_explicit / atomic_store_explicit), or be ordered by a barrier")
        elif region.space == "threadgroup":
            hint = ("separate the write and the read with "
                    "threadgroup_barrier(mem_flags::mem_threadgroup)")
        elif across_groups:
            hint = ("threads of different threadgroups are never ordered; give each output "
                    "element one writer, or use atomics")
        else:
            hint = ("give each output element one writer, use atomics, or order the accesses "
                    "of one threadgroup with threadgroup_barrier(mem_flags::mem_device)")
        offenders = _lane_indices(m, idx)[bad]
        elements = (np.ravel(flat[bad]) % region.granules) * region.granule // region.unit
        message = (f"race on '{region.name}': an atomic store and other threads' atomic updates "
                   f"in no fixed order" if what == "atomic order"
                   else f"data race on '{region.name}' ({region.space} memory)")
        m.report("race", "error", message, coord, offenders, key=region.name,
                 cells=cells_of(m, region, offenders, elements[:offenders.size]),
                 detail=detail or f"{'an' if what.startswith('atomic') else 'a'} {what} access of "
                 f"element {element} conflicts with another thread's access with no barrier "
                 "between them", hint=hint)


def _unordered(stamp_before: np.ndarray, stamp_now: np.ndarray) -> np.ndarray:
    """Accesses with these stamps (`Machine.stamps`) are not ordered by any barrier: they come
    from different threadgroups, or from one threadgroup in one barrier epoch, unless both are
    in one SIMD-group with a `simdgroup_barrier` between them."""
    other_group = (stamp_before >> 32) != (stamp_now >> 32)
    same_epoch = ((stamp_before >> 16) & 0xFFFF) == ((stamp_now >> 16) & 0xFFFF)
    same_simdgroup = ((stamp_before >> 11) & 0x1F) == ((stamp_now >> 11) & 0x1F)
    simd_ordered = same_simdgroup & ((stamp_before & 0x7FF) != (stamp_now & 0x7FF))
    return other_group | (same_epoch & ~simd_ordered)


def atomic_update(m: Machine, region: Region, idx: np.ndarray | slice, n: int, off: np.ndarray,
                  t: ScalarType, update, coord: Coord, *, reads: bool = True,
                  writes: bool = True, fast: tuple | None = None) -> np.ndarray:
    """Apply an atomic operation for every active lane; returns each lane's old value.

    `update(old, lanes)` gives `(new, store_mask)` for the lanes at positions `lanes` (of the
    active set), seeing the values left by the lanes before them: lanes touching the same
    location are applied one after another in lane order, which is one legal order of the
    hardware's. `fast = (ufunc, operands)` is a fast path for heavily contended locations of
    the fetch-and-op functions: the same order, through `ufunc.accumulate`.
    """
    if region.__class__ is not Region:
        return region.atomic_update(m, idx, n, off, t, update, coord, reads=reads,
                                    writes=writes, fast=fast)
    off = _per_lane(np.asarray(off, np.int64), (n,))
    ok = _check(m, region, idx, off, t, writes and not reads, coord)
    lanes = _lane_indices(m, idx)
    positions = np.arange(n)
    old = np.zeros(n, t.dtype)
    if ok is not None:
        lanes, positions, off = lanes[ok], positions[ok], off[ok]
        idx = lanes
    if lanes.size == 0:
        return old
    bank = region.bank(m, lanes)
    if writes and not region.data.flags.writeable:
        _write_to_input(m, region, lanes, coord)
    view = region.view(t.dtype)
    columns = view.shape[1]
    flat_elem = _divide(off, t.size)   # one key per location
    if _banks_per_lane(bank):
        flat_elem += np.asarray(bank, np.int64) * columns
    if reads and region.track_init:
        _check_atomic_init(m, region, lanes, bank, off, t, coord)
    order = _stable_order(flat_elem)
    sorted_cells = flat_elem[order]
    starts = np.flatnonzero(np.r_[True, sorted_cells[1:] != sorted_cells[:-1]])
    sizes = np.diff(np.r_[starts, sorted_cells.size])
    rank = np.empty(order.size, np.int64)
    rank[order] = np.arange(order.size) - np.repeat(starts, sizes)
    heavy = np.zeros(order.size, bool)
    if fast is not None and sizes.max() > 64:
        ufunc, operands = fast
        for start, size in zip(starts[sizes > 64], sizes[sizes > 64]):
            members = order[start:start + size]
            heavy[members] = True
            cell = divmod(int(sorted_cells[start]), columns)
            chain = np.concatenate([[view[cell]], np.broadcast_to(
                operands, (n,))[positions[members]]]).astype(t.dtype)
            acc = ufunc.accumulate(chain, dtype=t.dtype)
            old[positions[members]] = acc[:-1]
            view[cell] = acc[-1]
    for r in range(int(rank[~heavy].max()) + 1 if (~heavy).any() else 0):
        sel = (rank == r) & ~heavy
        rows, cols = np.divmod(flat_elem[sel], columns)
        pos = positions[sel]
        current = view[rows, cols]
        old[pos] = current
        new, store_mask = update(current, pos)
        if writes:
            view[rows[store_mask], cols[store_mask]] = np.asarray(new, t.dtype)[store_mask]
    _after_atomic(m, region, lanes, idx, bank, off, t, reads, writes, coord)
    return old


def _stable_order(keys: np.ndarray) -> np.ndarray:
    """`np.argsort(keys, kind="stable")`; keys spanning fewer than 65,536 values (a
    histogram's bins) are sorted as 16-bit offsets from the smallest, which numpy's stable sort
    orders by radix sort, several times faster than its merge sort of 64-bit keys."""
    if keys.size:
        low = int(keys.min())
        if int(keys.max()) - low < 1 << 16:
            keys = (keys - low).astype(np.uint16)
    return np.argsort(keys, kind="stable")


def _check_atomic_init(m: Machine, region: Region, lanes, bank, off, t, coord) -> None:
    if region.fully_written():
        return
    flat = _atomic_granules(region, bank, off, t)
    seen = region.init[flat]
    if seen.ndim > 1:
        seen = seen.all(axis=1)
    if not seen.all():
        where = "threadgroup memory" if region.space == "threadgroup" else "memory"
        m.report("uninitialized-read", "error",
                 f"atomic operation on uninitialised {where}: '{region.name}'", coord,
                 lanes[~seen], key=region.name, hint=_init_hint(region))


def _atomic_granules(region: Region, bank, off: np.ndarray, t: ScalarType) -> np.ndarray:
    """The flat shadow granules of an atomic access: one per lane, or (lanes, k) where the
    atomic spans k of the region's granules (MLX's `mlx_atomic<half>` updates a `uint` word of
    two `half` elements)."""
    g = _granules(region, off, t)
    if not _banks_per_lane(bank):
        return g
    bank = np.asarray(bank)
    return (bank[:, None] if g.ndim > 1 else bank) * region.granules + g


def _after_atomic(m: Machine, region: Region, lanes: np.ndarray, idx: np.ndarray | slice,
                  bank, off: np.ndarray, t: ScalarType, reads: bool, writes: bool,
                  coord: Coord) -> None:
    """Counts, trace, initialisation and races of an atomic access by the batch lanes
    `lanes`, which `idx` also names (a slice where they are every lane: no gathers)."""
    if region.counted is not None:
        if reads:
            m.count(_COUNT_NAMES[region.counted, False], idx)
        if writes:
            m.count(_COUNT_NAMES[region.counted, True], idx)
        m.count("atomics", idx)
    size = lanes.size * t.size
    region.bytes_read += size if reads else 0
    region.bytes_written += size if writes else 0
    if m.trace is not None:
        m.check_defined(lanes, m.sources(lanes), coord,
                        f"is used by an atomic operation on '{region.name}'")
    if m.trace is not None and region.space != "thread":
        b = m.batch
        m.trace.append({
            "kind": "atomic", "buffer": region.name, "space": region.space,
            "thread": b.tid[lanes], "threadgroup": b.tg_global[lanes],
            "element": off // region.unit, "epoch": m.tg_epoch[b.tg_local[lanes]].copy(),
            "line": coord.line if coord else None, "section": coord.section if coord else None,
            "type": str(t), "value": _cells(region, bank, off, t),
            "sources": _defined_only(m.sources(lanes)) if writes else None})
    if not (region.track_init or region.track_races):
        return
    flat = _atomic_granules(region, bank, off, t)
    if writes and region.track_init:
        region.note_init(flat)
    if writes and region.written is not None:
        region.written[flat] = True
    if region.track_races:
        stamp = m.stamps(idx, region.space == "device")
        tid = m.lanes_of(m.batch.tid, idx)
        # the granule that stands for the whole atomic word in the lost-update shadow
        word = flat if flat.ndim == 1 else flat[:, 0]
        if flat.ndim > 1:
            tid, stamp = np.broadcast_to(tid[:, None], flat.shape), stamp[:, None]
        if region.read_log:
            _apply_read_log(m, region)
        w_tid, r_tid = region.w_tid[flat], region.r_tid[flat]
        with_writer = with_reader = np.zeros(flat.shape, bool)
        if _can_conflict(m, region, region.w_gen):
            with_writer = _unordered_with(region.w_stamp, flat, (w_tid >= 0) & (w_tid != tid),
                                          stamp)
        if _can_conflict(m, region, region.r_gen):
            with_reader = _unordered_with(region.r_stamp, flat,
                                          (r_tid != -1) & (r_tid != tid), stamp)
        conflict = with_writer | with_reader
        # An atomic store and another thread's read-modify-write of one location, unordered:
        # no data race in C++'s sense, but the result depends on which comes first.
        kind = RMW if reads and writes else STORE if writes else 0
        a_tid, a_kind, a_site = region.a_tid[flat], region.a_kind[flat], region.a_site[flat]
        racing = ((kind == STORE) & (a_kind == RMW)) | ((kind == RMW) & (a_kind == STORE))
        with_atomic = _unordered_with(region.a_stamp, flat,
                                      racing & (a_tid >= 0) & (a_tid != tid), stamp)
        conflict |= with_atomic
        if kind != RMW:
            first = (slice(None),) if flat.ndim == 1 else (slice(None), 0)
            _check_lost_update(m, region, lanes, np.broadcast_to(word, lanes.shape),
                               np.broadcast_to(tid[first], lanes.shape),
                               np.broadcast_to(stamp[first], lanes.shape), kind == STORE,
                               coord)
        region.a_kind[flat] = kind
        region.a_tid[flat] = tid
        region.a_stamp[flat] = stamp
        region.a_site[flat] = m.site(coord)
        region.a_gen = m.tg_generation
        if conflict.any():
            earlier = [(with_writer, w_tid, None, region.w_site[flat], "wrote"),
                       (with_reader, r_tid, None, region.r_site[flat], "read"),
                       (with_atomic, a_tid, None, a_site,
                        "updated atomically" if kind == STORE else "stored atomically")]
            detail, _ = _race_detail(m, region, tid, flat, conflict,
                                     "stores atomically" if kind == STORE
                                     else "updates atomically", earlier)
            what = "atomic order" if with_atomic.any() and not (with_writer | with_reader).any() \
                else "atomic"
            _report_race(m, region, lanes, flat, conflict, what, coord, detail=detail)


@dataclass
class LoadShadow:
    """What lost updates are found with, per region: per thread the granule it last loaded
    atomically (-1: none pending), with that load's stamp and site; per granule the first
    thread that stored it after loading it (-1: none), with its load's stamp and site."""

    loaded: np.ndarray
    load_stamp: np.ndarray
    load_site: np.ndarray
    first: np.ndarray
    first_stamp: np.ndarray
    first_site: np.ndarray

    @classmethod
    def empty(cls, threads: int, granules: int) -> LoadShadow:
        return cls(np.full(threads, -1, np.int64), np.zeros(threads, np.int64),
                   np.zeros(threads, np.int32), np.full(granules, -1, np.int64),
                   np.zeros(granules, np.int64), np.zeros(granules, np.int32))


def _check_lost_update(m: Machine, region: Region, lanes: np.ndarray, flat: np.ndarray,
                       tid: np.ndarray, stamp: np.ndarray, store: bool, coord: Coord) -> None:
    """Record an atomic load, or check a store: a thread that loaded a location and then
    stores it, while another thread did the same with no order between them, loses an update
    (the later store overwrites what the other thread stored after its load). No data race
    for C++, but a read-modify-write done in two steps. O(lanes) per access."""
    shadow = region.atomic_loads
    if not store:
        if shadow is None:
            shadow = region.atomic_loads = LoadShadow.empty(m.total_threads,
                                                            region.shadow_size)
        shadow.loaded[tid] = flat
        shadow.load_stamp[tid] = stamp
        shadow.load_site[tid] = m.site(coord)
        return
    if shadow is None:
        return
    own = shadow.loaded[tid] == flat
    if not own.any():
        return
    at, threads, stamps = flat[own], tid[own], stamp[own]
    loads = shadow.load_stamp[threads]
    shadow.loaded[threads] = -1   # this load's store is done
    # an earlier statement's load-and-store of the location, unordered with this store
    before = shadow.first[at]
    lost = (before >= 0) & (before != threads) & _unordered(shadow.first_stamp[at], stamps)
    if region.space == "threadgroup":   # its granules are reused by later threadgroups
        lost &= (shadow.first_stamp[at] >> 32) == (stamps >> 32)
    fresh = before < 0
    shadow.first[at[fresh]] = threads[fresh]
    shadow.first_stamp[at[fresh]] = loads[fresh]
    shadow.first_site[at[fresh]] = shadow.load_site[threads[fresh]]
    # several threads of this statement storing one location they all loaded
    cells, count = np.unique(at, return_counts=True)
    together = np.isin(at, cells[count > 1])
    if not (lost | together).any():
        return
    i = int(np.flatnonzero(lost | together)[0])
    other = int(before[i]) if lost[i] else int(
        threads[np.flatnonzero((at == at[i]) & (threads != threads[i]))[0]])
    lost |= together
    _report_lost_update(m, region, lanes[own][lost], at[lost], int(threads[i]), other,
                        int(shadow.load_site[threads[i]]), coord)


def _report_lost_update(m: Machine, region: Region, lanes: np.ndarray, flat: np.ndarray,
                        thread: int, other: int, load_site: int, coord: Coord) -> None:
    """`lanes` lost updates of the granules `flat`; the first is `thread`'s, which `other`
    also loaded and stores."""
    element = int(flat[0]) % region.granules * region.granule // region.unit
    first, second = m.thread_positions(np.array([thread, other]), 2) if thread < other else \
        m.thread_positions(np.array([other, thread]), 2)[::-1]
    load = m.site_coord(load_site)
    at_load = f" at line {load.line}" if load is not None else ""
    m.report("lost-update", "error",
             f"lost update on '{region.name}': several threads load an element atomically and "
             f"store it back", coord, lanes, key=region.name,
             cells=cells_of(m, region, lanes, np.ravel(flat) % region.granules
                            * region.granule // region.unit),
             detail=f"threads {first} and {second} both load element {element} of "
                    f"'{region.name}'{at_load} and store it here, in no fixed order: one can "
                    f"load before the other's store, and its store then overwrites that update",
             hint="a load followed by a store is two steps, and another thread's store can land "
                  "between them, even when each step is atomic. An update that must not be "
                  "lost needs one indivisible read-modify-write: the atomic_fetch_*_explicit "
                  "functions")
