"""The late policy: submission times and extensions from the roster, the share of points kept
per started day late, carried on each row so that every output scores alike, and rebuilt from
the journal (or from a newer roster) whenever the gradebook is."""

from __future__ import annotations

import csv
import json
from datetime import datetime
from pathlib import Path

import pytest

from puzzles.grading.assignment import parse
from puzzles.grading.intake import IntakeError, Submission
from puzzles.grading.journal import Header, Journal, record
from puzzles.grading.late_policy import Lateness, apply, from_roster, note
from puzzles.grading.outputs import write_gradebook
from puzzles.grading.sandbox import Outcome

PLAN = parse({"assignment": {"name": "w", "seed": 5, "due": "2026-03-01T23:59:00+00:00",
                             "late_penalty_per_day": 0.25},
              "puzzles": [{"puzzle": 1, "points": 2}, {"puzzle": 2, "points": 2}]})
ON_TIME = "2026-03-01T20:00:00+00:00"
LATE_1_DAY = "2026-03-02T10:00:00+00:00"      # 10 hours late: one started day
LATE_3_DAYS = "2026-03-04T00:30:00+00:00"     # 2 days and 31 minutes: three


def outcome(sid: str) -> Outcome:
    return Outcome(Submission(sid, ()), [
        {"puzzle": n, "title": title, "status": "pass", "counts": {}, "budget": {},
         "diagnostics": []} for n, title in ((1, "Map"), (2, "Zip"))])


def test_the_roster_gives_times_and_extensions():
    found = from_roster({"ada": {"submitted": LATE_1_DAY},
                         "bob": {"submitted": LATE_3_DAYS, "extension_days": "3"},
                         "cy": {"submitted": LATE_1_DAY, "due": "2026-03-05T12:00:00-05:00"},
                         "dee": {"name": "Dee"}}, PLAN)
    assert set(found) == {"ada", "bob", "cy"}  # no times: no entry, never late
    assert found["bob"].due == datetime.fromisoformat("2026-03-04T23:59:00+00:00")
    assert [PLAN.late_factor(found[s].submitted, found[s].due) for s in ("ada", "bob", "cy")] \
        == [0.75, 1.0, 1.0]


@pytest.mark.parametrize(("row", "message"), [
    ({"submitted": "March 2nd"}, "submitted for 'ada' must be a date-time with its offset"),
    ({"submitted": "2026-03-02T10:00:00"}, "with its offset"),  # whose local time?
    ({"due": ON_TIME, "extension_days": "1"}, "both a due date and extension_days"),
    ({"extension_days": "a week"}, "must be a number of days"),
])
def test_a_value_the_grader_cannot_use_is_named(row, message):
    with pytest.raises(IntakeError, match=message):
        from_roster({"ada": row}, PLAN)


def test_an_extension_needs_a_due_date_to_extend():
    with pytest.raises(IntakeError, match="no due date to extend"):
        from_roster({"ada": {"extension_days": "2"}}, parse({}))


def test_late_rows_carry_their_factor_and_every_score_uses_it():
    late = apply(outcome("ada"), PLAN, Lateness(datetime.fromisoformat(LATE_3_DAYS)))
    assert [row["late_factor"] for row in late.rows] == [0.25, 0.25]
    assert PLAN.score(late.rows) == (1.0, 4.0)
    assert note(late) == "submitted late: points multiplied by 0.25 (the late policy)"
    on_time = apply(outcome("ada"), PLAN, Lateness(datetime.fromisoformat(ON_TIME)))
    assert PLAN.score(on_time.rows) == (4.0, 4.0) and note(on_time) == ""
    assert apply(outcome("ada"), PLAN, None) == outcome("ada")  # no time: never late


def totals(out: Path) -> dict[str, str]:
    return {r["student"]: r["total"]
            for r in csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}


def test_the_gradebook_applies_the_journals_times_and_a_newer_roster_wins(tmp_path):
    journal = Journal.start(tmp_path, Header(5, [1, 2], "w", ("ada", "bob", "cy")))
    times = {"ada": LATE_1_DAY, "bob": LATE_3_DAYS, "cy": None}
    for sid, submitted in times.items():
        late = Lateness(datetime.fromisoformat(submitted)) if submitted else None
        journal.append(record(outcome(sid), [], late.to_json() if late else None))
    write_gradebook(tmp_path, journal, PLAN, {}, student_files=True)
    assert totals(tmp_path) == {"ada": "3", "bob": "1", "cy": "4"}
    rows = {r["student"]: r for r in csv.DictReader((tmp_path / "grades.csv").open())}
    assert "submitted late: points multiplied by 0.75" in rows["ada"]["notes"]
    results = json.loads((tmp_path / "results" / "bob" / "results.json").read_text())
    assert results["score"] == 1 and "Submitted late" in results["output"]
    assert "Submitted late: points multiplied by 0.25" in \
        (tmp_path / "feedback" / "bob.md").read_text()
    scores = {r["SID"]: r["Total Score"]
              for r in csv.DictReader((tmp_path / "gradescope_scores.csv").open())}
    assert scores == {"ada": "3", "bob": "1", "cy": "4"}
    report = json.loads((tmp_path / "grades.json").read_text())
    assert report["late_policy"] == {"due": "2026-03-01T23:59:00+00:00",
                                     "late_penalty_per_day": 0.25}
    assert report["students"][1]["late"]["submitted"] == LATE_3_DAYS

    roster = {"bob": {"id": "bob", "submitted": LATE_3_DAYS, "extension_days": "3"}}
    write_gradebook(tmp_path, journal, PLAN, {}, roster=roster)  # bob's extension, granted
    assert totals(tmp_path) == {"ada": "3", "bob": "4", "cy": "4"}


def test_an_override_is_late_too(tmp_path):
    (tmp_path / "overrides.csv").write_text("id,puzzle,points,reason\nada,2,1,by hand\n")
    journal = Journal.start(tmp_path, Header(5, [1, 2], "w", ("ada",)))
    journal.append(record(outcome("ada"), [], Lateness(
        datetime.fromisoformat(LATE_1_DAY)).to_json()))
    write_gradebook(tmp_path, journal, PLAN, {})
    assert totals(tmp_path) == {"ada": "2.25"}  # (2 + 1) * 0.75
