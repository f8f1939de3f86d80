threadgroup float partial[SIMDGROUPS];
uint i = thread_position_in_grid.x;
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;
// Level 1: each SIMD-group sums its 32 values in registers (0 past the end of `a`).
float s = simd_sum(i < a_shape[0] ? a[i] : 0.0f);
if (lane == 0) {
    partial[sg] = s;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
// Level 2: SIMD-group 0 sums the partial sums of the SIMD-groups this threadgroup has (fewer
// in a partial threadgroup); the other lanes add 0.
if (sg == 0) {
    float total = simd_sum(lane < simdgroups_per_threadgroup ? partial[lane] : 0.0f);
    if (lane == 0) {
        out[threadgroup_position_in_grid.x] = total;
    }
}
