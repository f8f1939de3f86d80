uint i = threadgroup_position_in_grid.x * dispatch_threads_per_threadgroup.x + thread_position_in_threadgroup.x;
uint local_i = thread_position_in_threadgroup.x;

threadgroup float tile[THREADGROUP_MAX_CONV_SIZE];
threadgroup float filter[MAX_CONV];
uint size = a_shape[0];
uint taps = b_shape[0];
uint width = threads_per_threadgroup.x;

// Every thread loads its own element; the second global read is shared out: threads
// 0 .. taps-1 load the filter, threads taps .. 2*taps-2 load the halo past this tile.
tile[local_i] = i < size ? a[i] : 0.0f;
if (local_i < taps) {
    filter[local_i] = b[local_i];
} else if (local_i - taps < taps - 1) {
    uint halo = local_i - taps;
    uint j = i - local_i + width + halo;
    tile[width + halo] = j < size ? a[j] : 0.0f;
}
threadgroup_barrier(mem_flags::mem_threadgroup);

if (i < size) {
    float total = 0.0f;
    for (uint k = 0; k < taps; k++) {
        total += tile[local_i + k] * filter[k];
    }
    out[i] = total;
}
