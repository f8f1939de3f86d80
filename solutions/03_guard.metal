uint local_i = thread_position_in_grid.x;
if (local_i < a_shape[0]) {
    out[local_i] = a[local_i] + 10;
}
