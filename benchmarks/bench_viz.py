"""Speed of the diagrams: every example and puzzle diagram, and a 256×256 matmul summary.

Run: python benchmarks/bench_viz.py

Targets: each puzzle-sized diagram (traced run to SVG) under 2 s; a 256×256 tiled matmul launch
(16×16 threadgroups, not traced) to its summary diagram under 5 s. Times are the best of three,
split into the simulation and the drawing; PNG export is timed apart (it is not needed to show a
diagram in a notebook).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import mlx.core as mx

import metalsim
from metalsim.viz import draw
from metalsim.viz.examples import EXAMPLES


def best_of(fn: Callable[[], object], repeat: int = 3) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def row(label: str, simulate: Callable[[], object], inputs: list, target: float) -> None:
    sim_s, run = best_of(simulate)
    draw_s, diagram = best_of(lambda: draw(run, inputs=inputs))
    png_s, _ = best_of(lambda: diagram.to_png(), 1)
    total = sim_s + draw_s
    print(f"{label:34}{sim_s:8.3f} s{draw_s:8.3f} s{total:8.3f} s  (target {target:.0f} s)"
          f"{png_s:8.2f} s")


def puzzles() -> list[tuple[str, Callable[[], object], list]]:
    try:
        from puzzles.catalog import all_puzzles
        from puzzles.checking import call_kwargs
    except ImportError:
        return []
    out = []
    for p in all_puzzles():
        kernel = metalsim.metal_kernel(name=p.kernel, input_names=list(p.input_names),
                                       output_names=list(p.output_names), source=p.solution(),
                                       header=p.header, atomic_outputs=p.atomic_outputs)
        inputs = [mx.array(x) for x in p.visible.inputs]
        kwargs = call_kwargs(p.visible, inputs, p.init_value)
        out.append((f"puzzle {p.number:2} {p.slug}",
                    lambda k=kernel, kw=kwargs: metalsim.simulate(k, trace=True, **kw), inputs))
    return out


def main() -> None:
    print(f"{'diagram':34}{'simulate':>10}{'draw':>10}{'total':>10}{'':16}{'png':>8}")
    for name, ex in EXAMPLES.items():
        traced = name != "matmul_256"
        row(f"example {name}" + ("" if traced else " (summary)"),
            lambda ex=ex, traced=traced: ex.simulate(trace=traced), list(ex.inputs),
            2 if traced else 5)
    for label, simulate, inputs in puzzles():
        row(label, simulate, inputs, 2)


if __name__ == "__main__":
    main()
