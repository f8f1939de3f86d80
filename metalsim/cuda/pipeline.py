"""`metalsim.cuda.dispatch`: `metalsim.dispatch` on an NVIDIA GPU. One `[[kernel]]` function
of a whole Metal source (by name, or by the `[[host_name("...")]]` of an instantiation), with
the function constants a pipeline sets, runs over a grid with buffers bound by
`[[buffer(n)]]`, and returns the same `Dispatch` (with `report=None`: the GPU gives values,
not diagnostics).

    run = metalsim.cuda.dispatch(source, "softmax_float", buffers={0: x, 1: out, 2: 128},
                                 grid=(32 * rows, 1, 1), threadgroup=(32, 1, 1),
                                 include_dirs=[metalsim.mlx_include_dir()])
    run.buffers[1]   # an mx.array: the buffer after the kernel ran on the GPU

The kernel is compiled by the simulator's front end first (so a source it refuses is refused
here with the same message): its argument types tell how each buffer is converted and which
ones the kernel may write, exactly as `metalsim.dispatch` binds them. The source is then
translated (`translate_function`) and launched as `metalsim.cuda.runtime` launches MLX's
kernels: `grid` counts threads, the threadgroup is clamped to it, edge threadgroups are partial.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mlx.core as mx
import numpy as np

from metalsim.cuda import runtime
from metalsim.cuda.translate import Translation, translate_function
from metalsim.dispatch import Buffer, Dispatch, _as_mx, _buffer_arguments, _bytes_of, _dims
from metalsim.signature import OutputBuffer

# Bytes bound to an argument its function constant leaves out: Metal binds nothing there, and
# kernels may still load from it where the value goes unused (MLX's steel GEMM reads
# `addmm_params->alpha` in every matmul); a zero block keeps such a dead load harmless.
ABSENT_BYTES = 256
# Zero bytes after every buffer on the GPU: MLX's kernels read a little past a buffer's end
# where the values go unused (steel GEMM's epilogue reads C below its last row), which Metal's
# page-sized allocations absorb; the simulator is the one that reports such reads.
GUARD_BYTES = 64 * 1024


@dataclass
class BufferBinding:
    """One argument the entry takes, in its order: the bytes bound to it."""

    name: str
    index: int | None     # the [[buffer(n)]] it is bound to; None where it is absent
    data: np.ndarray      # its bytes (uint8)
    writable: bool        # a non-const `device` pointer: copied back after the run


@dataclass
class Pipeline:
    """A dispatch ready to launch: the translated kernel, its bindings and the launch size."""

    translation: Translation
    bindings: list[BufferBinding]
    grid: tuple[int, int, int]
    threadgroup: tuple[int, int, int]   # clamped to the grid
    math_mode: str


def plan(source: str, function: str, buffers: Mapping[int, Buffer],
         grid: Sequence[int], threadgroup: Sequence[int], *,
         function_constants: Mapping[int | str, bool | int | float] | None = None,
         include_dirs: Sequence[str | Path] = (), math_mode: str = "safe") -> Pipeline:
    """Compile (simulator front end), bind and translate a dispatch; needs no GPU."""
    from metalsim.exec import launch as ex  # the executor's compiler, imported only to run
    from metalsim.lang import types as ty

    grid3 = _dims("grid", grid)
    group3 = _dims("threadgroup", threadgroup)
    if math_mode not in ("safe", "relaxed", "fast"):
        raise ValueError(f"[metalsim] math_mode must be 'safe', 'relaxed' or 'fast', got "
                         f"{math_mode!r}.")
    dirs = tuple(str(d) for d in include_dirs)
    constants = dict(function_constants or {})
    ordered = tuple(sorted(constants.items(), key=lambda kv: str(kv[0])))
    headers = ex.header_files(dirs)
    with ex.deep_recursion():
        program = ex.compile_program(source, (("source", 0, len(source)),), math_mode, False,
                                     dirs, headers, function, ordered)
        translation = _translation(source, function, ordered, math_mode, dirs, headers)
    arguments = {a.name: a for a in _buffer_arguments(program, function)}
    bindings = []
    for name in translation.buffers:
        arg = arguments[name]
        if arg.index is None:
            bindings.append(BufferBinding(name, None, np.zeros(ABSENT_BYTES, np.uint8), False))
            continue
        if arg.index not in buffers:
            raise ValueError(f"[metalsim] '{function}' takes buffer {arg.index} "
                             f"('{name}', {arg.var.type}), which `buffers` does not give.")
        t = arg.var.type
        pointer = isinstance(t, ty.PointerType)
        elem = t.pointee if pointer else t
        data = _bytes_of(buffers[arg.index], elem, name, pointer)
        writable = pointer and t.space == "device" and not t.const
        bindings.append(BufferBinding(name, arg.index, data, writable))
    group = runtime.clamp_threadgroup(grid3, group3)
    return Pipeline(translation, bindings, grid3, group, math_mode)


@functools.lru_cache(maxsize=64)
def _translation(source: str, function: str, constants: tuple, math_mode: str,
                 include_dirs: tuple[str, ...], headers: tuple) -> Translation:
    """`translate_function`, once per kernel (MLX's headers take a second or two to parse);
    `headers` (`header_files(include_dirs)`) only keys the cache."""
    return translate_function(source, function, dict(constants), math_mode, include_dirs)


def launch_size(pipeline: Pipeline) -> tuple[int, int]:
    """(CUDA blocks, threads per block): one block per threadgroup, partial ones included."""
    blocks = math.prod(math.ceil(g / t) for g, t in zip(pipeline.grid, pipeline.threadgroup))
    return blocks, math.prod(pipeline.threadgroup)


def prepare(pipeline: Pipeline) -> runtime.DeviceLaunch:
    """Compile for this GPU (cached), copy the buffers there, size the launch."""
    cupy = runtime.cupy_module()
    if cupy is None:
        raise RuntimeError("the CUDA back end needs CuPy and an NVIDIA GPU")
    blocks, threads = launch_size(pipeline)
    function = runtime._compiled(pipeline.translation.source, pipeline.math_mode,
                                 max(32, -(-threads // 32) * 32),
                                 runtime.matrix_defines(pipeline.translation))
    keep, args, outputs = [], [], []
    for binding in pipeline.bindings:
        device = cupy.asarray(np.concatenate([binding.data, np.zeros(GUARD_BYTES, np.uint8)]))
        keep.append(device)
        args.append(np.uint64(device.data.ptr))
        if binding.writable:
            outputs.append((OutputBuffer(binding.name, "uint8", binding.data.shape,
                                         binding.data, True), device))
    args += [np.uint32(v) for v in (*pipeline.grid, *pipeline.threadgroup)]
    return runtime.DeviceLaunch(function, (blocks, 1, 1), threads, tuple(args), keep, outputs)


def dispatch(source: str, function: str, buffers: Mapping[int, Buffer],
             grid: Sequence[int], threadgroup: Sequence[int], *,
             function_constants: Mapping[int | str, bool | int | float] | None = None,
             include_dirs: Sequence[str | Path] = (), math_mode: str = "safe"
             ) -> Dispatch:
    """`metalsim.dispatch(...)`'s arguments and result, the kernel run on the GPU: every bound
    buffer by index afterwards (those the kernel may write with what it wrote), and no
    report. The simulator's `max_steps` and `check` are not taken: the GPU neither counts
    steps nor checks accesses (run `metalsim.dispatch` for that)."""
    pipeline = plan(source, function, buffers, grid, threadgroup,
                    function_constants=function_constants, include_dirs=include_dirs,
                    math_mode=math_mode)
    launch = prepare(pipeline)
    launch.enqueue()
    launch.fetch()
    return result(pipeline, buffers)


def result(pipeline: Pipeline, buffers: Mapping[int, Any]) -> Dispatch:
    """The Dispatch after a run: written buffers from their bindings' bytes, as given."""
    written = {b.index: b.data for b in pipeline.bindings if b.writable}
    out: dict[int, mx.array | bytes] = {}
    for index, value in buffers.items():
        out[index] = (_as_mx(written[index], value) if index in written
                      else value if isinstance(value, bytes) else mx.array(value))
    return Dispatch(out, None)
