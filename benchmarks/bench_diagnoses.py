"""What naming a mistake's cause costs: check() of typical beginner mutants (a failing case
with colliding writers is run again, traced, to name the threads), and a kernel of many
atomic loads and stores (the lost-update shadow), best of several runs each.

Run: python benchmarks/bench_diagnoses.py
"""

from __future__ import annotations

import time

import mlx.core as mx

import metalsim
from puzzles.catalog import find
from puzzles.checking import check_kernel

REPEAT = 5

# (puzzle, old text of the reference solution, mutant text)
MUTANTS = {
    "6 local index (wrong index)": (
        6, "uint i = threadgroup_position_in_grid.x * dispatch_threads_per_threadgroup.x + "
           "thread_position_in_threadgroup.x;", "uint i = thread_position_in_threadgroup.x;"),
    "7 .x in the y index (wrong index)": (
        7, "threadgroup_position_in_grid.y * dispatch_threads_per_threadgroup.y + "
           "thread_position_in_threadgroup.y;",
        "threadgroup_position_in_grid.x * dispatch_threads_per_threadgroup.x + "
        "thread_position_in_threadgroup.x;"),
    "10 int accumulator (truncation)": (10, "float total = 0.0f;", "int total = 0;"),
    "23 load then store (lost update)": (
        23, "atomic_fetch_add_explicit(&out[(r * G + g) * M + m], acc, memory_order_relaxed);",
        "float old = atomic_load_explicit(&out[(r * G + g) * M + m], memory_order_relaxed);\n"
        "atomic_store_explicit(&out[(r * G + g) * M + m], old + acc, memory_order_relaxed);"),
    "1 reference solution (passes)": (1, "", ""),
}

LOAD_STORE_LOOP = """
uint i = thread_position_in_grid.x;
for (uint k = 0; k < 200; ++k) {
    float old = atomic_load_explicit(&out[i], memory_order_relaxed);
    atomic_store_explicit(&out[i], old + x[i], memory_order_relaxed);
}
"""


def best(run) -> float:
    times = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    for label, (number, old, new) in MUTANTS.items():
        puzzle = find(number)
        source = puzzle.solution().replace(old, new) if old else puzzle.solution()
        result = check_kernel(puzzle, source)
        seconds = best(lambda p=puzzle, s=source: check_kernel(p, s))
        # (getattr: the same script times the code before these diagnoses)
        named = getattr(result, "findings", result.diagnostics)
        first = named[0].kind if named else "-"
        print(f"check {label:<36} {seconds * 1e3:8.1f} ms  {result.status:<6} {first}")
    kernel = metalsim.metal_kernel("k", ["x"], ["out"], LOAD_STORE_LOOP, atomic_outputs=True)
    call = {"inputs": [mx.ones(4096)], "output_shapes": [(4096,)],
            "output_dtypes": [mx.float32], "grid": (4096, 1, 1), "threadgroup": (256, 1, 1),
            "init_value": 0}
    seconds = best(lambda: metalsim.simulate(kernel, **call))
    print(f"simulate 4096 threads x 200 atomic load+store  {seconds * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
