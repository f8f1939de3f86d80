"""The step and time limits on the kernels of issue 10: how long a launch takes to reach them.

Run: python benchmarks/bench_limits.py

A one-thread loop of 250,000 iterations needs more than the default work limit and runs when
it is raised; a 400-term expression in an endless loop stops at the default limit after a few
hundred iterations; a wall-time limit stops a launch after the given seconds.
"""

from __future__ import annotations

import time

import mlx.core as mx

import metalsim

WIDE = " + ".join(["a[0]"] * 400)
CASES = [
    ("250,000-iteration loop, default limit",
     "float s = 0; for (int k = 0; k < 250000; k++) s += 1; out[0] = s;", {}),
    ("250,000-iteration loop, max_steps=10,000,000",
     "float s = 0; for (int k = 0; k < 250000; k++) s += 1; out[0] = s;",
     {"max_steps": 10_000_000}),
    ("400-term expression in an endless loop, default limit",
     f"float s = 0; for (int k = 0; k >= 0; k += 0) {{ s += {WIDE}; }} out[0] = s;", {}),
    ("endless loop, max_seconds=2",
     "float s = 0; for (uint k = 0; k < 4000000000u; k++) s += 1; out[0] = s;",
     {"max_steps": 10 ** 15, "max_seconds": 2}),
]


def main() -> None:
    for title, source, limits in CASES:
        kernel = metalsim.metal_kernel("k", ["a"], ["out"], source)
        started = time.monotonic()
        run = metalsim.simulate(kernel, inputs=[mx.ones(1)], output_shapes=[(1,)],
                                output_dtypes=[mx.float32], grid=(1, 1, 1),
                                threadgroup=(1, 1, 1), **limits)
        found = "; ".join(d.message for d in run.report.errors) or f"out[0] = {run.outputs[0]}"
        print(f"{title}: {time.monotonic() - started:.1f} s — {found}")


if __name__ == "__main__":
    main()
