"""One launch of a kernel built from MLX's own device-side building blocks (the installed MLX's
Metal headers, `metalsim.mlx_include_dir()`), and the MLX CPU operation it must agree with:
`BlockCase` for an `mx.fast.metal_kernel` body that calls them, `LibraryCase` for one of
MLX's own `[[kernel]]` functions run whole through `metalsim.dispatch`, as MLX binds it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import mlx.core as mx
import numpy as np

import metalsim
import metalsim.cuda

# Unit roundoff of each output type: a correctly rounded result is within this of the exact
# value, relative to its magnitude.
EPSILON = {mx.float32: 2.0**-24, mx.float16: 2.0**-11, mx.bfloat16: 2.0**-8}


@dataclass
class BlockCase:
    """A metalsim kernel, the keyword arguments of one call, and MLX's CPU result for them.

    `rtol`/`atol` are what the outputs may differ by, element by element (`np.isclose`), each
    set where the case is made, with the reason."""

    label: str
    kernel: metalsim.Kernel
    kwargs: dict
    expected: Callable[[], list[mx.array]]
    rtol: float
    atol: float


@dataclass
class LibraryCase:
    """One of MLX's `[[kernel]]` functions, instantiated from its header under a host name as
    MLX's .metal files do, with the buffers, grid and threadgroup MLX's host code gives it;
    `outputs` are the buffer indices compared with `expected()`."""

    label: str
    source: str
    function: str
    buffers: dict
    grid: tuple[int, int, int]
    threadgroup: tuple[int, int, int]
    outputs: tuple[int, ...]
    expected: Callable[[], list[mx.array]]
    rtol: float
    atol: float
    function_constants: dict | None = None
    # Later passes of the same kernel, as MLX chains them (a two-pass reduction): each pass's
    # buffers (but 0) and grid; its buffer 0 is the previous pass's output buffer 1.
    passes: list[tuple[dict, tuple[int, int, int]]] = field(default_factory=list)

    def run(self, on_gpu: bool = False) -> metalsim.Dispatch:
        """Every pass, in the simulator or (`on_gpu`) through `metalsim.cuda.dispatch`; the
        last one's Dispatch, with every pass's diagnostics (no report on the GPU)."""
        run = self._dispatch(self.buffers, self.grid, on_gpu)
        diagnostics = [] if on_gpu else list(run.report.diagnostics)
        for buffers, grid in self.passes:
            run = self._dispatch({0: run.buffers[1], **buffers}, grid, on_gpu)
            diagnostics += [] if on_gpu else run.report.diagnostics
        if not on_gpu:
            run.report.diagnostics = diagnostics
        return run

    def _dispatch(self, buffers: dict, grid: tuple[int, int, int],
                  on_gpu: bool) -> metalsim.Dispatch:
        threadgroup = (grid[0], 1, 1) if self.passes else self.threadgroup
        options = {"function_constants": self.function_constants,
                   "include_dirs": [metalsim.mlx_include_dir()]}
        if on_gpu:
            return metalsim.cuda.dispatch(self.source, self.function, buffers, grid,
                                          threadgroup, **options)
        return metalsim.dispatch(self.source, self.function, buffers, grid, threadgroup,
                                 check=False, **options)


def library_source(*headers: str, instantiations: str) -> str:
    """A Metal source that includes MLX's `utils.h` and `headers` (relative to `kernels/`)
    and instantiates kernels with MLX's own `instantiate_kernel` (defines.h)."""
    includes = ("utils.h", "defines.h", *headers)
    return "".join(f'#include "mlx/backend/metal/kernels/{h}"\n' for h in includes) + (
        instantiations)


def mlx_kernel(name: str, input_names: list[str], output_names: list[str], source: str,
               header: str) -> metalsim.Kernel:
    """`metalsim.metal_kernel` whose `#include`s find the installed MLX's kernel headers."""
    kernel = metalsim.metal_kernel(name, input_names, output_names, source, header=header)
    kernel.include_dirs = (str(metalsim.mlx_include_dir()),)
    return kernel


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def as_float64(array: mx.array) -> np.ndarray:
    return np.array(array.astype(mx.float32)).astype(np.float64)


def differences(case: BlockCase | LibraryCase, outputs: list[mx.array]) -> list[str]:
    """What in `outputs` disagrees with MLX's result beyond the case's tolerance (none: [])."""
    problems = []
    for i, (got, want) in enumerate(zip(outputs, case.expected(), strict=True)):
        if got.shape != want.shape or got.dtype != want.dtype:
            problems.append(f"output {i}: {got.shape} {got.dtype}, MLX gives {want.shape} "
                            f"{want.dtype}")
            continue
        g, w = as_float64(got), as_float64(want)
        close = np.isclose(g, w, rtol=case.rtol, atol=case.atol)
        if not close.all():
            where = tuple(int(x) for x in np.argwhere(~close)[0])
            problems.append(f"output {i}: {int((~close).sum())} of {close.size} elements differ "
                            f"beyond rtol={case.rtol:.3g}, atol={case.atol:.3g}; first at {where}: "
                            f"metalsim {g[where]!r}, MLX {w[where]!r}")
    return problems
