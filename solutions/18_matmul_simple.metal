threadgroup float a_shared[THREADGROUP_MEM_SIZE][THREADGROUP_MEM_SIZE];
threadgroup float b_shared[THREADGROUP_MEM_SIZE][THREADGROUP_MEM_SIZE];

uint i = threadgroup_position_in_grid.y * dispatch_threads_per_threadgroup.y + thread_position_in_threadgroup.y;
uint j = threadgroup_position_in_grid.x * dispatch_threads_per_threadgroup.x + thread_position_in_threadgroup.x;

uint local_i = thread_position_in_threadgroup.y;
uint local_j = thread_position_in_threadgroup.x;
uint size = a_shape[0];
// The whole matrices fit in one threadgroup: each thread copies one element of each.
if (i < size && j < size) {
    a_shared[local_i][local_j] = a[i * size + j];
    b_shared[local_i][local_j] = b[i * size + j];
}
threadgroup_barrier(mem_flags::mem_threadgroup);
if (i < size && j < size) {
    float acc = 0;
    for (uint k = 0; k < size; ++k) {
        acc += a_shared[local_i][k] * b_shared[k][local_j];
    }
    out[i * size + j] = acc;
}
