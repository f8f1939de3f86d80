"""A small SVG writer and the `Diagram` it produces.

Why hand-written rather than chalk-diagrams (which the architecture suggested): a diagram here is
thousands of plain rectangles, markers and curves whose positions come from a grid layout, and
tests read them back by their semantic attributes (`class="cell" data-buffer="a" ...`). Chalk
composes shapes through a tree of transforms, which is slow at that size, and it gives no way to
put our own attributes on the elements it emits; its PNG path needs system cairo. Writing the
elements directly keeps the output fast, deterministic (no generated ids, stable ordering) and
dependency-free. PNG comes from resvg (`png.py`), whose wheels bundle the renderer (no system
libraries); it draws text with the system's fonts.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape as _escape

SANS = "DejaVu Sans, Verdana, Arial, Helvetica, sans-serif"
MONO = "DejaVu Sans Mono, Menlo, Consolas, monospace"
_SPECIAL = re.compile(r'[&<>"\n\r\t]')   # what needs escaping in text or an attribute
_QUOTES = {'"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"}
_NAMES: dict[str, str] = {}   # keyword -> attribute name (`class_` -> `class`), memoised
PNG_SCALE = 1.5


def escape(text: str) -> str:
    """`text` as SVG character data (only &, < and > need escaping)."""
    return _escape(text) if _SPECIAL.search(text) else text


@functools.lru_cache(maxsize=4096)   # a function of the value alone; cells repeat coordinates
def num(x: float) -> str:
    """A coordinate as short, stable text: at most two decimals, no trailing zeros."""
    if x == int(x):
        return str(int(x))
    text = f"{x:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


class Svg:
    """An append-only list of SVG elements; attribute order is the order given (stable)."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.right = 0.0   # the rightmost extent that `reach` was told of

    def reach(self, x: float) -> None:
        """Note that something drawn extends to `x` (the document is made wide enough)."""
        self.right = max(self.right, x)

    @staticmethod
    def _attrs(attrs: dict[str, object]) -> str:
        out = []
        for key, value in attrs.items():
            if value is None:
                continue
            if isinstance(value, float):
                text = num(value)
            else:
                text = str(value)
                if _SPECIAL.search(text):
                    text = _escape(text, _QUOTES)
            name = _NAMES.get(key)
            if name is None:
                name = _NAMES[key] = key.rstrip("_").replace("_", "-")
            out.append(f' {name}="{text}"')
        return "".join(out)

    def el(self, tag: str, text: str | None = None, **attrs: object) -> None:
        """One element; `class_`/`font_size` style names become `class`/`font-size`."""
        a = self._attrs(attrs)
        if text is not None:
            text = escape(text)
        self.parts.append(f"<{tag}{a}/>" if text is None else f"<{tag}{a}>{text}</{tag}>")

    def open(self, tag: str, **attrs: object) -> None:
        self.parts.append(f"<{tag}{self._attrs(attrs)}>")

    def close(self, tag: str) -> None:
        self.parts.append(f"</{tag}>")

    def text(self, x: float, y: float, text: str, size: float = 12, **attrs: object) -> None:
        attrs.setdefault("font_family", SANS)
        self.el("text", text, x=float(x), y=float(y), font_size=float(size), **attrs)

    def document(self, width: float, height: float) -> str:
        w, h = num(width), num(height)
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
                f'viewBox="0 0 {w} {h}" class="metalsim-diagram">'
                f'<rect class="background" x="0" y="0" width="{w}" height="{h}" fill="white"/>')
        return head + "".join(self.parts) + "</svg>"


@dataclass(frozen=True, repr=False)
class Diagram:
    """A rendered diagram: `svg` text, shown inline by Jupyter (as HTML holding the SVG),
    savable as .svg or .png."""

    svg: str
    width: float
    height: float

    def __repr__(self) -> str:  # short: notebooks store the text/plain form too
        return f"<Diagram {num(self.width)}×{num(self.height)}: .svg, .save('x.png')>"

    def _repr_html_(self) -> str:
        """The SVG inline in HTML: JupyterLab shows an image/svg+xml output as an <img>, which
        loses the cells' tooltips. (Only HTML is offered, so notebooks hold the SVG once.)"""
        return f'<div class="metalsim-diagram-box" style="overflow-x:auto">{self.svg}</div>'

    def to_png(self, scale: float = PNG_SCALE) -> bytes:
        """PNG bytes, `scale` pixels per SVG unit (1.5: sharp text on high-DPI screens)."""
        from metalsim.viz.png import svg_to_png

        return svg_to_png(self.svg, scale)

    def save(self, path: str | Path, scale: float = PNG_SCALE) -> Path:
        """Write `path`: SVG text for `.svg`, a PNG image (see `to_png`) for `.png`."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix == ".svg":
            path.write_text(self.svg, encoding="utf-8")
        elif suffix == ".png":
            path.write_bytes(self.to_png(scale))
        else:
            raise ValueError(f"save() writes .svg or .png files, not {path.name!r}")
        return path
