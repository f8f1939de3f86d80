uint i = threadgroup_position_in_grid.x * dispatch_threads_per_threadgroup.x + thread_position_in_threadgroup.x;
uint j = threadgroup_position_in_grid.y * dispatch_threads_per_threadgroup.y + thread_position_in_threadgroup.y;
uint rows = a_shape[0];
uint cols = a_shape[1];
if (i < cols && j < rows) {
    out[j * cols + i] = a[j * cols + i] + 10;
}
