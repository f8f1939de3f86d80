uint i = thread_position_in_grid.x;
uint lane = thread_index_in_simdgroup;
// Every lane must take part in simd_sum, so call it before any branch.
float total = simd_sum(a[i]);
if (lane == 0) {
    out[i / 32] = total;
}
