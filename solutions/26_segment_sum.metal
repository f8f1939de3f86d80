uint lane = thread_index_in_simdgroup;
uint s = threadgroup_position_in_grid.y;
uint c = threadgroup_position_in_grid.z;
uint num_segments = lengths_shape[0];
uint C = x_shape[1];
// Lane k holds lengths[k]; the exclusive prefix sum over the lanes is where segment k starts.
int len = lane < num_segments ? lengths[lane] : 0;
int start = simd_prefix_exclusive_sum(len);
int seg_start = simd_broadcast(start, s);
int seg_len = simd_broadcast(len, s);
// One row per lane; lanes past the segment's end add 0, so an empty segment sums to 0.
float v = int(lane) < seg_len ? x[(seg_start + lane) * C + c] : 0.0f;
float total = simd_sum(v);
if (lane == 0) {
    out[s * C + c] = total;
}
