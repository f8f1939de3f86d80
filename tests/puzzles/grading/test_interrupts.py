"""Ctrl-C at any point of `grade`: exit 130 with one line saying what was kept (never a
traceback), every file whole (the old one or the new one, no `.partial` left), and `--resume`
(or the same command again) ending with the gradebook of one uninterrupted run.

Each test delivers a real SIGINT to the grader (in this process) at one point: writing the
journal's header, between students, half-way through the gradebook, while its files are being
renamed into place, during a re-score and while writing --json."""

from __future__ import annotations

import shutil
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from puzzles.grading import atomic, commands, journal, outputs
from puzzles.grading.journal import JOURNAL
from tests.puzzles.grading.classroom import MAP
from tests.puzzles.grading.test_streaming import WRONG_MAP, gradebook, write_student

TOML = "[assignment]\nseed = 6061\ntime_limit = 20\n\n[[puzzles]]\npuzzle = 1\npoints = 2\n"


@pytest.fixture(autouse=True)
def ctrl_c_restored() -> Iterator[None]:
    """Each test starts with Python's own Ctrl-C handling, whatever the suite inherited (a
    shell without job control starts background jobs with SIGINT ignored, and Python then
    keeps ignoring it: `(pytest &)` failed five of these tests), and gives pytest its
    handler back afterwards: `grade` ignores a second Ctrl-C once it is stopping."""
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    yield
    signal.signal(signal.SIGINT, before)


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """Three students and the gradebook of one uninterrupted run (`one`)."""
    root = tmp_path_factory.mktemp("interrupts")
    for sid, body in (("s0", MAP), ("s1", WRONG_MAP), ("s2", MAP)):
        write_student(root / "subs", sid, body, False)
    (root / "a.toml").write_text(TOML)
    assert grade(root, root / "one") == 0
    return root


def grade(root: Path, out: Path, **options: object) -> int:
    return commands.grade(root / "subs", assignment=root / "a.toml", out=out, **options)


def interrupt_at(monkeypatch, module: object, name: str, call: int = 1,
                 when: Callable[..., bool] = lambda *_a, **_k: True) -> None:
    """Ctrl-C arrives at the `call`-th call of `module.name` for which `when` holds (the
    call itself still goes on, as it would)."""
    original = getattr(module, name)
    seen = [0]

    def wrapped(*args: object, **kwargs: object) -> object:
        if when(*args, **kwargs):
            seen[0] += 1
            if seen[0] == call:
                signal.raise_signal(signal.SIGINT)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapped)


def no_partial_files(out: Path) -> bool:
    return not any(p.name.endswith(".partial") for p in out.rglob("*"))


def test_while_the_journal_is_started_nothing_is_written(course, tmp_path, monkeypatch,
                                                         capsys):
    interrupt_at(monkeypatch, journal, "write_text")
    assert grade(course, tmp_path / "out") == 130
    err = capsys.readouterr().err
    assert "interrupted before grading began: nothing was written" in err
    assert "Traceback" not in err
    assert not (tmp_path / "out" / JOURNAL).exists() and no_partial_files(tmp_path)


def test_between_students_the_finished_ones_are_kept_and_resume_finishes(course, tmp_path,
                                                                          monkeypatch, capsys):
    out = tmp_path / "out"
    interrupt_at(monkeypatch, commands, "write_student_files", call=2)
    assert grade(course, out) == 130
    assert "2 submission(s) graded so far are kept" in capsys.readouterr().err
    assert not (out / "grades.csv").exists() and no_partial_files(out)
    monkeypatch.undo()
    assert grade(course, out, resume=True) == 0
    assert capsys.readouterr().err.count("points") == 1  # only the third was graded
    assert gradebook(out) == gradebook(course / "one")


def test_half_way_through_the_gradebook_no_file_is_cut_short(course, tmp_path, monkeypatch,
                                                             capsys):
    out = tmp_path / "out"
    interrupt_at(monkeypatch, outputs, "csv_row", call=2)
    assert grade(course, out) == 130
    err = capsys.readouterr().err
    assert "3 submission(s) graded so far are kept" in err and "--resume" in err
    assert "Traceback" not in err
    assert not (out / "grades.csv").exists() and not (out / "grades.json").exists()
    assert no_partial_files(out)
    monkeypatch.undo()
    assert grade(course, out, resume=True) == 0
    assert "points" not in capsys.readouterr().err  # nothing graded again
    assert gradebook(out) == gradebook(course / "one")


def test_while_the_gradebook_is_renamed_into_place_it_is_renamed_whole(course, tmp_path,
                                                                       monkeypatch, capsys):
    out = tmp_path / "out"
    interrupt_at(monkeypatch, atomic.os, "replace",
                 when=lambda _partial, path: Path(path).name == "grades.csv")
    assert grade(course, out) == 130
    assert "Traceback" not in capsys.readouterr().err
    assert gradebook(out) == gradebook(course / "one")  # every file of the set, renamed
    assert (out / "canvas.csv").exists() and no_partial_files(out)


def test_during_a_rescore_the_old_gradebook_stays(course, tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    shutil.copytree(course / "one", out)
    (course / "b.toml").write_text(TOML.replace("points = 2", "points = 5"))
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    interrupt_at(monkeypatch, outputs, "write_student_files", call=2)
    assert commands.grade(None, assignment=course / "b.toml", out=out, rescore=True) == 130
    assert "is as it was" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert no_partial_files(out)
    monkeypatch.undo()
    assert commands.grade(None, assignment=course / "b.toml", out=out, rescore=True) == 0
    assert "5" in (out / "grades.csv").read_text().splitlines()[1].split(",")


def test_while_writing_json_rows_the_file_is_whole_or_absent(course, tmp_path, monkeypatch,
                                                             capsys):
    out = tmp_path / "out"
    shutil.copytree(course / "one", out)
    interrupt_at(monkeypatch, commands, "strict_json_line", call=2)
    assert grade(course, out, resume=True, json_path=tmp_path / "rows.json") == 130
    assert "Traceback" not in capsys.readouterr().err
    assert not (tmp_path / "rows.json").exists() and no_partial_files(tmp_path)
    monkeypatch.undo()
    assert grade(course, out, resume=True, json_path=tmp_path / "rows.json") == 0
    assert (tmp_path / "rows.json").read_text().count('"puzzle"') == 3
