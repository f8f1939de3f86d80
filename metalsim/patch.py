"""`metalsim.patch()`: run unchanged `mx.fast.metal_kernel` code in the simulator.

Inside the patch, `mx.fast.metal_kernel(...)` returns a simulated kernel wherever MLX has no
Metal back end (Linux and Windows, CI runners), so an MLX project can test its custom kernels —
including the out-of-bounds, race and barrier checks — without a Mac. On a Mac the real Metal
kernels are kept unless `force=True`. The original function is restored on exit.

    with metalsim.patch():
        y = my_mlx_function_that_uses_custom_kernels(x)

    @metalsim.patch()
    def test_my_kernel(): ...

While a patch is active MLX's compilation is turned off (`mx.disable_compile()`), so functions
wrapped in `mx.compile` -- before or inside the patch -- run uncompiled and their kernels can be
simulated: the simulator needs input values, which a compiled function's trace does not have.
Leaving the last active patch turns compilation back on, unless `MLX_DISABLE_COMPILE` is set.

`patch(backend="cuda")` runs the kernels on an NVIDIA GPU instead (`metalsim.cuda`: the same
generated source translated to CUDA C++; it needs CuPy), on any machine, Mac or not.

`patch(strict=True)` makes the kernels it builds raise on warnings as well as errors (division
by zero, a shift out of range, a SIMD-group read of an inactive lane, behaviour the Metal spec
leaves open): what a test suite usually wants, since Metal gives such code no defined result.

While a patch that simulates is active, MLX's GPU is pretended (`metalsim.pretend_gpu`), so a
project runs as it would on a Mac, taking the branch that launches its kernel rather than its
non-Metal fallback: `mx.metal.is_available()` and `mx.is_available(mx.gpu)` return True,
`mx.default_device()` returns the GPU, and `with mx.stream(mx.gpu):`, `mx.set_default_device(
mx.gpu)` and `stream=mx.gpu` given to MLX operations run, on the CPU (MLX itself computes there;
the custom kernels are simulated). What needs a real GPU's properties raises a clear
`metalsim.NoMetalDevice` error instead of misbehaving: `mx.metal.device_info()`,
`mx.metal.start_capture`. `patch(metal_available=False)` leaves MLX as it is.

`patch(platform="darwin")` also sets `sys.platform` to "darwin" while it is active, for packages
that refuse to import elsewhere (`if sys.platform != "darwin": raise ImportError(...)`): import
them inside the patch. Only `sys.platform` changes (not `platform.system()` or `os.uname()`).

`patch(max_steps=..., max_seconds=...)` sets the limits of the kernels it builds: the work of
one launch in expression nodes evaluated (default 1,000,000) and its wall time (default: none).
`patch(include_dirs=[...])` gives its kernels the directories `#include "..."` reads from (a
compiler's `-I`), e.g. `metalsim.mlx_include_dir()`, the installed MLX's `include` directory,
for MLX's own kernel headers (`#include "mlx/backend/metal/kernels/steel/gemm/gemm.h"`).

With pytest, the `metalsim_patch` fixture (registered by this package's pytest plugin) does
the same for one test. Code that imported `metal_kernel` by name before patching keeps the
original; look it up as `mx.fast.metal_kernel` at call time.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Sequence

import mlx.core as mx

from metalsim.api import Kernel, metal_kernel
from metalsim.pretend_gpu import NoMetalDevice, PretendGpu, metal_available

__all__ = ["NoMetalDevice", "metal_available", "patch"]


class patch(contextlib.ContextDecorator):  # noqa: N801 - used like a function, as in unittest.mock
    """Replace `mx.fast.metal_kernel` by `metalsim.metal_kernel` (see the module docstring)."""

    active = 0   # patches that replaced the factory and have not exited yet, in any instance

    def __init__(self, force: bool = False, strict: bool = False, backend: str = "sim",
                 metal_available: bool = True, max_steps: int | None = None,
                 max_seconds: float | None = None,
                 include_dirs: Sequence[str | os.PathLike] = (),
                 platform: str | None = None) -> None:
        if backend not in ("sim", "cuda"):
            raise ValueError(f"backend must be 'sim' or 'cuda', not {backend!r}")
        if platform not in (None, "darwin"):
            raise ValueError(f"platform must be None or 'darwin', not {platform!r}")
        self.force = force or backend == "cuda"
        self.strict = strict
        self.backend = backend
        self.pretend_metal = metal_available
        self.max_steps = max_steps
        self.max_seconds = max_seconds
        self.include_dirs = tuple(str(d) for d in include_dirs)
        self.platform = platform
        # per entry: the factory it replaced, whether it replaced it, its PretendGpu (or None)
        # and the sys.platform it replaced
        self._saved: list[tuple[object, bool, PretendGpu | None, str]] = []

    def __enter__(self) -> patch:
        replaces = self.force or not metal_available()
        gpu = PretendGpu() if self.pretend_metal and not metal_available() else None
        self._saved.append((mx.fast.metal_kernel, replaces, gpu, sys.platform))
        if replaces:
            mx.fast.metal_kernel = self._factory()
            patch.active += 1
            mx.disable_compile()
        if gpu:
            gpu.install()
        if self.platform:
            sys.platform = self.platform
        return self

    def _factory(self) -> object:
        if self.backend == "cuda":
            from metalsim.cuda import metal_kernel as cuda_metal_kernel

            return cuda_metal_kernel
        if self.strict or self.max_steps or self.max_seconds or self.include_dirs:
            return functools.wraps(metal_kernel)(functools.partial(_configured_metal_kernel, self))
        return metal_kernel

    def __exit__(self, *exc_info: object) -> None:
        mx.fast.metal_kernel, replaced, gpu, sys.platform = self._saved.pop()
        if gpu:
            gpu.restore()
        if replaced:
            patch.active -= 1
            if patch.active == 0 and not os.environ.get("MLX_DISABLE_COMPILE"):
                mx.enable_compile()


def _configured_metal_kernel(settings: patch, *args: object, **kwargs: object) -> Kernel:
    kernel = metal_kernel(*args, **kwargs)
    kernel.strict = settings.strict
    kernel.max_steps = settings.max_steps
    kernel.max_seconds = settings.max_seconds
    kernel.include_dirs = settings.include_dirs
    return kernel
