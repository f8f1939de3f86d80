"""MLX's kernel library in metalsim: which of the installed MLX's Metal kernel headers
compile, included in a kernel's `header` alone or after what MLX's .metal sources include
before them (`mlx_header_census`), and why each of the others stops, pinned so that progress
shows and a regression fails. `python benchmarks/mlx_header_census.py` prints the same.

92 of 98 compile, with namespace scoping and the header work of issue 28 together (27
before it; 71 with namespace scoping alone, 52 with the header work alone). Each reason is
the first error: `file:line: message`. What stops them, and the plan:

- MPP, 4 headers: Metal 4's MetalPerformancePrimitives
  (`#include <MetalPerformancePrimitives/...>`, which metalsim does not provide):
  `using namespace mpp;` (gated_delta_nax_ops.h:12, 3 headers) and
  `metal::dextents`/`metal::tensor` (steel_gemm_thin_nax.h:33). The NAX headers that
  compile (steel/gemm/nax.h, steel/attn/nax.h, their kernels) do so because their MPP calls
  sit in templates a header alone never instantiates; calling their `mma` stops at `mpp`.
  What they need: `mpp::tensor_ops::matmul2d_descriptor(M, N, K, transpose_left,
  transpose_right, relaxed_precision, mode)` (multiply, multiply_accumulate),
  `matmul2d<desc, metal::execution_simdgroup>` with `run(left, right, destination)` whose
  operands are cooperative tensors or `metal::tensor` views, and the cooperative tensors of
  `get_{left_input,right_input,destination}_cooperative_tensor<A, B, C>()` (`ct[i]`,
  `get_capacity()`, `get_multidimensional_index(i)`, `load`/`store` from and to tensors);
  `metal::tensor<device T, dextents<int32_t, 2>, tensor_inline>(ptr, extents, strides)`
  with `slice<E0, E1>(i, j)` and `dynamic_extent`, elements past a view's extents masked.
  Plan: model a cooperative tensor as each lane's registers and `run` as a SIMD-group
  collective (gather the 32 lanes' elements into the M×K and K×N operands, multiply, scatter
  the M×N result), as metalsim's simdgroup_matrix does. The one thing not known here is
  which lane holds which element: MPP defines it (Apple's MetalPerformancePrimitives
  headers, not in MLX's wheel) and MLX's NAX fragments assume it (nax.h's
  `BaseNAXFrag::get_coord`: lane l holds rows fm, fm + 8 and columns fn..fn + 3 of each 16×16
  fragment, fm = (l >> 2 & 4) | (l >> 1 & 3), fn = ((l >> 2 & 2) | (l & 1)) * 4). A faithful
  model takes the layout from Apple's headers (or `get_multidimensional_index` printed on a
  Metal 4 GPU with NAX, which MLX alone dispatches these kernels to) rather than from the
  code it would check, so it is left. (MLX's NAX GEMM and attention headers compile alone,
  not needing utils.h, so they count among the 52.) Their fragments are also 8-element
  vectors (`dtype_frag_t<T>` is `metal::vec<T, 8>`), which the Metal compiler accepts for
  them and metalsim's vector types (2 to 4 elements, as the MSL specification lists)
  refuse: "invalid vector type vec<float, 8>".
- PARAMETER_ADDRESS, unary.h and unary_ops.h: `FromFP8` reads its by-value parameter's bytes
  as another type (`*(thread fp8_e4m3*)(&x)`), and metalsim gives no address to a parameter.
  Plan: a parameter whose address is taken gets a thread-memory slot, as such locals do.
"""

import mlx_header_census

# Causes shared by several headers.
MPP_NAMESPACE = "gated_delta_nax_ops.h:12: expected namespace name"
PARAMETER_ADDRESS = "unary_ops.h:452: cannot take the address of this local variable"

LEFT: dict[str, str] = {
    "gated_delta_nax_ops.h": MPP_NAMESPACE,
    "gated_delta_update_nax.h": MPP_NAMESPACE,
    "gated_delta_update_nax_vjp.h": MPP_NAMESPACE,
    "steel/gemm/kernels/steel_gemm_thin_nax.h": (
        "steel/gemm/kernels/steel_gemm_thin_nax.h:33: no type named 'dextents' in namespace "
        "'metal'"),
    "unary.h": PARAMETER_ADDRESS,
    "unary_ops.h": PARAMETER_ADDRESS,
}


def test_the_kernel_headers_that_compile_and_why_each_other_one_does_not():
    results = mlx_header_census.census()
    left = {header: why for header, why in results.items() if why is not None}
    assert left == LEFT
    assert len(results) - len(left) == 92
