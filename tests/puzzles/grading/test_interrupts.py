"""Ctrl-C at any point of `grade`: exit 130 with one line saying what was kept (never a
traceback), every file whole (the old one or the new one, no `.partial` left), and `--resume`
(or the same command again) ending with the gradebook of one uninterrupted run.

Each test delivers a real SIGINT to the grader (in this process) at one point: writing the
journal's header, between students, half-way through the gradebook, while its files are being
renamed into place, during a re-score and while writing --json. The one-submission jobs
(`gradescope`, `prairielearn`) stop the same way: while a worker grades, before grading and
while results.json is renamed into place, in this process and, as a terminal's Ctrl-C does,
to the whole process group of a real `python -m puzzles` (no process of it left)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import nbformat
import pytest

from puzzles.grading import atomic, commands, journal, outputs
from puzzles.grading.journal import JOURNAL
from puzzles.grading.sandbox import SubmissionRun
from tests.puzzles.grading.classroom import MAP, learner, solve
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


# A Map that runs until the simulator's step limit stops it: its worker is busy for seconds.
ENDLESS_MAP = ("uint local_i = thread_position_in_grid.x;\nfloat acc = 0;\n"
               "for (int k = 0; k < 100000000; k++) { acc += a[0] * 0.5f; }\n"
               "if (acc == 1.5f) { out[0] = 0; }\n")
ROOT = Path(__file__).resolve().parents[3]


def job(tmp_path: Path, which: str) -> tuple[list[str], Path]:
    """A `gradescope` or `prairielearn` job of one slow submission: the command's arguments
    and where its results.json goes."""
    nb = learner("01_threads.ipynb")
    solve(nb, 1, ENDLESS_MAP)
    (tmp_path / "a.toml").write_text(TOML.replace("time_limit = 20", "time_limit = 60"))
    if which == "gradescope":
        (tmp_path / "upload").mkdir()
        nbformat.write(nb, tmp_path / "upload" / "work.ipynb")
        (tmp_path / "metadata.json").write_text('{"id": 77}')
        results = tmp_path / "results" / "results.json"
        return (["gradescope", "--assignment", str(tmp_path / "a.toml"), "--submission",
                 str(tmp_path / "upload"), "--metadata", str(tmp_path / "metadata.json"),
                 "--results", str(results)], results)
    (tmp_path / "grade" / "student").mkdir(parents=True)
    (tmp_path / "grade" / "data").mkdir()
    (tmp_path / "grade" / "data" / "data.json").write_text('{"variant_seed": 811}')
    nbformat.write(nb, tmp_path / "grade" / "student" / "work.ipynb")
    return (["prairielearn", "--assignment", str(tmp_path / "a.toml"), "--root",
             str(tmp_path / "grade"), "--timeout", "120"],
            tmp_path / "grade" / "results" / "results.json")


def run_job(args: list[str]) -> int:
    """The command as `python -m puzzles` runs it, in this process."""
    if args[0] == "gradescope":
        return commands.gradescope_autograder(Path(args[2]), Path(args[4]), Path(args[6]),
                                              Path(args[8]))
    return commands.prairielearn_job(Path(args[2]), Path(args[4]), float(args[6]))


def workers_left() -> set[int]:
    """Running processes below this one's children (the fork server's): grading workers."""
    listing = subprocess.run(["ps", "-e", "-o", "pid=,ppid=,stat="], capture_output=True,
                             text=True).stdout
    rows = [line.split() for line in listing.splitlines()]
    children = {int(pid) for pid, ppid, _ in rows if int(ppid) == os.getpid()}
    return {int(pid) for pid, ppid, stat in rows
            if int(ppid) in children and not stat.startswith("Z")}


@pytest.mark.parametrize("which", ["gradescope", "prairielearn"])
def test_a_job_stopped_while_grading_exits_130_with_its_worker_stopped(which, tmp_path,
                                                                       monkeypatch, capsys):
    args, results = job(tmp_path, which)
    interrupt_at(monkeypatch, SubmissionRun, "receive", call=2)  # its worker is running
    assert run_job(args) == 130
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == \
        f"interrupted: nothing was written ({results} is not there)"
    assert "Traceback" not in err
    assert not results.exists() and no_partial_files(tmp_path)
    assert not workers_left()


@pytest.mark.parametrize("which", ["gradescope", "prairielearn"])
def test_a_job_stopped_before_grading_keeps_the_results_it_had(which, tmp_path, monkeypatch,
                                                               capsys):
    args, results = job(tmp_path, which)
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text("{}")
    interrupt_at(monkeypatch, commands, "load")
    assert run_job(args) == 130
    assert capsys.readouterr().err.strip() == \
        f"interrupted: {results} is as it was (from an earlier run)"
    assert results.read_text() == "{}" and no_partial_files(tmp_path)


@pytest.mark.parametrize("which", ["gradescope", "prairielearn"])
def test_a_job_stopped_while_results_are_renamed_into_place_writes_them_whole(
        which, tmp_path, monkeypatch, capsys):
    args, results = job(tmp_path, which)
    interrupt_at(monkeypatch, atomic.os, "replace")
    assert run_job(args) == 130
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == f"interrupted once {results} was written (whole)"
    assert "Traceback" not in err
    assert json.loads(results.read_text())["tests"] and no_partial_files(tmp_path)


def test_grade_gradescope_stopped_while_its_results_are_renamed_says_they_were_written(
        tmp_path, monkeypatch, capsys):
    nb = learner("01_threads.ipynb")
    solve(nb, 1, MAP)
    nbformat.write(nb, tmp_path / "work.ipynb")
    (tmp_path / "a.toml").write_text(TOML)
    results = tmp_path / "results.json"
    interrupt_at(monkeypatch, atomic.os, "replace")
    assert commands.grade(tmp_path / "work.ipynb", assignment=tmp_path / "a.toml",
                          gradescope_path=results, metadata=tmp_path / "none.json") == 130
    assert capsys.readouterr().err.strip().splitlines()[-1] == \
        f"interrupted once {results} was written (whole)"
    assert json.loads(results.read_text())["tests"]


def group_processes(group: int) -> dict[int, str]:
    """The processes of a process group still running (zombies have ended), by pid."""
    listing = subprocess.run(["ps", "-o", "pid=,stat=", "-g", str(group)],
                             capture_output=True, text=True).stdout
    return {int(pid): stat for pid, stat in (line.split() for line in listing.splitlines())
            if not stat.startswith("Z")}


def wait_until_importing_the_command(process: subprocess.Popen) -> None:
    """Until `python -m puzzles` imports its command (numpy is mapped into it then): a
    Ctrl-C before that, while the interpreter itself starts, is Python's to handle, not ours
    (a fixed half-second wait was too short once on a loaded machine)."""
    maps = Path(f"/proc/{process.pid}/maps")
    deadline = time.monotonic() + 60
    while "numpy" not in maps.read_text() and time.monotonic() < deadline:
        assert process.poll() is None, "python -m puzzles ended before importing its command"
        time.sleep(0.01)
    assert "numpy" in maps.read_text(), "python -m puzzles did not import its command"


def python_ctrl_c() -> None:
    """In the child before it runs Python: Ctrl-C as a terminal gives it (a test run in the
    background may have it ignored, and Python would keep ignoring it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@pytest.mark.parametrize("which", ["gradescope", "prairielearn"])
def test_ctrl_c_in_a_terminal_stops_a_jobs_whole_process_group(which, tmp_path):
    args, results = job(tmp_path, which)
    process = subprocess.Popen(
        [sys.executable, "-m", "puzzles", *args], cwd=ROOT, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
        start_new_session=True, preexec_fn=python_ctrl_c)
    try:
        deadline = time.monotonic() + 120
        # the parent, the resource tracker, the fork server and a worker
        while len(group_processes(process.pid)) < 4 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(group_processes(process.pid)) >= 4, "no worker started"
        os.killpg(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130
    assert err.strip().splitlines()[-1] == \
        f"interrupted: nothing was written ({results} is not there)"
    assert "Traceback" not in err and not results.exists() and no_partial_files(tmp_path)
    deadline = time.monotonic() + 10
    while group_processes(process.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not group_processes(process.pid)


@pytest.mark.parametrize("which", ["gradescope", "prairielearn"])
def test_ctrl_c_while_a_job_starts_exits_130_without_a_traceback(which, tmp_path):
    """While the grader is still importing (numpy's C extensions too, which would turn the
    KeyboardInterrupt into an ImportError and a page of advice), `python -m puzzles` says it
    was interrupted in one line, as the command would once started."""
    args, results = job(tmp_path, which)
    process = subprocess.Popen(
        [sys.executable, "-m", "puzzles", *args], cwd=ROOT, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True,
        preexec_fn=python_ctrl_c)
    wait_until_importing_the_command(process)
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130
    assert err.strip().splitlines()[-1].startswith("interrupted") and "Traceback" not in err
    assert not results.exists()
