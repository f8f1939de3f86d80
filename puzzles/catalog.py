"""The puzzle catalog: what a puzzle is, and the registry of all of them.

Each chapter module (`puzzles/ch01_threads.py`, ...) defines its puzzles with `Puzzle(...)` and
registers them with `register(...)`; `all_puzzles()` imports every chapter. Notebooks, the
harness (`utils.py`), the CLI and the grader all read puzzles from here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
# Each puzzle's walkthrough of its reference solution, `<solution file's stem>.md`. Solution
# material, like the kernels: the student release leaves both out.
WALKTHROUGHS = SOLUTIONS / "walkthroughs"

CHAPTERS = ("ch01_threads", "ch02_threadgroup_memory", "ch03_reductions", "ch04_matmul",
            "ch05_sparse_mvmr", "ch06_segment_reduce", "ch07_distances")

# The problem titles of Metal-Puzzles' notebook: those puzzles are launched as it launches them.
METAL_PUZZLES_TITLES = frozenset({
    "Map", "Zip", "Guard", "Map 2D", "Broadcast", "Threadgroups", "Threadgroups 2D",
    "Threadgroup Memory", "Pooling", "Dot Product", "1D Conv (Simple)", "1D Conv (Full)",
    "Prefix Sum (Simple)", "Prefix Sum (Full)", "Axis Sum", "Matmul (Simple)", "Matmul (Full)"})
# Metal-Puzzles launches every kernel with `init_value=0`: outputs start as zeros.
METAL_PUZZLES_INIT_VALUE = 0.0

# The first template line of the threadgroup puzzles: a thread's global index from its
# threadgroup's position. Metal-Puzzles multiplies by `threads_per_threadgroup`, which is wrong
# in a partial threadgroup (notebook 01 says why); the size requested at launch is right
# everywhere. Longer than the line limit of this code base.
GLOBAL_INDEX_X = ("uint i = threadgroup_position_in_grid.x * dispatch_threads_per_threadgroup.x"
                  " + thread_position_in_threadgroup.x;\n")


@dataclass(frozen=True)
class Case:
    """One launch of a puzzle: numpy inputs (in `input_names` order), output and launch sizes."""

    inputs: tuple[np.ndarray, ...]
    output_shape: tuple[int, ...]
    grid: tuple[int, int, int]
    threadgroup: tuple[int, int, int] = (1, 1, 1)
    output_dtype: str = "float32"


@dataclass(frozen=True)
class Budget:
    """Maximum per thread; None means not limited."""

    global_reads: int | None = None
    global_writes: int | None = None
    threadgroup_reads: int | None = None
    threadgroup_writes: int | None = None
    atomics: int | None = None

    def limits(self) -> dict[str, int]:
        return {k: v for k, v in vars(self).items() if v is not None}


@dataclass(frozen=True)
class Puzzle:
    """A puzzle: everything the notebooks, `check()`, the CLI and the grader need.

    `spec(*inputs)` computes the expected output with plain MLX ops from `mx.array` inputs.
    `hidden(rng)` returns the hidden cases (random values, at the visible sizes and at others
    drawn from `rng`). `template` is the kernel body shipped to learners, with `// FILL ME IN`;
    the reference body is `solutions/<solution_file>`, explained in `solutions/walkthroughs/`.
    `titles` are the names a `MetalProblem` may use for this puzzle (the first is the catalog
    title; Metal-Puzzles titles such as "1D Conv (Full)" are listed too, each mapping to its
    visible case in `cases_by_title`; a stepping-stone title maps to its own hidden cases in
    `hidden_by_title`).
    """

    number: int
    slug: str
    titles: tuple[str, ...]
    chapter: str
    description: str
    input_names: tuple[str, ...]
    spec: Callable
    visible: Case
    hidden: Callable[[np.random.Generator], list[Case]]
    template: str
    budget: Budget
    hints: tuple[str, ...]
    solution_file: str
    header: str = ""
    output_names: tuple[str, ...] = ("out",)
    atomic_outputs: bool = False
    init_value: float | None = None
    cases_by_title: dict[str, Case] = field(default_factory=dict)
    hidden_by_title: dict[str, Callable[[np.random.Generator], list[Case]]] = field(
        default_factory=dict)
    kernel_name: str = ""

    @property
    def title(self) -> str:
        return self.titles[0]

    @property
    def launch_init_value(self) -> float | None:
        """What the outputs hold before the kernel runs: `init_value`, or zeros for the
        puzzles of Metal-Puzzles (launched as it launches them), or None (uninitialised)."""
        if self.init_value is not None:
            return self.init_value
        if METAL_PUZZLES_TITLES.intersection(self.titles):
            return METAL_PUZZLES_INIT_VALUE
        return None

    @property
    def kernel(self) -> str:
        """The kernel's `name=`: `kernel_name`, or the slug."""
        return self.kernel_name or self.slug

    def hidden_cases(self, rng: np.random.Generator, title: str | None = None) -> list[Case]:
        """The hidden cases a problem titled `title` is checked on: a stepping stone such as
        "1D Conv (Simple)" has its own (`hidden_by_title`), every other title the puzzle's."""
        wanted = (title or "").strip().lower()
        own = {t.lower(): hidden for t, hidden in self.hidden_by_title.items()}
        return own.get(wanted, self.hidden)(rng)

    def solution(self) -> str:
        return (SOLUTIONS / self.solution_file).read_text()

    def walkthrough(self) -> str:
        """Why the reference solution is written as it is (Markdown)."""
        return (WALKTHROUGHS / Path(self.solution_file).with_suffix(".md")).read_text().strip()


def random_like(rng: np.random.Generator, x: np.ndarray, low: int = -20, high: int = 20
                ) -> np.ndarray:
    """Random values of `x`'s shape and dtype: integers in [low, high), or uniform floats."""
    if np.issubdtype(x.dtype, np.integer):
        return rng.integers(low, high, size=x.shape).astype(x.dtype)
    return rng.uniform(low, high, size=x.shape).astype(x.dtype)


def random_cases(case: Case, n: int = 3, low: int = -20, high: int = 20,
                 also: tuple[Case, ...] = ()) -> Callable[[np.random.Generator], list[Case]]:
    """A `hidden` generator: `n` copies of `case` (same sizes and launch) with random inputs,
    then each case of `also` (other sizes or launches) with random inputs."""

    def hidden(rng: np.random.Generator) -> list[Case]:
        return [replace(c, inputs=tuple(random_like(rng, x, low, high) for x in c.inputs))
                for c in [case] * n + list(also)]

    return hidden


def resized_cases(case: Case, resize: Callable[[np.random.Generator], list[Case]], n: int = 3,
                  low: int = -20, high: int = 20
                  ) -> Callable[[np.random.Generator], list[Case]]:
    """A `hidden` generator: `n` copies of `case` with random inputs, then the cases of other
    sizes `resize(rng)` draws (sizes and launches from the seed), with random inputs. A kernel
    that hard-codes the visible sizes, or swaps rows and columns, fails those."""

    def hidden(rng: np.random.Generator) -> list[Case]:
        cases = [case] * n + resize(rng)
        return [replace(c, inputs=tuple(random_like(rng, x, low, high) for x in c.inputs))
                for c in cases]

    return hidden


def partial_threadgroup_cases(case: Case, length: int, output_shape: tuple[int, ...]
                              ) -> tuple[Case, ...]:
    """`case` with its 1D inputs cut to `length` (not a multiple of the threadgroup), launched
    two ways: a grid rounded up to whole threadgroups (the threads past the end must still
    reach every barrier), and a grid of exactly `length` threads (MLX then makes the last
    threadgroup partial, smaller than the others)."""
    width = case.threadgroup[0]
    inputs = tuple(x[:length] for x in case.inputs)
    rounded = (-(-length // width) * width, 1, 1)
    return tuple(replace(case, inputs=inputs, output_shape=output_shape, grid=grid)
                 for grid in (rounded, (length, 1, 1)))


_REGISTRY: dict[int, Puzzle] = {}


def register(*puzzles: Puzzle) -> None:
    for p in puzzles:
        if p.number in _REGISTRY:
            raise ValueError(f"puzzle {p.number} registered twice")
        _REGISTRY[p.number] = p


def all_puzzles() -> list[Puzzle]:
    """Every puzzle of every chapter, by number."""
    for chapter in CHAPTERS:
        importlib.import_module(f"puzzles.{chapter}")
    return [_REGISTRY[n] for n in sorted(_REGISTRY)]


def find(key: str | int) -> Puzzle | None:
    """A puzzle by number, slug or any of its titles (case-insensitive), or None."""
    wanted = str(key).strip().lower()
    for p in all_puzzles():
        if wanted in (str(p.number), p.slug.lower(), *(t.lower() for t in p.titles)):
            return p
    return None
