"""Grade a generated class (tests/puzzles/grading/classroom.py) with one `python -m puzzles
grade ... --jobs N` command; report the wall time, the CPU time of all its processes, and
memory: the grader's own peak over the whole run (the parent, which must stay flat whatever the
class size), the largest worker's, and the whole process tree's.

    python benchmarks/bench_grader.py [--jobs 2] [--copies 1]      # the 40 kinds, attacks too
    python benchmarks/bench_grader.py --students 3000              # a class of 3,000
    python benchmarks/bench_grader.py --slow 4                     # the per-submission budget

`--copies 3` grades three copies of the class (120 submissions). `--students N` grades N
submissions cycling through the class's ordinary kinds (no attacks: their limits, not the
grader, would set the time); each copy is a student of its own, with hidden cases of its own.
`--slow K` grades K submissions whose every puzzle of chapter 1 runs past the per-puzzle limit
(2 s): seven puzzles would hold a worker 14 s, the submission budget (5 s) stops each at 5 s
of worker time, over the turns it gets (each timeout sends it to the back of the queue).
`--keep DIR` keeps what the grader wrote (grades.csv, grades.json, ...) in DIR.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def classroom():
    path = ROOT / "tests" / "puzzles" / "grading" / "classroom.py"
    spec = importlib.util.spec_from_file_location("classroom", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["classroom"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


SLOW_TOML = """\
[assignment]
name = "slow submissions"
seed = 4242
time_limit = 2
submission_time_limit = 5
""" + "".join(f"\n[[puzzles]]\npuzzle = {n}\npoints = 1\n" for n in range(1, 8))


def write_students(cls, folder: Path, count: int) -> str:
    """`count` submissions cycling through the class's ordinary kinds (notebooks hard-linked,
    so a class of 10,000 takes little disk); returns the assignment."""
    kinds = folder.parent / "kinds"
    expected = cls.write_class(kinds)
    ordinary = sorted(sid for sid, e in expected.items()
                      if e.graded and not e.attack and (kinds / sid).is_dir())
    for k in range(count):
        source = kinds / ordinary[k % len(ordinary)]
        shutil.copytree(source, folder / f"{k:05d}-{source.name}", copy_function=os.link)
    return cls.ASSIGNMENT_TOML


def write_slow(cls, folder: Path, count: int) -> str:
    """`count` submissions whose every chapter-1 puzzle runs past the limit."""
    import nbformat

    from puzzles.catalog import find

    nb = cls.learner("01_threads.ipynb")
    for number in range(1, 8):
        slow = ("uint local_i = thread_position_in_grid.x;\nfloat acc = 0;\n"
                "for (int k = 0; k < 100000000; k++) { acc += simd_sum(a[0]) * 0.5f; }\n"
                "if (acc == 1.5f) { out[0] = 0; }\n")
        cls.solve(nb, find(number).number, slow)
    for k in range(count):
        (folder / f"slow-{k}").mkdir(parents=True)
        nbformat.write(nb, folder / f"slow-{k}" / "01_threads.ipynb")
    return SLOW_TOML


def write_copies(cls, folder: Path, copies: int) -> str:
    first = folder.parent / "first"
    cls.write_class(first)
    for copy in range(copies):
        for entry in first.iterdir():
            target = folder / (f"{entry.name}" if copy == 0 else f"c{copy}-{entry.name}")
            target.parent.mkdir(parents=True, exist_ok=True)
            (shutil.copytree if entry.is_dir() else shutil.copy2)(entry, target)
    return cls.ASSIGNMENT_TOML


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--copies", type=int, default=1)
    parser.add_argument("--students", type=int, help="a class of this many ordinary students")
    parser.add_argument("--slow", type=int, help="this many slow submissions")
    parser.add_argument("--keep", type=Path, help="copy the grader's outputs here")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    cls = classroom()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        submissions = root / "submissions"
        submissions.mkdir()
        if args.slow:
            toml = write_slow(cls, submissions, args.slow)
        elif args.students:
            toml = write_students(cls, submissions, args.students)
        else:
            toml = write_copies(cls, submissions, args.copies)
        (root / "assignment.toml").write_text(toml)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "puzzles", "grade", str(submissions), "--assignment",
             str(root / "assignment.toml"), "--out", str(root / "out"), "--jobs",
             str(args.jobs)], cwd=ROOT, env=env, capture_output=True, text=True)
        wall = time.monotonic() - started
        if args.keep:
            shutil.copytree(root / "out", args.keep, dirs_exist_ok=True)
        sizes = {name: (root / "out" / name).stat().st_size / 2**20
                 for name in ("grades.json", "grades.jsonl", "grades.csv")}
        report = json.loads((root / "out" / "grades.json").read_text())
    largest = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    statuses: dict[str, int] = {}
    for student in report["students"]:
        for row in student["rows"]:
            statuses[row["status"]] = statuses.get(row["status"], 0) + 1
    graded = sum(s["graded"] for s in report["students"])
    summary = re.search(r"grader (\d+) MiB", done.stdout)
    print(f"{len(report['students'])} submissions, --jobs {args.jobs}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}: exit code {done.returncode}, "
          f"{graded} graded")
    print(f"wall time of the command: {wall:.1f} s (grading itself: {report['seconds']:.1f} s); "
          f"CPU time of all its processes: {report['cpu_seconds']:.1f} s "
          f"({report['cpu_seconds'] / max(len(report['students']), 1):.3f} s per student)")
    print(f"peak memory: grader (parent, whole run) {summary.group(1) if summary else '?'} MiB; "
          f"largest worker {report['largest_worker_memory_bytes'] / 2**20:.0f} MiB; process "
          f"tree <= {report['peak_memory_bytes'] / 2**20:.0f} MiB; largest single process "
          f"(RUSAGE_CHILDREN) {largest:.0f} MiB")
    print("outputs: " + ", ".join(f"{name} {mib:.1f} MiB" for name, mib in sizes.items()))
    print("statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())))
    if args.slow:
        seconds = [s["seconds"] for s in report["students"]]
        print(f"slow submissions: each held its worker {min(seconds):.1f}-{max(seconds):.1f} s "
              f"(budget {report['limits']['seconds_per_submission']:g} s; without it 7 puzzles "
              f"x {report['limits']['seconds_per_puzzle']:g} s = "
              f"{7 * report['limits']['seconds_per_puzzle']:g} s)")


if __name__ == "__main__":
    main()
