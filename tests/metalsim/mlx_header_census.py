"""Which of the installed MLX's Metal kernel headers metalsim compiles, and why the others fail.

Each header under `<mlx>/include/mlx/backend/metal/kernels/` is included in a kernel's
`header` by the path MLX's own sources use and compiled with a trivial body: alone, and if
that fails, after `utils.h` and the headers MLX's own .metal file includes before it, as MLX
compiles them (some headers use names that those declare without including them). A header
"compiles" if either does; otherwise its reason is the first error of the compile after its
prerequisites: `file:line: message`, the file relative to `kernels/` (or `header`, `source`
for the kernel's own text).
"""

from __future__ import annotations

from pathlib import Path

import mlx.core as mx

import metalsim

KERNELS = Path("mlx", "backend", "metal", "kernels")
UTILS = "utils.h"

_GEMM = ("steel/gemm/gemm.h",)
_GEMM_NAX = ("steel/gemm/gemm_nax.h",)
_CONV = ("steel/gemm/mma.h", "steel/conv/conv.h", "steel/conv/params.h")
_REDUCE = ("defines.h", "atomic.h", "reduction/ops.h")
# What MLX's .metal sources (mlx/backend/metal/kernels/**/*.metal) include between utils.h and
# the header; the conv loaders come after steel/defines.h in steel/conv/conv.h (the general one
# after steel/conv/params.h in steel_conv_general.metal); steel_gemm_thin_nax.h, which has no
# .metal of its own, as the other NAX GEMM kernels; the scatter kernels after reduce_utils.h,
# as MLX's indexing.cpp assembles their JIT source.
PREREQUISITES: dict[str, tuple[str, ...]] = {
    "binary.h": ("defines.h", "binary_ops.h"),
    "binary_two.h": ("binary_ops.h",),
    "ternary.h": ("ternary_ops.h",),
    "unary.h": ("unary_ops.h",),
    "scan.h": ("defines.h",),
    "fft.h": ("defines.h",),
    "searchsorted.h": ("sort.h",),
    "reduce.h": _REDUCE,
    "reduction/ops.h": _REDUCE[:2],
    "indexing/scatter.h": ("reduce_utils.h",),
    "indexing/scatter_axis.h": ("reduce_utils.h",),
    **{f"reduction/reduce_{kind}.h": _REDUCE for kind in ("all", "col", "init", "row")},
    "quantized.h": (*_GEMM, "quantized_utils.h"),
    "fp_quantized.h": (*_GEMM, "quantized_utils.h"),
    "quantized_nax.h": (*_GEMM, "steel/gemm/nax.h", "steel/gemm/loader.h"),
    "fp_quantized_nax.h": (*_GEMM, "quantized_utils.h", "steel/gemm/nax.h"),
    **{f"steel/gemm/kernels/steel_gemm_{kind}.h": _GEMM
       for kind in ("fused", "gather", "masked", "segmented", "splitk")},
    **{f"steel/gemm/kernels/steel_gemm_{kind}_nax.h": _GEMM_NAX
       for kind in ("fused", "gather", "segmented", "splitk", "thin")},
    "steel/conv/kernels/steel_conv.h": _CONV,
    "steel/conv/kernels/steel_conv_3d.h": _CONV,
    "steel/conv/kernels/steel_conv_general.h": (*_CONV, "steel/utils.h"),
    **{f"steel/conv/loaders/loader_{kind}.h": ("steel/defines.h",)
       for kind in ("channel_l", "channel_n")},
    "steel/conv/loaders/loader_general.h": ("steel/defines.h", "steel/conv/params.h"),
    "steel/conv/loader.h": ("steel/defines.h",),
}


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
    """Why `header` does not compile, alone or after its prerequisites; None if it does."""
    if compile_error(include(header)) is None:
        return None
    before = (UTILS, *PREREQUISITES.get(header, ()))
    return compile_error("".join(include(h) for h in (*before, header)))


def census() -> dict[str, str | None]:
    """header -> why it does not compile (None where it compiles), for every kernel header."""
    return {header: header_error(header) for header in kernel_headers()}
