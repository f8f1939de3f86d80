"""Gradients of the real kernels of notebooks 01-04 against MLX autodiff of the plain-MLX spec.

Each test takes `mx.vjp` through our function (with `mx.fast.metal_kernel` simulated by the
`metalsim_patch` fixture) and through the plain-MLX reference (`alpha * x + beta * y`,
`a @ b`, `mx.sum` / `mx.max`, `mx.conv1d`) with the same random cotangent, and compares the
gradients' values, shapes and dtypes. The backward launches are also run through
`metalsim.simulate` for their traffic, and exported through real MLX to check that it accepts
them and generates the source the simulator ran.
"""

from collections.abc import Callable

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


def assert_same_vjp(ours: Callable, reference: Callable, primals: list[mx.array],
                    tol: float = 1e-4, seed: int = 99) -> None:
    """Our function's value and VJP equal the reference's, for one random cotangent."""
    out = reference(*primals)
    cotangent = normal(*out.shape, dtype=out.dtype, seed=seed)
    (value,), grads = mx.vjp(ours, primals, [cotangent])
    (expected,), expected_grads = mx.vjp(reference, primals, [cotangent])
    assert_close(value, expected, tol)
    for grad, expected_grad in zip(grads, expected_grads, strict=True):
        assert_close(grad, expected_grad, tol)


def tolerance(dtype: mx.Dtype) -> float:
    return 1e-5 if dtype == mx.float32 else 2e-2


# --- axpby ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("x", "y"),
    [
        (normal(5, 7, seed=1), normal(5, 7, seed=2)),             # same shape: read once
        (normal(40, 30, seed=3).T, normal(40, seed=4)),           # transposed and broadcast
        (normal(7, 1, 5, seed=5), normal(3, 1, seed=6)),          # both broadcast, 3-D
        (mx.array(2.0), normal(10, seed=7)),                      # a 0-d operand
        (normal(1003, dtype=mx.float16, seed=8), normal(1003, dtype=mx.float16, seed=9)),
        (normal(64, 3, dtype=mx.bfloat16, seed=10), normal(3, seed=11)),
    ],
    ids=["same-shape", "transposed", "broadcast-3d", "scalar", "half-odd", "mixed"],
)
def test_axpby_vjp_sums_the_scaled_cotangent_over_broadcast_axes(metalsim_patch, x, y):
    assert_same_vjp(lambda x, y: axpby.axpby(x, y, 2.0, -0.5),
                    lambda x, y: 2.0 * x - 0.5 * y, [x, y], tolerance(mx.result_type(x, y)))


def test_axpby_backward_reads_the_cotangent_once_for_both_gradients():
    x, y = normal(1001, seed=12), normal(1001, seed=13)
    cotangent = normal(1001, seed=14)
    kernel, args = axpby.backward_launch(x, y, cotangent, 2.0, -0.5, metalsim.metal_kernel)
    run = metalsim.simulate(kernel, **args)
    assert_close(run.outputs[0], 2.0 * cotangent, 1e-6)
    assert_close(run.outputs[1], -0.5 * cotangent, 1e-6)
    assert run.report.diagnostics == [], run.report.summary()
    # The cotangent is bound as both `cx` and `cy` but read once, through `cx`.
    traffic = {t.name: t.bytes_moved for t in run.report.traffic}
    assert {name: traffic.get(name, 0) for name in ("cx", "cy", "gx", "gy")} == {
        "cx": cotangent.nbytes, "cy": 0, "gx": cotangent.nbytes, "gy": cotangent.nbytes}


# --- GEMM -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("m", "k", "n", "dtype"),
    [(130, 33, 70, mx.float32), (2, 3, 5, mx.float32), (65, 17, 129, mx.float32),
     (40, 72, 24, mx.float16)],
)
def test_gemm_vjp_is_the_kernel_on_transposed_operands(metalsim_patch, m, k, n, dtype):
    a, b = normal(m, k, dtype=dtype, seed=20), normal(k, n, dtype=dtype, seed=21)
    assert_same_vjp(gemm.gemm, lambda a, b: a @ b, [a, b], 1e-4 if dtype == mx.float32 else 2e-2)


def test_point_cloud_layer_weight_gradient_splits_the_points_among_threadgroups(
        metalsim_patch):
    # dW = x^T @ dy is a 64 x 32 output over 2,048 points: one tile, so K (the points) is
    # split into 8 slices of 256 whose partial products are summed.
    x, w = normal(2048, 64, seed=29), normal(64, 32, seed=30)
    assert gemm.choose_k_slices(64, 2048, 32, gemm.choose_tile(64, 2048, 32)) == 8
    assert_same_vjp(gemm.gemm, lambda a, b: a @ b, [x, w])


@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_every_transposed_variant_and_its_vjp_match_mlx(metalsim_patch, transpose_a,
                                                        transpose_b):
    a = normal(*((19, 37) if transpose_a else (37, 19)), seed=22)
    b = normal(*((70, 19) if transpose_b else (19, 70)), seed=23)

    def reference(a: mx.array, b: mx.array) -> mx.array:
        return (a.T if transpose_a else a) @ (b.T if transpose_b else b)

    assert_same_vjp(gemm._gemm_op(transpose_a, transpose_b), reference, [a, b])


def test_gemm_second_derivatives_match_mlx(metalsim_patch):
    a, b, w = normal(20, 9, seed=24), normal(9, 13, seed=25), normal(20, 13, seed=26)

    def squared_grad(matmul: Callable) -> Callable:
        grad_a = mx.grad(lambda a, b: mx.sum(matmul(a, b) * w))
        return lambda a, b: mx.sum(grad_a(a, b) ** 2)

    ours = mx.grad(squared_grad(gemm.gemm), argnums=(0, 1))(a, b)
    expected = mx.grad(squared_grad(mx.matmul), argnums=(0, 1))(a, b)
    for grad, expected_grad in zip(ours, expected, strict=True):
        assert_close(grad, expected_grad)


def test_transposed_gemm_reads_operands_in_place_with_the_same_traffic():
    """dA = dC @ B^T for a 64 x 1024 `dC`: B is read where it lies, once, no copy."""
    cotangent, b = normal(64, 1024, seed=27), normal(64, 1024, seed=28)
    kernel, args = gemm.launch(cotangent, b, metalsim.metal_kernel, transpose_b=True,
                               k_slices=1)
    run = metalsim.simulate(kernel, **args)
    assert_close(run.outputs[0], cotangent @ b.T)
    assert run.report.diagnostics == [], run.report.summary()
    assert run.report.bytes_moved == run.report.ideal_bytes


# --- row reduction --------------------------------------------------------------------------


def ties(rows: int, cols: int, seed: int) -> mx.array:
    """Small integers, so that most rows have their max several times."""
    values = np.random.default_rng(seed).integers(0, 3, (rows, cols))
    return mx.array(values.astype(np.float32))


@pytest.mark.parametrize(
    "x",
    [normal(3, 7, seed=30), normal(4, 1, seed=31), normal(2, 3, 4099, seed=32),
     ties(6, 9, seed=33), ties(3, 1500, seed=34), normal(8, 3000, dtype=mx.float16, seed=35),
     ties(4, 37, seed=36).astype(mx.float16)],
    ids=["short-rows", "one-column", "3d-odd-columns", "ties", "many-ties", "half",
         "half-ties"],
)
@pytest.mark.parametrize("op", ["sum", "max"])
def test_row_reduce_vjp_matches_mlx_autodiff(metalsim_patch, x, op):
    ours = row_reduce.row_sum if op == "sum" else row_reduce.row_max
    reference = mx.sum if op == "sum" else mx.max
    assert_same_vjp(ours, lambda x: reference(x, axis=-1), [x], tolerance(x.dtype))


def test_row_max_splits_the_cotangent_evenly_among_ties_as_mlx_does(metalsim_patch):
    # MLX 0.32's VJP of mx.max gives each of k tied maxima cot / k (not cot to each).
    x = mx.array([[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 5.0, 0.0], [-1.0, -2.0, -3.0, -4.0]])
    cotangent = mx.array([1.0, 3.0, 2.0])
    _, (grad,) = mx.vjp(row_reduce.row_max, [x], [cotangent])
    expected = [[0, 0.5, 0.5, 0], [1, 1, 1, 0], [2, 0, 0, 0]]
    assert grad.tolist() == expected
    assert mx.vjp(lambda x: mx.max(x, axis=-1), [x], [cotangent])[1][0].tolist() == expected


@pytest.mark.parametrize(("op", "x_reads"), [("sum", 0), ("max", 2)])
def test_row_reduce_backward_traffic(op, x_reads):
    """The sum's backward only writes; the max's reads `x` twice (to count the ties, then to
    write). One lane per SIMD-group reads the row's cotangent (and max)."""
    x = ties(64, 1000, seed=37)
    y = mx.max(x, axis=-1) if op == "max" else mx.sum(x, axis=-1)
    kernel, args = row_reduce.backward_launch(x, y, normal(64, seed=38), op,
                                              metalsim.metal_kernel)
    run = metalsim.simulate(kernel, **args)
    assert run.report.diagnostics == [], run.report.summary()
    lanes_0 = 64 * row_reduce._threads(1000) // 32
    expected = {"x": x_reads * x.nbytes, "y": 4 * lanes_0 if op == "max" else 0,
                "cot": 4 * lanes_0, "dx": x.nbytes}
    traffic = {t.name: t.bytes_moved for t in run.report.traffic}
    assert {name: traffic.get(name, 0) for name in expected} == expected


# --- conv1d ---------------------------------------------------------------------------------


def mlx_conv1d(x: mx.array, w: mx.array, padding: int) -> mx.array:
    rows = x.reshape(-1, x.shape[-1], 1)
    out = mx.conv1d(rows, w.reshape(1, -1, 1), padding=padding)[..., 0]
    return out.reshape(*x.shape[:-1], out.shape[-1])


@pytest.mark.parametrize(
    ("shape", "taps", "padding"),
    [((3, 2100), 31, 15), ((1000,), 3, 0), ((5,), 5, 4), ((2, 50), 1, 0), ((2, 40), 3, 6),
     ((4000,), 64, 3)],
    ids=["batch-tiles", "valid", "all-padding", "one-tap", "padding-past-reach", "long-filter"],
)
def test_conv1d_vjp_matches_mx_conv1d_autodiff(metalsim_patch, shape, taps, padding):
    x, w = normal(*shape, seed=40), normal(taps, seed=41)
    assert_same_vjp(lambda x, w: conv1d.conv1d(x, w, padding),
                    lambda x, w: mlx_conv1d(x, w, padding), [x, w])


def test_conv1d_vjp_in_half_matches_mx_conv1d_autodiff(metalsim_patch):
    x, w = normal(2, 300, dtype=mx.float16, seed=42), normal(7, dtype=mx.float16, seed=43)
    assert_same_vjp(lambda x, w: conv1d.conv1d(x, w, 3), lambda x, w: mlx_conv1d(x, w, 3),
                    [x, w], 2e-2)


def test_conv1d_weight_grad_reads_the_window_and_cotangent_about_once():
    x, w = normal(50_000, seed=44), normal(31, seed=45)
    cotangent = normal(50_000, seed=46)
    kernel, args = conv1d.weight_grad_launch(x, cotangent, 31, 15, metalsim.metal_kernel)
    run = metalsim.simulate(kernel, **args)
    _, (expected,) = mx.vjp(lambda w: mlx_conv1d(x, w, 15), [w], [cotangent])
    assert_close(mx.sum(run.outputs[0], axis=0), expected)
    assert run.report.diagnostics == [], run.report.summary()
    assert run.report.bytes_moved <= 1.05 * run.report.ideal_bytes, run.report.summary()


# --- the backward launches are what MLX itself would compile ---------------------------------


@pytest.mark.parametrize(
    ("launch", "operands"),
    [
        (lambda x, y, c: axpby.backward_launch(x, y, c, 2.0, 3.0), (normal(100), normal(100),
                                                                   normal(100))),
        (lambda x, y, c: axpby.backward_launch(x, y, c, 2.0, 3.0), (normal(10, 1), normal(7),
                                                                   normal(10, 7))),
        (lambda x, y, c: row_reduce.backward_launch(x, y, c, "max"),
         (normal(4, 100), normal(4), normal(4))),
        (lambda a, b: gemm.launch(a, b, transpose_a=True, transpose_b=True),
         (normal(100, 4, dtype=mx.float16), normal(3, 100, dtype=mx.float16))),
        (lambda x, c: conv1d.weight_grad_launch(x, c, 7, 3), (normal(2, 100), normal(2, 100))),
    ],
    ids=["axpby-same", "axpby-broadcast", "row-max", "gemm-transposed", "conv1d-weight"],
)
def test_real_mlx_accepts_each_backward_launch_and_generates_the_simulated_source(
        tmp_path, launch, operands):
    def real(*xs: mx.array) -> list[mx.array]:
        kernel, args = launch(*xs)   # mx.fast.metal_kernel itself
        return kernel(**args)

    path = tmp_path / "kernel.mlxfn"
    mx.export_function(str(path), real, *operands)
    with metalsim.patch():
        kernel, args = launch(*operands)
    assert metalsim.source(kernel, **args).encode() in path.read_bytes()
