"""g++ as the oracle for C++ features Metal shares with C++17: the same header and body run in
metalsim (one thread) and natively, and the ints the body writes to `out` are compared."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import mlx.core as mx
import numpy as np
import pytest

import metalsim

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

# What Metal spells and C++ does not: address spaces and MLX's function macro.
_CXX_PRELUDE = """\
#include <cstdio>
#define thread
#define device
#define constant
#define threadgroup
#define METAL_FUNC inline
typedef unsigned int uint;
"""


def gxx_outputs(header: str, body: str, n: int, std: str = "c++17") -> list[int]:
    """The `n` ints `body` writes to `int* out` after `header`, compiled by g++ -std=`std`."""
    program = (f"{_CXX_PRELUDE}{header}\nint main() {{\n  int out[{n}] = {{0}};\n{body}\n"
               f"  for (int i = 0; i < {n}; ++i) std::printf(\"%d\\n\", out[i]);\n}}\n")
    return _run_gxx(program, std)


def _run_gxx(program: str, std: str = "c++17") -> list[int]:
    """The ints a C++ program prints, compiled by g++ -std=`std`."""
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = Path(tmp) / "t.cpp", Path(tmp) / "t"
        src.write_text(program)
        subprocess.run(["g++", f"-std={std}", "-w", "-o", str(exe), str(src)], check=True,
                       capture_output=True, text=True)
        out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    return [int(v) for v in out.split()]


def gxx_rejects(header: str, body: str, iso: bool = False, std: str = "c++17") -> str:
    """g++'s error for a program it must reject (asserting that it does). With `iso`, as
    ISO C++ and clang (Metal's compiler) reject it: g++ alone, by default, resolves some
    calls ISO C++ calls ambiguous (by the candidates' worst conversions)."""
    program = f"{_CXX_PRELUDE}{header}\nint main() {{\n  int out[1] = {{0}};\n{body}\n}}\n"
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "t.cpp"
        src.write_text(program)
        strict = ["-pedantic-errors"] if iso else []
        proc = subprocess.run(["g++", f"-std={std}", "-w", *strict, "-fsyntax-only", str(src)],
                              capture_output=True, text=True)
    assert proc.returncode != 0, "g++ accepts the program"
    return proc.stderr


def metalsim_outputs(header: str, body: str, n: int) -> list[int]:
    """The same in metalsim: `body` is a kernel's source with `device int* out`."""
    kernel = metalsim.metal_kernel("oracle", ["unused"], ["out"], body, header=header)
    out = kernel(inputs=[mx.zeros(1)], output_shapes=[(n,)], output_dtypes=[mx.int32],
                 grid=(1, 1, 1), threadgroup=(1, 1, 1), init_value=0)[0]
    return np.array(out).tolist()


def agree(header: str, body: str, n: int, std: str = "c++17") -> list[int]:
    """Run both; assert they agree and return the values."""
    expected = gxx_outputs(header, body, n, std)
    assert metalsim_outputs(header, body, n) == expected
    return expected


def agree_per_thread(header: str, body: str, n: int, threads: int) -> list[list[int]]:
    """`agree` for `threads` threads, each writing `n` ints: in metalsim one launch where
    `tid` is the thread's index and `out` its own `n` ints (so the lanes of a simdgroup may
    take different branches); in g++ the body run once per `tid`. Returns each thread's."""
    program = (f"{_CXX_PRELUDE}{header}\nint main() {{\n  int all_out[{threads * n}] = {{0}};\n"
               f"  for (unsigned tid = 0; tid < {threads}; ++tid) {{\n"
               f"    int* out = all_out + tid * {n};\n{body}\n  }}\n"
               f"  for (int i = 0; i < {threads * n}; ++i) std::printf(\"%d\\n\", all_out[i]);"
               f"\n}}\n")
    expected = _run_gxx(program)
    source = (f"uint tid = thread_position_in_grid.x;\ndevice int* out = all_out + tid * {n};\n"
              f"{body}")
    kernel = metalsim.metal_kernel("oracle_threads", ["unused"], ["all_out"], source,
                                   header=header)
    got = kernel(inputs=[mx.zeros(1)], output_shapes=[(threads * n,)],
                 output_dtypes=[mx.int32], grid=(threads, 1, 1), threadgroup=(threads, 1, 1),
                 init_value=0)[0]
    assert np.array(got).tolist() == expected
    return [expected[k * n:(k + 1) * n] for k in range(threads)]
