uint tile_row = threadgroup_position_in_grid.y;
uint tile_col = threadgroup_position_in_grid.x;
uint K = a_shape[1];
uint N = b_shape[1];
simdgroup_float8x8 acc = simdgroup_float8x8(0.0f);
for (uint k = 0; k < K; k += 8) {
    simdgroup_float8x8 a_tile, b_tile;
    // matrix_origin is (column, row) of the tile's top-left element.
    simdgroup_load(a_tile, a, K, ulong2(k, tile_row * 8));
    simdgroup_load(b_tile, b, N, ulong2(tile_col * 8, k));
    simdgroup_multiply_accumulate(acc, a_tile, b_tile, acc);
}
simdgroup_store(acc, out, N, ulong2(tile_col * 8, tile_row * 8));
