"""MLX's GPU as `metalsim.patch()` pretends it on a machine without Metal.

Projects test for Metal and select the GPU before they launch their kernels: `mx.metal.
is_available()`, `mx.default_device() == mx.gpu`, `with mx.stream(mx.gpu):`, `mx.set_default_device
(mx.gpu)`, `mx.add(a, b, stream=mx.gpu)`. MLX without a GPU back end raises "Cannot get gpu
stream" for the last three. While `PretendGpu` is installed they all run: the GPU is reported
available and the default device, and a GPU device or stream given to an MLX function is replaced
by the CPU (MLX's own operations compute there; custom kernels are simulated as always). What
needs a real GPU's properties (`device_info`, captures) raises `NoMetalDevice`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import mlx.core as mx

# MLX's own functions, for the replacements to call whatever is installed at the time
_REAL_METAL_IS_AVAILABLE = mx.metal.is_available
_REAL_IS_AVAILABLE = mx.is_available
_REAL_DEFAULT_DEVICE = mx.default_device
_REAL_SET_DEFAULT_DEVICE = mx.set_default_device
_REAL_DEVICE_COUNT = mx.device_count

# the namespaces whose functions take a stream or a device (mx.fast's kernel factories excepted:
# metalsim.patch() replaces metal_kernel itself, and its kernels take stream=mx.gpu)
_NAMESPACES = (mx, mx.fast, mx.linalg, mx.random, mx.fft)
_NOT_REDIRECTED = {"metal_kernel", "cuda_kernel"}


class NoMetalDevice(RuntimeError):  # noqa: N818 - named for what is missing, like MLX's errors
    """Something other than a custom kernel needed the GPU that `metalsim.patch()` pretends."""

    def __init__(self, what: str) -> None:
        super().__init__(
            f"{what} needs a real Metal GPU, and there is none: metalsim.patch() reports Metal "
            "as available only so that mx.fast.metal_kernel code runs in the simulator.\n"
            "    hint: MLX's operations run on the CPU here (mx.gpu streams are redirected to "
            "it); pass metalsim.patch(metal_available=False) to keep MLX's availability checks "
            "false.")


def metal_available() -> bool:
    """Whether MLX here really has a Metal back end that can run kernels (patched or not)."""
    return bool(_REAL_METAL_IS_AVAILABLE())


_GPU, _DEVICE = mx.gpu, mx.Device


def is_gpu(value: object) -> bool:
    """`mx.gpu` or a `mx.Device` of that type."""
    # `type(...) is`, not isinstance: isinstance against MLX's types costs a microsecond, and
    # this runs for every argument of every MLX call inside the patch
    return value is _GPU or (type(value) is _DEVICE and value.type == _GPU)


def _on_cpu(value: object) -> object:
    return mx.cpu if is_gpu(value) else value


@functools.cache   # one wrapper per function: building ~300 of them at every patch is slow
def _redirected(function: Callable) -> Callable:
    """`function` with every GPU device among its arguments replaced by the CPU."""
    @functools.wraps(function)
    def on_cpu(*args: object, **kwargs: object) -> object:
        if any(is_gpu(a) for a in args):
            args = tuple(_on_cpu(a) for a in args)
        if kwargs:
            kwargs = {k: _on_cpu(v) for k, v in kwargs.items()}
        return function(*args, **kwargs)

    return on_cpu


def _takes_stream_or_device(function: object) -> bool:
    signatures = getattr(function, "__nb_signature__", None) or ()
    text = " ".join(s[0] for s in signatures)
    return "Stream" in text or "Device" in text


@functools.cache
def _stream_taking_functions() -> tuple[tuple[object, str], ...]:
    """(namespace or mx.array, name) of MLX's functions and array methods that take a stream
    or a device (looked up once: the signatures do not change)."""
    return tuple((owner, name) for owner in (*_NAMESPACES, mx.array) for name in dir(owner)
                 if not name.startswith("_") and name not in _NOT_REDIRECTED
                 and _takes_stream_or_device(getattr(owner, name)))


def _needs_gpu(what: str) -> Callable:
    def refuse(*_: object, **__: object) -> None:
        raise NoMetalDevice(what)

    return refuse


class PretendGpu:
    """The replacements, installed by `install()` and taken back by `restore()`."""

    def __init__(self) -> None:
        self.gpu_is_default = True
        self._saved: list[tuple[object, str, object]] = []

    def _default_device(self) -> mx.Device:
        return mx.Device(mx.gpu, 0) if self.gpu_is_default else _REAL_DEFAULT_DEVICE()

    def _set_default_device(self, device: object) -> None:
        self.gpu_is_default = is_gpu(device)
        _REAL_SET_DEFAULT_DEVICE(_on_cpu(device))

    def _device_info(self, device: object = None) -> dict:
        if is_gpu(device) or (device is None and self.gpu_is_default):
            raise NoMetalDevice("mx.device_info() of the GPU")
        return self._real_device_info(device)

    def replacements(self) -> dict[tuple[object, str], object]:
        """(namespace, name) -> what stands there while the GPU is pretended."""
        self._real_device_info = mx.device_info
        special = {
            (mx.metal, "is_available"): lambda: True,
            (mx, "is_available"): lambda device: is_gpu(device) or _REAL_IS_AVAILABLE(device),
            (mx, "default_device"): self._default_device,
            (mx, "set_default_device"): self._set_default_device,
            (mx, "device_count"): lambda kind: 1 if is_gpu(kind) else _REAL_DEVICE_COUNT(kind),
            (mx, "device_info"): self._device_info,
            (mx.metal, "device_info"): _needs_gpu("mx.metal.device_info()"),
            (mx.metal, "start_capture"): _needs_gpu("mx.metal.start_capture()"),
        }
        redirected = {(owner, name): _redirected(getattr(owner, name))
                      for owner, name in _stream_taking_functions() if (owner, name) not in special}
        return {**redirected, **special}

    def install(self) -> None:
        self._real_default = _REAL_DEFAULT_DEVICE()
        for (owner, name), replacement in self.replacements().items():
            original = vars(owner).get(name, getattr(owner, name))   # a class's own descriptor
            self._saved.append((owner, name, original))
            setattr(owner, name, replacement)

    def restore(self) -> None:
        for owner, name, original in reversed(self._saved):
            setattr(owner, name, original)
        self._saved.clear()
        _REAL_SET_DEFAULT_DEVICE(self._real_default)
