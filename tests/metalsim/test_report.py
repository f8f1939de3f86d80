"""The Report: per-thread counts shaped like the grid, totals, traffic against ideal, efficiency."""

import mlx.core as mx
import numpy as np

import metalsim


def report(source, inputs, out_shape, grid, tg, names=("a",)):
    kernel = metalsim.metal_kernel("k", list(names), ["out"], source)
    run = metalsim.simulate(kernel, inputs=inputs, output_shapes=[out_shape],
                            output_dtypes=[mx.float32], grid=grid, threadgroup=tg)
    assert run.report.errors == []
    return run.report


def test_counts_are_per_thread_and_shaped_like_the_grid():
    source = """
    uint x = thread_position_in_grid.x, y = thread_position_in_grid.y;
    float v = a[y * 4 + x];
    if (x == 0) v += a[y * 4 + 1];
    out[y * 4 + x] = v;
    """
    r = report(source, [mx.arange(8, dtype=mx.float32)], (8,), (4, 2, 1), (4, 2, 1))
    assert r.counts["global_reads"].shape == (1, 2, 4)
    assert r.counts["global_reads"][0].tolist() == [[2, 1, 1, 1], [2, 1, 1, 1]]
    assert r.per_thread(0, 1) == {"global_reads": 2, "global_writes": 1, "threadgroup_reads": 0,
                                  "threadgroup_writes": 0, "atomics": 0, "barriers": 0}
    assert r.max_per_thread()["global_reads"] == 2
    assert r.totals()["global_reads"] == 10 and r.totals()["global_writes"] == 8


def test_shape_metadata_and_scalar_inputs_are_not_global_reads():
    source = "uint i = thread_position_in_grid.x;\nout[i] = a_shape[0] + s + a_strides[0];"
    r = report(source, [mx.arange(8, dtype=mx.float32), 2.0], (8,), (8, 1, 1), (8, 1, 1),
               names=("a", "s"))
    assert r.max_per_thread()["global_reads"] == 0


def test_traffic_compares_bytes_moved_with_touching_each_buffer_once():
    source = """
    uint i = thread_position_in_grid.x;
    float total = 0;
    for (uint k = 0; k < 4; ++k) total += a[(i + k) % 64];
    out[i] = total;
    """
    r = report(source, [mx.arange(64, dtype=mx.float32)], (64,), (64, 1, 1), (64, 1, 1))
    traffic = {t.name: t for t in r.traffic}
    assert traffic["a"].bytes_read == 64 * 4 * 4 and traffic["a"].ideal_bytes == 64 * 4
    assert traffic["out"].bytes_written == 64 * 4 == traffic["out"].ideal_bytes
    assert r.bytes_moved == 5 * 64 * 4 and r.ideal_bytes == 2 * 64 * 4


def test_vector_loads_move_their_full_width_in_one_read():
    source = """
    uint i = thread_position_in_grid.x;
    float4 v = ((const device float4*)a)[i];
    out[i] = v.x + v.w;
    """
    r = report(source, [mx.arange(32, dtype=mx.float32)], (8,), (8, 1, 1), (8, 1, 1))
    assert r.max_per_thread()["global_reads"] == 1
    assert {t.name: t.bytes_read for t in r.traffic}["a"] == 32 * 4


def test_simd_group_efficiency_drops_with_divergence_and_partial_groups():
    uniform = report("out[thread_position_in_grid.x] = 1;", [mx.arange(64)], (64,),
                     (64, 1, 1), (64, 1, 1))
    assert uniform.simd_efficiency == 1.0
    divergent = report("uint i = thread_position_in_grid.x;\n"
                       "if (i % 2 == 0) { out[i] = 1; } else { out[i] = 2; }",
                       [mx.arange(64)], (64,), (64, 1, 1), (64, 1, 1))
    assert 0.5 < divergent.simd_efficiency < 1.0
    partial = report("out[thread_position_in_grid.x] = 1;", [mx.arange(64)], (16,),
                     (16, 1, 1), (16, 1, 1))
    assert partial.simd_efficiency == 0.5


def test_summary_names_the_counts_and_traffic():
    r = report("uint i = thread_position_in_grid.x;\nout[i] = a[i];",
               [mx.arange(8, dtype=mx.float32)], (8,), (8, 1, 1), (8, 1, 1))
    text = r.summary()
    assert "global reads" in text and "traffic total: 64 bytes, 1.00x ideal" in text


def test_offset_view_is_bound_at_its_offset():
    base = mx.arange(16, dtype=mx.float32)
    r_kernel = metalsim.metal_kernel("k", ["a"], ["out"],
                                     "uint i = thread_position_in_grid.x;\nout[i] = a[i];")
    run = metalsim.simulate(r_kernel, inputs=[base[4:12]], output_shapes=[(8,)],
                            output_dtypes=[mx.float32], grid=(8, 1, 1), threadgroup=(8, 1, 1))
    np.testing.assert_array_equal(np.array(run.outputs[0]), np.arange(4, 12))


def test_output_elements_no_thread_wrote_are_listed_even_when_zero_filled():
    kernel = metalsim.metal_kernel("k", ["a"], ["out"],
                                   "uint i = thread_position_in_grid.x;\n"
                                   "if (i % 3 == 0) out[i] = a[i];\n")
    for init_value in (None, 0):
        run = metalsim.simulate(kernel, inputs=[mx.arange(8)], output_shapes=[(8,)],
                                output_dtypes=[mx.float32], grid=(8, 1, 1),
                                threadgroup=(8, 1, 1), init_value=init_value)
        assert run.report.unwritten["out"].tolist() == [1, 2, 4, 5, 7]


def test_simd_launch_bound_is_the_threads_over_the_lanes_of_their_simd_groups():
    small = report("out[thread_position_in_grid.x] = a[thread_position_in_grid.x];",
                   [mx.ones(9)], (9,), (9, 1, 1), (3, 1, 1))
    assert small.simd_launch_bound == 9 / (3 * 32)   # three threadgroups of 3 threads
    tiles = report("out[0] = 1.0f;", [mx.ones(1)], (1,), (9, 9, 1), (3, 3, 1))
    assert tiles.simd_launch_bound == 81 / (9 * 32)
    partial = report("out[0] = 1.0f;", [mx.ones(1)], (1,), (1000, 1, 1), (256, 1, 1))
    assert partial.simd_launch_bound == 1000 / 1024   # the last threadgroup has 232 threads
    assert small.simd_efficiency <= small.simd_launch_bound
