
namespace metal {
__device__ __forceinline__ void custom_kernel_simdgroup_matmul_float_float_float(const float *a, const int *a_shape, const float *b, const int *b_shape, float *out, uint3 threadgroup_position_in_grid) {
  uint tile_row = threadgroup_position_in_grid.y;
  uint tile_col = threadgroup_position_in_grid.x;
  uint K = a_shape[1];
  uint N = b_shape[1];
  simdgroup_float8x8 acc = simdgroup_float8x8(0x0.0p+0f);
  #pragma unroll
  for (uint k = 0; (k < K); (k += 8))
  {
    simdgroup_float8x8 a_tile;
    simdgroup_float8x8 b_tile;
    simdgroup_load(a_tile, a, K, ulong2(k, (tile_row * 8)));
    simdgroup_load(b_tile, b, N, ulong2((tile_col * 8), k));
    simdgroup_multiply_accumulate(acc, a_tile, b_tile, acc);
  }
  simdgroup_store(acc, out, N, ulong2((tile_col * 8), (tile_row * 8)));
}

extern "C" __global__ void __launch_bounds__(METALSIM_MAX_THREADS) metalsim_entry(void* b0, void* b1, void* b2, void* b3, void* b4, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int tx, unsigned int ty, unsigned int tz) {
  const thread_info info = make_thread_info(gx, gy, gz, tx, ty, tz);
  if (!info.exists) return;
  custom_kernel_simdgroup_matmul_float_float_float(pointer_arg{b0}, pointer_arg{b1}, pointer_arg{b2}, pointer_arg{b3}, pointer_arg{b4}, attribute_as<uint3>::from(info.threadgroup_position_in_grid));
}
}  // namespace metal
