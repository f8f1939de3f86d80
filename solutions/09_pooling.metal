threadgroup float shared[THREADGROUP_MEM_SIZE];
uint i = threadgroup_position_in_grid.x * dispatch_threads_per_threadgroup.x + thread_position_in_threadgroup.x;
uint local_i = thread_position_in_threadgroup.x;

if (i < a_shape[0]) {
    shared[local_i] = a[i];
}
threadgroup_barrier(mem_flags::mem_threadgroup);

if (i < a_shape[0]) {
    float total = shared[local_i];
    if (local_i >= 1) {
        total += shared[local_i - 1];
    }
    if (local_i >= 2) {
        total += shared[local_i - 2];
    }
    out[i] = total;
}
