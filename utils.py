"""The learner-facing harness (`MetalKernel`, `MetalProblem`); built on `metalsim`.

Drop-in compatible with Metal-Puzzles' `utils.py` (same fields, same methods):

    kernel = MetalKernel(name="map", input_names=["a"], output_names=["out"], source=source)
    problem = MetalProblem("Map", map_test, [a], output_shape, grid=(4, 1, 1), spec=map_spec)
    problem.show()      # the score table (max reads/writes per thread) and the diagram
    problem.explore()   # an interactive explorer of threads, phases and accesses
    problem.show(case=2), problem.explore(case=2)   # the same for hidden case 2
    problem.report()    # memory traffic, coalescing, bank conflicts, beside the reference
    problem.check()     # prints the verdict (and keeps it in `problem.result`)
    problem.hint()      # the next hint, for catalog puzzles
    problem.solution()  # the reference solution with a walkthrough, once you have tried
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

import math
import os
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import mlx.core as mx
import numpy as np

import metalsim
from metalsim.efficiency import comparison
from metalsim.viz import Diagram, Explorer, draw, threadgroups_to_trace
from puzzles.catalog import METAL_PUZZLES_INIT_VALUE, Case, Puzzle, all_puzzles
from puzzles.checking import (
    COUNT_LABELS,
    COUNT_NAMES,
    CheckResult,
    KernelArgs,
    call_kwargs,
    check_cases,
    check_puzzle,
    expected_output,
    metal_available,
    mismatches,
    puzzle_cases,
)

__all__ = ["MetalKernel", "MetalProblem"]

# Metal-Puzzles' score table: four right-aligned columns of this width.
SCORE_WIDTH = 13
DRAWN_THREADGROUPS = 4  # launches of up to this many threadgroups are traced whole by show()


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


# Hints given so far, per puzzle number: kept by the module, not the problem, so that re-running
# a puzzle's cell (which makes a new MetalProblem) does not start the hints over.
_HINTS_GIVEN: dict[int, int] = {}
# Puzzles (by number) whose check() has run on a kernel body the learner changed from the
# template: solution() shows theirs. Kept by the module for the same reason.
_TRIED: set[int] = set()


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
            if self._body_changed(visible):
                _TRIED.add(p.number)
            cases = puzzle_cases(p, visible, title=self.name)
            result = check_puzzle(p, cases, self._kernel_for, title=self.name)
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

    def cases(self) -> list[str]:
        """The labels of the cases check() runs: "visible", then "hidden 1", "hidden 2", ...
        (`show(case=...)` and `explore(case=...)` take a label or a hidden case's number)."""
        return [label for label, _ in self._cases()]

    def show(self, case: int | str | None = None, threadgroup: int | None = None
             ) -> Diagram | None:
        """Print the score table of a case (the visible one by default) — the maximum, over
        threads, of global and threadgroup ("shared") reads and writes, as Metal-Puzzles does —
        and return its diagram, drawn from what the simulator did (Jupyter shows it inline).
        Wrong output cells are marked with the expected value. `case`: a hidden case's number
        or a label of `cases()`; `threadgroup`: the linear id of the threadgroup to draw."""
        try:
            label, chosen = self._find_case(case)
        except ValueError as exc:
            print(exc)
            return None
        try:
            kernel, run = self._simulate(chosen, threadgroup)
        except Exception as exc:  # a broken kernel is for check() to explain
            print(f"# {self.name}\n(could not run the kernel: {str(exc).splitlines()[0]})")
            return None
        self.score(run, label)
        budget = self.puzzle.budget.limits() if self.puzzle else None
        where = "" if case is None else f"case={case!r}, "
        return draw(run, inputs=list(chosen.inputs), title=self.name, budget=budget,
                    wrong=self._wrong_cells(chosen, run),
                    threadgroups=None if threadgroup is None else [threadgroup],
                    others=f"problem.show({where}threadgroup=k) or problem.explore({where[:-2]})")

    def run_python(self) -> metalsim.Run:
        """Simulate the visible case and return what every thread did (`metalsim.Run`, traced
        when small enough to draw every access); Metal-Puzzles' `run_python()` traced it in
        Python."""
        return self._simulate(self._visible(), None)[1]

    def score(self, results: metalsim.Run, case: str = "visible") -> None:
        """Print the score table of `results` (from `run_python()`) as Metal-Puzzles does —
        the title, then per thread at most how many global and shared reads and writes — and
        then the budget of the catalog puzzle."""
        counts = results.report.max_per_thread()
        budget = self.puzzle.budget.limits() if self.puzzle else {}
        names = [n for n in COUNT_NAMES if n != "atomics" or counts.get(n, 0) or n in budget]

        def row(values: dict) -> str:
            return "   | " + " | ".join(f"{values.get(n, 0):>{SCORE_WIDTH}}" for n in names)

        title = f"# {self.name}" + ("" if case == "visible" else f" ({case})")
        lines = [title, " ", "   Score (Max Per Thread):",
                 "   | " + " | ".join(f"{COUNT_LABELS[n]:>{SCORE_WIDTH}}" for n in names) + " |",
                 row(counts) + " | ", "        "]
        if budget:
            lines += ["   Budget (Max Per Thread):", row(budget) + " |"]
        lines.append(f"   (the {case} case; check() reports the maximum over all its cases)")
        print("\n".join(lines))

    def run_metal(self) -> mx.array:
        """The kernel's output on this case, launched as `check()` launches it (zero-filled
        outputs for Metal-Puzzles' puzzles): on the GPU where Metal is available, in metalsim
        elsewhere (which raises `metalsim.KernelFault` on a bug such as a race)."""
        visible = self._visible()
        kernel = build_kernel(self._kernel_for(visible))
        call = call_kwargs(visible, list(self.inputs), self._init_value())
        return kernel(**call, verbose=os.environ.get("VERBOSE") == "1")[0]

    def explore(self, case: int | str | None = None) -> Explorer:
        """An interactive view of a case (the visible one by default; `case` as in `show`):
        pick a threadgroup, thread (or SIMD-group) and barrier phase to see its reads and
        writes, their source lines and values."""
        _, chosen = self._find_case(case)
        kernel, run = self._simulate(chosen, None)
        call = call_kwargs(chosen, [mx.array(x) for x in chosen.inputs], self._init_value())

        def retrace(threadgroup: int) -> metalsim.Run:
            return metalsim.simulate(kernel, trace=[threadgroup], **call)

        return Explorer(run, inputs=list(chosen.inputs), kernel=kernel, retrace=retrace)

    def _cases(self) -> list[tuple[str, Case]]:
        visible = self._visible()
        if self.puzzle is None:
            return [("visible", visible)]
        return puzzle_cases(self.puzzle, visible, title=self.name)

    def _find_case(self, case: int | str | None) -> tuple[str, Case]:
        """The (label, case) that `case` names: None for the visible case, a hidden case's
        number, or a label as check() prints it ("hidden 2", "hidden case 2")."""
        cases = self._cases()
        if case is None:
            return cases[0]
        wanted = (f"hidden {case}" if isinstance(case, int) and not isinstance(case, bool)
                  else str(case).strip().lower().replace("hidden case", "hidden"))
        for label, found in cases:
            if label.lower() == wanted:
                return label, found
        raise ValueError(f"no case {case!r}: this problem's cases are "
                         + ", ".join(repr(label) for label, _ in cases))

    def _simulate(self, case: Case, threadgroup: int | None
                  ) -> tuple[metalsim.Kernel, metalsim.Run]:
        """Simulate `case`, tracing only the threadgroups the diagram will draw: `threadgroup`,
        or those the run ranks first (findings first): a run tracing threadgroup 0 says which,
        and is run again only if they are others."""
        kernel = metalsim.metal_kernel(**self._kernel_for(case).factory_kwargs())
        call = call_kwargs(case, [mx.array(x) for x in case.inputs], self._init_value())
        if threadgroup is not None:
            return kernel, metalsim.simulate(kernel, trace=[threadgroup], **call)
        count = math.prod(-(-g // min(t, g)) if g else 0
                          for g, t in zip(case.grid, case.threadgroup))
        if count <= DRAWN_THREADGROUPS:
            return kernel, metalsim.simulate(kernel, trace=True, **call)
        run = metalsim.simulate(kernel, trace=[0], **call)
        wanted = threadgroups_to_trace(run)
        if wanted != [0]:
            run = metalsim.simulate(kernel, trace=wanted, **call)
        return kernel, run

    def _wrong_cells(self, case: Case, run: metalsim.Run) -> dict[str, dict[int, object]]:
        """The first output's cells that differ from the spec, with the expected values."""
        spec = self.puzzle.spec if self.puzzle else self.spec
        if spec is None:
            return {}
        try:
            expected = expected_output(spec, case)
        except Exception:  # a broken spec is for check() to explain
            return {}
        produced = np.array(run.outputs[0].astype(mx.float32)
                            if run.outputs[0].dtype == mx.bfloat16 else run.outputs[0])
        if expected.shape != produced.shape:
            return {}
        output = next(n for n, b in run.report.buffers.items() if b["role"] == "output")
        flat = expected.reshape(-1)
        elements = [int(np.ravel_multi_index(p, expected.shape)) if p else 0
                    for p in mismatches(expected, produced, case.output_dtype)]
        return {output: {e: flat[e].item() for e in elements}}

    def report(self, case: int | str | None = None) -> PerformanceReport:
        """Print how your kernel uses memory on a case (the visible one by default), beside the
        reference solution's for catalog puzzles: global traffic against reading and writing
        each buffer once, SIMD-group efficiency, 64-byte segments per SIMD-group access
        (coalescing) and threadgroup-memory bank conflicts (32 banks of 4 bytes), then the
        lines that cost more than they need to. Returns the figures."""
        label, chosen = self._find_case(case)
        call = call_kwargs(chosen, [mx.array(x) for x in chosen.inputs], self._init_value())
        kernel = metalsim.metal_kernel(**self._kernel_for(chosen).factory_kwargs())
        yours = metalsim.simulate(kernel, profile=True, **call)
        columns = {"yours": yours}
        reference = None
        if self.puzzle is not None:
            p = self.puzzle
            solution = metalsim.metal_kernel(
                name=p.kernel, input_names=list(p.input_names),
                output_names=list(p.output_names), source=p.solution(), header=p.header,
                atomic_outputs=p.atomic_outputs)
            reference = columns["reference"] = metalsim.simulate(solution, profile=True,
                                                                  **call)
        lines = [f"# {self.name}: memory and SIMD-groups on the {label} case "
                 f"(grid {tuple(chosen.grid)}, threadgroup {tuple(chosen.threadgroup)})",
                 comparison(columns)]
        costly = _costly_lines(yours.report, kernel)
        if costly:
            lines += ["", "Where yours costs more than it needs to:", *costly]
        text = "\n".join(lines + ["", *REPORT_NOTES])
        print(text)
        return PerformanceReport(yours.report, reference.report if reference else None, text)

    def hint(self) -> None:
        """Print the next hint of the catalog puzzle (each call gives one more)."""
        if self.puzzle is None:
            print(f"No hints: {self.name!r} is not a puzzle of the catalog.")
            return
        hints, given = self.puzzle.hints, _HINTS_GIVEN.get(self.puzzle.number, 0)
        if given >= len(hints):
            print(f"That was the last hint ({len(hints)} of {len(hints)}); "
                  "`problem.solution()` shows the reference solution with a walkthrough.")
            return
        _HINTS_GIVEN[self.puzzle.number] = given + 1
        print(f"Hint {given + 1} of {len(hints)}: {hints[given]}")

    def solution(self, insist: bool = False) -> None:
        """Print the catalog puzzle's reference solution and its walkthrough (why this indexing,
        where the barriers go, what the budget teaches) once you have tried: after check() ran
        on a kernel body you changed from the template, or after the last hint. `insist=True`
        shows it anyway."""
        if self.puzzle is None:
            print(f"No reference solution: {self.name!r} is not a puzzle of the catalog.")
            return
        p = self.puzzle
        tried = p.number in _TRIED or _HINTS_GIVEN.get(p.number, 0) >= len(p.hints)
        if not (tried or insist):
            print("Try it first: write your kernel and run `problem.check()` (`problem.hint()` "
                  "helps). After that, `problem.solution()` shows the reference solution with "
                  "a walkthrough; `problem.solution(insist=True)` shows it now.")
            return
        try:
            body, walkthrough = p.solution(), p.walkthrough()
        except FileNotFoundError:
            print("This copy of the puzzles has no reference solutions: your course's release "
                  "leaves them out, to be published later.")
            return
        parts = [f"Reference solution of puzzle {p.number}: {p.title}", ""]
        if p.header:
            parts += ["header:", textwrap.indent(p.header.rstrip("\n"), "    "), ""]
        parts += ["source:", textwrap.indent(body.rstrip("\n"), "    "), "", walkthrough]
        print("\n".join(parts))

    def _body_changed(self, visible: Case) -> bool:
        """Whether the kernel body differs from the puzzle's template in more than comments
        and whitespace (a kernel whose `fn` fails counts as changed: the learner wrote it)."""
        try:
            source = self._kernel_for(visible).source
        except Exception:
            return True
        return _code_only(source) != _code_only(self.puzzle.template)

    def _print_source(self, visible: Case) -> None:
        try:
            kernel = metalsim.metal_kernel(**self._kernel_for(visible).factory_kwargs())
            print(metalsim.source(kernel, **call_kwargs(
                visible, [mx.array(x) for x in visible.inputs], self._init_value())))
        except Exception as exc:
            print(f"(no generated source: {exc})")


@dataclass(repr=False)
class PerformanceReport:
    """What `problem.report()` measured: the two launches' `metalsim` Reports (with
    `report.memory`) and the printed text."""

    yours: metalsim.Report
    reference: metalsim.Report | None
    text: str

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:  # report() has printed the text already
        return "<PerformanceReport>"


REPORT_NOTES = (
    "How to read it: traffic counts every byte your kernel read or wrote in device memory; "
    "1.00x is each buffer read or written once.",
    "SIMD-group efficiency is the share of SIMD-group lanes that were active, step by step "
    "(idle lanes: partial SIMD-groups, divergent branches).",
    "A SIMD-group's load or store costs one transaction per 64-byte segment it touches: "
    "32 consecutive floats take 2; coalescing is the ideal count over the actual one.",
    "Threadgroup memory has 32 banks of 4 bytes: lanes hitting different words of one bank "
    "wait for each other (a k-way conflict takes k cycles); padding a row often fixes it.",
)


def _costly_lines(report: metalsim.Report, kernel: metalsim.Kernel) -> list[str]:
    """The source lines whose accesses took more segments or cycles than ideal."""
    source = kernel.spec.source.split("\n")
    out = []
    for (space, line), t in sorted(report.memory.by_line.items(),
                                   key=lambda kv: (kv[0][1] or 0, kv[0][0])):
        if t.cost <= t.ideal:
            continue
        code = source[line - 1].strip() if line and 0 < line <= len(source) else ""
        unit = "64-byte segments" if space == "global" else "bank cycles"
        out.append(f"  line {line}: {code}\n    {t.per_access:.1f} {unit} per SIMD-group "
                   f"access, ideal {t.ideal / t.accesses:.1f} ({space} memory)")
    return out


def _code_only(source: str) -> str:
    """Metal source without `//` comments and whitespace."""
    return "".join(re.sub(r"//.*", "", source).split())


def _missing_spec(*_inputs: mx.array) -> mx.array:
    raise ValueError("this MetalProblem has no spec=; pass the function that computes the "
                     "expected output")
