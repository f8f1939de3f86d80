"""Why a kernel's output is wrong: the cause a check names for a failing case.

metalsim reports what a launch did wrong in memory (a race, an access out of bounds); this
module reads the *values* of a failing case, and which thread wrote which output element, and
names the beginner's mistake behind them:

- wrong-index: several threads write one output element while others stay unwritten (an index
  that repeats across threads, such as a position inside the threadgroup used as a global one),
  or values land on other elements than the spec's (a transposed or shifted index);
- integer-truncation: the wrong values are whole numbers where the spec's have fractions (float
  data through an `int` accumulator or cast);
- redundant-writes: the values are right, but several threads write the same value to one
  element (a warning for metalsim; the puzzles want one writer per element).

Each cause comes with a hint that leads to the fix without writing it. Where one case shows a
wrong index and another then goes out of bounds, `located` and `index_past_the_end` tie the two
together, so that the fault's hint leads to the index rather than to a guard that would hide it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from metalsim.diagnostics import Diagnostic
from metalsim.exec.memory import BOUNDS_HINT

MAX_NAMED = 3     # threads or elements named in a message
FLOAT_DTYPES = ("float32", "float16", "bfloat16")
# Causes read from several threads writing one element (metalsim's race findings).
SHARED_WRITE_CAUSES = ("wrong-index", "redundant-writes")

WRONG_INDEX_HINT = (
    "work out by hand which element thread {thread} writes, and which one it should write. "
    "Check each part of the index: a position inside the threadgroup restarts at 0 in every "
    "threadgroup, and .x and .y are different directions of the grid.")
MISPLACED_HINT = (
    "the values are right but in the wrong places: check the index you read and write with: "
    "which thread position gives the row and which the column, and how long a row is.")
TRUNCATION_HINT = (
    "look for an `int` or `uint` that holds float data: an accumulator, a variable, or a cast. "
    "Converting a float to an integer type drops its fraction (toward zero).")
INDEX_NOT_GUARD_HINT = (
    "{why}: the index expression is likely wrong, and a bounds check would only hide it. "
    "Check which thread position gives the row and which the column (rows and columns "
    "swapped?), and how long a row is.")
REDUNDANT_HINT = ("the puzzles want one writer per output element: let one thread write it "
                  "and the others skip the write.")


def diagnose(expected: np.ndarray | None, produced: np.ndarray | None, dtype: str,
             output: str, mismatches: Sequence[tuple[int, ...]],
             unwritten: Sequence[tuple[int, ...]], diagnostics: Sequence[Diagnostic],
             writers: dict[int, np.ndarray] | None, grid: tuple[int, int, int]
             ) -> Diagnostic | None:
    """The cause of a case's failure, or None where the values say nothing more than the
    diagnostics do (or another error comes first). `writers` maps the flat output elements
    that several threads wrote to those threads' linear ids (from a traced run; None where
    the launch was too large to trace)."""
    shared = shared_writes(diagnostics, output)
    if expected is None or produced is None or any(
            d.severity == "error" and d not in shared for d in diagnostics):
        return None   # another error (out of bounds, say) already names the line at fault
    crowded = {e: t for e, t in (writers or {}).items() if np.unique(t).size > 1}
    if shared and unwritten and (crowded or (writers is None and _several_writers(shared))):
        return _wrong_index(expected.shape, output, unwritten, crowded, grid, shared)
    if any(d.severity == "error" for d in shared):
        return None   # threads adding into one element unatomically: the race says it
    same_value = [d for d in shared if "identical values" in d.message]
    if same_value and not mismatches:
        return _redundant(same_value, output)
    if not mismatches or expected.shape != produced.shape:
        return None
    never = set(unwritten)   # those elements keep the value outputs start with
    written = [p for p in mismatches if p not in never]
    return (_truncation(expected, produced, dtype, output, written)
            or _misplaced(expected, produced, output, mismatches))


def index_past_the_end(oob: Diagnostic, cause: Diagnostic, seen_on: str) -> Diagnostic:
    """An out-of-bounds finding of a kernel whose values `cause` shows a wrong index on the
    case `seen_on`: its hint leads to the index rather than to a guard, which would hide the
    bug. A more specific hint (an unsigned index that wrapped around) stays."""
    if oob.hint != BOUNDS_HINT:
        return oob
    seen = cause.message.removeprefix("wrong index: ")
    return replace(oob, hint=INDEX_NOT_GUARD_HINT.format(why=f"on {seen_on}, {seen}"))


def located(cause: Diagnostic, oob: Diagnostic, faulted_on: str) -> Diagnostic:
    """A wrong-index `cause` read from the values, placed at the access that goes out of
    bounds on the case `faulted_on`: an index that lands values on the wrong elements on one
    case and past the end of a buffer on another is most likely that access's."""
    what = oob.detail.split(";")[0]
    return replace(cause, line=oob.line, column=oob.column, section=oob.section,
                   excerpt=oob.excerpt,
                   detail=f"{cause.detail}; on {faulted_on}, the access at line {oob.line} "
                          f"goes out of bounds ({what})")


def shared_writes(diagnostics: Sequence[Diagnostic], output: str) -> list[Diagnostic]:
    """metalsim's races on `output` (those of a wrong index among them, which `diagnose` tells
    apart with the writers of a traced run)."""
    return [d for d in diagnostics if d.kind == "race" and f"'{output}'" in d.message]


def _several_writers(races: list[Diagnostic]) -> bool:
    """Whether metalsim's words say threads wrote one element (for launches too large to
    trace): its same-value warning, or a write-write race."""
    return any("identical values" in d.message or "several threads write" in d.hint
               or "and so does thread" in d.detail for d in races)


def _wrong_index(shape: tuple[int, ...], output: str, unwritten: Sequence[tuple[int, ...]],
                 crowded: dict[int, np.ndarray], grid: tuple[int, int, int],
                 shared: list[Diagnostic]) -> Diagnostic:
    """Several writers on some elements, none on others; `crowded` maps the elements with
    several writers to their threads (empty where the launch was too large to trace)."""
    if crowded:
        element = min(crowded)
        threads = [_position(int(t), grid) for t in crowded[element]]
        where = _element(output, np.unravel_index(element, shape))
        first = f"{where} is written by {len(threads)} threads"
        detail = (f"threads {_listed(threads)} all write {where}; {len(crowded)} element(s) "
                  f"of '{output}' have several writers")
        culprit = threads[1]
    else:  # too large to trace: metalsim's finding still names the threads
        first = f"several threads write one element of '{output}'"
        detail = shared[0].detail.split(";")[0]
        culprit = (shared[0].threads[1:] or shared[0].threads or ["(1, 0, 0)"])[0]
    second = f", while no thread writes {_listed([_element(output, p) for p in unwritten])}"
    detail += f" and {len(unwritten)} none"
    return Diagnostic(
        kind="wrong-index", severity="error", message=f"wrong index: {first}{second}",
        detail=f"{detail}: the index your threads compute repeats across threads instead of "
               f"giving each thread its own element",
        hint=WRONG_INDEX_HINT.format(thread=culprit), line=shared[0].line,
        column=shared[0].column, section=shared[0].section, excerpt=shared[0].excerpt)


def _redundant(shared: list[Diagnostic], output: str) -> Diagnostic:
    d = shared[0]
    return Diagnostic(
        kind="redundant-writes", severity="error",
        message=f"redundant writes: the values are right, but several threads write the "
                f"same element of '{output}'",
        detail=d.detail.split(";")[0],
        hint=REDUNDANT_HINT, line=d.line, column=d.column, section=d.section,
        excerpt=d.excerpt, threads=d.threads)


def _truncation(expected: np.ndarray, produced: np.ndarray, dtype: str, output: str,
                mismatches: Sequence[tuple[int, ...]]) -> Diagnostic | None:
    """Float data that went through an integer type: every wrong value (that the kernel
    wrote) whole and near the spec's, most of the spec's values there with a fraction."""
    if dtype not in FLOAT_DTYPES or not mismatches:
        return None
    at = tuple(np.array(mismatches).T)
    yours = produced[at].astype(np.float64)
    spec = expected[at].astype(np.float64)
    if not (np.all(np.isfinite(yours)) and np.all(yours == np.trunc(yours))
            and np.all(np.abs(yours - spec) <= 0.5 * np.abs(spec) + 1)):
        return None
    fractional = spec != np.trunc(spec)
    if fractional.mean() < 0.5:
        return None
    p = mismatches[int(np.argmax(fractional))]
    y, e = float(produced[p]), float(expected[p])
    same = ", the spec's value with its fraction cut off" if y == np.trunc(e) else ""
    return Diagnostic(
        kind="integer-truncation", severity="error",
        message="integer truncation: every wrong value is a whole number where the spec's "
                "has a fraction",
        detail=f"at {_element(output, p)} yours is {_number(y)} and the spec's "
               f"{_number(e)}{same}: the float values went through an integer type somewhere",
        hint=TRUNCATION_HINT)


def _misplaced(expected: np.ndarray, produced: np.ndarray, output: str,
               mismatches: Sequence[tuple[int, ...]]) -> Diagnostic | None:
    """Right values in the wrong places: the wrong values are the spec's values of the wrong
    elements, shuffled (a transposed or rotated index); the spec's values must be distinct
    enough for that to mean something. Values merely found elsewhere in the spec (a partial
    sum equal to an earlier prefix, say) are not enough."""
    flat = expected.reshape(-1)
    if len(mismatches) < 2 or np.unique(flat).size < max(3, flat.size // 2):
        return None
    at = tuple(np.array(mismatches).T)
    yours, spec = produced[at].astype(np.float64), expected[at].astype(np.float64)
    if not np.allclose(np.sort(yours), np.sort(spec), rtol=1e-5, atol=1e-6):
        return None
    p = mismatches[0]
    q = mismatches[int(np.argmin(np.abs(spec - yours[0])))]
    transposed = (expected.ndim == 2 and expected.shape[0] == expected.shape[1]
                  and np.allclose(produced.T, expected))
    swapped = "; your output is the spec's transposed: rows and columns swapped" \
        if transposed else ""
    return Diagnostic(
        kind="wrong-index", severity="error",
        message="wrong index: the values land on the wrong elements",
        detail=f"{_element(output, p)} holds {_number(float(produced[p]))}, which the spec "
               f"puts at {_element(output, q)}{swapped}",
        hint=MISPLACED_HINT)


def _listed(items: Sequence[object]) -> str:
    """The first few of `items`, and how many more."""
    shown = ", ".join(map(str, items[:MAX_NAMED]))
    return shown + (f" and {len(items) - MAX_NAMED} more" if len(items) > MAX_NAMED else "")


def _position(tid: int, grid: tuple[int, int, int]) -> tuple[int, int, int]:
    gx, gy, _ = grid
    return tid % gx, (tid // gx) % gy, tid // (gx * gy)


def _element(name: str, position: Sequence[int]) -> str:
    return f"{name}[{', '.join(str(int(i)) for i in position)}]"


def _number(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:.4g}"
