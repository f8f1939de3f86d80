"""The real kernels of notebooks 01-04 against MLX's own ops, in the simulator.

Each kernel runs through its MLX function with `mx.fast.metal_kernel` simulated (the
`metalsim_patch` fixture), at the largest sizes that keep a test within seconds on a 2-core
machine, and through `simulate()` for the traffic report: no diagnostics, and device traffic
within 1.25x of the ideal (each input read once, each output written once). GEMM meets that at
a point-cloud layer's shape (many points, few channels); for square matrices no multi-threadgroup
GEMM can (see `solutions/gemm.py`), and the tests pin its traffic to the tile model instead.
`benchmarks/bench_real_kernels.py` reports the full-size numbers.
"""

import mlx.core as mx
import numpy as np
import pytest

import metalsim
from solutions import axpby, conv1d, gemm, row_reduce


def normal(*shape: int, dtype: mx.Dtype = mx.float32, seed: int = 0) -> mx.array:
    return mx.array(np.random.default_rng(seed).standard_normal(shape)).astype(dtype)


def assert_close(actual: mx.array, expected: mx.array, tol: float = 1e-4) -> None:
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    a, e = np.array(actual.astype(mx.float32)), np.array(expected.astype(mx.float32))
    np.testing.assert_allclose(a, e, rtol=tol, atol=tol * max(1.0, float(np.abs(e).max())))


def assert_clean_and_near_ideal(run: metalsim.Run) -> None:
    report = run.report
    assert report.diagnostics == [], report.summary()
    assert report.bytes_moved <= 1.25 * report.ideal_bytes, report.summary()


def traffic(run: metalsim.Run) -> dict[str, int]:
    return {t.name: t.bytes_moved for t in run.report.traffic}


# --- axpby ----------------------------------------------------------------------------------


def test_axpby_contiguous_million_elements_matches_mlx_at_ideal_traffic():
    n = (1 << 20) + 3   # a tail of 3
    x, y = normal(n, seed=1), normal(n, seed=2)
    run = axpby.simulate(x, y, 2.0, -0.5)
    assert_close(run.outputs[0], 2.0 * x - 0.5 * y, 1e-6)
    assert_clean_and_near_ideal(run)
    assert run.report.bytes_moved == run.report.ideal_bytes
    # One 4-wide load of x and of y per thread, and 3 + 3 scalar loads in the tail.
    assert run.report.totals()["global_reads"] == 2 * (n // 4) + 6


def test_axpby_broadcast_rows_read_in_place_at_ideal_traffic():
    x, y = normal(512, 1024, seed=3), normal(1024, seed=4)
    run = axpby.simulate(x, y, 1.5, 3.0)
    assert_close(run.outputs[0], 1.5 * x + 3.0 * y, 1e-6)
    assert_clean_and_near_ideal(run)


@pytest.mark.parametrize(
    ("x", "y"),
    [
        (normal(40, 30, seed=5).T, normal(40, seed=6)),          # transposed and broadcast
        (normal(7, 1, 5, seed=7), normal(3, 1, seed=8)),          # both broadcast, 3-D
        (normal(30, seed=9)[1:], normal(29, seed=10)),            # view at an element offset
        (normal(5, seed=11), normal(5, seed=12)),                 # small: constant space
        (mx.array(2.0), normal(10, seed=13)),                     # a 0-d operand
        (normal(1001, dtype=mx.float16), normal(1001, dtype=mx.float16, seed=14)),
        (normal(64, 3, dtype=mx.bfloat16), normal(3, dtype=mx.float32, seed=15)),
    ],
    ids=["transposed", "broadcast-3d", "offset-view", "small", "scalar", "half", "mixed"],
)
def test_axpby_matches_mlx_on_strided_broadcast_and_typed_inputs(metalsim_patch, x, y):
    z = axpby.axpby(x, y, 2.0, -0.5)
    tol = 1e-6 if z.dtype == mx.float32 else 1e-2
    assert_close(z, (2.0 * x - 0.5 * y).astype(z.dtype), tol)


def test_axpby_rejects_integer_inputs():
    with pytest.raises(TypeError, match="floating-point"):
        axpby.launch(mx.arange(8), mx.arange(8), 1.0, 1.0, metalsim.metal_kernel)


# --- conv1d ---------------------------------------------------------------------------------


def mlx_conv1d(x: mx.array, w: mx.array, padding: int) -> mx.array:
    rows = x.reshape(-1, x.shape[-1], 1)
    out = mx.conv1d(rows, w.reshape(1, -1, 1), padding=padding)[..., 0]
    return out.reshape(*x.shape[:-1], out.shape[-1])


def test_conv1d_million_by_31_taps_matches_mx_conv1d_near_ideal_traffic():
    x, w = normal(1 << 20, seed=20), normal(31, seed=21)
    run = conv1d.simulate(x, w, padding=15)
    assert_close(run.outputs[0], mlx_conv1d(x, w, 15))
    assert_clean_and_near_ideal(run)
    # Every input element once, plus a 30-element halo per 1024-output tile.
    tiles = (1 << 20) // conv1d.TILE
    assert traffic(run)["x"] == 4 * ((1 << 20) + tiles * 30 - 2 * 15)


@pytest.mark.parametrize(
    ("shape", "taps", "padding"),
    [((3, 2100), 31, 15), ((1000,), 3, 0), ((5,), 5, 4), ((2, 50), 1, 0), ((4000,), 64, 3)],
)
def test_conv1d_matches_mx_conv1d_on_batches_edges_and_padding(metalsim_patch, shape, taps,
                                                               padding):
    x, w = normal(*shape, seed=22), normal(taps, seed=23)
    assert_close(conv1d.conv1d(x, w, padding), mlx_conv1d(x, w, padding))


def test_conv1d_in_half_matches_mx_conv1d(metalsim_patch):
    x, w = normal(2, 3000, dtype=mx.float16, seed=24), normal(7, dtype=mx.float16, seed=25)
    assert_close(conv1d.conv1d(x, w, 3), mlx_conv1d(x, w, 3), 1e-2)


def test_conv1d_rejects_a_filter_longer_than_the_padded_input():
    with pytest.raises(ValueError, match="no output"):
        conv1d.launch(normal(4), normal(9), 0, metalsim.metal_kernel)


# --- row reduction --------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(1024, 1024), (64, 16384), (4096, 256)])
@pytest.mark.parametrize("op", ["sum", "max"])
def test_row_reduce_matches_mlx_at_ideal_traffic(shape, op):
    x = normal(*shape, seed=30)
    run = row_reduce.simulate(x, op)
    expected = mx.sum(x, axis=-1) if op == "sum" else mx.max(x, axis=-1)
    assert_close(run.outputs[0], expected, 1e-5)
    assert_clean_and_near_ideal(run)
    assert run.report.bytes_moved == run.report.ideal_bytes


@pytest.mark.parametrize(
    "x",
    [normal(3, 7, seed=31), normal(4, 1, seed=32), normal(2, 3, 4099, seed=33),
     normal(8, 3000, dtype=mx.float16, seed=34), normal(5, 999, dtype=mx.bfloat16, seed=35)],
    ids=["short-rows", "one-column", "3d-odd-columns", "half", "bfloat16"],
)
def test_row_sum_and_max_match_mlx_on_odd_shapes_and_types(metalsim_patch, x):
    tol = 1e-5 if x.dtype == mx.float32 else 2e-2
    assert_close(row_reduce.row_sum(x), mx.sum(x, axis=-1), tol)
    assert mx.array_equal(row_reduce.row_max(x), mx.max(x, axis=-1)).item()


# --- GEMM -----------------------------------------------------------------------------------


def test_gemm_point_cloud_layer_reads_the_points_once_within_1_25x_of_ideal():
    # 16,384 points, 64 channels in and out: 256 x 64 tiles read `a` once and the 64 x 64
    # weights once per tile row (64 times); 1.12x the ideal in all.
    a, b = normal(16384, 64, seed=48), normal(64, 64, seed=49)
    run = gemm.simulate(a, b)
    assert run.report.threadgroup == (512, 1, 1)
    assert_close(run.outputs[0], a @ b)
    assert_clean_and_near_ideal(run)
    assert traffic(run) == {"a": 16384 * 64 * 4, "b": 64 * (64 * 64 * 4), "out": 16384 * 64 * 4}


def test_gemm_256_cube_matches_mx_matmul_with_the_tiling_traffic():
    a, b = normal(256, 256, seed=40), normal(256, 256, seed=41)
    run = gemm.simulate(a, b)
    assert_close(run.outputs[0], a @ b)
    assert run.report.diagnostics == []
    # 64 x 64 tiles (bigger ones would leave fewer than 16 threadgroups): each tile column
    # re-reads all of `a`, each tile row all of `b`, 4x each, so (4 + 4 + 1) / 3 = 3x the
    # read-once ideal, as for any GEMM split into 16 square blocks.
    size = 256 * 256 * 4
    assert traffic(run) == {"a": 4 * size, "b": 4 * size, "out": size}
    assert run.report.bytes_moved == 3 * run.report.ideal_bytes


def test_gemm_within_one_tile_row_and_column_reads_inputs_once():
    a, b = normal(64, 1024, seed=42), normal(1024, 64, seed=43)
    run = gemm.simulate(a, b, k_slices=1)
    assert_close(run.outputs[0], a @ b)
    assert_clean_and_near_ideal(run)


def test_gemm_splits_a_deep_k_when_the_output_is_one_tile():
    # 64 x 64 is one threadgroup's tile: K = 4096 is cut into 16 slices of 256, each a
    # threadgroup writing its float32 partial product; `finish` sums them.
    a, b = normal(64, 4096, seed=52), normal(4096, 64, seed=53)
    run = gemm.simulate(a, b)
    assert run.outputs[0].shape == (16, 64, 64) and run.outputs[0].dtype == mx.float32
    assert_close(gemm.finish(run.outputs[0], mx.float32), a @ b)
    assert run.report.diagnostics == []
    # The inputs are still read once; the partials cost 16 (M, N) blocks instead of one.
    assert traffic(run) == {"a": 64 * 4096 * 4, "b": 4096 * 64 * 4, "out": 16 * 64 * 64 * 4}


@pytest.mark.parametrize(("transpose_a", "transpose_b"),
                         [(False, False), (True, False), (False, True), (True, True)])
def test_gemm_split_k_with_a_ragged_last_slice_matches_mx_matmul(transpose_a, transpose_b):
    a, b = normal(40, 1000, seed=54), normal(1000, 30, seed=55)
    stored_a = mx.contiguous(a.T) if transpose_a else a
    stored_b = mx.contiguous(b.T) if transpose_b else b
    kernel, args = gemm.launch(stored_a, stored_b, metalsim.metal_kernel, k_slices=3,
                               transpose_a=transpose_a, transpose_b=transpose_b)
    run = metalsim.simulate(kernel, **args)   # slices of 336, 336 and 328
    assert run.outputs[0].shape == (3, 40, 30)
    assert_close(gemm.finish(run.outputs[0], mx.float32), a @ b)
    assert run.report.diagnostics == []
    assert run.report.bytes_moved == run.report.ideal_bytes


@pytest.mark.parametrize(
    ("m", "k", "n", "slices"),
    [(64, 16384, 64, 64),   # a weight gradient over 16,384 points: 64 threadgroups
     (64, 1024, 64, 4),     # each slice keeps at least 256 of K
     (64, 200, 64, 1),      # too shallow to split
     (16384, 64, 64, 1)],   # enough tiles already
)
def test_gemm_splits_k_only_when_the_tiles_cannot_fill_the_gpu(m, k, n, slices):
    assert gemm.choose_k_slices(m, k, n, gemm.choose_tile(m, k, n)) == slices


@pytest.mark.parametrize("tile", gemm.TILES, ids=lambda t: f"{t.rows}x{t.cols}")
@pytest.mark.parametrize(("transpose_a", "transpose_b"),
                         [(False, False), (True, False), (False, True), (True, True)])
def test_gemm_every_tile_matches_mx_matmul_and_moves_the_bytes_of_its_model(
        tile, transpose_a, transpose_b):
    a, b = normal(300, 50, seed=50), normal(50, 270, seed=51)
    stored_a = mx.contiguous(a.T) if transpose_a else a
    stored_b = mx.contiguous(b.T) if transpose_b else b
    kernel, args = gemm.launch(stored_a, stored_b, metalsim.metal_kernel, tile=tile,
                               transpose_a=transpose_a, transpose_b=transpose_b)
    run = metalsim.simulate(kernel, **args)
    assert_close(run.outputs[0], a @ b)
    assert run.report.diagnostics == []
    assert run.report.bytes_moved == tile.bytes_moved(300, 50, 270, 4)


@pytest.mark.parametrize(
    ("m", "k", "n", "expected"),
    [
        (16384, 64, 64, gemm.Tile(256, 64)),    # a point-cloud layer: few, wide-row tiles
        (64, 64, 16384, gemm.Tile(64, 256)),     # its transpose
        (256, 256, 256, gemm.Tile(64, 64)),      # small outputs: the most threadgroups
        (512, 512, 512, gemm.Tile(64, 64)),      # bigger tiles would give fewer than 64
        (1024, 1024, 1024, gemm.Tile(128, 128)),
        (8, 8, 8, gemm.Tile(64, 64)),
    ],
)
def test_gemm_chooses_the_tile_with_least_traffic_that_keeps_the_gpu_busy(m, k, n, expected):
    assert gemm.choose_tile(m, k, n) == expected


@pytest.mark.parametrize(
    ("m", "k", "n"), [(130, 33, 70), (2, 3, 5), (100, 72, 50), (8, 8, 8), (65, 17, 129)],
)
def test_gemm_matches_mx_matmul_with_partial_edge_tiles(metalsim_patch, m, k, n):
    a, b = normal(m, k, seed=44), normal(k, n, seed=45)
    assert_close(gemm.gemm(a, b), a @ b)


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16])
def test_gemm_in_half_types_matches_mx_matmul(metalsim_patch, dtype):
    a, b = normal(100, 72, dtype=dtype, seed=46), normal(72, 50, dtype=dtype, seed=47)
    assert_close(gemm.gemm(a, b), a @ b, 2e-2)


def test_gemm_rejects_mismatched_inner_dimensions():
    with pytest.raises(ValueError, match=r"\(M, K\) by \(K, N\)"):
        gemm.launch(normal(4, 5), normal(4, 5), metalsim.metal_kernel)


# --- the same launches are what MLX itself would compile -------------------------------------


@pytest.mark.parametrize(
    ("module", "operands"),
    [
        (axpby, (normal(100), normal(100), 2.0, 3.0)),
        (axpby, (normal(10, 100), normal(100), 2.0, 3.0)),
        (conv1d, (normal(2, 100), normal(7), 3)),
        (row_reduce, (normal(4, 100), "max")),
        (gemm, (normal(4, 100, dtype=mx.float16), normal(100, 3, dtype=mx.float16))),
    ],
    ids=["axpby-contiguous", "axpby-general", "conv1d", "row-reduce", "gemm-half"],
)
def test_real_mlx_accepts_each_launch_and_generates_the_simulated_source(tmp_path, module,
                                                                         operands):
    """MLX (without Metal) traces the very call under `mx.export_function`; the exported
    function holds MLX's generated source, which must be what metalsim compiled."""
    arrays = [o for o in operands if isinstance(o, mx.array)]
    rest = [o for o in operands if not isinstance(o, mx.array)]

    def real(*xs: mx.array) -> list[mx.array]:
        kernel, args = module.launch(*xs, *rest)   # mx.fast.metal_kernel itself
        return kernel(**args)

    path = tmp_path / "kernel.mlxfn"
    mx.export_function(str(path), real, *arrays)
    kernel, args = module.launch(*arrays, *rest, metalsim.metal_kernel)
    assert metalsim.source(kernel, **args).encode() in path.read_bytes()


def test_axpby_broadcast_launch_fills_its_simdgroups():
    # 37 columns are 10 threads per row: a one-row threadgroup would be clamped to 10 threads
    # and run its SIMD-groups at 10/32 = 31%; stacking rows fills them.
    from solutions.axpby import general_threadgroup, simulate

    assert general_threadgroup((10, 1000, 1)) == (10, 25, 1)
    assert general_threadgroup((300, 4, 1)) == (256, 1, 1)
    x, y = mx.random.normal((1000, 37)), mx.random.normal((37,))
    report = simulate(x, y, 2.0, -0.5).report
    assert report.simd_efficiency > 0.9
    assert report.bytes_moved == report.ideal_bytes
