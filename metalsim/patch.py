"""`metalsim.patch()`: run unchanged `mx.fast.metal_kernel` code in the simulator.

Inside the patch, `mx.fast.metal_kernel(...)` returns a simulated kernel wherever MLX has no
Metal back end (Linux and Windows, CI runners), so an MLX project can test its custom kernels —
including the out-of-bounds, race and barrier checks — without a Mac. On a Mac the real Metal
kernels are kept unless `force=True`. The original function is restored on exit.

    with metalsim.patch():
        y = my_mlx_function_that_uses_custom_kernels(x)

    @metalsim.patch()
    def test_my_kernel(): ...

With pytest, the `metalsim_patch` fixture (registered by this package's pytest plugin) does
the same for one test. Code that imported `metal_kernel` by name before patching keeps the
original; look it up as `mx.fast.metal_kernel` at call time.
"""

from __future__ import annotations

import contextlib

import mlx.core as mx

from metalsim.api import metal_kernel


def metal_available() -> bool:
    """Whether MLX here has a Metal back end that can run kernels."""
    return bool(mx.metal.is_available())


class patch(contextlib.ContextDecorator):  # noqa: N801 - used like a function, as in unittest.mock
    """Replace `mx.fast.metal_kernel` by `metalsim.metal_kernel` (see the module docstring)."""

    def __init__(self, force: bool = False) -> None:
        self.force = force
        self._saved: list = []

    def __enter__(self) -> patch:
        self._saved.append(mx.fast.metal_kernel)
        if self.force or not metal_available():
            mx.fast.metal_kernel = metal_kernel
        return self

    def __exit__(self, *exc_info: object) -> None:
        mx.fast.metal_kernel = self._saved.pop()
