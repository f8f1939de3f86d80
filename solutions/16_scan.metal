threadgroup float totals[SIMDGROUPS];
uint i = thread_position_in_grid.x;
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;
// Scan within the SIMD-group (0 past the end of `a`); its last lane then holds the group's total.
float x = simd_prefix_inclusive_sum(i < a_shape[0] ? a[i] : 0.0f);
if (lane == 31) {
    totals[sg] = x;
}
threadgroup_barrier(mem_flags::mem_threadgroup);
// Add the totals of every SIMD-group before this one.
for (uint g = 0; g < sg; ++g) {
    x += totals[g];
}
if (i < a_shape[0]) {
    out[i] = x;
}
