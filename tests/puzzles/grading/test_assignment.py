"""Assignment files: the README's example, defaults, credit, and mistakes said clearly."""

from __future__ import annotations

import re

import pytest

from puzzles.catalog import ROOT
from puzzles.grading.assignment import (
    LEARNER_SEED,
    Assignment,
    AssignmentError,
    Limits,
    load,
    parse,
)


def readme_example() -> str:
    readme = (ROOT / "README.md").read_text()
    return re.search(r"```toml\n(.*?)```", readme, re.S).group(1)


def test_the_readme_example_is_a_valid_assignment(tmp_path):
    path = tmp_path / "week1.toml"
    path.write_text(readme_example())
    assignment = load(path)
    assert assignment.points == {1: 2.0, 3: 3.0}
    assert assignment.seed == 918273645 and assignment.seed != LEARNER_SEED
    assert assignment.limits == Limits(seconds=30.0, memory_bytes=2048 << 20)
    assert (assignment.over_budget, assignment.warnings) == (0.5, 1.0)


def test_points_and_partial_credit():
    assignment = parse({"partial_credit": {"over_budget": 0.25, "warnings": 0.5},
                        "puzzles": [{"puzzle": "map", "points": 4}, {"puzzle": "Guard"}]})
    rows = [{"puzzle": 1, "status": "over-budget", "warnings": 0},
            {"puzzle": 3, "status": "pass", "warnings": 2}]
    assert assignment.score(rows) == (4 * 0.25 + 1 * 0.5, 5.0)
    assert assignment.earned({"puzzle": 1, "status": "timeout"}) == 0
    assert assignment.earned({"puzzle": 1, "status": "pass", "warnings": 0}) == 4


def test_without_a_file_every_graded_puzzle_is_worth_one_point():
    rows = [{"puzzle": 1, "status": "pass"}, {"puzzle": 2, "status": "fail"},
            {"puzzle": None, "status": "error"}]
    assert Assignment().score(rows) == (1.0, 2.0)


def test_a_missing_seed_becomes_a_random_secret_one():
    seeds = {Assignment().with_seed().seed for _ in range(5)}
    assert len(seeds) == 5 and LEARNER_SEED not in seeds
    assert Assignment(seed=7).with_seed().seed == 7


@pytest.mark.parametrize(("text", "message"), [
    ("[assignment]\nseed = 0\n", "learners' check() uses"),
    ("[assignment]\nseed = -3\n", "non-negative integer"),
    ("[assignment]\nsed = 4\n", "unknown key(s) ['sed']"),
    ("[grading]\n", "unknown table(s) ['grading']"),
    ("[[puzzles]]\npuzzle = 'no such puzzle'\n", "no puzzle 'no such puzzle'"),
    ("[[puzzles]]\npuzzle = 1\n[[puzzles]]\npuzzle = 'map'\n", "assigned twice"),
    ("[partial_credit]\nover_budget = 2\n", "between 0.0 and 1.0"),
    ("[assignment]\ntime_limit = 'long'\n", "time_limit must be a number"),
    ("[[puzzles]]\npoints = 3\n", "needs `puzzle = ...`"),
    ("this is = = not toml", "not valid TOML"),
])
def test_mistakes_are_reported_with_what_is_wrong(tmp_path, text, message):
    path = tmp_path / "a.toml"
    path.write_text(text)
    with pytest.raises(AssignmentError, match=re.escape(message)):
        load(path)
