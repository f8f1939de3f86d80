"""GitHub Classroom's generated workflow: the grader and the assignment come from the template
at a pinned commit, so a student's edit of `puzzles/` changes nothing; each step's command,
run as the workflow runs it (template checked out in `grader/`, the student's repository in
`submission/`), grades the student's notebook with the template's grader."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

from puzzles.catalog import ROOT
from puzzles.grading.assignment import parse
from puzzles.grading.classroom import WorkflowError, workflow
from tests.puzzles.grading.classroom import MAP, learner, solve

COMMIT = "3f1c2a9b8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a"
PLAN = parse({"assignment": {"seed": 99}, "puzzles": [{"puzzle": 1, "points": 2},
                                                      {"puzzle": "Guard", "points": 3}]})


def steps(text: str) -> list[dict]:
    return yaml.safe_load(text)["jobs"]["run-autograding-tests"]["steps"]


def test_the_grader_is_checked_out_from_the_template_at_the_pinned_commit():
    student, template = steps(workflow(PLAN, "prof/week1", COMMIT, "week1.toml"))[:2]
    assert student["uses"].startswith("actions/checkout") and \
        student["with"] == {"path": "submission"}
    assert template["with"] == {"repository": "prof/week1", "ref": COMMIT, "path": "grader"}


def test_one_step_per_puzzle_with_its_points_and_the_templates_grader():
    graded = [s for s in steps(workflow(PLAN, "prof/week1", COMMIT, "week1.toml"))
              if "autograding-command-grader" in str(s.get("uses"))]
    assert [(s["id"], s["with"]["max-score"]) for s in graded] == [("puzzle-1", 2),
                                                                   ("puzzle-3", 3)]
    for step in graded:
        command = step["with"]["command"]
        assert command.startswith("cd grader && python -m puzzles grade ../submission/")
        assert "--assignment week1.toml" in command
        assert "--seed ${{ github.repository_id }}" in command  # per student, every push alike
    reporter = steps(workflow(PLAN, "prof/week1", COMMIT, "week1.toml"))[-1]
    assert reporter["with"]["runners"] == "puzzle-1,puzzle-3"


def test_a_private_template_is_read_with_the_named_secret():
    template = steps(workflow(PLAN, "prof/week1", COMMIT, "a.toml", token_secret="TEMPLATE"))[1]
    assert template["with"]["token"] == "${{ secrets.TEMPLATE }}"


@pytest.mark.parametrize(("template", "commit", "assignment", "message"), [
    ("prof/week1", "main", "a.toml", "must be pinned"),
    ("prof/week1", COMMIT[:12], "a.toml", "must be pinned"),
    ("week1", COMMIT, "a.toml", "OWNER/REPOSITORY"),
    ("prof/week1", COMMIT, "../a.toml", "a plain path inside the template"),
    ("prof/week1", COMMIT, "a.toml; curl x", "a plain path inside the template"),
])
def test_what_cannot_be_pinned_is_refused(template, commit, assignment, message):
    with pytest.raises(WorkflowError, match=message):
        workflow(PLAN, template, commit, assignment)


def run_step(workspace: Path, command: str) -> int:
    command = command.replace("${{ github.repository_id }}", "123456789")
    return subprocess.run(["bash", "-c", command], cwd=workspace, capture_output=True,
                          text=True, timeout=600).returncode


def test_a_students_edit_of_puzzles_does_not_make_an_untouched_template_pass(tmp_path):
    """The student's copy carries a `puzzles` package whose every command exits 0: the old
    workflow (grader run from the student's repository) passes the untouched template, the
    generated one fails it, and passes it once Map is solved."""
    (tmp_path / "a.toml").write_text("[[puzzles]]\npuzzle = 1\npoints = 2\n")
    step = next(s for s in steps(workflow(parse({"puzzles": [{"puzzle": 1, "points": 2}]}),
                                          "prof/week1", COMMIT, "a.toml"))
                if s.get("id") == "puzzle-1")
    workspace = tmp_path / "workspace"
    (workspace / "submission" / "notebooks").mkdir(parents=True)
    (workspace / "grader").mkdir()  # the template's checkout: this repository's files
    for entry in ROOT.iterdir():
        if entry.name not in (".git", ".venv"):
            (workspace / "grader" / entry.name).symlink_to(entry)
    tampered = workspace / "submission" / "puzzles"
    tampered.mkdir()
    (tampered / "__init__.py").write_text("")
    (tampered / "__main__.py").write_text("raise SystemExit(0)\n")
    notebook = workspace / "submission" / "notebooks" / "01_threads.ipynb"
    nbformat.write(learner("01_threads.ipynb"), notebook)
    command = step["with"]["command"].replace("--assignment a.toml",
                                              f"--assignment {tmp_path / 'a.toml'}")
    old = f"{sys.executable} -m puzzles grade notebooks/01_threads.ipynb --puzzle 1"
    assert subprocess.run(["bash", "-c", old], cwd=workspace / "submission",
                          timeout=600).returncode == 0  # the hole the pinned grader closes
    command = command.replace("python -m", f"{sys.executable} -m")
    assert run_step(workspace, command) == 1
    solved = learner("01_threads.ipynb")
    solve(solved, 1, MAP)
    nbformat.write(solved, notebook)
    assert run_step(workspace, command) == 0
