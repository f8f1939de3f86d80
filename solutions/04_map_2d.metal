uint thread_x = thread_position_in_grid.x;
uint thread_y = thread_position_in_grid.y;
uint rows = a_shape[0];
uint cols = a_shape[1];
if (thread_x < cols && thread_y < rows) {
    out[thread_y * cols + thread_x] = a[thread_y * cols + thread_x] + 10;
}
