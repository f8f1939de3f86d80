"""Text made safe to print (no terminal escape codes, no bidirectional overrides). Similar
submissions are found by `puzzles.grading.similarity`."""

from __future__ import annotations

import re

# C0 and C1 control characters except tab and newline, DEL, and the Unicode bidirectional
# controls that make text display in another order than it is read ("Trojan source").
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def clean_text(text: str) -> str:
    """`text` without control characters (tab and newline are kept), and with any lone
    surrogate replaced, so it can neither rewrite a terminal nor fail to encode."""
    text = _CONTROL.sub("", text)
    return text.encode("utf-8", "replace").decode("utf-8")
