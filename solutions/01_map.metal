uint local_i = thread_position_in_grid.x;
out[local_i] = a[local_i] + 10;
