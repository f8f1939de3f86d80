"""The learner-facing harness (`MetalKernel`, `MetalProblem`); built on `metalsim`.

Drop-in compatible with Metal-Puzzles' `utils.py`:

    kernel = MetalKernel(name="map", input_names=["a"], output_names=["out"], source=source)
    problem = MetalProblem("Map", map_test, [a], output_shape, grid=(4, 1, 1), spec=map_spec)
    problem.show()      # the score table (max reads/writes per thread) and the diagram
    problem.explore()   # an interactive explorer of threads, phases and accesses
    problem.check()     # prints the verdict, returns a CheckResult (truthy iff passed)
    problem.hint()      # the next hint, for catalog puzzles

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
from puzzles.catalog import Case, Puzzle, all_puzzles
from puzzles.checking import (
    COUNT_NAMES,
    CheckResult,
    KernelArgs,
    call_kwargs,
    check_cases,
    metal_available,
    puzzle_cases,
    score_table,
)

__all__ = ["MetalKernel", "MetalProblem"]


@dataclass
class MetalKernel:
    """The arguments of `mx.fast.metal_kernel`, kept for checking; calling it builds the kernel
    (MLX's on Apple silicon, metalsim's elsewhere)."""

    name: str
    input_names: Sequence[str]
    output_names: Sequence[str]
    source: str
    header: str = ""
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
        factory = mx.fast.metal_kernel if metal_available() else metalsim.metal_kernel
        return factory(**self.args().factory_kwargs())


# Hints given so far, per puzzle number: kept by the module, not the problem, so that re-running
# a puzzle's cell (which makes a new MetalProblem) does not start the hints over.
_HINTS_GIVEN: dict[int, int] = {}


def catalog_puzzle(title: str) -> Puzzle | None:
    """The catalog puzzle that has `title` among its titles (case-insensitive), or None."""
    wanted = title.strip().lower()
    return next((p for p in all_puzzles() if wanted in (t.lower() for t in p.titles)), None)


class MetalProblem:
    """One puzzle launch, as in Metal-Puzzles: `fn(*inputs)` returns the `MetalKernel`."""

    def __init__(self, name: str, fn: Callable[..., MetalKernel], inputs: Sequence[Any],
                 output_shape: Sequence[int], grid: tuple[int, int, int] = (1, 1, 1),
                 threadgroup: tuple[int, int, int] = (1, 1, 1),
                 spec: Callable[..., mx.array] | None = None) -> None:
        self.name = name
        self.fn = fn
        self.inputs = list(inputs)
        self.output_shape = tuple(output_shape)
        self.grid = tuple(grid)
        self.threadgroup = tuple(threadgroup)
        self.spec = spec
        self.puzzle = catalog_puzzle(name)

    def _visible(self) -> Case:
        dtype = self.puzzle.visible.output_dtype if self.puzzle else "float32"
        return Case(inputs=tuple(np.array(x) for x in self.inputs),
                    output_shape=self.output_shape, grid=self.grid,
                    threadgroup=self.threadgroup, output_dtype=dtype)

    def _kernel_for(self, case: Case) -> KernelArgs:
        """The learner's kernel for `case`: `fn` is called with the case's inputs."""
        kernel = self.fn(*(mx.array(x) for x in case.inputs))
        if not isinstance(kernel, MetalKernel):
            raise TypeError(f"{getattr(self.fn, '__name__', 'fn')} must return a MetalKernel, "
                            f"not {type(kernel).__name__}")
        return kernel.args()

    def _init_value(self) -> float | None:
        return self.puzzle.init_value if self.puzzle else None

    def check(self) -> CheckResult:
        """Run the kernel on this case (and the catalog puzzle's hidden cases), print the
        verdict and return it."""
        visible = self._visible()
        if os.environ.get("VERBOSE") == "1":
            self._print_source(visible)
        if self.puzzle is not None:
            p = self.puzzle
            result = check_cases(
                self.name, puzzle_cases(p, visible, title=self.name), p.spec, self._kernel_for,
                p.budget.limits(), init_value=p.init_value, number=p.number)
        else:
            result = check_cases(
                self.name, [("visible", visible)], self.spec or _missing_spec,
                self._kernel_for, {})
        print(result.text)
        return result

    def show(self) -> Diagram | None:
        """Print the score table of the visible case — the maximum, over threads, of global and
        threadgroup ("shared") reads and writes, as Metal-Puzzles does — and return its diagram
        (drawn from what the simulator did; Jupyter shows it inline)."""
        print(f"# {self.name}")
        try:
            visible, kernel, run = self._simulate_visible()
        except Exception as exc:  # a broken kernel is for check() to explain
            print(f"(could not run the kernel: {str(exc).splitlines()[0]})")
            return None
        counts = run.report.max_per_thread()
        budget = self.puzzle.budget.limits() if self.puzzle else None
        print("\n".join(score_table({n: counts.get(n, 0) for n in COUNT_NAMES}, budget)))
        return draw(run, inputs=list(visible.inputs), title=self.name, budget=budget)

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
        hints, given = self.puzzle.hints, _HINTS_GIVEN.get(self.puzzle.number, 0)
        if given >= len(hints):
            print(f"That was the last hint ({len(hints)} of {len(hints)}); "
                  "the reference solution is in solutions/.")
            return
        _HINTS_GIVEN[self.puzzle.number] = given + 1
        print(f"Hint {given + 1} of {len(hints)}: {hints[given]}")

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
