"""The run's journal, `OUT/grades.jsonl`: one JSON line per finished submission, appended and
flushed as each student finishes, under a first line saying how the run grades (its seed, its
puzzles). Everything else under OUT is built from it, so a run stopped by Ctrl-C or a crash
resumes where it stopped (`--resume`), a regrade of a few students (`--only`) appends their
new lines (the last line of an id wins), and new points re-score the stored rows without
simulating anything again.

The parent never holds the class in memory: it keeps the byte offset of each id's last line
and reads one record at a time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from puzzles.grading.atomic import interrupts_held, write_text
from puzzles.grading.intake import Submission
from puzzles.grading.sandbox import Outcome
from puzzles.grading.strict_json import strict_json_line

JOURNAL = "grades.jsonl"
FORMAT = 1


class JournalError(Exception):
    """The journal is missing, unreadable, or was written by a run that grades differently."""


@dataclass(frozen=True)
class Header:
    """How the journal's run grades: the seed of the hidden cases, the puzzles assigned
    (None: the chapters each notebook works on), and the class's ids in gradebook order."""

    seed: int
    puzzles: list[int] | None
    assignment: str = ""
    order: tuple[str, ...] = ()


def record(outcome: Outcome, notes: list[str], late: dict[str, str | None] | None = None
           ) -> dict[str, object]:
    """One submission's line: everything the gradebook, the feedback and the similarity
    report are built from (`late`: when it was handed in and due, see `late_policy`)."""
    s = outcome.submission
    return {"id": s.id, "files": [str(f) for f in s.files], "refused": s.refused,
            "missing": s.missing, "error": outcome.error, "seconds": round(outcome.seconds, 3),
            "notes": notes, "late": late, "rows": outcome.rows,
            "kernels": {str(n): text for n, text in outcome.kernels.items()}}


def outcome_of(line: dict[str, object]) -> Outcome:
    """The `Outcome` a journal line records."""
    submission = Submission(str(line["id"]), tuple(Path(f) for f in line["files"]),
                            refused=str(line["refused"]), missing=bool(line["missing"]))
    return Outcome(submission, list(line["rows"]),
                   {int(n): text for n, text in dict(line["kernels"]).items()},
                   str(line["error"]), float(line["seconds"]))


class Journal:
    """An open journal: append lines, and read the last line of each id back by offset."""

    def __init__(self, out: Path, header: Header) -> None:
        self.path = out / JOURNAL
        self.header = header
        self.offsets: dict[str, int] = {}

    @classmethod
    def start(cls, out: Path, header: Header) -> Journal:
        """A new journal (replacing any earlier one)."""
        out.mkdir(parents=True, exist_ok=True)
        journal = cls(out, header)
        write_text(journal.path, _line({
            "journal": FORMAT, "seed": header.seed, "puzzles": header.puzzles,
            "assignment": header.assignment, "order": list(header.order)}))
        return journal

    @classmethod
    def open(cls, out: Path) -> Journal:
        """The journal under `out`, indexed (a torn last line, from a crash, is dropped)."""
        path = out / JOURNAL
        try:
            f = path.open("rb")
        except OSError:
            raise JournalError(f"no journal {path}: grade the class into {out} first") from None
        with f:
            first = f.readline()
            try:
                head = json.loads(first)
                header = Header(int(head["seed"]), head["puzzles"], str(head["assignment"]),
                                tuple(head["order"]))
            except (ValueError, KeyError, TypeError):
                raise JournalError(f"{path} is not a grader's journal") from None
            journal = cls(out, header)
            good = f.tell()
            for raw in iter(f.readline, b""):
                try:
                    sid = json.loads(raw)["id"]
                except (ValueError, KeyError, TypeError):
                    break  # a line cut short by a crash: everything after it is lost
                journal.offsets[sid] = good
                good += len(raw)
        with path.open("r+b") as f:
            f.truncate(good)
        return journal

    def append(self, line: dict[str, object]) -> None:
        """Add one submission's line and flush it to disk before going on (a Ctrl-C meanwhile
        waits until the line is whole and indexed)."""
        data = _line(line).encode("utf-8")
        with interrupts_held(), self.path.open("ab") as f:
            offset = f.tell()
            f.write(data)
            f.flush()
            self.offsets[str(line["id"])] = offset

    def read(self, sid: str) -> dict[str, object]:
        with self.path.open("rb") as f:
            f.seek(self.offsets[sid])
            return json.loads(f.readline())

    def lines(self) -> Iterator[dict[str, object]]:
        """The last line of each id: in the header's order, then the rest in the order their
        lines were written."""
        listed = [sid for sid in self.header.order if sid in self.offsets]
        named = set(listed)
        rest = sorted((sid for sid in self.offsets if sid not in named),
                      key=self.offsets.__getitem__)
        with self.path.open("rb") as f:
            for sid in listed + rest:
                f.seek(self.offsets[sid])
                yield json.loads(f.readline())


def _line(data: object) -> str:
    return strict_json_line(data) + "\n"
