"""`python -m puzzles`: list the puzzles, check kernels, grade notebooks, build notebooks.

    python -m puzzles list
    python -m puzzles check --solutions [--json]     # exit 0 iff every reference solution passes
    python -m puzzles check PUZZLE --source FILE [--seed S]  # exit 0 iff it passes
    python -m puzzles grade NOTEBOOK.ipynb [--puzzle P ...] [--json FILE]   # 0 iff all pass
    python -m puzzles grade SUBMISSIONS/ --assignment A.toml --out DIR [--jobs N] [--roster CSV]
        [--resume | --only ID ...]     # finish a stopped run; regrade a few into DIR
    python -m puzzles grade --rescore --assignment NEW.toml --out DIR   # new points, no re-run
    python -m puzzles gradescope --assignment A.toml   # Gradescope's run_autograder
    python -m puzzles gradescope-files DIR             # write setup.sh and run_autograder
    python -m puzzles prairielearn --assignment A.toml # PrairieLearn's external grader
    python -m puzzles classroom-workflow --template O/R --commit SHA --assignment A.toml
    python -m puzzles build [--root DIR] [--release DIR]
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from puzzles.catalog import ROOT, all_puzzles, find

# The simulator (`puzzles.checking`), the grader and nbformat (`grading`, `notebooks`) are imported
# by the commands that need them: `list` should start as fast as importing MLX and numpy.

# Column names: max per thread of global reads/writes, threadgroup reads/writes, atomics.
SHORT = {"global_reads": "GR", "global_writes": "GW", "threadgroup_reads": "TR",
         "threadgroup_writes": "TW", "atomics": "AT"}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m puzzles", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="chapters and puzzles")
    check = commands.add_parser("check", help="check reference solutions or one kernel body")
    check.add_argument("puzzle", nargs="?", help="number, slug or title of a puzzle")
    check.add_argument("--source", type=Path, help="file holding the kernel body")
    check.add_argument("--header", type=Path, help="file holding the header (default: the "
                       "puzzle's own)")
    check.add_argument("--solutions", action="store_true", help="check every reference solution")
    check.add_argument("--json", action="store_true", help="print JSON instead of text")
    check.add_argument("--seed", type=int, default=0, help="draw the hidden cases from this "
                       "seed: a row's `seed` in grades.json reproduces the grader's verdict")
    grade = commands.add_parser(
        "grade", help="grade a notebook, or a folder of submissions (runs no learner Python)")
    grade.add_argument("path", type=Path, nargs="?", help="a notebook (or .zip of notebooks), "
                       "or a folder with one notebook, .zip or folder per student")
    grade.add_argument("--assignment", type=Path, metavar="TOML",
                       help="assigned puzzles, points, partial credit, limits, secret seed")
    grade.add_argument("--out", type=Path, metavar="DIR", help="write grades.csv, grades.json, "
                       "results/<id>/results.json and feedback/<id>.md here")
    grade.add_argument("--jobs", type=int, default=1, help="submissions graded at once")
    grade.add_argument("--puzzle", action="append", metavar="P",
                       help="grade only this puzzle (number, slug or title); repeatable")
    grade.add_argument("--json", type=Path, metavar="FILE", help="also write the rows as JSON")
    grade.add_argument("--gradescope", type=Path, metavar="FILE", help="one notebook: also "
                       "write Gradescope's results.json (e.g. /autograder/results/results.json)")
    grade.add_argument("--metadata", type=Path, metavar="JSON", help="with --gradescope: "
                       "Gradescope's submission_metadata.json (the submission id the hidden "
                       "cases are drawn for, the submission time for the late policy; default "
                       "/autograder/submission_metadata.json)")
    grade.add_argument("--seed", type=int, help="seed of the hidden cases (default: the "
                       "assignment's, else a random one, recorded in grades.json)")
    grade.add_argument("--roster", type=Path, metavar="CSV", help="the class's student ids "
                       "(column `id`, or the first): those without a submission get a "
                       "\"missing\" row; optional columns `submitted`, `due` and "
                       "`extension_days` for the late policy")
    grade.add_argument("--resume", action="store_true", help="finish an interrupted run: grade "
                       "only the submissions --out's journal (grades.jsonl) does not hold")
    grade.add_argument("--only", nargs="+", metavar="ID", help="regrade these students and "
                       "merge them into the existing --out")
    grade.add_argument("--rescore", action="store_true", help="rebuild --out from its journal "
                       "with the assignment's points (no PATH; nothing is simulated)")
    scope = commands.add_parser("gradescope", help="Gradescope's run_autograder: grade the upload "
                                "folder as one submission and write results.json")
    scope.add_argument("--assignment", type=Path, metavar="TOML", required=True)
    scope.add_argument("--submission", type=Path, default=Path("/autograder/submission"))
    scope.add_argument("--metadata", type=Path,
                       default=Path("/autograder/submission_metadata.json"))
    scope.add_argument("--results", type=Path,
                       default=Path("/autograder/results/results.json"))
    scope.add_argument("--roster", type=Path, metavar="CSV", help="extensions: students' "
                       "own `due` or `extension_days`, by email or Gradescope id in `id`")
    prairie = commands.add_parser("prairielearn", help="PrairieLearn's external grader: grade "
                                  "/grade/student and write /grade/results/results.json")
    prairie.add_argument("--assignment", type=Path, metavar="TOML", required=True)
    prairie.add_argument("--root", type=Path, default=Path("/grade"),
                         help="the job's folder (default /grade)")
    prairie.add_argument("--timeout", type=float, default=30.0,
                         help="the job's timeout in seconds (info.json's, default 30)")
    scope_files = commands.add_parser("gradescope-files", help="write Gradescope's setup.sh and "
                                      "run_autograder into DIR")
    scope_files.add_argument("dir", type=Path)
    scope_files.add_argument("--assignment-name", default="assignment.toml",
                             help="the assignment file's name at the autograder zip's root")
    classroom = commands.add_parser("classroom-workflow", help="write GitHub Classroom's "
                                    "workflow: the grader from the template at a pinned commit")
    classroom.add_argument("--template", required=True, metavar="OWNER/REPO",
                           help="the instructor's template repository")
    classroom.add_argument("--commit", required=True, metavar="SHA",
                           help="the template's commit to grade with (full SHA)")
    classroom.add_argument("--assignment", required=True, metavar="TOML",
                           help="the assignment file, a path inside the template (run this "
                           "from the template's root)")
    classroom.add_argument("--token-secret", metavar="NAME", help="a private template: the "
                           "repository secret holding a read-only token for it")
    classroom.add_argument("--out", type=Path, default=Path(".github/workflows/classroom.yml"))
    build = commands.add_parser("build", help="regenerate notebooks/ and solutions/notebooks/")
    build.add_argument("--root", type=Path, default=ROOT,
                       help="write under this folder instead of the repository")
    build.add_argument("--release", type=Path, metavar="DIR", help="write a student release "
                       "(DIR/student) and a solutions bundle (DIR/solutions) instead")
    args = parser.parse_args(argv)
    if args.command == "list":
        return _list()
    if args.command == "check":
        if args.solutions:
            return _check_solutions(args.json)
        if args.puzzle is None or args.source is None:
            parser.error("check needs --solutions, or a PUZZLE and --source FILE")
        return _check_one(args.puzzle, args.source, args.header, args.json, args.seed)
    if args.command == "grade":
        if (args.resume or args.only or args.rescore) and args.out is None:
            parser.error("--resume, --only and --rescore work on an existing --out DIR")
        if args.path is None and not args.rescore:
            parser.error("grade needs a notebook or a folder of submissions")
        if args.path is not None and args.path.is_dir() and args.out is None:
            parser.error("grading a folder needs --out DIR")
        if args.gradescope is not None and (args.path.is_dir() or args.out is not None):
            parser.error("--gradescope is for one notebook (a folder writes results/<id>/)")
        if args.metadata is not None and args.gradescope is None:
            parser.error("--metadata goes with --gradescope")
        if args.gradescope is not None and args.metadata is None:
            args.metadata = Path("/autograder/submission_metadata.json")
        from puzzles.grading import commands as grading

        return grading.grade(args.path, assignment=args.assignment, out=args.out,
                              jobs=args.jobs, puzzles=args.puzzle, json_path=args.json,
                              seed=args.seed, gradescope_path=args.gradescope,
                              metadata=args.metadata, roster=args.roster,
                              resume=args.resume, only=args.only, rescore=args.rescore)
    if args.command == "gradescope":
        from puzzles.grading import commands as grading

        return grading.gradescope_autograder(args.assignment, args.submission, args.metadata,
                                             args.results, args.roster)
    if args.command == "prairielearn":
        from puzzles.grading import commands as grading

        return grading.prairielearn_job(args.assignment, args.root, args.timeout)
    if args.command == "classroom-workflow":
        from puzzles.grading import commands as grading

        return grading.classroom_workflow(args.template, args.commit, args.assignment,
                                          args.token_secret, args.out)
    if args.command == "gradescope-files":
        from puzzles.grading import gradescope

        for path in gradescope.write_files(args.dir, args.assignment_name):
            print(f"wrote {path}")
        return 0
    if args.release is not None:
        from puzzles.grading import commands as grading

        return grading.release(args.release)
    from puzzles import notebooks

    for path in notebooks.build(args.root):
        print(f"wrote {path}")
    return 0


def _list() -> int:
    chapter = None
    for p in all_puzzles():
        if p.chapter != chapter:
            chapter = p.chapter
            title = getattr(importlib.import_module(f"puzzles.{chapter}"), "TITLE", "")
            print(f"{chapter}: {title}" if title else chapter)
        budget = " ".join(f"{SHORT[k]} {v}" for k, v in p.budget.limits().items())
        aliases = f" (also {', '.join(p.titles[1:])})" if len(p.titles) > 1 else ""
        print(f"  {p.number:>2}  {p.title}{aliases}  [{p.slug}]  budget: {budget or 'none'}")
    return 0


def _check_solutions(as_json: bool) -> int:
    from puzzles.checking import COUNT_NAMES, check_kernel

    results = [check_kernel(p, p.solution()) for p in all_puzzles()]
    if as_json:
        print(json.dumps([r.to_json() for r in results], indent=2))
    else:
        print(f"{'#':>3}  {'puzzle':<22} {'status':<12} "
              + " ".join(f"{SHORT[n]:>3}" for n in COUNT_NAMES))
        for r in results:
            counts = " ".join(f"{r.counts[n]:>3}" for n in COUNT_NAMES)
            print(f"{r.number:>3}  {r.title:<22} {r.status:<12} {counts}  {r.reason}".rstrip())
        passed = sum(r.passed for r in results)
        print(f"{passed} of {len(results)} reference solutions passed")
    return 0 if all(r.passed for r in results) else 1


def _check_one(key: str, source: Path, header: Path | None, as_json: bool,
               seed: int = 0) -> int:
    puzzle = find(key)
    if puzzle is None:
        print(f"no puzzle {key!r}; `python -m puzzles list` shows them", file=sys.stderr)
        return 2
    try:
        body = source.read_text(encoding="utf-8")
        head = header.read_text(encoding="utf-8") if header else None
    except OSError as exc:
        print(f"cannot read {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 2
    except UnicodeDecodeError as exc:
        print(f"cannot read the kernel: it is not UTF-8 text ({exc.reason} at byte "
              f"{exc.start})", file=sys.stderr)
        return 2
    from puzzles.checking import check_kernel
    from puzzles.grading.integrity import clean_text

    result = check_kernel(puzzle, body, head, seed=seed)
    print(json.dumps(result.to_json(), indent=2) if as_json else clean_text(result.text))
    return 0 if result.passed else 1
