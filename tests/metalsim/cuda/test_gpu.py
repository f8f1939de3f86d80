"""The CUDA back end on a real NVIDIA GPU against the simulator, feature by feature.

These run only where CuPy sees an NVIDIA GPU (the device machine, a workstation, Colab): CI has
none, and `test_translate.py` covers what needs no GPU. Each kernel exercises one part of the
translation and the prelude; the GPU's outputs must equal the simulator's bit for bit (floats
too, unless stated), so a semantic slip in the prelude shows up here.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

import metalsim
import metalsim.cuda
from puzzles.catalog import find
from puzzles.checking import check_kernel

pytestmark = pytest.mark.skipif(not metalsim.cuda.gpu_available(),
                                reason="needs CuPy and an NVIDIA GPU")


def both(source: str, inputs: list, out_shapes: list, out_dtypes: list, grid, threadgroup,
         header: str = "", atomic_outputs: bool = False, init_value=None,
         template=None) -> tuple[list[np.ndarray], list[np.ndarray]]:
    names = [f"in{i}" for i in range(len(inputs))]
    outs = [f"out{i}" for i in range(len(out_shapes))]
    kernel = metalsim.metal_kernel("t", names, outs, source, header=header,
                                   atomic_outputs=atomic_outputs)
    call = dict(inputs=inputs, output_shapes=out_shapes, output_dtypes=out_dtypes, grid=grid,
                threadgroup=threadgroup, init_value=init_value, template=template)
    run = metalsim.simulate(kernel, **call)
    assert not run.report.errors, run.report.errors
    gpu = metalsim.cuda.run_on_gpu(kernel, **call)

    def host(arrays):
        return [np.array(a.astype(mx.float32)) if a.dtype == mx.bfloat16 else np.array(a)
                for a in arrays]
    return host(run.outputs), host(gpu)


def assert_same(sim: list[np.ndarray], gpu: list[np.ndarray]) -> None:
    for s, g in zip(sim, gpu):
        np.testing.assert_array_equal(s, g)


ATTRIBUTES = """
    uint k = thread_position_in_grid.x + threads_per_grid.x * (thread_position_in_grid.y
             + threads_per_grid.y * thread_position_in_grid.z);
    uint3 v[6] = {thread_position_in_grid, thread_position_in_threadgroup,
                  threadgroup_position_in_grid, threads_per_threadgroup,
                  threadgroups_per_grid, dispatch_threads_per_threadgroup};
    for (int j = 0; j < 6; ++j) { out0[k * 18 + 3 * j] = v[j].x; out0[k * 18 + 3 * j + 1] = v[j].y;
                                  out0[k * 18 + 3 * j + 2] = v[j].z; }
    out1[k * 6 + 0] = thread_index_in_threadgroup;
    out1[k * 6 + 1] = thread_index_in_simdgroup;
    out1[k * 6 + 2] = simdgroup_index_in_threadgroup;
    out1[k * 6 + 3] = simdgroups_per_threadgroup;
    out1[k * 6 + 4] = thread_index_in_quadgroup;
    out1[k * 6 + 5] = quadgroups_per_threadgroup;
"""


@pytest.mark.parametrize(("grid", "tg"), [((70, 1, 1), (32, 1, 1)), ((13, 7, 1), (8, 4, 1)),
                                          ((5, 6, 7), (4, 4, 2)), ((100, 3, 2), (64, 2, 2))])
def test_every_thread_attribute_matches_mlx_dispatch_in_partial_threadgroups(grid, tg):
    n = grid[0] * grid[1] * grid[2]
    assert_same(*both(ATTRIBUTES, [mx.zeros(1)], [(n * 18,), (n * 6,)],
                      [mx.uint32, mx.uint32], grid, tg))


def test_a_grid_of_more_than_65535_threadgroups_in_y_runs_every_thread():
    sim, gpu = both("out0[thread_position_in_grid.y] = thread_position_in_grid.y * 2 + 1;",
                    [mx.zeros(1)], [(70000,)], [mx.uint32], (1, 70000, 1), (1, 1, 1))
    assert_same(sim, gpu)


def test_half_and_bfloat_arithmetic_rounds_like_metal():
    rng = np.random.default_rng(0)
    a = mx.array(rng.standard_normal(256).astype(np.float32) * 300)
    b = mx.array(rng.standard_normal(256).astype(np.float32))
    source = """
        uint i = thread_position_in_grid.x;
        half h = in0[i], g = in1[i];
        bfloat p = bfloat(in0[i]), q = bfloat(in1[i]);  // float converts to bfloat only explicitly
        out0[i] = h * g + h / (g + 2.0h) - half(i) * 0.1h;
        out1[i] = p * q + p / (q + 2.0bf) - bfloat(i);
        out2[i] = float(h) * 3 + float(p);
        out3[i] = ushort(h) + short(p) + int(in0[i] * 1000.0f);
    """
    assert_same(*both(source, [a, b], [(256,)] * 4,
                      [mx.float16, mx.bfloat16, mx.float32, mx.int32], (256, 1, 1), (64, 1, 1)))


def test_integers_convert_to_bfloat_in_one_rounding():
    # 2^24 + 2^16 + 1 is 16908288 rounded once; through float first it would be 16777216.
    values = [16842753, -16842753, 2 ** 31 - 1, -2 ** 31, 16777217, 255, 257, 0]
    x = mx.array(values * 8, dtype=mx.int32)
    source = """
        uint i = thread_position_in_grid.x;
        out0[i] = float(bfloat(in0[i]));
        out1[i] = float(bfloat(uint(in0[i])));
    """
    sim, gpu = both(source, [x], [(64,), (64,)], [mx.float32, mx.float32], (64, 1, 1),
                    (32, 1, 1))
    assert_same(sim, gpu)
    assert gpu[0].tolist()[0] == 16908288.0


def test_denormal_inputs_and_literals_are_not_flushed_to_zero():
    x = mx.array(np.array([1e-40, -1e-45, 1e-38, 0.0], np.float32))
    source = """
        uint i = thread_position_in_grid.x;
        out0[i] = in0[i] * 1e6f + 1e-40f / 3.0f;
        out1[i] = in0[i] ? 1 : 0;
    """
    sim, gpu = both(source, [x], [(4,), (4,)], [mx.float32, mx.int32], (4, 1, 1), (4, 1, 1))
    assert_same(sim, gpu)
    assert gpu[1].tolist() == [1, 1, 1, 0]


def test_vectors_swizzles_and_packed_vectors():
    x = mx.array(np.arange(64, dtype=np.float32))
    source = """
        uint i = thread_position_in_grid.x;
        float4 v = float4(in0[i], 1.0f, float2(2.0f, in0[i] * 0.5f));
        v.zyx = v.xyz + 1.0f;
        v.yw += float2(3.0f, 4.0f);
        packed_float3 p = packed_float3(v.xyz);
        int3 n = int3(v.wzy) / 2 - int3(1);
        ushort2 s = ushort2(65535, 1) + ushort2(1, 1);
        out0[i] = dot(v, float4(1.0f)) + length(float3(p)) + v[2] + float(n.x + n.y + n.z)
                  + float(s.x + s.y);
        out1[i] = as_type<uint>(v.w) ^ uint(sizeof(float3) + sizeof(packed_float3));
    """
    assert_same(*both(source, [x], [(64,), (64,)], [mx.float32, mx.uint32], (64, 1, 1),
                      (32, 1, 1)))



@pytest.mark.parametrize("dtype", [mx.float32, mx.float16])
def test_packed_vectors_read_from_memory_at_every_alignment(dtype):
    """A packed 4-vector converted where it lies is one 16-byte (8-byte) load when its address
    is aligned and element by element when not: both give the elements, from device and
    threadgroup memory, and from an input that starts one element into its buffer."""
    base = mx.array(np.arange(1, 70, dtype=np.float32)).astype(dtype)
    source = """
        uint i = thread_position_in_grid.x;
        threadgroup float tile[72];
        tile[i] = float(in0[i]);
        tile[i + 32] = float(in0[i + 32]);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        float4 d = float4(*reinterpret_cast<const device packed_vec<T, 4>*>(in0 + i));
        float4 t = float4(*reinterpret_cast<threadgroup packed_float4*>(tile + i));
        out0[i] = d.x + 10.0f * d.y + 100.0f * d.z + 1000.0f * d.w;
        out1[i] = t.x + 10.0f * t.y + 100.0f * t.z + 1000.0f * t.w;
    """
    for x in (base, base[1:]):
        assert_same(*both(source, [x], [(32,), (32,)], [mx.float32, mx.float32], (32, 1, 1),
                          (32, 1, 1), template=[("T", dtype)]))


SIMD = """
    uint i = thread_position_in_grid.x;
    uint lane = thread_index_in_simdgroup;
    float x = in0[i];
    int k = int(i) * 7 % 13;
    out0[i * 8 + 0] = simd_sum(x);
    out0[i * 8 + 1] = simd_prefix_exclusive_sum(x);
    out0[i * 8 + 2] = simd_max(x);
    out0[i * 8 + 3] = simd_shuffle_down(x, 3u);
    out0[i * 8 + 4] = simd_broadcast(x, 5u);
    out0[i * 8 + 5] = quad_sum(x);
    out0[i * 8 + 6] = simd_shuffle_xor(x, 1u);
    out0[i * 8 + 7] = float(simd_ballot(x > 0.0f) & 0xffffffffu);
    out1[i * 2] = simd_sum(k);
    if (lane % 3 != 0) {
        out1[i * 2 + 1] = simd_sum(k) + simd_prefix_inclusive_sum(k) * 100;  // inactive lanes
    } else {
        out1[i * 2 + 1] = simd_product(k % 3 + 1) + int(simd_is_first());
    }
"""


@pytest.mark.parametrize("threads", [64, 56, 20])
def test_simd_and_quad_functions_over_the_active_lanes_including_short_simdgroups(threads):
    x = mx.array(np.random.default_rng(1).standard_normal(threads).astype(np.float32))
    assert_same(*both(SIMD, [x], [(threads * 8,), (threads * 2,)], [mx.float32, mx.int32],
                      (threads, 1, 1), (threads, 1, 1)))


def test_device_and_threadgroup_atomics_give_the_simulators_counts():
    idx = mx.array(np.random.default_rng(2).integers(0, 10, 1000).astype(np.int32))
    source = """
        uint i = thread_position_in_grid.x;
        threadgroup atomic_int local[10];
        uint t = thread_index_in_threadgroup;
        if (t < 10) atomic_store_explicit(&local[t], 0, memory_order_relaxed);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (i < 1000) {
            atomic_fetch_add_explicit(&out0[in0[i]], 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&local[in0[i]], 1, memory_order_relaxed);
            atomic_fetch_max_explicit(&out1[0], int(i) * 3 % 1001, memory_order_relaxed);
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (t < 10) {
            int n = atomic_load_explicit(&local[t], memory_order_relaxed);
            atomic_fetch_add_explicit(&out0[10 + t], n, memory_order_relaxed);
        }
    """
    assert_same(*both(source, [idx], [(20,), (1,)], [mx.int32, mx.int32], (1024, 1, 1),
                      (256, 1, 1), atomic_outputs=True, init_value=0))


def test_simdgroup_matrix_multiply_accumulate_with_metals_lane_layout():
    rng = np.random.default_rng(3)
    a = mx.array(rng.integers(-4, 5, (8, 8)).astype(np.float32))
    b = mx.array(rng.integers(-4, 5, (8, 8)).astype(np.float32))
    source = """
        simdgroup_float8x8 ma, mb, mc = make_filled_simdgroup_matrix<float, 8, 8>(1.0f);
        simdgroup_load(ma, in0, 8);
        simdgroup_load(mb, in1, 8, ulong2(0, 0), true);
        simdgroup_multiply_accumulate(mc, ma, mb, mc);
        simdgroup_store(mc, out0, 8);
        out1[thread_index_in_simdgroup * 2] = ma.thread_elements()[0];
        out1[thread_index_in_simdgroup * 2 + 1] = ma.thread_elements()[1];
    """
    sim, gpu = both(source, [a, b], [(64,), (64,)], [mx.float32, mx.float32], (32, 1, 1),
                    (32, 1, 1))
    assert_same(sim, gpu)   # small integers: every order of summation is exact
    np.testing.assert_array_equal(gpu[0].reshape(8, 8), np.array(a) @ np.array(b).T + 1)


def _small_integers(seed: int, *shape: int) -> mx.array:
    return mx.array(np.random.default_rng(seed).integers(-4, 5, shape).astype(np.float32))


def test_simdgroup_matrix_operands_reused_across_products_and_reloaded_in_a_loop():
    # One fragment feeding several products, as register-tiled kernels use them, and a
    # reload inside a loop whose trip count the compiler does not know.
    a, b = _small_integers(4, 3, 8, 8), _small_integers(5, 2, 8, 8)
    source = """
        simdgroup_float8x8 ma, mb[2], acc[2][2];
        for (int i = 0; i < 2; ++i) { for (int j = 0; j < 2; ++j) {
            acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f); } }
        simdgroup_load(mb[0], in1, 8);
        simdgroup_load(mb[1], in1 + 64, 8, ulong2(0, 0), true);
        for (int s = 0; s < int(in0_shape[0]); ++s) {
            simdgroup_load(ma, in0 + 64 * s, 8);
            for (int j = 0; j < 2; ++j) {
                simdgroup_multiply_accumulate(acc[0][j], ma, mb[j], acc[0][j]);
                simdgroup_multiply_accumulate(acc[1][j], mb[1], mb[j], acc[1][j]);
            }
        }
        for (int i = 0; i < 2; ++i) { for (int j = 0; j < 2; ++j) {
            simdgroup_store(acc[i][j], out0 + 64 * (2 * i + j), 8); } }
    """
    sim, gpu = both(source, [a, b], [(256,)], [mx.float32], (32, 1, 1), (32, 1, 1))
    assert_same(sim, gpu)
    an, bn = np.array(a), np.array(b)
    mb = [bn[0], bn[1].T]
    want = [sum(an[s] for s in range(3)) @ mb[0], sum(an[s] for s in range(3)) @ mb[1],
            3 * (mb[1] @ mb[0]), 3 * (mb[1] @ mb[1])]
    np.testing.assert_array_equal(gpu[0].reshape(4, 8, 8), np.stack(want))


def test_simdgroup_matrix_elements_written_by_some_lanes_between_products_are_used():
    # A lane writing its own elements (here under a branch) changes what the other lanes
    # fetch from it: the next product must see the new values, as in the simulator.
    a, b = _small_integers(6, 8, 8), _small_integers(7, 8, 8)
    source = """
        uint lane = thread_index_in_simdgroup;
        simdgroup_float8x8 ma, mb, c0, c1, c2;
        simdgroup_load(ma, in0, 8);
        simdgroup_load(mb, in1, 8);
        simdgroup_multiply(c0, ma, mb);
        if (lane % 5 == 1) {
            ma.thread_elements()[0] = float(lane);
            mb.thread_elements()[1] = -1.0f;
        }
        simdgroup_multiply(c1, ma, mb);
        simdgroup_multiply(ma, ma, mb);       // the result overwrites an operand
        simdgroup_multiply(c2, ma, mb);
        simdgroup_store(c0, out0, 8);
        simdgroup_store(c1, out0 + 64, 8);
        simdgroup_store(c2, out0 + 128, 8);
    """
    sim, gpu = both(source, [a, b], [(192,)], [mx.float32], (32, 1, 1), (32, 1, 1))
    assert_same(sim, gpu)
    assert not np.array_equal(gpu[0][:64], gpu[0][64:128])   # the writes changed the product


# Four chained products d = a_s b_s + d of random floats (s = 0..3, 8x8 each), stored; with
# SHOW_ELEMENTS the lanes also write what thread_elements() shows (the runtime then keeps the
# matrices in Metal's lane layout; without it, in the tensor cores' own).
CHAINED_PRODUCTS = """
    simdgroup_matrix<T, 8, 8> ma, mb, acc = make_filled_simdgroup_matrix<T, 8, 8>(0.5f);
    for (int s = 0; s < 4; ++s) {
        simdgroup_load(ma, in0 + 64 * s, 8);
        simdgroup_load(mb, in1 + 64 * s, 8, ulong2(0, 0), s % 2 == 1);
        simdgroup_multiply_accumulate(acc, ma, mb, acc);
    }
    simdgroup_store(acc, out0, 8);
"""
SHOW_ELEMENTS = """
    out1[thread_index_in_simdgroup * 2] = acc.thread_elements()[0];
    out1[thread_index_in_simdgroup * 2 + 1] = acc.thread_elements()[1];
"""


def _chained_products(dtype: mx.Dtype, elements: bool, seed: int = 11
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(GPU result, float64 reference, what thread_elements() gave) of CHAINED_PRODUCTS."""
    rng = np.random.default_rng(seed)
    a = mx.array(rng.standard_normal((4, 8, 8)).astype(np.float32)).astype(dtype)
    b = mx.array(rng.standard_normal((4, 8, 8)).astype(np.float32)).astype(dtype)
    kernel = metalsim.metal_kernel("chain", ["in0", "in1"], ["out0", "out1"],
                                   CHAINED_PRODUCTS + (SHOW_ELEMENTS if elements else ""))
    gpu = metalsim.cuda.run_on_gpu(
        kernel, inputs=[a, b], output_shapes=[(64,), (64,)], output_dtypes=[dtype, dtype],
        grid=(32, 1, 1), threadgroup=(32, 1, 1),
        template=[("T", dtype)], init_value=0)
    an, bn = (np.array(x.astype(mx.float32)).astype(np.float64) for x in (a, b))
    want = np.full((8, 8), 0.5)
    for s in range(4):
        want = an[s] @ (bn[s].T if s % 2 else bn[s]) + want
    got, shown = (np.array(x.astype(mx.float32)).astype(np.float64) for x in gpu)
    return got.reshape(8, 8), want, shown


@pytest.mark.parametrize("elements", [False, True])
def test_float_products_on_tensor_cores_keep_float32_accuracy(elements):
    # 3xTF32: TF32 alone (10-bit mantissas) would be off by about 1e-3.
    got, want, shown = _chained_products(mx.float32, elements)
    assert np.abs(got - want).max() / np.abs(want).max() < 2e-6
    if elements:   # lane L shows (r, c), (r, c + 1) of Metal's layout
        lanes = np.arange(32)
        rows, cols = (lanes // 16) * 4 + (lanes // 2) % 4, ((lanes // 8) % 2) * 4 + (lanes % 2) * 2
        np.testing.assert_array_equal(shown.reshape(32, 2), np.stack(
            [got[rows, cols], got[rows, cols + 1]], axis=1))


def test_exact_matrix_products_are_fused_multiply_adds_over_k_in_order():
    with metalsim.cuda.exact_matrix_products():
        got, _, _ = _chained_products(mx.float32, False)
    rng = np.random.default_rng(11)
    a = rng.standard_normal((4, 8, 8)).astype(np.float32)
    b = rng.standard_normal((4, 8, 8)).astype(np.float32)
    want = np.full((8, 8), 0.5, np.float32)
    for s in range(4):
        bs = b[s].T if s % 2 else b[s]
        for k in range(8):   # one rounding per step: the float64 a * b + acc is exact here
            want = (a[s][:, k:k + 1].astype(np.float64) * bs[k] + want).astype(np.float32)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16])
def test_half_and_bfloat_products_on_tensor_cores_agree_with_the_simulator(dtype):
    # Each product is summed in float and rounded to the type, on both sides; the tensor
    # cores' float sum may differ in its last bits, which can move a rounding by one ulp.
    rng = np.random.default_rng(12)
    a, b = (mx.array(rng.standard_normal((4, 8, 8)).astype(np.float32)).astype(dtype)
            for _ in range(2))
    sim, gpu = both(CHAINED_PRODUCTS, [a, b], [(64,), (64,)], [dtype, dtype], (32, 1, 1),
                    (32, 1, 1), init_value=0, template=[("T", dtype)])
    ulp = 2.0 ** (np.floor(np.log2(np.abs(sim[0]))) - (10 if dtype == mx.float16 else 7))
    assert (np.abs(gpu[0] - sim[0]) <= ulp).all()
    assert (gpu[0] != 0).all()


def test_infinities_and_nans_pass_through_tensor_core_products():
    a = np.ones((8, 8), np.float32)
    a[0, 3], a[1, 2] = np.inf, np.nan
    source = """
        simdgroup_float8x8 ma, mb, mc;
        simdgroup_load(ma, in0, 8);
        simdgroup_load(mb, in1, 8);
        simdgroup_multiply(mc, ma, mb);
        simdgroup_store(mc, out0, 8);
    """
    sim, gpu = both(source, [mx.array(a), mx.array(np.ones((8, 8), np.float32))], [(64,)],
                    [mx.float32], (32, 1, 1), (32, 1, 1))
    assert_same(sim, gpu)
    assert np.isinf(gpu[0][:8]).all() and np.isnan(gpu[0][8:16]).all()


# Products whose results are operands of further products: `mc` as A and as the
# accumulator, `md` as B (its column pairs gathered from a product) and as the accumulator.
PRODUCTS_OF_PRODUCTS = """
    simdgroup_float8x8 ma, mb, mc, md;
    simdgroup_load(ma, in0, 8);
    simdgroup_load(mb, in1, 8);
    simdgroup_multiply(mc, ma, mb);
    simdgroup_multiply_accumulate(md, mc, mb, mc);
    simdgroup_multiply_accumulate(md, ma, md, md);
    simdgroup_store(md, out0, 8);
"""


@pytest.mark.parametrize("special", [False, True])
def test_products_of_products_keep_float32_accuracy_and_infinities(special):
    """A product's halves, kept apart on the tensor cores until the value is read, are added
    where a later product takes it as A, B or accumulator; an infinity or NaN in an operand
    ends where the simulator's does."""
    rng = np.random.default_rng(13)
    a, b = (rng.standard_normal((8, 8)).astype(np.float32) for _ in range(2))
    if special:
        a[2, 5], a[6, 0] = np.inf, np.nan
    sim, gpu = both(PRODUCTS_OF_PRODUCTS, [mx.array(a), mx.array(b)], [(64,)], [mx.float32],
                    (32, 1, 1), (32, 1, 1))
    got, want = gpu[0].reshape(8, 8), sim[0].reshape(8, 8)
    finite = np.isfinite(want)
    assert finite.all() != special     # an infinity or NaN reaches every row of the last product
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])
    assert np.abs(got - want)[finite].max(initial=0.0) <= 2e-6 * np.abs(want).max(
        where=finite, initial=0.0)


def test_math_functions_are_within_two_ulps_of_the_simulators_correct_rounding():
    x = mx.array(np.linspace(0.01, 20.0, 512, dtype=np.float32))
    source = """
        uint i = thread_position_in_grid.x;
        float v = in0[i];
        out0[i * 6 + 0] = exp(v * 0.25f);
        out0[i * 6 + 1] = log(v);
        out0[i * 6 + 2] = sin(v);
        out0[i * 6 + 3] = tanh(v - 10.0f);
        out0[i * 6 + 4] = sqrt(v) + rsqrt(v);
        out0[i * 6 + 5] = pow(v, 1.5f);
    """
    sim, gpu = both(source, [x], [(512 * 6,)], [mx.float32], (512, 1, 1), (128, 1, 1))
    ulps = np.abs(sim[0].view(np.int32).astype(np.int64) - gpu[0].view(np.int32))
    assert ulps.max() <= 2, ulps.max()


def test_check_also_runs_the_puzzle_on_the_nvidia_gpu():
    puzzle = find(14)
    result = check_kernel(puzzle, puzzle.solution())
    assert result.passed
    assert all(r.gpu.endswith("(CUDA)") and r.metal is not None for r in result.cases)
    assert "Also ran on the real GPU through" in result.text


def test_time_kernel_gives_a_positive_median():
    kernel = metalsim.metal_kernel("copy", ["a"], ["out"],
                                   "out[thread_position_in_grid.x] = a[thread_position_in_grid.x];")
    ms = metalsim.cuda.time_kernel(kernel, inputs=[mx.zeros(1 << 20)], output_shapes=[(1 << 20,)],
                                   output_dtypes=[mx.float32], grid=(1 << 20, 1, 1),
                                   threadgroup=(256, 1, 1))
    assert 0 < ms < 100


# Two products sharing B, consecutive (the translation runs them as one pair on the tensor
# cores) or kept apart by an empty statement (two single products).
SHARED_B_PRODUCTS = """
    simdgroup_float8x8 ma[2], mb, acc[2];
    for (int i = 0; i < 2; ++i) {
        simdgroup_load(ma[i], in0 + 64 * i, 8);
        simdgroup_load(acc[i], in2 + 64 * i, 8);
    }
    for (int s = 0; s < 3; ++s) {
        simdgroup_load(mb, in1 + 64 * s, 8, ulong2(0, 0), s == 1);
        simdgroup_multiply_accumulate(acc[0], ma[0], mb, acc[0]);
        SEPARATOR
        simdgroup_multiply_accumulate(acc[1], ma[1], mb, acc[1]);
    }
    simdgroup_store(acc[0], out0, 8);
    simdgroup_store(acc[1], out0 + 64, 8);
"""


def _shared_b_products(paired: bool, special: bool) -> tuple[np.ndarray, np.ndarray, str]:
    """(GPU result, simulator result, CUDA kernel text) of SHARED_B_PRODUCTS."""
    rng = np.random.default_rng(14)
    a, b, c = (rng.standard_normal(shape).astype(np.float32)
               for shape in ((2, 8, 8), (3, 8, 8), (2, 8, 8)))
    if special:
        b[0, 3, 1], b[2, 6, 4] = np.inf, np.nan
    source = SHARED_B_PRODUCTS.replace("SEPARATOR", "" if paired else ";")
    sim, gpu = both(source, [mx.array(x) for x in (a, b, c)], [(128,)], [mx.float32],
                    (32, 1, 1), (32, 1, 1))
    kernel = metalsim.metal_kernel("t", ["in0", "in1", "in2"], ["out0"], source)
    gen = kernel._prepare((), dict(inputs=[mx.array(x) for x in (a, b, c)],
                                   output_shapes=[(128,)], output_dtypes=[mx.float32],
                                   grid=(32, 1, 1), threadgroup=(32, 1, 1))).gen
    from metalsim.cuda.translate import translate
    return gpu[0], sim[0], translate(gen).kernel_text


def test_products_paired_on_a_shared_b_equal_single_products_to_the_bit():
    """Each half of a pair sums the same terms in the same order as a single product does."""
    paired, sim, text = _shared_b_products(True, False)
    single, _, single_text = _shared_b_products(False, False)
    assert "simdgroup_multiply_accumulate_pair(" in text
    assert "simdgroup_multiply_accumulate_pair(" not in single_text
    np.testing.assert_array_equal(paired, single)
    assert np.abs(paired - sim).max() <= 2e-6 * np.abs(sim).max()


def test_paired_products_pass_infinities_and_nans_of_b_through():
    got, want, _ = _shared_b_products(True, True)
    finite = np.isfinite(want)
    assert not finite.all()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])
    assert np.abs(got - want)[finite].max(initial=0.0) <= 2e-6 * np.abs(want).max(
        where=finite, initial=0.0)


def test_single_products_pass_infinities_and_nans_of_b_through():
    """An infinite B element is all in its high TF32 part: its rest (inf - inf) would meet the
    zero rows of A's layout on the tensor cores and make the whole column NaN."""
    got, want, _ = _shared_b_products(False, True)
    assert np.isinf(want).any()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])


@pytest.mark.parametrize("operand", [0, 1])
def test_operands_near_float_max_keep_their_finite_products(operand):
    """3.4e38 rounds to infinity as TF32 (to nearest); its split must stay finite."""
    ones, big = np.full((8, 8), 0.25, np.float32), np.full((8, 8), 0.25, np.float32)
    big[3, 3] = 3.4e38
    source = """
        simdgroup_float8x8 ma, mb, mc;
        simdgroup_load(ma, in0, 8);
        simdgroup_load(mb, in1, 8);
        simdgroup_multiply(mc, ma, mb);
        simdgroup_store(mc, out0, 8);
    """
    inputs = [big, ones] if operand == 0 else [ones, big]
    sim, gpu = both(source, [mx.array(x) for x in inputs], [(64,)], [mx.float32], (32, 1, 1),
                    (32, 1, 1))
    assert np.isfinite(sim[0]).all()
    np.testing.assert_allclose(gpu[0], sim[0], rtol=2e-6)


def test_base_members_named_by_using_declarations_are_called_on_the_gpu():
    from test_translate_cxx import USING_BASE_MEMBERS
    source = "TD<float> d; out0[thread_position_in_grid.x] = d.get(1) + (d + 1).tag();"
    sim, gpu = both(source, [], [(4,)], [mx.float32], (4, 1, 1), (4, 1, 1),
                    header=USING_BASE_MEMBERS)
    np.testing.assert_array_equal(sim[0], np.full(4, 9.0, np.float32))
    assert_same(sim, gpu)
