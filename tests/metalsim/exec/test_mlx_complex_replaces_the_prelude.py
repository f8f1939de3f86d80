"""With MLX's complex.h included (through utils.h), its `complex_t<float>` is the one
`complex64_t`: the prelude's stand-in and its operators are not declared (as candidates,
the stand-in's operators took a `short` and an `Int<36>` through complex_t's converting
constructor inside MLX's steel attention `BaseMMAFrag::load`, whose pointer offset became a
complex number: `test_mlx_attention_kernel.py` runs that kernel). Here: products of a short
and an integral_constant stay built-in, and MLX's own complex operators work."""

import mlx.core as mx
import numpy as np

import metalsim

HEADER = """#include "mlx/backend/metal/kernels/utils.h"
#include "mlx/backend/metal/kernels/steel/utils/integral_constant.h"
using namespace mlx::steel;
namespace mlx { namespace steel {
template <typename StrX>
float offset(StrX str_x) {   // as steel attention's BaseMMAFrag::load indexes
  short i = 3;
  return float(i * str_x);
}
} }
"""
SOURCE = """
out[0] = mlx::steel::offset(Int<36>{});
complex64_t a = complex64_t(1.0f, 2.0f), b = complex64_t(3.0f, 4.0f);
complex64_t c = a * b + a;
out[1] = c.real;
out[2] = c.imag;
"""


def test_builtin_products_of_short_and_integral_constant_and_mlx_complex_products():
    kernel = metalsim.metal_kernel("complex_stand_in", ["u"], ["out"], SOURCE, header=HEADER)
    kernel.include_dirs = (str(metalsim.mlx_include_dir()),)
    (out,) = kernel(inputs=[mx.zeros(1)], output_shapes=[(3,)], output_dtypes=[mx.float32],
                    grid=(1, 1, 1), threadgroup=(1, 1, 1))
    product = (1 + 2j) * (3 + 4j) + (1 + 2j)
    assert np.array(out).tolist() == [108.0, product.real, product.imag]
