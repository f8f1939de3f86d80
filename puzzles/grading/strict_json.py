"""Strict JSON (RFC 8259) for everything the grader writes: a kernel can write inf or NaN,
which Python's json would write as `Infinity` and `NaN`, tokens strict parsers reject."""

from __future__ import annotations

import json
import math


def strict_json(data: object) -> str:
    """`data` as indented strict JSON: infinities become the strings "inf"/"-inf" and NaN
    becomes null."""
    return json.dumps(finite(data), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def strict_json_line(data: object) -> str:
    """`data` as strict JSON on one line (for JSON Lines)."""
    return json.dumps(finite(data), ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def finite(value: object) -> object:
    """`value` with every non-finite float replaced (see `strict_json`)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    return value
