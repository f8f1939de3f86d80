"""Compile CUDA C++ to PTX with NVRTC, without a GPU (for CI and for checking translations).

NVRTC is a plain shared library: this module loads it with ctypes, from the `nvidia-cuda-nvrtc`
wheel (the `cuda` extra) or from wherever the system's loader finds `libnvrtc`. No GPU and no
driver are involved; compiling is what can be checked on any Linux x86-64 machine.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
import sys

# What `metalsim.cuda.runtime` compiles with: IEEE float arithmetic (denormals kept, division
# and square root correctly rounded, no contraction into fma: Metal's "safe" math, which the
# simulator reproduces) unless the kernel asks for fast math. Spelt out, not left to defaults.
OPTIONS = ("--std=c++17", "--fmad=false", "--ftz=false", "--prec-div=true", "--prec-sqrt=true",
           "-default-device")
FAST_OPTIONS = ("--std=c++17", "--use_fast_math", "-default-device")
DEFAULT_ARCH = "compute_90"


class NvrtcError(RuntimeError):
    """NVRTC rejected the source; the message holds its log."""


def options(math_mode: str) -> tuple[str, ...]:
    return FAST_OPTIONS if math_mode == "fast" else OPTIONS


def _candidates() -> list[str]:
    found = []
    for entry in sys.path:
        for pattern in ("nvidia/cu*/lib/libnvrtc.so*", "nvidia/cuda_nvrtc/lib/libnvrtc.so*"):
            found += sorted(glob.glob(os.path.join(entry, pattern)))
    return [p for p in found if "builtins" not in os.path.basename(p)] + [
        "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"]


@functools.cache
def library() -> ctypes.CDLL | None:
    """The NVRTC library, or None where it is not installed."""
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        return lib
    return None


def available() -> bool:
    return library() is not None


def compile_ptx(source: str, name: str = "kernel.cu", opts: tuple[str, ...] = OPTIONS,
                arch: str = DEFAULT_ARCH) -> str:
    """Compile `source` to PTX for `arch`; raise NvrtcError with NVRTC's log if it fails."""
    lib = library()
    if lib is None:
        raise NvrtcError("NVRTC is not installed: pip install 'metal-puzzles[cuda]'")
    prog = ctypes.c_void_p()
    status = lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0,
                                    None, None)
    if status:
        raise NvrtcError(lib.nvrtcGetErrorString(status).decode())
    try:
        args = [o.encode() for o in (*opts, f"--gpu-architecture={arch}")]
        argv = (ctypes.c_char_p * len(args))(*args)
        status = lib.nvrtcCompileProgram(prog, len(args), argv)
        if status:
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, log)
            raise NvrtcError(log.value.decode(errors="replace"))
        size = ctypes.c_size_t()
        lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
        ptx = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetPTX(prog, ptx)
        return ptx.value.decode()
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
