"""The MLX documentation's `grid_sample` (bilinear) forward and VJP kernels, unchanged under
`metalsim.patch()`, against the plain-MLX reference and its autodiff.

The simulator also finds two bugs in the documented kernels (see the README):
- the forward kernel reads `x` before checking that a corner is inside the image, so samples
  near the border read out of bounds (the value is then masked, but the read itself is
  undefined on a GPU);
- the VJP scales the grid gradient by `W / 2` and `H / 2` in integer arithmetic, which is wrong
  for odd widths and heights.
"""

import mlx.core as mx
import numpy as np

import metalsim


def grid_sample_ref(x, grid):
    N, H_in, W_in, _ = x.shape
    ix = ((grid[..., 0] + 1) * W_in - 1) / 2
    iy = ((grid[..., 1] + 1) * H_in - 1) / 2

    # The docs' reference, with the integer corner indices cut from autodiff (they are
    # piecewise constant; MLX's gather refuses a VJP with respect to its indices otherwise).
    ix_nw = mx.stop_gradient(mx.floor(ix).astype(mx.int32))
    iy_nw = mx.stop_gradient(mx.floor(iy).astype(mx.int32))

    ix_ne = ix_nw + 1
    iy_ne = iy_nw

    ix_sw = ix_nw
    iy_sw = iy_nw + 1

    ix_se = ix_nw + 1
    iy_se = iy_nw + 1

    nw = (ix_se - ix) * (iy_se - iy)
    ne = (ix - ix_sw) * (iy_sw - iy)
    sw = (ix_ne - ix) * (iy - iy_ne)
    se = (ix - ix_nw) * (iy - iy_nw)

    # The docs gather with the raw corner indices, which reach -1 and W at the border: MLX's
    # gather does not check them, so the reference itself reads out of bounds (sometimes NaN,
    # which the masking multiply below keeps). Clamping first gives the intended values.
    def corner(iy, ix):
        rows, cols = mx.clip(iy, 0, H_in - 1), mx.clip(ix, 0, W_in - 1)
        return x[mx.arange(N)[:, None, None], rows, cols, :]

    I_nw = corner(iy_nw, ix_nw)
    I_ne = corner(iy_ne, ix_ne)
    I_sw = corner(iy_sw, ix_sw)
    I_se = corner(iy_se, ix_se)

    mask_nw = (iy_nw >= 0) & (iy_nw <= H_in - 1) & (ix_nw >= 0) & (ix_nw <= W_in - 1)
    mask_ne = (iy_ne >= 0) & (iy_ne <= H_in - 1) & (ix_ne >= 0) & (ix_ne <= W_in - 1)
    mask_sw = (iy_sw >= 0) & (iy_sw <= H_in - 1) & (ix_sw >= 0) & (ix_sw <= W_in - 1)
    mask_se = (iy_se >= 0) & (iy_se <= H_in - 1) & (ix_se >= 0) & (ix_se <= W_in - 1)

    I_nw *= mask_nw[..., None]
    I_ne *= mask_ne[..., None]
    I_sw *= mask_sw[..., None]
    I_se *= mask_se[..., None]

    output = (nw[..., None] * I_nw + ne[..., None] * I_ne + sw[..., None] * I_sw
              + se[..., None] * I_se)

    return output


FORWARD = """
    uint elem = thread_position_in_grid.x;
    int H = x_shape[1];
    int W = x_shape[2];
    int C = x_shape[3];
    int gH = grid_shape[1];
    int gW = grid_shape[2];

    int w_stride = C;
    int h_stride = W * w_stride;
    int b_stride = H * h_stride;

    uint grid_idx = elem / C * 2;
    float ix = ((grid[grid_idx] + 1) * W - 1) / 2;
    float iy = ((grid[grid_idx + 1] + 1) * H - 1) / 2;

    int ix_nw = floor(ix);
    int iy_nw = floor(iy);

    int ix_ne = ix_nw + 1;
    int iy_ne = iy_nw;

    int ix_sw = ix_nw;
    int iy_sw = iy_nw + 1;

    int ix_se = ix_nw + 1;
    int iy_se = iy_nw + 1;

    T nw = (ix_se - ix)    * (iy_se - iy);
    T ne = (ix    - ix_sw) * (iy_sw - iy);
    T sw = (ix_ne - ix)    * (iy    - iy_ne);
    T se = (ix    - ix_nw) * (iy    - iy_nw);

    int batch_idx = elem / C / gH / gW * b_stride;
    int channel_idx = elem % C;
    int base_idx = batch_idx + channel_idx;

    T I_nw = x[base_idx + iy_nw * h_stride + ix_nw * w_stride];
    T I_ne = x[base_idx + iy_ne * h_stride + ix_ne * w_stride];
    T I_sw = x[base_idx + iy_sw * h_stride + ix_sw * w_stride];
    T I_se = x[base_idx + iy_se * h_stride + ix_se * w_stride];

    I_nw = iy_nw >= 0 && iy_nw <= H - 1 && ix_nw >= 0 && ix_nw <= W - 1 ? I_nw : 0;
    I_ne = iy_ne >= 0 && iy_ne <= H - 1 && ix_ne >= 0 && ix_ne <= W - 1 ? I_ne : 0;
    I_sw = iy_sw >= 0 && iy_sw <= H - 1 && ix_sw >= 0 && ix_sw <= W - 1 ? I_sw : 0;
    I_se = iy_se >= 0 && iy_se <= H - 1 && ix_se >= 0 && ix_se <= W - 1 ? I_se : 0;

    out[elem] = nw * I_nw + ne * I_ne + sw * I_sw + se * I_se;
"""

VJP = """
    uint elem = thread_position_in_grid.x;
    int H = x_shape[1];
    int W = x_shape[2];
    int C = x_shape[3];
    // Pad C to the nearest larger simdgroup size multiple
    int C_padded = ceildiv(C, threads_per_simdgroup) * threads_per_simdgroup;

    int gH = grid_shape[1];
    int gW = grid_shape[2];

    int w_stride = C;
    int h_stride = W * w_stride;
    int b_stride = H * h_stride;

    uint grid_idx = elem / C_padded * 2;
    float ix = ((grid[grid_idx] + 1) * W - 1) / 2;
    float iy = ((grid[grid_idx + 1] + 1) * H - 1) / 2;

    int ix_nw = floor(ix);
    int iy_nw = floor(iy);

    int ix_ne = ix_nw + 1;
    int iy_ne = iy_nw;

    int ix_sw = ix_nw;
    int iy_sw = iy_nw + 1;

    int ix_se = ix_nw + 1;
    int iy_se = iy_nw + 1;

    T nw = (ix_se - ix)    * (iy_se - iy);
    T ne = (ix    - ix_sw) * (iy_sw - iy);
    T sw = (ix_ne - ix)    * (iy    - iy_ne);
    T se = (ix    - ix_nw) * (iy    - iy_nw);

    int batch_idx = elem / C_padded / gH / gW * b_stride;
    int channel_idx = elem % C_padded;
    int base_idx = batch_idx + channel_idx;

    T gix = T(0);
    T giy = T(0);
    if (channel_idx < C) {
        int cot_index = elem / C_padded * C + channel_idx;
        T cot = cotangent[cot_index];
        if (iy_nw >= 0 && iy_nw <= H - 1 && ix_nw >= 0 && ix_nw <= W - 1) {
            int offset = base_idx + iy_nw * h_stride + ix_nw * w_stride;
            atomic_fetch_add_explicit(&x_grad[offset], nw * cot, memory_order_relaxed);

            T I_nw = x[offset];
            gix -= I_nw * (iy_se - iy) * cot;
            giy -= I_nw * (ix_se - ix) * cot;
        }
        if (iy_ne >= 0 && iy_ne <= H - 1 && ix_ne >= 0 && ix_ne <= W - 1) {
            int offset = base_idx + iy_ne * h_stride + ix_ne * w_stride;
            atomic_fetch_add_explicit(&x_grad[offset], ne * cot, memory_order_relaxed);

            T I_ne = x[offset];
            gix += I_ne * (iy_sw - iy) * cot;
            giy -= I_ne * (ix - ix_sw) * cot;
        }
        if (iy_sw >= 0 && iy_sw <= H - 1 && ix_sw >= 0 && ix_sw <= W - 1) {
            int offset = base_idx + iy_sw * h_stride + ix_sw * w_stride;
            atomic_fetch_add_explicit(&x_grad[offset], sw * cot, memory_order_relaxed);

            T I_sw = x[offset];
            gix -= I_sw * (iy - iy_ne) * cot;
            giy += I_sw * (ix_ne - ix) * cot;
        }
        if (iy_se >= 0 && iy_se <= H - 1 && ix_se >= 0 && ix_se <= W - 1) {
            int offset = base_idx + iy_se * h_stride + ix_se * w_stride;
            atomic_fetch_add_explicit(&x_grad[offset], se * cot, memory_order_relaxed);

            T I_se = x[offset];
            gix += I_se * (iy - iy_nw) * cot;
            giy += I_se * (ix - ix_nw) * cot;
        }
    }

    T gix_mult = W / 2;
    T giy_mult = H / 2;

    // Reduce across each simdgroup first.
    // This is much faster than relying purely on atomics.
    gix = simd_sum(gix);
    giy = simd_sum(giy);

    if (thread_index_in_simdgroup == 0) {
        atomic_fetch_add_explicit(&grid_grad[grid_idx], gix * gix_mult, memory_order_relaxed);
        atomic_fetch_add_explicit(&grid_grad[grid_idx + 1], giy * giy_mult, memory_order_relaxed);
    }
"""


def make_grid_sample(vjp_source: str = VJP):
    @mx.custom_function
    def grid_sample(x, grid):
        assert x.ndim == 4, "`x` must be 4D."
        assert grid.ndim == 4, "`grid` must be 4D."

        B, _, _, C = x.shape
        _, gN, gM, D = grid.shape
        out_shape = (B, gN, gM, C)

        assert D == 2, "Last dim of `grid` must be size 2."

        kernel = mx.fast.metal_kernel(
            name="grid_sample",
            input_names=["x", "grid"],
            output_names=["out"],
            source=FORWARD,
        )
        outputs = kernel(
            inputs=[x, grid],
            template=[("T", x.dtype)],
            output_shapes=[out_shape],
            output_dtypes=[x.dtype],
            grid=(np.prod(out_shape), 1, 1),
            threadgroup=(256, 1, 1),
        )
        return outputs[0]

    @grid_sample.vjp
    def grid_sample_vjp(primals, cotangent, _):
        x, grid = primals
        B, _, _, C = x.shape
        _, gN, gM, D = grid.shape

        assert D == 2, "Last dim of `grid` must be size 2."

        kernel = mx.fast.metal_kernel(
            name="grid_sample_grad",
            input_names=["x", "grid", "cotangent"],
            output_names=["x_grad", "grid_grad"],
            source=vjp_source,
            atomic_outputs=True,
        )
        # pad the output channels to simd group size
        # so that our `simd_sum`s don't overlap.
        simdgroup_size = 32
        C_padded = (C + simdgroup_size - 1) // simdgroup_size * simdgroup_size
        grid_size = B * gN * gM * C_padded
        outputs = kernel(
            inputs=[x, grid, cotangent],
            template=[("T", x.dtype)],
            output_shapes=[x.shape, grid.shape],
            output_dtypes=[x.dtype, x.dtype],
            grid=(grid_size, 1, 1),
            threadgroup=(256, 1, 1),
            init_value=0,
        )
        return outputs[0], outputs[1]

    return grid_sample


def inputs(width: int, height: int = 6, interior: bool = True, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = mx.array(rng.standard_normal((2, height, width, 5)).astype(np.float32))
    # Interior samples keep all four corners inside the image; others reach past the border.
    low, high = (-1 + 2.5 / min(width, height), 1 - 2.5 / min(width, height)) if interior else (
        -1.0, 1.0)
    grid = mx.array(rng.uniform(low, high, (2, 3, 4, 2)).astype(np.float32))
    return x, grid


def test_forward_equals_the_plain_mlx_reference(metalsim_patch):
    x, grid = inputs(width=8)
    np.testing.assert_allclose(np.array(make_grid_sample()(x, grid)),
                               np.array(grid_sample_ref(x, grid)), rtol=1e-5, atol=1e-5)


def test_forward_reads_out_of_bounds_for_samples_at_the_border():
    x, grid = inputs(width=8, interior=False)
    grid = mx.concatenate([mx.full((2, 3, 1, 2), -1.0), grid[:, :, 1:]], axis=2)
    kernel = metalsim.metal_kernel("grid_sample", ["x", "grid"], ["out"], FORWARD)
    run = metalsim.simulate(kernel, inputs=[x, grid], template=[("T", mx.float32)],
                            output_shapes=[(2, 3, 4, 5)], output_dtypes=[mx.float32],
                            grid=(2 * 3 * 4 * 5, 1, 1), threadgroup=(256, 1, 1))
    assert {d.kind for d in run.report.errors} == {"out-of-bounds"}
    # The masked result is still right; the read itself is the bug.
    np.testing.assert_allclose(np.array(run.outputs[0]), np.array(grid_sample_ref(x, grid)),
                               rtol=1e-5, atol=1e-5)


def vjp_of(fn, x, grid, cotangent):
    return mx.vjp(fn, [x, grid], [cotangent])[1]


def test_vjp_equals_autodiff_of_the_reference_for_even_sizes(metalsim_patch):
    x, grid = inputs(width=8, height=6)
    cot = mx.random.normal((2, 3, 4, 5))
    got = vjp_of(make_grid_sample(), x, grid, cot)
    want = vjp_of(grid_sample_ref, x, grid, cot)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.array(g), np.array(w), rtol=1e-4, atol=1e-4)


def test_vjp_grid_gradient_is_wrong_for_odd_width_because_of_integer_halving(metalsim_patch):
    x, grid = inputs(width=7, height=6)
    cot = mx.random.normal((2, 3, 4, 5))
    want = vjp_of(grid_sample_ref, x, grid, cot)
    got = vjp_of(make_grid_sample(), x, grid, cot)
    np.testing.assert_allclose(np.array(got[0]), np.array(want[0]), rtol=1e-4, atol=1e-4)
    assert not np.allclose(np.array(got[1])[..., 0], np.array(want[1])[..., 0], rtol=1e-3)
    fixed = VJP.replace("T gix_mult = W / 2;", "T gix_mult = T(W) / 2;").replace(
        "T giy_mult = H / 2;", "T giy_mult = T(H) / 2;")
    got = vjp_of(make_grid_sample(fixed), x, grid, cot)
    np.testing.assert_allclose(np.array(got[1]), np.array(want[1]), rtol=1e-4, atol=1e-4)
