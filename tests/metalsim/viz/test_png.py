"""PNG export: the picture's size follows the scale, export works from any thread, and the font
files read into memory are exactly the faces the diagrams name."""

import struct
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from metalsim.viz.png import diagram_font_files, svg_to_png

SQUARE = ('<svg xmlns="http://www.w3.org/2000/svg" width="100.6" height="50" '
          'viewBox="0 0 100.6 50"><rect x="10" y="10" width="20" height="20" fill="red"/>'
          '<text x="40" y="30" font-size="12" font-family="DejaVu Sans">x = 1</text></svg>')


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize(("scale", "size"), [(1, (101, 50)), (1.5, (152, 75)), (0.4, (40, 20))])
def test_the_png_is_the_svg_size_rounded_times_the_scale(scale, size):
    assert png_size(svg_to_png(SQUARE, scale)) == size


def test_export_from_another_thread_draws_the_same_picture():
    # The binding's objects may not cross threads: each thread gets its own options.
    here = svg_to_png(SQUARE, 1.5)
    with ThreadPoolExecutor(2) as pool:
        assert list(pool.map(lambda _: svg_to_png(SQUARE, 1.5), range(2))) == [here, here]


def test_the_font_files_read_are_the_named_faces_regular_and_bold_only(tmp_path):
    names = ["DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSansMono.ttf",
             "DejaVuSansCondensed.ttf", "DejaVuSans-Oblique.ttf", "DejaVuSerif.ttf",
             "apple/Verdana Bold.ttf", "apple/Menlo.ttc", "windows/consola.ttf",
             "Verdana.txt", "dejavu/DejaVuSans.ttf"]
    for name in names:
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    found = [str(p.relative_to(tmp_path)) for p in diagram_font_files([tmp_path])]
    # One file per face (the first folder's, in sorted order), only the named families.
    assert sorted(found) == sorted(["DejaVuSans.ttf", "DejaVuSans-Bold.ttf",
                                    "DejaVuSansMono.ttf", "apple/Verdana Bold.ttf",
                                    "apple/Menlo.ttc", "windows/consola.ttf"])


def test_a_missing_font_folder_finds_nothing(tmp_path):
    assert diagram_font_files([Path(tmp_path) / "absent"]) == []
