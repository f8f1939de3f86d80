uint c = thread_position_in_grid.x;
uint t = thread_position_in_grid.y;
uint C = x_shape[1];
// Output row t copies row idx[t] of x.
out[t * C + c] = x[idx[t] * C + c];
