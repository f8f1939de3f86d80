"""Launch planning: batches sized by a memory budget, and launches that cannot fit it; MLX's
prelude, preprocessed and parsed once, shared by kernels that never see each other's names."""

import tracemalloc
from dataclasses import replace

import mlx.core as mx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import metalsim
from metalsim.exec import launch

BIG_TILE = """
threadgroup float tile[8192];
uint lid = thread_position_in_threadgroup.x, i = thread_position_in_grid.x;
tile[lid] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
out[i] = tile[31 - lid];
"""

MATMUL = """
threadgroup float As[16][16];
threadgroup float Bs[16][16];
uint col = thread_position_in_grid.x, row = thread_position_in_grid.y;
uint lx = thread_position_in_threadgroup.x, ly = thread_position_in_threadgroup.y;
uint n = a_shape[0];
float acc = 0.0f;
for (uint t = 0; t < n; t += 16) {
    As[ly][lx] = a[row * n + t + lx];
    Bs[ly][lx] = b[(t + ly) * n + col];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint k = 0; k < 16; ++k) {
        acc += As[ly][k] * Bs[k][lx];
    }
    BARRIER
}
out[row * n + col] = acc;
"""


def test_a_one_gib_output_is_a_resource_limit_not_a_memory_error():
    kernel = metalsim.metal_kernel("k", ["a"], ["out"], "out[0] = a[0];")
    run = metalsim.simulate(kernel, inputs=[mx.arange(4, dtype=mx.float32)],
                            output_shapes=[(1 << 28,)], output_dtypes=[mx.float32],
                            grid=(1, 1, 1), threadgroup=(1, 1, 1))
    [d] = run.report.errors
    assert d.kind == "resource-limit"
    assert "memory budget" in d.message and "GiB" in d.message
    assert "memory_budget=" in d.hint


def test_a_launch_over_a_small_budget_is_reported_before_allocating():
    kernel = metalsim.metal_kernel("k", ["a"], ["out"], BIG_TILE)
    n = 1 << 16
    args = dict(inputs=[mx.arange(n, dtype=mx.float32)], output_shapes=[(n,)],
                output_dtypes=[mx.float32], grid=(n, 1, 1), threadgroup=(32, 1, 1))
    metalsim.simulate(kernel, memory_budget=0, **args)   # compiled once, outside the count

    def peak_bytes(budget):
        tracemalloc.start()
        run = metalsim.simulate(kernel, memory_budget=budget, **args)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return run, peak

    run, peak = peak_bytes(4 << 20)
    [d] = run.report.errors
    assert d.kind == "resource-limit" and "4.0 MiB" in d.message
    assert peak < 4 << 20    # within the budget: the shadows were never allocated
    fits, peak = peak_bytes(64 << 20)
    assert 16 << 20 < peak < 64 << 20
    assert fits.report.diagnostics == []
    np.testing.assert_array_equal(np.array(fits.outputs[0]),
                                  np.arange(n, dtype=np.float32).reshape(-1, 32)[:, ::-1]
                                  .reshape(-1))


def _uncelled(diagnostics):
    return [replace(d, cells=[]) for d in diagnostics]


def _batches_of(monkeypatch) -> list[int]:
    sizes = []
    make = launch.make_batches

    def spy(grid, tg, lanes):
        for batch in make(grid, tg, lanes):
            sizes.append(batch.size)
            yield batch
    monkeypatch.setattr(launch, "make_batches", spy)
    return sizes


def test_batches_sized_by_the_budget_keep_every_result_and_check(monkeypatch):
    a, b = mx.random.normal((64, 64)), mx.random.normal((64, 64))
    args = dict(inputs=[a, b], output_shapes=[(64, 64)], output_dtypes=[mx.float32],
                grid=(64, 64, 1), threadgroup=(16, 16, 1))
    for barrier in ("threadgroup_barrier(mem_flags::mem_threadgroup);", ""):
        kernel = metalsim.metal_kernel("mm", ["a", "b"], ["out"],
                                       MATMUL.replace("BARRIER", barrier))
        whole = metalsim.simulate(kernel, **args)
        sizes = _batches_of(monkeypatch)
        split = metalsim.simulate(kernel, memory_budget=1 << 20, **args)
        monkeypatch.undo()
        assert len(sizes) > 1 and sum(sizes) == 64 * 64
        np.testing.assert_array_equal(np.array(split.outputs[0]), np.array(whole.outputs[0]))
        # the same findings; which cells a capped finding lists depends on the batches
        assert _uncelled(split.report.diagnostics) == _uncelled(whole.report.diagnostics)
        for name, counts in whole.report.counts.items():
            np.testing.assert_array_equal(split.report.counts[name], counts)
    assert {d.kind for d in whole.report.errors} == {"race"}   # the kernel missing a barrier


def _expected_lanes(grid, tg, groups: range) -> dict[str, list]:
    """Per lane of a batch of the threadgroups `groups` (linear ids, x fastest), what the
    launch must give it, thread by thread: the groups at the grid's edge are cut to fit."""
    (gx, gy, gz), (tx, ty, tz) = grid, tg
    nx, ny = -(-gx // tx), -(-gy // ty)
    lanes: dict[str, list] = {k: [] for k in ("tid", "tg_global", "tg_local", "simd_global",
                                              "pos", "local", "index")}
    simd_base = 0
    for local_tg, g in enumerate(groups):
        wx, wy, wz = g % nx, g // nx % ny, g // (nx * ny)
        ax, ay, az = min(tx, gx - wx * tx), min(ty, gy - wy * ty), min(tz, gz - wz * tz)
        for lin in range(ax * ay * az):
            lx, ly, lz = lin % ax, lin // ax % ay, lin // (ax * ay)
            px, py, pz = wx * tx + lx, wy * ty + ly, wz * tz + lz
            for key, value in (("tid", pz * gx * gy + py * gx + px), ("tg_global", g),
                               ("tg_local", local_tg), ("simd_global", simd_base + lin // 32),
                               ("pos", [px, py, pz]), ("local", [lx, ly, lz]),
                               ("index", lin)):
                lanes[key].append(value)
        simd_base += -(-(ax * ay * az) // 32)
    return lanes


@settings(max_examples=150, deadline=None)
@given(st.tuples(*[st.integers(1, 40)] * 3), st.tuples(*[st.integers(1, 9)] * 3),
       st.integers(1, 400), st.booleans())
def test_batches_give_each_lane_its_thread_whole_or_cut_threadgroups(grid, tg, budget, whole):
    """Whole threadgroups (a grid that is a multiple of the threadgroup, which repeats one
    group's lanes) and groups cut at the edges give each lane the ids worked out thread by
    thread, in 1-D, 2-D and 3-D grids and batches of any size."""
    if whole:
        grid = tuple(g * t for g, t in zip((1 + grid[0] % 5, 1 + grid[1] % 3,
                                            1 + grid[2] % 2), tg))
    grid = grid if grid[1] * grid[2] > 1 or budget % 2 else (grid[0], 1, 1)
    groups = [-(-g // t) for g, t in zip(grid, tg)]
    total = groups[0] * groups[1] * groups[2]
    first = 0
    for batch in launch.make_batches(grid, tg, budget):
        want = _expected_lanes(grid, tg, range(first, first + batch.tg_count))
        first += batch.tg_count
        for key in ("tid", "tg_global", "tg_local", "simd_global"):
            assert getattr(batch, key).tolist() == want[key], key
        attributes = batch.attributes
        assert attributes["thread_position_in_grid"].tolist() == want["pos"]
        assert attributes["thread_position_in_threadgroup"].tolist() == want["local"]
        assert attributes["thread_index_in_threadgroup"].tolist() == want["index"]
    assert first == total


# --- The prelude, parsed once per process and shared by every kernel ----------------------------

def run_on_eight(source: str, header: str = "") -> np.ndarray:
    kernel = metalsim.metal_kernel("k", ["a"], ["out"], source, header=header)
    run = metalsim.simulate(kernel, inputs=[mx.arange(8, dtype=mx.float32) / 8],
                            output_shapes=[(8,)], output_dtypes=[mx.float32], grid=(8, 1, 1),
                            threadgroup=(8, 1, 1))
    assert not run.report.errors, run.report.errors
    return np.array(run.outputs[0])


def test_a_kernel_sees_none_of_the_names_of_the_kernels_compiled_before_it():
    header = ("typedef float Foo;\nstruct S { float v; };\n"
              "inline float helper(float x) { return x * 2; }\n"
              "template <typename T> T twice(T x) { return x + x; }\n")
    uses = "uint i = thread_position_in_grid.x; S s{a[i]}; out[i] = helper(twice<Foo>(s.v));"
    np.testing.assert_array_equal(run_on_eight(uses, header), np.arange(8) / 2)
    for source, message in [("Foo x = 1; out[0] = x;", "unknown type name 'Foo'"),
                            ("out[0] = helper(1.0f);", "undeclared identifier 'helper'"),
                            ("out[0] = twice<float>(1.0f);", "undeclared identifier 'twice'"),
                            ("S s{1.0f}; out[0] = s.v;", "unknown type name 'S'")]:
        with pytest.raises(metalsim.CompileError, match=message):
            run_on_eight(source)
    # Its own S and helper, with other members and another signature, are the only ones.
    own = ("struct S { int w; int z; };\ninline int helper(int x) { return x + 7; }\n")
    mine = "uint i = thread_position_in_grid.x; S s{int(i), 1}; out[i] = helper(s.w + s.z);"
    np.testing.assert_array_equal(run_on_eight(mine, own), np.arange(8) + 8)


def test_compiling_kernels_leaves_the_shared_prelude_as_it_was():
    before = repr(launch.parsed_prelude(False))
    source = """
    uint i = thread_position_in_grid.x;
    float whole, c;
    int e;
    float f = modf(a[i] * 3.5f, whole) + sincos(a[i], c) + c + frexp(a[i] + 1.0f, e) + e;
    int64_t loc = elem_to_loc(i, a_shape, a_strides, a_ndim);
    uint loc32 = elem_to_loc<uint>(i, a_shape, a_strides, a_ndim);
    int one = elem_to_loc_1<int>(i, a_strides[0]);
    out[i] = f + log1p(a[i]) + float(loc + loc32 + ceildiv(i, 3u) + one);
    """
    run_on_eight(source)
    assert repr(launch.parsed_prelude(False)) == before
