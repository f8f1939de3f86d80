"""Regenerate the diagrams in imgs/ from traced runs of the simulator.

    python imgs/make_images.py            # examples/*.png and puzzles/*.png
    python imgs/make_images.py --svg      # also the .svg of each

`examples/` are the kernels of `metalsim.viz.examples` (a map, a reversal and a count through
threadgroup memory, a tiled transpose, a race, a missing guard, an atomic count, and an untraced
256×256 tiled launch: none a puzzle's answer); `puzzles/` is every catalog puzzle's reference
solution on its visible case.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import mlx.core as mx

import metalsim
from metalsim.viz import Selection, draw
from metalsim.viz.examples import EXAMPLES

HERE = Path(__file__).resolve().parent
SCALE = 1.5          # PNG pixels per SVG unit: sharp, and the files stay small
MAX_THREADGROUPS = 2  # two frames tell the story; more only make the images long


def save(diagram, path: Path, svg: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    diagram.save(path.with_suffix(".png"), scale=SCALE)
    if svg:
        diagram.save(path.with_suffix(".svg"))
    print(path.with_suffix(".png").relative_to(HERE.parent))


def examples(svg: bool) -> None:
    for name, ex in EXAMPLES.items():
        traced = name != "transpose_256"  # too large to trace: drawn as a summary
        run = ex.simulate(trace=traced)
        diagram = draw(run, inputs=list(ex.inputs), title=ex.title,
                       max_threadgroups=MAX_THREADGROUPS)
        save(diagram, HERE / "examples" / name, svg)
    # One thread's view of the tiled transpose, as the explorer shows it.
    ex = EXAMPLES["transpose_tiled"]
    run = ex.simulate()
    one = draw(run, inputs=list(ex.inputs), threadgroups=[0],
               selection=Selection(0, frozenset({5})),
               title=f"{ex.title}: thread 5 of threadgroup 0")
    save(one, HERE / "examples" / "transpose_tiled_thread5", svg)


def puzzles(svg: bool) -> None:
    try:
        from puzzles.catalog import all_puzzles
        from puzzles.checking import call_kwargs
    except ImportError as exc:  # the catalog is optional for the examples
        print(f"puzzle diagrams skipped: {exc}", file=sys.stderr)
        return
    for p in all_puzzles():
        kernel = metalsim.metal_kernel(name=p.kernel, input_names=list(p.input_names),
                                       output_names=list(p.output_names), source=p.solution(),
                                       header=p.header, atomic_outputs=p.atomic_outputs)
        inputs = [mx.array(x) for x in p.visible.inputs]
        run = metalsim.simulate(kernel, trace=True,
                                **call_kwargs(p.visible, inputs, p.init_value))
        diagram = draw(run, inputs=inputs, title=f"{p.number}. {p.title}",
                       budget=p.budget.limits(), max_threadgroups=MAX_THREADGROUPS)
        save(diagram, HERE / "puzzles" / f"{p.number:02d}_{p.slug}", svg)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--svg", action="store_true", help="write .svg files too")
    args = parser.parse_args()
    examples(args.svg)
    puzzles(args.svg)


if __name__ == "__main__":
    main()
