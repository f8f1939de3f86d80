threadgroup float a_shared[THREADGROUP_MEM_SIZE][THREADGROUP_MEM_SIZE];
threadgroup float b_shared[THREADGROUP_MEM_SIZE][THREADGROUP_MEM_SIZE];

uint i = threadgroup_position_in_grid.y * dispatch_threads_per_threadgroup.y + thread_position_in_threadgroup.y;
uint j = threadgroup_position_in_grid.x * dispatch_threads_per_threadgroup.x + thread_position_in_threadgroup.x;

uint local_i = thread_position_in_threadgroup.y;
uint local_j = thread_position_in_threadgroup.x;
uint size = a_shape[0];
float acc = 0;
// Walk along k one tile at a time: the tile of `a` in our rows, the tile of `b` in our columns.
for (uint k0 = 0; k0 < size; k0 += THREADGROUP_MEM_SIZE) {
    uint ak = k0 + local_j;  // the column of `a` this thread copies
    uint bk = k0 + local_i;  // the row of `b` this thread copies
    // Outside the matrices the tiles are padded with zeros, which add nothing.
    a_shared[local_i][local_j] = i < size && ak < size ? a[i * size + ak] : 0.0f;
    b_shared[local_i][local_j] = bk < size && j < size ? b[bk * size + j] : 0.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint k = 0; k < THREADGROUP_MEM_SIZE; ++k) {
        acc += a_shared[local_i][k] * b_shared[k][local_j];
    }
    // Nobody may overwrite the tiles while another thread still reads them.
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (i < size && j < size) {
    out[i * size + j] = acc;
}
