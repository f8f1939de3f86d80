uint m = thread_position_in_grid.x;
uint g = thread_position_in_grid.y;
uint chunk = thread_position_in_grid.z;
uint G = a_shape[1], C = a_shape[2], M = a_shape[3];
uint T = o_idx_shape[0];
uint first = chunk * CHUNK;
uint last = min(first + CHUNK, T);
float acc = 0.0f;
uint run = o_idx[first];   // the output row being summed
for (uint t = first; t < last; ++t) {
    uint r = o_idx[t];
    if (r != run) {
        // The run ended: hand its sum over (a neighbouring chunk may add to the same row).
        atomic_fetch_add_explicit(&out[(run * G + g) * M + m], acc, memory_order_relaxed);
        acc = 0.0f;
        run = r;
    }
    uint k = a_idx[t], j = b_idx[t];
    for (uint c = 0; c < C; ++c) {
        acc += b[(j * G + g) * C + c] * a[((k * G + g) * C + c) * M + m];
    }
}
atomic_fetch_add_explicit(&out[(run * G + g) * M + m], acc, memory_order_relaxed);
