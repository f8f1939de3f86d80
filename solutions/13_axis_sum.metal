threadgroup float cache[THREADGROUP_MEM_SIZE];
uint i = threadgroup_position_in_grid.x * dispatch_threads_per_threadgroup.x + thread_position_in_threadgroup.x;
uint local_i = thread_position_in_threadgroup.x;
uint batch = threadgroup_position_in_grid.y;
uint size = a_shape[1];
// Row `batch` starts at batch * size; threads past the row's end contribute 0.
cache[local_i] = i < size ? float(a[batch * size + i]) : 0.0f;
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint stride = THREADGROUP_MEM_SIZE / 2; stride > 0; stride /= 2) {
    if (local_i < stride) {
        cache[local_i] += cache[local_i + stride];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (local_i == 0) {
    out[batch] = cache[0];
}
