uint c = thread_position_in_grid.x;
uint t = thread_position_in_grid.y;
uint C = x_shape[1];
// Several rows may land on the same row idx[t]: the add must be atomic.
atomic_fetch_add_explicit(&out[idx[t] * C + c], x[t * C + c], memory_order_relaxed);
