uint m = thread_position_in_grid.x;
uint g = thread_position_in_grid.y;
uint t = thread_position_in_grid.z;
uint G = a_shape[1], C = a_shape[2], M = a_shape[3];
uint k = a_idx[t], j = b_idx[t], r = o_idx[t];
// The dot product of feature row j with column m of slot k's weight, in a register.
float acc = 0.0f;
for (uint c = 0; c < C; ++c) {
    acc += b[(j * G + g) * C + c] * a[((k * G + g) * C + c) * M + m];
}
// Other triplets add into the same output row: one atomic add.
atomic_fetch_add_explicit(&out[(r * G + g) * M + m], acc, memory_order_relaxed);
