"""Grade a learner's notebook without running any of its Python.

The notebook is read as JSON; each code cell is parsed with `ast` (never executed). A puzzle's
kernel is found from its `MetalProblem("Title", fn, ...)` call, whose `fn` is a function that
builds `MetalKernel(..., source=source, header=header)`, or from a `MetalKernel` whose `name=`
belongs to exactly one puzzle. `source` and `header` must be string literals (or names assigned
string literals); they are then checked with `check_kernel`, hidden cases included.

Each row is `CheckResult.to_json()` plus `cell` and `note`; puzzles whose kernel is still the
template are "fail" with the note "unsolved", puzzles of the notebook's chapters without a cell
are "fail" with "missing", and cells that cannot be read are "error" rows saying why.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

from puzzles.catalog import Puzzle, all_puzzles
from puzzles.checking import COUNT_NAMES, check_kernel


class GradeError(Exception):
    """The file is not a notebook the grader can read."""


@dataclass
class Found:
    """A kernel found in the notebook for one puzzle, or why it could not be read."""

    puzzle: Puzzle
    cell: int
    source: str | None = None
    header: str = ""
    error: str = ""


def grade(path: str | Path, *, seed: int = 0) -> list[dict[str, object]]:
    """One row per puzzle of the notebook's chapters (and one per unreadable cell)."""
    cells = read_cells(Path(path))
    found, broken = extract(cells)
    broken_puzzles = {row["puzzle"]: row for row in broken if row["puzzle"] is not None}
    chapters = {p.chapter for p in all_puzzles()
                if p.number in found or p.number in broken_puzzles}
    rows = []
    for puzzle in all_puzzles():
        if puzzle.number in found:
            rows.append(_grade_one(found[puzzle.number], seed))
        elif puzzle.number in broken_puzzles:
            rows.append(broken_puzzles[puzzle.number])
        elif puzzle.chapter in chapters:
            rows.append(_row(puzzle, None, "fail", "no cell of the notebook builds this puzzle",
                             "missing"))
    return rows + [row for row in broken if row["puzzle"] is None]


def read_cells(path: Path) -> list[str]:
    """The source of every code cell (an empty string for other cells, to keep numbering)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise GradeError(f"cannot read {path}: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GradeError(f"{path} is not a notebook: invalid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise GradeError(f"{path} is not a notebook: its JSON is not an object")
    if isinstance(data.get("nbformat"), int) and data["nbformat"] < 4:
        try:  # old notebooks keep cells in worksheets; nbformat converts them
            data = nbformat.reads(text, as_version=4)
        except Exception as exc:
            raise GradeError(f"{path}: cannot convert the old notebook format: {exc}") from None
    cells = data.get("cells")
    if not isinstance(cells, list):
        raise GradeError(f"{path} is not a notebook: it has no list of 'cells'")
    sources = []
    for cell in cells:
        source = cell.get("source", "") if isinstance(cell, dict) else ""
        if isinstance(source, list):
            source = "".join(s for s in source if isinstance(s, str))
        is_code = isinstance(cell, dict) and cell.get("cell_type") == "code"
        sources.append(source if is_code and isinstance(source, str) else "")
    return sources


def extract(cells: list[str]) -> tuple[dict[int, Found], list[dict[str, object]]]:
    """The kernel of each puzzle (the last cell wins) and error rows for unparseable cells."""
    by_title = {t.lower(): p for p in all_puzzles() for t in p.titles}
    by_kernel: dict[str, list[Puzzle]] = {}
    for p in all_puzzles():
        by_kernel.setdefault(p.kernel, []).append(p)
    functions: dict[str, ast.FunctionDef] = {}
    strings: dict[str, str] = {}
    from_problems: dict[int, Found] = {}
    from_kernels: dict[int, Found] = {}
    broken = []
    for index, text in enumerate(cells):
        if not text.strip():
            continue
        try:
            tree = ast.parse(_without_magics(text))
        except SyntaxError as exc:
            broken.append(_broken_cell(index, text, exc, by_title))
            continue
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef):
                functions[stmt.name] = stmt
                for call in _calls(stmt, "MetalKernel"):
                    _add_kernel(call, stmt, strings, by_kernel, index, from_kernels)
                continue
            _remember_strings(stmt, strings)
            for call in _calls(stmt, "MetalKernel"):
                _add_kernel(call, None, strings, by_kernel, index, from_kernels)
            for call in _calls(stmt, "MetalProblem"):
                title = _literal(_argument(call, 0, "name"), {})
                puzzle = by_title.get(title.lower()) if isinstance(title, str) else None
                if puzzle is not None:
                    from_problems[puzzle.number] = _from_problem(call, puzzle, functions,
                                                                 strings, index)
    return {**from_kernels, **from_problems}, broken


def _grade_one(found: Found, seed: int) -> dict[str, object]:
    puzzle = found.puzzle
    if found.error:
        return _row(puzzle, found.cell, "error", found.error, "")
    assert found.source is not None
    if _code_only(found.source) == _code_only(puzzle.template):
        return _row(puzzle, found.cell, "fail", "the kernel is still the template", "unsolved")
    result = check_kernel(puzzle, found.source, found.header, hidden=True, seed=seed)
    row = result.to_json()
    row.update(cell=found.cell, note="")
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
    }


def format_table(rows: list[dict[str, object]]) -> str:
    """A plain-text table of rows (max per thread: global reads/writes, threadgroup reads/writes,
    atomics), then a one-line summary."""
    lines = [f"{'#':>3}  {'puzzle':<22} {'status':<12} {'GR':>3} {'GW':>3} {'TR':>3} {'TW':>3}"
             f" {'AT':>3}  note"]
    for row in rows:
        counts = row["counts"]
        note = row["note"] or (row["reason"] if row["status"] != "pass" else "")
        number = "" if row["puzzle"] is None else row["puzzle"]
        lines.append(
            f"{number:>3}  {str(row['title'])[:22]:<22} {row['status']:<12} "
            + " ".join(f"{counts.get(n, 0):>3}" for n in COUNT_NAMES)
            + f"  {note}".rstrip())
    passed = sum(row["status"] == "pass" for row in rows if row["puzzle"] is not None)
    total = sum(row["puzzle"] is not None for row in rows)
    lines.append(f"{passed} of {total} puzzles passed")
    return "\n".join(lines)


# --- reading the syntax tree ----------------------------------------------------------------


def _without_magics(text: str) -> str:
    """IPython's `%magic` and `!shell` lines are not Python: blank them (keeping line numbers)."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                     for line in text.split("\n"))


def _calls(node: ast.AST, name: str) -> list[ast.Call]:
    """Calls of `name(...)` or `something.name(...)` under `node`, in source order."""
    calls = [n for n in ast.walk(node) if isinstance(n, ast.Call) and (
        (isinstance(n.func, ast.Name) and n.func.id == name)
        or (isinstance(n.func, ast.Attribute) and n.func.attr == name))]
    return sorted(calls, key=lambda c: (c.lineno, c.col_offset))


def _argument(call: ast.Call, position: int, keyword: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    if position < len(call.args) and not any(isinstance(a, ast.Starred)
                                             for a in call.args[:position + 1]):
        return call.args[position]
    return None


class _NotLiteral(Exception):
    pass


def _literal(node: ast.expr | None, names: dict[str, str]) -> object:
    """A string literal, `+` of them, or a name bound to one; None if it is none of these."""
    try:
        return _string(node, names)
    except _NotLiteral:
        return None


def _string(node: ast.expr | None, names: dict[str, str]) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _string(node.left, names) + _string(node.right, names)
    raise _NotLiteral


def _remember_strings(stmt: ast.stmt, strings: dict[str, str]) -> None:
    """Record `name = "literal"` assignments (in order, so a later one replaces)."""
    if isinstance(stmt, ast.Assign):
        value = _literal(stmt.value, strings)
        for target in stmt.targets:
            if isinstance(target, ast.Name):
                if isinstance(value, str):
                    strings[target.id] = value
                else:
                    strings.pop(target.id, None)
    elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        value = _literal(stmt.value, strings)
        if isinstance(value, str):
            strings[stmt.target.id] = value


def _scope_strings(function: ast.FunctionDef | None, module: dict[str, str]) -> dict[str, str]:
    """String bindings visible in `function`: the module's, then its own top-level ones."""
    names = dict(module)
    for stmt in function.body if function else []:
        _remember_strings(stmt, names)
    return names


def _kernel_strings(call: ast.Call, function: ast.FunctionDef | None,
                    module: dict[str, str]) -> tuple[str | None, str, str]:
    """(source, header, error) of a `MetalKernel(...)` call."""
    names = _scope_strings(function, module)
    source_node = _argument(call, 3, "source")
    header_node = _argument(call, 4, "header")
    if source_node is None:
        return None, "", "MetalKernel(...) has no source= argument"
    source = _literal(source_node, names)
    header = "" if header_node is None else _literal(header_node, names)
    for what, value in (("source", source), ("header", header)):
        if not isinstance(value, str):
            return None, "", (f"the kernel's {what} is not a string literal (the grader reads "
                              "literals only and never runs your Python)")
    return source, header, ""


def _add_kernel(call: ast.Call, function: ast.FunctionDef | None, module: dict[str, str],
                by_kernel: dict[str, list[Puzzle]], cell: int, found: dict[int, Found]) -> None:
    """Map a MetalKernel to a puzzle by its name, when exactly one puzzle has that name."""
    name = _literal(_argument(call, 0, "name"), _scope_strings(function, module))
    matches = by_kernel.get(name, []) if isinstance(name, str) else []
    if len(matches) == 1:
        source, header, error = _kernel_strings(call, function, module)
        found[matches[0].number] = Found(matches[0], cell, source, header, error)


def _from_problem(call: ast.Call, puzzle: Puzzle, functions: dict[str, ast.FunctionDef],
                  strings: dict[str, str], cell: int) -> Found:
    fn = _argument(call, 1, "fn")
    if not isinstance(fn, ast.Name) or fn.id not in functions:
        return Found(puzzle, cell, error="MetalProblem's second argument must name a function "
                                         "defined with def in this notebook")
    kernels = _calls(functions[fn.id], "MetalKernel")
    if not kernels:
        return Found(puzzle, cell, error=f"{fn.id}() builds no MetalKernel(...)")
    source, header, error = _kernel_strings(kernels[-1], functions[fn.id], strings)
    return Found(puzzle, cell, source, header, error)


def _broken_cell(index: int, text: str, exc: SyntaxError, by_title: dict[str, Puzzle]
                 ) -> dict[str, object]:
    """An error row for a cell that is not valid Python, attributed to its puzzle if a
    `MetalProblem("Title"` can still be spotted in the text."""
    match = re.search(r"MetalProblem\(\s*[\"']([^\"']+)[\"']", text)
    puzzle = by_title.get(match.group(1).lower()) if match else None
    message = f"cell {index}: not valid Python (line {exc.lineno}: {exc.msg}); not graded"
    return _row(puzzle, index, "error", message, "unparseable")


def _code_only(source: str) -> str:
    """The source without comments and whitespace: what makes two kernels the same."""
    source = re.sub(r"//[^\n]*|/\*.*?\*/", "", source, flags=re.S)
    return re.sub(r"\s+", "", source)
