"""PNG export of a diagram's SVG, through resvg (the `resvg` binding on PyPI).

Why this binding rather than `resvg-py` (used before): on every puzzle's diagram
(`benchmarks/bench_viz.py`) resvg-py took 2.5-3 times the CPU time, because its wheels are
built for size (`opt-level = "z"`), and because it builds the font database on every call, so
that each of a diagram's hundreds of `<text>` elements opens and maps the font file again. Here
one `usvg.Options` per thread (the binding's objects may not cross threads) keeps the font
database, with the font files the diagrams name read into memory ahead of the system's own.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

# The faces of the families `svg.SANS` and `svg.MONO` name, regular and bold, as file names
# are spelt on Linux, macOS and Windows (lower case, without spaces, dashes or underscores).
# Only speed depends on finding them: the system fonts are loaded after them all the same.
_FACES = frozenset({
    "dejavusans", "dejavusansbold", "dejavusansmono", "dejavusansmonobold",
    "verdana", "verdanabold", "verdanab", "menlo", "consola", "consolab",
})
_FONT_SUFFIXES = (".ttf", ".ttc", ".otf")
_local = threading.local()


def font_dirs() -> list[Path]:
    """The system's font folders that exist."""
    home = Path.home()
    if sys.platform == "darwin":
        dirs = [Path("/System/Library/Fonts"), Path("/Library/Fonts"), home / "Library/Fonts"]
    elif sys.platform == "win32":
        dirs = [Path(os.environ.get("WINDIR", "C:/Windows")) / "Fonts"]
    else:
        dirs = [Path("/usr/share/fonts"), Path("/usr/local/share/fonts"),
                home / ".local/share/fonts", home / ".fonts"]
    return [d for d in dirs if d.is_dir()]


def diagram_font_files(dirs: list[Path]) -> list[Path]:
    """The files under `dirs` holding a face the diagrams name, one per file name, in a
    stable order."""
    found: dict[str, Path] = {}
    for top in dirs:
        for folder, _, files in sorted(os.walk(top)):
            for name in sorted(files):
                stem, suffix = os.path.splitext(name.lower())
                key = stem.replace(" ", "").replace("-", "").replace("_", "")
                if suffix in _FONT_SUFFIXES and key in _FACES:
                    found.setdefault(key, Path(folder) / name)
    return list(found.values())


def _options():
    """This thread's resvg options: the diagrams' fonts in memory, then the system's."""
    options = getattr(_local, "options", None)
    if options is None:
        from resvg import usvg  # imported here: only PNG export needs it

        options = usvg.Options.default()
        for path in diagram_font_files(font_dirs()):
            try:
                options.load_font_data(path.read_bytes())
            except (OSError, RuntimeError, ValueError):
                continue  # unreadable or not a font: the system copy serves, only slower
        options.load_system_fonts()
        _local.options = options
    return options


def svg_to_png(svg: str, scale: float) -> bytes:
    """`svg` drawn at `scale` pixels per SVG unit on white, as PNG bytes."""
    import resvg

    tree = resvg.usvg.Tree.from_str(svg, _options())
    width, height = tree.int_size()
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    # resvg's transform is (scale x, skew x, shift x, skew y, scale y, shift y).
    transform = (size[0] / width, 0.0, 0.0, 0.0, size[1] / height, 0.0)
    return bytes(resvg.render(tree, transform, bg_size=size, bg_color=(255, 255, 255, 255)))
