"""Grade a learner's notebook without running any of its Python.

The notebook is read as JSON; each code cell is parsed with `ast` (never executed) and read by
`puzzles.grading.static_reader`, which evaluates a safe, bounded subset of Python in notebook
order. A puzzle's kernel is found from its `MetalProblem("Title", fn, ...)` call, whose `fn`
returns a `MetalKernel(...)`, or from a `MetalKernel` whose `name=` belongs to exactly one
puzzle. The kernel is then checked with the learner's own `input_names`, `output_names`,
`source` and `header`, on the puzzle's visible case and on hidden cases drawn for this
student and this kernel from the grader's secret seed (`grading.seeds`; never the seed
learners' `check()` uses), launched as `check()` launches them (`checking.check_puzzle`).
Each notebook of a submission is read on its own; where several build one puzzle, the newest
is graded and the row's `notice` says so.

Each row is `CheckResult.to_json()` plus `cell`, `note`, `warnings`, `notebook`, `notice`,
`seed` (the hidden cases' seed, for the instructor) and `student` (what the student may see of
the verdict, `grading.disclosure`); puzzles whose kernel is
still the template are "fail" with the note "unsolved", puzzles without a cell are "fail" with
"missing", kernels the reader cannot evaluate are "unreadable" (note "unreadable" or
"ambiguous") with the line and the reason, and cells that are not Python are "error" rows.
"""

from __future__ import annotations

import ast
import datetime
import json
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from puzzles.catalog import Puzzle, all_puzzles
from puzzles.checking import COUNT_NAMES, KernelArgs, check_puzzle, puzzle_cases
from puzzles.grading.disclosure import student_summary, student_view
from puzzles.grading.intake import IntakeError, NotebookFile, read_notebooks, student_id
from puzzles.grading.integrity import clean_text
from puzzles.grading.seeds import case_seed
from puzzles.grading.static_reader import KernelCall, NotebookReader, Unreadable

UNREADABLE = "could not read this statically"


class GradeError(Exception):
    """The file is not a notebook the grader can read."""


@dataclass
class Found:
    """A kernel found in the notebook for one puzzle, or why it could not be read. `guessed`
    marks a puzzle the notebook may build after the point where the reader stopped."""

    puzzle: Puzzle
    cell: int
    kernel: KernelCall | None = None
    error: str = ""
    note: str = ""
    notebook: str = ""
    notice: str = ""
    guessed: bool = False


@dataclass
class Reading:
    """What a submission holds: a kernel (or a reason) per puzzle, and rows for cells that are
    not Python."""

    found: dict[int, Found] = field(default_factory=dict)
    broken: list[dict[str, object]] = field(default_factory=list)

    def chapters(self) -> set[str]:
        """The chapters the submission works on (a puzzle of them has a cell)."""
        numbers = set(self.found) | {row["puzzle"] for row in self.broken}
        return {p.chapter for p in all_puzzles() if p.number in numbers}


@dataclass(frozen=True)
class Notebook:
    """The code cells of one notebook, its name in the submission and when it was modified."""

    name: str
    cells: list[str]
    modified: float = 0.0


def grade(path: str | Path, *, seed: int | None = None, student: str | None = None
          ) -> list[dict[str, object]]:
    """One row per puzzle of the notebook's chapters (and one per unparseable cell), in this
    process. `seed=None` draws the hidden cases from a fresh secret seed; each puzzle's cases
    then come from it, the student (the file name by default) and the kernel's text."""
    path = Path(path)
    try:
        notebooks = [parse_notebook(f) for f in read_notebooks(path)]
    except IntakeError as exc:
        raise GradeError(str(exc)) from None
    reading = read_submission(notebooks)
    seed = secrets.randbits(62) + 1 if seed is None else seed
    student = student_id(path.name) if student is None else student
    return [grade_puzzle(reading, number, seed, student) for number in plan(reading)] + [
        row for row in reading.broken if row["puzzle"] is None]


def plan(reading: Reading, assigned: list[int] | None = None) -> list[int]:
    """The puzzles to grade: the assigned ones, or every puzzle of the chapters worked on."""
    if assigned:
        return list(assigned)
    chapters = reading.chapters()
    return [p.number for p in all_puzzles() if p.chapter in chapters]


def parse_notebook(file: NotebookFile) -> Notebook:
    """The source of every code cell of a notebook file (an empty string for other cells, to
    keep numbering)."""
    where = file.name
    try:
        text = file.data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GradeError(f"cannot read {where}: {exc}") from None
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise GradeError(f"{where} is not a notebook: invalid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise GradeError(f"{where} is not a notebook: its JSON is not an object")
    if isinstance(data.get("nbformat"), int) and data["nbformat"] < 4:
        # Imported here, not for every submission: nbformat imports jsonschema, whose URI
        # format checks build some 40 grammars on import (seconds of CPU per process).
        import nbformat

        try:  # old notebooks keep cells in worksheets; nbformat converts them
            data = nbformat.reads(text, as_version=4)
        except Exception as exc:
            raise GradeError(f"{where}: cannot convert the old notebook format: {exc}"
                             ) from None
    cells = data.get("cells")
    if not isinstance(cells, list):
        raise GradeError(f"{where} is not a notebook: it has no list of 'cells'")
    sources = []
    for cell in cells:
        source = cell.get("source", "") if isinstance(cell, dict) else ""
        if isinstance(source, list):
            source = "".join(s for s in source if isinstance(s, str))
        is_code = isinstance(cell, dict) and cell.get("cell_type") == "code"
        text = source if is_code and isinstance(source, str) else ""
        # A lone surrogate (valid JSON, not valid UTF-8) would break every later print.
        sources.append(text.encode("utf-8", "replace").decode("utf-8"))
    return Notebook(file.name, sources, file.modified)


def read_submission(notebooks: list[Notebook]) -> Reading:
    """The kernel of each puzzle, each notebook read on its own (as its own Python kernel
    would run it). Where several notebooks build one puzzle, the newest is graded and the row
    says so."""
    readings = [(nb, read_notebook(nb.cells, nb.name)) for nb in notebooks]
    reading = Reading()
    candidates: dict[int, list[tuple[Notebook, Reading]]] = {}
    for nb, one in readings:
        for number, found in one.found.items():
            if not found.guessed:
                candidates.setdefault(number, []).append((nb, one))
        for row in one.broken:
            if row["puzzle"] is None:
                reading.broken.append(row)
            elif not any(o is one for _, o in candidates.get(int(row["puzzle"]), [])):
                candidates.setdefault(int(row["puzzle"]), []).append((nb, one))
    for nb, one in readings:  # a guess only where no notebook builds the puzzle
        for number, found in one.found.items():
            if found.guessed and number not in candidates:
                candidates[number] = [(nb, one)]
    for number, options in sorted(candidates.items()):
        nb, chosen = max(options, key=lambda option: (option[0].modified, option[0].name))
        notice = _newest_notice(nb, [o[0] for o in options]) if len(options) > 1 else ""
        broken = next((r for r in chosen.broken if r["puzzle"] == number), None)
        if broken is not None:
            reading.broken.append({**broken, "notebook": nb.name, "notice": notice})
        else:
            found = chosen.found[number]
            found.notice = notice
            reading.found[number] = found
    return reading


def _newest_notice(chosen: Notebook, options: list[Notebook]) -> str:
    when = datetime.datetime.fromtimestamp(chosen.modified, datetime.UTC)
    others = ", ".join(repr(o.name) for o in options if o is not chosen)
    return (f"{len(options)} notebooks build this puzzle; graded the newest, {chosen.name!r} "
            f"(modified {when:%Y-%m-%d %H:%M} UTC); not graded: {others}")


def read_notebook(cells: list[str], name: str = "") -> Reading:
    """One notebook's kernels (the last one built wins; a `MetalProblem` wins over a kernel
    found by its name) and error rows for cells that are not Python."""
    by_title = {t.lower(): p for p in all_puzzles() for t in p.titles}
    by_kernel: dict[str, list[Puzzle]] = {}
    for p in all_puzzles():
        by_kernel.setdefault(p.kernel, []).append(p)
    reader = NotebookReader()
    reading = Reading()
    for index, text in enumerate(cells):
        if not text.strip():
            continue
        try:
            tree = ast.parse(_without_magics(text))
        except (ValueError, RecursionError, MemoryError) as exc:  # e.g. a null byte
            reading.broken.append(_broken_cell(index, text, SyntaxError(str(exc)), by_title))
            continue
        except SyntaxError as exc:
            reading.broken.append(_broken_cell(index, text, exc, by_title))
            continue
        try:
            reader.read_cell(index, tree)
        except Exception as exc:  # a bug of the reader must not lose the whole notebook
            reading.broken.append(_broken_cell(index, text, exc, by_title))
    reader.finish()
    from_kernels: dict[int, Found] = {}
    for cell, kernel, kernel_name in reader.kernels:
        matches = by_kernel.get(kernel_name, []) if kernel_name else []
        if len(matches) == 1:
            from_kernels[matches[0].number] = _found(matches[0], cell, kernel, name)
    from_problems: dict[int, Found] = {}
    for cell, problem in reader.problems:
        puzzle = by_title.get(problem.title.lower())
        if puzzle is not None:
            from_problems[puzzle.number] = _found(puzzle, cell, problem.kernel, name)
    reading.found = {**from_kernels, **from_problems}
    if reader.exhausted is not None:
        mentioned = _mentioned(cells, by_title)
        for puzzle in all_puzzles():
            if puzzle.number not in reading.found:
                reading.found[puzzle.number] = Found(
                    puzzle, reader.cell, error=f"{UNREADABLE}: cell {reader.cell}, "
                    f"{reader.exhausted}", note="unreadable", notebook=name,
                    guessed=puzzle.number not in mentioned)
    for row in reading.broken:
        if row["puzzle"] is not None:
            reading.found.pop(int(row["puzzle"]), None)
    return reading


def _mentioned(cells: list[str], by_title: dict[str, Puzzle]) -> set[int]:
    """Puzzles a notebook's text names (a `MetalProblem("Title"` or a `def slug_test(`)."""
    text = "\n".join(cells)
    numbers = {by_title[m.group(1).lower()].number for m in re.finditer(
        r"MetalProblem\(\s*[\"']([^\"']{1,100})[\"']", text) if m.group(1).lower() in by_title}
    return numbers | {p.number for p in all_puzzles() if f"def {p.slug}_test(" in text}


def _found(puzzle: Puzzle, cell: int, kernel: KernelCall | Unreadable, notebook: str
           ) -> Found:
    if isinstance(kernel, KernelCall):
        return Found(puzzle, cell, kernel, notebook=notebook)
    return Found(puzzle, cell, error=f"{UNREADABLE}: cell {cell}, {kernel}",
                 note="ambiguous" if kernel.ambiguous else "unreadable", notebook=notebook)


def grade_puzzle(reading: Reading, number: int, secret: int, student: str
                 ) -> dict[str, object]:
    """The row of one puzzle: its kernel checked on the visible case and on hidden cases drawn
    for this student and this kernel from the grader's secret (see `seeds.case_seed`)."""
    puzzle = next(p for p in all_puzzles() if p.number == number)
    broken = next((row for row in reading.broken if row["puzzle"] == number), None)
    if broken is not None:
        return broken
    found = reading.found.get(number)
    if found is None:
        return _row(puzzle, None, "fail", "no cell of the notebook builds this puzzle",
                    "missing")
    where = {"notebook": found.notebook, "notice": found.notice}
    if found.error or found.kernel is None:
        return {**_row(puzzle, found.cell, "unreadable", found.error, found.note), **where}
    kernel = found.kernel
    if _code_only(kernel.source) == _code_only(puzzle.template):
        return {**_row(puzzle, found.cell, "fail", "the kernel is still the template",
                       "unsolved"), **where}
    for what, theirs, ours in (("input", kernel.input_names, puzzle.input_names),
                               ("output", kernel.output_names, puzzle.output_names)):
        if len(theirs) != len(ours):
            return {**_row(puzzle, found.cell, "error",
                           f"the kernel has {len(theirs)} {what}(s) {list(theirs)}, but this "
                           f"puzzle passes {len(ours)}: {list(ours)}", ""), **where}
    args = KernelArgs(name=kernel.name, input_names=kernel.input_names,
                      output_names=kernel.output_names, source=kernel.source,
                      header=kernel.header, ensure_row_contiguous=kernel.ensure_row_contiguous,
                      atomic_outputs=kernel.atomic_outputs)
    seed = case_seed(secret, student, number, kernel.header, kernel.source)
    result = check_puzzle(puzzle, puzzle_cases(puzzle, hidden=True, seed=seed),
                          lambda _case: args)
    row = result.to_json()
    row.update(cell=found.cell, note="",
               warnings=sum(d.severity == "warning" for d in result.diagnostics),
               seed=seed, student=student_summary(result), **where)
    if any("MemoryError" in case.error for case in result.cases):
        reason = "the simulation ran out of the memory the grader allows"
        row.update(status="memory-limit", note="memory-limit", reason=reason,
                   student={**row["student"], "reason": reason})
    return row


def _row(puzzle: Puzzle | None, cell: int | None, status: str, reason: str, note: str
         ) -> dict[str, object]:
    return {
        "puzzle": puzzle.number if puzzle else None,
        "title": puzzle.title if puzzle else f"cell {cell}",
        "status": status,
        "reason": reason,
        "counts": {name: 0 for name in COUNT_NAMES},
        "budget": puzzle.budget.limits() if puzzle else {},
        "diagnostics": [],
        "cases": [],
        "cell": cell,
        "note": note,
        "warnings": 0,
    }


def limit_row(number: int, status: str, reason: str) -> dict[str, object]:
    """The row of a puzzle whose grading was stopped by a limit (time, memory, a crash)."""
    puzzle = next(p for p in all_puzzles() if p.number == number)
    return _row(puzzle, None, status, reason, status)


def format_table(rows: list[dict[str, object]]) -> str:
    """A plain-text table of rows (max per thread: global reads/writes, threadgroup reads/writes,
    atomics), then a one-line summary. Control characters never reach the terminal."""
    lines = [f"{'#':>3}  {'puzzle':<22} {'status':<12} {'GR':>3} {'GW':>3} {'TR':>3} {'TW':>3}"
             f" {'AT':>3}  note"]
    for row in map(student_view, rows):
        counts = row["counts"]
        note = row["note"] or (row["reason"] if row["status"] != "pass" else "")
        if row["note"] and row["status"] not in ("pass", "fail"):
            note = f"{row['note']}: {row['reason']}"
        number = "" if row["puzzle"] is None else row["puzzle"]
        note = " ".join(clean_text(str(note)).split())
        lines.append(
            f"{number:>3}  {clean_text(str(row['title']))[:22]:<22} {row['status']:<12} "
            + " ".join(f"{counts.get(n, 0):>3}" for n in COUNT_NAMES)
            + f"  {note[:300]}".rstrip())
    passed = sum(row["status"] == "pass" for row in rows if row["puzzle"] is not None)
    total = sum(row["puzzle"] is not None for row in rows)
    lines.append(f"{passed} of {total} puzzles passed")
    return "\n".join(lines)


# --- reading the syntax tree ----------------------------------------------------------------


def _without_magics(text: str) -> str:
    """IPython's `%magic` and `!shell` lines are not Python: blank them (keeping line numbers)."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                     for line in text.split("\n"))


def _broken_cell(index: int, text: str, exc: Exception, by_title: dict[str, Puzzle]
                 ) -> dict[str, object]:
    """An error row for a cell that is not valid Python, attributed to its puzzle if a
    `MetalProblem("Title"` can still be spotted in the text."""
    match = re.search(r"MetalProblem\(\s*[\"']([^\"']{1,100})[\"']", text)
    puzzle = by_title.get(match.group(1).lower()) if match else None
    if isinstance(exc, SyntaxError):
        where = f"line {exc.lineno}: " if exc.lineno else ""
        message = f"cell {index}: not valid Python ({where}{exc.msg}); not graded"
    else:
        message = (f"cell {index}: the grader could not read it ({type(exc).__name__}: "
                   f"{str(exc)[:200]}); not graded")
    return _row(puzzle, index, "error", message, "unparseable")


def _code_only(source: str) -> str:
    """The source without comments and whitespace: what makes two kernels the same."""
    source = re.sub(r"//[^\n]*|/\*.*?\*/", "", source, flags=re.S)
    return re.sub(r"\s+", "", source)
