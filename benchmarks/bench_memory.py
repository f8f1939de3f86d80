"""Peak memory of a launch with a large threadgroup tile, and the budget's resource-limit.

Run: python benchmarks/bench_memory.py [THREADS] [BUDGET_BYTES]

A kernel with a 32 KiB threadgroup tile and threadgroups of 32 threads over 1,048,576 threads
(32,768 threadgroups, each with its tile and shadow) must stay within 2 GB of peak RSS; with a
budget too small for it, the launch is a `resource-limit` error before anything is allocated.
"""

from __future__ import annotations

import resource
import sys
import time

import mlx.core as mx
import numpy as np

import metalsim

BIG_TILE = """
threadgroup float tile[8192];
uint lid = thread_position_in_threadgroup.x, i = thread_position_in_grid.x;
tile[lid] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
out[i] = tile[31 - lid];
"""


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 20
    budget = int(sys.argv[2]) if len(sys.argv) > 2 else None
    kernel = metalsim.metal_kernel("big_tile", ["a"], ["out"], BIG_TILE)
    start = time.process_time()
    run = metalsim.simulate(kernel, inputs=[mx.arange(n, dtype=mx.float32)],
                            output_shapes=[(n,)], output_dtypes=[mx.float32], grid=(n, 1, 1),
                            threadgroup=(32, 1, 1), memory_budget=budget)
    seconds = time.process_time() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024   # KiB on Linux
    print(f"32 KiB tile, {n:,} threads, budget "
          f"{'default' if budget is None else f'{budget:,} bytes'}: {seconds:.2f} s CPU, "
          f"peak RSS {peak:,} MiB")
    for d in run.report.diagnostics:
        print(f"  {d.kind}: {d.message}")
    if not run.report.diagnostics:
        want = np.arange(n, dtype=np.float32).reshape(-1, 32)[:, ::-1].reshape(-1)
        np.testing.assert_array_equal(np.array(run.outputs[0]), want)


if __name__ == "__main__":
    main()
