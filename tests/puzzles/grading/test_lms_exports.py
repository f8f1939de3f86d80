"""Canvas's and Gradescope's import CSVs, written with the gradebook and parsed back."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from puzzles.grading.assignment import Assignment
from puzzles.grading.intake import Submission
from puzzles.grading.journal import Header, Journal, record
from puzzles.grading.lms_exports import (
    CANVAS,
    CANVAS_HEADER,
    GRADESCOPE,
    GRADESCOPE_HEADER,
    read_roster_details,
)
from puzzles.grading.outputs import write_gradebook
from puzzles.grading.overrides import Overrides, OverridesError
from puzzles.grading.sandbox import Outcome

PLAN = Assignment(name="Week 1", points={1: 2, 2: 3}, seed=11)


def journal_of(out: Path) -> Journal:
    journal = Journal.start(out, Header(11, [1, 2], "Week 1", ("ada", "bob", "=cmd")))
    rows = {"ada": ["pass", "pass"], "bob": ["pass", "fail"], "=cmd": ["fail", "fail"]}
    for sid, statuses in rows.items():
        outcome = Outcome(Submission(sid, ()), [
            {"puzzle": n, "title": "t", "status": s} for n, s in zip((1, 2), statuses,
                                                                     strict=True)])
        journal.append(record(outcome, []))
    return journal


def test_canvas_and_gradescope_exports_parse_back_with_the_roster_details(tmp_path):
    (tmp_path / "roster.csv").write_text(
        "id,name,canvas_id,sis_id,section,email\n"
        "ada,Ada Lovelace,101,S-1,Sec A,ada@example.edu\nbob,Bob,102,S-2,Sec B,bob@x.edu\n")
    roster = read_roster_details(tmp_path / "roster.csv")
    write_gradebook(tmp_path, journal_of(tmp_path), PLAN, {}, roster=roster)
    canvas = list(csv.reader((tmp_path / CANVAS).open(encoding="utf-8")))
    assert canvas[0] == [*CANVAS_HEADER, "Week 1"]
    assert canvas[1][0] == "Points Possible" and canvas[1][-1] == "5"
    assert canvas[2] == ["Ada Lovelace", "101", "S-1", "", "Sec A", "5"]
    assert canvas[3] == ["Bob", "102", "S-2", "", "Sec B", "2"]
    assert canvas[4] == ["'=cmd", "", "=cmd", "", "", "0"]  # a name is never a formula
    scores = list(csv.DictReader((tmp_path / GRADESCOPE).open(encoding="utf-8")))
    assert list(scores[0]) == GRADESCOPE_HEADER
    assert [(r["SID"], r["Email"], float(r["Total Score"])) for r in scores] == [
        ("ada", "ada@example.edu", 5.0), ("bob", "bob@x.edu", 2.0), ("=cmd", "", 0.0)]


def test_the_totals_of_the_exports_match_grades_csv(tmp_path):
    write_gradebook(tmp_path, journal_of(tmp_path), PLAN, {})
    grades = {r["student"].lstrip("'"): r["total"]
              for r in csv.DictReader((tmp_path / "grades.csv").open(encoding="utf-8"))}
    scores = {r["SID"]: r["Total Score"]
              for r in csv.DictReader((tmp_path / GRADESCOPE).open(encoding="utf-8"))}
    assert scores == grades


def test_overrides_set_points_in_every_output_and_survive_a_rebuild(tmp_path):
    (tmp_path / "overrides.csv").write_text(
        'id,puzzle,points,reason\nbob,2,3,"benign race"\n=cmd,Map,1,\n')
    journal = journal_of(tmp_path)
    for _ in range(2):  # the gradebook is rebuilt (a regrade, a re-score): still applied
        write_gradebook(tmp_path, journal, PLAN, {})
        rows = {r["student"].lstrip("'"): r
                for r in csv.DictReader((tmp_path / "grades.csv").open(encoding="utf-8"))}
        assert (rows["bob"]["2 Zip"], rows["bob"]["total"]) == ("3", "5")
        assert "3 points set by the instructor: benign race" in rows["bob"]["notes"]
        assert rows["=cmd"]["total"] == "1" and rows["ada"]["total"] == "5"
        scores = {r["SID"]: r["Total Score"]
                  for r in csv.DictReader((tmp_path / GRADESCOPE).open(encoding="utf-8"))}
        assert scores == {"ada": "5", "bob": "5", "=cmd": "1"}
    assert (tmp_path / "overrides.csv").read_text().startswith("id,puzzle,points,reason")


def test_a_bad_override_line_is_named(tmp_path):
    (tmp_path / "overrides.csv").write_text("id,puzzle,points\nbob,99,1\n")
    with pytest.raises(OverridesError, match="line 2"):
        Overrides.load(tmp_path)
