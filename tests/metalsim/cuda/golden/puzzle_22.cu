
namespace metal {
__device__ __forceinline__ void custom_kernel_scatter_add_float_int32_t_float(const float *x, const int *x_shape, const int32_t *idx, atomic<float> *out, uint3 thread_position_in_grid) {
  uint c = thread_position_in_grid.x;
  uint t = thread_position_in_grid.y;
  uint C = x_shape[1];
  atomic_fetch_add_explicit((&out[((idx[t] * C) + c)]), x[((t * C) + c)], memory_order_relaxed);
}

extern "C" __global__ void __launch_bounds__(METALSIM_MAX_THREADS) metalsim_entry(void* b0, void* b1, void* b2, void* b3, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int tx, unsigned int ty, unsigned int tz) {
  const thread_info info = make_thread_info(gx, gy, gz, tx, ty, tz);
  if (!info.exists) return;
  custom_kernel_scatter_add_float_int32_t_float(pointer_arg{b0}, pointer_arg{b1}, pointer_arg{b2}, pointer_arg{b3}, attribute_as<uint3>::from(info.thread_position_in_grid));
}
}  // namespace metal
