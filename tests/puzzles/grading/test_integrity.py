"""Printed text carries no control codes."""

from puzzles.grading.integrity import clean_text


def test_control_characters_and_bidirectional_overrides_are_removed():
    text = "pass\x1b[2K\x1b[1A\r\x07 ok\u202e evil\u2066 \x9b31m\ttab\nline"
    assert clean_text(text) == "pass[2K[1A ok evil 31m\ttab\nline"


def test_a_lone_surrogate_no_longer_breaks_encoding():
    assert clean_text("a\ud800b").encode("utf-8") == b"a?b"
