"""`vec<T, 1>`: Metal's `vec` is clang's `ext_vector_type`, which takes one component (MLX's
steel attention declares `typedef metal::vec<T, kElemRows> row_frag_type;` with kElemRows 1).
It has the size of its element, `.x` and `[0]`, and component-wise arithmetic."""

import mlx.core as mx
import numpy as np

import metalsim

SOURCE = """
uint i = thread_position_in_grid.x;
vec<float, 1> v = vec<float, 1>(a[i]);
vec<float, 1> w = v + v;
w[0] += 1.0f;
w.x *= 3.0f;
out[i] = w.x + float(sizeof(v) * 100 + sizeof(vec<half, 1>));
"""


def test_a_one_component_vector_has_its_elements_size_and_computes_component_wise():
    kernel = metalsim.metal_kernel("vec1", ["a"], ["out"], SOURCE)
    (out,) = kernel(inputs=[mx.arange(4).astype(mx.float32)], output_shapes=[(4,)],
                    output_dtypes=[mx.float32], grid=(4, 1, 1), threadgroup=(4, 1, 1))
    x = np.arange(4, dtype=np.float32)
    assert np.array(out).tolist() == ((2 * x + 1) * 3 + 402).tolist()
