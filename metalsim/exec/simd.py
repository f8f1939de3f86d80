"""SIMD-group and quad-group functions (msl-semantics §5), exact over the lanes that are active.

A call sees only the lanes executing it. Lanes of the same group that took another branch, that
returned, or that do not exist (the last SIMD-group of a threadgroup whose size is not a multiple
of 32 is short) are inactive. Each call lays its active lanes out as a table, one row per group
with an active lane and one column per lane index (`Layout`): reductions and scans combine along
a row, shuffles read another column of the same row. Quad-groups are the aligned groups of 4
lanes inside a SIMD-group and work the same way with width 4.

Choices where MSL leaves the result open (msl-semantics §5.2, §5.3, §10 items 5 and 6):
- Sums and products combine the active lanes in lane order, `((v0 + v1) + v2) + ...`, rounding to
  the element type after every step (a `half` sum accumulates in half); integers wrap. The
  hardware's order is unconfirmed, so a float result may differ from a GPU's in the last bits.
- `simd_max`/`simd_min` on floats ignore NaNs, as `fmax`/`fmin` do, and warn that they met one.
- A reduction or scan where lanes of the group that have not returned are inactive (a call
  inside `if (lane == 0)`) is legal and combines the active lanes only, but is rarely meant: an
  "inactive-lanes" warning.
- Reading an inactive lane is undefined: an "inactive-lane-read" error, and the reading lane gets
  its own value. Reading a missing lane of a short group is an error too, except past the edge
  of the shuffles with edge semantics (`shuffle_down`, the and-fill shuffles), where it is unclear
  whether the group ends at 32 lanes or at its real size: the lane gets its own value with an
  "inactive-lane-read" warning.
- The other unconfirmed cases give the lane its own value with an "unconfirmed-behavior" warning:
  a delta or xor mask of the width or more, an and-fill delta of at least the modulo, and a
  rotation in a short group wherever wrapping at the width and at the real size differ.
- Lane indices of the width or more ("invalid-lane"), moduli other than 2, 4, 8, 16, 32
  ("invalid-argument") and lanes, deltas, masks or moduli that differ between the active lanes
  of a group ("non-uniform-argument") are errors; the lane gets its own value where it cannot
  read, and non-uniform arguments are applied lane by lane.
- Ballots set bit i for active lane i with a true predicate. `simd_ballot` returns a
  `simd_vote`, whose upper 32 bits, undefined in the spec, are 0, as Metal.jl observed on
  hardware; `quad_ballot` a `quad_vote`. A vote's `all()` and `any()` look at the bits of every
  thread of the lane's group, active or not (MSL §6.9.2.1): `simd_ballot(c).all()` is false where
  a lane of the group is inactive, unlike `simd_all(c)`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from metalsim.diagnostics import Coord
from metalsim.exec import arith
from metalsim.exec.compiled import E
from metalsim.exec.machine import SIMD_WIDTH, Lanes, Machine, merge_flow
from metalsim.exec.values import Frame
from metalsim.lang import ast
from metalsim.lang import types as ty
from metalsim.lang.types import (
    BOOL,
    LONG,
    QUAD_VOTE,
    SIMD_VOTE,
    ULONG,
    USHORT,
    ScalarType,
    Type,
    VectorType,
)


@dataclass(frozen=True)
class Group:
    """SIMD-groups or quad-groups: their width and the attributes that place a lane in one."""

    prefix: str
    noun: str
    width: int
    lane_attribute: str
    index_attribute: str
    moduli: tuple[int, ...]   # the valid `modulo` arguments of the and-fill shuffles
    vote: ScalarType          # what a ballot's `vote_t` is


SIMD = Group("simd", "SIMD-group", SIMD_WIDTH, "thread_index_in_simdgroup",
             "simdgroup_index_in_threadgroup", (2, 4, 8, 16, 32), SIMD_VOTE)
QUAD = Group("quad", "quad-group", 4, "thread_index_in_quadgroup",
             "quadgroup_index_in_threadgroup", (2, 4), QUAD_VOTE)


class Layout:
    """The active lanes of one call by group: a row per group with an active lane, a column per
    lane index. `pos[row, lane]` is the lane's position among the active lanes, -1 if inactive.

    Active lanes are sorted, and each group's lanes are contiguous and in lane order in the batch,
    so a new row starts wherever the batch index of a lane's lane 0 changes.
    """

    def __init__(self, m: Machine, lanes: Lanes, group: Group) -> None:
        b = m.batch
        ids = lanes.indices()
        self.rank = b.attributes[group.lane_attribute][lanes.idx].astype(np.intp)
        lane0 = ids - self.rank
        starts = np.ones(ids.size, bool)
        starts[1:] = lane0[1:] != lane0[:-1]
        self.first = np.flatnonzero(starts)       # each row's lowest active lane
        self.row = np.cumsum(starts) - 1
        self.pos = np.full((self.first.size, group.width), -1, np.intp)
        self.pos[self.row, self.rank] = np.arange(ids.size)
        lead = ids[self.first]
        index = b.attributes[group.index_attribute][lead].astype(np.int64)
        self.size = np.minimum(b.tg_sizes[b.tg_local[lead]] - group.width * index, group.width)

    def table(self, values: np.ndarray, fill) -> np.ndarray:
        """`values` (one per active lane) in their cells of the table; `fill` elsewhere."""
        out = np.full(self.pos.shape + values.shape[1:], fill, values.dtype)
        out[self.row, self.rank] = values
        return out

    def varies(self, x: np.ndarray) -> np.ndarray:
        """Per active lane: whether the scalar `x` differs between the active lanes of its group."""
        lo = np.minimum.reduceat(x, self.first)
        hi = np.maximum.reduceat(x, self.first)
        return (lo != hi)[self.row]


@dataclass
class Call:
    """One execution of a group function: its active lanes, arguments' types, and reporting."""

    f: Frame
    lanes: Lanes
    layout: Layout
    name: str
    group: Group
    type: Type | None            # the data argument's type (the result type for most)
    coord: Coord
    flows: list[dict] | None     # trace mode: per argument, lane -> cells that flowed into it

    def report(self, kind: str, severity: str, message: str, mask: np.ndarray, hint: str = "",
               detail: str = "") -> None:
        self.f.m.report(kind, severity, message, self.coord, self.lanes.indices()[mask],
                        hint=hint, detail=detail)

    def lane_detail(self, mask: np.ndarray, source: np.ndarray) -> str:
        i = int(np.flatnonzero(mask)[0])
        return f"e.g. lane {int(self.layout.rank[i])} of its {self.group.noun} read lane " \
               f"{int(source[i])}"

    def flow_gather(self, arg: int, take: np.ndarray, mask: np.ndarray | None = None) -> None:
        """Trace mode: the result of lane i (where `mask`, default all) came from argument
        `arg` of lane `take[i]` (positions among the active lanes)."""
        if self.flows is None:
            return
        ids, flow, out = self.lanes.indices(), self.flows[arg], self.f.m.flow
        readers = np.arange(ids.size) if mask is None else np.flatnonzero(mask)
        if self.f.m.lane_traced is not None:
            readers = readers[self.f.m.lane_traced[ids[readers]]]
        for reader, source in zip(ids[readers].tolist(), ids[take[readers]].tolist()):
            cells = flow.get(source)
            if cells:
                merge_flow(out, reader, cells)

    def flow_combine(self, arg: int, scope: str) -> None:
        """Trace mode: each result combines argument `arg` of the active lanes of the group:
        all of them (`scope` "all"), those up to the lane ("inclusive") or before it."""
        if self.flows is None:
            return
        ids, flow, out = self.lanes.indices(), self.flows[arg], self.f.m.flow
        rows = self.layout.row
        if self.f.m.lane_traced is not None:  # groups lie within threadgroups
            keep = self.f.m.lane_traced[ids]
            ids, rows = ids[keep], rows[keep]
        ids, rows = ids.tolist(), rows.tolist()
        gathered: dict[int, set] = {}
        for lane, row in zip(ids, rows):
            running = gathered.setdefault(row, set())
            if scope == "exclusive" and running:
                merge_flow(out, lane, running)
            running.update(flow.get(lane, ()))
            if scope == "inclusive" and running:
                merge_flow(out, lane, running)
        if scope == "all":
            for lane, row in zip(ids, rows):
                if gathered[row]:
                    merge_flow(out, lane, gathered[row])


Run = Callable[[Call, list[np.ndarray]], np.ndarray]


# --- argument types --------------------------------------------------------------------------

# MLX's utils.h adds scalar bool, int64_t and uint64_t overloads of these (through uint/uint2).
MLX_WIDE_SHUFFLES = frozenset({"simd_shuffle", "simd_shuffle_up", "simd_shuffle_down",
                               "simd_shuffle_and_fill_up"})


def _data_type_problem(t: Type, group: Group, name: str, bitwise: bool,
                       nargs: int) -> str | None:
    """Why `t` cannot be the data argument of `name`, or None if it can (msl-semantics §5.1)."""
    if not isinstance(t, ScalarType | VectorType):
        return "it takes an integer or floating-point scalar or vector"
    elem = ty.scalar_of(t)
    # MLX's overloads are scalar and have no `modulo` parameter (at most 3 arguments).
    if group is SIMD and name in MLX_WIDE_SHUFFLES and nargs <= 3 and t in (BOOL, LONG, ULONG):
        return None
    if elem == BOOL:
        return "bool is not among its types; convert to int or uint first"
    if group is SIMD and elem in (LONG, ULONG):
        return "64-bit integers are not among the SIMD-group function types; split the value " \
               "into two uints (as_type<uint2>)"
    if bitwise and elem.kind != "int":
        return "the bitwise reductions take integers only; reinterpret with as_type<uint>()"
    return None


def takes_exactly(name: str, types: list[Type]) -> bool:
    """Whether Metal's own SIMD- or quad-group function `name` takes these argument types as
    they are: MLX's bf16_math.h adds `bfloat` overloads of them in `metal`, which a call with
    float data must not choose (C++ overload resolution prefers Metal's exact match)."""
    group = SIMD if name.startswith("simd_") else QUAD if name.startswith("quad_") else None
    if group is None or not types or ty.scalar_of(types[0]) == ty.BFLOAT:
        return False
    bitwise = name.endswith(("_and", "_or", "_xor")) and "shuffle" not in name
    return _data_type_problem(types[0], group, name, bitwise, len(types)) is None


def _operation(op: str, t: ScalarType) -> tuple[Callable, np.ndarray]:
    """How `op` combines two values of element type `t`, and its identity: combining the
    identity with any x gives x bit for bit (so -0.0 for float sums, NaN for fmax)."""
    dtype = t.dtype
    if op in ("sum", "product"):
        symbol = "+" if op == "sum" else "*"
        identity = (-0.0 if t.kind == "float" else 0) if op == "sum" else 1
        return (lambda x, y: arith.binary(symbol, x, y, t)), np.asarray(identity, dtype)
    if op in ("max", "min"):
        if t.kind == "float":
            fn = np.fmax if op == "max" else np.fmin
            return fn, np.asarray(np.nan, dtype)
        info = np.iinfo(dtype)
        fn = np.maximum if op == "max" else np.minimum
        return fn, np.asarray(info.min if op == "max" else info.max, dtype)
    fn = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
    zero = np.zeros((), dtype)
    return fn, np.invert(zero) if op == "and" else zero


# --- reductions, scans, votes ----------------------------------------------------------------

def _reduction(op: str) -> Run:
    def run(call: Call, args: list[np.ndarray]) -> np.ndarray:
        (v,) = args
        elem = ty.scalar_of(call.type)
        combine, identity = _operation(op, elem)
        table = call.layout.table(v, identity)
        acc = table[:, 0]
        with arith.quiet_numpy():
            for r in range(1, call.group.width):
                acc = combine(acc, table[:, r])
        if op in ("max", "min") and elem.kind == "float":
            _warn_nan(call, v)
        _warn_left_out(call)
        call.flow_combine(0, "all")
        return acc[call.layout.row]
    return run


def _warn_left_out(call: Call) -> None:
    """A reduction or scan combines the active lanes only. Lanes of the group that exist and
    have not returned, yet are inactive here (they took another branch, as in a call inside
    `if (lane == 0)`), are left out: legal, but rarely what was meant."""
    layout, m = call.layout, call.f.m
    ids = call.lanes.indices()
    lane0 = ids[layout.first] - layout.rank[layout.first]   # batch index of each row's lane 0
    lane = np.arange(call.group.width)
    exists = lane[None, :] < layout.size[:, None]
    batch = np.minimum(lane0[:, None] + lane[None, :], m.batch.size - 1)
    alive = m.alive[batch] if m.alive is not None else True
    left_out = (layout.pos < 0) & exists & alive
    rows = left_out.any(axis=1)
    if not rows.any():
        return
    row = int(np.flatnonzero(rows)[0])
    active = int((layout.pos[row] >= 0).sum())
    call.report("inactive-lanes", "warning",
                f"{call.name} combines only the lanes that execute it: {call.group.noun} lanes "
                f"that took another branch are left out", rows[layout.row],
                detail=f"e.g. {active} of the {int(layout.size[row])} lanes of a "
                       f"{call.group.noun} executed it; lane "
                       f"{int(np.flatnonzero(left_out[row])[0])} did not",
                hint=f"call {call.name} where every lane of the {call.group.noun} is active "
                     f"(before the `if`), then branch on its result")


def _warn_nan(call: Call, v: np.ndarray) -> None:
    nan = np.isnan(v.astype(np.float32))
    if nan.ndim > 1:
        nan = nan.any(axis=1)
    if nan.any():
        rows = np.zeros(call.layout.first.size, bool)
        rows[call.layout.row[nan]] = True
        call.report("unconfirmed-behavior", "warning",
                    f"{call.name} over a NaN: how the hardware treats NaNs here is unconfirmed; "
                    f"the simulator ignores them, like fmax/fmin", rows[call.layout.row],
                    hint=f"MLX tests {call.group.prefix}_any(x != x) first and returns NaN itself")


def _scan(op: str, inclusive: bool) -> Run:
    def run(call: Call, args: list[np.ndarray]) -> np.ndarray:
        (v,) = args
        combine, identity = _operation(op, ty.scalar_of(call.type))
        layout = call.layout
        table = layout.table(v, identity)
        out = np.empty_like(table)
        acc = np.broadcast_to(identity, table[:, 0].shape)
        with arith.quiet_numpy():
            for r in range(call.group.width):
                if not inclusive:
                    out[:, r] = acc
                acc = combine(acc, table[:, r])
                if inclusive:
                    out[:, r] = acc
        result = out[layout.row, layout.rank]
        if not inclusive:
            # The first active lane has nothing before it: T(0) or T(1), never the -0.0 identity.
            result[layout.first] = 0 if op == "sum" else 1
        _warn_left_out(call)
        call.flow_combine(0, "inclusive" if inclusive else "exclusive")
        return result
    return run


def _ballot(mask_only: bool) -> Run:
    def run(call: Call, args: list[np.ndarray]) -> np.ndarray:
        layout = call.layout
        votes = layout.pos >= 0 if mask_only else layout.table(args[0], False)
        weights = np.left_shift(np.uint64(1), np.arange(call.group.width, dtype=np.uint64))
        bits = np.where(votes, weights, np.uint64(0)).sum(axis=1, dtype=np.uint64)
        if not mask_only:
            call.flow_combine(0, "all")
        return bits.astype(call.group.vote.dtype)[layout.row]
    return run


def _vote(every: bool) -> Run:
    def run(call: Call, args: list[np.ndarray]) -> np.ndarray:
        table = call.layout.table(args[0], every)
        call.flow_combine(0, "all")
        return (table.all(axis=1) if every else table.any(axis=1))[call.layout.row]
    return run


def _is_first(call: Call, args: list[np.ndarray]) -> np.ndarray:
    layout = call.layout
    return np.arange(layout.row.size) == layout.first[layout.row]


# --- shuffles --------------------------------------------------------------------------------

def _read(call: Call, source: np.ndarray, moves: np.ndarray,
          edge: bool) -> tuple[np.ndarray, np.ndarray]:
    """Where each lane reads: (position among the active lanes, whether it read `source`).

    Lanes where `moves` read lane `source` of their group (0 <= source < width); the others, and
    those whose source cannot be read (reported), keep their own value. `edge`: the function has
    edge semantics, so a source missing from a short group is the unconfirmed case (a warning).
    """
    layout, group = call.layout, call.group
    s = np.where(moves, source, layout.rank)
    p = layout.pos[layout.row, s]
    missing = p < 0
    if missing.any():
        absent = missing & (s >= layout.size[layout.row])
        inactive = missing & ~absent
        short = f"the threadgroup size is not a multiple of {group.width}, so its last " \
                f"{group.noun} is short"
        if absent.any():
            if edge:
                call.report("inactive-lane-read", "warning",
                            f"{call.name} reads past the end of a short {group.noun}: whether "
                            f"the group ends at {group.width} lanes or at its real size is "
                            f"unconfirmed; the simulator returns the lane's own value",
                            absent, detail=call.lane_detail(absent, s),
                            hint=f"{short}: do not use the result on these lanes, or use a "
                                 f"multiple of {group.width}")
            else:
                call.report("inactive-lane-read", "error",
                            f"{call.name} reads a lane beyond the end of a short {group.noun}; "
                            f"the value it gets is undefined", absent,
                            detail=call.lane_detail(absent, s),
                            hint=f"{short}: make sure the source lane exists")
        if inactive.any():
            call.report("inactive-lane-read", "error",
                        f"{call.name} reads a lane that is not active here (it took another "
                        f"branch or returned); the value it gets is undefined", inactive,
                        detail=call.lane_detail(inactive, s),
                        hint=f"{group.noun} functions only read lanes executing the same call: "
                             f"call it where the lanes it reads are active, then branch")
    ok = ~missing & moves
    return np.where(missing, np.arange(p.size), p), ok


def _uniform(call: Call, x: np.ndarray, what: str) -> None:
    """Report lanes whose `what` differs within their group, where MSL requires it uniform."""
    varies = call.layout.varies(x)
    if varies.any():
        call.report("non-uniform-argument", "error",
                    f"{call.name}'s {what} must be the same on every active lane of the "
                    f"{call.group.noun}; it differs here, so the result is undefined", varies,
                    hint=f"use {call.group.prefix}_shuffle for a per-lane source lane")


def _delta(call: Call, x: np.ndarray, what: str, limit: np.ndarray | int,
           limit_text: str) -> tuple[np.ndarray, np.ndarray]:
    """A delta or mask argument as int64, and the lanes where it is usable (below `limit`).

    It must be uniform (reported if not); at or above `limit` the result is unconfirmed, so
    those lanes keep their own value with a warning.
    """
    x = x.astype(np.int64)
    _uniform(call, x, what)
    big = x >= limit
    if big.any():
        call.report("unconfirmed-behavior", "warning",
                    f"{call.name} with a {what} of {limit_text} or more: the hardware's result is "
                    f"unconfirmed; the simulator returns the lane's own value", big,
                    hint=f"keep the {what} below {limit_text}")
    return x, ~big


def _take(call: Call, v: np.ndarray, take: np.ndarray) -> np.ndarray:
    """The data argument as read at `take` (positions among the active lanes)."""
    call.flow_gather(0, take)
    return v[take]


def _shuffle(broadcast: bool) -> Run:
    """`shuffle(v, lane)` (per-lane source) and `broadcast(v, lane)` (uniform source)."""
    def run(call: Call, args: list[np.ndarray]) -> np.ndarray:
        v, lane = args[0], args[1].astype(np.int64)
        width = call.group.width
        if broadcast:
            _uniform(call, lane, "lane")
        invalid = lane >= width
        if invalid.any():
            call.report("invalid-lane", "error",
                        f"{call.name} reads a lane index that is not a lane of a "
                        f"{call.group.noun} (0 to {width - 1}); the value it gets is undefined",
                        invalid, detail=f"e.g. lane {int(lane[invalid][0])}",
                        hint=f"a {call.group.noun} has {width} lanes")
        take, _ = _read(call, lane, ~invalid, edge=False)
        return _take(call, v, take)
    return run


def _broadcast_first(call: Call, args: list[np.ndarray]) -> np.ndarray:
    layout = call.layout
    return _take(call, args[0], layout.first[layout.row])


def _shift(direction: str) -> Run:
    """`shuffle_up`/`_down` (edge lanes keep their value), `rotate_up`/`_down` (wrap), `xor`."""
    def run(call: Call, args: list[np.ndarray]) -> np.ndarray:
        width, layout = call.group.width, call.layout
        what = "mask" if direction == "xor" else "delta"
        d, usable = _delta(call, args[1], what, width, str(width))
        rank = layout.rank
        if direction == "up":
            source, moves = rank - d, usable & (rank >= d)
        elif direction == "down":
            source, moves = rank + d, usable & (rank + d < width)
        elif direction == "xor":
            source, moves = rank ^ d, usable
        else:
            step = rank - d if direction == "rotate_up" else rank + d
            source = step % width
            # A short group may wrap at its real size instead: where that reads another lane,
            # the result is unconfirmed.
            ambiguous = usable & (source != step % layout.size[layout.row])
            if ambiguous.any():
                call.report("unconfirmed-behavior", "warning",
                            f"{call.name} wraps around in a short {call.group.noun}: whether "
                            f"it wraps at {width} lanes or at the group's real size is "
                            f"unconfirmed; the simulator returns the lane's own value",
                            ambiguous,
                            hint=f"the threadgroup size is not a multiple of {width}; use a "
                                 f"multiple, or do not use the result on these lanes")
            moves = usable & ~ambiguous
        take, _ = _read(call, source, moves, edge=direction != "xor")
        return _take(call, args[0], take)
    return run


def _fill(up: bool) -> Run:
    """`shuffle_and_fill_up/down(v, fill, delta[, modulo])`: shift within segments of `modulo`
    lanes, taking the lanes shifted in from `fill` (msl-semantics §5.2)."""
    def run(call: Call, args: list[np.ndarray]) -> np.ndarray:
        group, layout = call.group, call.layout
        v, fill = args[0], args[1]
        modulo = np.full(v.shape[0], group.width, np.int64)
        valid = np.ones(v.shape[0], bool)
        if len(args) == 4:
            modulo = args[3].astype(np.int64)
            _uniform(call, modulo, "modulo")
            valid = np.isin(modulo, group.moduli)
            if not valid.all():
                call.report("invalid-argument", "error",
                            f"{call.name}'s modulo must be one of "
                            f"{', '.join(map(str, group.moduli))}; the result is undefined",
                            ~valid, detail=f"it is {int(modulo[~valid][0])}")
                modulo = np.where(valid, modulo, group.width)
        d, usable = _delta(call, args[2], "delta", modulo, "the modulo")
        rank = layout.rank
        i = rank % modulo
        base = rank - i
        if up:
            from_v = i >= d
            source = np.where(from_v, rank - d, base + modulo + i - d)
        else:
            from_v = i + d < modulo
            source = np.where(from_v, rank + d, base + i + d - modulo)
        take, moved = _read(call, source, valid & usable, edge=True)
        use_fill = moved & ~from_v
        call.flow_gather(0, take, ~use_fill)
        call.flow_gather(1, take, use_fill)
        mask = use_fill[:, None] if v.ndim > 1 else use_fill
        return np.where(mask, fill[take], v[take])
    return run


# --- compiling a call ------------------------------------------------------------------------

def _evaluate(f: Frame, lanes: Lanes, evs: list, tracing: bool) -> tuple[list, list | None]:
    """Evaluate the arguments; in trace mode also capture what flowed into each one (it flows
    into the result only as the function moves it, so it is kept apart from the statement's)."""
    if not tracing:
        return [ev(f, lanes) for ev in evs], None
    m = f.m
    kept, values, flows = m.flow, [], []
    for ev in evs:
        m.flow = {}
        values.append(ev(f, lanes))
        flows.append(m.flow)
    m.flow = kept
    return values, flows


def _function(group: Group, name: str, roles: str, run: Run, result: Type | None = None,
              optional: int = 0, bitwise: bool = False) -> Callable:
    """A builtin handler. `roles` has a letter per parameter: `v` the data (type T), `f` a
    fill value (also T), `u` a ushort lane/delta/mask/modulo, `b` a bool; the last `optional`
    may be left out. The result has type `result`, or T."""
    def handler(c, node: ast.Call, scope) -> E:
        n = len(node.args)
        if not len(roles) - optional <= n <= len(roles):
            count = f"{len(roles) - optional} or {len(roles)}" if optional else str(len(roles))
            c.error(f"{name} takes {count} argument{'s' if len(roles) != 1 else ''}, not {n}",
                    node)
        args = []
        for role, a in zip(roles, node.args):
            e = c.rvalue(c.expr(a, scope))
            if role == "u":
                e = c.convert(e, USHORT, a)
            elif role == "b":
                e = c.convert(e, BOOL, a)
            args.append(e)
        data = args[0].type if roles.startswith("v") else None
        if data is not None:
            problem = _data_type_problem(data, group, name, bitwise, n)
            if problem is not None:
                c.error(f"no matching function for call to '{name}' with '{data}'", node.args[0],
                        hint=problem)
        if "f" in roles and args[1].type != data:
            c.error(f"{name}'s data and filling values must have the same type, not '{data}' and "
                    f"'{args[1].type}'", node.args[1],
                    hint=f"convert the filling value: {data}(...)")
        evs = [a.ev for a in args]
        shapes = [ty.lane_shape(a.type) for a in args]
        tracing, coord = c.tracing, node.coord
        out_type = result or data

        def ev(f, lanes):
            values, flows = _evaluate(f, lanes, evs, tracing)
            values = [np.broadcast_to(v, (lanes.n,) + s) for v, s in zip(values, shapes)]
            call = Call(f, lanes, Layout(f.m, lanes, group), name, group, data, coord, flows)
            return run(call, values)
        return E(out_type, ev, coord)
    return handler


def _add_group(table: dict, g: Group) -> None:
    """Add the handlers of every function of group kind `g` to `table`."""
    def add(suffix: str, roles: str, run: Run, **kw) -> None:
        name = f"{g.prefix}_{suffix}"
        table[("call", name)] = _function(g, name, roles, run, **kw)
        # The Metal library's own intrinsic under it, which MLX's bf16_math.h calls to build
        # its bfloat overloads (`__metal_simd_sum(static_cast<float>(x))`).
        table[("call", f"__metal_{name}")] = table[("call", name)]

    for op in ("sum", "product", "max", "min"):
        add(op, "v", _reduction(op))
    for op in ("and", "or", "xor"):
        add(op, "v", _reduction(op), bitwise=True)
    for op in ("sum", "product"):
        add(f"prefix_inclusive_{op}", "v", _scan(op, True))
        add(f"prefix_exclusive_{op}", "v", _scan(op, False))
    add("shuffle", "vu", _shuffle(broadcast=False))
    add("broadcast", "vu", _shuffle(broadcast=True))
    add("broadcast_first", "v", _broadcast_first)
    for direction in ("up", "down", "xor", "rotate_up", "rotate_down"):
        add(f"shuffle_{direction}", "vu", _shift(direction))
    add("shuffle_and_fill_up", "vfuu", _fill(up=True), optional=1)
    add("shuffle_and_fill_down", "vfuu", _fill(up=False), optional=1)
    add("ballot", "b", _ballot(mask_only=False), result=g.vote)
    add("active_threads_mask", "", _ballot(mask_only=True), result=g.vote)
    add("all", "b", _vote(every=True), result=BOOL)
    add("any", "b", _vote(every=False), result=BOOL)
    add("is_first", "", _is_first, result=BOOL)


def _vote_member(every: bool):
    """`v.all()` / `v.any()` on a `simd_vote` or `quad_vote`: whether every (any) bit of a
    thread in the lane's group is set, the group's inactive threads included."""
    def handler(c, node: ast.MethodCall, scope) -> E:
        vote = c.expr(node.base, scope)
        group = {SIMD_VOTE: SIMD, QUAD_VOTE: QUAD}.get(vote.type)
        if group is None:
            c.error(f"member reference base type '{vote.type}' is not a structure", node)
        if node.args:
            c.error(f"too many arguments to function call, expected 0, have {len(node.args)}",
                    node.args[0])
        vev, width = vote.ev, group.width

        def ev(f, lanes):
            b = f.m.batch
            ids = lanes.indices()
            index = b.attributes[group.index_attribute][ids].astype(np.int64)
            size = np.minimum(b.tg_sizes[b.tg_local[ids]] - width * index, width)
            threads = (np.left_shift(np.uint64(1), size.astype(np.uint64)) - np.uint64(1))
            bits = np.broadcast_to(np.asarray(vev(f, lanes), np.uint64), ids.shape) & threads
            return bits == threads if every else bits != 0
        return E(BOOL, ev, node.coord)
    return handler


def _lane_index(c, node: ast.Call, scope) -> E:
    """`__metal_get_thread_index_in_simdgroup(ushort())`, the Metal compiler's builtin behind
    the `[[thread_index_in_simdgroup]]` attribute (MLX's NAX fragments call it): the thread's
    lane in its SIMD-group, of the type of its one argument."""
    if len(node.args) != 1:
        c.error(f"'{node.func.name}' takes one argument, a value of the integer type it "
                "returns", node)
    t = c.rvalue(c.expr(node.args[0], scope)).type
    if not (ty.is_integer(t) and isinstance(t, ScalarType)):
        c.error(f"'{node.func.name}' returns an integer type, not '{t}'", node.args[0])
    dtype = t.dtype

    def ev(f, lanes):
        return f.m.batch.attributes[SIMD.lane_attribute][lanes.idx].astype(dtype)
    return E(t, ev, node.coord)


SIMD_BUILTINS: dict = {("method", "all"): _vote_member(every=True),
                       ("method", "any"): _vote_member(every=False),
                       ("call", "__metal_get_thread_index_in_simdgroup"): _lane_index}
"""The `("call", name)` handlers of every SIMD-group and quad-group function, and the
`("method", name)` ones of their votes."""
_add_group(SIMD_BUILTINS, SIMD)
_add_group(SIMD_BUILTINS, QUAD)
