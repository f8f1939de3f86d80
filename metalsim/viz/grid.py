"""One drawn copy of a buffer: its geometry, from measured text, and its rendering.

A grid is drawn in lanes that nothing else uses: the label lane on top (the buffer's name and
the findings about it), the column-index lane under it (2-D buffers), the row-index lane on the
left, the index lane under the cells (1-D buffers in one row), and the lane of cells past the
end of the buffer at the bottom. Index labels are drawn every k-th column or row, k chosen so
that the widest label fits its step; values are written in a cell only where their compact
form fits at the minimum font size; the tooltip always has the full value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from metalsim.viz import style
from metalsim.viz.model import logical_index
from metalsim.viz.svg import MONO, SANS, Svg, escape, num
from metalsim.viz.text import MIN_FONT, clip, compact, width

WRAP = 32              # a 1-D buffer wraps after this many cells (one SIMD-group's worth)
LABEL_SIZE = 11.0      # buffer names
INDEX_SIZE = MIN_FONT  # index labels
VALUE_SIZE = MIN_FONT  # values in cells
LABEL_LANE = 16.0
INDEX_LANE = 13.0
GHOST_LABEL = "outside"
LABEL_STEPS = (1, 2, 4, 5, 8, 10, 16, 20, 32, 50, 64, 100, 128, 256, 512, 1024)


def grid_shape(shape: tuple[int, ...]) -> tuple[int, int]:
    """Rows and columns a buffer is drawn with: 2-D as is (leading dims folded into rows),
    1-D wrapped every WRAP cells."""
    dims = list(shape)
    while len(dims) > 1 and dims[0] == 1:
        dims.pop(0)
    if not dims:
        return 1, 1
    if len(dims) == 1:
        cols = min(dims[0], WRAP)
        return (math.ceil(dims[0] / cols) if cols else 0), cols
    return math.prod(dims[:-1]), dims[-1]


def label_step(widest: float, pitch: float) -> int:
    """The smallest step k (1, 2, 4, 5, 8, 10, ...) at which labels `widest` wide, one every k
    cells of `pitch`, leave a gap between them."""
    return next((k for k in LABEL_STEPS if k * pitch >= widest + 3), LABEL_STEPS[-1])


def value_chars(cs: float) -> int:
    """How many value characters fit a cell of side `cs` at the minimum font size."""
    return max(0, int((cs - 3) / width("0", VALUE_SIZE, "mono")))


@dataclass
class Grid:
    """One drawn copy of a buffer (`phase` None for device/constant memory, drawn once per
    launch; `group` the threadgroup whose threadgroup memory it is, else None), windowed to
    rows [r0, r0 + rows) and columns [c0, c0 + cols) of its full `full_rows` × `full_cols`."""

    buffer: str
    phase: int | None
    group: int | None
    shape: tuple[int, ...]
    name: str
    flag: str = ""                  # "⚠ race, ..." after the name, in the label lane
    ghosts: list[int] = field(default_factory=list)
    cs: float = 28.0
    r0: int = 0
    c0: int = 0
    rows: int = 0
    cols: int = 0
    full_rows: int = 0
    full_cols: int = 0
    x: float = 0.0
    y: float = 0.0
    max_width: float = 1e9          # the label is clipped to this

    def __post_init__(self) -> None:
        self.size = math.prod(self.shape)
        self.full_rows, self.full_cols = grid_shape(self.shape)
        self.rows, self.cols = self.rows or self.full_rows, self.cols or self.full_cols

    # --- windowing ------------------------------------------------------------------------
    def window(self, touched: list[int], max_width: float, max_rows: int,
               only_touched: bool = False) -> None:
        """Draw only the rows and columns that fit `max_width` and `max_rows`, starting from
        the first touched ones (fewer cells, never smaller text); the label says which. With
        `only_touched`, a buffer taller than `max_rows` keeps just the touched rows' span."""
        self.max_width = max_width
        cols_fit = max(1, int((max_width - self._left_for(self.full_rows)) // self.cs))
        size = math.prod(self.shape)
        inside = [e for e in touched if 0 <= e < size]
        r_first = min(e // self.full_cols for e in inside) if inside else 0
        c_first = min(e % self.full_cols for e in inside) if inside and self.two_d else 0
        if self.full_cols > cols_fit:
            self.c0, self.cols = min(c_first, self.full_cols - cols_fit), cols_fit
        if self.full_rows > max_rows:
            rows = max_rows
            if only_touched and inside:
                rows = min(rows, max(e // self.full_cols for e in inside) - r_first + 1)
            self.r0, self.rows = min(r_first, self.full_rows - rows), rows

    @property
    def windowed(self) -> bool:
        return (self.rows, self.cols) != (self.full_rows, self.full_cols)

    @property
    def label(self) -> str:
        if not self.windowed:
            return self.name
        if self.two_d:
            shown = (f"[{self.r0}:{self.r0 + self.rows}, {self.c0}:{self.c0 + self.cols}]")
        else:
            first = self.r0 * self.full_cols + self.c0
            last = min(math.prod(self.shape), (self.r0 + self.rows) * self.full_cols)
            shown = f"[{first}:{last}]"
        return f"{self.name} {shown} shown"

    # --- geometry -------------------------------------------------------------------------
    @property
    def two_d(self) -> bool:
        """Drawn with row and column indices (a 1-D buffer may wrap, but stays 1-D)."""
        return len(self.shape) > 1 and math.prod(self.shape[:-1]) > 1

    def _row_label(self, r: int) -> str:
        return str(r) if self.two_d else str(r * self.full_cols)

    def _left_for(self, rows: int) -> float:
        if rows <= 1:
            return 0.0
        widest = max(width(self._row_label(r), INDEX_SIZE) for r in (0, rows - 1))
        return widest + 5

    @property
    def left(self) -> float:
        return self._left_for(self.r0 + self.rows) if self.rows > 1 else 0.0

    @property
    def top(self) -> float:
        return LABEL_LANE + (INDEX_LANE if self.two_d else 0.0)

    @property
    def bottom_indices(self) -> bool:
        return not self.two_d and self.rows == 1

    @property
    def label_width(self) -> float:
        flag = 8 + width(self.flag, LABEL_SIZE, "bold") if self.flag else 0.0
        return width(self.label, LABEL_SIZE) + flag

    @property
    def ghost_width(self) -> float:
        if not self.ghosts:
            return 0.0
        return width(GHOST_LABEL, INDEX_SIZE) + 6 + len(self.ghosts) * (self.cs + 3)

    @property
    def width(self) -> float:
        cells = self.left + self.cols * self.cs
        return min(max(cells, self.label_width, self.ghost_width), max(cells, self.max_width))

    @property
    def height(self) -> float:
        bottom = INDEX_LANE if self.bottom_indices else 2.0
        return self.top + self.rows * self.cs + bottom + (self.cs + 6 if self.ghosts else 0.0)

    def elements(self) -> list[int]:
        """The elements drawn, row by row."""
        size = math.prod(self.shape)
        return [e for r in range(self.rows) for c in range(self.cols)
                if (e := (self.r0 + r) * self.full_cols + self.c0 + c) < size]

    def cells(self) -> list[tuple[int, int, int]]:
        """The elements drawn, row by row, each with its row and column in the window."""
        size = math.prod(self.shape)
        first, stride = self.r0 * self.full_cols + self.c0, self.full_cols
        return [(e, r, c) for r in range(self.rows) for c in range(self.cols)
                if (e := first + r * stride + c) < size]

    def drawn(self, element: int) -> bool:
        if not 0 <= element < self.size:
            return element in self.ghosts
        r, c = divmod(element, self.full_cols)
        return self.r0 <= r < self.r0 + self.rows and self.c0 <= c < self.c0 + self.cols

    def origin(self, element: int) -> tuple[float, float]:
        if element in self.ghosts:
            i = self.ghosts.index(element)
            return (self.x + width(GHOST_LABEL, INDEX_SIZE) + 6 + i * (self.cs + 3),
                    self.y + self.top + self.rows * self.cs
                    + (INDEX_LANE if self.bottom_indices else 2.0) + 4)
        r, c = divmod(element, self.full_cols)
        return (self.x + self.left + (c - self.c0) * self.cs,
                self.y + self.top + (r - self.r0) * self.cs)

    def box(self, element: int) -> tuple[float, float, float, float]:
        """Where arrows attach to a cell: x, y of its top-left corner, the y below it (and
        below its index lane), its size."""
        x, y = self.origin(element)
        below = INDEX_LANE if self.bottom_indices and element not in self.ghosts else 0.0
        return x, y, y + self.cs + below, self.cs


    # --- rendering ------------------------------------------------------------------------
    def render_value(self, add, x: float, y: float, text: str, muted: bool,
                     low: bool = False) -> bool:
        """The value `text` centred in the cell at (x, y) (on its bottom line if `low`), if it
        fits; whether it was drawn."""
        if not text or width(text, VALUE_SIZE, "mono") > self.cs - 3:
            return False
        baseline = y + self.cs - 4 if low else y + self.cs / 2 + VALUE_SIZE * 0.36
        add(f'<text x="{num(x + self.cs / 2)}" y="{num(baseline)}" '
            f'font-size="{num(VALUE_SIZE)}" text-anchor="middle" class="value" '
            f'fill="{style.MUTED if muted else style.INK}">{escape(text)}</text>')
        return True

    def fit_value(self, v: object) -> str:
        """`v` compacted to what fits the cell ("" if nothing does)."""
        chars = value_chars(self.cs)
        text = compact(v, max(1, chars))
        return text if len(text) <= chars else ""

    def render_labels(self, svg: Svg) -> None:
        """The label lane (name and findings) and the index lanes."""
        # The index texts are written bare (thousands of them): they take the group's family,
        # the one `width` measured them in (else a browser draws its default serif).
        svg.open("g", class_="labels", font_family=SANS)
        label = clip(self.label, LABEL_SIZE, self.max_width)
        svg.text(self.x, self.y + 12, label, LABEL_SIZE, fill=style.INK, class_="buffer-label",
                 **style.HALO)
        if self.flag:
            fx = self.x + width(label, LABEL_SIZE) + 8
            svg.text(fx, self.y + 12, self.flag, LABEL_SIZE, fill=style.ERROR, font_weight="bold",
                     class_="diagnostic-label", **style.HALO)
        cs, first = self.cs, self.r0 * self.full_cols + self.c0
        add = svg.parts.append
        muted = f'font-size="{num(INDEX_SIZE)}" fill="{style.MUTED}" class="index"'
        if self.two_d:
            step = label_step(width(str(self.c0 + self.cols - 1), INDEX_SIZE), cs)
            for c in range(self.c0, self.c0 + self.cols):
                if c % step == 0:
                    x, y = self.origin(self.r0 * self.full_cols + c)
                    add(f'<text x="{num(x + cs / 2)}" y="{num(y - 3)}" text-anchor="middle" '
                        f'{muted}>{c}</text>')
        if self.rows > 1:
            step = label_step(INDEX_SIZE, cs)
            for r in range(self.r0, self.r0 + self.rows):
                if r % step == 0:
                    x, y = self.origin(r * self.full_cols + self.c0)
                    add(f'<text x="{num(x - 4)}" y="{num(y + cs / 2 + 3.5)}" '
                        f'text-anchor="end" {muted}>{self._row_label(r)}</text>')
        if self.bottom_indices:
            last = first + self.cols - 1
            step = label_step(width(str(last), INDEX_SIZE), cs)
            for e in range(first, min(first + self.cols, math.prod(self.shape))):
                if e % step == 0:
                    x, y = self.origin(e)
                    add(f'<text x="{num(x + cs / 2)}" y="{num(y + cs + 10)}" '
                        f'text-anchor="middle" {muted}>{e}</text>')
        if self.ghosts:
            _, y = self.origin(self.ghosts[0])
            svg.text(self.x, y + self.cs / 2 + 3.5, GHOST_LABEL, INDEX_SIZE, fill=style.ERROR,
                     class_="index")
        svg.close("g")

    def render_ghost(self, svg: Svg, e: int, kinds: list[str], group: int | None) -> None:
        """A cell past the end of the buffer that some access named (dashed, red)."""
        x, y = self.origin(e)
        svg.open("g", class_="ghost-cell " + " ".join(kinds), data_buffer=self.buffer,
                 data_element=e, data_threadgroup=group)
        svg.el("rect", x=x, y=y, width=self.cs, height=self.cs, fill="#fff5f5",
               stroke=style.ERROR, stroke_width=1.4, stroke_dasharray="3 2")
        if width(str(e), INDEX_SIZE, "mono") <= self.cs - 3:
            svg.text(x + self.cs / 2, y + self.cs / 2 + 3.5, str(e), INDEX_SIZE,
                     fill=style.ERROR, text_anchor="middle", font_family=MONO, class_="value")
        svg.el("title", f"{self.buffer}[{e}] is outside the buffer: {', '.join(kinds)}")
        svg.close("g")

    def index_name(self, e: int) -> str:
        return f"{self.buffer}[{']['.join(map(str, logical_index(self.shape, e)))}]"
