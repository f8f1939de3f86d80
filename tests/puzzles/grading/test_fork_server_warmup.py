"""The fork server's warm-up: a worker forked from it has nothing left to import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat

from puzzles.catalog import find
from tests.puzzles.grading.classroom import learner, solve

ROOT = Path(__file__).resolve().parents[3]
# In a fresh interpreter: the fork server's preloads, then one submission graded as a worker
# grades it; prints the modules the grading imported.
WORKER = """
import importlib, json, sys
from pathlib import Path
from puzzles.grading.intake import find_submissions
from puzzles.grading.sandbox import FORK_SERVER_PRELOAD, work
for name in FORK_SERVER_PRELOAD:
    importlib.import_module(name)
before = set(sys.modules)

class Sender:
    def send(self, message):
        print(*message[:2] if message[0] != "row" else ("status", message[1]["status"]),
              file=sys.stderr)

    def close(self):
        pass

submission, = find_submissions(Path(sys.argv[1]))
work(Sender(), submission.files, [1, 8], 5, "s", 4 << 30, frozenset())
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_grading_a_submission_after_the_preloads_imports_no_module(tmp_path):
    student = tmp_path / "student"
    student.mkdir()
    threads, memory = learner("01_threads.ipynb"), learner("02_threadgroup_memory.ipynb")
    solve(threads, 1)
    solve(memory, 8, find(8).solution().replace("+ 10", "+ 9"))  # wrong
    nbformat.write(threads, student / "01_threads.ipynb")
    nbformat.write(memory, student / "02_threadgroup_memory.ipynb")
    done = subprocess.run([sys.executable, "-c", WORKER, str(tmp_path)], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    statuses = [line for line in done.stderr.splitlines() if line.startswith("status")]
    assert statuses == ["status pass", "status fail"]  # both kernels were simulated
    assert json.loads(done.stdout) == []
