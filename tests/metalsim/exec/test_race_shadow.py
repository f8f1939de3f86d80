"""The fast paths of the race shadow and the per-thread counts find what the full checks find:
reads kept in the read log until a write by another thread needs them, writes of one run of
granules through slices, counts of every-lane and partial accesses, atomics sorted by radix."""

import mlx.core as mx
import numpy as np
import pytest

import metalsim

TID = "uint i = thread_position_in_threadgroup.x;\n"


def simulate(source, n=64, tg=64, outputs=64, dtype=mx.float32, atomic_outputs=False, **kw):
    kernel = metalsim.metal_kernel("k", ["a"], ["out"], source, atomic_outputs=atomic_outputs)
    return metalsim.simulate(kernel, inputs=[mx.arange(n, dtype=mx.float32)],
                             output_shapes=[(outputs,)], output_dtypes=[dtype], grid=(n, 1, 1),
                             threadgroup=(tg, 1, 1), init_value=0, **kw)


def kinds(run):
    return [(d.kind, d.severity, d.line) for d in run.report.diagnostics]


FILL = (TID + "threadgroup float t[64];\nt[i] = a[i];\n"
        "threadgroup_barrier(mem_flags::mem_threadgroup);\n")


def test_a_write_after_the_writers_own_read_keeps_later_conflicting_writes_visible():
    # line 5: every thread reads its neighbour's element and writes its own (no conflict
    # between them yet); line 6: thread 0 writes element 1, which thread 0 read, and element
    # 1's own thread read element 2: no conflict either; line 7 writes what others read.
    run = simulate(FILL + "float v = t[(i + 1) % 64];\nif (i == 0) t[1] = v;\n"
                   "if (i == 5) t[9] = v;\nout[i] = v;")
    [race] = run.report.diagnostics
    assert (race.kind, race.line) == ("race", 7)
    assert race.threads == [(5, 0, 0)]
    assert "thread (8, 0, 0) read" in race.detail


def test_reads_ordered_by_a_barrier_before_the_write_are_no_race():
    run = simulate(FILL + "float v = t[(i + 1) % 64];\n"
                   "threadgroup_barrier(mem_flags::mem_threadgroup);\nt[i] = v;\nout[i] = t[i];")
    assert kinds(run) == []


def test_a_tree_reduction_without_its_barrier_races_and_with_it_is_clean():
    body = ("for (uint s = 32; s > 0; s >>= 1) {\n    if (i < s) t[i] += t[i + s];\n"
            "    BARRIER\n}\nif (i == 0) out[0] = t[0];")
    clean = simulate(FILL + body.replace("BARRIER",
                                         "threadgroup_barrier(mem_flags::mem_threadgroup);"))
    assert kinds(clean) == []
    assert np.array(clean.outputs[0])[0] == sum(range(64))
    racy = simulate(FILL + body.replace("BARRIER", ""))
    assert ("race", "error", 6) in kinds(racy)


def test_one_writer_per_element_across_threadgroups_is_clean_and_two_are_a_race():
    clean = simulate("uint g = thread_position_in_grid.x;\nout[g] = a[g];", n=64, tg=16)
    assert kinds(clean) == []
    racy = simulate("uint g = thread_position_in_grid.x;\nout[g % 16] = a[g];", n=64, tg=16)
    [race] = run_races(racy)
    assert race.line == 2 and "threadgroup" in race.hint


def run_races(run):
    return [d for d in run.report.diagnostics if d.kind == "race"]


def test_per_thread_counts_of_divergent_accesses_are_exact():
    run = simulate(FILL + "float v = 0;\nif (i % 2 == 0) v += t[i] + t[(i + 1) % 64];\n"
                   "if (i % 3 == 0) v += a[i];\nout[i] = v;")
    assert kinds(run) == []
    lanes = np.arange(64)
    counts = run.report.counts
    np.testing.assert_array_equal(counts["threadgroup_reads"].ravel(), 2 * (lanes % 2 == 0))
    np.testing.assert_array_equal(counts["global_reads"].ravel(), 1 + (lanes % 3 == 0))
    np.testing.assert_array_equal(counts["threadgroup_writes"].ravel(), np.ones(64))


@pytest.mark.parametrize("bins", [256, 70_000])   # radix-sorted keys, and too wide for them
def test_an_atomic_histogram_counts_exactly_whatever_the_span_of_its_bins(bins):
    n = 4096
    rng = np.random.default_rng(bins)
    keys = rng.integers(0, bins, n).astype(np.int32)
    kernel = metalsim.metal_kernel(
        "hist", ["keys"], ["out"],
        "uint i = thread_position_in_grid.x;\n"
        "atomic_fetch_add_explicit(&out[keys[i]], 1u, memory_order_relaxed);",
        atomic_outputs=True)
    run = metalsim.simulate(kernel, inputs=[mx.array(keys)], output_shapes=[(bins,)],
                            output_dtypes=[mx.uint32], grid=(n, 1, 1), threadgroup=(256, 1, 1),
                            init_value=0)
    assert kinds(run) == []
    np.testing.assert_array_equal(np.array(run.outputs[0]), np.bincount(keys, minlength=bins))
    np.testing.assert_array_equal(run.report.counts["atomics"].ravel(), np.ones(n))
