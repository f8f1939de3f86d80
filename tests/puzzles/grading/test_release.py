"""`build --release`: the student copy holds no solution text; the bundle holds all of it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from puzzles.catalog import SOLUTIONS, all_puzzles
from puzzles.cli import main
from puzzles.grading.integrity import normalise
from puzzles.grading.release import imports_solutions


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    out = tmp_path_factory.mktemp("release")
    assert main(["build", "--release", str(out)]) == 0
    return out


def student_texts(release) -> dict[str, str]:
    texts = {}
    for path in (release / "student").rglob("*"):
        if path.is_file() and path.suffix in (".py", ".ipynb", ".txt", ".md", ".metal"):
            texts[str(path)] = normalise(path.read_text())
    return texts


def test_the_student_copy_contains_no_reference_solution(release):
    texts = student_texts(release)
    assert any(name.endswith("01_threads.ipynb") for name in texts)
    solutions = sorted(SOLUTIONS.glob("*.metal"))
    assert len(solutions) == len(all_puzzles())
    for solution in solutions:
        text = normalise(solution.read_text())
        for name, content in texts.items():
            assert text not in content, (solution.name, name)
    assert not (release / "student" / "solutions").exists()


def test_student_notebooks_import_no_solutions_and_keep_every_puzzle(release):
    for path in sorted((release / "student" / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
        assert not any(imports_solutions(c) for c in code), path.name
        assert not any("from solutions" in "".join(c["source"]) for c in cells)
    names = "".join(p.read_text() for p in (release / "student" / "notebooks").glob("*.ipynb"))
    for puzzle in all_puzzles():
        assert f"def {puzzle.slug}_test(" in names


def test_the_bundle_has_every_solution_and_solved_notebook(release):
    bundle = release / "solutions"
    for solution in SOLUTIONS.glob("*.metal"):
        assert (bundle / solution.name).read_text() == solution.read_text()
    assert len(list((bundle / "notebooks").glob("*.ipynb"))) == len(
        list((release / "student" / "notebooks").glob("*.ipynb")))


def test_walkthroughs_are_in_the_bundle_and_not_in_the_student_copy(release):
    texts = student_texts(release)
    for puzzle in all_puzzles():
        walkthrough = puzzle.walkthrough()
        assert not any(normalise(walkthrough) in content for content in texts.values())
        name = Path(puzzle.solution_file).with_suffix(".md").name
        bundled = release / "solutions" / "walkthroughs" / name
        assert bundled.read_text().strip() == walkthrough
