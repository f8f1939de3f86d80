"""mlx-vlm's custom kernels (Blaizzy/mlx-vlm), run unchanged under metalsim.patch() through
mlx-vlm's own functions. References: numpy written here, or mlx-vlm's own pure-MLX fallback
(an independent implementation in MLX ops) where the formula is long (bicubic, grid sample)."""

import mlx.core as mx
import numpy as np
import pytest
from corpus import load

import metalsim

RNG = np.random.default_rng(3)


def normal(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("size", [(7, 5), (3, 2)], ids=["up", "down"])
def test_nearest_interpolate(metalsim_patch, size):
    mod = load("Blaizzy__mlx-vlm/kernels.py")
    x = normal(2, 3, 4, 4)
    out = mod["nearest_interpolate"](mx.array(x), size=size)
    rows = np.minimum(np.floor(np.arange(size[0]) * (4 / size[0])).astype(int), 3)
    cols = np.minimum(np.floor(np.arange(size[1]) * (4 / size[1])).astype(int), 3)
    np.testing.assert_array_equal(np.array(out), x[:, :, rows][:, :, :, cols])


@pytest.mark.parametrize(("align_corners", "antialias", "size"), [
    (False, False, (9, 7)), (True, False, (9, 7)), (False, True, (3, 2)), (False, True, (9, 3)),
], ids=["up", "align-corners", "antialias-down", "antialias-mixed"])
def test_bicubic_interpolate_equals_the_pure_mlx_path(metalsim_patch, align_corners, antialias,
                                                      size):
    mod = load("Blaizzy__mlx-vlm/kernels.py")
    x = mx.array(normal(1, 2, 6, 5))
    out = mod["bicubic_interpolate"](x, size=size, align_corners=align_corners,
                                     antialias=antialias)
    ref = mod["_bicubic_interpolate_mlx"](x, *size, align_corners, antialias)
    np.testing.assert_allclose(np.array(out), np.array(ref), rtol=1e-4, atol=1e-5)


def test_bicubic_interpolate_keeps_a_constant_image_constant(metalsim_patch):
    mod = load("Blaizzy__mlx-vlm/kernels.py")
    out = mod["bicubic_interpolate"](mx.full((1, 1, 5, 5), 3.0), size=(8, 8))
    np.testing.assert_allclose(np.array(out), 3.0, rtol=1e-5)


def test_grid_sample_inside_the_image_equals_a_numpy_bilinear_sample(metalsim_patch):
    mod = load("Blaizzy__mlx-vlm/kernels.py")
    B, H, W, C = 2, 5, 6, 3
    x = normal(B, H, W, C)
    grid = RNG.uniform(-0.6, 0.6, (B, 4, 3, 2)).astype(np.float32)
    out = np.array(mod["grid_sample"](mx.array(x), mx.array(grid)))
    ix = ((grid[..., 0] + 1) * W - 1) / 2
    iy = ((grid[..., 1] + 1) * H - 1) / 2
    ref = np.zeros(out.shape)
    for b, n, m in np.ndindex(B, 4, 3):
        x0, y0 = int(np.floor(ix[b, n, m])), int(np.floor(iy[b, n, m]))
        for yy, xx in ((y0, x0), (y0, x0 + 1), (y0 + 1, x0), (y0 + 1, x0 + 1)):
            weight = (1 - abs(ix[b, n, m] - xx)) * (1 - abs(iy[b, n, m] - yy))
            if 0 <= yy < H and 0 <= xx < W:
                ref[b, n, m] += weight * x[b, yy, xx]
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


def test_grid_sample_near_the_border_is_diagnosed_reading_out_of_bounds(metalsim_patch):
    """Upstream bug (copied from the MLX documentation's example): the kernel loads all four
    corners before checking that they lie inside the image, so a sample within one pixel of
    the border reads outside `x` (the value is masked afterwards, but the read is undefined)."""
    mod = load("Blaizzy__mlx-vlm/kernels.py")
    x = mx.array(normal(1, 4, 4, 2))
    grid = mx.array([[[[-0.99, -0.99], [0.99, 0.99]]]])
    with pytest.raises(metalsim.KernelFault, match="out-of-bounds read: 'x'"):
        mod["grid_sample"](x, grid)
