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

While a patch that simulates is active, MLX's Metal availability checks say yes:
`mx.metal.is_available()` and `mx.is_available(mx.gpu)` return True and `mx.default_device()`
returns the GPU, so a project's wrapper takes the branch that launches its kernel, as it would
on a Mac, rather than its non-Metal fallback (MLX itself still computes on the CPU). What
still needs a real GPU raises a clear `metalsim.NoMetalDevice` error instead of misbehaving:
`mx.set_default_device(mx.gpu)`, `mx.metal.device_info()`, `mx.metal.start_capture` (MLX
operations given `stream=mx.gpu` raise MLX's own "Cannot get gpu stream" ValueError).
`patch(metal_available=False)` leaves the checks as they are.

`patch(max_steps=..., max_seconds=...)` sets the limits of the kernels it builds: the work of
one launch in expression nodes evaluated (default 1,000,000) and its wall time (default: none).
`patch(include_dirs=[...])` gives its kernels the directories `#include "..."` reads from (a
compiler's `-I`), e.g. MLX's installed `include` directory for its `steel` headers.

With pytest, the `metalsim_patch` fixture (registered by this package's pytest plugin) does
the same for one test. Code that imported `metal_kernel` by name before patching keeps the
original; look it up as `mx.fast.metal_kernel` at call time.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Sequence

import mlx.core as mx

from metalsim.api import Kernel, metal_kernel

_REAL_METAL_IS_AVAILABLE = mx.metal.is_available
_REAL_IS_AVAILABLE = mx.is_available


def metal_available() -> bool:
    """Whether MLX here really has a Metal back end that can run kernels (patched or not)."""
    return bool(_REAL_METAL_IS_AVAILABLE())


class NoMetalDevice(RuntimeError):  # noqa: N818 - named for what is missing, like MLX's errors
    """Something other than a custom kernel needed the GPU that `metalsim.patch()` pretends."""

    def __init__(self, what: str) -> None:
        super().__init__(
            f"{what} needs a real Metal GPU, and there is none: metalsim.patch() reports Metal "
            "as available only so that mx.fast.metal_kernel code runs in the simulator.\n"
            "    hint: run MLX operations on the CPU (the default here), or pass "
            "metalsim.patch(metal_available=False) to keep MLX's availability checks false.")


def _needs_gpu(what: str):  # noqa: ANN202 - a replacement for an MLX function of any signature
    def refuse(*_: object, **__: object) -> None:
        raise NoMetalDevice(what)

    return refuse


def _is_gpu(device: object) -> bool:
    """`mx.gpu` or a `mx.Device` of that type."""
    return device is mx.gpu or getattr(device, "type", None) is mx.gpu


def _set_default_device(device: object) -> None:
    if _is_gpu(device):
        raise NoMetalDevice("mx.set_default_device(mx.gpu)")
    _REAL_SET_DEFAULT_DEVICE(device)


def _is_available(device: object) -> bool:
    return _is_gpu(device) or _REAL_IS_AVAILABLE(device)


_REAL_SET_DEFAULT_DEVICE = mx.set_default_device
# what the patch replaces while it pretends Metal is there: (module, name) -> replacement
_PRETEND_METAL = {
    (mx.metal, "is_available"): lambda: True,
    (mx, "is_available"): _is_available,
    (mx, "default_device"): lambda: mx.Device(mx.gpu, 0),
    (mx, "set_default_device"): _set_default_device,
    (mx.metal, "device_info"): _needs_gpu("mx.metal.device_info()"),
    (mx.metal, "start_capture"): _needs_gpu("mx.metal.start_capture()"),
}


class patch(contextlib.ContextDecorator):  # noqa: N801 - used like a function, as in unittest.mock
    """Replace `mx.fast.metal_kernel` by `metalsim.metal_kernel` (see the module docstring)."""

    active = 0   # patches that replaced the factory and have not exited yet, in any instance

    def __init__(self, force: bool = False, strict: bool = False, backend: str = "sim",
                 metal_available: bool = True, max_steps: int | None = None,
                 max_seconds: float | None = None,
                 include_dirs: Sequence[str | os.PathLike] = ()) -> None:
        if backend not in ("sim", "cuda"):
            raise ValueError(f"backend must be 'sim' or 'cuda', not {backend!r}")
        self.force = force or backend == "cuda"
        self.strict = strict
        self.backend = backend
        self.pretend_metal = metal_available
        self.max_steps = max_steps
        self.max_seconds = max_seconds
        self.include_dirs = tuple(str(d) for d in include_dirs)
        self._saved: list[tuple[object, bool, dict]] = []

    def __enter__(self) -> patch:
        replaces = self.force or not metal_available()
        pretends = self.pretend_metal and not metal_available()
        saved = {key: getattr(*key) for key in _PRETEND_METAL} if pretends else {}
        self._saved.append((mx.fast.metal_kernel, replaces, saved))
        if replaces:
            mx.fast.metal_kernel = self._factory()
            patch.active += 1
            mx.disable_compile()
        for (module, name), replacement in _PRETEND_METAL.items() if pretends else ():
            setattr(module, name, replacement)
        return self

    def _factory(self) -> object:
        if self.backend == "cuda":
            from metalsim.cuda import metal_kernel as cuda_metal_kernel

            return cuda_metal_kernel
        if self.strict or self.max_steps or self.max_seconds or self.include_dirs:
            return functools.wraps(metal_kernel)(functools.partial(_configured_metal_kernel, self))
        return metal_kernel

    def __exit__(self, *exc_info: object) -> None:
        mx.fast.metal_kernel, replaced, saved = self._saved.pop()
        for (module, name), original in saved.items():
            setattr(module, name, original)
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
