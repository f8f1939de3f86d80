"""Integrity checks: identical submissions are flagged; printed text carries no control codes."""

from puzzles.grading.integrity import clean_text, identical_submissions, normalise


def test_control_characters_and_bidirectional_overrides_are_removed():
    text = "pass\x1b[2K\x1b[1A\r\x07 ok\u202e evil\u2066 \x9b31m\ttab\nline"
    assert clean_text(text) == "pass[2K[1A ok evil 31m\ttab\nline"


def test_a_lone_surrogate_no_longer_breaks_encoding():
    assert clean_text("a\ud800b").encode("utf-8") == b"a?b"


def test_whitespace_normalisation_is_what_identical_means():
    assert normalise("out[i] =  a[i];\n\n  // x\n") == normalise("out[i] = a[i]; // x")
    assert normalise("out[i]=a[i];") != normalise("out[i] = a[i];")


def test_identical_to_the_reference_and_to_each_other_are_flagged():
    kernels = {"ann": {1: "out[i] = a[i] + 10;", 2: "TEMPLATE"},
               "bob": {1: "out[i]  =  a[i] + 10;\n", 2: "x = 1;"},
               "cy": {1: "out[i] = 10 + a[i];", 2: "x  = 1;"}}
    flags = identical_submissions(kernels, {1: "out[i] = a[i] + 10;"}, {2: "TEMPLATE"})
    assert flags["ann"] == ["puzzle 1: identical to the reference solution",
                            "puzzle 1: identical to bob"]
    assert flags["bob"] == ["puzzle 1: identical to the reference solution",
                            "puzzle 1: identical to ann", "puzzle 2: identical to cy"]
    assert flags["cy"] == ["puzzle 2: identical to bob"]
