"""The corpus of real kernels: upstream source copied verbatim under tests/fixtures/corpus/,
each file headed by its repository, path, commit and licence, and run as its project runs it.

`load` executes a fixture as the module it was copied from (its kernels are usually built at
import time, so call it inside `metalsim.patch()`), returning the module's namespace.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import numpy as np

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "corpus"
ATTRIBUTION = ("# Repository: https://github.com/", "# Path: ", "# Commit: ", "# Licence: MIT")


def load(relpath: str, enclosing: str = "", **names: object) -> dict:
    """Run the fixture `relpath` (under tests/fixtures/corpus) as a module; `names` are put in
    its namespace first (for what an excerpt's own module imported from elsewhere), and
    `enclosing` is Python put before the text (a `class ...:` line for an excerpt of methods)."""
    path = FIXTURES / relpath
    text = path.read_text()
    if enclosing:
        text = enclosing + "\n" + text
    head = text[:600 + len(enclosing)]
    missing = [a for a in ATTRIBUTION if a not in head]
    assert not missing, f"{relpath}: attribution lines missing: {missing}"
    namespace: dict = {"__name__": "corpus_" + path.stem, "__file__": str(path), **names}
    exec(compile(text, str(path), "exec"), namespace)  # noqa: S102 - our own fixture files
    return namespace


def python_blocks(relpath: str) -> list[str]:
    """The `.. code-block:: python` blocks of a reStructuredText fixture, dedented."""
    text = (FIXTURES / relpath).read_text()
    assert all(a in text[:600] for a in ATTRIBUTION), f"{relpath}: attribution lines missing"
    blocks = re.findall(r"\.\. code-block:: python\n[ \t]*\n((?:(?:  .*)?\n)+)", text)
    return [textwrap.dedent(b) for b in blocks]


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def log_softmax(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))
