"""Gradescope's autograder: one container per submission (768 MB and 10 minutes by default).
`python -m puzzles gradescope` grades the whole upload folder as one submission (notebooks are
found by what their cells build, whatever they were named), applies the late policy (see
`late_policy`) from `submission_metadata.json` and an optional extensions roster, and writes
`results/results.json` (see `gradescope_results`); `gradescope-files DIR` writes the
`setup.sh` and `run_autograder` that install and call it.

The hidden cases are drawn for Gradescope's submission id (the metadata's `id`), so no two
submissions share them however their files are named.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from puzzles.catalog import ROOT as GRADER_ROOT
from puzzles.grading import late_policy
from puzzles.grading.assignment import Assignment
from puzzles.grading.atomic import write_text
from puzzles.grading.batch import grade_all
from puzzles.grading.gradescope_results import results_json
from puzzles.grading.intake import folder_submission
from puzzles.grading.late_policy import Lateness, parse_time
from puzzles.grading.sandbox import Outcome
from puzzles.grading.strict_json import strict_json

# What fits Gradescope's default container (768 MB, 10 minutes) with room for Python itself
# and for setting the container up: the assignment's limits are lowered to these.
CONTAINER_MEMORY_BYTES = 512 << 20
CONTAINER_SECONDS = 480.0
NO_METADATA = "submission"


@dataclass(frozen=True)
class Metadata:
    """What the grader uses of submission_metadata.json: the submission's id (the student id
    its hidden cases are drawn for), its users' emails and Gradescope ids (to find them in an
    extensions roster), when it was submitted and the assignment's due date."""

    sid: str = NO_METADATA
    users: tuple[str, ...] = ()
    submitted: datetime | None = None
    due: datetime | None = None


def container_plan(plan: Assignment) -> Assignment:
    """`plan` with limits that fit the default container."""
    limits = replace(plan.limits,
                     memory_bytes=min(plan.limits.memory_bytes, CONTAINER_MEMORY_BYTES),
                     submission_seconds=min(plan.limits.submission_seconds, CONTAINER_SECONDS))
    return replace(plan, limits=limits)


def read_metadata(path: Path) -> Metadata:
    """submission_metadata.json's fields (see `Metadata`); missing or unreadable: the
    defaults, with a warning (every such submission would draw the same hidden cases)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"warning: no submission metadata ({path}: {exc}); hidden cases are drawn for "
              f"the id {NO_METADATA!r}", file=sys.stderr)
        return Metadata()
    if not isinstance(data, dict):
        return Metadata()
    users = [u for u in data.get("users") or [] if isinstance(u, dict)]
    keys = tuple(str(u[k]) for u in users for k in ("email", "id") if u.get(k) is not None)
    sid = f"gradescope-{data['id']}" if data.get("id") is not None else \
        (keys[0] if keys else NO_METADATA)
    return Metadata(sid, keys, parse_time(data.get("created_at")),
                    parse_time((data.get("assignment") or {}).get("due_date")))


def lateness(metadata: Metadata, plan: Assignment,
             roster: dict[str, dict[str, str]]) -> Lateness:
    """The submission's `Lateness`: its time, and the due date of the first of its users the
    extensions roster lists (by email or Gradescope id), else the metadata's."""
    plan = replace(plan, due=metadata.due or plan.due)
    extended = late_policy.from_roster(
        {key: roster[key] for key in metadata.users if key in roster}, plan)
    own = next((extended[key].due for key in metadata.users if key in extended), None)
    return Lateness(metadata.submitted, own or plan.due)


def run_autograder(submission: Path, results: Path, plan: Assignment,
                   metadata: Path | None = None, roster: dict[str, dict[str, str]] | None = None
                   ) -> tuple[Outcome, dict[str, object]]:
    """Grade `submission` (the upload folder, or one notebook) as one submission, write
    Gradescope's results.json to `results`, and return the outcome (late rows carrying their
    factor) and what was written."""
    about = read_metadata(metadata) if metadata else Metadata()
    plan = container_plan(plan.with_seed())
    outcome, = grade_all([folder_submission(submission, about.sid)], plan,
                         progress=lambda _line: None).outcomes
    outcome = late_policy.apply(outcome, plan, lateness(about, plan, roster or {}))
    data = results_json(outcome, plan, hide=[str(submission.resolve()), str(submission),
                                             str(GRADER_ROOT)])
    write_text(results, strict_json(data))
    return outcome, data


SETUP_SH = """\
#!/usr/bin/env bash
# Gradescope runs this once when it builds the autograder image.
set -euo pipefail
apt-get update && apt-get install -y python3 python3-pip python3-venv
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install -r /autograder/source/requirements.txt
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope runs this for every submission: grade the upload folder as one submission.
# Students' own due dates (extensions), if any, are in extensions.csv beside the assignment.
set -uo pipefail
cd /autograder/source
extensions=()
if [ -f /autograder/source/extensions.csv ]; then
    extensions=(--roster /autograder/source/extensions.csv)
fi
/autograder/venv/bin/python -m puzzles gradescope --assignment /autograder/source/{assignment} \\
    --submission /autograder/submission --metadata /autograder/submission_metadata.json \\
    --results /autograder/results/results.json "${{extensions[@]}}"
"""


def write_files(out: Path, assignment_name: str) -> list[Path]:
    """setup.sh and run_autograder for an autograder zip (with this repository and the
    assignment file `assignment_name` at its root)."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in (("setup.sh", SETUP_SH),
                       ("run_autograder", RUN_AUTOGRADER.format(assignment=assignment_name))):
        path = out / name
        path.write_text(text, encoding="utf-8")
        path.chmod(0o755)
        written.append(path)
    return written
