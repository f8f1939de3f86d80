uint i = threadgroup_position_in_grid.x * dispatch_threads_per_threadgroup.x + thread_position_in_threadgroup.x;
if (i < a_shape[0]) {
    out[i] = a[i] + 10;
}
