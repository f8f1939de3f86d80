"""Which of the installed MLX's Metal kernel headers metalsim compiles, and why the others fail.

Each header under `<mlx>/include/mlx/backend/metal/kernels/` is included in a kernel's
`header` by the path MLX's own sources use and compiled with a trivial body: alone, and if
that fails, after `utils.h`, as MLX's .metal files include them (some headers use names that
`utils.h` declares without including it). A header "compiles" if either does; otherwise its
reason is the first error of the compile after `utils.h`: `file:line: message`, the file
relative to `kernels/` (or `header`, `source` for the kernel's own text).
"""

from __future__ import annotations

from pathlib import Path

import mlx.core as mx

import metalsim

KERNELS = Path("mlx", "backend", "metal", "kernels")
UTILS = "utils.h"


def kernel_headers() -> list[str]:
    """Every header of the installed MLX's kernel library, relative to `kernels/`."""
    root = metalsim.mlx_include_dir() / KERNELS
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.h"))


def include(header: str) -> str:
    return f'#include "{(KERNELS / header).as_posix()}"\n'


def compile_error(header_text: str) -> str | None:
    """The first error (message only) of compiling a kernel with a trivial body after
    `header_text`, with MLX's include directory; None if it compiles."""
    kernel = metalsim.metal_kernel("census", ["a"], ["out"], "out[0] = a[0];",
                                   header=header_text)
    kernel.include_dirs = (str(metalsim.mlx_include_dir()),)
    try:
        kernel(inputs=[mx.zeros(1)], output_shapes=[(1,)], output_dtypes=[mx.float32],
               grid=(1, 1, 1), threadgroup=(1, 1, 1))
    except metalsim.CompileError as error:
        return _where_and_what(str(error).splitlines()[0])
    return None


def _where_and_what(first_line: str) -> str:
    """`file:line: message` of a diagnostic's first line, the file relative to `kernels/`."""
    where, _, what = first_line.partition(" error: ")
    file, line = where.rstrip(":").split(":")[:2]
    return f"{file.removeprefix(KERNELS.as_posix() + '/')}:{line}: {what}"


def header_error(header: str) -> str | None:
    """Why `header` does not compile, alone or after utils.h; None if it does."""
    if compile_error(include(header)) is None:
        return None
    return compile_error(include(UTILS) + include(header))


def census() -> dict[str, str | None]:
    """header -> why it does not compile (None where it compiles), for every kernel header."""
    return {header: header_error(header) for header in kernel_headers()}
