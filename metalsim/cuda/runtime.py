"""Compile a translated kernel with NVRTC (through CuPy) and launch it with MLX's dispatch.

MLX's dispatch: `grid` counts threads; the threadgroup is clamped to the grid per dimension;
threadgroups at the edges are partial. Each threadgroup runs as one CUDA block of
`tx * ty * tz` threads in one dimension; the translated entry computes the Metal thread
attributes from it (`metal::make_thread_info`) and lets the threads beyond a partial
threadgroup's real size return at once, so SIMD-groups are the warps of 32 consecutive linear
thread indices of the real threadgroup, exactly as Metal (and the simulator) form them.

Buffers follow MLX's binding: each input's memory (`BoundInput.data`, the pointer at `offset`),
its `_shape`/`_strides`/`_ndim` when the kernel names them, and fresh outputs (poisoned, or
filled with `init_value`). `DeviceLaunch` keeps them on the GPU so a benchmark can launch again
and again without copies.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from metalsim.cuda import nvrtc
from metalsim.cuda.translate import ENTRY, Translation, translate
from metalsim.signature import BoundInput, GeneratedKernel, OutputBuffer


@functools.cache
def cupy_module() -> Any:
    """CuPy, or None where it (or a GPU) is missing."""
    try:
        import cupy
    except ImportError:
        return None
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
    except Exception:  # no driver, no device: CuPy raises its own CUDARuntimeError
        return None
    return cupy


def gpu_available() -> bool:
    """Whether kernels can run here: CuPy is installed and sees an NVIDIA GPU."""
    return cupy_module() is not None


def gpu_name() -> str:
    cupy = cupy_module()
    if cupy is None:
        return "no GPU"
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    return props["name"].decode()


_EXACT_PRODUCTS = contextvars.ContextVar("metalsim_cuda_exact_products", default=False)


@contextlib.contextmanager
def exact_matrix_products(exact: bool = True) -> Iterator[None]:
    """Kernels prepared inside the block do their `simdgroup_matrix` products on CUDA cores:
    fused multiply-adds over k in order, in float, reproducible to the bit (the tensor-core
    path, the default from sm_80 on, splits float operands into three TF32 products)."""
    token = _EXACT_PRODUCTS.set(exact)
    try:
        yield
    finally:
        _EXACT_PRODUCTS.reset(token)


# A write through thread_elements(): an assignment, increment or decrement of the elements or
# one of them, or a non-const reference bound to them (a missed form fails to compile: the
# read-only layout's thread_elements() is const).
_ELEMENTS_WRITTEN = re.compile(
    r"thread_elements\(\)\s*(?:\[[^\]]*\]|\.\w+)?\s*(?:(?:[-+*/%&|^]|<<|>>)?=(?!=)|\+\+|--)"
    r"|(?:\+\+|--)\s*\(?\s*[\w\[\]]+\.thread_elements"
    r"|&\s*\w+\s*=\s*[\w\[\]\.]*thread_elements\(\)\s*;")


def matrix_defines(translation: Translation) -> tuple[str, ...]:
    """The prelude's `simdgroup_matrix` switches for this kernel: the CUDA-core products inside
    `exact_matrix_products()`, and where the elements live: in the tensor cores' layout unless
    the kernel calls `thread_elements()` (the one way to observe the layout), with a copy in
    Metal's layout where it only reads them, in Metal's layout alone where it writes them."""
    defines = ["-DMETALSIM_EXACT_MATRIX"] if _EXACT_PRODUCTS.get() else []
    text = translation.kernel_text
    if _ELEMENTS_WRITTEN.search(text):
        defines.append("-DMETALSIM_SGM_METAL_LAYOUT")
    elif "thread_elements" in text:
        defines.append("-DMETALSIM_SGM_ELEMENTS_READ")
    return tuple(defines)


def _ptx(source: str, math_mode: str, arch: str, max_threads: int,
         defines: tuple[str, ...] = ()) -> str:
    """PTX from the NVRTC that CuPy uses (its CUDA version matches the driver's support; a
    newer NVRTC's PTX would not load under an older driver), with metalsim's options alone,
    for blocks of at most `max_threads` threads."""
    opts = [*nvrtc.options(math_mode), f"-DMETALSIM_MAX_THREADS={max_threads}", *defines,
            f"--gpu-architecture={arch}"]
    try:
        from cupy_backends.cuda.libs import nvrtc as cupy_nvrtc
    except ImportError:  # an older CuPy layout: metalsim's own NVRTC call
        return nvrtc.compile_ptx(source, opts=tuple(opts[:-1]), arch=arch)
    prog = cupy_nvrtc.createProgram(source, "kernel.cu", [], [])
    try:
        try:
            cupy_nvrtc.compileProgram(prog, opts)
        except cupy_nvrtc.NVRTCError as error:
            raise nvrtc.NvrtcError(f"{error}\n{cupy_nvrtc.getProgramLog(prog)}") from None
        ptx = cupy_nvrtc.getPTX(prog)
    finally:
        cupy_nvrtc.destroyProgram(prog)
    return ptx.decode() if isinstance(ptx, bytes) else ptx


@functools.lru_cache(maxsize=256)
def _compiled(source: str, math_mode: str, max_threads: int, defines: tuple[str, ...] = ()) -> Any:
    """Compile to PTX ourselves (CuPy's own compilation of the same source flushed denormals)
    and load it for this device."""
    cupy = cupy_module()
    arch = f"compute_{cupy.cuda.Device().compute_capability}"   # e.g. "90" on an H100
    ptx = _ptx(source, math_mode, arch, max_threads, defines)
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(ptx)
    try:
        module = cupy.RawModule(path=f.name)
        return module.get_function(ENTRY)
    finally:
        os.unlink(f.name)


def _raw(data: np.ndarray) -> np.ndarray:
    """The bytes of `data` as numpy can hand them to CuPy (bfloat16 as its uint16 bits)."""
    flat = np.ascontiguousarray(data).reshape(-1)
    return flat.view(np.uint8)


def _device_copy(cupy: Any, data: np.ndarray) -> Any:
    raw = _raw(data)
    if raw.size == 0:
        raw = np.zeros(16, np.uint8)  # a valid pointer for an empty buffer
    return cupy.asarray(raw)


def clamp_threadgroup(grid: tuple[int, int, int], threadgroup: tuple[int, int, int]
                      ) -> tuple[int, int, int]:
    """MLX's threadgroup: clamped to the grid per dimension (at least 1)."""
    return tuple(max(1, min(t, g)) for g, t in zip(grid, threadgroup))  # type: ignore[return-value]


@dataclass
class DeviceLaunch:
    """One kernel call with its buffers resident on the GPU: `enqueue()` launches it (again),
    `fetch()` copies the outputs back into their `OutputBuffer`s."""

    function: Any
    blocks: tuple[int, int, int]
    threads: int
    args: tuple
    keep: list        # device buffers the arguments point into
    outputs: list[tuple[OutputBuffer, Any]]

    def enqueue(self) -> None:
        if self.threads and all(self.blocks):
            self.function(self.blocks, (self.threads, 1, 1), self.args)

    def fetch(self) -> None:
        for buffer, device in self.outputs:
            host = device.get()[: buffer.data.nbytes]
            np.copyto(buffer.data.reshape(-1).view(np.uint8), host)


def prepare(gen: GeneratedKernel, inputs: list[BoundInput], outputs: list[OutputBuffer],
            grid: tuple[int, int, int], threadgroup: tuple[int, int, int],
            math_mode: str = "safe", translation: Translation | None = None,
            include_dirs: tuple[str, ...] = ()) -> DeviceLaunch:
    """Translate and compile `gen` (cached), copy the buffers to the GPU, size the launch;
    `#include "..."` reads from `include_dirs`."""
    cupy = cupy_module()
    if cupy is None:
        raise RuntimeError("the CUDA back end needs CuPy and an NVIDIA GPU")
    translation = translation or translate(gen, math_mode, include_dirs)
    bound = tuple(p.name for p in gen.params if p.role != "attribute")
    if translation.buffers != bound:   # the entry's arguments must be bound in its order
        raise RuntimeError(f"translated buffers {translation.buffers} do not match {bound}")
    tg = clamp_threadgroup(grid, threadgroup)
    threads = tg[0] * tg[1] * tg[2]
    function = _compiled(translation.source, math_mode, max(32, -(-threads // 32) * 32),
                         matrix_defines(translation))
    keep, args, outs = [], [], []
    for param in gen.params:
        if param.role == "attribute":
            continue
        if param.role == "output":
            buffer = outputs[param.index]
            device = _device_copy(cupy, buffer.data)
            outs.append((buffer, device))
            pointer = device.data.ptr
        elif param.role == "input":
            bound = inputs[param.index]
            device = _device_copy(cupy, bound.data)
            pointer = device.data.ptr + bound.offset * bound.data.dtype.itemsize
        else:
            bound = inputs[param.index]
            values = {"shape": np.asarray(bound.shape, np.int32),
                      "strides": np.asarray(bound.strides, np.int64),
                      "ndim": np.asarray([len(bound.shape)], np.int32)}[param.role]
            device = _device_copy(cupy, values)
            pointer = device.data.ptr
        keep.append(device)
        args.append(np.uint64(pointer))
    blocks = (math.prod(math.ceil(g / t) for g, t in zip(grid, tg)), 1, 1)
    args += [np.uint32(v) for v in (*grid, *tg)]
    return DeviceLaunch(function, blocks, threads, tuple(args), keep, outs)


def run(gen: GeneratedKernel, inputs: list[BoundInput], outputs: list[OutputBuffer],
        grid: tuple[int, int, int], threadgroup: tuple[int, int, int],
        math_mode: str = "safe") -> None:
    """Launch once and leave the results in the `outputs` buffers."""
    launch = prepare(gen, inputs, outputs, grid, threadgroup, math_mode)
    launch.enqueue()
    launch.fetch()
