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

`patch(strict=True)` makes the kernels it builds raise on warnings as well as errors (division
by zero, a shift out of range, a SIMD-group read of an inactive lane, behaviour the Metal spec
leaves open): what a test suite usually wants, since Metal gives such code no defined result.

`patch(max_steps=..., max_seconds=...)` sets the limits of the kernels it builds: the work of
one launch in expression nodes evaluated (default 1,000,000) and its wall time (default: none).

With pytest, the `metalsim_patch` fixture (registered by this package's pytest plugin) does
the same for one test. Code that imported `metal_kernel` by name before patching keeps the
original; look it up as `mx.fast.metal_kernel` at call time.
"""

from __future__ import annotations

import contextlib
import functools
import os

import mlx.core as mx

from metalsim.api import Kernel, metal_kernel


def metal_available() -> bool:
    """Whether MLX here has a Metal back end that can run kernels."""
    return bool(mx.metal.is_available())


class patch(contextlib.ContextDecorator):  # noqa: N801 - used like a function, as in unittest.mock
    """Replace `mx.fast.metal_kernel` by `metalsim.metal_kernel` (see the module docstring)."""

    active = 0   # patches that replaced the factory and have not exited yet, in any instance

    def __init__(self, force: bool = False, strict: bool = False,
                 max_steps: int | None = None, max_seconds: float | None = None) -> None:
        self.force = force
        self.strict = strict
        self.max_steps = max_steps
        self.max_seconds = max_seconds
        self._saved: list[tuple[object, bool]] = []

    def __enter__(self) -> patch:
        replaces = self.force or not metal_available()
        self._saved.append((mx.fast.metal_kernel, replaces))
        if replaces:
            configured = self.strict or self.max_steps or self.max_seconds
            mx.fast.metal_kernel = (functools.wraps(metal_kernel)(functools.partial(
                _configured_metal_kernel, self)) if configured else metal_kernel)
            patch.active += 1
            mx.disable_compile()
        return self

    def __exit__(self, *exc_info: object) -> None:
        mx.fast.metal_kernel, replaced = self._saved.pop()
        if replaced:
            patch.active -= 1
            if patch.active == 0 and not os.environ.get("MLX_DISABLE_COMPILE"):
                mx.enable_compile()


def _configured_metal_kernel(settings: patch, *args: object, **kwargs: object) -> Kernel:
    kernel = metal_kernel(*args, **kwargs)
    kernel.strict = settings.strict
    kernel.max_steps = settings.max_steps
    kernel.max_seconds = settings.max_seconds
    return kernel
