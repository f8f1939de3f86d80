"""Source coordinates, diagnostics and the two exceptions users see.

The simulator compiles the *generated* source (header + MLX's signature + the user's body), but a
learner wrote only `source` and `header`. `SourceMap` translates an offset in the generated text
back to a line and column of the section the user wrote, so every message points at their code.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Coord:
    """A position in one section of a kernel: `section` is "source", "header" or "generated"."""

    section: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.section}:{self.line}:{self.column}"


class SourceMap:
    """Maps offsets of the generated text to coordinates in the section the user wrote.

    `sections` lists `(name, start, end)` character ranges of the generated text; offsets outside
    every range belong to the "generated" section (MLX's signature), counted in the full text.
    """

    def __init__(self, text: str, sections: list[tuple[str, int, int]] = ()) -> None:
        self.text = text
        self.sections = sorted(sections, key=lambda s: s[1])
        self._line_starts = [0, *(m.end() for m in re.finditer("\n", text))]
        self._generated_end = len(text)  # the end of the generated text, before included files

    def append(self, name: str, text: str) -> int:
        """Add `text` (an included file) after the generated text as the section `name`;
        returns the offset where it starts."""
        start = len(self.text) + 1
        self.text += "\n" + text
        self.sections = sorted([*self.sections, (name, start, len(self.text))],
                               key=lambda s: s[1])
        self._line_starts += [start, *(start + m.end() for m in re.finditer("\n", text))]
        return start

    def _section_of(self, offset: int) -> tuple[str, int]:
        for name, start, end in self.sections:
            if start <= offset < end or (offset == end and end in (len(self.text),
                                                                  self._generated_end)):
                return name, start
        return "generated", 0

    def coord(self, offset: int) -> Coord:
        name, start = self._section_of(offset)
        line = bisect.bisect_right(self._line_starts, offset) - 1
        base_line = bisect.bisect_right(self._line_starts, start) - 1
        line_start = max(self._line_starts[line], start)
        return Coord(name, line - base_line + 1, offset - line_start + 1)

    def line_text(self, coord: Coord) -> str:
        """The text of `coord`'s line within its section."""
        start, end = next(((s, e) for name, s, e in self.sections if name == coord.section),
                          (0, len(self.text)))
        lines = self.text[start:end].split("\n")
        return lines[coord.line - 1] if 0 < coord.line <= len(lines) else ""


def render_excerpt(source_map: SourceMap | None, coord: Coord | None, width: int = 1) -> str:
    """The offending line with a caret under `coord`, as a C compiler prints it."""
    if source_map is None or coord is None:
        return ""
    line = source_map.line_text(coord)
    if not line.strip():
        return ""
    gutter = f"{coord.line:>4} | "
    caret = " " * (coord.column - 1) + "^" + "~" * max(0, width - 1)
    return f"{gutter}{line}\n{' ' * (len(gutter) - 2)}| {caret}"


@dataclass
class Diagnostic:
    """One finding about a kernel: what went wrong, where, and which threads did it.

    `kind` is one of: out-of-bounds, race, divergent-barrier, uninitialized-read,
    null-dereference, division-by-zero, shift-out-of-range, step-limit, resource-limit; for
    SIMD-group code
    inactive-lane-read, inactive-lanes (a reduction or scan with lanes in another branch),
    invalid-lane, invalid-argument, non-uniform-argument,
    divergent-simdgroup, unconfirmed-behavior; lost-update (atomic loads and stores of one
    location by several threads in no fixed order) (run time); or compile (compile time).
    `threads` lists offending threads as `thread_position_in_grid` triples.
    """

    kind: str
    severity: str
    message: str
    line: int | None = None
    column: int | None = None
    threads: list[tuple[int, int, int]] = field(default_factory=list)
    detail: str = ""
    section: str = "source"
    hint: str = ""
    excerpt: str = ""
    cells: list[tuple] = field(default_factory=list)  # (buffer, threadgroup or -1, element)

    def render(self) -> str:
        where = f"{self.section}:{self.line}:{self.column}: " if self.line is not None else ""
        text = f"{where}{self.severity}: {self.message}"
        if self.threads:
            shown = ", ".join(str(t) for t in self.threads[:4])
            more = f" and {len(self.threads) - 4} more" if len(self.threads) > 4 else ""
            text += f"\n    threads: {shown}{more}"
        if self.detail:
            text += f"\n    {self.detail}"
        if self.excerpt:
            text += "\n" + self.excerpt
        if self.hint:
            text += f"\n    hint: {self.hint}"
        return text

    __str__ = render


class MetalsimError(Exception):
    """Base class of the errors metalsim raises about a kernel."""


class CompileError(MetalsimError):
    """What the Metal compiler would reject, pointing at the user's line and column."""

    def __init__(self, message: str, coord: Coord | None = None,
                 source_map: SourceMap | None = None, hint: str = "", width: int = 1) -> None:
        self.coord = coord
        self.diagnostic = Diagnostic(
            kind="compile", severity="error", message=message,
            line=coord.line if coord else None, column=coord.column if coord else None,
            section=coord.section if coord else "source", hint=hint,
            excerpt=render_excerpt(source_map, coord, width),
        )
        self.diagnostics = [self.diagnostic]
        super().__init__(self.diagnostic.render())

    @property
    def line(self) -> int | None:
        return self.diagnostic.line

    @property
    def column(self) -> int | None:
        return self.diagnostic.column


class TransformError(MetalsimError):
    """A simulated kernel called inside `mx.compile`, `mx.vmap` or `mx.export_function`,
    where its inputs have no values yet."""

    def __init__(self, kernel_name: str) -> None:
        super().__init__(
            f"kernel '{kernel_name}' was called inside a function transformation (mx.compile, "
            "mx.vmap or mx.export_function), where its inputs have no values yet; the "
            "simulator needs them.\n"
            "    hint: metalsim.patch() turns mx.compile off while it is active, so call "
            "compiled functions inside the patch (the metalsim_patch fixture does). mx.vmap "
            "of a custom kernel fails on Metal too: MLX's CustomKernel has no vmap rule.")


class KernelFault(MetalsimError):
    """Run-time faults found while simulating a kernel (out of bounds, races, ...)."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = diagnostics
        errors = [d for d in diagnostics if d.severity == "error"] or diagnostics
        head = f"{len(errors)} error(s) while running the kernel:\n"
        super().__init__(head + "\n\n".join(d.render() for d in errors[:5]))
