"""JSON schemas written from the platforms' documented result formats, for the tests to
validate what the grader writes against.

Gradescope, "Autograder Specifications" (results.json): every key is optional; `score` on the
top level or on every test; `output_format`/`test_output_format`/`test_name_format` one of
text, html, simple_format, md, ansi; visibility one of hidden, after_due_date,
after_published, visible; a test's `status` passed or failed; `tags` a list of strings.

PrairieLearn, "External grading" (/grade/results/results.json): `score` a number from 0 to 1,
required unless `gradable` is false; `gradable` a boolean; `format_errors` a string or a list
of strings (for a submission that is not gradable); `message`, `output`; `images` a list;
`tests` a list of objects with `name`, `description`, `points`, `max_points`, `message`,
`output`, `images` (both points on every test for the per-test display); the file at most
1 MB.
"""

from __future__ import annotations

FORMAT = {"enum": ["text", "html", "simple_format", "md", "ansi"]}
VISIBILITY = {"enum": ["hidden", "after_due_date", "after_published", "visible"]}

GRADESCOPE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "anyOf": [{"required": ["score"]},
              {"required": ["tests"], "properties": {"tests": {"items": {
                  "required": ["score"]}}}}],
    "properties": {
        "score": {"type": "number"},
        "execution_time": {"type": "number"},
        "output": {"type": "string"},
        "output_format": FORMAT,
        "test_output_format": FORMAT,
        "test_name_format": FORMAT,
        "visibility": VISIBILITY,
        "stdout_visibility": VISIBILITY,
        "extra_data": {"type": "object"},
        "leaderboard": {"type": "array"},
        "tests": {"type": "array", "items": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "score": {"type": "number"},
                "max_score": {"type": "number"},
                "status": {"enum": ["passed", "failed"]},
                "name": {"type": "string"},
                "name_format": FORMAT,
                "number": {"type": "string"},
                "output": {"type": "string"},
                "output_format": FORMAT,
                "tags": {"type": "array", "items": {"type": "string"}},
                "visibility": VISIBILITY,
                "extra_data": {"type": "object"},
            },
        }},
    },
}

PRAIRIELEARN_MAX_BYTES = 1_000_000
IMAGES = {"type": "array", "items": {"anyOf": [
    {"type": "string"},
    {"type": "object", "required": ["url"], "additionalProperties": False,
     "properties": {"url": {"type": "string"}, "label": {"type": "string"}}}]}}

PRAIRIELEARN_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "if": {"properties": {"gradable": {"const": False}}, "required": ["gradable"]},
    "then": {"required": ["gradable"]},
    "else": {"required": ["score"]},
    "properties": {
        "gradable": {"type": "boolean"},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "format_errors": {"anyOf": [{"type": "string"},
                                    {"type": "array", "items": {"type": "string"}}]},
        "message": {"type": "string"},
        "output": {"type": "string"},
        "images": IMAGES,
        "tests": {"type": "array", "items": {
            "type": "object",
            "required": ["name", "points", "max_points"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string"},
                "description": {"type": "string"},
                "points": {"type": "number", "minimum": 0},
                "max_points": {"type": "number", "minimum": 0},
                "message": {"type": "string"},
                "output": {"type": "string"},
                "images": IMAGES,
            },
        }},
    },
}
