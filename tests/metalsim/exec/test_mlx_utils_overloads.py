"""With MLX's own utils.h included (MLX prepends it to every kernel it builds), calls choose as
C++ does: Metal's SIMD-group functions for float data over bf16_math.h's bfloat overloads,
which serve bfloat data through Metal's `__metal_simd_*` intrinsics; and utils.h's
`ceildiv`/`elem_to_loc` replace the prelude's stand-ins for them (no ambiguity)."""

import ml_dtypes
import mlx.core as mx
import numpy as np

import metalsim

HEADER = '#include "mlx/backend/metal/kernels/utils.h"\n'

SOURCE = """
uint lane = thread_index_in_simdgroup;
float x = a[lane];
out[lane] = simd_sum(x);
out[32 + lane] = float(simd_sum(bfloat16_t(x)));
out[64 + lane] = simd_max(x + 1.0f);
out[96 + lane] = float(ceildiv(int(lane) + 5, 4));
"""


def test_float_data_takes_metals_simd_functions_and_bfloat_data_mlxs_overloads():
    kernel = metalsim.metal_kernel("mlx_utils_overloads", ["a"], ["out"], SOURCE, header=HEADER)
    kernel.include_dirs = (str(metalsim.mlx_include_dir()),)
    # 1 + 2^-10 per lane: a float sum keeps the small part (exactly), a bfloat one drops it.
    x = np.full(32, 1 + 2.0**-10, np.float32)
    x[5] = 3.0
    (out,) = kernel(inputs=[mx.array(x)], output_shapes=[(128,)], output_dtypes=[mx.float32],
                    grid=(32, 1, 1), threadgroup=(32, 1, 1))
    out = np.array(out).reshape(4, 32)
    assert (out[0] == np.float32(np.sum(x, dtype=np.float64))).all()
    as_bfloat = x.astype(ml_dtypes.bfloat16).astype(np.float32)
    assert (out[1] == np.float32(as_bfloat.sum()).astype(ml_dtypes.bfloat16)).all()
    assert (out[2] == 4.0).all()
    assert out[3].tolist() == [(lane + 5 + 3) // 4 for lane in range(32)]


SHUFFLE_SOURCE = """
uint lane = thread_index_in_simdgroup;
out[lane] = float(simd_shuffle_down(int(lane), 1));
out[32 + lane] = simd_shuffle_down(float(lane), 2u);
out[64 + lane] = float(simd_shuffle(short(lane), ushort(31 - lane)));
out[96 + lane] = float(simd_shuffle_down(long(lane) << 40, ushort(1)) >> 40);
"""


def test_metals_shuffles_take_their_own_data_types_beside_mlxs_wide_overloads():
    """For `int`, `float` and `short` data Metal's shuffle takes the data exactly, which no
    overload of MLX's converting it beats (however those rank among themselves); `long` data
    takes MLX's."""
    kernel = metalsim.metal_kernel("mlx_shuffles", ["a"], ["out"], SHUFFLE_SOURCE, header=HEADER)
    kernel.include_dirs = (str(metalsim.mlx_include_dir()),)
    (out,) = kernel(inputs=[mx.zeros(1)], output_shapes=[(128,)], output_dtypes=[mx.float32],
                    grid=(32, 1, 1), threadgroup=(32, 1, 1))
    lanes = np.arange(32)
    # simd_shuffle_down leaves the last `delta` lanes their own value.
    down1, down2 = (np.where(lanes + d < 32, lanes + d, lanes) for d in (1, 2))
    expected = np.concatenate([down1, down2, 31 - lanes, down1])
    np.testing.assert_array_equal(np.array(out), expected.astype(np.float32))
