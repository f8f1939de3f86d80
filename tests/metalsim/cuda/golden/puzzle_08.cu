
namespace metal {
static __device__ const uint THREADGROUP_MEM_SIZE = 4;

__device__ __forceinline__ void custom_kernel_threadgroup_memory_float_float(const float *a, const int *a_shape, float *out, uint3 dispatch_threads_per_threadgroup, uint3 thread_position_in_threadgroup, uint3 threadgroup_position_in_grid, uint3 threads_per_threadgroup) {
  __shared__ float shared[THREADGROUP_MEM_SIZE];
  uint i = ((threadgroup_position_in_grid.x * dispatch_threads_per_threadgroup.x) + thread_position_in_threadgroup.x);
  uint local_i = thread_position_in_threadgroup.x;
  if ((i < a_shape[0]))
  {
    (shared[local_i] = a[i]);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if ((i < a_shape[0]))
  {
    (out[i] = (shared[local_i] + 10));
  }
}

extern "C" __global__ void __launch_bounds__(METALSIM_MAX_THREADS) metalsim_entry(void* b0, void* b1, void* b2, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int tx, unsigned int ty, unsigned int tz) {
  const thread_info info = make_thread_info(gx, gy, gz, tx, ty, tz);
  if (!info.exists) return;
  custom_kernel_threadgroup_memory_float_float(pointer_arg{b0}, pointer_arg{b1}, pointer_arg{b2}, attribute_as<uint3>::from(info.dispatch_threads_per_threadgroup), attribute_as<uint3>::from(info.thread_position_in_threadgroup), attribute_as<uint3>::from(info.threadgroup_position_in_grid), attribute_as<uint3>::from(info.threads_per_threadgroup));
}
}  // namespace metal
