threadgroup float cache[THREADGROUP_MEM_SIZE];
uint i = threadgroup_position_in_grid.x * dispatch_threads_per_threadgroup.x + thread_position_in_threadgroup.x;
uint local_i = thread_position_in_threadgroup.x;
// Threads past the end contribute 0, so every slot of the cache holds a value.
cache[local_i] = i < a_shape[0] ? float(a[i]) : 0.0f;
threadgroup_barrier(mem_flags::mem_threadgroup);
// Tree reduction: each step folds the upper half of the live slots onto the lower half.
for (uint stride = THREADGROUP_MEM_SIZE / 2; stride > 0; stride /= 2) {
    if (local_i < stride) {
        cache[local_i] += cache[local_i + stride];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (local_i == 0) {
    out[threadgroup_position_in_grid.x] = cache[0];
}
