"""`pip install .` as Colab (or `pip install git+...`) does it: a fresh virtual environment, a
non-editable install through the notebooks' own Colab cell, then the learner's tools work from
outside the source tree (the reference solutions, the explorer, PNG diagrams).

Slow by nature (about a minute, mostly pip resolving and unpacking MLX from pip's cache)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from puzzles.catalog import ROOT
from puzzles.notebooks import COLAB_INSTALL_CODE, NOTEBOOKS, PROJECT_REQUIREMENT

# Run inside the fresh environment, with `google.colab` present as it is on Colab.
COLAB_CELL_RUNNER = """\
import sys, types
sys.modules["google"] = types.ModuleType("google")
sys.modules["google.colab"] = types.ModuleType("google.colab")
exec(compile(open(sys.argv[1]).read(), "colab-cell", "exec"))
"""

# What a learner does first in notebook 01, from outside the source tree.
LEARNER_SESSION = """\
import json, sys
import mlx.core as mx
import utils
from utils import MetalKernel, MetalProblem

def map_test(a):
    return MetalKernel(name="map", input_names=["a"], output_names=["out"],
                       source="uint i = thread_position_in_grid.x;\\nout[i] = a[i] + 10;")

problem = MetalProblem("Map", map_test, [mx.arange(4)], (4,), grid=(4, 1, 1),
                       spec=lambda a: a + 10)
problem.check()  # prints the verdict and keeps it in problem.result
passed = bool(problem.result)
explorer = problem.explore()
controls = sorted(explorer.widget.children[0].children, key=lambda c: c.description)
png = problem.show().save(sys.argv[1])
print(json.dumps({"utils": utils.__file__, "passed": passed,
                  "controls": [c.description for c in controls],
                  "png": png.read_bytes()[:8].hex()}))
"""


def source_tree_copy(dest: Path) -> Path:
    """The committed files of the project (as `git clone` gives them), so the build writes
    nothing into the working tree."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    for name in listed.stdout.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            (dest / name).write_bytes((ROOT / name).read_bytes())
    return dest


def colab_cell(notebook: Path) -> str:
    cells = nbformat.read(notebook, as_version=4).cells
    return next(c.source for c in cells if c.cell_type == "code")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A fresh venv into which the Colab cell of notebook 01 installed a copy of this project."""
    tmp = tmp_path_factory.mktemp("install")
    project = source_tree_copy(tmp / "project")
    venv = tmp / "venv"
    # No pip inside the venv: the test's own pip installs into it (`pip --python`), which saves
    # the ensurepip step.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    cell = colab_cell(NOTEBOOKS / "01_threads.ipynb")
    assert PROJECT_REQUIREMENT in cell
    cell = cell.replace('sys.executable, "-m", "pip"',
                        f'{str(sys.executable)!r}, "-m", "pip", "--python", sys.executable')
    (tmp / "cell.py").write_text(cell.replace(PROJECT_REQUIREMENT, str(project)))
    (tmp / "runner.py").write_text(COLAB_CELL_RUNNER)
    subprocess.run([str(python), str(tmp / "runner.py"), str(tmp / "cell.py")], cwd=tmp,
                   env=env, check=True, timeout=600)
    return python, env


def test_the_colab_cell_is_the_first_code_cell_of_every_notebook():
    for notebook in sorted(NOTEBOOKS.glob("*.ipynb")):
        assert colab_cell(notebook) == COLAB_INSTALL_CODE


def test_the_colab_cell_pins_no_jupyter_package():
    assert "==" not in COLAB_INSTALL_CODE
    assert "requirements.txt" not in COLAB_INSTALL_CODE.split("\n", 1)[1]


def test_the_colab_cell_does_nothing_outside_colab(tmp_path):
    cell = tmp_path / "cell.py"
    cell.write_text(COLAB_INSTALL_CODE.replace("subprocess.run(", "print('installing', "))
    ran = subprocess.run([sys.executable, str(cell)], capture_output=True, text=True,
                         check=True)
    assert ran.stdout == ""


def test_installed_project_checks_every_reference_solution(installed, tmp_path):
    python, env = installed
    ran = subprocess.run([str(python), "-m", "puzzles", "check", "--solutions", "--json"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    rows = json.loads(ran.stdout)
    assert len(rows) >= 32 and all(r["status"] == "pass" for r in rows)


def test_installed_project_explores_and_saves_png(installed, tmp_path):
    python, env = installed
    (tmp_path / "session.py").write_text(LEARNER_SESSION)
    ran = subprocess.run([str(python), "session.py", str(tmp_path / "map.png")], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    result = json.loads(ran.stdout.strip().splitlines()[-1])
    assert "site-packages" in result["utils"]  # the installed copy, not a source tree
    assert result["passed"]
    assert result["controls"] == ["SIMD-group", "phase", "thread", "threadgroup"]
    assert result["png"] == b"\x89PNG\r\n\x1a\n".hex()


# Printed by a learner's session in the installed copy: every walkthrough, and one through
# problem.solution().
WALKTHROUGH_SESSION = """\
import mlx.core as mx
from puzzles.catalog import all_puzzles
from utils import MetalKernel, MetalProblem

print(sum(bool(p.walkthrough()) for p in all_puzzles()))
def map_test(a):
    return MetalKernel(name="map", input_names=["a"], output_names=["out"], source="")
MetalProblem("Map", map_test, [mx.arange(4)], (4,), grid=(4, 1, 1)).solution(insist=True)
"""


def test_installed_project_shows_every_walkthrough(installed, tmp_path):
    python, env = installed
    (tmp_path / "session.py").write_text(WALKTHROUGH_SESSION)
    ran = subprocess.run([str(python), "session.py"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    count, *shown = ran.stdout.splitlines()
    assert int(count) == 32
    assert "Reference solution of puzzle 1: Map" in shown and "**Indexing.**" in "\n".join(shown)


def readme_block(heading: str) -> list[str]:
    """The commands of the first ```sh block under `## heading` in README.md (as .ci/run
    reads them)."""
    section = (ROOT / "README.md").read_text().split(f"\n## {heading}\n", 1)[1].split("\n## ")[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def installed_requirements(commands: list[str]) -> set[str]:
    """The names of the packages the `pip install -r FILE` commands install (nested `-r`
    files followed)."""
    names: set[str] = set()
    files = [part.split()[0] for command in commands
             for part in command.split("pip install -r ")[1:]]
    while files:
        for line in (ROOT / files.pop()).read_text().splitlines():
            line = line.split("#")[0].strip()
            if line.startswith("-r "):
                files.append(line[3:].strip())
            elif line and not line.startswith("-"):
                names.add(re.split(r"[\[=<>;\s]", line, maxsplit=1)[0].lower())
    return names


TEST_TOOLING = {"pytest", "hypothesis", "ruff", "playwright", "nvidia-cuda-nvrtc"}


def test_the_quick_start_installs_the_project_and_jupyter_and_no_test_tooling():
    commands = readme_block("Quick start")
    names = installed_requirements(commands)
    assert {"mlx", "jupyterlab", "ipykernel"} <= names
    assert not names & TEST_TOOLING
    assert "-e ." in (ROOT / "requirements.txt").read_text().splitlines()


def test_the_developing_commands_install_the_test_tooling():
    assert installed_requirements(readme_block("Developing")) >= TEST_TOOLING
