"""The `grade` and `build --release` commands of `python -m puzzles` (argument parsing stays in
`puzzles/cli.py`)."""

from __future__ import annotations

import signal
import sys
import time
from dataclasses import replace
from pathlib import Path

from puzzles.catalog import find
from puzzles.grader import format_table
from puzzles.grading import late_policy
from puzzles.grading.assignment import LEARNER_SEED, Assignment, AssignmentError, load
from puzzles.grading.atomic import FileSet, write_text
from puzzles.grading.batch import grade_all, peak_memory_of_this_process
from puzzles.grading.classroom import WorkflowError, workflow
from puzzles.grading.gradescope import run_autograder
from puzzles.grading.intake import (
    IntakeError,
    Submission,
    find_submissions,
    read_roster,
    skipped_entries,
)
from puzzles.grading.integrity import clean_text
from puzzles.grading.journal import JOURNAL, Header, Journal, JournalError, record
from puzzles.grading.late_policy import Lateness
from puzzles.grading.lms_exports import read_roster_details
from puzzles.grading.outputs import as_scored, write_gradebook, write_student_files
from puzzles.grading.overrides import Overrides, OverridesError
from puzzles.grading.prairielearn import grade_job, results_path
from puzzles.grading.sandbox import Outcome
from puzzles.grading.strict_json import strict_json, strict_json_line


def grade(path: Path | None, *, assignment: Path | None = None, out: Path | None = None,
          jobs: int = 1, puzzles: list[str] | None = None, json_path: Path | None = None,
          seed: int | None = None, gradescope_path: Path | None = None,
          metadata: Path | None = None, roster: Path | None = None, resume: bool = False,
          only: list[str] | None = None, rescore: bool = False) -> int:
    """Grade one notebook (a table; exit 0 iff every graded puzzle passes, 1 otherwise) or a
    folder of submissions (the outputs under `out`; exit 0 iff every submission was graded).
    Exit 2 when something could not be graded, 130 when interrupted, wherever that happens
    (every file is written whole, see `atomic`; `resume` finishes the run). `gradescope_path`
    (one notebook) also writes Gradescope's results.json there, as its autograder expects,
    for the submission `metadata` (submission_metadata.json) describes. `roster` (a CSV of
    ids) adds a "missing" row for each student without a submission, and gives submission
    times and extensions (see `late_policy`). `only` regrades those ids into the existing
    `out`; `rescore` rebuilds `out` from its journal with the assignment's points,
    simulating nothing."""
    one_notebook = [] if out is not None else [p for p in (gradescope_path, json_path) if p]
    before = {p: _file_state(p) for p in one_notebook}
    try:
        return _grade(path, assignment=assignment, out=out, jobs=jobs, puzzles=puzzles,
                      json_path=json_path, seed=seed, gradescope_path=gradescope_path,
                      metadata=metadata, roster=roster, resume=resume, only=only,
                      rescore=rescore)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C: no traceback either
        print(f"\n{clean_text(_interrupted(out, rescore, before))}", file=sys.stderr)
        return 130


def _interrupted(out: Path | None, rescore: bool,
                 before: dict[Path, tuple[int, int] | None]) -> str:
    """What an interrupted run left behind, and how to finish it (`before`: the state of
    the files one notebook's grading writes, see `_file_state`)."""
    if out is None:
        written = [str(p) for p, state in before.items() if _file_state(p) != state]
        if written:
            return f"interrupted once {' and '.join(written)} was written (whole)"
        return "interrupted: nothing was written"
    if rescore:
        return (f"interrupted: the gradebook in {out} is as it was (its files are replaced "
                "together); run --rescore again")
    try:
        kept = len(Journal.open(out).offsets)
    except JournalError:
        return "interrupted before grading began: nothing was written"
    return (f"interrupted: {kept} submission(s) graded so far are kept in {out / JOURNAL}; "
            "the same command with --resume grades the rest and writes the gradebook")


def _grade(path: Path | None, *, assignment: Path | None, out: Path | None, jobs: int,
           puzzles: list[str] | None, json_path: Path | None, seed: int | None,
           gradescope_path: Path | None, metadata: Path | None, roster: Path | None,
           resume: bool, only: list[str] | None, rescore: bool) -> int:
    try:
        plan = _assignment(assignment, puzzles, seed)
        ids = read_roster(roster) if roster is not None else None
        details = read_roster_details(roster) if roster is not None else {}
        lateness = late_policy.from_roster(details, plan)
        overrides = Overrides.load(out) if out is not None else Overrides({})
        if rescore:
            assert out is not None
            return _rescore(out, plan, details)
    except (AssignmentError, IntakeError, JournalError, OverridesError) as exc:
        print(f"error: {clean_text(str(exc))}", file=sys.stderr)
        return 2
    assert path is not None
    if not path.exists() and not path.is_symlink():
        print(f"error: {path} does not exist", file=sys.stderr)
        return 2
    submissions = find_submissions(path)
    for name in skipped_entries(path):
        print(clean_text(f"skipped: {name!r} is not a notebook (.ipynb), .zip or folder"),
              file=sys.stderr)
    notes: dict[str, list[str]] = {}
    if ids is not None:
        handed_in = {s.id for s in submissions}
        for s in submissions:
            if s.id not in ids:
                notes[s.id] = ["not on the roster"]
        submissions += [Submission(sid, (), missing=True) for sid in ids if sid not in handed_in]
    if not submissions:
        print(f"error: no notebook (.ipynb), .zip or folder in {path}", file=sys.stderr)
        return 2
    if out is None:
        return _one_notebook(submissions, plan, jobs, json_path, gradescope_path, metadata,
                             details)
    try:
        journal, plan, todo = _journal(out, plan, submissions, resume, only)
    except JournalError as exc:
        print(f"error: {clean_text(str(exc))}", file=sys.stderr)
        return 2
    failed: list[tuple[str, str, str]] = []

    def keep(outcome: Outcome) -> None:
        """A student's files, then their journal line: a crash between the two regrades
        them on --resume."""
        sid = outcome.submission.id
        late = lateness.get(sid) or _recorded_lateness(journal, sid)
        write_student_files(out, as_scored(outcome, plan, overrides, late), plan)
        journal.append(record(outcome, notes.get(sid, []), late.to_json() if late else None))
        if outcome.error and not outcome.submission.missing:
            failed.append((sid, outcome.status, outcome.error))

    result = grade_all(todo, plan, jobs, on_outcome=keep)
    memory = result.memory
    _, pairs = write_gradebook(out, journal, plan, {
        "seconds": round(result.seconds, 3), "cpu_seconds": round(result.cpu_seconds, 2),
        "peak_memory_bytes": memory.tree_bytes, "parent_peak_memory_bytes": memory.parent_bytes,
        "largest_worker_memory_bytes": memory.largest_worker_bytes}, roster=details)
    memory = replace(memory, parent_bytes=peak_memory_of_this_process())
    if json_path is not None:
        _write_rows(json_path, journal)
    missing = [s.id for s in todo if s.missing]
    handed_in = len(todo) - len(missing)
    print(f"graded {handed_in - len(failed)} of {handed_in} submissions in "
          f"{result.seconds:.1f} s with {jobs} job(s) ({result.cpu_seconds:.1f} s of CPU); "
          f"peak memory: grader {memory.parent_bytes / 2**20:.0f} MiB, largest worker "
          f"{memory.largest_worker_bytes / 2**20:.0f} MiB, process tree "
          f"{memory.tree_bytes / 2**20:.0f} MiB; hidden cases drawn per submission from seed "
          f"{result.seed}; {len(journal.offsets)} student(s) in {out}")
    if missing:
        print(clean_text(f"missing (on the roster, nothing handed in): {', '.join(missing)}"))
    for pair in pairs[:10]:
        print(clean_text(f"similar: {pair.first} and {pair.second}: identical non-trivial "
                         f"kernels on puzzle(s) {', '.join(map(str, pair.puzzles))}"))
    if len(pairs) > 10:
        print(f"similar: {len(pairs) - 10} more pair(s) in {out / 'similarity.csv'}")
    for sid, status, error in failed:
        print(clean_text(f"{status.upper()}: {sid}: {error}"))
    return 2 if failed else 0


def _one_notebook(submissions: list[Submission], plan: Assignment, jobs: int,
                  json_path: Path | None, gradescope_path: Path | None,
                  metadata: Path | None, roster: dict[str, dict[str, str]]) -> int:
    """Grade one notebook and print its table (with `gradescope_path`, as Gradescope's
    autograder grades it: see `gradescope.run_autograder`)."""
    if gradescope_path is not None:
        outcome, _ = run_autograder(submissions[0].files[0], gradescope_path, plan, metadata,
                                    roster)
    else:
        outcome = grade_all(submissions, plan.with_seed(), jobs,
                            progress=lambda _line: None).outcomes[0]
    if outcome.error:
        print(f"error: {clean_text(outcome.error)}", file=sys.stderr)
        return 2
    print(format_table(outcome.rows))
    if json_path is not None:
        write_text(json_path, strict_json(outcome.rows))
    return 0 if all(row["status"] == "pass" for row in outcome.rows) else 1


def _recorded_lateness(journal: Journal, sid: str) -> Lateness | None:
    """The times a student's earlier line recorded (a regrade with --only and no roster keeps
    their late policy)."""
    if sid not in journal.offsets:
        return None
    return Lateness.from_json(journal.read(sid).get("late"))


def _journal(out: Path, plan: Assignment, submissions: list[Submission], resume: bool,
             only: list[str] | None) -> tuple[Journal, Assignment, list[Submission]]:
    """The journal to append to, the plan with its seed (the journal's where one goes on; an
    assignment's own seed must be the same), and the
    submissions left to grade: all of them for a new run; those without a line for
    `resume`; the ones named for `only`."""
    if not resume and not only:
        plan = plan.with_seed()
        header = Header(int(plan.seed or 0), list(plan.points) or None, plan.name,
                        tuple(s.id for s in submissions))
        return Journal.start(out, header), plan, submissions
    journal = Journal.open(out)
    if journal.header.puzzles != (list(plan.points) or None):
        before = journal.header.puzzles or "by chapter"
        raise JournalError(f"{journal.path} grades puzzles {before}, this assignment "
                           f"{list(plan.points) or 'by chapter'}: grade the class again "
                           "without --resume/--only")
    if plan.seed is not None and plan.seed != journal.header.seed:
        raise JournalError(f"{journal.path} drew hidden cases from another seed than this "
                           "assignment's: grade the class again without --resume/--only")
    plan = replace(plan, seed=journal.header.seed)
    if resume:
        return journal, plan, [s for s in submissions if s.id not in journal.offsets]
    found = {s.id: s for s in submissions}
    unknown = [sid for sid in only or [] if sid not in found]
    if unknown:
        raise JournalError(f"no submission with id {', '.join(map(repr, unknown))} in the "
                           "folder (ids are the submissions' file or folder names)")
    return journal, plan, [found[sid] for sid in dict.fromkeys(only or [])]


def _rescore(out: Path, plan: Assignment, roster: dict[str, dict[str, str]]) -> int:
    """Rebuild the gradebook and each student's files from the journal with new points."""
    journal = Journal.open(out)
    graded = journal.header.puzzles
    if graded is not None and set(plan.points) - set(graded):
        raise JournalError(f"puzzle(s) {sorted(set(plan.points) - set(graded))} were not "
                           "graded in this run: re-scoring cannot add puzzles; grade again")
    plan = replace(plan, seed=journal.header.seed)
    started = time.monotonic()
    written, _ = write_gradebook(out, journal, plan, {"rescored": True}, student_files=True,
                                 roster=roster)
    print(f"re-scored {len(journal.offsets)} student(s) from {journal.path} in "
          f"{time.monotonic() - started:.1f} s (nothing simulated); wrote {len(written)} files")
    return 0


def _write_rows(path: Path, journal: Journal) -> None:
    """Every student's rows as one JSON object (by id), written one student at a time."""
    with FileSet() as files:
        f = files.open(path)
        f.write("{")
        for k, line in enumerate(journal.lines()):
            f.write(("," if k else "") + "\n  " + strict_json_line(str(line["id"])) + ": "
                    + strict_json_line(line["rows"]))
        f.write("\n}\n")


def _assignment(path: Path | None, puzzles: list[str] | None, seed: int | None) -> Assignment:
    plan = load(path) if path is not None else Assignment()
    if puzzles:
        chosen = {}
        for key in puzzles:
            puzzle = find(key)
            if puzzle is None:
                raise AssignmentError(f"no puzzle {key!r} (`python -m puzzles list` shows them)")
            if plan.points and puzzle.number not in plan.points:
                raise AssignmentError(f"puzzle {puzzle.number} is not in the assignment")
            chosen[puzzle.number] = plan.points_of(puzzle.number)
        plan = replace(plan, points=chosen)
    if seed is not None:
        if seed == LEARNER_SEED:
            raise AssignmentError(f"seed {LEARNER_SEED} is the one learners' check() uses; "
                                  "the grader needs a secret one")
        plan = replace(plan, seed=seed)
    return plan


def gradescope_autograder(assignment: Path, submission: Path, metadata: Path,
                          results: Path, roster: Path | None = None) -> int:
    """Grade Gradescope's upload folder and write its results.json (exit 0 once written);
    `roster` gives students' own due dates (by email or Gradescope id, see `late_policy`).
    Ctrl-C stops it as it stops `grade` (see `_job_interrupted`)."""
    before = _file_state(results)
    try:
        return _gradescope_autograder(assignment, submission, metadata, results, roster)
    except KeyboardInterrupt:
        return _job_interrupted(results, before)


def _gradescope_autograder(assignment: Path, submission: Path, metadata: Path,
                           results: Path, roster: Path | None) -> int:
    try:
        plan = load(assignment)
        details = read_roster_details(roster) if roster is not None else {}
    except (AssignmentError, IntakeError) as exc:
        print(f"error: {clean_text(str(exc))}", file=sys.stderr)
        return 2
    _, data = run_autograder(submission, results, plan, metadata, details)
    print(clean_text(str(data["output"])))
    return 0


def prairielearn_job(assignment: Path, root: Path, timeout: float) -> int:
    """Grade PrairieLearn's job under `root` (exit 0 once results.json is written). Ctrl-C
    stops it as it stops `grade` (see `_job_interrupted`)."""
    results = results_path(root)
    before = _file_state(results)
    try:
        return _prairielearn_job(assignment, root, timeout)
    except KeyboardInterrupt:
        return _job_interrupted(results, before)


def _prairielearn_job(assignment: Path, root: Path, timeout: float) -> int:
    try:
        plan = load(assignment)
    except AssignmentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    results = grade_job(plan, root, timeout)
    print(clean_text(str(results["message"])))
    return 0


def _file_state(path: Path) -> tuple[int, int] | None:
    """What identifies `path`'s version (a whole new file is renamed over it, see `atomic`):
    its inode and modification time, or None where there is none."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_ino, stat.st_mtime_ns


def _job_interrupted(results: Path, before: tuple[int, int] | None) -> int:
    """Ctrl-C in a one-submission job (Gradescope, PrairieLearn): the workers are stopped
    already (see `batch.grade_all`); say in one line whether `results` was written (whole,
    as every file is, see `atomic`: a Ctrl-C during its renaming waits for it) and exit 130."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C: no traceback either
    if _file_state(results) != before:
        said = f"interrupted once {results} was written (whole)"
    elif before is None:
        said = f"interrupted: nothing was written ({results} is not there)"
    else:
        said = f"interrupted: {results} is as it was (from an earlier run)"
    print(f"\n{clean_text(said)}", file=sys.stderr)
    return 130


def classroom_workflow(template: str, commit: str, assignment: str, token_secret: str | None,
                       out: Path) -> int:
    """Write GitHub Classroom's workflow (see `classroom`) to `out`."""
    try:
        text = workflow(load(Path(assignment)), template, commit, assignment, token_secret)
    except (AssignmentError, WorkflowError) as exc:
        print(f"error: {clean_text(str(exc))}", file=sys.stderr)
        return 2
    write_text(out, text)
    print(f"wrote {out}: grades with {template} at {commit[:12]}")
    return 0


def release(out: Path) -> int:
    """Write the student release and the solutions bundle."""
    from puzzles.grading.release import build_release  # nbformat: see `grader.parse_notebook`

    files = build_release(out)
    print(f"wrote {len(files)} files: {out / 'student'} (for students) and "
          f"{out / 'solutions'} (the solutions bundle, to publish later)")
    return 0
