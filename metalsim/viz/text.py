"""Text measured with the diagrams' fonts' real advance widths: widths, wrapping, and numbers
made to fit a width. Layout is computed from these, so labels can be given room and never
collide or run past the picture's edge."""

from __future__ import annotations

import functools
import math

import numpy as np

from metalsim.viz.font_widths import WIDTHS

MIN_FONT = 10.0   # no diagram text is smaller (px at 100% zoom)
_UNKNOWN = 1.0    # a character missing from the table: as wide as an em (errs on the wide side)


@functools.lru_cache(maxsize=8192)   # layout measures the same index labels many times
def width(text: str, size: float, face: str = "sans") -> float:
    """The advance width of `text` at font size `size` in `face` ("sans", "bold" or "mono")."""
    table = WIDTHS[face]
    return size * sum(table.get(ch, _UNKNOWN) for ch in text)


def wrap(text: str, size: float, limit: float, face: str = "sans") -> list[str]:
    """`text` broken at spaces into lines at most `limit` wide (a word wider than `limit` is
    cut with an ellipsis: nothing runs past the edge)."""
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        candidate = f"{line} {word}" if line else word
        if width(candidate, size, face) <= limit:
            line = candidate
            continue
        if line:
            lines.append(line)
        line = word if width(word, size, face) <= limit else clip(word, size, limit, face)
    lines.append(line)
    return lines


def clip(text: str, size: float, limit: float, face: str = "sans") -> str:
    """`text`, cut with an ellipsis if wider than `limit`."""
    if width(text, size, face) <= limit:
        return text
    while text and width(text + "…", size, face) > limit:
        text = text[:-1]
    return text + "…"


def full_value(v: object) -> str:
    """A value exactly as the tooltip gives it (a vector's components in parentheses)."""
    if isinstance(v, np.ndarray) and v.ndim:
        return "(" + ", ".join(full_value(c) for c in v) + ")"
    if isinstance(v, (bool, np.bool_)):
        return "1" if v else "0"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    f = float(v)
    if math.isfinite(f) and f.is_integer() and abs(f) < 1e15:
        return str(int(f))
    return f"{f:.6g}"


def compact(v: object, chars: int = 5) -> str:
    """A value in at most `chars` characters where it can be: integers as they are while they
    fit, then with a k/M/G suffix; other numbers with fewer significant digits, then in
    scientific notation. A vector is its components, each compacted."""
    if isinstance(v, np.ndarray) and v.ndim:
        return "(" + ",".join(compact(c, chars) for c in v) + ")"
    if isinstance(v, (bool, np.bool_)):
        return "1" if v else "0"
    f = float(v)
    if not math.isfinite(f):
        return "nan" if math.isnan(f) else ("inf" if f > 0 else "-inf")
    if f.is_integer() and len(str(int(f))) <= chars:
        return str(int(f))
    if abs(f) >= 1000:
        for scale, suffix in ((1e3, "k"), (1e6, "M"), (1e9, "G")):
            for digits in (2, 1, 0):
                text = f"{f / scale:.{digits}f}"
                text = (text.rstrip("0").rstrip(".") if "." in text else text) + suffix
                if len(text) <= chars and abs(f / scale) < 1000:
                    return text
    for digits in range(4, 0, -1):
        text = f"{f:.{digits}g}"
        if len(text) <= chars and "e" not in text:
            return text
    if abs(f) >= 1 and len(str(round(f))) <= chars:
        return str(round(f))
    return f"{f:.0e}".replace("e+0", "e").replace("e-0", "e-").replace("e+", "e")
