"""Gradebook exports in the import formats of the course's learning platform, written beside
grades.csv one student at a time:

    OUT/canvas.csv             Canvas's gradebook import: Student, ID, SIS User ID,
                               SIS Login ID, Section, then the assignment's column (a
                               "Points Possible" row first)
    OUT/gradescope_scores.csv  Gradescope's score upload: Name, SID, Email, Total Score

Names, Canvas ids, SIS ids, sections and emails come from the roster's columns of those names
(`name`, `canvas_id`, `sis_id`, `sis_login_id`, `section`, `email`); the grader's id is the
SID, and the SIS User ID where the roster has none.
"""

from __future__ import annotations

import csv
import io
import unicodedata
from pathlib import Path

from puzzles.grading.atomic import FileSet
from puzzles.grading.intake import IntakeError

CANVAS = "canvas.csv"
GRADESCOPE = "gradescope_scores.csv"
CANVAS_HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
GRADESCOPE_HEADER = ["Name", "SID", "Email", "Total Score"]


def read_roster_details(path: Path) -> dict[str, dict[str, str]]:
    """Each roster id's other columns (lower-cased names), for the exports."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise IntakeError(f"cannot read the roster {path}: {exc}") from None
    reader = csv.DictReader(io.StringIO(text))
    if reader.fieldnames is None:
        return {}
    key = next((k for k in reader.fieldnames if k.strip().lower() in ("id", "student")), None)
    if key is None:
        return {}
    return {unicodedata.normalize("NFC", row[key].strip()):
            {k.strip().lower(): (v or "").strip() for k, v in row.items() if k}
            for row in reader if (row.get(key) or "").strip()}


class LmsExports:
    """The two export files, opened in the gradebook's `FileSet` while it is written."""

    def __init__(self, files: FileSet, out: Path, assignment: str, best: float,
                 roster: dict[str, dict[str, str]]) -> None:
        self.roster = roster
        self.paths = [out / CANVAS, out / GRADESCOPE]
        self.canvas, self.gradescope = (csv.writer(files.open(path, newline=""))
                                        for path in self.paths)
        self.canvas.writerow([*CANVAS_HEADER, assignment or "Metal Puzzles"])
        self.canvas.writerow(["Points Possible", "", "", "", "", f"{best:g}"])
        self.gradescope.writerow(GRADESCOPE_HEADER)

    def add(self, sid: str, total: float) -> None:
        who = self.roster.get(sid, {})
        self.canvas.writerow([_text(who.get("name", sid)), who.get("canvas_id", ""),
                              who.get("sis_id") or sid, who.get("sis_login_id", ""),
                              who.get("section", ""), f"{total:g}"])
        self.gradescope.writerow([_text(who.get("name", sid)), sid, who.get("email", ""),
                                  f"{total:g}"])


def _text(value: str) -> str:
    """A cell a spreadsheet shows as text, not as a formula."""
    return "'" + value if value[:1] in ("=", "+", "-", "@") else value
