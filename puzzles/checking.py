"""Checking a kernel against a puzzle: the one verdict used by `problem.check()`, the CLI and
the grader.

`check_kernel(puzzle, source)` runs the body on the puzzle's visible case and its hidden cases
in metalsim (and, on Apple silicon, on the real GPU too) and returns a `CheckResult`:

- values are compared with the spec with a magnitude-aware tolerance (exact for integer
  outputs); a case whose expected output is all zeros is never evidence on its own, so a kernel
  passes only if it matched at least one case with a non-zero answer;
- any error diagnostic (race, out-of-bounds, divergent barrier, ...) or compile error makes the
  status "error", even when the numbers happen to match;
- a correct kernel above the puzzle's per-thread budget is "over-budget", which does not pass;
- the puzzles of Metal-Puzzles start with zero-filled outputs, as it launches them
  (`init_value=0`); output elements a kernel never writes are pointed out, but a kernel right
  under that launch passes.

A bad kernel never raises here: whatever goes wrong is part of the result.
"""

from __future__ import annotations

import math
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import mlx.core as mx
import numpy as np

import metalsim
from metalsim.diagnostics import Diagnostic
from puzzles.catalog import Case, Puzzle
from puzzles.diagnosis import (
    SHARED_WRITE_CAUSES,
    diagnose,
    index_past_the_end,
    located,
    shared_writes,
)

COUNT_NAMES = ("global_reads", "global_writes", "threadgroup_reads", "threadgroup_writes",
               "atomics")
# Column names as Metal-Puzzles prints them ("shared" is its word for threadgroup memory).
COUNT_LABELS = {
    "global_reads": "Global Reads",
    "global_writes": "Global Writes",
    "threadgroup_reads": "Shared Reads",
    "threadgroup_writes": "Shared Writes",
    "atomics": "Atomics",
}
# Relative tolerance per output dtype; it also scales with the largest expected magnitude, so
# a float sum computed in another order than the spec's still matches.
RTOL = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 4e-2}
MAX_SHOWN = 64  # elements of an array printed in full; larger ones are summarised
WINDOW = (5, 12)  # rows and columns of a large array printed around its first wrong element
HINT_NUDGE = "Stuck? `problem.hint()` gives a hint; call it again for the next one."
MAX_UNWRITTEN_SHOWN = 8
MAX_TRACED_THREADS = 16384  # a failing case is run again, traced, to see who wrote what


@dataclass(frozen=True)
class KernelArgs:
    """The arguments of `mx.fast.metal_kernel` (and `metalsim.metal_kernel`) for one kernel."""

    name: str
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    source: str
    header: str = ""
    ensure_row_contiguous: bool = True
    atomic_outputs: bool = False
    compile_options: dict[str, str] | None = None

    def factory_kwargs(self) -> dict[str, object]:
        return {
            "name": self.name,
            "input_names": list(self.input_names),
            "output_names": list(self.output_names),
            "source": self.source,
            "header": self.header,
            "ensure_row_contiguous": self.ensure_row_contiguous,
            "atomic_outputs": self.atomic_outputs,
            "compile_options": self.compile_options,
        }


@dataclass
class CaseResult:
    """One case: what was expected, what the kernel produced, and where they differ."""

    label: str                       # "visible", "hidden 1", ...
    case: Case
    expected: np.ndarray | None = None
    produced: np.ndarray | None = None
    mismatches: list[tuple[int, ...]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    error: str = ""                  # why the case did not run (compile error, exception)
    metal: np.ndarray | None = None  # the real GPU's output, where Metal is available
    gpu: str = ""                    # which GPU gave `metal`: Metal, or an NVIDIA one (CUDA)
    metal_mismatches: list[tuple[int, ...]] = field(default_factory=list)
    input_names: tuple[str, ...] = ()
    unwritten: list[tuple[int, ...]] = field(default_factory=list)  # never written by it
    output_name: str = "out"
    cause: Diagnostic | None = None  # why the values are wrong (`puzzles.diagnosis`)

    @property
    def name(self) -> str:
        """How the verdict names the case: "the visible case", "hidden case 2", ..."""
        if self.label.startswith("hidden "):
            return f"hidden case {self.label.split()[1]}"
        return f"the {self.label} case"

    @property
    def evidence(self) -> bool:
        """Whether matching this case proves anything: its expected output is not all zeros."""
        return self.expected is not None and bool(np.any(self.expected != 0))

    @property
    def faulted(self) -> bool:
        return bool(self.error) or any(d.severity == "error" for d in self.diagnostics)

    @property
    def correct(self) -> bool:
        return (not self.faulted and self.produced is not None and not self.mismatches
                and not self.metal_mismatches and self.cause is None)

    def to_json(self) -> dict[str, object]:
        return {
            "case": self.label,
            "grid": list(self.case.grid),
            "threadgroup": list(self.case.threadgroup),
            "expected": None if self.expected is None else _json_array(self.expected),
            "produced": None if self.produced is None else _json_array(self.produced),
            "mismatches": [list(p) for p in self.mismatches],
            "error": self.error,
            "cause": None if self.cause is None else self.cause.kind,
        }


@dataclass(repr=False)
class CheckResult:
    """The verdict on one kernel. `status` is "pass", "fail" (wrong values), "over-budget"
    (right values, too many accesses per thread) or "error" (compile error, fault, exception).
    `bool(result)` is `passed`; `str(result)` is `text`."""

    title: str
    number: int | None
    status: str
    counts: dict[str, int]
    budget: dict[str, int]
    diagnostics: list[Diagnostic]
    cases: list[CaseResult]
    reason: str   # one line: why it did not pass ("" when it passed)
    text: str = ""
    shown: CaseResult | None = None   # the case the reason names (and the text shows)
    also: CaseResult | None = None    # the case with the error, where `shown` is another

    @property
    def cause(self) -> Diagnostic | None:
        """Why the values of the shown case are wrong, where the values say it."""
        return None if self.shown is None else self.shown.cause

    @property
    def findings(self) -> list[Diagnostic]:
        """The cause, if any, then the diagnostics: what the verdict's text lists."""
        return ([self.cause] if self.cause else []) + self.diagnostics

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        # Short: check() has already printed the text, and a notebook shows this line after it.
        return f"<CheckResult {self.status}: {self.title}>"

    def to_json(self) -> dict[str, object]:
        """The row format of `python -m puzzles check --json` and of the grader."""
        return {
            "puzzle": self.number,
            "title": self.title,
            "status": self.status,
            "reason": self.reason,
            "counts": self.counts,
            "budget": self.budget,
            # as the text shows them: the cause the values name, then metalsim's findings
            "diagnostics": [d.render() for d in self.findings],
            "cause": None if self.cause is None else self.cause.kind,
            "cases": [c.to_json() for c in self.cases],
        }


def check_kernel(puzzle: Puzzle, source: str, header: str | None = None, *,
                 hidden: bool = True, seed: int = 0) -> CheckResult:
    """Check a kernel body for `puzzle` on its visible case(s) and, with `hidden`, its hidden
    cases (drawn with `seed`). `header=None` uses the puzzle's own header."""
    args = KernelArgs(
        name=puzzle.kernel,
        input_names=tuple(puzzle.input_names),
        output_names=tuple(puzzle.output_names),
        source=source,
        header=puzzle.header if header is None else header,
        atomic_outputs=puzzle.atomic_outputs,
    )
    return check_puzzle(puzzle, puzzle_cases(puzzle, hidden=hidden, seed=seed),
                        lambda _case: args)


def check_puzzle(puzzle: Puzzle, cases: Sequence[tuple[str, Case]],
                 kernel_for: Callable[[Case], KernelArgs], title: str | None = None
                 ) -> CheckResult:
    """Check a kernel on `cases` of `puzzle`, launched as the puzzle is launched everywhere:
    `problem.check()`, the CLI and the grader all come here, so they cannot disagree."""
    return check_cases(title or puzzle.title, cases, puzzle.spec, kernel_for,
                       puzzle.budget.limits(), init_value=puzzle.launch_init_value,
                       number=puzzle.number, note_unwritten=puzzle.init_value is None)


def puzzle_cases(puzzle: Puzzle, visible: Case | None = None, *, hidden: bool = True,
                 seed: int = 0, title: str | None = None) -> list[tuple[str, Case]]:
    """The labelled cases a check runs: the visible one (the puzzle's, or `visible`), the
    puzzle's other titled cases (e.g. "1D Conv (Full)"), then the hidden ones (those of
    `title`, the problem's name, where it is a stepping stone such as "1D Conv (Simple)")."""
    cases = [("visible", visible or puzzle.visible)]
    if visible is None:
        cases += [(title, case) for title, case in puzzle.cases_by_title.items()
                  if not _same_case(case, puzzle.visible)]
    if hidden:
        drawn = puzzle.hidden_cases(np.random.default_rng(seed), title)
        cases += [(f"hidden {i}", _dtypes_of(cases[0][1], case))
                  for i, case in enumerate(drawn, 1)]
    return cases


def _dtypes_of(visible: Case, case: Case) -> Case:
    """`case` with the visible case's input and output dtypes: a kernel written for the
    visible inputs (an `int` accumulator for int32 inputs, say) must meet the same types."""
    if len(case.inputs) != len(visible.inputs):
        return case
    inputs = tuple(x if x.dtype == v.dtype else x.astype(v.dtype)
                   for x, v in zip(case.inputs, visible.inputs))
    return replace(case, inputs=inputs, output_dtype=visible.output_dtype)


def check_cases(title: str, cases: Sequence[tuple[str, Case]], spec: Callable,
                kernel_for: Callable[[Case], KernelArgs], budget: dict[str, int], *,
                init_value: float | None = None, number: int | None = None,
                note_unwritten: bool = True) -> CheckResult:
    """Run `kernel_for(case)` on every case, compare with `spec`, and judge.

    Outputs start filled with `init_value` (None: uninitialised). With `note_unwritten` (the
    kernel is meant to write every output element) the verdict points out those it never wrote.

    `kernel_for` may raise (e.g. the learner's Python failed): that case is then an error.
    Cases stop at the first error (a compile error or fault would only repeat, slowly if it is
    a runaway loop).
    """
    results: list[CaseResult] = []
    for label, case in cases:
        # one case's writers name the threads of a wrong index; the shown case comes first
        named = any(r.cause is not None and r.cause.kind == "wrong-index" for r in results)
        result = _run_case(label, case, spec, kernel_for, init_value, find_writers=not named)
        results.append(result)
        if result.faulted:
            break
    counts = {name: max((r.counts.get(name, 0) for r in results), default=0)
              for name in COUNT_NAMES}
    _blame_the_index(results)
    diagnostics = _unique([d for r in results for d in r.diagnostics])
    status, reason, shown = _judge(results, counts, budget)
    also = next((r for r in results if r.faulted and r is not shown), None) \
        if status == "error" else None
    check = CheckResult(title=title, number=number, status=status, counts=counts,
                        budget=dict(budget), diagnostics=diagnostics, cases=results,
                        reason=reason, shown=shown, also=also)
    check.text = render(check, note_unwritten, init_value)
    return check


def _blame_the_index(results: list[CaseResult]) -> None:
    """Where one case's values show a wrong index and a later case then goes out of bounds
    (a transposed index on a non-square case, say), the out-of-bounds access is that index's:
    the cause points at the access, and the fault's hint leads to the index rather than to a
    bounds check, which would only hide it."""
    wrong = _wrong_index_case(results)
    faulted = next((r for r in results if r.faulted), None)
    if wrong is None or faulted is None:
        return
    oob = [d for d in faulted.diagnostics if d.kind == "out-of-bounds" and d.severity == "error"]
    if not oob:
        return
    faulted.diagnostics = [index_past_the_end(d, wrong.cause, wrong.name)
                           if d.kind == "out-of-bounds" else d for d in faulted.diagnostics]
    if wrong.cause.line is None:   # read from the values alone: the fault says where
        wrong.cause = located(wrong.cause, oob[0], faulted.name)


def _wrong_index_case(results: list[CaseResult]) -> CaseResult | None:
    """The first case that ran cleanly and whose values show a wrong index."""
    return next((r for r in results if not r.faulted and r.cause is not None
                 and r.cause.kind == "wrong-index"), None)


# --- running one case -----------------------------------------------------------------------


def _run_case(label: str, case: Case, spec: Callable, kernel_for: Callable[[Case], KernelArgs],
              init_value: float | None, find_writers: bool = True) -> CaseResult:
    result = CaseResult(label=label, case=case)
    inputs = [mx.array(x) for x in case.inputs]
    try:
        result.expected = _expected(spec, inputs, case.output_shape)
    except Exception as exc:  # the spec is the learner's in Metal-Puzzles-style notebooks
        result.error = f"the spec raised {_exception_text(exc)}"
        return result
    try:
        args = kernel_for(case)
    except Exception as exc:
        result.error = f"building the kernel raised {_exception_text(exc)}"
        return result
    result.input_names = tuple(args.input_names)
    call = call_kwargs(case, inputs, init_value)
    try:
        kernel = metalsim.metal_kernel(**args.factory_kwargs())
        run = metalsim.simulate(kernel, **call)
    except (metalsim.CompileError, metalsim.KernelFault) as exc:
        result.diagnostics = list(exc.diagnostics)
        result.error = str(exc.diagnostics[0].message) if exc.diagnostics else str(exc)
        return result
    except Exception as exc:  # MLX's own argument errors, resource limits, ...
        result.error = _exception_text(exc)
        return result
    result.produced = _to_numpy(run.outputs[0])
    result.output_name = args.output_names[0]
    never = run.report.unwritten.get(result.output_name, np.empty(0, np.int64))
    result.unwritten = [tuple(int(i) for i in p)
                        for p in zip(*np.unravel_index(never, result.produced.shape))]
    result.counts = {name: run.report.max_per_thread().get(name, 0) for name in COUNT_NAMES}
    result.diagnostics = list(run.report.diagnostics)
    result.mismatches = mismatches(result.expected, result.produced, case.output_dtype)
    result.cause = _cause(result, kernel, call, find_writers)
    if result.cause is not None and result.cause.kind in SHARED_WRITE_CAUSES:
        # the same-value writes metalsim warns about are what the cause explains
        result.diagnostics = [d for d in result.diagnostics
                              if not (d.kind == "race" and d.severity == "warning")]
    if metal_available():
        _run_on_metal(result, args, call)
    elif cuda_available() and not result.faulted:   # a faulty kernel could crash the GPU
        _run_on_cuda(result, args, call)
    return result


def _cause(result: CaseResult, kernel: metalsim.Kernel, call: dict[str, object],
           find_writers: bool) -> Diagnostic | None:
    """Why the case's values are wrong (`puzzles.diagnosis`). With `find_writers`, a case
    whose threads collide on output elements (small enough) is run again, traced, to see
    which threads wrote which element."""
    shared = shared_writes(result.diagnostics, result.output_name)
    if not (result.mismatches or shared):
        return None
    writers = None
    if (shared and find_writers and (result.mismatches or result.unwritten)
            and math.prod(result.case.grid) <= MAX_TRACED_THREADS):
        try:
            writers = _writers(metalsim.simulate(kernel, trace=True, **call),
                               result.output_name)
        except Exception:   # the trace is only for naming threads: the verdict stands without
            writers = None
    return diagnose(result.expected, result.produced, result.case.output_dtype,
                    result.output_name, result.mismatches, result.unwritten,
                    result.diagnostics, writers, tuple(result.case.grid))


def _writers(run: metalsim.Run, output: str) -> dict[int, np.ndarray]:
    """The flat elements of `output` that several threads wrote, each with their linear ids
    (distinct, ascending)."""
    pairs = [(np.ravel(a["element"]), np.ravel(a["thread"])) for a in run.report.trace or []
             if a["kind"] == "write" and a["buffer"] == output]
    if not pairs:
        return {}
    elements = np.concatenate([e for e, _ in pairs])
    threads = np.concatenate([np.broadcast_to(t, e.shape) for e, t in pairs])
    element, thread = np.unique(np.stack([elements, threads]), axis=1)  # sorted pairs
    cells, starts, counts = np.unique(element, return_index=True, return_counts=True)
    return {int(c): thread[s:s + n] for c, s, n in zip(cells, starts, counts) if n > 1}


def cuda_available() -> bool:
    """Whether an NVIDIA GPU can run kernels here (CuPy sees one), through metalsim.cuda."""
    from metalsim.cuda import gpu_available

    return gpu_available()


def _run_on_cuda(result: CaseResult, args: KernelArgs, call: dict[str, object]) -> None:
    """Run the same kernel, translated to CUDA, on the NVIDIA GPU and compare it too."""
    import metalsim.cuda

    try:
        out = metalsim.cuda.metal_kernel(**args.factory_kwargs())(**call)[0]
    except Exception as exc:
        result.error = f"the kernel failed on the NVIDIA GPU: {_exception_text(exc)}"
        return
    result.metal, result.gpu = _to_numpy(out), f"{metalsim.cuda.gpu_name()} (CUDA)"
    result.metal_mismatches = mismatches(result.expected, result.metal, result.case.output_dtype)


def metal_available() -> bool:
    """Whether the real GPU can run kernels here (Apple silicon with MLX's Metal back end)."""
    return bool(mx.metal.is_available())


def _run_on_metal(result: CaseResult, args: KernelArgs, call: dict[str, object]) -> None:
    """Run the very same kernel on the GPU through MLX and compare it with the spec too."""
    try:
        kernel = mx.fast.metal_kernel(**args.factory_kwargs())
        out = kernel(**call, stream=mx.gpu)[0]
        mx.eval(out)
    except Exception as exc:
        result.error = f"the real Metal kernel failed: {_exception_text(exc)}"
        return
    result.metal, result.gpu = _to_numpy(out), "mx.fast.metal_kernel"
    result.metal_mismatches = mismatches(result.expected, result.metal, result.case.output_dtype)


def call_kwargs(case: Case, inputs: list[mx.array], init_value: float | None
                ) -> dict[str, object]:
    """The arguments of the kernel call (MLX's or metalsim's) for one case."""
    return {
        "inputs": inputs,
        "output_shapes": [tuple(case.output_shape)],
        "output_dtypes": [getattr(mx, case.output_dtype)],
        "grid": tuple(case.grid),
        "threadgroup": tuple(case.threadgroup),
        "init_value": init_value,
    }


def expected_output(spec: Callable, case: Case) -> np.ndarray:
    """What `spec` says the output of `case` is (what a check compares with)."""
    return _expected(spec, [mx.array(x) for x in case.inputs], case.output_shape)


def _expected(spec: Callable, inputs: list[mx.array], shape: tuple[int, ...]) -> np.ndarray:
    out = spec(*inputs)
    if isinstance(out, (list, tuple)):
        out = out[0]
    values = _to_numpy(mx.array(out))
    if values.shape != tuple(shape) and values.size == math.prod(shape):
        values = values.reshape(shape)  # e.g. a dot product's () for an output of shape (1,)
    return values


def _to_numpy(arr: mx.array) -> np.ndarray:
    if arr.dtype == mx.bfloat16:  # no buffer protocol for bfloat16
        arr = arr.astype(mx.float32)
    return np.array(arr)


def mismatches(expected: np.ndarray | None, produced: np.ndarray, dtype: str
               ) -> list[tuple[int, ...]]:
    """Positions where `produced` differs from `expected` (all positions if shapes differ)."""
    if expected is None:
        return []
    if expected.shape != produced.shape:
        return [tuple(int(i) for i in p) for p in np.ndindex(produced.shape)] or [()]
    e = expected.astype(np.float64)
    p = produced.astype(np.float64)
    if dtype not in RTOL:  # integers and bool: exact
        bad = e != p
    else:
        rtol = RTOL[dtype]
        finite = np.abs(e[np.isfinite(e)])
        atol = rtol * max(1.0, float(finite.max()) if finite.size else 1.0)
        with np.errstate(invalid="ignore"):
            # Infinities must match exactly: |p - inf| <= inf would accept any finite value.
            close = ((np.abs(p - e) <= atol + rtol * np.abs(e)) & np.isfinite(e)) | (p == e)
        close |= np.isnan(p) & np.isnan(e)
        bad = ~close
    return [tuple(int(i) for i in pos) for pos in np.argwhere(bad)]


# --- the verdict ----------------------------------------------------------------------------


def _judge(results: list[CaseResult], counts: dict[str, int], budget: dict[str, int]
           ) -> tuple[str, str, CaseResult | None]:
    """(status, reason, the case the reason names): errors first, then wrong values, then
    the budget, then evidence. Where the values name a cause (a wrong index, say), the
    reason is that cause rather than the memory finding it produced."""
    for r in results:
        if r.faulted:
            first = r.cause or next((d for d in r.diagnostics if d.severity == "error"), None)
            wrong = _wrong_index_case(results)
            if first is not None and first.kind == "out-of-bounds" and wrong is not None:
                # the values of a clean case name the cause; the fault comes with it
                return "error", f"{_finding(wrong.cause, wrong)}; and {_finding(first, r)}", wrong
            if first is not None:
                return "error", _finding(first, r), r
            return "error", f"{r.name}: {r.error}", r
    for r in results:
        if r.cause is not None:
            return "fail", _finding(r.cause, r), r
        if r.mismatches:
            return "fail", f"wrong values on {r.name} at {len(r.mismatches)} position(s)", r
        if r.metal_mismatches:
            return "fail", (f"the real GPU gave wrong values on {r.name} at "
                            f"{len(r.metal_mismatches)} position(s)"), r
    over = [name for name, limit in budget.items() if counts.get(name, 0) > limit]
    if over:
        detail = ", ".join(f"{COUNT_LABELS[n].lower()} {counts[n]} > {budget[n]}" for n in over)
        return "over-budget", f"correct, but over budget: {detail} (max per thread)", None
    if not any(r.evidence for r in results):
        return "fail", ("every case's expected output is all zeros, which proves nothing; "
                        "use inputs with a non-zero answer"), None
    return "pass", "", None


def _finding(d: Diagnostic, r: CaseResult) -> str:
    """"wrong-index (line 3) on hidden case 2: out[0] is written by ...": the finding's kind,
    where, and its message (without the kind when the message starts with it in words)."""
    where = f" (line {d.line})" if d.line is not None else ""
    message = d.message.removeprefix(f"{d.kind.replace('-', ' ')}: ")
    return f"{d.kind}{where} on {r.name}: {message}"


def render(check: CheckResult, note_unwritten: bool = True,
           init_value: float | None = None) -> str:
    """The friendly verdict: what went wrong and where, the score against the budget, the
    diagnostics with their source lines, and a nudge to the hints. With `note_unwritten`,
    output elements the kernel never wrote are pointed out (a note, not a failure); they hold
    `init_value` (None: garbage)."""
    hidden = sum(r.label.startswith("hidden") for r in check.cases)
    name = f"Puzzle {check.number}: {check.title}" if check.number else check.title
    lines: list[str] = []
    if check.passed:
        lines.append(f"Passed Tests! {name}: {len(check.cases)} case(s) "
                     f"({hidden} hidden), within budget.")
    else:
        lines.append(f"Failed Tests ({check.status}). {name}: {check.reason}.")
        shown = check.shown
        if shown is not None:
            lines += [""] + _case_lines(shown) + _advice(check, shown)
        if len(check.cases) > 1:
            lines += ["", "Cases: " + ", ".join(f"{r.label} {_case_word(r)}"
                                                for r in check.cases)]
    unwritten = next((r for r in check.cases if r.unwritten), None) if note_unwritten else None
    if check.shown is not None and check.shown.unwritten and note_unwritten:
        unwritten = check.shown
    if unwritten is not None:
        lines += ["", _unwritten_note(unwritten, init_value)]
    lines += ["", *score_table(check.counts, check.budget)]
    if check.findings:
        lines += ["", "Diagnostics:"] + [d.render() for d in check.findings]
    if not check.passed:
        lines += ["", HINT_NUDGE]
    gpus = {r.gpu for r in check.cases if r.metal is not None}
    if gpus:
        lines += ["", f"(Also ran on the real GPU through {', '.join(sorted(gpus))}.)"]
    pointed = [r for r in (check.shown, check.also)
               if r is not None and r is not check.cases[0]]
    if pointed:
        lines += [""] + [_case_pointer(r) for r in pointed]
    return "\n".join(lines)


def score_table(counts: dict[str, int], budget: dict[str, int] | None = None) -> list[str]:
    """The Metal-Puzzles score table (max per thread), with the budget row when there is one;
    atomics appear only where used or limited."""
    names = [n for n in COUNT_NAMES
             if n != "atomics" or counts.get(n, 0) or (budget and n in budget)]
    widths = [len(COUNT_LABELS[n]) for n in names]
    rows = ["Score (Max Per Thread):",
            "|        | " + " | ".join(COUNT_LABELS[n] for n in names) + " |",
            "| Yours  | " + " | ".join(f"{counts.get(n, 0):>{w}}"
                                       for n, w in zip(names, widths)) + " |"]
    if budget:
        rows.append("| Budget | " + " | ".join(f"{budget.get(n, '-'):>{w}}"
                                             for n, w in zip(names, widths)) + " |")
    return rows


def _advice(check: CheckResult, shown: CaseResult) -> list[str]:
    """A sentence on what the failing case suggests, where it suggests something."""
    if shown.faulted and shown.produced is not None and not shown.mismatches:
        return ["  The values match this time, but the error below makes them unreliable: on a "
                "GPU they could come out differently."]
    visible = check.cases[0]
    advice = []
    if shown is not visible and visible.correct and shown.cause is None:
        advice.append("  Right on the visible case, wrong on this one: does your kernel depend "
                      "on the actual input values and sizes, or only on the example?")
    return advice


def _case_pointer(r: CaseResult) -> str:
    """The calls that draw and explore a case other than the visible one."""
    case = r.label.split()[1] if r.label.startswith("hidden ") else repr(r.label)
    return (f"To see {r.name}: problem.show(case={case}) draws it, "
            f"problem.explore(case={case}) explores it.")


def _case_word(r: CaseResult) -> str:
    if r.faulted:
        return "error"
    if r.mismatches or r.metal_mismatches or r.cause is not None:
        return "wrong"
    return "ok"


def _case_lines(r: CaseResult) -> list[str]:
    """Inputs, expected and produced values of one case, with differing positions marked."""
    c = r.case
    name = r.name[0].upper() + r.name[1:]
    lines = [f"{name}: grid {tuple(c.grid)}, threadgroup {tuple(c.threadgroup)}"]
    if r.error and not r.diagnostics:
        return [*lines, f"  {r.error}"]
    if r.expected is None or (r.produced is None and r.metal is None):
        return lines
    produced, bad = (r.produced, r.mismatches) if r.mismatches or r.metal is None else (
        r.metal, r.metal_mismatches)
    # Large arrays print as a window around the first wrong element.
    center = bad[0] if bad and r.expected.shape == produced.shape else None
    for i, x in enumerate(c.inputs):
        name = r.input_names[i] if i < len(r.input_names) else f"input {i}"
        x = np.asarray(x)
        lines += _labelled(name, x, [], center if x.shape == produced.shape else None)
    yours = "Yours" if produced is r.produced else "GPU"
    lines += _labelled(yours, produced, bad, center)
    lines += _labelled("Spec", r.expected, [], center)
    if bad:
        shown = ", ".join(_position(p) for p in bad[:8])
        more = f" and {len(bad) - 8} more" if len(bad) > 8 else ""
        lines.append(f"  differs at {shown}{more}")
        p = bad[0]
        if r.expected.shape == produced.shape:
            lines.append(f"  e.g. at {_position(p)}: yours {_scalar(produced[p])}, "
                         f"expected {_scalar(r.expected[p])}")
    return lines


def _unwritten_note(r: CaseResult, init_value: float | None) -> str:
    """Which output elements the kernel never wrote, on the first case where some were not."""
    shown = ", ".join(f"{r.output_name}{_position(p)}" for p in r.unwritten[:MAX_UNWRITTEN_SHOWN])
    more = (f" and {len(r.unwritten) - MAX_UNWRITTEN_SHOWN} more"
            if len(r.unwritten) > MAX_UNWRITTEN_SHOWN else "")
    start = None if init_value is None else _scalar(np.float32(init_value))
    held = ("outputs start uninitialised, so those elements hold garbage" if start is None
            else f"outputs start as {start} (as Metal-Puzzles launches them), so those "
                 f"elements are {start}")
    return f"Note: on {r.name} your kernel never wrote {shown}{more};\n  {held}."


def _labelled(label: str, values: np.ndarray, bad: list[tuple[int, ...]],
              center: tuple[int, ...] | None = None) -> list[str]:
    """`label: [...]` rows; a row of carets under the elements in `bad`. A large array prints
    as a window around `center` (or its shape only, without one)."""
    head = f"  {label:<5}: "
    if values.size > MAX_SHOWN:
        if center is None or values.ndim == 0:
            return [f"{head}array of shape {values.shape}, dtype {values.dtype}"]
        return _window(head, values, bad, center)
    if values.ndim == 0:
        return [f"{head}{_scalar(values[()])}"]
    matrix = values.reshape(-1, values.shape[-1])
    width = max(len(_scalar(v)) for v in matrix.flat)
    marked = {np.ravel_multi_index(p, values.shape) for p in bad if len(p) == values.ndim}
    lines = []
    for row_index, row in enumerate(matrix):
        prefix = head if row_index == 0 else " " * len(head)
        cells = [f"{_scalar(v):>{width}}" for v in row]
        lines.append(f"{prefix}[{' '.join(cells)}]")
        flat = range(row_index * len(row), (row_index + 1) * len(row))
        if marked.intersection(flat):
            carets = [("^" if f in marked else " ") * width for f in flat]
            lines.append(" " * len(prefix) + " " + " ".join(carets).rstrip())
    return lines


def _window(head: str, values: np.ndarray, bad: list[tuple[int, ...]],
            center: tuple[int, ...]) -> list[str]:
    """Rows and columns of `values` (leading dimensions folded into rows) around `center`,
    each row led by its index, with carets under the elements in `bad`."""
    matrix = values.reshape(-1, values.shape[-1])
    r, c = divmod(int(np.ravel_multi_index(center, values.shape)), matrix.shape[1])
    r0, r1 = max(0, r - WINDOW[0] // 2), min(matrix.shape[0], r + WINDOW[0] // 2 + 1)
    c0, c1 = max(0, c - WINDOW[1] // 2), min(matrix.shape[1], c + WINDOW[1] // 2 + 1)
    part = matrix[r0:r1, c0:c1]
    width = max(len(_scalar(v)) for v in part.flat)
    marked = {int(np.ravel_multi_index(p, values.shape)) for p in bad if len(p) == values.ndim}
    where = (f"[{c0}:{c1}]" if matrix.shape[0] == 1 else
             f"rows {r0}:{r1}, columns {c0}:{c1}")
    lines = [f"{head}{where} of an array of shape {values.shape}"]
    label_w = len(str(r1 - 1))
    for row in range(r0, r1):
        flat = [row * matrix.shape[1] + col for col in range(c0, c1)]
        cells = " ".join(f"{_scalar(matrix[row, col]):>{width}}" for col in range(c0, c1))
        more = ("... " if c0 else "", " ..." if c1 < matrix.shape[1] else "")
        prefix = " " * len(head) + (f"{row:>{label_w}} " if matrix.shape[0] > 1 else "")
        lines.append(f"{prefix}[{more[0]}{cells}{more[1]}]")
        if marked.intersection(flat):
            carets = " ".join(("^" if f in marked else " ") * width for f in flat)
            lines.append(" " * (len(prefix) + 1 + len(more[0])) + carets.rstrip())
    return lines


def _scalar(value: object) -> str:
    v = np.asarray(value).item()
    if isinstance(v, float):
        return "nan" if math.isnan(v) else (str(int(v)) if v.is_integer() else f"{v:.4g}")
    return str(v)


def _position(p: tuple[int, ...]) -> str:
    return f"[{', '.join(map(str, p))}]"


def _json_array(values: np.ndarray) -> list:
    # NaN (e.g. an output never written) is not JSON; null says the same.
    return np.where(np.isnan(values.astype(np.float64)), None, values.astype(object)).tolist()


def _same_case(a: Case, b: Case) -> bool:
    return (a.grid == b.grid and a.threadgroup == b.threadgroup
            and a.output_shape == b.output_shape and len(a.inputs) == len(b.inputs)
            and all(np.array_equal(x, y) for x, y in zip(a.inputs, b.inputs)))


def _unique(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """One of each finding: the same bug shows up again on every case."""
    seen, kept = set(), []
    for d in diagnostics:
        key = (d.kind, d.severity, d.message, d.section, d.line, d.column)
        if key not in seen:
            seen.add(key)
            kept.append(d)
    return kept


def _exception_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()
