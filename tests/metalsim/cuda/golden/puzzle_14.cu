
namespace metal {
__device__ __forceinline__ void custom_kernel_simd_sum_float_float(const float *a, float *out, uint thread_index_in_simdgroup, uint3 thread_position_in_grid) {
  uint i = thread_position_in_grid.x;
  uint lane = thread_index_in_simdgroup;
  float total = simd_sum(a[i]);
  if ((lane == 0))
  {
    (out[(i / 32)] = total);
  }
}

extern "C" __global__ void __launch_bounds__(METALSIM_MAX_THREADS) metalsim_entry(void* b0, void* b1, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int tx, unsigned int ty, unsigned int tz) {
  const thread_info info = make_thread_info(gx, gy, gz, tx, ty, tz);
  if (!info.exists) return;
  custom_kernel_simd_sum_float_float(pointer_arg{b0}, pointer_arg{b1}, attribute_as<uint>::from(info.thread_index_in_simdgroup), attribute_as<uint3>::from(info.thread_position_in_grid));
}
}  // namespace metal
