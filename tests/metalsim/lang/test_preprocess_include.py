"""`#include "..."` read from include directories (a compiler's `-I`), with `#pragma once`,
include guards, nesting and diagnostics that point into the included file; gcc's preprocessor
is the oracle for the token stream."""

import shutil
import subprocess
from pathlib import Path

import pytest

from metalsim.diagnostics import CompileError, SourceMap
from metalsim.lang.preprocess import MAX_INCLUDE_DEPTH, preprocess

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc's preprocessor")


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def texts(text: str, *dirs: Path) -> list[str]:
    tokens = preprocess(text, SourceMap(text, [("header", 0, len(text))]), None, dirs)
    assert tokens[-1].kind == "eof"
    return [t.text for t in tokens[:-1]]


def error(text: str, *dirs: Path) -> CompileError:
    with pytest.raises(CompileError) as info:
        texts(text, *dirs)
    return info.value


def gcc_texts(text: str, *dirs: Path) -> list[str]:
    flags = [f"-I{d}" for d in dirs]
    out = subprocess.run(["gcc", "-E", "-P", "-x", "c", *flags, "-"], input=text,
                         capture_output=True, text=True, check=True).stdout
    return texts(out)  # gcc's output, tokenized the same way


HEADERS = {
    "lib/defs.h": "#pragma once\n#define TILE 4\nint defs;\n",
    "lib/a.h": '#include "lib/defs.h"\nint a = TILE;\n',
    "lib/b.h": '#include "lib/defs.h"\n#ifndef B_H\n#define B_H\nint b = TILE * 2;\n#endif\n',
    "other/c.h": "int c;\n",
}


@needs_gcc
@pytest.mark.parametrize("text", [
    '#include "lib/a.h"\n#include "lib/b.h"\nint z = TILE;',
    '#include "lib/b.h"\n#include "lib/b.h"\n#include "lib/a.h"\nx',
    '#define NAME "lib/a.h"\n#include NAME\ny',
    '#if 0\n#include "missing.h"\n#endif\n#include "c.h"\nw',
    '#include "lib/defs.h"\n#undef TILE\n#include "lib/defs.h"\nTILE',
])
def test_included_text_matches_gcc(tmp_path, text):
    root = write(tmp_path, HEADERS)
    dirs = (root, root / "other")
    assert texts(text, *dirs) == gcc_texts(text, *dirs)


def test_the_first_directory_that_has_the_file_wins(tmp_path):
    first = write(tmp_path / "one", {"x.h": "int one;"})
    second = write(tmp_path / "two", {"x.h": "int two;", "y.h": "int y;"})
    assert texts('#include "x.h"\n#include "y.h"', first, second) == [
        "int", "one", ";", "int", "y", ";"]


def test_a_missing_file_names_the_directories_searched(tmp_path):
    err = error('\n#include "nope.h"', tmp_path)
    assert "'nope.h' file not found" in str(err) and str(tmp_path) in str(err)
    assert (err.coord.section, err.line) == ("header", 2)


def test_without_include_directories_the_hint_says_how_to_give_them():
    assert "include_dirs" in str(error('#include "utils.h"'))


def test_an_error_inside_an_included_file_points_at_its_line(tmp_path):
    root = write(tmp_path, {"inc/bad.h": "int ok;\n\n#error the tile is too big\n"})
    err = error('int x;\n#include "inc/bad.h"\n', root)
    coord = err.coord
    assert (coord.section, coord.line) == ("inc/bad.h", 3)
    assert "#error the tile is too big" in str(err)


def test_an_included_file_must_close_its_own_conditionals(tmp_path):
    root = write(tmp_path, {"open.h": "int a;\n#ifdef X\nint b;\n"})
    err = error('#include "open.h"\n#endif\n', root)
    assert "unterminated conditional directive" in str(err)
    assert err.coord.section == "open.h"


def test_a_file_that_includes_itself_is_nested_too_deeply(tmp_path):
    root = write(tmp_path, {"self.h": 'int x;\n#include "self.h"\n'})
    err = error('#include "self.h"', root)
    assert "#include nested too deeply" in str(err)
    assert MAX_INCLUDE_DEPTH == 200  # clang's limit
