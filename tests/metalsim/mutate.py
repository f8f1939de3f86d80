"""Mutated kernels: the reference solutions with random token-level edits, for checking that
the simulator answers anything with a `CompileError` or a diagnosed run, never an internal
exception (IndexError, AttributeError, RecursionError, ...).

A mutation deletes, duplicates or swaps a token; replaces an identifier by another of the
kernel's, an operator by another, a number by a boundary value (0, -1, 4, 2**31, ...); inserts
a `*`, `&`, `++`, `[0]` or `->x`; or deletes a line. Mutants run their puzzle's visible launch
(or, for the corpus's kernels, the launch its tests made first) with small step and time
limits, so that the loops a mutation makes endless end quickly.
"""

from __future__ import annotations

import functools
import os
import pickle
import random
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import mlx.core as mx
import numpy as np
import pytest

import metalsim
from metalsim import api as metalsim_api
from metalsim.signature import KernelSpec
from puzzles.catalog import Puzzle, all_puzzles

TOKEN = re.compile(r"\s+|[A-Za-z_]\w*|\d+\.?\d*[fFuUlLh]*|<<=|>>=|->|\+\+|--|&&|\|\||"
                   r"[-+*/%&|^!=<>]=|::|<<|>>|.", re.S)
OPERATORS = ["+", "-", "*", "/", "%", "<", ">", "<=", ">=", "==", "!=", "&&", "||", "&", "|",
             "^", "<<", ">>", "=", "+=", "-=", "*=", "++", "--", "!", "~", "?", ":", ",", ";"]
NUMBERS = ["0", "1", "-1", "2", "3", "4", "7", "31", "32", "33", "1024", "4096", "65536",
           "2147483647", "2147483648", "4294967295u", "0.5f", "1e30f", "-0.0f", "100000000"]
INSERTS = ["*", "&", "++", "--", "[0]", "[1]", "->x", ".x", "(", ")", "{", "}", "-", "!",
           "(device float*)", "(thread int*)", "threadgroup_barrier(mem_flags::mem_threadgroup);"]
STEP_LIMIT, SECONDS = 5_000, 0.5
CORPUS_TESTS = Path(__file__).resolve().parent / "corpus"


@dataclass(frozen=True)
class Seed:
    """A kernel to mutate, and how to launch it (with a source and a header)."""

    name: str
    source: str
    header: str
    launch: Callable[[str, str], metalsim.Run]


def _launch_puzzle(p: Puzzle, source: str, header: str) -> metalsim.Run:
    """The puzzle's visible case, with small step and time limits."""
    case = p.visible
    kernel = metalsim.metal_kernel(p.kernel, list(p.input_names), list(p.output_names),
                                   source, header=header, atomic_outputs=p.atomic_outputs)
    return metalsim.simulate(
        kernel, inputs=[mx.array(np.asarray(x)) for x in case.inputs],
        output_shapes=[case.output_shape] * len(p.output_names),
        output_dtypes=[getattr(mx, case.output_dtype)] * len(p.output_names),
        grid=case.grid, threadgroup=case.threadgroup, init_value=p.init_value,
        max_steps=STEP_LIMIT, max_seconds=SECONDS)


def seeds() -> list[Seed]:
    """The reference solution of every puzzle, with its header."""
    return [Seed(p.slug, p.solution(), p.header, functools.partial(_launch_puzzle, p))
            for p in all_puzzles()]


def _launch_recorded(spec: KernelSpec, call: dict, source: str, header: str) -> metalsim.Run:
    """A launch recorded from the corpus, of a kernel with `source` and `header`."""
    kernel = metalsim.metal_kernel(spec.name, list(spec.input_names), list(spec.output_names),
                                   source, header=header,
                                   ensure_row_contiguous=spec.ensure_row_contiguous,
                                   atomic_outputs=spec.atomic_outputs,
                                   compile_options={"math_mode": spec.math_mode})
    return metalsim.simulate(kernel, max_steps=STEP_LIMIT, max_seconds=SECONDS,
                             **{**call, "inputs": [mx.array(x) for x in call["inputs"]]})


@dataclass(frozen=True)
class _Dtype:
    """An mx.Dtype by name (mx.Dtype cannot be pickled)."""

    name: str


def _portable(x: object) -> object:
    if isinstance(x, mx.Dtype):
        return _Dtype(str(x).rsplit(".", 1)[-1])
    if isinstance(x, list | tuple):
        return type(x)(_portable(v) for v in x)
    return x


def _restored(x: object) -> object:
    if isinstance(x, _Dtype):
        return getattr(mx, x.name)
    if isinstance(x, list | tuple):
        return type(x)(_restored(v) for v in x)
    return x


def corpus_launches() -> list[tuple[KernelSpec, dict]]:
    """Every distinct kernel the corpus tests launch, with its first launch's arguments (in
    picklable form): the corpus tests run here, in-process, while metalsim records them."""
    recorded: dict[tuple, tuple[KernelSpec, dict]] = {}
    original = metalsim_api.Kernel._run

    def recording(kernel, args, kwargs, *rest, **options):
        spec = kernel.spec
        key = (spec.name, spec.source, spec.header)
        if key not in recorded and not args and "inputs" in kwargs:
            try:  # arrays being traced by a transformation cannot be kept
                inputs = [np.array(x) for x in kwargs["inputs"]]
            except (ValueError, RuntimeError):
                inputs = None
            if inputs is not None:
                call = {k: _portable(v) for k, v in kwargs.items()
                        if k not in ("inputs", "stream", "verbose")}
                recorded[key] = (spec, {**call, "inputs": inputs})
        return original(kernel, args, kwargs, *rest, **options)

    metalsim_api.Kernel._run = recording
    try:
        status = pytest.main([str(CORPUS_TESTS), "-q", "-p", "no:cacheprovider"])
    finally:
        metalsim_api.Kernel._run = original
    if status != 0:
        raise RuntimeError(f"the corpus tests failed (pytest status {status})")
    return list(recorded.values())


def save_corpus_launches(path: str) -> None:
    """`corpus_launches()`, pickled to `path` (for `corpus_seeds(subprocess=True)`)."""
    Path(path).write_bytes(pickle.dumps(corpus_launches()))


def corpus_seeds(in_subprocess: bool = False) -> list[Seed]:
    """The corpus's kernels with their recorded launches. `in_subprocess` runs the corpus
    tests in a fresh Python, for callers that are themselves inside a pytest session."""
    if in_subprocess:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "launches.pickle"
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
            subprocess.run([sys.executable, "-c",
                            f"import mutate; mutate.save_corpus_launches({str(out)!r})"],
                           cwd=CORPUS_TESTS.parents[2], env=env, check=True,
                           capture_output=True, timeout=600)
            launches = pickle.loads(out.read_bytes())  # noqa: S301 - written just above
    else:
        launches = corpus_launches()
    return [Seed(f"corpus:{spec.name}", spec.source, spec.header,
                 functools.partial(_launch_recorded, spec,
                                   {k: _restored(v) for k, v in call.items()}))
            for spec, call in launches]


def mutate(text: str, rng: random.Random, edits: int) -> str:
    """`text` with `edits` random token-level edits."""
    for _ in range(edits):
        tokens = TOKEN.findall(text)
        solid = [k for k, t in enumerate(tokens) if not t.isspace()]
        if not solid:
            return text
        k = rng.choice(solid)
        names = [t for t in tokens if re.fullmatch(r"[A-Za-z_]\w*", t)]
        kind = rng.randrange(9)
        if kind == 0:
            tokens[k] = ""
        elif kind == 1:
            tokens[k] = tokens[k] + " " + tokens[k]
        elif kind == 2 and names:
            tokens[k] = rng.choice(names)
        elif kind == 3:
            tokens[k] = rng.choice(OPERATORS)
        elif kind == 4:
            tokens[k] = rng.choice(NUMBERS)
        elif kind == 5:
            tokens[k] = rng.choice(INSERTS) + tokens[k]
        elif kind == 6:
            tokens[k] = tokens[k] + rng.choice(INSERTS)
        elif kind == 7:
            j = rng.choice(solid)
            tokens[k], tokens[j] = tokens[j], tokens[k]
        else:
            lines = "".join(tokens).split("\n")
            del lines[rng.randrange(len(lines))]
            text = "\n".join(lines)
            continue
        text = "".join(tokens)
    return text


def run(seed: Seed, source: str, header: str) -> str:
    """Run one mutant; what happened: "ok", "diagnosed" or "compile-error". Any other
    exception propagates (that is the bug the fuzz looks for)."""
    try:
        result = seed.launch(source, header)
    except metalsim.CompileError:
        return "compile-error"
    return "diagnosed" if result.report.errors else "ok"


def fuzz(count: int, seed: int = 0, pool: list[Seed] | None = None) -> dict[str, int]:
    """Run `count` mutants (of the source or the header) of the kernels of `pool` (default:
    the puzzles' solutions), in turn; the tally of outcomes. Raises an AssertionError naming
    the mutant on any internal exception."""
    rng = random.Random(seed)
    pool = pool or seeds()
    tally: dict[str, int] = {}
    for n in range(count):
        s = pool[n % len(pool)]
        edits = rng.choice([1, 1, 1, 2, 3])
        source, header = s.source, s.header
        if header and rng.random() < 0.2:
            header = mutate(header, rng, edits)
        else:
            source = mutate(source, rng, edits)
        try:
            outcome = run(s, source, header)
        except Exception as exc:
            raise AssertionError(f"mutant {n} of {s.name} raised {exc!r}\n--- source ---\n"
                                 f"{source}\n--- header ---\n{header}") from exc
        tally[outcome] = tally.get(outcome, 0) + 1
    return tally
