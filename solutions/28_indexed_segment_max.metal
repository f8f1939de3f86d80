uint c = thread_position_in_grid.x;
uint s = thread_position_in_grid.y;
uint C = x_shape[1];
int start = offsets[s];
int end = start + lengths[s];
// Start from the identity, not from the first row: an empty segment's max is -inf.
float best = -INFINITY;
for (int p = start; p < end; ++p) {
    best = max(best, float(x[indices[p] * C + c]));
}
out[s * C + c] = best;
