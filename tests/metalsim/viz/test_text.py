"""Measured text: the shipped advance widths are the fonts' own (read with fontTools), and the
helpers built on them wrap, clip and compact as the layout needs."""

from pathlib import Path

import numpy as np
import pytest

from metalsim.viz.font_widths import WIDTHS
from metalsim.viz.make_font_widths import FACES, FONT_DIR, advance_widths
from metalsim.viz.text import clip, compact, full_value, width, wrap


@pytest.mark.parametrize("face", sorted(FACES))
def test_the_shipped_widths_are_the_installed_fonts_advance_widths(face):
    path = Path(FONT_DIR) / FACES[face]
    if not path.exists():
        pytest.skip(f"{path} is not installed (apt-get install fonts-dejavu-core)")
    assert WIDTHS[face] == advance_widths(path)


def test_width_adds_the_advance_widths_at_the_font_size():
    assert width("ii", 10) == pytest.approx(2 * 10 * WIDTHS["sans"]["i"])
    assert width("0000", 10, "mono") == pytest.approx(4 * 6.021, abs=0.01)
    assert width("W", 12, "bold") > width("W", 12) > width("i", 12)


def test_wrap_breaks_at_spaces_within_the_limit_and_clips_a_word_too_long():
    text = "phase k = after k barriers, and a legend that goes on"
    lines = wrap(text, 11, 120)
    assert " ".join(lines) == text and len(lines) > 1
    assert all(width(line, 11) <= 120 for line in lines)
    assert wrap("a" * 100, 11, 50)[0].endswith("…")
    assert width(clip("x" * 100, 11, 50), 11) <= 50


@pytest.mark.parametrize(("value", "chars", "text"), [
    (3, 5, "3"), (12345, 5, "12345"), (123456, 5, "123k"), (12345, 4, "12k"),
    (10296.0, 4, "10k"), (1234567, 5, "1.23M"), (-1234, 5, "-1234"), (0.123456, 5, "0.123"),
    (2 / 3, 4, "0.67"), (99.5, 3, "100"), (1e-7, 5, "1e-7"), (float("nan"), 5, "nan"),
    (True, 5, "1"),
])
def test_compact_fits_a_number_in_a_few_characters(value, chars, text):
    assert compact(value, chars) == text
    assert len(compact(value, chars)) <= max(chars, 4)


def test_the_full_value_keeps_every_digit_the_tooltip_needs():
    assert full_value(np.float32(10296.0)) == "10296"
    assert full_value(np.array([1.5, 2.0])) == "(1.5, 2)"
    assert full_value(0.1234567891) == "0.123457"
