"""Grade the generated test class (tests/puzzles/grading/classroom.py: 40 submissions, attacks
included) with one `python -m puzzles grade ... --jobs N` command; report the wall time, the
grader's own time, the CPU time of all its processes (what an idle machine would need,
over its cores), and memory: the peak of the whole process tree (sum of each live process's
peak resident size, sampled) and the largest single process (RUSAGE_CHILDREN).

    python benchmarks/bench_grader.py [--jobs 2] [--copies 1]

`--copies 3` grades three copies of the class (120 submissions); `--keep DIR` keeps what the
grader wrote (grades.csv, grades.json, ...) in DIR. Each copy is a student of its own, so its
hidden cases are its own too.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--copies", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="copy the grader's outputs here")
    args = parser.parse_args()
    cls = classroom()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        submissions = root / "submissions"
        expected = cls.write_class(root / "first")
        for copy in range(args.copies):
            for entry in (root / "first").iterdir():
                target = submissions / (f"{entry.name}" if copy == 0 else f"c{copy}-{entry.name}")
                target.parent.mkdir(parents=True, exist_ok=True)
                (shutil.copytree if entry.is_dir() else shutil.copy2)(entry, target)
        (root / "assignment.toml").write_text(cls.ASSIGNMENT_TOML)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "puzzles", "grade", str(submissions), "--assignment",
             str(root / "assignment.toml"), "--out", str(root / "out"), "--jobs",
             str(args.jobs)], cwd=ROOT, env=env, capture_output=True, text=True)
        wall = time.monotonic() - started
        report = json.loads((root / "out" / "grades.json").read_text())
        if args.keep is not None:
            shutil.copytree(root / "out", args.keep, dirs_exist_ok=True)
    largest = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    statuses: dict[str, int] = {}
    for student in report["students"]:
        for row in student["rows"]:
            statuses[row["status"]] = statuses.get(row["status"], 0) + 1
    graded = sum(s["graded"] for s in report["students"])
    print(f"{len(report['students'])} submissions ({len(expected)} kinds x {args.copies}), "
          f"--jobs {args.jobs}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f}: exit code {done.returncode}, {graded} graded")
    print(f"wall time of the command: {wall:.1f} s (grading itself: {report['seconds']:.1f} s); "
          f"CPU time of all its processes: {report['cpu_seconds']:.1f} s")
    print(f"peak memory of the process tree: <= {report['peak_memory_bytes'] / 2**20:.0f} MiB; "
          f"largest single process: {largest:.0f} MiB")
    print("statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())))
    for student in report["students"]:
        if not student["graded"]:
            print(f"not graded: {student['id']}: {student['error'][:100]}")


if __name__ == "__main__":
    main()
