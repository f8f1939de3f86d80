uint i = thread_position_in_grid.x;
// Many threads may hit the same bin: the atomic add makes each increment indivisible.
atomic_fetch_add_explicit(&out[a[i]], 1, memory_order_relaxed);
