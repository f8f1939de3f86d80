"""The learner-facing harness (`MetalKernel`, `MetalProblem`); built on `metalsim`.

Drop-in compatible with Metal-Puzzles' `utils.py` (same fields, same methods):

    kernel = MetalKernel(name="map", input_names=["a"], output_names=["out"], source=source)
    problem = MetalProblem("Map", map_test, [a], output_shape, grid=(4, 1, 1), spec=map_spec)
    problem.show()      # the score table (max reads/writes per thread) and the diagram
    problem.explore()   # an interactive explorer of threads, phases and accesses
    problem.check()     # prints the verdict (and keeps it in `problem.result`)
    problem.hint()      # the next hint, for catalog puzzles
    problem.run_metal() # the kernel's output on this case (the GPU on a Mac, else metalsim)

Metal-Puzzles' puzzles, and problems outside the catalog, start with zero-filled outputs, as
Metal-Puzzles launches kernels (`init_value=0`); the catalog's other puzzles are launched as
their real kernels are.

A problem named like a catalog puzzle (including Metal-Puzzles titles such as "1D Conv (Full)")
is checked with that puzzle's spec, budget and hidden cases; other problems are checked on their
own case and spec. Kernels run in metalsim everywhere, and on the real GPU as well on Apple
silicon. `VERBOSE=1` in the environment prints the source MLX generates around the body.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import mlx.core as mx
import numpy as np

import metalsim
from metalsim.exec.launch import MAX_TRACED_THREADS
from metalsim.viz import Diagram, Explorer, draw
from puzzles.catalog import METAL_PUZZLES_INIT_VALUE, Case, Puzzle, all_puzzles
from puzzles.checking import (
    COUNT_LABELS,
    COUNT_NAMES,
    CheckResult,
    KernelArgs,
    call_kwargs,
    check_cases,
    metal_available,
    puzzle_cases,
)

__all__ = ["MetalKernel", "MetalProblem"]

# Metal-Puzzles' score table: four right-aligned columns of this width.
SCORE_WIDTH = 13


@dataclass
class MetalKernel:
    """The arguments of `mx.fast.metal_kernel`, kept for checking; calling it builds the kernel
    (MLX's on Apple silicon, metalsim's elsewhere). The first five fields are Metal-Puzzles'
    `(name, input_names, output_names, header, source)`, in its order."""

    name: str
    input_names: Sequence[str]
    output_names: Sequence[str]
    header: str = ""
    source: str = ""
    ensure_row_contiguous: bool = True
    atomic_outputs: bool = False
    compile_options: dict[str, str] | None = None

    def args(self) -> KernelArgs:
        return KernelArgs(
            name=self.name,
            input_names=tuple(self.input_names),
            output_names=tuple(self.output_names),
            source=self.source,
            header=self.header,
            ensure_row_contiguous=self.ensure_row_contiguous,
            atomic_outputs=self.atomic_outputs,
            compile_options=self.compile_options,
        )

    def __call__(self) -> Any:
        return build_kernel(self.args())


def build_kernel(args: KernelArgs) -> Any:
    """The kernel object: MLX's on Apple silicon, metalsim's elsewhere."""
    factory = mx.fast.metal_kernel if metal_available() else metalsim.metal_kernel
    return factory(**args.factory_kwargs())


def catalog_puzzle(title: str) -> Puzzle | None:
    """The catalog puzzle that has `title` among its titles (case-insensitive), or None."""
    wanted = title.strip().lower()
    return next((p for p in all_puzzles() if wanted in (t.lower() for t in p.titles)), None)


class MetalProblem:
    """One puzzle launch, as in Metal-Puzzles: `fn(*inputs)` returns the `MetalKernel`;
    `output_shapes` is the shape of the (one) output, as Metal-Puzzles names it."""

    def __init__(self, name: str, fn: Callable[..., MetalKernel], inputs: Sequence[Any],
                 output_shapes: Sequence[int], grid: tuple[int, int, int] = (1, 1, 1),
                 threadgroup: tuple[int, int, int] = (1, 1, 1),
                 spec: Callable[..., mx.array] | None = None) -> None:
        self.name = name
        self.fn = fn
        self.inputs = list(inputs)
        self.output_shapes = tuple(output_shapes)
        self.grid = tuple(grid)
        self.threadgroup = tuple(threadgroup)
        self.spec = spec
        self.puzzle = catalog_puzzle(name)
        self.result: CheckResult | None = None  # the verdict of the last check()
        self._hints_given = 0

    def _visible(self) -> Case:
        dtype = self.puzzle.visible.output_dtype if self.puzzle else "float32"
        return Case(inputs=tuple(np.array(x) for x in self.inputs),
                    output_shape=self.output_shapes, grid=self.grid,
                    threadgroup=self.threadgroup, output_dtype=dtype)

    def _kernel_for(self, case: Case) -> KernelArgs:
        """The learner's kernel for `case`: `fn` is called with the case's inputs."""
        kernel = self.fn(*(mx.array(x) for x in case.inputs))
        if not isinstance(kernel, MetalKernel):
            raise TypeError(f"{getattr(self.fn, '__name__', 'fn')} must return a MetalKernel, "
                            f"not {type(kernel).__name__}")
        return kernel.args()

    def _init_value(self) -> float | None:
        """What the outputs start as: the catalog puzzle's launch, else Metal-Puzzles' zeros."""
        return self.puzzle.launch_init_value if self.puzzle else METAL_PUZZLES_INIT_VALUE

    def check(self) -> None:
        """Run the kernel on this case (and the catalog puzzle's hidden cases) and print the
        verdict; `problem.result` keeps it (a `CheckResult`). Returns None, as Metal-Puzzles'
        does, so that a notebook cell shows only the printed verdict."""
        visible = self._visible()
        if os.environ.get("VERBOSE") == "1":
            self._print_source(visible)
        if self.puzzle is not None:
            p = self.puzzle
            result = check_cases(
                self.name, puzzle_cases(p, visible), p.spec, self._kernel_for,
                p.budget.limits(), init_value=p.launch_init_value, number=p.number,
                note_unwritten=p.init_value is None)
        else:
            result = check_cases(
                self.name, [("visible", visible)], self.spec or _missing_spec,
                self._kernel_for, {}, init_value=METAL_PUZZLES_INIT_VALUE)
        print(result.text)
        self.result = result

    def time(self, repeat: int = 20) -> float | None:
        """Time the kernel on this case on an NVIDIA GPU (metalsim.cuda; CUDA events, median
        of `repeat` launches) and print it; None where there is none (see the README)."""
        import metalsim.cuda

        if not metalsim.cuda.gpu_available():
            print("problem.time() needs an NVIDIA GPU and CuPy (Colab's GPU runtime has both).")
            return None
        case = self._visible()
        kernel = metalsim.metal_kernel(**self._kernel_for(case).factory_kwargs())
        call = call_kwargs(case, [mx.array(x) for x in case.inputs], self._init_value())
        if metalsim.simulate(kernel, **call).report.errors:   # never launch a faulty kernel
            print("Fix the errors problem.check() reports before timing the kernel.")
            return None
        ms = metalsim.cuda.time_kernel(kernel, repeat=repeat, **call)
        print(f"{self.name}: {ms:.4f} ms on {metalsim.cuda.gpu_name()} (median of {repeat})")
        return ms

    def show(self) -> Diagram | None:
        """Print the score table of the visible case — the maximum, over threads, of global and
        threadgroup ("shared") reads and writes, as Metal-Puzzles prints it — then the budget,
        and return the diagram (drawn from what the simulator did; Jupyter shows it inline)."""
        try:
            run = self.run_python()
        except Exception as exc:  # a broken kernel is for check() to explain
            print(f"# {self.name}\n(could not run the kernel: {str(exc).splitlines()[0]})")
            return None
        self.score(run)
        budget = self.puzzle.budget.limits() if self.puzzle else None
        return draw(run, inputs=list(self._visible().inputs), title=self.name, budget=budget)

    def run_python(self) -> metalsim.Run:
        """Simulate the visible case and return what every thread did (`metalsim.Run`, traced
        when small enough to draw every access); Metal-Puzzles' `run_python()` traced it in
        Python."""
        return self._simulate_visible()[2]

    def score(self, results: metalsim.Run) -> None:
        """Print the score table of `results` (from `run_python()`) as Metal-Puzzles does —
        the title, then per thread at most how many global and shared reads and writes — and
        then the budget of the catalog puzzle."""
        counts = results.report.max_per_thread()
        budget = self.puzzle.budget.limits() if self.puzzle else {}
        names = [n for n in COUNT_NAMES if n != "atomics" or counts.get(n, 0) or n in budget]

        def row(values: dict) -> str:
            return "   | " + " | ".join(f"{values.get(n, 0):>{SCORE_WIDTH}}" for n in names)

        lines = [f"# {self.name}", " ", "   Score (Max Per Thread):",
                 "   | " + " | ".join(f"{COUNT_LABELS[n]:>{SCORE_WIDTH}}" for n in names) + " |",
                 row(counts) + " | ", "        "]
        if budget:
            lines += ["   Budget (Max Per Thread):", row(budget) + " |"]
        lines.append("   (the visible case; check() reports the maximum over all its cases)")
        print("\n".join(lines))

    def run_metal(self) -> mx.array:
        """The kernel's output on this case, launched as `check()` launches it (zero-filled
        outputs for Metal-Puzzles' puzzles): on the GPU where Metal is available, in metalsim
        elsewhere (which raises `metalsim.KernelFault` on a bug such as a race)."""
        visible = self._visible()
        kernel = build_kernel(self._kernel_for(visible))
        call = call_kwargs(visible, list(self.inputs), self._init_value())
        return kernel(**call, verbose=os.environ.get("VERBOSE") == "1")[0]

    def explore(self) -> Explorer:
        """An interactive view of the visible case: pick a threadgroup, thread (or SIMD-group)
        and barrier phase to see its reads and writes, their source lines and values."""
        visible, kernel, run = self._simulate_visible()
        return Explorer(run, inputs=list(visible.inputs), kernel=kernel)

    def _simulate_visible(self) -> tuple[Case, metalsim.Kernel, metalsim.Run]:
        """Simulate the visible case, traced when it is small enough to draw every access."""
        visible = self._visible()
        kernel = metalsim.metal_kernel(**self._kernel_for(visible).factory_kwargs())
        traced = int(np.prod(visible.grid)) <= MAX_TRACED_THREADS
        run = metalsim.simulate(kernel, trace=traced, **call_kwargs(
            visible, [mx.array(x) for x in visible.inputs], self._init_value()))
        return visible, kernel, run

    def hint(self) -> None:
        """Print the next hint of the catalog puzzle (each call gives one more)."""
        if self.puzzle is None:
            print(f"No hints: {self.name!r} is not a puzzle of the catalog.")
            return
        hints = self.puzzle.hints
        if self._hints_given >= len(hints):
            print(f"That was the last hint ({len(hints)} of {len(hints)}); "
                  "the reference solution is in solutions/.")
            return
        self._hints_given += 1
        print(f"Hint {self._hints_given} of {len(hints)}: {hints[self._hints_given - 1]}")

    def _print_source(self, visible: Case) -> None:
        try:
            kernel = metalsim.metal_kernel(**self._kernel_for(visible).factory_kwargs())
            print(metalsim.source(kernel, **call_kwargs(
                visible, [mx.array(x) for x in visible.inputs], self._init_value())))
        except Exception as exc:
            print(f"(no generated source: {exc})")


def _missing_spec(*_inputs: mx.array) -> mx.array:
    raise ValueError("this MetalProblem has no spec=; pass the function that computes the "
                     "expected output")
