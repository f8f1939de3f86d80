uint t = thread_position_in_grid.x;      // the pair
uint kind = thread_position_in_grid.y;   // 0: ball (Euclidean), 1: cube (Chebyshev)
uint n = a_idx_shape[0];
if (t < n) {
    float3 diff = load_point(a, a_idx[t]) - load_point(b, b_idx[t]);
    float3 m = abs(diff);
    float d = kind == 0 ? sqrt(dot(diff, diff)) : max(max(m.x, m.y), m.z);
    // Inclusive: a pair exactly at the radius is a neighbour.
    out[kind * n + t] = d <= radius[0];
}
