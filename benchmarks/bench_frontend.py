"""What compiling a small kernel costs: lexing, preprocessing and parsing a hundred-line kernel
(each should take a few milliseconds: the learner's every check pays them), then preprocessing,
parsing and compiling a generated text (MLX's prelude helpers included) for puzzle 1's reference
solution and a generated pointer program of the gcc oracle, whose thousands of kernels the fuzz
tests compile one by one.

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
from metalsim.diagnostics import SourceMap  # noqa: E402
from metalsim.exec.launch import compile_program, deep_recursion  # noqa: E402
from metalsim.lang.lexer import tokenize  # noqa: E402
from metalsim.lang.parser import parse  # noqa: E402
from metalsim.lang.preprocess import preprocess  # noqa: E402
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


# A hundred lines in the style of a tiled kernel: macros, conditionals, literals of every kind.
HUNDRED_LINES = (
    "#define TILE 16\n#define IDX(r, c) ((r) * TILE + (c))\n"
    "#if __METAL_VERSION__ >= 310 && defined(__HAVE_BFLOAT__)\n"
    "  tile[IDX(lid.y, lid.x)] = a[IDX(gid, k + lid.x)] * 1.5e-3f + 0x1Fu; // load\n"
    "#endif\n"
    "  for (int i = 0; i < TILE; ++i) { acc += tile[IDX(lid.y, i)] * b[i]; }\n"
) * 17
PARSEABLE = (
    "template <typename T, int N = 4>\ninline T scale(T x) { return x * T(N); }\n"
    "[[kernel]] void k(const device float* inp [[buffer(0)]], device float* out [[buffer(1)]],\n"
    "                  uint3 gid [[thread_position_in_grid]]) {\n"
    "  uint i = gid.x;\n  float acc = 0.0f;\n"
    + "  for (int j = 0; j < 3; ++j) { acc += 0.25f * inp[i + j]; }\n"
      "  out[i] = i > 0 ? scale<float, 2>(acc) : (float)static_cast<int>(acc) >> 1;\n" * 45
    + "}\n")


def least_ms(action, repeat: int = 20) -> float:
    """The least wall time of `repeat` runs, in milliseconds (the least is the least disturbed)."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return min(times) * 1e3


def front_end_stages() -> None:
    source_map = SourceMap(HUNDRED_LINES)
    print(f"{'lex a 100-line kernel':34} "
          f"{least_ms(lambda: tokenize(HUNDRED_LINES, source_map)):6.2f} ms")
    print(f"{'preprocess a 100-line kernel':34} "
          f"{least_ms(lambda: preprocess(HUNDRED_LINES, source_map)):6.2f} ms")
    parse_map = SourceMap(PARSEABLE)
    tokens = preprocess(PARSEABLE, parse_map)
    print(f"{'parse a 100-line kernel':34} {least_ms(lambda: parse(tokens, parse_map)):6.2f} ms")


def main() -> None:
    front_end_stages()
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
