"""`build --release`: the student copy holds no line of a solution outside the templates, and
its visualisation examples answer no puzzle; the bundle holds every solution."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from metalsim.viz.examples import EXAMPLES
from puzzles.catalog import SOLUTIONS, all_puzzles, find
from puzzles.checking import check_kernel
from puzzles.cli import main
from puzzles.grading.release import imports_solutions
from puzzles.grading.similarity import tokens

MIN_LINE_TOKENS = 8  # shorter lines (`}`, `float acc = 0;`, `if (i < n) {`) are anyone's


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    out = tmp_path_factory.mktemp("release")
    assert main(["build", "--release", str(out)]) == 0
    return out


def student_lines(release) -> dict[str, list[str]]:
    """Every line of every text file of the student copy (notebooks: their cells' lines)."""
    lines = {}
    for path in (release / "student").rglob("*"):
        if not path.is_file() or path.suffix not in (".py", ".ipynb", ".txt", ".md", ".metal"):
            continue
        text = path.read_text()
        if path.suffix == ".ipynb":
            text = "\n".join("".join(c["source"]) for c in json.loads(text)["cells"])
        lines[str(path.relative_to(release))] = text.split("\n")
    return lines


def code_of(line: str) -> str:
    """A line's tokens, without comments or whitespace: what "the same line" compares."""
    return " ".join(tokens(line))


def solution_lines() -> dict[str, str]:
    """Each line a reference solution adds to what the templates give (long enough to be
    more than `}` or `float acc = 0;`), by its code, with the solution it comes from."""
    given = {code_of(line) for p in all_puzzles() for line in p.template.split("\n")}
    lines = {}
    for puzzle in all_puzzles():
        for line in puzzle.solution().split("\n"):
            code = code_of(line)
            if len(tokens(line)) >= MIN_LINE_TOKENS and code not in given:
                lines.setdefault(code, puzzle.solution_file)
    return lines


def test_the_student_copy_contains_no_solution_line_outside_the_templates(release):
    solutions = solution_lines()
    assert len(solutions) > 100
    texts = student_lines(release)
    assert any(name.endswith("01_threads.ipynb") for name in texts)
    found = [(name, solutions[code_of(line)], line.strip()) for name, lines in texts.items()
             for line in lines if code_of(line) in solutions]
    assert found == []
    assert not (release / "student" / "solutions").exists()


def test_the_line_check_finds_a_solution_line_pasted_anywhere(release):
    pasted = next(line for line in find(19).solution().split("\n") if "? a[" in line)
    assert code_of(pasted) in solution_lines()
    assert code_of("  " + pasted.strip() + "  // mine") in solution_lines()


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_no_viz_example_answers_a_puzzle(name):
    """Each example kernel, run as every puzzle with as many inputs (its inputs renamed to the
    puzzle's, its TILE made the puzzle's threadgroup size), fails it."""
    example = EXAMPLES[name]
    for puzzle in all_puzzles():
        if len(puzzle.input_names) != len(example.input_names):
            continue
        source = example.source
        for ours, theirs in zip(example.input_names, puzzle.input_names):
            source = re.sub(rf"\b{ours}(?=\b|_shape)", theirs, source)
        header = example.header
        if "THREADGROUP_MEM_SIZE" in puzzle.header:
            header = re.sub(r"#define (\w+) \d+", r"#define \1 THREADGROUP_MEM_SIZE", header)
        result = check_kernel(puzzle, source, puzzle.header + "\n" + header)
        assert result.status != "pass", (name, puzzle.title)


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
    texts = {name: " ".join("\n".join(lines).split())
             for name, lines in student_lines(release).items()}
    for puzzle in all_puzzles():
        walkthrough = puzzle.walkthrough()
        assert not any(" ".join(walkthrough.split()) in content for content in texts.values())
        name = Path(puzzle.solution_file).with_suffix(".md").name
        bundled = release / "solutions" / "walkthroughs" / name
        assert bundled.read_text().strip() == walkthrough
