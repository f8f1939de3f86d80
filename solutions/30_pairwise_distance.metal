threadgroup float3 p_tile[TILE];
threadgroup float3 q_tile[TILE];
uint i = thread_position_in_grid.y;   // row of out: point p[i]
uint j = thread_position_in_grid.x;   // column of out: point q[j]
uint local_i = thread_position_in_threadgroup.y;
uint local_j = thread_position_in_threadgroup.x;
uint n = p_shape[0];
uint m = q_shape[0];

// Row 0 of the threadgroup stages the block's points of q, row 1 its points of p: one point
// read per thread, and each staged point serves a whole row or column of the block.
uint p_row = i - local_i + local_j;
if (local_i == 0 && j < m) {
    q_tile[local_j] = load_point(q, j);
} else if (local_i == 1 && p_row < n) {
    p_tile[local_j] = load_point(p, p_row);
}
threadgroup_barrier(mem_flags::mem_threadgroup);

if (i < n && j < m) {
    float3 diff = p_tile[local_i] - q_tile[local_j];
    out[i * m + j] = sqrt(dot(diff, diff));
}
