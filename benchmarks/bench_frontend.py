"""What compiling a small kernel costs: preprocessing, parsing and compiling its generated text
(MLX's prelude helpers included), for puzzle 1's reference solution and a generated pointer
program of the gcc oracle, whose thousands of kernels the fuzz tests compile one by one.

Run: python benchmarks/bench_frontend.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "metalsim"))

import cgen  # noqa: E402
import cgen_pointers  # noqa: E402

import metalsim  # noqa: E402
from metalsim.exec.launch import compile_program, deep_recursion  # noqa: E402
from puzzles.catalog import all_puzzles  # noqa: E402

REPEAT = 200


def generated(kernel, **launch):
    """The text MLX would generate for one launch of `kernel`."""
    return kernel._prepare((), launch).gen


def per_compile(text: str, sections: tuple) -> float:
    """CPU seconds of one uncached compile of `text` (each run a distinct text)."""
    started = time.process_time()
    with deep_recursion():
        for n in range(REPEAT):
            compile_program(text + f"\n// {n}\n", sections, "safe")
    return (time.process_time() - started) / REPEAT


def main() -> None:
    import mlx.core as mx
    import numpy as np

    p = all_puzzles()[0]
    kernel = metalsim.metal_kernel(p.kernel, list(p.input_names), list(p.output_names),
                                   p.solution(), header=p.header)
    case = p.visible
    gen = generated(kernel, inputs=[mx.array(np.asarray(x)) for x in case.inputs],
                    output_shapes=[case.output_shape], output_dtypes=[mx.float32],
                    grid=case.grid, threadgroup=case.threadgroup)
    prog = cgen_pointers.block(cgen.RandomChooser(0), 10)
    pk = metalsim.metal_kernel("pointers", ["in_int", "in_float"], ["o_int", "o_float"],
                               cgen.kernel_source(prog))
    inputs = cgen.make_inputs(0)
    pgen = generated(pk, inputs=[mx.array(inputs["int"]), mx.array(inputs["float"])],
                     output_shapes=[(64,), (64,)], output_dtypes=[mx.int32, mx.float32],
                     grid=(64, 1, 1), threadgroup=(64, 1, 1))
    for label, g in ((f"puzzle 1 ({p.slug}) solution", gen), ("pointer program", pgen)):
        print(f"{label:34} {per_compile(g.text, tuple(g.sections)) * 1e3:6.2f} ms per compile")


if __name__ == "__main__":
    main()
