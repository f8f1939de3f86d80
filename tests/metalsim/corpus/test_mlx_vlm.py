"""mlx-vlm's custom kernels, from the installed mlx-vlm (requirements-test.txt), run unchanged
under metalsim.patch() through mlx-vlm's own functions. References: numpy written here, or
mlx-vlm's own pure-MLX fallback (an independent implementation in MLX ops) where the formula is
long (bicubic, grid sample)."""

from types import ModuleType

import mlx.core as mx
import numpy as np
import pytest
from installed import import_fresh

import metalsim

RNG = np.random.default_rng(3)


def normal(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("size", [(7, 5), (3, 2)], ids=["up", "down"])
def test_nearest_interpolate(metalsim_patch, size):
    mod = import_fresh("mlx_vlm.models.kernels")
    x = normal(2, 3, 4, 4)
    out = mod.nearest_interpolate(mx.array(x), size=size)
    rows = np.minimum(np.floor(np.arange(size[0]) * (4 / size[0])).astype(int), 3)
    cols = np.minimum(np.floor(np.arange(size[1]) * (4 / size[1])).astype(int), 3)
    np.testing.assert_array_equal(np.array(out), x[:, :, rows][:, :, :, cols])


@pytest.mark.parametrize(("align_corners", "antialias", "size"), [
    (False, False, (9, 7)), (True, False, (9, 7)), (False, True, (3, 2)), (False, True, (9, 3)),
], ids=["up", "align-corners", "antialias-down", "antialias-mixed"])
def test_bicubic_interpolate_equals_the_pure_mlx_path(metalsim_patch, align_corners, antialias,
                                                      size):
    mod = import_fresh("mlx_vlm.models.kernels")
    x = mx.array(normal(1, 2, 6, 5))
    out = mod.bicubic_interpolate(x, size=size, align_corners=align_corners,
                                     antialias=antialias)
    ref = mod._bicubic_interpolate_mlx(x, *size, align_corners, antialias)
    np.testing.assert_allclose(np.array(out), np.array(ref), rtol=1e-4, atol=1e-5)


def test_bicubic_interpolate_keeps_a_constant_image_constant(metalsim_patch):
    mod = import_fresh("mlx_vlm.models.kernels")
    out = mod.bicubic_interpolate(mx.full((1, 1, 5, 5), 3.0), size=(8, 8))
    np.testing.assert_allclose(np.array(out), 3.0, rtol=1e-5)


def test_grid_sample_inside_the_image_equals_a_numpy_bilinear_sample(metalsim_patch):
    mod = import_fresh("mlx_vlm.models.kernels")
    B, H, W, C = 2, 5, 6, 3
    x = normal(B, H, W, C)
    grid = RNG.uniform(-0.6, 0.6, (B, 4, 3, 2)).astype(np.float32)
    out = np.array(mod.grid_sample(mx.array(x), mx.array(grid)))
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
    """Upstream bug, in mlx-vlm 0.7.6's mlx_vlm/models/kernels.py `grid_sample` (taken from the
    MLX documentation's example): the kernel loads all four corners before checking that they
    lie inside the image, so a sample within one pixel of the border reads outside `x` (the
    value is masked afterwards, but the read is undefined). Still there in 0.7.10."""
    mod = import_fresh("mlx_vlm.models.kernels")
    x = mx.array(normal(1, 4, 4, 2))
    grid = mx.array([[[[-0.99, -0.99], [0.99, 0.99]]]])
    with pytest.raises(metalsim.KernelFault, match="out-of-bounds read: 'x'"):
        mod.grid_sample(x, grid)


def rotate_reference(x, cos_d, sin_d, cos_p, sin_p, pairs, rotary_dim):
    """x (B, H, T, D) rotated pairwise over the first rotary_dim dims; the rest passes through.
    cos_d/sin_d are the factors for each pair's first element, cos_p/sin_p for its second,
    each (B, T, n_pairs); pairs = (first indices, second indices)."""
    out = x.astype(np.float64).copy()
    first, second = pairs
    xv, xp = x[..., first].astype(np.float64), x[..., second].astype(np.float64)
    out[..., first] = xv * cos_d[:, None] - xp * sin_d[:, None]
    out[..., second] = xp * cos_p[:, None] + xv * sin_p[:, None]
    return out


def pairing_indices(pairing, rotary_dim):
    half = rotary_dim // 2
    if pairing == "even_odd":
        return np.arange(half) * 2, np.arange(half) * 2 + 1
    return np.arange(half), np.arange(half) + half


@pytest.mark.parametrize("pairing", ["half_split", "even_odd"])
def test_mrope_apply_kernel_with_two_dimensional_positions(metalsim_patch, pairing):
    mod = import_fresh("mlx_vlm.models.rope_utils")
    B, H, T, D, rotary_dim = 2, 2, 3, 10, 8
    q, k = normal(B, H, T, D), normal(B, H, T, D)
    positions = RNG.integers(0, 50, (B, T)).astype(np.int32)
    inv_freq = (1.0 / 10000 ** (np.arange(rotary_dim // 2) * 2 / rotary_dim)).astype(np.float32)
    kernel = mod._mrope_apply_kernel(rotary_dim, 2, pairing)
    q_out, k_out = mod._fast_mrope_apply(kernel, mx.array(q), mx.array(k),
                                            mx.array(positions), mx.array(inv_freq),
                                            mx.zeros(rotary_dim // 2, mx.int32), pairing)
    angle = positions[..., None].astype(np.float64) * inv_freq          # (B, T, half)
    c, s = np.cos(angle), np.sin(angle)
    for x, out in ((q, q_out), (k, k_out)):
        ref = rotate_reference(x, c, s, c, s, pairing_indices(pairing, rotary_dim), rotary_dim)
        np.testing.assert_allclose(np.array(out), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("pairing", ["half_split", "even_odd"])
def test_rotary_apply_kernel_with_precomputed_cos_sin(metalsim_patch, pairing):
    mod = import_fresh("mlx_vlm.models.rope_utils")
    B, H, T, D, rotary_dim = 1, 3, 4, 8, 8
    q, k = normal(B, H, T, D), normal(B, H, T, D)
    cos, sin = normal(B, T, rotary_dim), normal(B, T, rotary_dim)
    kernel = mod._rotary_apply_kernel(rotary_dim, pairing, 3, False, "half")
    q_out, k_out = mod._fast_rotary_apply(kernel, mx.array(q), mx.array(k), mx.array(cos),
                                             mx.array(sin), pairing=pairing, cos_layout="half")
    first, second = pairing_indices(pairing, rotary_dim)
    half = np.arange(rotary_dim // 2)
    # half_split reads each element's own entry; even_odd with the "half" layout reads the
    # pair's frequency index for both elements.
    own = (first, second) if pairing == "half_split" else (half, half)
    for x, out in ((q, q_out), (k, k_out)):
        ref = rotate_reference(x, cos[..., own[0]], sin[..., own[0]], cos[..., own[1]],
                               sin[..., own[1]], (first, second), rotary_dim)
        np.testing.assert_allclose(np.array(out), ref, rtol=1e-5, atol=1e-5)


def turboquant() -> ModuleType:
    return import_fresh("mlx_vlm.turboquant")


def pack_reference(values, bits):
    """Little-endian bit packing of each row into 32-bit words."""
    rows, length = values.shape
    width = (length * bits + 31) // 32
    bitstream = np.zeros((rows, width * 32), np.uint8)
    for i in range(length):
        for j in range(bits):
            bitstream[:, i * bits + j] = (values[:, i] >> j) & 1
    weights = (1 << np.arange(32, dtype=np.uint64))
    return (bitstream.reshape(rows, width, 32) * weights).sum(-1).astype(np.uint32)


@pytest.mark.parametrize("bits", [1, 3, 4])
def test_turboquant_pack_and_unpack_lowbit(metalsim_patch, bits):
    mod = turboquant()
    values = RNG.integers(0, 1 << bits, (3, 2, 21)).astype(np.uint32)
    packed = mod._pack_lowbit(mx.array(values), bits)
    np.testing.assert_array_equal(np.array(packed).reshape(6, -1),
                                  pack_reference(values.reshape(6, 21), bits))
    np.testing.assert_array_equal(np.array(mod._unpack_lowbit(packed, bits, 21)), values)


def mse_scores_reference(q, norms, indices, codebook):
    keys = codebook[indices] * norms[..., None]                       # (B, H, T, D)
    return np.einsum("bhrd,bhtd->bhrt", q.astype(np.float64), keys)


@pytest.mark.parametrize("tiled", [True, False])
def test_turboquant_mse_score_kernels(metalsim_patch, tiled):
    mod = turboquant()
    B, H, R, T, D, bits = 1, 2, 2, 3, 64, 3
    q, norms = normal(B, H, R, D), RNG.uniform(0.5, 2, (B, H, T)).astype(np.float32)
    indices = RNG.integers(0, 1 << bits, (B, H, T, D)).astype(np.uint32)
    codebook = normal(1 << bits)
    state = mod.TurboQuantMSEState(mx.array(norms), mod._pack_lowbit(mx.array(indices),
                                                                         bits))
    if tiled:
        scores = mod._metal_mse_score(mx.array(q), state, bits, mx.array(codebook))[:, :, :, 0]
    else:
        scores = mod._mse_score_kernel()(
            inputs=[mx.array(q), state.norms, state.indices, mx.array(codebook)],
            template=[("Dim", D), ("Bits", bits), ("PackedWidth", state.indices.shape[-1])],
            grid=(32, R, B * H * T), threadgroup=(32, 1, 1), output_shapes=[(B, H, R, T)],
            output_dtypes=[mx.float32])[0]
    np.testing.assert_allclose(np.array(scores), mse_scores_reference(q, norms, indices,
                                                                      codebook),
                               rtol=1e-4, atol=1e-4)


def test_turboquant_qjl_score_kernel(metalsim_patch):
    mod = turboquant()
    B, H, R, T, D = 1, 2, 3, 2, 64
    q = normal(B, H, R, D)
    norms, residual = (RNG.uniform(0.5, 2, (B, H, T)).astype(np.float32) for _ in range(2))
    signs = RNG.integers(0, 2, (B, H, T, D)).astype(np.uint32)
    state = mod.TurboQuantProdState(mx.array(norms), None, mx.array(residual),
                                       mod._pack_lowbit(mx.array(signs), 1))
    scores = mod._metal_qjl_score(mx.array(q), state, mx.array([0.25]))[:, :, :, 0]
    dots = np.einsum("bhrd,bhtd->bhrt", q.astype(np.float64), 2.0 * signs - 1)
    ref = dots * (norms * residual)[:, :, None, :] * 0.25
    np.testing.assert_allclose(np.array(scores), ref, rtol=1e-4, atol=1e-4)


def test_turboquant_tiled_mse_score_is_diagnosed_reading_past_the_keys_when_dim_is_not_a_multiple_of_32(  # noqa: E501
        metalsim_patch):
    """Upstream bug, in mlx-vlm 0.7.6's mlx_vlm/turboquant.py (`turboquant_mse_score_tiled_*`):
    the tiled kernel's lanes whose dimension d >= Dim (their query value is set to 0) still
    load the packed key word for d, which for the last token lies past the end of `packed`
    (the product is multiplied by 0, but the read is out of bounds)."""
    mod = turboquant()
    B, H, R, T, D, bits = 1, 1, 1, 2, 48, 3
    indices = RNG.integers(0, 1 << bits, (B, H, T, D)).astype(np.uint32)
    state = mod.TurboQuantMSEState(mx.ones((B, H, T)),
                                      mod._pack_lowbit(mx.array(indices), bits))
    with pytest.raises(metalsim.KernelFault, match="out-of-bounds read: 'packed' has 10"):
        mod._metal_mse_score(mx.ones((B, H, R, D)), state, bits, mx.arange(8.0))
