"""Atomics: indivisible updates under contention, Metal's type rules, and their race rules."""

import mlx.core as mx
import numpy as np
import pytest

import metalsim


def run(source, inputs, names, out_shape, out_dtype, grid, tg, init_value=0, atomic=True,
        header=""):
    kernel = metalsim.metal_kernel("k", names, ["out"], source, header=header,
                                   atomic_outputs=atomic)
    return metalsim.simulate(kernel, inputs=inputs, output_shapes=[out_shape],
                             output_dtypes=[out_dtype], grid=grid, threadgroup=tg,
                             init_value=init_value)


HISTOGRAM = """
uint i = thread_position_in_grid.x;
atomic_fetch_add_explicit(&out[x[i]], 1, memory_order_relaxed);
"""


def test_heavily_contended_histogram_equals_bincount():
    rng = np.random.default_rng(0)
    data = rng.integers(0, 16, 20000).astype(np.int32)
    data[:5000] = 3  # one very hot bin
    r = run(HISTOGRAM, [mx.array(data)], ["x"], (16,), mx.int32, (20000, 1, 1), (256, 1, 1))
    assert r.report.diagnostics == []
    np.testing.assert_array_equal(np.array(r.outputs[0]), np.bincount(data, minlength=16))
    counts = r.report.max_per_thread()
    assert counts["atomics"] == 1 and counts["global_reads"] == 2
    assert counts["global_writes"] == 1


def test_fetch_add_returns_distinct_old_values_like_a_ticket_counter():
    source = """
    uint i = thread_position_in_grid.x;
    uint ticket = atomic_fetch_add_explicit(&out[0], 1u, memory_order_relaxed);
    atomic_store_explicit(&out[1 + ticket], i, memory_order_relaxed);
    """
    r = run(source, [mx.arange(4)], ["x"], (65,), mx.uint32, (64, 1, 1), (32, 1, 1))
    out = np.array(r.outputs[0])
    assert out[0] == 64 and sorted(out[1:].tolist()) == list(range(64))
    assert r.report.diagnostics == []


def test_float_atomic_sum_agrees_within_tolerance():
    rng = np.random.default_rng(1)
    values = rng.standard_normal(4096).astype(np.float32)
    source = """
    uint i = thread_position_in_grid.x;
    atomic_fetch_add_explicit(&out[i % 4], x[i], memory_order_relaxed);
    """
    r = run(source, [mx.array(values)], ["x"], (4,), mx.float32, (4096, 1, 1), (128, 1, 1))
    expected = values.reshape(-1, 4).sum(0, dtype=np.float64)
    np.testing.assert_allclose(np.array(r.outputs[0]), expected, rtol=1e-4, atol=1e-3)


def test_compare_exchange_loop_computes_a_float_max():
    source = """
    uint i = thread_position_in_grid.x;
    float v = x[i];
    float seen = atomic_load_explicit(&out[0], memory_order_relaxed);
    while (v > seen) {
        if (atomic_compare_exchange_weak_explicit(&out[0], &seen, v, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            break;
        }
    }
    """
    rng = np.random.default_rng(2)
    values = rng.standard_normal(1000).astype(np.float32)
    r = run(source, [mx.array(values)], ["x"], (1,), mx.float32, (1000, 1, 1), (100, 1, 1),
            init_value=float("-inf"))
    assert r.report.diagnostics == []
    assert np.array(r.outputs[0])[0] == values.max()


def test_threadgroup_atomics_count_per_threadgroup():
    source = """
    threadgroup atomic_uint count;
    uint l = thread_position_in_threadgroup.x;
    if (l == 0) atomic_store_explicit(&count, 0u, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (x[thread_position_in_grid.x] % 2 == 0) {
        atomic_fetch_add_explicit(&count, 1u, memory_order_relaxed);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (l == 0) {
        out[threadgroup_position_in_grid.x] = atomic_load_explicit(&count, memory_order_relaxed);
    }
    """
    data = np.arange(96, dtype=np.int32)
    data[:32] = 0
    r = run(source, [mx.array(data)], ["x"], (3,), mx.uint32, (96, 1, 1), (32, 1, 1),
            init_value=None, atomic=False)
    assert r.report.diagnostics == []
    assert np.array(r.outputs[0]).tolist() == [32, 16, 16]
    assert r.report.max_per_thread()["threadgroup_writes"] == 2


def test_atomic_min_max_and_bitwise_operations():
    source = """
    uint i = thread_position_in_grid.x;
    int v = x[i];
    atomic_fetch_min_explicit(&out[0], v, memory_order_relaxed);
    atomic_fetch_max_explicit(&out[1], v, memory_order_relaxed);
    atomic_fetch_or_explicit(&out[2], 1 << (i % 31), memory_order_relaxed);
    atomic_fetch_xor_explicit(&out[3], v, memory_order_relaxed);
    atomic_fetch_sub_explicit(&out[4], v, memory_order_relaxed);
    """
    data = np.array([5, -7, 12, 3, -1, 9, 0, 4], np.int32)
    r = run(source, [mx.array(data)], ["x"], (5,), mx.int32, (8, 1, 1), (8, 1, 1))
    xor = 0
    for v in data:
        xor ^= int(v)
    assert np.array(r.outputs[0]).tolist() == [-7, 12, 0xFF, xor, -int(data.sum())]


def test_no_false_races_between_atomics_under_contention():
    r = run(HISTOGRAM, [mx.array(np.zeros(4096, np.int32))], ["x"], (1,), mx.int32,
            (4096, 1, 1), (1024, 1, 1))
    assert r.report.diagnostics == []
    assert np.array(r.outputs[0]).tolist() == [4096]


def test_plain_write_racing_an_atomic_is_reported():
    source = """
    threadgroup atomic_int total;
    uint l = thread_position_in_threadgroup.x;
    if (l == 0) atomic_store_explicit(&total, 0, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    atomic_fetch_add_explicit(&total, 1, memory_order_relaxed);
    if (l == 5) {
        threadgroup int* p = (threadgroup int*)&total;
        *p = 100;
    }
    """
    kernel = metalsim.metal_kernel("k", ["x"], ["out"], source)
    r = metalsim.simulate(kernel, inputs=[mx.arange(8)], output_shapes=[(1,)],
                          output_dtypes=[mx.int32], grid=(8, 1, 1), threadgroup=(8, 1, 1))
    [d] = r.report.errors
    assert d.kind == "race" and "'total'" in d.message
    assert d.detail.startswith("thread (5, 0, 0) writes element 0 of 'total', which thread "
                               "(7, 0, 0) updated atomically at line 6")


def test_atomic_on_uninitialised_output_is_reported():
    r = run(HISTOGRAM, [mx.array(np.zeros(8, np.int32))], ["x"], (1,), mx.int32,
            (8, 1, 1), (8, 1, 1), init_value=None)
    assert [d.kind for d in r.report.errors] == ["uninitialized-read"]
    assert "init_value" in r.report.errors[0].hint


@pytest.mark.parametrize(("source", "message"), [
    ("atomic_fetch_max_explicit(&out[0], 1.0f, memory_order_relaxed);", "not available"),
    ("atomic_fetch_add_explicit(&out[0], 1, memory_order_seq_cst);", "memory_order_relaxed"),
    ("out[0] = 1;", "atomic"),
    ("float v = out[0];", "cannot be read directly"),
    ("atomic_fetch_add_explicit(&x[0], 1, memory_order_relaxed);", "pointer to an atomic"),
])
def test_invalid_atomic_uses_are_compile_errors(source, message):
    kernel = metalsim.metal_kernel("k", ["x"], ["out"], source, atomic_outputs=True)
    with pytest.raises(metalsim.CompileError, match=message):
        metalsim.simulate(kernel, inputs=[mx.arange(8)], output_shapes=[(1,)],
                          output_dtypes=[mx.float32], grid=(1, 1, 1), threadgroup=(1, 1, 1),
                          init_value=0)


def test_threadgroup_float_atomic_add_is_rejected():
    source = """
    threadgroup atomic_float acc;
    atomic_fetch_add_explicit(&acc, 1.0f, memory_order_relaxed);
    out[0] = 1;
    """
    kernel = metalsim.metal_kernel("k", ["x"], ["out"], source)
    with pytest.raises(metalsim.CompileError, match="only available in device memory"):
        metalsim.simulate(kernel, inputs=[mx.arange(8)], output_shapes=[(1,)],
                          output_dtypes=[mx.float32], grid=(1, 1, 1), threadgroup=(1, 1, 1))


def test_64_bit_atomic_max_on_a_device_ulong_returns_nothing():
    source = ("atomic_max_explicit(&out[0], ulong(x[thread_position_in_grid.x]) << 33, "
              "memory_order_relaxed);")
    r = run(source, [mx.array([5, 90, 3, 7], dtype=mx.uint32)], ["x"], (1,), mx.uint64,
            (4, 1, 1), (4, 1, 1))
    assert np.array(r.outputs[0]).tolist() == [90 << 33]
    with pytest.raises(metalsim.CompileError, match="device atomic_ulong"):
        run("atomic_max_explicit(&out[0], 1u, memory_order_relaxed);", [mx.arange(4)], ["x"],
            (1,), mx.uint32, (4, 1, 1), (4, 1, 1))


LOAD_THEN_STORE = """
uint i = thread_position_in_grid.x;
float old = atomic_load_explicit(&out[{where}], memory_order_relaxed);
atomic_store_explicit(&out[{where}], old + x[i], memory_order_relaxed);
"""


def test_atomic_load_then_store_by_several_threads_is_a_lost_update():
    source = LOAD_THEN_STORE.format(where="i % 2")
    r = run(source, [mx.ones(8)], ["x"], (2,), mx.float32, (8, 1, 1), (4, 1, 1))
    lost = [d for d in r.report.diagnostics if d.kind == "lost-update"]
    assert len(lost) == 1 and lost[0].severity == "error" and lost[0].line == 4
    assert "load element 0 of 'out' at line 3 and store it here" in lost[0].detail
    assert np.array(r.outputs[0]).tolist() == [1.0, 1.0]   # every update but one lost


def test_atomic_load_then_store_of_each_threads_own_element_loses_nothing():
    r = run(LOAD_THEN_STORE.format(where="i"), [mx.ones(8)], ["x"], (8,), mx.float32,
            (8, 1, 1), (4, 1, 1))
    assert r.report.diagnostics == []


def test_atomic_load_then_fetch_add_loses_nothing():
    source = """
    uint i = thread_position_in_grid.x;
    float seen = atomic_load_explicit(&out[0], memory_order_relaxed);
    atomic_fetch_add_explicit(&out[0], x[i] + 0.0f * seen, memory_order_relaxed);
    """
    r = run(source, [mx.ones(8)], ["x"], (1,), mx.float32, (8, 1, 1), (4, 1, 1))
    assert not any(d.kind == "lost-update" for d in r.report.diagnostics)


def test_threadgroup_load_then_store_in_turns_ordered_by_barriers_loses_nothing():
    # Thread 0 then thread 1 of each threadgroup update a threadgroup counter, a barrier
    # between their turns; other threadgroups have their own counter.
    source = """
    threadgroup atomic_int counter;
    uint t = thread_position_in_threadgroup.x;
    if (t == 0) { atomic_store_explicit(&counter, 0, memory_order_relaxed); }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint turn = 0; turn < 2; ++turn) {
        if (t == turn) {
            int old = atomic_load_explicit(&counter, memory_order_relaxed);
            atomic_store_explicit(&counter, old + 1, memory_order_relaxed);
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (t == 0) {
        out[thread_position_in_grid.x / 2] = atomic_load_explicit(&counter,
                                                                  memory_order_relaxed);
    }
    """
    r = run(source, [mx.ones(8)], ["x"], (4,), mx.int32, (8, 1, 1), (2, 1, 1), atomic=False)
    assert r.report.diagnostics == []
    assert np.array(r.outputs[0]).tolist() == [2, 2, 2, 2]


def test_atomic_load_then_plain_store_by_several_threads_is_a_lost_update_and_a_race():
    source = """
    uint i = thread_position_in_grid.x;
    device atomic<float>* o = (device atomic<float>*)out;
    float old = atomic_load_explicit(&o[i % 2], memory_order_relaxed);
    out[i % 2] = old + x[i];
    """
    r = run(source, [mx.ones(8)], ["x"], (2,), mx.float32, (8, 1, 1), (4, 1, 1), atomic=False)
    kinds = {d.kind: d for d in r.report.diagnostics}
    assert kinds["lost-update"].severity == "error" and kinds["race"].severity == "error"
    assert "loaded atomically at line 4" in kinds["race"].detail
