"""Intake: submissions are regular files inside the submission (links, devices and FIFOs are
refused with a status of their own), `.zip` submissions are read safely or reported, ids are
the names kept exactly, a roster adds the students who handed in nothing, and of several
notebooks for one chapter the newest is graded."""

from __future__ import annotations

import csv
import io
import json
import os
import time
import unicodedata
import zipfile

import nbformat
import pytest
from classroom import MAP, learner, solve

from puzzles.catalog import ROOT
from puzzles.cli import main
from puzzles.grading import intake
from puzzles.grading.intake import IntakeError, find_submissions, read_archive, read_regular

ASSIGNMENT = '[assignment]\nseed = 777\n\n[[puzzles]]\npuzzle = "Map"\npoints = 1\n'
SOLVED_NOTEBOOKS = ROOT / "solutions" / "notebooks"
ZOE_NFC = unicodedata.normalize("NFC", "Zoé Müller")
ZOE_DIAERESIS = unicodedata.normalize("NFC", "Zoë Müller")
LEA = "Léa"


def notebook_bytes(body: str | None) -> bytes:
    nb = learner("01_threads.ipynb")
    if body is not None:
        solve(nb, 1, body)
    return nbformat.writes(nb).encode()


def folder_with(path, name: str, data: bytes, modified: float | None = None) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / name).write_bytes(data)
    if modified is not None:
        os.utime(path / name, (modified, modified))


def zipped(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("intake")
    cls = root / "class"
    solved, template = notebook_bytes(MAP), notebook_bytes(None)
    folder_with(cls / "x", "01_threads.ipynb", solved)
    folder_with(cls / "_x", "01_threads.ipynb", template)
    folder_with(cls / ZOE_NFC, "01_threads.ipynb", solved)
    folder_with(cls / unicodedata.normalize("NFD", ZOE_DIAERESIS), "01_threads.ipynb",
                template)
    folder_with(cls / LEA, "01_threads.ipynb", solved)
    (cls / (unicodedata.normalize("NFD", LEA) + ".ipynb")).write_bytes(solved)
    (cls / "link-file").mkdir()
    (cls / "link-file" / "01_threads.ipynb").symlink_to(SOLVED_NOTEBOOKS / "01_threads.ipynb")
    (cls / "link-folder").symlink_to(SOLVED_NOTEBOOKS, target_is_directory=True)
    (cls / "zero.ipynb").symlink_to("/dev/zero")
    os.mkfifo(cls / "fifo.ipynb")
    (cls / "fifo-inside").mkdir()
    os.mkfifo(cls / "fifo-inside" / "01_threads.ipynb")
    (cls / "zipped.zip").write_bytes(zipped({"work/01_threads.ipynb": solved,
                                             "__MACOSX/work/._01_threads.ipynb": b"junk"}))
    (cls / "zip-slip.zip").write_bytes(zipped({"../../evil.ipynb": solved}))
    (cls / "zip-bomb.zip").write_bytes(zipped({"01_threads.ipynb": b" " * (40 << 20)}))
    now = time.time()
    folder_with(cls / "two-versions", "01_threads.ipynb", template, now - 3600)
    folder_with(cls / "two-versions", "01_threads (1).ipynb", solved, now)
    (cls / "notes.txt").write_text("not a submission")
    (root / "a.toml").write_text(ASSIGNMENT)
    (root / "roster.csv").write_text(
        "id,name\nx,X\n_x,Underscore\n" + f"{ZOE_NFC},Z1\n{ZOE_DIAERESIS},Z2\nabsent,A\n")
    out = root / "out"
    started = time.monotonic()
    code = main(["grade", str(cls), "--assignment", str(root / "a.toml"), "--out", str(out),
                 "--roster", str(root / "roster.csv"), "--jobs", "2"])
    seconds = time.monotonic() - started
    with (out / "grades.csv").open(newline="", encoding="utf-8") as f:
        rows = {row["student"]: row for row in csv.DictReader(f)}
    report = json.loads((out / "grades.json").read_text())
    return {"code": code, "rows": rows, "out": out, "seconds": seconds,
            "students": {s["id"]: s for s in report["students"]}}


def test_symlinked_solutions_score_nothing_and_are_refused(graded):
    rows = graded["rows"]
    for sid in ("link-file", "link-folder"):
        assert rows[sid]["status"] == "refused" and rows[sid]["total"] == "0", rows[sid]
        assert rows[sid]["1 Map status"] == "refused"
        assert "symbolic link" in rows[sid]["notes"]


def test_links_to_devices_and_fifos_are_refused_without_reading_them(graded):
    for sid in ("zero", "fifo", "fifo-inside"):
        assert graded["rows"][sid]["status"] == "refused", graded["rows"][sid]
    assert "FIFO" in graded["rows"]["fifo"]["notes"]
    assert graded["seconds"] < 120  # nothing waited on a FIFO or read /dev/zero


def test_a_zip_submission_is_graded_and_unsafe_ones_are_reported_not_dropped(graded):
    rows = graded["rows"]
    assert rows["zipped"]["1 Map"] == "1" and rows["zipped"]["status"] == "graded"
    assert rows["zip-slip"]["status"] == "not graded"
    assert "leaves the archive" in rows["zip-slip"]["notes"]
    assert rows["zip-bomb"]["status"] == "not graded"
    assert "limit of 32 MiB" in rows["zip-bomb"]["notes"]
    assert not (graded["out"].parent / "evil.ipynb").exists()


def test_ids_are_the_names_kept_exactly_and_never_reassigned(graded):
    rows = graded["rows"]
    assert rows["x"]["1 Map"] == "1" and rows["_x"]["1 Map"] == "0"
    assert rows[ZOE_NFC]["1 Map"] == "1" and rows[ZOE_DIAERESIS]["1 Map"] == "0"
    assert not any(sid.endswith("-2") for sid in rows)
    assert (graded["out"] / "feedback" / f"{ZOE_NFC}.md").exists()


def test_two_submissions_with_one_id_are_both_refused(graded):
    refused = [sid for sid, row in graded["rows"].items()
               if unicodedata.normalize("NFC", sid).startswith(LEA)]
    assert len(refused) == 2
    for sid in refused:
        assert graded["rows"][sid]["status"] == "refused"
        assert "2 submissions have the id" in graded["rows"][sid]["notes"]


def test_the_roster_adds_a_missing_row_and_notes_who_is_not_on_it(graded):
    absent = graded["rows"]["absent"]
    assert absent["status"] == "missing" and absent["1 Map status"] == "missing"
    assert absent["total"] == "0" and absent["max"] == "1"
    assert "not on the roster" in graded["rows"]["zipped"]["notes"]
    assert "not on the roster" not in graded["rows"]["x"]["notes"]
    assert not (graded["out"] / "feedback" / "absent.md").exists()


def test_of_two_versions_of_a_notebook_the_newest_is_graded_and_said(graded):
    row = graded["rows"]["two-versions"]
    assert row["1 Map"] == "1", row
    assert "graded the newest, '01_threads (1).ipynb'" in row["notes"]
    feedback = (graded["out"] / "feedback" / "two-versions.md").read_text()
    assert "graded the newest, '01_threads (1).ipynb'" in feedback
    assert "not graded: '01_threads.ipynb'" in feedback


def test_entries_that_are_no_submission_are_named(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "ann.ipynb").write_bytes(notebook_bytes(MAP))
    main(["grade", str(tmp_path), "--out", str(tmp_path / "out")])
    assert "skipped: 'notes.txt' is not a notebook (.ipynb), .zip or folder" in \
        capsys.readouterr().err


def test_a_fifo_read_directly_is_an_error_not_a_hang(tmp_path):
    os.mkfifo(tmp_path / "p.ipynb")
    with pytest.raises(IntakeError, match="FIFO"):
        read_regular(tmp_path / "p.ipynb", 1 << 20)
    (tmp_path / "l.ipynb").symlink_to(tmp_path / "p.ipynb")
    with pytest.raises(IntakeError, match="symbolic link"):
        read_regular(tmp_path / "l.ipynb", 1 << 20)


def test_archive_limits_are_named(monkeypatch):
    monkeypatch.setattr(intake, "MAX_MEMBERS", 3)
    many = zipped({f"n{k}.ipynb": b"{}" for k in range(4)})
    with pytest.raises(IntakeError, match="limit of 3"):
        read_archive("many.zip", many)
    with pytest.raises(IntakeError, match="leaves the archive"):
        read_archive("abs.zip", zipped({"/etc/x.ipynb": b"{}"}))
    with pytest.raises(IntakeError, match="not a readable .zip"):
        read_archive("bad.zip", b"PK\x03\x04 not really")
    long = "d/" * 20 + "n.ipynb"
    with pytest.raises(IntakeError, match="longer than the grader's limit"):
        read_archive("deep.zip", zipped({long: b"{}"}))


def test_a_name_with_control_characters_is_refused(tmp_path):
    (tmp_path / "a\x1bb.ipynb").write_text("{}")
    found, = find_submissions(tmp_path)
    assert found.refused and "\x1b" not in found.id


def test_a_roster_student_who_handed_in_nothing_is_listed_but_fails_no_run(tmp_path, capsys):
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "ann.ipynb").write_bytes(notebook_bytes(MAP))
    (tmp_path / "roster.csv").write_text("ann\nbob\n")  # no header: the first column
    assert main(["grade", str(tmp_path / "class"), "--out", str(tmp_path / "out"),
                 "--roster", str(tmp_path / "roster.csv")]) == 0
    assert "missing (on the roster, nothing handed in): bob" in capsys.readouterr().out
