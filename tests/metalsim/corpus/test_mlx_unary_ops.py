"""MLX's own unary operations (`unary_ops.h`, from the installed MLX), called from a kernel
body as a custom kernel would, against MLX's CPU operations on the same inputs: the fp8
conversions bit for bit (`FromFP8` reads its parameter's bytes as an `fp8_e4m3`), the float
approximations (erf, sigmoid, log1p, erfinv; expm1 with its own reduction error) close to
MLX's CPU values."""

import mlx.core as mx
import numpy as np
import pytest

import metalsim

HEADER = ('#include "mlx/backend/metal/kernels/utils.h"\n'
          '#include "mlx/backend/metal/kernels/unary_ops.h"\n')


def run(name: str, source: str, inputs: dict[str, mx.array], out_dtype) -> np.ndarray:
    n = next(iter(inputs.values())).size
    with metalsim.patch(force=True, include_dirs=[metalsim.mlx_include_dir()]):
        kernel = mx.fast.metal_kernel(name, list(inputs), ["out"], source, header=HEADER)
        (out,) = kernel(inputs=list(inputs.values()), output_shapes=[(n,)],
                        output_dtypes=[out_dtype], grid=(n, 1, 1), threadgroup=(64, 1, 1))
    return np.array(out)


def test_from_fp8_decodes_every_byte_as_mlx_does():
    codes = mx.arange(256).astype(mx.uint8)
    got = run("from_fp8", "uint i = thread_position_in_grid.x; out[i] = FromFP8{}(codes[i]);",
              {"codes": codes}, mx.float32)
    expected = np.array(mx.from_fp8(codes, dtype=mx.float32))
    assert np.array_equal(got, expected, equal_nan=True)
    assert np.isnan(got[0x7F]) and got[0x38] == 1.0 and got[1] == 2.0 ** -9


def test_to_fp8_rounds_and_saturates_as_mlx_does():
    rng = np.random.default_rng(0)
    values = np.concatenate([
        rng.normal(0, 1, 192) * 10.0 ** rng.uniform(-4, 3, 192),   # normals, subnormals, big
        [0.0, -0.0, 448.0, 464.0, 1e4, -1e4, 2.0 ** -9, 2.0 ** -10, 1.0625, 1.1875,
         0.0029296875, -0.0029296875]]).astype(np.float32)
    values = np.resize(values, 256)
    x = mx.array(values)
    got = run("to_fp8", "uint i = thread_position_in_grid.x; out[i] = ToFP8{}(x[i]);",
              {"x": x}, mx.uint8)
    assert got.tolist() == np.array(mx.to_fp8(x)).tolist()


@pytest.mark.parametrize(("op", "reference", "scale"), [
    ("Erf", mx.erf, 2.0), ("Sigmoid", mx.sigmoid, 8.0),
    ("Log1p", lambda v: mx.log1p(mx.abs(v)), 50.0), ("ErfInv", mx.erfinv, 0.3)])
def test_float_unary_ops_agree_with_mlx_cpu(op, reference, scale):
    x = mx.array(np.clip(np.random.default_rng(1).normal(0, scale, 256), -0.999, 0.999),
                 dtype=mx.float32) if op == "ErfInv" else normal(scale)
    argument = "metal::abs(x[i])" if op == "Log1p" else "x[i]"
    got = run(op, f"uint i = thread_position_in_grid.x; out[i] = {op}{{}}({argument});",
              {"x": x}, mx.float32)
    np.testing.assert_allclose(got, np.array(reference(x)), rtol=2e-5, atol=1e-7)


def test_expm1_agrees_with_mlx_cpu_up_to_its_one_term_ln2():
    # MLX's expm1f reduces a by j = rint(a / ln 2) with ln 2 as one float (6.93145752e-1,
    # 1.43e-6 below it), so it computes expm1(a + j * (ln 2 - that float)): off from MLX's
    # CPU value by about |j| * 1.43e-6 of exp(a), and within an ulp of that expression.
    x = normal(4.0)
    got = run("Expm1", "uint i = thread_position_in_grid.x; out[i] = Expm1{}(x[i]);",
              {"x": x}, mx.float32)
    expected = np.array(mx.expm1(x))
    j = np.rint(np.float32(1.442695) * np.array(x))
    assert np.all(np.abs(got - expected) <= (2e-6 + 1.5e-6 * np.abs(j)) * (np.abs(expected) + 1))
    reduced = np.array(x, np.float64) + j * (np.log(2) - np.float64(np.float32(6.93145752e-1)))
    np.testing.assert_allclose(got, np.expm1(reduced), rtol=2e-7)


def normal(scale: float) -> mx.array:
    return mx.array(np.random.default_rng(1).normal(0, scale, 256), dtype=mx.float32)
