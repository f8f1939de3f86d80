"""The repository holds only its own writing: no tracked file repeats 8 consecutive non-trivial
lines of the installed MLX's Metal headers or of the installed corpus packages (mlx-lm, mlx-vlm,
mlx-audio, whichever are installed), and no tracked file is another project's licence.

Other sources the project once copied from (Metal-Puzzles' notebook, MLX's documentation) are
not installed, so they are checked by review, with `tests/provenance.py` run against a checkout.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest
from provenance import WINDOW, SourceIndex, file_lines, is_trivial, normalise, significant

ROOT = Path(__file__).resolve().parent.parent
CORPUS_PACKAGES = ("mlx_lm", "mlx_vlm", "mlx_audio")
MIN_MLX_KERNEL_HEADERS = 90  # the mlx wheel ships 98; fewer means the install changed shape
LICENCE_NAME = re.compile(r"(LICEN[CS]E|COPYING|NOTICE)([-_.][\w.-]*)?", re.I)
CODE_SUFFIXES = {".py", ".h", ".metal", ".cpp", ".ipynb"}  # `license.py` is code, not a licence


def is_licence_name(name: str) -> bool:
    return bool(LICENCE_NAME.fullmatch(name)) and Path(name).suffix not in CODE_SUFFIXES


def package_dir(name: str) -> Path | None:
    """Where an installed top-level package lives, without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def mlx_kernel_headers() -> Path:
    mlx = package_dir("mlx")
    assert mlx is not None, "mlx is not installed"
    return mlx / "include" / "mlx" / "backend" / "metal" / "kernels"


@cache
def installed_sources() -> SourceIndex:
    index = SourceIndex()
    index.add_tree(mlx_kernel_headers(), "mlx/include/mlx/backend/metal/kernels")
    for name in CORPUS_PACKAGES:
        root = package_dir(name)
        if root is not None:
            index.add_tree(root, name)
    return index


@cache
def installed_licences() -> SourceIndex:
    """The licence files of every installed distribution (MIT, Apache, BSD, ... as shipped)."""
    index = SourceIndex()
    for dist in importlib.metadata.distributions():
        for file in dist.files or ():
            path = Path(dist.locate_file(file))
            if is_licence_name(file.name) and path.is_file():
                lines = file_lines(path)
                if lines is not None:
                    index.add_file(f"{dist.metadata['Name']}'s {file.name}", lines)
    return index


def tracked_files() -> list[str]:
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                                check=True).stdout.decode()
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.fail(f"the provenance check reads the files git tracks, and needs git and a "
                    f"checkout of the repository at {ROOT}: {error}")
    return [path for path in listed.split("\0") if path and (ROOT / path).is_file()]


def test_the_installed_mlx_headers_are_there_to_compare_with():
    headers = [p for p in mlx_kernel_headers().rglob("*") if p.suffix in {".h", ".metal"}]
    assert len(headers) >= MIN_MLX_KERNEL_HEADERS, mlx_kernel_headers()
    assert installed_sources().files >= len(headers)


def test_no_tracked_file_repeats_the_installed_mlx_headers_or_corpus_packages():
    index = installed_sources()
    copies = []
    for path in tracked_files():
        lines = file_lines(ROOT / path)
        if lines is not None:
            copies += index.copies(path, lines)
    assert not copies, "copied from another project (write your own, or test the installed " \
        "package instead):\n" + "\n".join(map(str, copies))


def below_the_root() -> list[str]:
    # The project's own licence may sit at the root; a licence anywhere else came with a copy.
    return [path for path in tracked_files() if "/" in path]


def test_no_tracked_file_is_named_as_a_licence_below_the_root():
    licences = [path for path in below_the_root() if is_licence_name(path.rsplit("/", 1)[-1])]
    assert not licences, f"another project's licence is tracked: {licences}"


def test_no_tracked_file_below_the_root_repeats_an_installed_licence():
    index = installed_licences()
    copies = [copy for path in below_the_root()
              for copy in index.copies(path, file_lines(ROOT / path) or [])]
    assert not copies, "a licence text is tracked:\n" + "\n".join(map(str, copies))


# --- the checker itself ---------------------------------------------------------------------


def header_excerpt() -> tuple[str, list[str]]:
    """A header of the installed MLX and its first run of `WINDOW + 2` non-trivial lines."""
    for path in sorted(mlx_kernel_headers().rglob("*.h")):
        kept = [text for _, text in significant(file_lines(path) or [])]
        if len(kept) >= WINDOW + 2:
            return path.name, kept[: WINDOW + 2]
    raise AssertionError("no installed MLX header has enough lines")


def test_a_reindented_copy_of_a_header_with_blank_lines_added_is_found():
    name, excerpt = header_excerpt()
    disguised = []
    for n, line in enumerate(excerpt):
        disguised += ["    " + line.replace(" ", "   "), "", "}"] if n % 3 == 0 else ["\t" + line]
    lines = [("1", "# preface")] + [(str(n), t) for n, t in enumerate(disguised, 2)]
    [copy] = installed_sources().copies("disguised.py", lines)
    assert (copy.path, copy.where) == ("disguised.py", "2")
    assert copy.source.endswith(name)
    assert "disguised.py:2:" in str(copy) and name in str(copy)


def test_seven_lines_of_a_header_are_not_a_copy():
    _, excerpt = header_excerpt()
    lines = [(str(n), t) for n, t in enumerate(excerpt[: WINDOW - 1], 1)]
    assert installed_sources().copies("short.py", lines) == []


def test_a_copy_inside_a_notebook_cell_is_found_with_its_cell_and_line(tmp_path):
    import nbformat

    _, excerpt = header_excerpt()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("Intro"),
                nbformat.v4.new_code_cell('source = """\n' + "\n".join(excerpt) + '\n"""')]
    path = tmp_path / "copied.ipynb"
    nbformat.write(nb, path)
    [copy] = installed_sources().copies("copied.ipynb", file_lines(path))
    assert copy.where == "cell 2, line 2"


@pytest.mark.parametrize("line", ["", "   ", "}", "});", "} else {", "#endif", "return;",
                                  "default:", "  ]", "pass", "#pragma once"])
def test_lines_without_authorship_are_trivial(line):
    assert is_trivial(normalise(line))


@pytest.mark.parametrize("line", ["return a + 10", "uint i = thread_position_in_grid.x;",
                                  "} else if (lane == 0) {", "# Puzzle 1"])
def test_lines_with_content_are_not_trivial(line):
    assert not is_trivial(normalise(line))


@pytest.mark.parametrize(("name", "licence"), [
    ("LICENSE", True), ("LICENCE.txt", True), ("COPYING", True), ("NOTICE.md", True),
    ("LICENSE-APACHE", True), ("license.py", False), ("licences.md", False),
    ("README.md", False)])
def test_licence_files_are_told_by_name(name, licence):
    assert is_licence_name(name) == licence


def test_binary_files_are_skipped(tmp_path):
    path = tmp_path / "image.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    assert file_lines(path) is None
