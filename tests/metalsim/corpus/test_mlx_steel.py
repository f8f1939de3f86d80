"""MLX's own `steel` GEMM headers (tests/fixtures/mlx_steel, copied verbatim from
ml-explore/mlx), included by a kernel's `header` with `#include "mlx/backend/metal/kernels/..."`
resolved against the fixture as against MLX's installed `include` directory.

The parts of steel that metalsim compiles run and are compared with numpy; all of `gemm.h`
parses, but instantiating `GEMMKernel` does not compile yet, and the test pins the precise error
it stops at (see the README's list of what steel GEMM still needs)."""

import hashlib
import re

import mlx.core as mx
import numpy as np
import pytest
from corpus import FIXTURES

import metalsim

STEEL = FIXTURES.parent / "mlx_steel"
INCLUDE = STEEL / "include"


def test_the_vendored_headers_are_the_files_the_readme_lists_byte_for_byte():
    readme = (STEEL / "README.md").read_text()
    assert "Repository: https://github.com/ml-explore/mlx" in readme and "MIT" in readme
    listed = dict((path, digest) for digest, path in
                  re.findall(r"^([0-9a-f]{64})  (include/\S+)$", readme, re.M))
    files = sorted(str(p.relative_to(STEEL)) for p in INCLUDE.rglob("*") if p.is_file())
    assert files == sorted(listed) and len(files) == 9
    for path in files:
        assert hashlib.sha256((STEEL / path).read_bytes()).hexdigest() == listed[path], path


HEADER = """#include "mlx/backend/metal/kernels/steel/gemm/transforms.h"
#include "mlx/backend/metal/kernels/steel/gemm/params.h"
using namespace mlx::steel;
"""

SOURCE = """
uint i = thread_position_in_grid.x;
TransformAxpby<float, float> axpby(alpha[0], beta[0]);
float x = a[i];
out[i] = axpby.apply(x, c[i]) + TransformAdd<float, float>::apply(x, 1.0f)
         + TransformNone<float, float>::apply(x);
int2 tile = BlockSwizzle::swizzle(uint3(i, i / 3, 0), 1);
swizzled[i] = tile.x * 1000 + tile.y;
ulong2 locs = elem_to_loc_broadcast(i, dims, a_str, b_str, 3);
loc[i] = uint(locs.x * 1000 + locs.y);
GEMMParams p = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
typename AccumHelper<half>::accum_type k_plus_stride = p.K + p.batch_stride_b;
acc[i] = k_plus_stride;
"""


def test_steel_transforms_swizzle_params_and_broadcast_indexing_run_as_numpy_computes():
    n = 24
    x = np.arange(n, dtype=np.float32)
    c = np.full(n, 2.0, np.float32)
    dims, a_str, b_str = [2, 3, 4], [12, 4, 1], [0, 5, 1]
    with metalsim.patch(force=True, include_dirs=[INCLUDE]):
        kernel = mx.fast.metal_kernel("steel_parts", ["a", "c", "alpha", "beta", "dims", "a_str",
                                                      "b_str"],
                                      ["out", "swizzled", "loc", "acc"], SOURCE, header=HEADER)
        out, swizzled, loc, acc = kernel(
            inputs=[mx.array(x), mx.array(c), mx.array([2.0]), mx.array([0.5]),
                    mx.array(dims, dtype=mx.int32), mx.array(a_str, dtype=mx.int64),
                    mx.array(b_str, dtype=mx.int64)],
            output_shapes=[(n,)] * 4,
            output_dtypes=[mx.float32, mx.int32, mx.uint32, mx.float32],
            grid=(n, 1, 1), threadgroup=(n, 1, 1))
    i = np.arange(n)
    np.testing.assert_allclose(np.array(out), (x * 2.0 + 0.5 * c) + (x + 1) + x)
    assert np.array(swizzled).tolist() == ((i >> 1) * 1000 + (((i // 3) << 1) + (i & 1))).tolist()
    pos = np.stack(np.unravel_index(i, dims), axis=1)
    assert np.array(loc).tolist() == (pos @ a_str * 1000 + pos @ b_str).tolist()
    assert np.array(acc).tolist() == [13.0] * n


def test_steel_gemm_does_not_compile_yet_and_the_error_names_the_construct_and_line():
    header = '#include "mlx/backend/metal/kernels/steel/gemm/gemm.h"\nusing namespace mlx::steel;\n'
    source = ("using gemm_kernel = GEMMKernel<float, float, 32, 32, 16, 2, 2, false, false, "
              "true, true>;\nout[0] = gemm_kernel::tgp_mem_size;")
    with metalsim.patch(force=True, include_dirs=[INCLUDE]), pytest.raises(
            metalsim.CompileError) as info:
        mx.fast.metal_kernel("steel_gemm", ["a"], ["out"], source, header=header)(
            inputs=[mx.zeros(1)], output_shapes=[(1,)], output_dtypes=[mx.float32],
            grid=(1, 1, 1), threadgroup=(1, 1, 1))
    assert (info.value.coord.section, info.value.line) == (
        "mlx/backend/metal/kernels/steel/gemm/loader.h", 39)
    assert "pointer members are not supported by metalsim" in str(info.value)
    assert "in instantiation of 'BlockLoader<float, 32, 16, 20, 1, 128" in str(info.value)
