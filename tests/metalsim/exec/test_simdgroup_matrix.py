"""simdgroup_matrix: construction, load/store (with transpose), multiply(-accumulate), the
lane layout of thread_elements(), and a tiled matmul with several SIMD-groups per threadgroup."""

import mlx.core as mx
import numpy as np
import pytest

import metalsim


def run(source, inputs, names, out_shape, grid, tg, dtype=mx.float32, header=""):
    kernel = metalsim.metal_kernel("k", names, ["out"], source, header=header)
    r = metalsim.simulate(kernel, inputs=inputs, output_shapes=[out_shape],
                          output_dtypes=[dtype], grid=grid, threadgroup=tg)
    return r


def rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_multiply_accumulate_of_8x8_matrices_equals_numpy():
    source = """
    simdgroup_float8x8 ma, mb, mc;
    simdgroup_load(ma, a);
    simdgroup_load(mb, b);
    simdgroup_load(mc, c);
    simdgroup_float8x8 md;
    simdgroup_multiply_accumulate(md, ma, mb, mc);
    simdgroup_store(md, out);
    """
    a, b, c = rand((8, 8), 0), rand((8, 8), 1), rand((8, 8), 2)
    r = run(source, [mx.array(a), mx.array(b), mx.array(c)], ["a", "b", "c"], (8, 8),
            (32, 1, 1), (32, 1, 1))
    assert r.report.diagnostics == []
    np.testing.assert_allclose(np.array(r.outputs[0]), a @ b + c, rtol=1e-5, atol=1e-5)


def test_transposed_load_with_stride_and_origin():
    source = """
    simdgroup_float8x8 m;
    simdgroup_load(m, a, 16, ulong2(8, 0), true);
    simdgroup_store(m, out, 8);
    """
    a = rand((8, 16), 3)
    r = run(source, [mx.array(a)], ["a"], (8, 8), (32, 1, 1), (32, 1, 1))
    assert r.report.diagnostics == []
    np.testing.assert_array_equal(np.array(r.outputs[0]), a[:, 8:].T)


def test_thread_elements_follow_the_documented_lane_layout():
    source = """
    simdgroup_float8x8 m = simdgroup_float8x8(0.0f);
    uint lane = thread_index_in_simdgroup;
    m.thread_elements()[0] = lane * 2;
    m.thread_elements()[1] = lane * 2 + 1;
    simdgroup_store(m, out);
    """
    r = run(source, [mx.arange(8)], ["a"], (8, 8), (32, 1, 1), (32, 1, 1))
    out = np.array(r.outputs[0])
    lane = np.arange(32)
    q = lane // 4
    row, col = (q & 4) + (lane // 2) % 4, (q & 2) * 2 + (lane % 2) * 2
    assert (out[row, col] == lane * 2).all() and (out[row, col + 1] == lane * 2 + 1).all()



def test_a_conditional_picks_a_whole_matrix_as_an_operand():
    source = """
    simdgroup_float8x8 ma, mb, acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    simdgroup_load(ma, a);
    simdgroup_load(mb, a + 64);
    for (int i = 0; i < 2; ++i) {
        simdgroup_multiply_accumulate(acc, i == 0 ? ma : mb, mb, acc);
    }
    simdgroup_store(acc, out);
    """
    a = np.random.default_rng(4).integers(-4, 5, (2, 8, 8)).astype(np.float32)
    r = run(source, [mx.array(a)], ["a"], (8, 8), (32, 1, 1), (32, 1, 1))
    assert r.report.diagnostics == []
    np.testing.assert_array_equal(np.array(r.outputs[0]), a[0] @ a[1] + a[1] @ a[1])


def test_a_lane_dependent_conditional_copies_each_lanes_own_elements():
    # C++ copies the selected object on each thread: lanes below 16 hold ma's elements.
    source = """
    simdgroup_float8x8 ma, mb;
    simdgroup_load(ma, a);
    simdgroup_load(mb, a + 64);
    simdgroup_float8x8 m = thread_index_in_simdgroup < 16 ? ma : mb;
    simdgroup_store(m, out);
    """
    a = rand((2, 8, 8), 5)
    r = run(source, [mx.array(a)], ["a"], (8, 8), (32, 1, 1), (32, 1, 1))
    out = np.array(r.outputs[0])
    lane = np.arange(32)
    q = lane // 4
    row, col = (q & 4) + (lane // 2) % 4, (q & 2) * 2 + (lane % 2) * 2
    source_matrix = np.where(lane < 16, 0, 1)
    for k in (0, 1):
        np.testing.assert_array_equal(out[row, col + k], a[source_matrix, row, col + k])


def test_diagonal_constructor_and_filled_matrix():
    source = """
    simdgroup_float8x8 eye = simdgroup_float8x8(1.0f);
    simdgroup_float8x8 twos = make_filled_simdgroup_matrix<float, 8, 8>(2.0f);
    simdgroup_float8x8 prod;
    simdgroup_multiply(prod, eye, twos);
    simdgroup_store(prod * eye, out);
    """
    r = run(source, [mx.arange(8)], ["a"], (8, 8), (32, 1, 1), (32, 1, 1))
    np.testing.assert_array_equal(np.array(r.outputs[0]), np.full((8, 8), 2.0))


MATMUL = """
// 64x64 output tiles of 32x32 per threadgroup, 4 SIMD-groups each computing 16x16 (2x2 tiles),
// K staged through threadgroup memory 8 columns at a time.
threadgroup float As[32][8];
threadgroup float Bs[8][32];
uint n = a_shape[0];
uint sg = simdgroup_index_in_threadgroup;
uint tid = thread_index_in_threadgroup;
uint row0 = threadgroup_position_in_grid.y * 32, col0 = threadgroup_position_in_grid.x * 32;
uint sr = (sg / 2) * 16, sc = (sg % 2) * 16;
simdgroup_float8x8 acc[2][2];
for (int i = 0; i < 2; ++i) for (int j = 0; j < 2; ++j) acc[i][j] = simdgroup_float8x8(0.0f);
for (uint k0 = 0; k0 < n; k0 += 8) {
    for (uint e = tid; e < 256; e += 128) {
        As[e / 8][e % 8] = a[(row0 + e / 8) * n + k0 + e % 8];
        Bs[e / 32][e % 32] = b[(k0 + e / 32) * n + col0 + e % 32];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int i = 0; i < 2; ++i) {
        simdgroup_float8x8 ta;
        simdgroup_load(ta, &As[sr + 8 * i][0], 8);
        for (int j = 0; j < 2; ++j) {
            simdgroup_float8x8 tb;
            simdgroup_load(tb, &Bs[0][sc + 8 * j], 32);
            simdgroup_multiply_accumulate(acc[i][j], ta, tb, acc[i][j]);
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
for (int i = 0; i < 2; ++i) for (int j = 0; j < 2; ++j)
    simdgroup_store(acc[i][j], out, n, ulong2(col0 + sc + 8 * j, row0 + sr + 8 * i));
"""


def test_tiled_64x64_matmul_with_several_simdgroups_equals_numpy():
    a, b = rand((64, 64), 4), rand((64, 64), 5)
    r = run(MATMUL, [mx.array(a), mx.array(b)], ["a", "b"], (64, 64), (256, 2, 1), (128, 1, 1))
    assert r.report.diagnostics == []
    np.testing.assert_allclose(np.array(r.outputs[0]), a @ b, rtol=1e-4, atol=1e-4)


def test_half_matrices_round_to_half():
    source = """
    simdgroup_half8x8 ma, mb, md;
    simdgroup_load(ma, a);
    simdgroup_load(mb, b);
    simdgroup_multiply(md, ma, mb);
    simdgroup_store(md, out);
    """
    a, b = rand((8, 8), 6).astype(np.float16), rand((8, 8), 7).astype(np.float16)
    r = run(source, [mx.array(a), mx.array(b)], ["a", "b"], (8, 8), (32, 1, 1), (32, 1, 1),
            dtype=mx.float16)
    expected = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(np.array(r.outputs[0]).astype(np.float32),
                               expected.astype(np.float32), rtol=2e-3, atol=2e-3)


def test_matrix_operation_in_divergent_code_is_reported():
    source = """
    simdgroup_float8x8 m = simdgroup_float8x8(1.0f);
    if (thread_index_in_simdgroup < 16) simdgroup_store(m, out);
    """
    r = run(source, [mx.arange(8)], ["a"], (8, 8), (32, 1, 1), (32, 1, 1))
    assert [d.kind for d in r.report.errors] == ["divergent-simdgroup"]


def test_matrix_operation_in_a_partial_simdgroup_is_reported():
    r = run("simdgroup_float8x8 m = simdgroup_float8x8(1.0f);\nsimdgroup_store(m, out);",
            [mx.arange(8)], ["a"], (8, 8), (24, 1, 1), (24, 1, 1))
    assert [d.kind for d in r.report.errors] == ["divergent-simdgroup"]


@pytest.mark.parametrize(("source", "message"), [
    ("simdgroup_float8x8 m; simdgroup_load(m, a_shape);", "pointer to 'float'"),
    ("simdgroup_float8x8 m = simdgroup_float8x8(1.0f); simdgroup_half8x8 h; "
     "simdgroup_multiply(h, m, m);", "element types differ"),
    ("simdgroup_float8x8 m = simdgroup_float8x8(1.0f); out[0] = m;", "convert"),
    ("simdgroup_float8x8 m = simdgroup_float8x8(1.0f); simdgroup_half8x8 h; "
     "simdgroup_float8x8 p = a[0] > 0 ? m : h;", "incompatible operand types"),
    ("simdgroup_float8x8 m = simdgroup_float8x8(1.0f); float x = a[0] > 0 ? m : 1.0f;",
     "incompatible operand types"),
])
def test_invalid_simdgroup_matrix_uses_are_compile_errors(source, message):
    with pytest.raises(metalsim.CompileError, match=message):
        run(source, [mx.arange(64, dtype=mx.float32)], ["a"], (8, 8), (32, 1, 1), (32, 1, 1))


def test_a_tile_load_out_of_bounds_gets_a_hint_about_the_tile_origin():
    source = """
simdgroup_float8x8 m;
simdgroup_load(m, a, 8, ulong2(0, 4));   // rows 4..11 of an 8x8 matrix
simdgroup_store(m, out, 8);
"""
    r = run(source, [mx.array(rand((8, 8), 0))], ["a"], (8, 8), (32, 1, 1), (32, 1, 1))
    [d] = [d for d in r.report.errors if d.kind == "out-of-bounds"]
    assert "whole 8x8 tile" in d.hint and "if (i < n)" not in d.hint
