threadgroup float shared[THREADGROUP_MEM_SIZE];
uint i = threadgroup_position_in_grid.x * dispatch_threads_per_threadgroup.x + thread_position_in_threadgroup.x;
uint local_i = thread_position_in_threadgroup.x;

shared[local_i] = i < a_shape[0] ? a[i] * b[i] : 0.0f;
threadgroup_barrier(mem_flags::mem_threadgroup);

if (local_i == 0) {
    float total = 0.0f;
    for (uint k = 0; k < threads_per_threadgroup.x; k++) {
        total += shared[k];
    }
    out[0] = total;
}
