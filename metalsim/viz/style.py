"""Colours and marker shapes: a thread's colour, its SIMD-group's shape."""

from __future__ import annotations

import colorsys
import functools

from metalsim.viz.svg import Svg, num

# Adjacent lanes get far-apart hues (golden-ratio steps), so neighbours are easy to tell apart.
_GOLDEN = 0.381966

INK = "#222222"
MUTED = "#888888"
FAINT = "#d4d4d4"
UNTOUCHED_FILL = "#f3f3f3"
ERROR = "#d62728"
WARNING = "#e08a00"
READ_FOCUS = "#1f5fd6"
WRITE_FOCUS = "#f07800"
SHAPES = ("circle", "square", "diamond", "triangle")
# A white outline under a label keeps it legible where arrows pass behind it.
HALO = {"stroke": "white", "stroke_width": 3.0, "paint_order": "stroke",
        "stroke_linejoin": "round"}


def _hex(h: float, lightness: float, saturation: float) -> str:
    r, g, b = colorsys.hls_to_rgb(h % 1.0, lightness, saturation)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


@functools.lru_cache(maxsize=1024)
def thread_colour(local: int) -> str:
    """The marker colour of the thread with linear index `local` in its threadgroup."""
    return _hex((local % 32) * _GOLDEN + 0.58, 0.45, 0.75)


@functools.lru_cache(maxsize=1024)
def thread_tint(local: int) -> str:
    """A light version of `thread_colour`, for the fill of cells the thread wrote."""
    return _hex((local % 32) * _GOLDEN + 0.58, 0.88, 0.7)


@functools.lru_cache(maxsize=1024)
def group_tint(group: int) -> str:
    """The fill of global cells written by threadgroup `group` (a launch of several)."""
    return _hex(group * _GOLDEN + 0.08, 0.84, 0.55)


UNKNOWN_WRITER = "#dfe4ec"   # written by a threadgroup that was not traced


def marker(svg: Svg, x: float, y: float, r: float, local: int, *, outlined: bool = False,
           **attrs: object) -> None:
    """The thread's marker centred at (x, y): colour by thread, shape by SIMD-group."""
    shape = SHAPES[(local // 32) % len(SHAPES)]
    # Written as text directly: diagrams draw thousands of markers.
    paint = _paint(local, outlined, tuple(attrs.items()))
    if shape == "circle":
        head = f'<circle cx="{num(x)}" cy="{num(y)}" r="{num(r)}"'
    elif shape == "square":
        head = f'<rect x="{num(x - r)}" y="{num(y - r)}" width="{num(2 * r)}" height="{num(2 * r)}"'
    elif shape == "diamond":
        s = r * 1.25
        head = f'<polygon points="{_points([(x, y - s), (x + s, y), (x, y + s), (x - s, y)])}"'
    else:
        s = r * 1.3
        head = (f'<polygon points="'
                f'{_points([(x, y - s), (x + s, y + s * 0.8), (x - s, y + s * 0.8)])}"')
    svg.parts.append(head + paint)


@functools.lru_cache(maxsize=4096)   # a function of its arguments: a few thousand markers
def _paint(local: int, outlined: bool, attrs: tuple[tuple[str, object], ...]) -> str:
    """A marker's attributes after its geometry: who it is, its colour and outline."""
    extra = Svg._attrs(dict(attrs)) if attrs else ""
    return (f' class="thread-marker" data-local="{local}"{extra} '
            f'fill="{thread_colour(local)}" stroke="{INK if outlined else "white"}" '
            f'stroke-width="{"1.3" if outlined else "0.6"}"/>')


def _points(points: list[tuple[float, float]]) -> str:
    return " ".join(f"{num(px)},{num(py)}" for px, py in points)
