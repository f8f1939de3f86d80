"""`Explorer`: pick a threadgroup, a thread or SIMD-group, and a barrier phase; see what they did.

The state lives in plain attributes (`selection`, `view_svg`, `listing`, `counts`), updated by
`select(...)`; the ipywidgets controls only call `select`, so the explorer is testable without
a browser or a kernel. Each access is listed with the value it read or wrote, in device and
threadgroup memory alike; accesses past the end of a buffer are flagged, and so are racing
accesses, classified as the race detector does: two accesses to one cell race when they come
from different threads, one of them writes (two atomics do not race), and nothing orders them
(another threadgroup, or the same threadgroup in the same barrier phase). A thread reading its
own write is no race.

The widget fits a notebook's output column: its controls wrap, and the diagram (drawn at most
`WIDTH` wide) and the listing scroll inside their own boxes.

A run traced for some threadgroups only (`simulate(..., trace=[...])`) can be explored with a
`retrace(threadgroup)` function that re-runs the launch tracing that threadgroup; choosing a
threadgroup the run did not trace calls it.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from metalsim.report import COUNT_NAMES
from metalsim.viz.draw import Selection, draw
from metalsim.viz.model import TraceView, logical_index, simd_group
from metalsim.viz.text import full_value

_KEEP = object()  # `select` argument not given: keep the current choice
_LISTED_ROWS = 200  # rows the HTML listing shows; `listing` keeps them all
ALL = "all"         # the dropdowns' "every thread / SIMD-group / phase" choice
_FLAGGED = " class='flagged' style='color:#d62728'"  # a listed out-of-bounds or racing access
WIDTH = 960.0       # the diagram's width: JupyterLab's output column at a 1,400-px window
_BOX = "overflow-x:auto;max-width:100%"


@dataclass(frozen=True)
class ListedAccess:
    """One access of the selection, as the explorer lists it."""

    phase: int
    thread: int           # local index in the threadgroup
    kind: str             # read, write or atomic
    cell: str             # e.g. "a[3]" or "tile[1][2]"
    line: int | None
    code: str             # the source line, stripped
    value: str            # "" where the trace does not know it
    flag: str = ""        # "out of bounds" (not performed) or "race"


class Explorer:
    """An ipywidgets explorer of a traced run (`simulate(..., trace=True)`).

    `inputs` labels input values; `kernel` (the `metalsim.Kernel`) supplies the source lines;
    `retrace(threadgroup)` re-runs the launch tracing that threadgroup (see the module
    docstring). Display it in a notebook as the last expression of a cell, or
    `display(explorer.widget)`.
    """

    def __init__(self, run: object, inputs: Sequence | Mapping | None = None,
                 kernel: object | None = None,
                 retrace: Callable[[int], object] | None = None, case: str | None = None
                 ) -> None:
        self._use_run(run)
        self.inputs, self.case = inputs, case
        self._retrace = retrace
        spec = getattr(kernel, "spec", None)
        self._lines = {"source": (getattr(spec, "source", "") or "").split("\n"),
                       "header": (getattr(spec, "header", "") or "").split("\n")}
        traced = self.report.traced_threadgroups
        self.threadgroup = traced[0] if traced else 0
        self.thread, self.simdgroup, self.phase = None, None, None
        self._widget = None
        self._update()

    def _use_run(self, run: object) -> None:
        report = getattr(run, "report", run)
        if report.trace is None:
            raise ValueError("the explorer needs a traced run: "
                             "metalsim.simulate(..., trace=True)")
        self.run, self.report, self.view = run, report, TraceView(report)
        race_cells = {cell for d in report.diagnostics if d.kind == "race" for cell in d.cells}
        # Per racing cell, every traced access to it: (threadgroup, phase, thread, kind).
        self._race_accesses: dict[tuple, list[tuple[int, int, int, str]]] = {}
        if race_cells:
            groups = report.traced_threadgroups or range(self.view.threadgroup_count)
            for a in self.view.accesses(groups):
                owner = a.threadgroup if self.view.is_threadgroup_memory(a.buffer) else -1
                if (a.buffer, owner, a.element) in race_cells:
                    self._race_accesses.setdefault((a.buffer, owner, a.element), []).append(
                        (a.threadgroup, a.phase, a.thread, a.kind))

    def _ensure_traced(self, threadgroup: int) -> None:
        traced = self.report.traced_threadgroups
        if traced is None or threadgroup in traced:
            return
        if self._retrace is None:
            raise ValueError(f"threadgroup {threadgroup} was not traced: this run traced "
                             f"{', '.join(map(str, traced))}")
        self._use_run(self._retrace(threadgroup))

    # --- state ----------------------------------------------------------------------------
    def select(self, threadgroup: int | object = _KEEP, thread: int | None | object = _KEEP,
               simdgroup: int | None | object = _KEEP, phase: int | None | object = _KEEP
               ) -> None:
        """Choose what to look at; None means all (threads of the group, or phases). A thread
        is its linear index within the threadgroup; choosing one clears the SIMD-group, and the
        other way round."""
        if threadgroup is not _KEEP:
            if not 0 <= threadgroup < self.view.threadgroup_count:
                raise ValueError(f"threadgroup {threadgroup} does not exist: the launch has "
                                 f"{self.view.threadgroup_count}")
            self._ensure_traced(threadgroup)
            self.threadgroup = threadgroup
        size = len(self.view.threads_of(self.threadgroup))
        # An edge threadgroup may be smaller: drop choices it does not have.
        if self.thread is not None and self.thread >= size:
            self.thread = None
        if self.simdgroup is not None and self.simdgroup > simd_group(size - 1):
            self.simdgroup = None
        if thread is not _KEEP:
            if thread is not None and not 0 <= thread < size:
                raise ValueError(f"thread {thread} is not in threadgroup {self.threadgroup} "
                                 f"({size} threads)")
            self.thread = thread
            if thread is not None:
                self.simdgroup = None
        if simdgroup is not _KEEP:
            self.simdgroup = simdgroup
            if simdgroup is not None:
                self.thread = None
        if phase is not _KEEP:
            self.phase = phase
        self._update()

    @property
    def selection(self) -> Selection:
        locals_ = range(len(self.view.threads_of(self.threadgroup)))
        if self.thread is not None:
            threads = frozenset({self.thread})
        elif self.simdgroup is not None:
            threads = frozenset(t for t in locals_ if simd_group(t) == self.simdgroup)
        else:
            threads = None
        return Selection(self.threadgroup, threads, self.phase)

    def phases(self) -> list[int]:
        """The barrier phases in which the chosen threadgroup touched memory."""
        return np.unique(self.view.columns([self.threadgroup]).phase).tolist()

    def _update(self) -> None:
        sel = self.selection
        self.diagram = draw(self.run, inputs=self.inputs, threadgroups=[sel.threadgroup],
                            selection=sel, case=self.case, max_width=WIDTH,
                            others="the threadgroup choice above",
                            one_thread="the thread choice above")
        chosen = sel.covered(self.view.columns([sel.threadgroup]))
        self.listing = [self._listed(a) for a in self.view.accesses([sel.threadgroup], chosen)]
        self.counts = self._counts(sel)
        if self._widget is not None:
            self._sync_widgets()

    @property
    def view_svg(self) -> str:
        return self.diagram.svg

    def _listed(self, a) -> ListedAccess:
        shape = tuple(self.view.buffers[a.buffer]["shape"])
        index = logical_index(shape, a.element)
        value = full_value(a.value) if a.value is not None else ""
        lines = self._lines.get(a.section or "", [])
        code = lines[a.line - 1].strip() if a.line and 0 < a.line <= len(lines) else ""
        owner = a.threadgroup if self.view.is_threadgroup_memory(a.buffer) else -1
        flag = ("out of bounds" if a.outside else
                "race" if self._races(a, owner) else "")
        return ListedAccess(a.phase, a.local, a.kind,
                            f"{a.buffer}[{']['.join(map(str, index))}]", a.line, code, value,
                            flag)

    def _races(self, a, owner: int) -> bool:
        """Whether access `a` conflicts with an unordered access of another thread (see the
        module docstring)."""
        for group, phase, thread, kind in self._race_accesses.get((a.buffer, owner, a.element),
                                                                  ()):
            kinds = {kind, a.kind}
            conflicting = kinds != {"read"} and kinds != {"atomic"}
            unordered = group != a.threadgroup or phase == a.phase
            if thread != a.thread and conflicting and unordered:
                return True
        return False

    def _counts(self, sel: Selection) -> dict[str, int]:
        """Counts of the chosen thread, or the maximum over the chosen threads."""
        threads = self.view.threads_of(sel.threadgroup)
        chosen = [threads[t] for t in sorted(sel.threads)] if sel.threads else threads
        out = {}
        for name in COUNT_NAMES:
            per_thread = self.report.counts[name].reshape(-1)
            out[name] = int(max((per_thread[t] for t in chosen), default=0))
        return out

    # --- widgets ----------------------------------------------------------------------------
    @property
    def widget(self):
        """The ipywidgets view, built on first use; then `controls` holds its selectors."""
        if self._widget is None:
            self._build_widgets()
        return self._widget

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)

    def _build_widgets(self) -> None:
        import ipywidgets as w

        count = self.view.threadgroup_count
        # The labels' own width, so that "threadgroup" is not cut off.
        fit = {"style": {"description_width": "initial"},
               "layout": w.Layout(width="max-content")}
        if count <= 256:
            tg = w.Dropdown(options=[(f"{g} {self.view.tg_position(g)}", g)
                                     for g in range(count)], description="threadgroup", **fit)
        else:  # a dropdown of thousands of entries is unusable
            tg = w.BoundedIntText(min=0, max=count - 1, description="threadgroup", **fit)
        self.controls = {"threadgroup": tg, "thread": w.Dropdown(description="thread", **fit),
                         "simdgroup": w.Dropdown(description="SIMD-group", **fit),
                         "phase": w.Dropdown(description="phase", **fit)}
        self._svg, self._count_html, self._list_html = w.HTML(), w.HTML(), w.HTML()
        self._syncing = False
        for key, control in self.controls.items():
            control.observe(self._on_change(key), names="value")
        fit = w.Layout(width="100%", max_width="100%")
        self._widget = w.VBox([w.HBox(list(self.controls.values()),
                                      layout=w.Layout(flex_flow="row wrap", width="100%")),
                               self._count_html, self._svg, self._list_html], layout=fit)
        self._sync_widgets()

    def _on_change(self, key: str):
        def handler(change: dict) -> None:
            if not self._syncing:
                value = change["new"]
                self.select(**{key: None if value == ALL else value})
        return handler

    def _sync_widgets(self) -> None:
        """Put the state into the controls (without re-triggering `select`)."""
        self._syncing = True
        try:
            n = len(self.view.threads_of(self.threadgroup))
            c = self.controls
            c["threadgroup"].value = self.threadgroup
            # ipywidgets 8 shows a value of None as no selection: "all" is a real option.
            c["thread"].options = [("all", ALL)] + [(str(t), t) for t in range(n)]
            c["thread"].value = ALL if self.thread is None else self.thread
            c["simdgroup"].options = [("all", ALL)] + [
                (str(s), s) for s in range(simd_group(n - 1) + 1)]
            c["simdgroup"].value = ALL if self.simdgroup is None else self.simdgroup
            phases = sorted(set(self.phases()) | ({self.phase} - {None}))
            c["phase"].options = [("all", ALL)] + [(str(p), p) for p in phases]
            c["phase"].value = ALL if self.phase is None else self.phase
            self._svg.value = f"<div style='{_BOX}'>{self.view_svg}</div>"
            self._count_html.value = self.counts_html()
            self._list_html.value = self.listing_html()
        finally:
            self._syncing = False

    def counts_html(self) -> str:
        who = ("thread" if self.thread is not None else "max over the selected threads")
        cells = "".join(f"<td style='padding:0 10px'>{name.replace('_', ' ')}: "
                        f"<b>{value}</b></td>" for name, value in self.counts.items())
        return f"<div>{html.escape(who)}</div><table><tr>{cells}</tr></table>"

    def listing_html(self) -> str:
        head = ("<tr><th>phase</th><th>thread</th><th>access</th><th>cell</th><th>line</th>"
                "<th>code</th><th>value</th><th></th></tr>")
        rows = "".join(
            f"<tr{_FLAGGED if r.flag else ''}><td>{r.phase}</td>"
            f"<td>{r.thread}</td><td>{r.kind}</td>"
            f"<td><code>{html.escape(r.cell)}</code></td><td>{r.line or ''}</td>"
            f"<td><code>{html.escape(r.code)}</code></td><td>{html.escape(r.value)}</td>"
            f"<td class='flag'>{'⚠ ' + r.flag if r.flag else ''}</td></tr>"
            for r in self.listing[:_LISTED_ROWS])
        more = (f"<p>... and {len(self.listing) - _LISTED_ROWS} more accesses</p>"
                if len(self.listing) > _LISTED_ROWS else "")
        return f"<div style='{_BOX}'><table>{head}{rows}</table></div>{more}"
