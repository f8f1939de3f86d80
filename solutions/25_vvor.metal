uint m = thread_position_in_grid.x;
uint c = thread_position_in_grid.y;
uint G = a_shape[1], C = a_shape[2], M = b_shape[2];
uint k = thread_position_in_grid.z / G;
uint g = thread_position_in_grid.z % G;
// This thread owns o[k, g, c, m]: it sums slot k's whole segment, so no atomics are needed.
float acc = 0.0f;
for (uint t = seg_offs[k]; t < seg_offs[k + 1]; ++t) {
    acc += a[(a_idx[t] * G + g) * C + c] * b[(b_idx[t] * G + g) * M + m];
}
out[((k * G + g) * C + c) * M + m] = acc;
