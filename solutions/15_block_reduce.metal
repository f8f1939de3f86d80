threadgroup float partial[SIMDGROUPS];
uint i = thread_position_in_grid.x;
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;
// Level 1: each SIMD-group sums its 32 values in registers.
float s = simd_sum(a[i]);
if (lane == 0) {
    partial[sg] = s;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
// Level 2: SIMD-group 0 sums the SIMDGROUPS partial sums; the other lanes add 0.
if (sg == 0) {
    float total = simd_sum(lane < SIMDGROUPS ? partial[lane] : 0.0f);
    if (lane == 0) {
        out[threadgroup_position_in_grid.x] = total;
    }
}
