"""The top of a diagram: title, case and launch, the score table, the findings and the legend.

Every line is laid out from measured text: long lines wrap at the picture's width, score boxes
and legend items flow onto a new line when the next one would not fit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from metalsim.report import Report
from metalsim.viz import style
from metalsim.viz.arrows import BUNDLE_COLOUR, BUNDLE_FILL, arrowhead
from metalsim.viz.svg import Svg, num
from metalsim.viz.text import width, wrap

PAD = 16.0
TEXT = 12.0
SMALL = 11.0
LINE = 17.0

SCORE_NAMES = (("global_reads", "global reads"), ("global_writes", "global writes"),
               ("threadgroup_reads", "threadgroup reads"),
               ("threadgroup_writes", "threadgroup writes"), ("atomics", "atomics"),
               ("barriers", "barriers"))


def launch_line(report: Report, count: int) -> str:
    return (f"grid {tuple(report.grid)} · threadgroup {tuple(report.threadgroup)} · "
            f"{count} threadgroup{'s' if count != 1 else ''}")


def lines(svg: Svg, x: float, y: float, text: str, size: float, limit: float,
          **attrs: object) -> float:
    """`text` wrapped to `limit`, one <text> per line (the first carries `attrs`' class and
    data); returns the y below it."""
    for i, line in enumerate(wrap(text, size, limit)):
        svg.reach(x + width(line, size, "bold" if attrs.get("font_weight") else "sans"))
        # every line keeps the class; data-* only on the first
        svg.text(x, y + size, line, size, **(attrs if i == 0 else {
            k: v for k, v in attrs.items() if not k.startswith("data_")}))
        y += size + 5
    return y


def draw_header(svg: Svg, report: Report, count: int, note: str | None, title: str | None,
                case: str | None, budget: Mapping[str, int] | None, limit: float) -> float:
    """Title, case, launch, what is shown, score table and findings; the y below them."""
    y = PAD
    if title:
        y = lines(svg, PAD, y - 2, title, 17.0, limit, font_weight="bold", class_="title",
                  fill=style.INK) + 2
    if case:
        y = lines(svg, PAD, y, f"case: {case}", TEXT, limit, font_weight="bold", class_="case",
                  data_case=case, fill=style.INK)
    y = lines(svg, PAD, y, launch_line(report, count), TEXT, limit, class_="launch",
              fill=style.INK) + 2
    if note:
        y = lines(svg, PAD, y, note, TEXT, limit, class_="shown", fill=style.MUTED) + 2
    y = draw_scores(svg, report, budget, y + 2, limit)
    return draw_findings(svg, report, y, limit)


def draw_scores(svg: Svg, report: Report, budget: Mapping[str, int] | None, y: float,
                limit: float) -> float:
    """The score table: the maximum over threads of each count (the puzzle score) and, with
    a budget, the budget beside it (`-` where the budget sets no limit, as check() prints)."""
    counts = report.max_per_thread()
    shown = [(k, label) for k, label in SCORE_NAMES
             if k not in ("atomics", "barriers") or counts.get(k, 0) > 0]
    svg.open("g", class_="score-table")
    head = "max per thread"
    svg.text(PAD, y + 13, head, SMALL, fill=style.MUTED)
    x0 = PAD + width(head, SMALL) + 10
    x, row_y = x0, y
    for key, label in shown:
        count = counts.get(key, 0)
        limit_of = None if budget is None else budget.get(key)
        over = limit_of is not None and count > limit_of
        text = f"{count}" + ("" if budget is None else
                             f" / {'-' if limit_of is None else limit_of}")
        box = max(width(label, SMALL), width(text, 14.0, "bold")) + 14
        if x > x0 and x + box > PAD + limit:
            x, row_y = x0, row_y + 42
        svg.el("rect", x=x, y=row_y, width=box, height=36.0, rx=4.0,
               fill="#fdecea" if over else "#f6f6f6", stroke=style.ERROR if over else style.FAINT)
        svg.text(x + 7, row_y + 13, label, SMALL, fill=style.MUTED)
        svg.text(x + 7, row_y + 30, text, 14, font_weight="bold", class_="score",
                 data_count=key, data_over="1" if over else None,
                 fill=style.ERROR if over else style.INK)
        svg.reach(x + box)
        x += box + 6
    svg.close("g")
    return row_y + 46


def draw_findings(svg: Svg, report: Report, y: float, limit: float, most: int = 6) -> float:
    for d in report.diagnostics[:most]:
        colour = style.ERROR if d.severity == "error" else style.WARNING
        where = f"line {d.line}:{d.column}: " if d.line is not None else ""
        y = lines(svg, PAD, y, f"{d.severity} [{d.kind}] {where}{d.message}", TEXT, limit,
                  fill=colour, class_=f"diagnostic-note {d.kind}", data_kind=d.kind)
    if len(report.diagnostics) > most:
        y = lines(svg, PAD, y, f"... and {len(report.diagnostics) - most} more findings", TEXT,
                  limit, fill=style.MUTED)
    return y + (4 if report.diagnostics else 0)


def draw_legend(svg: Svg, y: float, limit: float, *, by_threadgroup: bool, untraced: bool,
                simd: bool, phases: bool, bundles: bool) -> float:
    """What the marks mean, as items that flow onto a new line when the next does not fit."""
    items: list[tuple[str, str]] = [("reader", "read by a thread (colour = thread"
                                     + (", shape = SIMD-group)" if simd else ")")),
                                    ("writer", "written by a thread of a drawn threadgroup")]
    if by_threadgroup:
        items.append(("group", "output fill = the threadgroup that wrote it"))
    if untraced:
        items.append(("untraced", "written by a threadgroup not traced"))
    items.append(("arrow", "value flowed into"))
    if bundles:
        items.append(("bundle", "many flows, bundled (thicker = more)"))
    if phases:
        items.append(("text", "phase k = after k barriers"))
    svg.open("g", class_="legend")
    x = PAD
    for kind, text in items:
        mark = 0.0 if kind == "text" else 30.0
        need = mark + width(text, SMALL)
        if x > PAD and x + need > PAD + limit:
            x, y = PAD, y + 18
        _legend_mark(svg, kind, x, y)
        svg.text(x + mark, y + 12, text, SMALL, fill=style.INK)
        svg.reach(x + need)
        x += need + 16
    svg.close("g")
    return y + 24


def _legend_mark(svg: Svg, kind: str, x: float, y: float) -> None:
    if kind == "reader":
        style.marker(svg, x + 9, y + 8, 4.5, 0)
    elif kind == "writer":
        svg.el("rect", x=x + 2, y=y + 1, width=15.0, height=15.0, fill=style.thread_tint(1),
               stroke=style.MUTED)
        style.marker(svg, x + 6.5, y + 5.5, 3.2, 1, outlined=True)
    elif kind == "group":
        for i in range(3):
            svg.el("rect", x=x + i * 8.0, y=y + 3, width=8.0, height=11.0,
                   fill=style.group_tint(i), stroke=style.MUTED, stroke_width=0.6)
    elif kind == "untraced":
        svg.el("rect", x=x + 2, y=y + 1, width=15.0, height=15.0, fill=style.UNKNOWN_WRITER,
               stroke=style.MUTED)
    elif kind == "arrow":
        svg.el("path", d=f"M{num(x)},{num(y + 8)} L{num(x + 20)},{num(y + 8)}", stroke=style.INK,
               stroke_width=1.2, fill="none")
        svg.el("polygon", points=arrowhead(x + 25, y + 8, 1.0, 0.0, 5.0), fill=style.INK)
    elif kind == "bundle":
        svg.el("path", d=f"M{num(x + 2)},{num(y + 8)} L{num(x + 20)},{num(y + 8)}",
               stroke=BUNDLE_FILL, stroke_width=6.0, fill="none", stroke_linecap="round")
        svg.el("polygon", points=arrowhead(x + 27, y + 8, 1.0, 0.0, 9.0), fill=BUNDLE_COLOUR)


def threadgroup_count(report: Report) -> int:
    return math.prod(math.ceil(g / t) if g else 0 for g, t in zip(report.grid, report.threadgroup))


def shown_note(groups: Sequence[int], count: int, others: str | None) -> str:
    shown = ", ".join(str(g) for g in groups)
    plural = "s" if len(groups) != 1 else ""
    if count == len(groups):
        return f"threads of threadgroup{plural} {shown} drawn in detail"
    return (f"threadgroup{plural} {shown} of {count} drawn in detail; global memory shows the "
            f"whole launch. To see threadgroup k: {others or 'draw(run, threadgroups=[k])'}")
