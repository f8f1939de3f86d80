"""The 14 Metal-Puzzles puzzles, solved, give their spec's outputs and budgets in the simulator.

Launch sizes and inputs are the ones of the original puzzle set; the specs are plain numpy.
"""

import mlx.core as mx
import numpy as np
import pytest

import metalsim


def run(name, inputs, input_names, out_shape, grid, threadgroup, source, header=""):
    kernel = metalsim.metal_kernel(name, input_names, ["out"], source, header=header)
    result = metalsim.simulate(kernel, inputs=inputs, output_shapes=[out_shape],
                               output_dtypes=[mx.float32], grid=grid, threadgroup=threadgroup)
    assert result.report.errors == [], result.report.summary()
    return np.array(result.outputs[0]), result.report.max_per_thread()


def test_map_adds_ten():
    out, counts = run("map", [mx.arange(4)], ["a"], (4,), (4, 1, 1), (1, 1, 1),
                      "uint i = thread_position_in_grid.x;\nout[i] = a[i] + 10;")
    np.testing.assert_array_equal(out, [10, 11, 12, 13])
    assert (counts["global_reads"], counts["global_writes"]) == (1, 1)


def test_zip_adds_two_inputs():
    out, counts = run("zip", [mx.arange(4), mx.arange(4)], ["a", "b"], (4,), (4, 1, 1),
                      (1, 1, 1), "uint i = thread_position_in_grid.x;\nout[i] = a[i] + b[i];")
    np.testing.assert_array_equal(out, [0, 2, 4, 6])
    assert counts["global_reads"] == 2


def test_guard_skips_threads_beyond_the_data():
    src = "uint i = thread_position_in_grid.x;\nif (i < a_shape[0]) out[i] = a[i] + 10;"
    out, _ = run("guard", [mx.arange(4)], ["a"], (4,), (8, 1, 1), (1, 1, 1), src)
    np.testing.assert_array_equal(out, [10, 11, 12, 13])


def test_map_2d_with_extra_threads():
    src = """
    uint x = thread_position_in_grid.x, y = thread_position_in_grid.y;
    uint n = a_shape[0];
    if (x < n && y < n) { out[y * n + x] = a[y * n + x] + 10; }
    """
    out, _ = run("map_2D", [mx.arange(4).reshape(2, 2)], ["a"], (2, 2), (3, 3, 1), (1, 1, 1),
                 src)
    np.testing.assert_array_equal(out, [[10, 11], [12, 13]])


def test_broadcast_adds_column_and_row():
    src = """
    uint x = thread_position_in_grid.x, y = thread_position_in_grid.y;
    if (x < b_shape[1] && y < a_shape[0]) { out[y * b_shape[1] + x] = a[y] + b[x]; }
    """
    a, b = mx.arange(2).reshape(2, 1), mx.arange(2).reshape(1, 2)
    out, counts = run("broadcast", [a, b], ["a", "b"], (2, 2), (3, 3, 1), (1, 1, 1), src)
    np.testing.assert_array_equal(out, [[0, 1], [1, 2]])
    assert counts["global_reads"] == 2


def test_threadgroups_cover_the_array():
    src = """
    uint i = threadgroup_position_in_grid.x * threads_per_threadgroup.x
             + thread_position_in_threadgroup.x;
    if (i < a_shape[0]) out[i] = a[i] + 10;
    """
    out, _ = run("threadgroups", [mx.arange(9)], ["a"], (9,), (12, 1, 1), (4, 1, 1), src)
    np.testing.assert_array_equal(out, np.arange(9) + 10)


def test_threadgroups_2d():
    src = """
    uint i = threadgroup_position_in_grid.x * threads_per_threadgroup.x
             + thread_position_in_threadgroup.x;
    uint j = threadgroup_position_in_grid.y * threads_per_threadgroup.y
             + thread_position_in_threadgroup.y;
    uint n = a_shape[0];
    if (i < n && j < n) out[j * n + i] = a[j * n + i] + 10;
    """
    out, _ = run("threadgroups_2D", [mx.ones((5, 5))], ["a"], (5, 5), (6, 6, 1), (3, 3, 1), src)
    np.testing.assert_array_equal(out, np.full((5, 5), 11))


SHARED = """
threadgroup float shared[THREADGROUP_MEM_SIZE];
uint i = threadgroup_position_in_grid.x * threads_per_threadgroup.x
         + thread_position_in_threadgroup.x;
uint local_i = thread_position_in_threadgroup.x;
"""


def test_threadgroup_memory_map():
    src = SHARED + """
    if (i < a_shape[0]) {
        shared[local_i] = a[i];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (i < a_shape[0]) out[i] = shared[local_i] + 10;
    """
    out, counts = run("threadgroup_memory", [mx.ones(8)], ["a"], (8,), (8, 1, 1), (4, 1, 1),
                      src, "constant uint THREADGROUP_MEM_SIZE = 4;\n")
    np.testing.assert_array_equal(out, np.full(8, 11))
    assert counts == {"global_reads": 1, "global_writes": 1, "threadgroup_reads": 1,
                      "threadgroup_writes": 1, "atomics": 0, "barriers": 1}


def test_pooling_sums_last_three():
    src = SHARED + """
    if (i < a_shape[0]) shared[local_i] = a[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (i < a_shape[0]) {
        float total = shared[local_i];
        if (local_i >= 1) total += shared[local_i - 1];
        if (local_i >= 2) total += shared[local_i - 2];
        out[i] = total;
    }
    """
    out, counts = run("pooling", [mx.arange(8)], ["a"], (8,), (8, 1, 1), (8, 1, 1), src,
                      "constant uint THREADGROUP_MEM_SIZE = 8;\n")
    np.testing.assert_array_equal(out, [0, 1, 3, 6, 9, 12, 15, 18])
    assert counts["threadgroup_reads"] == 3 and counts["global_reads"] == 1


def test_dot_product_in_one_threadgroup():
    src = SHARED + """
    shared[local_i] = a[i] * b[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (local_i == 0) {
        float total = 0;
        for (uint k = 0; k < a_shape[0]; k++) total += shared[k];
        out[0] = total;
    }
    """
    a = mx.arange(8, dtype=mx.float32)
    out, counts = run("dot_product", [a, a], ["a", "b"], (1,), (8, 1, 1), (8, 1, 1), src,
                      "constant uint THREADGROUP_MEM_SIZE = 8;\n")
    np.testing.assert_array_equal(out, [140])
    assert counts["global_reads"] == 2 and counts["global_writes"] == 1


CONV = """
threadgroup float a_tile[THREADGROUP_MAX_CONV_SIZE];
threadgroup float b_tile[MAX_CONV];
uint i = threadgroup_position_in_grid.x * threads_per_threadgroup.x
         + thread_position_in_threadgroup.x;
uint local_i = thread_position_in_threadgroup.x;
uint n = a_shape[0], k = b_shape[0];
uint tile = threads_per_threadgroup.x;
if (i < n) a_tile[local_i] = a[i];
else if (local_i < tile) a_tile[local_i] = 0;
if (local_i < k - 1) {
    uint halo = threadgroup_position_in_grid.x * tile + tile + local_i;
    a_tile[tile + local_i] = halo < n ? a[halo] : 0;
} else if (local_i - (k - 1) < k) {
    b_tile[local_i - (k - 1)] = b[local_i - (k - 1)];
}
threadgroup_barrier(mem_flags::mem_threadgroup);
if (i < n) {
    float total = 0;
    for (uint j = 0; j < k; j++) total += a_tile[local_i + j] * b_tile[j];
    out[i] = total;
}
"""
CONV_HEADER = "constant uint THREADGROUP_MAX_CONV_SIZE = 12;\nconstant uint MAX_CONV = 4;\n"


@pytest.mark.parametrize(("size", "k", "grid", "expected"), [
    (6, 3, 8, [5, 8, 11, 14, 5, 0]),
    (15, 4, 16, [14, 20, 26, 32, 38, 44, 50, 56, 62, 68, 74, 80, 41, 14, 0]),
])
def test_1d_convolution_with_halo(size, k, grid, expected):
    a, b = mx.arange(size, dtype=mx.float32), mx.arange(k, dtype=mx.float32)
    out, counts = run("conv", [a, b], ["a", "b"], (size,), (grid, 1, 1), (8, 1, 1), CONV,
                      CONV_HEADER)
    np.testing.assert_array_equal(out, expected)
    assert counts["global_reads"] <= 2 and counts["global_writes"] == 1


PREFIX = """
threadgroup float cache[THREADGROUP_MEM_SIZE];
uint i = threadgroup_position_in_grid.x * threads_per_threadgroup.x
         + thread_position_in_threadgroup.x;
uint local_i = thread_position_in_threadgroup.x;
cache[local_i] = i < a_shape[0] ? a[i] : 0;
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint stride = 1; stride < THREADGROUP_MEM_SIZE; stride *= 2) {
    float partner = 0;
    if (local_i % (2 * stride) == 0) partner = cache[local_i + stride];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (local_i % (2 * stride) == 0) cache[local_i] += partner;
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (local_i == 0) out[threadgroup_position_in_grid.x] = cache[0];
"""


@pytest.mark.parametrize(("size", "grid", "expected"), [(8, 8, [28]), (15, 16, [28, 77])])
def test_prefix_sum_per_threadgroup(size, grid, expected):
    out, counts = run("prefix_sum", [mx.arange(size)], ["a"], (len(expected),), (grid, 1, 1),
                      (8, 1, 1), PREFIX, "constant uint THREADGROUP_MEM_SIZE = 8;\n")
    np.testing.assert_array_equal(out, expected)
    assert counts["global_reads"] == 1 and counts["global_writes"] == 1


def test_axis_sum_one_threadgroup_per_row():
    src = """
    threadgroup float cache[THREADGROUP_MEM_SIZE];
    uint local_i = thread_position_in_threadgroup.x;
    uint batch = threadgroup_position_in_grid.y;
    uint n = a_shape[1];
    cache[local_i] = local_i < n ? a[batch * n + local_i] : 0;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint stride = THREADGROUP_MEM_SIZE / 2; stride > 0; stride /= 2) {
        if (local_i < stride) cache[local_i] += cache[local_i + stride];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (local_i == 0) out[batch] = cache[0];
    """
    a = mx.arange(24).reshape(4, 6)
    out, _ = run("axis_sum", [a], ["a"], (4, 1), (8, 4, 1), (8, 1, 1), src,
                 "constant uint THREADGROUP_MEM_SIZE = 8;\n")
    np.testing.assert_array_equal(out, [[15], [51], [87], [123]])


MATMUL = """
threadgroup float a_shared[THREADGROUP_MEM_SIZE][THREADGROUP_MEM_SIZE];
threadgroup float b_shared[THREADGROUP_MEM_SIZE][THREADGROUP_MEM_SIZE];
uint i = threadgroup_position_in_grid.x * threads_per_threadgroup.x
         + thread_position_in_threadgroup.x;
uint j = threadgroup_position_in_grid.y * threads_per_threadgroup.y
         + thread_position_in_threadgroup.y;
uint local_i = thread_position_in_threadgroup.x;
uint local_j = thread_position_in_threadgroup.y;
uint n = a_shape[0];
float acc = 0;
for (uint t = 0; t < n; t += THREADGROUP_MEM_SIZE) {
    a_shared[local_j][local_i] = (j < n && t + local_i < n) ? a[j * n + t + local_i] : 0;
    b_shared[local_j][local_i] = (i < n && t + local_j < n) ? b[(t + local_j) * n + i] : 0;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint k = 0; k < THREADGROUP_MEM_SIZE; k++)
        acc += a_shared[local_j][k] * b_shared[k][local_i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (i < n && j < n) out[j * n + i] = acc;
"""


@pytest.mark.parametrize(("size", "grid"), [(2, 3), (8, 9)])
def test_tiled_matmul(size, grid):
    a = mx.arange(size * size, dtype=mx.float32).reshape(size, size)
    b = a.T
    out, counts = run("matmul", [a, b], ["a", "b"], (size, size), (grid, grid, 1), (3, 3, 1),
                      MATMUL, "constant uint THREADGROUP_MEM_SIZE = 3;\n")
    np.testing.assert_array_equal(out, np.array(a) @ np.array(b))
    assert counts["global_reads"] <= (2 if size == 2 else 6)
