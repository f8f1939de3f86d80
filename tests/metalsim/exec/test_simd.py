"""SIMD-group and quad-group functions against numpy models of their definitions (msl-semantics §5).

Each model walks a group lane by lane over its active lanes, independently of the simulator's
table layout, and also says which diagnostics the launch must report: reads of inactive or missing
lanes, out-of-range or non-uniform arguments, and the unconfirmed edge cases.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import mlx.core as mx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import metalsim

W = 32
MODULI = {"simd": (2, 4, 8, 16, 32), "quad": (2, 4)}
WIDTH = {"simd": W, "quad": 4}
NP = {mx.float32: np.float32, mx.float16: np.float16, mx.int32: np.int32, mx.uint32: np.uint32,
      mx.int16: np.int16}
FLAT_INDEX = "thread_position_in_grid.y * threads_per_grid.x + thread_position_in_grid.x"


# --- running a kernel --------------------------------------------------------------------------

def launch(body: str, inputs: dict, grid: tuple[int, int], tg: tuple[int, int], dtype,
           size: int | None = None, init: float | None = None, atomic: bool = False):
    """Run `body` (with `i` the flat thread index) on a 2-D grid; the output and the report."""
    source = f"uint i = {FLAT_INDEX};\n{body}"
    kernel = metalsim.metal_kernel("k", list(inputs), ["out"], source, atomic_outputs=atomic)
    run = metalsim.simulate(kernel, inputs=list(inputs.values()),
                            output_shapes=[(size or grid[0] * grid[1],)], output_dtypes=[dtype],
                            grid=(*grid, 1), threadgroup=(*tg, 1), init_value=init)
    return np.array(run.outputs[0]), run.report


def groups(grid: tuple[int, int], tg: tuple[int, int], width: int) -> list[np.ndarray]:
    """Each group's threads (flat ids y * gx + x) in lane order: threadgroups in order, their
    threads in linear order (x fastest, over the threadgroup's actual size), cut every `width`."""
    (gx, gy), (tx, ty) = grid, tg
    out = []
    for wy in range(0, gy, ty):
        for wx in range(0, gx, tx):
            ax, ay = min(tx, gx - wx), min(ty, gy - wy)
            tids = [(wy + lin // ax) * gx + wx + lin % ax for lin in range(ax * ay)]
            out += [np.array(tids[s:s + width]) for s in range(0, len(tids), width)]
    return out


def bits(x: np.ndarray) -> np.ndarray:
    """Floats as their bit patterns, so comparisons see -0.0 and NaN payloads."""
    return x.view(f"u{x.dtype.itemsize}") if x.dtype.kind == "f" else x


# --- the model ---------------------------------------------------------------------------------

Flags = dict[tuple[str, str], set[int]]


@dataclass
class Group:
    """One group in the model: values, per-lane arguments and activity of the lanes that exist."""

    width: int
    tids: np.ndarray
    v: np.ndarray
    args: list[np.ndarray]
    act: np.ndarray
    flags: Flags
    branched: bool = False  # the inactive lanes took another branch (rather than returned)

    @property
    def size(self) -> int:
        return len(self.tids)

    def active(self) -> list[int]:
        return [lane for lane in range(self.size) if self.act[lane]]

    def flag(self, kind: str, severity: str, lane: int) -> None:
        self.flags[kind, severity].add(int(self.tids[lane]))

    def read(self, lane: int, source: int, edge: bool, data: np.ndarray | None = None):
        """Lane `source`'s value for `lane`: its own value, flagged, if the source is missing
        (a warning at the edge of an edge-handling shuffle, else an error) or inactive."""
        if source >= self.size:
            self.flag("inactive-lane-read", "warning" if edge else "error", lane)
        elif not self.act[source]:
            self.flag("inactive-lane-read", "error", lane)
        else:
            return (self.v if data is None else data)[source]
        return self.v[lane]

    def uniform(self, arg: int, lane: int) -> int:
        """Argument `arg` on `lane`, flagged unless every active lane has the same."""
        if len({int(self.args[arg][s]) for s in self.active()}) > 1:
            self.flag("non-uniform-argument", "error", lane)
        return int(self.args[arg][lane])

    def delta(self, arg: int, lane: int, limit: int) -> int | None:
        """A uniform delta or mask below `limit`; None (flagged unconfirmed) at or above it."""
        d = self.uniform(arg, lane)
        if d >= limit:
            self.flag("unconfirmed-behavior", "warning", lane)
            return None
        return d


Model = Callable[[Group, int], object]

OPS = {"sum": np.add, "product": np.multiply, "max": np.maximum, "min": np.minimum,
       "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}


def fold(op: str, values: list):
    acc = values[0]
    for x in values[1:]:
        acc = OPS[op](acc, x)
    return acc


def left_out(g: Group, lane: int) -> None:
    """A reduction or scan warns when lanes of the group that have not returned sit it out."""
    if g.branched and len(g.active()) < g.size:
        g.flag("inactive-lanes", "warning", lane)


def reduction(op: str) -> Model:
    def model(g: Group, lane: int):
        left_out(g, lane)
        return fold(op, [g.v[s] for s in g.active()])
    return model


def scan(op: str, inclusive: bool) -> Model:
    def model(g: Group, lane: int):
        left_out(g, lane)
        seen = [g.v[s] for s in g.active() if s < lane or (inclusive and s == lane)]
        if not seen:
            return (np.zeros_like if op == "sum" else np.ones_like)(g.v[lane])
        return fold(op, seen)
    return model


def shuffle(broadcast: bool) -> Model:
    def model(g: Group, lane: int):
        source = g.uniform(0, lane) if broadcast else int(g.args[0][lane])
        if source >= g.width:
            g.flag("invalid-lane", "error", lane)
            return g.v[lane]
        return g.read(lane, source, edge=False)
    return model


def shift(direction: str) -> Model:
    def model(g: Group, lane: int):
        d = g.delta(0, lane, g.width)
        if d is None:
            return g.v[lane]
        if direction == "up":
            return g.read(lane, lane - d, edge=True) if lane >= d else g.v[lane]
        if direction == "down":
            return g.read(lane, lane + d, edge=True) if lane + d < g.width else g.v[lane]
        if direction == "xor":
            return g.read(lane, lane ^ d, edge=False)
        step = lane - d if direction == "rotate_up" else lane + d
        if step % g.width != step % g.size:  # a short group might wrap at its own size
            g.flag("unconfirmed-behavior", "warning", lane)
            return g.v[lane]
        return g.read(lane, step % g.width, edge=True)
    return model


def fill(up: bool, moduli: tuple[int, ...]) -> Model:
    """args: the filling values, the delta, and optionally the modulo."""
    def model(g: Group, lane: int):
        m = g.uniform(2, lane) if len(g.args) == 3 else g.width
        valid = m in moduli
        if not valid:
            g.flag("invalid-argument", "error", lane)
        d = g.delta(1, lane, m if valid else g.width)
        if d is None or not valid:
            return g.v[lane]
        i, base = lane % m, lane - lane % m
        if up:
            if i >= d:
                return g.read(lane, lane - d, edge=True)
            return g.read(lane, base + m + i - d, edge=True, data=g.args[0])
        if i + d < m:
            return g.read(lane, lane + d, edge=True)
        return g.read(lane, base + i + d - m, edge=True, data=g.args[0])
    return model


# Functions of the set of active lanes itself.
ACTIVE_SET: dict[str, Model] = {
    "ballot": lambda g, lane: sum(1 << s for s in g.active() if g.v[s]),
    "active_threads_mask": lambda g, lane: sum(1 << s for s in g.active()),
    "all": lambda g, lane: all(g.v[s] for s in g.active()),
    "any": lambda g, lane: any(g.v[s] for s in g.active()),
    "is_first": lambda g, lane: lane == g.active()[0],
    "broadcast_first": lambda g, lane: g.v[g.active()[0]],
}


def model_run(model: Model, width: int, grid, tg, v: np.ndarray, active: np.ndarray,
              args: list[np.ndarray], out: np.ndarray, branched: bool = False) -> Flags:
    """Write the model's result for every active thread into `out`; what it flagged."""
    flags: Flags = defaultdict(set)
    with np.errstate(all="ignore"):  # integer results wrap, as in MSL
        for tids in groups(grid, tg, width):
            g = Group(width, tids, v[tids], [a[tids] for a in args], active[tids], flags,
                      branched)
            for lane in g.active():
                out[tids[lane]] = model(g, lane)
    return flags


def assert_reports(report, flags: Flags, gx: int) -> None:
    """The launch reported exactly the flagged kinds, on flagged threads only."""
    found = {(d.kind, d.severity) for d in report.diagnostics}
    assert found == {k for k, tids in flags.items() if tids}, report.diagnostics
    for d in report.diagnostics:
        assert {y * gx + x for x, y, _ in d.threads} <= flags[d.kind, d.severity]


# --- random launches ---------------------------------------------------------------------------

@dataclass
class Launch:
    """A random launch: its grid, threadgroup, and which threads call the function."""

    grid: tuple[int, int]
    tg: tuple[int, int]
    active: np.ndarray      # which threads call the function
    mode: str               # how the others stay out: "if" (a branch) or "return" (early exit)
    rng: np.random.Generator

    @property
    def n(self) -> int:
        return self.grid[0] * self.grid[1]


@st.composite
def launches(draw, width: int = W, two_d: bool = False) -> Launch:
    """Threadgroups whose size need not be a multiple of the width, a short last threadgroup,
    and a random set of active threads (often all of them)."""
    tx = draw(st.integers(1, 3 * width + 7))
    ty = draw(st.integers(1, 4)) if two_d else 1
    gx = draw(st.integers(1, 3 * tx)) if not two_d else tx * draw(st.integers(1, 2))
    gy = ty * draw(st.integers(1, 2)) if two_d else 1
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    density = draw(st.sampled_from([1.0, 1.0, 0.9, 0.5, 0.1]))
    active = rng.random(gx * gy) < density
    return Launch((gx, gy), (tx, ty), active, draw(st.sampled_from(["if", "return"])), rng)


def random_values(rng: np.random.Generator, dtype, n: int, op: str = "") -> np.ndarray:
    t = np.dtype(NP[dtype])
    if t.kind == "f":
        # Products stay finite near 1; other floats spread over several binades.
        x = rng.uniform(0.5, 1.5, n) if op == "product" else rng.normal(0, 10, n)
        return x.astype(t)
    info = np.iinfo(t)
    return rng.integers(info.min, info.max, n, dtype=t, endpoint=True)


def check(expr: str, model: Model, prefix: str, lc: Launch, dtype, v: np.ndarray,
          args: list[np.ndarray] = (), inputs: dict | None = None, out_dtype=None) -> None:
    """Run `out[i] = expr` on the active threads of `lc` and compare every thread with the
    model, bit for bit, and the diagnostics with what the model flagged."""
    guard = "if (m[i] != 0) " if lc.mode == "if" else "if (m[i] == 0) return;\n"
    inputs = {"a": mx.array(v), "m": mx.array(lc.active.astype(np.int32)), **(inputs or {})}
    out_dtype = out_dtype or dtype
    got, report = launch(f"{guard}out[i] = {expr};", inputs, lc.grid, lc.tg, out_dtype,
                         init=0)
    expected = got.copy()
    expected[lc.active] = 0  # every active thread must be written with the model's value
    flags = model_run(model, WIDTH[prefix], lc.grid, lc.tg, v, lc.active, list(args), expected,
                      branched=lc.mode == "if")
    np.testing.assert_array_equal(bits(got), bits(expected))
    assert_reports(report, flags, lc.grid[0])


# --- reductions and scans ----------------------------------------------------------------------

REDUCTION_CASES = [(op, t) for op in ("sum", "product", "max", "min")
                   for t in (mx.float32, mx.float16, mx.int32, mx.uint32, mx.int16)] + [
    (op, t) for op in ("and", "or", "xor") for t in (mx.int32, mx.uint32, mx.int16)]


@pytest.mark.parametrize("prefix", ["simd", "quad"])
@pytest.mark.parametrize("op, dtype", REDUCTION_CASES)
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_reductions_combine_the_active_lanes_in_lane_order(prefix, op, dtype, data):
    lc = data.draw(launches(WIDTH[prefix]))
    v = random_values(lc.rng, dtype, lc.n, op)
    check(f"{prefix}_{op}(a[i])", reduction(op), prefix, lc, dtype, v)


@pytest.mark.parametrize("prefix", ["simd", "quad"])
@pytest.mark.parametrize("op", ["sum", "product"])
@pytest.mark.parametrize("inclusive", [True, False])
@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.int32, mx.uint32])
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_prefix_scans_cover_the_active_lanes_up_to_or_before_each_lane(prefix, op, inclusive,
                                                                       dtype, data):
    lc = data.draw(launches(WIDTH[prefix]))
    v = random_values(lc.rng, dtype, lc.n, op)
    name = f"{prefix}_prefix_{'in' if inclusive else 'ex'}clusive_{op}"
    check(f"{name}(a[i])", scan(op, inclusive), prefix, lc, dtype, v)


@settings(max_examples=15, deadline=None)
@given(lc=launches(two_d=True))
def test_two_dimensional_threadgroups_form_simd_groups_by_linear_index(lc):
    v = random_values(lc.rng, mx.float32, lc.n)
    check("simd_prefix_inclusive_sum(a[i])", scan("sum", True), "simd", lc, mx.float32, v)
    check("simd_sum(a[i]) + simd_shuffle_up(a[i], 3)", lambda g, lane: np.float32(
        reduction("sum")(g, lane) + shift("up")(g, lane)), "simd", lc, mx.float32, v,
        [np.full(lc.n, 3)])


def test_float_sum_adds_in_lane_order_not_pairwise():
    v = np.ones(W, np.float32)
    v[0] = 1e8  # 1e8 + 1 rounds back to 1e8 in float32, lane after lane
    got, _ = launch("out[i] = simd_sum(a[i]);", {"a": mx.array(v)}, (W, 1), (W, 1), mx.float32)
    assert (got == np.float32(1e8)).all()


def test_half_sum_accumulates_in_half():
    v = np.ones(W, np.float16)
    v[0] = 2048  # 2048 + 1 is a tie that rounds back to 2048 in half
    got, _ = launch("out[i] = simd_sum(a[i]);", {"a": mx.array(v)}, (W, 1), (W, 1), mx.float16)
    assert (got == 2048).all()


def test_integer_sum_wraps():
    v = np.full(W, 2**31 - 1, np.int32)
    got, _ = launch("out[i] = simd_sum(a[i]);", {"a": mx.array(v)}, (W, 1), (W, 1), mx.int32)
    assert (got == -32).all()  # 32 * (2**31 - 1) = 2**36 - 32, which wraps to -32


def test_exclusive_sum_gives_the_first_active_lane_positive_zero():
    v = np.full(W, -0.0, np.float32)
    got, _ = launch("if (i % 2 == 1) out[i] = simd_prefix_exclusive_sum(a[i]);",
                    {"a": mx.array(v)}, (W, 1), (W, 1), mx.float32, init=7)
    assert np.signbit(got[1]) == 0 and np.signbit(got[3::2]).all()


def test_max_of_floats_ignores_nan_and_warns():
    v = np.arange(W, dtype=np.float32)
    v[31] = np.nan
    got, report = launch("out[i] = simd_max(a[i]);", {"a": mx.array(v)}, (W, 1), (W, 1),
                         mx.float32)
    assert (got == 30).all()
    [d] = report.diagnostics
    assert (d.kind, d.severity) == ("unconfirmed-behavior", "warning") and "NaN" in d.message


def test_vector_reductions_and_scans_work_per_component():
    rng = np.random.default_rng(1)
    v = rng.normal(0, 10, (70, 4)).astype(np.float32)
    body = """
    float4 x = ((const device float4*)a)[i];
    float4 s = simd_sum(x) + simd_prefix_exclusive_sum(x);
    for (int c = 0; c < 4; c++) out[4 * i + c] = s[c];
    """
    got, report = launch(body, {"a": mx.array(v.ravel())}, (70, 1), (70, 1), mx.float32,
                         size=280)
    assert report.diagnostics == []
    expected = np.empty_like(v)
    for tids in groups((70, 1), (70, 1), W):
        x = v[tids]
        total = x[0].copy()
        for row in x[1:]:
            total = total + row
        before = np.zeros(4, np.float32)
        for lane, row in enumerate(x):
            expected[tids[lane]] = total + before
            before = row.copy() if lane == 0 else before + row
    np.testing.assert_array_equal(got.reshape(70, 4), expected)


def test_int_vector_bitwise_and_half_vector_max():
    rng = np.random.default_rng(2)
    ints = rng.integers(0, 2**31, (W, 2), dtype=np.int32)
    halves = rng.normal(0, 4, (W, 3)).astype(np.float16)
    body = """
    int2 x = int2(a[2 * i], a[2 * i + 1]);
    half3 h = half3(b[3 * i], b[3 * i + 1], b[3 * i + 2]);
    int2 r = simd_or(x);
    half3 mx = simd_max(h);
    out[5 * i] = r.x; out[5 * i + 1] = r.y;
    out[5 * i + 2] = int(mx.x * 1024.0h); out[5 * i + 3] = int(mx.y * 1024.0h);
    out[5 * i + 4] = int(mx.z * 1024.0h);
    """
    got, report = launch(body, {"a": mx.array(ints.ravel()), "b": mx.array(halves.ravel())},
                         (W, 1), (W, 1), mx.int32, size=5 * W)
    assert report.diagnostics == []
    top = halves.max(axis=0).astype(np.float32) * 1024
    expected = np.concatenate([np.bitwise_or.reduce(ints, axis=0), top.astype(np.int32)])
    np.testing.assert_array_equal(got.reshape(W, 5), np.tile(expected, (W, 1)))


# --- shuffles ----------------------------------------------------------------------------------

SHUFFLE_TYPES = [mx.float32, mx.float16, mx.int32, mx.uint32]


@pytest.mark.parametrize("prefix", ["simd", "quad"])
@pytest.mark.parametrize("broadcast", [False, True])
@pytest.mark.parametrize("dtype", SHUFFLE_TYPES)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_shuffle_and_broadcast_read_the_named_lane(prefix, broadcast, dtype, data):
    width = WIDTH[prefix]
    lc = data.draw(launches(width))
    v = random_values(lc.rng, dtype, lc.n)
    if broadcast:  # uniform, usually: the same lane for all, varying per launch
        lane = np.full(lc.n, data.draw(st.integers(0, width + 1)), np.int32)
        if data.draw(st.booleans()):
            lane[lc.rng.integers(lc.n)] ^= 1
    else:
        lane = lc.rng.integers(0, width + 2, lc.n).astype(np.int32)
    name = f"{prefix}_{'broadcast' if broadcast else 'shuffle'}"
    check(f"{name}(a[i], b[i])", shuffle(broadcast), prefix, lc, dtype, v, [lane],
          {"b": mx.array(lane)})


@pytest.mark.parametrize("prefix", ["simd", "quad"])
@pytest.mark.parametrize("direction", ["up", "down", "xor", "rotate_up", "rotate_down"])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_shifts_follow_their_lane_formula(prefix, direction, data):
    width = WIDTH[prefix]
    lc = data.draw(launches(width))
    dtype = data.draw(st.sampled_from(SHUFFLE_TYPES))
    v = random_values(lc.rng, dtype, lc.n)
    delta = np.full(lc.n, data.draw(st.sampled_from(
        [0, 1, 2, width // 2, width - 1, width, width + 3])), np.int32)
    if data.draw(st.integers(0, 4)) == 0:  # now and then a delta that differs between lanes
        delta[lc.rng.integers(lc.n)] += 1
    check(f"{prefix}_shuffle_{direction}(a[i], b[i])", shift(direction), prefix, lc, dtype, v,
          [delta], {"b": mx.array(delta)})


@pytest.mark.parametrize("prefix", ["simd", "quad"])
@pytest.mark.parametrize("up", [True, False])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_shuffle_and_fill_shift_within_modulo_segments(prefix, up, data):
    width = WIDTH[prefix]
    lc = data.draw(launches(width))
    dtype = data.draw(st.sampled_from(SHUFFLE_TYPES))
    v, f = random_values(lc.rng, dtype, lc.n), random_values(lc.rng, dtype, lc.n)
    modulo = data.draw(st.sampled_from([None, *MODULI[prefix], 3]))
    limit = modulo if modulo in MODULI[prefix] else width
    delta = np.full(lc.n, data.draw(st.integers(0, limit)), np.int32)
    args, inputs = [f, delta], {"f": mx.array(f), "b": mx.array(delta)}
    call = f"{prefix}_shuffle_and_fill_{'up' if up else 'down'}(a[i], f[i], b[i]"
    if modulo is not None:
        args.append(np.full(lc.n, modulo, np.int32))
        call += f", {modulo}"
    check(call + ")", fill(up, MODULI[prefix]), prefix, lc, dtype, v, args, inputs)


@pytest.mark.parametrize("delta, expected", [
    (0, list(range(W))),
    (1, [0] + list(range(W - 1))),
    (31, list(range(31)) + [0]),
])
def test_shuffle_up_edge_lanes_keep_their_own_value(delta, expected):
    v = np.arange(W, dtype=np.int32)
    got, report = launch("out[i] = simd_shuffle_up(a[i], d);", {"a": mx.array(v), "d": delta},
                         (W, 1), (W, 1), mx.int32)
    assert report.diagnostics == []
    assert got.tolist() == expected


@pytest.mark.parametrize("delta", [0, 1, 31])
def test_shuffle_down_and_rotations_at_the_edges(delta):
    v = np.arange(W, dtype=np.int32) * 10
    body = """
    out[3 * i] = simd_shuffle_down(a[i], d);
    out[3 * i + 1] = simd_shuffle_rotate_up(a[i], d);
    out[3 * i + 2] = simd_shuffle_rotate_down(a[i], d);
    """
    got, report = launch(body, {"a": mx.array(v), "d": delta}, (W, 1), (W, 1), mx.int32,
                         size=3 * W)
    assert report.diagnostics == []
    lane = np.arange(W)
    down = np.where(lane + delta < W, v[np.minimum(lane + delta, W - 1)], v)
    np.testing.assert_array_equal(got.reshape(W, 3), np.stack(
        [down, v[(lane - delta) % W], v[(lane + delta) % W]], axis=1))


def test_and_fill_with_modulo_8_matches_the_spec_example():
    # The spec's example tables (msl-semantics §5.2): delta 2 within segments of 8 lanes.
    v, f = np.arange(W, dtype=np.int32), np.arange(W, dtype=np.int32) + 100
    body = """
    out[2 * i] = simd_shuffle_and_fill_up(a[i], f[i], 2, 8);
    out[2 * i + 1] = simd_shuffle_and_fill_down(a[i], f[i], 2, 8);
    """
    got, report = launch(body, {"a": mx.array(v), "f": mx.array(f)}, (W, 1), (W, 1), mx.int32,
                         size=2 * W)
    assert report.diagnostics == []
    up = [[100 + b + 6, 100 + b + 7, *range(b, b + 6)] for b in range(0, W, 8)]
    down = [[*range(b + 2, b + 8), 100 + b, 100 + b + 1] for b in range(0, W, 8)]
    np.testing.assert_array_equal(got[0::2], np.ravel(up))
    np.testing.assert_array_equal(got[1::2], np.ravel(down))


def test_vector_shuffles_move_whole_vectors():
    v = np.arange(4 * W, dtype=np.float32).reshape(W, 4)
    body = """
    float4 x = ((const device float4*)a)[i];
    float4 y = simd_shuffle_xor(x, 5) + simd_broadcast(x, 7) + simd_broadcast_first(x);
    for (int c = 0; c < 4; c++) out[4 * i + c] = y[c];
    """
    got, report = launch(body, {"a": mx.array(v.ravel())}, (W, 1), (W, 1), mx.float32,
                         size=4 * W)
    assert report.diagnostics == []
    expected = v[np.arange(W) ^ 5] + v[7] + v[0]
    np.testing.assert_array_equal(got.reshape(W, 4), expected)


def test_mlx_overloads_shuffle_bool_and_64_bit_integers():
    v = (np.arange(W, dtype=np.int64) << 33) + 5
    body = """
    long x = a[i];
    bool odd = (i % 2) == 1;
    out[3 * i] = simd_shuffle(x, (i + 1) % 32) + simd_shuffle_down(x, 1);
    out[3 * i + 1] = simd_shuffle_up(odd, 1) ? 1 : 0;
    out[3 * i + 2] = long(simd_shuffle_and_fill_up(ulong(x), ulong(7), 2));
    """
    got, report = launch(body, {"a": mx.array(v)}, (W, 1), (W, 1), mx.int64, size=3 * W)
    assert report.diagnostics == []
    lane = np.arange(W)
    down = np.where(lane < W - 1, v[np.minimum(lane + 1, W - 1)], v)
    np.testing.assert_array_equal(got[0::3], v[(lane + 1) % W] + down)
    np.testing.assert_array_equal(got[1::3], np.where(lane >= 1, (lane - 1) % 2, lane % 2))
    np.testing.assert_array_equal(got[2::3], np.where(lane >= 2, v[lane - 2], 7))


# --- votes -------------------------------------------------------------------------------------

@pytest.mark.parametrize("prefix", ["simd", "quad"])
@pytest.mark.parametrize("name", list(ACTIVE_SET))
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_votes_and_broadcast_first_see_only_active_lanes(prefix, name, data):
    lc = data.draw(launches(WIDTH[prefix]))
    if name == "broadcast_first":
        v = random_values(lc.rng, mx.float32, lc.n)
        check(f"{prefix}_broadcast_first(a[i])", ACTIVE_SET[name], prefix, lc, mx.float32, v)
        return
    v = lc.rng.random(lc.n) < data.draw(st.sampled_from([0.1, 0.5, 1.0]))
    arg = "a[i] != 0" if name in ("ballot", "all", "any") else ""
    out_dtype = {"all": mx.bool_, "any": mx.bool_, "is_first": mx.bool_}.get(
        name, mx.uint64 if prefix == "simd" else mx.uint16)
    check(f"{prefix}_{name}({arg})", ACTIVE_SET[name], prefix, lc, mx.int32,
          v.astype(np.int32), out_dtype=out_dtype)


def test_ballot_is_a_ulong_vote_and_quad_ballot_a_ushort():
    body = """
    ulong mask = simd_ballot(i % 3 == 0);
    ushort quad = quad_ballot(i % 2 == 0);
    out[2 * i] = (ulong)simd_ballot(i < 5) + (mask >> 32);
    out[2 * i + 1] = mask + quad;
    """
    got, report = launch(body, {}, (W, 1), (W, 1), mx.uint64, size=2 * W)
    assert report.diagnostics == []
    every3 = sum(1 << lane for lane in range(0, W, 3))
    assert (got[0::2] == 0b11111).all() and (got[1::2] == every3 + 0b0101).all()


# --- inactive lanes and unconfirmed cases, one by one ------------------------------------------

def test_shuffle_from_a_lane_that_returned_is_an_error_and_gives_the_own_value():
    v = np.arange(W, dtype=np.float32)
    body = "if (i == 5) return;\nout[i] = simd_shuffle(a[i], 5);"
    got, report = launch(body, {"a": mx.array(v)}, (W, 1), (W, 1), mx.float32, init=-1)
    [d] = report.diagnostics
    assert (d.kind, d.severity) == ("inactive-lane-read", "error")
    assert "not active" in d.message
    np.testing.assert_array_equal(got, np.where(np.arange(W) == 5, -1, v))


def test_shuffle_down_past_a_short_simd_group_warns_and_keeps_the_own_value():
    v = np.arange(40, dtype=np.int32)
    got, report = launch("out[i] = simd_shuffle_down(a[i], 2);", {"a": mx.array(v)}, (40, 1),
                         (40, 1), mx.int32)
    [d] = report.diagnostics
    assert (d.kind, d.severity) == ("inactive-lane-read", "warning")
    assert sorted(t[0] for t in d.threads) == [38, 39]
    np.testing.assert_array_equal(got, np.r_[np.arange(2, 32), 30, 31, np.arange(34, 40),
                                             38, 39])


def test_xor_into_a_missing_lane_is_an_error():
    v = np.arange(40, dtype=np.int32)
    _, report = launch("out[i] = simd_shuffle_xor(a[i], 8);", {"a": mx.array(v)}, (40, 1),
                       (40, 1), mx.int32)
    [d] = report.diagnostics
    assert (d.kind, d.severity) == ("inactive-lane-read", "error")
    assert "beyond the end" in d.message


def test_rotation_in_a_short_simd_group_warns_where_the_wrap_point_matters():
    v = np.arange(40, dtype=np.int32)
    got, report = launch("out[i] = simd_shuffle_rotate_down(a[i], 1);", {"a": mx.array(v)},
                         (40, 1), (40, 1), mx.int32)
    [d] = report.diagnostics
    assert (d.kind, d.severity) == ("unconfirmed-behavior", "warning")
    assert [t[0] for t in d.threads] == [39]
    np.testing.assert_array_equal(got, np.r_[np.arange(1, 32), 0, np.arange(33, 40), 39])


def test_divergent_shuffle_down_reading_an_inactive_lane_is_an_error():
    v = np.arange(W, dtype=np.int32)
    _, report = launch("if (i < 16) out[i] = simd_shuffle_down(a[i], 8);", {"a": mx.array(v)},
                       (W, 1), (W, 1), mx.int32)
    [d] = report.diagnostics
    assert (d.kind, d.severity) == ("inactive-lane-read", "error")
    assert sorted(t[0] for t in d.threads) == list(range(8, 16))


@pytest.mark.parametrize("call, kind, severity", [
    ("simd_shuffle(a[i], 32)", "invalid-lane", "error"),
    ("simd_broadcast(a[i], i / 16)", "non-uniform-argument", "error"),
    ("simd_shuffle_up(a[i], i % 2)", "non-uniform-argument", "error"),
    ("simd_shuffle_down(a[i], 32)", "unconfirmed-behavior", "warning"),
    ("simd_shuffle_xor(a[i], 40)", "unconfirmed-behavior", "warning"),
    ("simd_shuffle_and_fill_up(a[i], a[i], 9, 8)", "unconfirmed-behavior", "warning"),
    ("simd_shuffle_and_fill_down(a[i], a[i], 1, 6)", "invalid-argument", "error"),
    ("quad_shuffle(a[i], 4)", "invalid-lane", "error"),
    ("quad_shuffle_rotate_up(a[i], 4)", "unconfirmed-behavior", "warning"),
])
def test_bad_or_unconfirmed_arguments_are_reported(call, kind, severity):
    v = np.arange(W, dtype=np.int32)
    _, report = launch(f"out[i] = {call};", {"a": mx.array(v)}, (W, 1), (W, 1), mx.int32)
    assert [(d.kind, d.severity) for d in report.diagnostics] == [(kind, severity)]


# --- the idioms of msl-semantics §5.5 -----------------------------------------------------------

def test_shuffle_down_tree_reduction_leaves_the_total_on_lane_0():
    rng = np.random.default_rng(3)
    v = rng.normal(0, 1, 256).astype(np.float32)
    body = """
    float x = a[i];
    for (ushort off = 16; off > 0; off /= 2) x += simd_shuffle_down(x, off);
    out[i] = x;
    """
    got, report = launch(body, {"a": mx.array(v)}, (256, 1), (128, 1), mx.float32)
    assert report.diagnostics == []
    x = v.reshape(-1, W).copy()
    lane = np.arange(W)
    for off in (16, 8, 4, 2, 1):
        x = x + np.where(lane + off < W, x[:, np.minimum(lane + off, W - 1)], x)
    np.testing.assert_array_equal(got.reshape(-1, W), x)
    np.testing.assert_allclose(got[::W], v.reshape(-1, W).sum(1), rtol=1e-5, atol=1e-5)


def test_hillis_steele_scan_with_and_fill_up_is_an_inclusive_prefix_sum():
    rng = np.random.default_rng(4)
    v = rng.integers(-1000, 1000, 192).astype(np.int32)
    body = """
    int x = a[i];
    for (ushort d = 1; d < 32; d *= 2) x += simd_shuffle_and_fill_up(x, 0, d);
    out[i] = x;
    """
    got, report = launch(body, {"a": mx.array(v)}, (192, 1), (64, 1), mx.int32)
    assert report.diagnostics == []
    np.testing.assert_array_equal(got.reshape(-1, W), np.cumsum(v.reshape(-1, W), axis=1))


@pytest.mark.parametrize("tg", [256, 200, 40])
def test_two_level_threadgroup_reduction_through_threadgroup_memory(tg):
    rng = np.random.default_rng(5)
    n = 3 * tg
    v = rng.normal(0, 1, n).astype(np.float32)
    body = """
    threadgroup float partial[32];
    uint lane = thread_index_in_simdgroup, sg = simdgroup_index_in_threadgroup;
    float s = simd_sum(a[i]);
    if (lane == 0) partial[sg] = s;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (sg == 0) {
        s = simd_sum(lane < simdgroups_per_threadgroup ? partial[lane] : 0.0f);
        if (lane == 0) out[threadgroup_position_in_grid.x] = s;
    }
    """
    got, report = launch(body, {"a": mx.array(v)}, (n, 1), (tg, 1), mx.float32, size=3)
    assert report.diagnostics == []
    totals = []
    for block in v.reshape(3, tg):
        sums = [fold("sum", list(block[s:s + W])) for s in range(0, tg, W)]
        totals.append(fold("sum", sums + [np.float32(0)] * (min(W, tg) - len(sums))))
    np.testing.assert_array_equal(bits(got), bits(np.array(totals, np.float32)))


def test_simd_sum_then_one_atomic_add_per_simd_group():
    v = np.arange(1000, dtype=np.int32)
    body = """
    int s = simd_sum(a[i]);
    if (thread_index_in_simdgroup == 0)
        atomic_fetch_add_explicit(&out[0], s, memory_order_relaxed);
    """
    got, report = launch(body, {"a": mx.array(v)}, (1000, 1), (256, 1), mx.int32, size=1,
                         init=0, atomic=True)
    assert report.diagnostics == [] and got[0] == v.sum()
    assert report.max_per_thread()["atomics"] == 1 and report.totals()["atomics"] == 32


# --- types -------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, message", [
    ("simd_sum(a[i] > 0)", "bool is not among"),
    ("simd_and(float(a[i]))", "integers only"),
    ("simd_sum(long(a[i]))", "64-bit"),
    ("simd_shuffle_xor(a[i] > 0, 1)", "bool is not among"),
    ("simd_shuffle(long2(a[i]), 0)", "64-bit"),
    ("simd_shuffle_and_fill_up(long(a[i]), long(0), 1, 8)", "64-bit"),
    ("quad_sum(a[i] > 0)", "bool is not among"),
    ("quad_xor(half(a[i]))", "integers only"),
    ("simd_sum(a)", "integer or floating-point"),
    ("simd_shuffle_and_fill_up(float(a[i]), 0, 1)", "same type"),
    ("simd_sum(a[i], 1)", "takes 1 argument"),
    ("simd_shuffle_and_fill_down(a[i], a[i])", "takes 3 or 4 arguments"),
    ("simd_shuffle(a[i], float2(1))", "cannot convert vector"),
])
def test_wrong_argument_types_are_compile_errors(call, message):
    with pytest.raises(metalsim.CompileError, match=message):
        launch(f"out[i] = {call};", {"a": mx.arange(W, dtype=mx.int32)}, (W, 1), (W, 1),
               mx.int32)


def test_quad_functions_take_64_bit_integers():
    v = np.arange(8, dtype=np.int64) << 40
    got, report = launch("out[i] = quad_sum(a[i]) + quad_shuffle_xor(a[i], 1);",
                         {"a": mx.array(v)}, (8, 1), (8, 1), mx.int64)
    assert report.diagnostics == []
    quads = v.reshape(2, 4)
    np.testing.assert_array_equal(got, (quads.sum(1)[:, None] + quads[:, [1, 0, 3, 2]]).ravel())


# --- provenance --------------------------------------------------------------------------------

def cells(buffer: str, *elements: int) -> set:
    """Trace cells of a kernel input."""
    return {(buffer, -1, e) for e in elements}


@pytest.mark.parametrize("expr, expected", [
    ("simd_shuffle(a[i], 3) + simd_sum(i < 2 ? a[i] : 0.0f)", [cells("a", 0, 1, 3)] * 8),
    ("simd_prefix_inclusive_sum(a[i])", [cells("a", *range(lane + 1)) for lane in range(8)]),
    ("simd_prefix_exclusive_sum(a[i])", [cells("a", *range(lane)) for lane in range(8)]),
    ("simd_shuffle_up(a[i], 1)", [cells("a", 0)] + [cells("a", lane - 1) for lane in range(1, 8)]),
    ("simd_shuffle_and_fill_down(a[i], b[i], 1, 8)",
     [cells("a", lane + 1) for lane in range(7)] + [cells("b", 0)]),
])
def test_trace_follows_values_across_lanes(expr, expected):
    kernel = metalsim.metal_kernel("k", ["a", "b"], ["out"],
                                   f"uint i = thread_position_in_grid.x;\nout[i] = {expr};")
    data = mx.arange(8, dtype=mx.float32)
    run = metalsim.simulate(kernel, inputs=[data, data], output_shapes=[(8,)],
                            output_dtypes=[mx.float32], grid=(8, 1, 1), threadgroup=(8, 1, 1),
                            trace=True)
    assert run.report.errors == []
    [write] = [e for e in run.report.trace if e["kind"] == "write"]
    assert [set(s) for s in write["sources"]] == expected


# --- a reduction with lanes in another branch ----------------------------------------------------

@pytest.mark.parametrize("call", ["simd_sum", "simd_prefix_inclusive_sum", "quad_sum"])
def test_a_reduction_inside_a_branch_warns_that_lanes_are_left_out(call):
    lane = "thread_index_in_quadgroup" if call.startswith("quad") else "thread_index_in_simdgroup"
    out, report = launch(f"if ({lane} == 0) out[i] = {call}(a[i]);",
                         {"a": mx.ones(64)}, (64, 1), (64, 1), mx.float32)
    [d] = [d for d in report.diagnostics if d.kind == "inactive-lanes"]
    assert d.severity == "warning" and call in d.message and "before the `if`" in d.hint
    assert out[0] == 1  # only lane 0 took part, as on the GPU


def test_a_reduction_after_some_lanes_returned_or_in_a_short_group_does_not_warn():
    body = "if (i >= 40) return;\nfloat s = simd_sum(a[i]);\nout[i] = s;"
    _, report = launch(body, {"a": mx.ones(64)}, (64, 1), (64, 1), mx.float32)
    _, short = launch("out[i] = simd_sum(a[i]);", {"a": mx.ones(40)}, (40, 1), (40, 1),
                      mx.float32)
    assert report.diagnostics == [] and short.diagnostics == []


# --- the Metal compiler's lane builtin ---------------------------------------------------------

def test_the_lane_builtin_is_each_threads_index_in_its_simdgroup_of_the_asked_type():
    """`__metal_get_thread_index_in_simdgroup(ushort())` (MLX's NAX fragments): threadgroups
    of 40 threads have a full SIMD-group and one of 8."""
    source = ("uint i = thread_position_in_grid.x;\n"
              "auto lane = __metal_get_thread_index_in_simdgroup(ushort());\n"
              "out[i] = lane + (is_same_v<decltype(lane), ushort> ? 1000 : 0);")
    kernel = metalsim.metal_kernel("lane_builtin", ["a"], ["out"], source)
    (out,) = kernel(inputs=[mx.zeros(1)], output_shapes=[(80,)], output_dtypes=[mx.int32],
                    grid=(80, 1, 1), threadgroup=(40, 1, 1))
    lane = np.arange(80) % 40 % W
    assert np.array(out).tolist() == (lane + 1000).tolist()


def test_the_lane_builtin_wants_an_integer_type_argument():
    kernel = metalsim.metal_kernel("lane_builtin_bad", ["a"], ["out"],
                                   "out[0] = __metal_get_thread_index_in_simdgroup(1.0f);")
    with pytest.raises(metalsim.CompileError, match="returns an integer type, not 'float'"):
        kernel(inputs=[mx.zeros(1)], output_shapes=[(1,)], output_dtypes=[mx.int32],
               grid=(1, 1, 1), threadgroup=(1, 1, 1))
