uint c = thread_position_in_grid.x;
uint s = thread_position_in_grid.y;
uint C = x_shape[1];
float best = y[s * C + c];
float g = gy[s * C + c];
int start = offsets[s];
int end = start + lengths[s];
for (int p = start; p < end; ++p) {
    uint r = indices[p];
    // Every element equal to the max gets the whole gradient (ties are not split). Row r
    // may appear in several segments, so its gradient is a sum: an atomic add.
    if (float(x[r * C + c]) == best) {
        atomic_fetch_add_explicit(&dx[r * C + c], g, memory_order_relaxed);
    }
}
