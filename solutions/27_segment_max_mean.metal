uint lane = thread_index_in_simdgroup;
uint s = threadgroup_position_in_grid.y;
uint c = threadgroup_position_in_grid.z;
uint num_segments = lengths_shape[0];
uint C = x_shape[1];
int len = lane < num_segments ? lengths[lane] : 0;
int start = simd_prefix_exclusive_sum(len);
int seg_start = simd_broadcast(start, s);
int seg_len = simd_broadcast(len, s);
bool inside = int(lane) < seg_len;
float v = inside ? x[(seg_start + lane) * C + c] : 0.0f;
// Lanes outside the segment contribute each reduction's identity: -inf to max, 0 to the sum.
float biggest = simd_max(inside ? v : -INFINITY);
float total = simd_sum(v);
if (lane == 0) {
    out[s * C + c] = biggest;
}
if (lane == 1) {
    // Divide by at least 1: the mean of an empty segment is 0, not 0/0.
    out[(num_segments + s) * C + c] = total / float(max(seg_len, 1));
}
