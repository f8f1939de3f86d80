"""Bilinear grid sampling as an `mx.custom_function` with a forward and a VJP kernel, in the
shape of the MLX documentation's `grid_sample` example, with kernels written for this test,
against a plain-MLX reference and its autodiff.

The documentation (ml-explore/mlx docs/src/dev/custom_metal_kernels.rst, "Grid Sample VJP" at
v0.32.1) shows a `grid_sample` kernel (one thread per output element, NHWC input, grid in
[-1, 1] with align_corners=False) and a `grid_sample_grad` kernel (`atomic_outputs=True`,
`init_value=0`, channels padded to the SIMD-group width so that `simd_sum` reduces one grid
point's channels, `atomic_fetch_add_explicit` into both gradients). metalsim finds two bugs in it:
- the forward kernel loads all four corners from `x` before checking that they lie inside the
  image, so a sample within one pixel of the border reads out of bounds (the value is masked
  afterwards, but the read itself is undefined on a GPU); mlx-vlm copied it
  (tests/metalsim/corpus/test_mlx_vlm.py asserts it on the installed package);
- the VJP scales the grid gradient by `W / 2` and `H / 2` computed in integer arithmetic
  (`T gix_mult = W / 2;`), which is wrong for odd widths and heights.
The kernels here do the same work; their wrong variants make the same two mistakes.
"""

import mlx.core as mx
import numpy as np

import metalsim


def sample_reference(x: mx.array, grid: mx.array) -> mx.array:
    """Bilinear sampling in MLX operations: each of the four corners weighted by its tent
    function, read at a clamped index and zeroed outside the image (differentiable in both)."""
    batch, height, width, _ = x.shape
    px = ((grid[..., 0] + 1) * width - 1) / 2
    py = ((grid[..., 1] + 1) * height - 1) / 2
    x0 = mx.stop_gradient(mx.floor(px)).astype(mx.int32)
    y0 = mx.stop_gradient(mx.floor(py)).astype(mx.int32)
    images = mx.arange(batch)[:, None, None]
    total = 0
    for dy, dx in ((0, 0), (0, 1), (1, 0), (1, 1)):
        cx, cy = x0 + dx, y0 + dy
        weight = (1 - mx.abs(px - cx)) * (1 - mx.abs(py - cy))
        inside = (cx >= 0) & (cx < width) & (cy >= 0) & (cy < height)
        value = x[images, mx.clip(cy, 0, height - 1), mx.clip(cx, 0, width - 1)]
        total = total + (weight * inside)[..., None] * value
    return total


POINT = """
    int height = x_shape[1], width = x_shape[2], channels = x_shape[3];
    int points_per_image = grid_shape[1] * grid_shape[2];
    float px = ((float(grid[2 * point]) + 1.0f) * width - 1.0f) * 0.5f;
    float py = ((float(grid[2 * point + 1]) + 1.0f) * height - 1.0f) * 0.5f;
    int x0 = int(metal::floor(px)), y0 = int(metal::floor(py));
    int image = point / points_per_image;
"""

FORWARD = """
    uint elem = thread_position_in_grid.x;
    int channel = elem % x_shape[3];
    int point = elem / x_shape[3];
""" + POINT + """
    float total = 0.0f;
    for (int corner = 0; corner < 4; ++corner) {
        int cx = x0 + (corner & 1), cy = y0 + (corner >> 1);
        float weight = (1.0f - metal::abs(px - cx)) * (1.0f - metal::abs(py - cy));
        bool inside = cx >= 0 && cx < width && cy >= 0 && cy < height;
        int at = ((image * height + cy) * width + cx) * channels + channel;
        ACCUMULATE
    }
    out[elem] = T(total);
"""
CHECK_THEN_READ = "if (inside) { total += weight * float(x[at]); }"
READ_THEN_CHECK = "float value = float(x[at]);\n        total += inside ? weight * value : 0.0f;"

VJP = """
    uint elem = thread_position_in_grid.x;
    int lanes = (x_shape[3] + threads_per_simdgroup - 1) / threads_per_simdgroup
                * threads_per_simdgroup;
    int channel = elem % lanes;
    int point = elem / lanes;
""" + POINT + """
    float d_px = 0.0f, d_py = 0.0f;
    if (channel < channels) {
        float g = float(cotangent[point * channels + channel]);
        for (int corner = 0; corner < 4; ++corner) {
            int cx = x0 + (corner & 1), cy = y0 + (corner >> 1);
            if (cx < 0 || cx >= width || cy < 0 || cy >= height) {
                continue;
            }
            float wx = 1.0f - metal::abs(px - cx), wy = 1.0f - metal::abs(py - cy);
            int at = ((image * height + cy) * width + cx) * channels + channel;
            atomic_fetch_add_explicit(&x_grad[at], T(wx * wy * g), memory_order_relaxed);
            float v = float(x[at]) * g;
            d_px += v * wy * (px >= cx ? -1.0f : 1.0f);
            d_py += v * wx * (py >= cy ? -1.0f : 1.0f);
        }
    }
    SCALES
    d_px = simd_sum(d_px);
    d_py = simd_sum(d_py);
    if (thread_index_in_simdgroup == 0) {
        atomic_fetch_add_explicit(&grid_grad[2 * point], T(d_px * x_scale), memory_order_relaxed);
        atomic_fetch_add_explicit(&grid_grad[2 * point + 1], T(d_py * y_scale),
                                  memory_order_relaxed);
    }
"""


def forward(accumulate: str) -> str:
    """The forward kernel with `accumulate` as its loop's body."""
    return FORWARD.replace("ACCUMULATE", accumulate)


HALF_SIZES = "float x_scale = 0.5f * width, y_scale = 0.5f * height;"
INTEGER_HALF_SIZES = "float x_scale = width / 2, y_scale = height / 2;"


def make_grid_sample(vjp_scales: str = HALF_SIZES):
    @mx.custom_function
    def grid_sample(x, grid):
        out_shape = (*grid.shape[:3], x.shape[3])
        kernel = mx.fast.metal_kernel(name="bilinear_sample", input_names=["x", "grid"],
                                      output_names=["out"], source=forward(CHECK_THEN_READ))
        return kernel(inputs=[x, grid], template=[("T", x.dtype)], output_shapes=[out_shape],
                      output_dtypes=[x.dtype], grid=(int(np.prod(out_shape)), 1, 1),
                      threadgroup=(256, 1, 1))[0]

    @grid_sample.vjp
    def grid_sample_vjp(primals, cotangent, _):
        x, grid = primals
        lanes = -(-x.shape[3] // 32) * 32
        kernel = mx.fast.metal_kernel(name="bilinear_sample_vjp",
                                      input_names=["x", "grid", "cotangent"],
                                      output_names=["x_grad", "grid_grad"],
                                      source=VJP.replace("SCALES", vjp_scales), atomic_outputs=True)
        return tuple(kernel(inputs=[x, grid, cotangent], template=[("T", x.dtype)],
                            output_shapes=[x.shape, grid.shape], output_dtypes=[x.dtype] * 2,
                            grid=(int(np.prod(grid.shape[:3])) * lanes, 1, 1),
                            threadgroup=(256, 1, 1), init_value=0))

    return grid_sample


def inputs(width: int, height: int = 6, interior: bool = True, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = mx.array(rng.standard_normal((2, height, width, 5)).astype(np.float32))
    # Interior samples keep all four corners inside the image; others reach past the border.
    margin = 2.5 / min(width, height) if interior else 0.0
    grid = rng.uniform(-1 + margin, 1 - margin, (2, 3, 4, 2)).astype(np.float32)
    return x, mx.array(grid)


def close(got: mx.array, want: mx.array, tol: float = 1e-5) -> None:
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=tol, atol=tol)


def test_forward_equals_the_plain_mlx_reference(metalsim_patch):
    x, grid = inputs(width=8)
    close(make_grid_sample()(x, grid), sample_reference(x, grid))


def border_launch(body: str) -> metalsim.Run:
    x, grid = inputs(width=8, interior=False)
    grid = mx.concatenate([mx.full((2, 3, 1, 2), -1.0), grid[:, :, 1:]], axis=2)
    kernel = metalsim.metal_kernel("bilinear_sample", ["x", "grid"], ["out"], forward(body))
    run = metalsim.simulate(kernel, inputs=[x, grid], template=[("T", mx.float32)],
                            output_shapes=[(2, 3, 4, 5)], output_dtypes=[mx.float32],
                            grid=(2 * 3 * 4 * 5, 1, 1), threadgroup=(256, 1, 1))
    close(run.outputs[0], sample_reference(x, grid))   # the values are right either way
    return run


def test_checking_a_corner_before_reading_it_is_clean_at_the_border():
    assert not border_launch(CHECK_THEN_READ).report.diagnostics


def test_reading_a_corner_before_checking_it_is_diagnosed_out_of_bounds_at_the_border():
    run = border_launch(READ_THEN_CHECK)
    assert {d.kind for d in run.report.errors} == {"out-of-bounds"}
    assert all("'x'" in d.message for d in run.report.errors)


def vjp_of(fn, x, grid, cotangent):
    return mx.vjp(fn, [x, grid], [cotangent])[1]


def test_vjp_equals_autodiff_of_the_reference_for_even_and_odd_sizes(metalsim_patch):
    for width, height in ((8, 6), (7, 5)):
        x, grid = inputs(width=width, height=height)
        cot = mx.random.normal((2, 3, 4, 5), key=mx.random.key(width))
        for got, want in zip(vjp_of(make_grid_sample(), x, grid, cot),
                             vjp_of(sample_reference, x, grid, cot)):
            close(got, want, 1e-4)


def test_vjp_halving_the_sizes_in_integers_gets_the_grid_gradient_wrong_for_odd_width(
        metalsim_patch):
    x, grid = inputs(width=7, height=6)
    cot = mx.random.normal((2, 3, 4, 5), key=mx.random.key(7))
    want = vjp_of(sample_reference, x, grid, cot)
    got = vjp_of(make_grid_sample(INTEGER_HALF_SIZES), x, grid, cot)
    close(got[0], want[0], 1e-4)                                 # the image gradient is right
    close(np.array(got[1])[..., 1], np.array(want[1])[..., 1], 1e-4)   # even height: right
    wrong_x = np.array(got[1])[..., 0]
    np.testing.assert_allclose(wrong_x, np.array(want[1])[..., 0] * (7 // 2) / 3.5, rtol=1e-4,
                               atol=1e-4)                        # scaled by 3 instead of 3.5
