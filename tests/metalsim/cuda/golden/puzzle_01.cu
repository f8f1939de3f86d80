
namespace metal {
__device__ __forceinline__ void custom_kernel_map_int32_tc_float(const int32_t *a, float *out, uint3 thread_position_in_grid) {
  uint local_i = thread_position_in_grid.x;
  (out[local_i] = (a[local_i] + 10));
}

extern "C" __global__ void __launch_bounds__(METALSIM_MAX_THREADS) metalsim_entry(void* b0, void* b1, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int tx, unsigned int ty, unsigned int tz) {
  const thread_info info = make_thread_info(gx, gy, gz, tx, ty, tz);
  if (!info.exists) return;
  custom_kernel_map_int32_tc_float(pointer_arg{b0}, pointer_arg{b1}, attribute_as<uint3>::from(info.thread_position_in_grid));
}
}  // namespace metal
