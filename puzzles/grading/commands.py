"""The `grade` and `build --release` commands of `python -m puzzles` (argument parsing stays in
`puzzles/cli.py`)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from puzzles.catalog import all_puzzles, find
from puzzles.grader import format_table
from puzzles.grading.assignment import LEARNER_SEED, Assignment, AssignmentError, load
from puzzles.grading.batch import grade_all
from puzzles.grading.intake import (
    IntakeError,
    Submission,
    find_submissions,
    read_roster,
    skipped_entries,
)
from puzzles.grading.integrity import clean_text
from puzzles.grading.outputs import gradescope, strict_json, write_all
from puzzles.grading.release import build_release
from puzzles.grading.similarity import ranked_pairs


def grade(path: Path, *, assignment: Path | None = None, out: Path | None = None,
          jobs: int = 1, puzzles: list[str] | None = None, json_path: Path | None = None,
          seed: int | None = None, gradescope_path: Path | None = None,
          roster: Path | None = None) -> int:
    """Grade one notebook (a table; exit 0 iff every graded puzzle passes, 1 otherwise) or a
    folder of submissions (the outputs under `out`; exit 0 iff every submission was graded).
    Exit 2 when something could not be graded. `gradescope_path` (one notebook) also writes
    Gradescope's results.json there, as its autograder expects. `roster` (a CSV of ids) adds
    a "missing" row for each student without a submission."""
    try:
        plan = _assignment(assignment, puzzles, seed)
        ids = read_roster(roster) if roster is not None else None
    except (AssignmentError, IntakeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
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
    single = path.is_file() and out is None
    result = grade_all(submissions, plan, jobs,
                       progress=(lambda _line: None) if single else None)
    if single:
        outcome = result.outcomes[0]
        if gradescope_path is not None:
            gradescope_path.parent.mkdir(parents=True, exist_ok=True)
            gradescope_path.write_text(strict_json(gradescope(outcome, plan)), encoding="utf-8")
        if outcome.error:
            print(f"error: {clean_text(outcome.error)}", file=sys.stderr)
            return 2
        print(format_table(outcome.rows))
        if json_path is not None:
            json_path.write_text(strict_json(outcome.rows), encoding="utf-8")
        return 0 if all(row["status"] == "pass" for row in outcome.rows) else 1
    assert out is not None
    kernels = {o.submission.id: {n: text for n, text in o.kernels.items()
                                 if any(row["puzzle"] == n for row in o.rows)}
               for o in result.outcomes if not o.error}
    pairs = ranked_pairs(kernels, {p.number: p.solution() for p in all_puzzles()},
                         {p.number: p.template for p in all_puzzles()})
    write_all(out, result, plan, pairs, notes)
    if json_path is not None:
        json_path.write_text(strict_json({o.submission.id: o.rows for o in result.outcomes}),
                             encoding="utf-8")
    failed = [o for o in result.outcomes if o.error and not o.submission.missing]
    missing = [o.submission.id for o in result.outcomes if o.submission.missing]
    handed_in = len(submissions) - len(missing)
    print(f"graded {handed_in - len(failed)} of {handed_in} submissions in "
          f"{result.seconds:.1f} s with {jobs} job(s); peak memory of the process tree "
          f"{result.peak_memory_bytes / 2**20:.0f} MiB; hidden cases drawn per submission "
          f"from seed {result.seed}; wrote {out}")
    if missing:
        print(clean_text(f"missing (on the roster, nothing handed in): {', '.join(missing)}"))
    for pair in pairs[:10]:
        print(clean_text(f"similar: {pair.first} and {pair.second}: identical non-trivial "
                         f"kernels on puzzle(s) {', '.join(map(str, pair.puzzles))}"))
    if len(pairs) > 10:
        print(f"similar: {len(pairs) - 10} more pair(s) in {out / 'similarity.csv'}")
    for outcome in failed:
        print(clean_text(f"{outcome.status.upper()}: {outcome.submission.id}: {outcome.error}"))
    return 2 if failed else 0


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
    return plan.with_seed()


def release(out: Path) -> int:
    """Write the student release and the solutions bundle."""
    files = build_release(out)
    print(f"wrote {len(files)} files: {out / 'student'} (for students) and "
          f"{out / 'solutions'} (the solutions bundle, to publish later)")
    return 0
