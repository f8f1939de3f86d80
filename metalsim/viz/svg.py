"""A small SVG writer and the `Diagram` it produces.

Why hand-written rather than chalk-diagrams (which the architecture suggested): a diagram here is
thousands of plain rectangles, markers and curves whose positions come from a grid layout, and
tests read them back by their semantic attributes (`class="cell" data-buffer="a" ...`). Chalk
composes shapes through a tree of transforms, which is slow at that size, and it gives no way to
put our own attributes on the elements it emits; its PNG path needs system cairo. Writing the
elements directly keeps the output fast, deterministic (no generated ids, stable ordering) and
dependency-free. PNG comes from `resvg-py`, whose wheels bundle the renderer (no system
libraries); it draws text with the system's fonts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

SANS = "DejaVu Sans, Verdana, Arial, Helvetica, sans-serif"
MONO = "DejaVu Sans Mono, Menlo, Consolas, monospace"


def num(x: float) -> str:
    """A coordinate as short, stable text: at most two decimals, no trailing zeros."""
    text = f"{x:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


class Svg:
    """An append-only list of SVG elements; attribute order is the order given (stable)."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    @staticmethod
    def _attrs(attrs: dict[str, object]) -> str:
        out = []
        for key, value in attrs.items():
            if value is None:
                continue
            text = num(value) if isinstance(value, float) else str(value)
            out.append(f" {key.rstrip('_').replace('_', '-')}={quoteattr(text)}")
        return "".join(out)

    def el(self, tag: str, text: str | None = None, **attrs: object) -> None:
        """One element; `class_`/`font_size` style names become `class`/`font-size`."""
        a = self._attrs(attrs)
        self.parts.append(f"<{tag}{a}/>" if text is None else f"<{tag}{a}>{escape(text)}</{tag}>")

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


@dataclass(frozen=True)
class Diagram:
    """A rendered diagram: `svg` text, shown inline by Jupyter, savable as .svg or .png."""

    svg: str
    width: float
    height: float

    def _repr_svg_(self) -> str:
        return self.svg

    def _repr_html_(self) -> str:
        # JupyterLab shows image/svg+xml as an <img>, which loses the cells' tooltips; as HTML
        # the SVG is inline (and preferred over the image by JupyterLab's renderers).
        return self.svg

    def to_png(self, scale: float = 2.0) -> bytes:
        """PNG bytes, `scale` pixels per SVG unit (2 gives crisp text on high-DPI screens)."""
        import resvg_py  # imported here: only PNG export needs it

        return bytes(resvg_py.svg_to_bytes(svg_string=self.svg, zoom=scale,
                                           background="white"))

    def save(self, path: str | Path, scale: float = 2.0) -> Path:
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
