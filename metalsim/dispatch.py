"""`dispatch`: run one `[[kernel]]` function of a whole Metal source with buffers, as a compute
pipeline does, in the simulator.

`mx.fast.metal_kernel` takes only a kernel's body and writes the function around it; MLX's own
kernel library (and any .metal file) is whole kernel functions instead, whose arguments are
bound by index (`const device T* in [[buffer(0)]]`, `constant int& n [[buffer(2)]]`), whose
thread attributes are named and typed freely (`uint gid [[threadgroup_position_in_grid]]`),
and whose templates run under the name an explicit instantiation gives them
(`template [[host_name("softmax_float")]] [[kernel]] decltype(softmax<float>) softmax<float>;`),
as MLX's .metal files instantiate its headers' kernels. `function_constants` are what a
pipeline's `MTLFunctionConstantValues` set (by index or name).

    run = metalsim.dispatch(source, "softmax_float", buffers={0: x, 1: out, 2: 128},
                            grid=(32 * rows, 1, 1), threadgroup=(32, 1, 1),
                            include_dirs=[metalsim.mlx_include_dir()])
    run.buffers[1]   # an mx.array: the buffer after the kernel ran

Dispatch counts threads, as `dispatchThreads` (and `mx.fast.metal_kernel`) do. Buffers the
kernel may write (non-const `device` pointers) are copied, checked for races, and returned with
what the kernel wrote; the others are read-only. A threadgroup-memory argument
(`threadgroup float* tmp [[threadgroup(0)]]`) gets `threadgroup_memory[n]` bytes per
threadgroup, as a pipeline's `setThreadgroupMemoryLength:atIndex:` gives (a multiple of 16
bytes): uninitialised, bounds- and race-checked as threadgroup variables are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import ml_dtypes
import mlx.core as mx
import numpy as np

from metalsim.api import _numpy_view
from metalsim.diagnostics import Coord, KernelFault
from metalsim.report import Report

Buffer = mx.array | np.ndarray | bytes | bool | int | float


@dataclass
class Dispatch:
    """What `dispatch` returns: every bound buffer after the run, by index, and the Report
    (None from `metalsim.cuda.dispatch`: the GPU gives values, not diagnostics)."""

    buffers: dict[int, mx.array | bytes]
    report: Report | None


@dataclass
class _Written:
    """A buffer the kernel may write, as the launch's memory plan sees it."""

    data: np.ndarray


def dispatch(source: str, function: str, buffers: Mapping[int, Buffer],
             grid: Sequence[int], threadgroup: Sequence[int], *,
             function_constants: Mapping[int | str, bool | int | float] | None = None,
             threadgroup_memory: Mapping[int, int] | None = None,
             include_dirs: Sequence[str | Path] = (), math_mode: str = "safe",
             max_steps: int | None = None, check: bool = True) -> Dispatch:
    """Run the kernel function `function` of `source` (a kernel's name, or the
    `[[host_name("...")]]` of an instantiation of a kernel template) over `grid` threads in
    threadgroups of `threadgroup`, with `buffers[i]` bound to `[[buffer(i)]]`.

    A buffer is an `mx.array` or numpy array (of the element type the argument declares), a
    Python scalar for a `constant T&` argument (converted to T), or `bytes` for a struct.
    `threadgroup_memory[n]`: the bytes of threadgroup memory bound to `[[threadgroup(n)]]`.
    `include_dirs`: where `#include "..."` looks (`metalsim.mlx_include_dir()` for MLX's
    kernels). `check=True` raises `KernelFault` if the run found errors; otherwise they are in
    `report.diagnostics`."""
    from metalsim.exec import launch as ex  # the executor is imported only to run
    from metalsim.exec import memory as mem

    grid3, group3 = _dims("grid", grid), _dims("threadgroup", threadgroup)
    if math_mode not in ("safe", "relaxed", "fast"):
        raise ValueError(f"[metalsim] math_mode must be 'safe', 'relaxed' or 'fast', got "
                         f"{math_mode!r}.")
    dirs = tuple(str(d) for d in include_dirs)
    constants = tuple(sorted((function_constants or {}).items(), key=lambda kv: str(kv[0])))

    def execute(tracing: bool):
        with ex.deep_recursion():
            program = ex.compile_program(source, (("source", 0, len(source)),), math_mode,
                                         tracing, dirs, ex.header_files(dirs), function,
                                         constants)
            arguments = _buffer_arguments(program, function)
            m = ex.Machine(grid3, program.source_map, max_steps or ex.DEFAULT_STEP_LIMIT,
                           tracing, None, None, program.guards)
            m.efficiency = None
            regions, written, traffic = _bind(m, program, function, arguments, buffers,
                                              threadgroup_memory or {})
            # the bound threadgroup memory counts with what the kernel declares
            bound = [r for r in regions.values() if isinstance(r, ex.ThreadgroupArgument)]
            code = replace(program.code, threadgroup_bytes=program.code.threadgroup_bytes + sum(
                r.nbytes for r in bound), threadgroup_granules=program.code.threadgroup_granules
                + sum(-(-r.nbytes // mem.leaf_scalar(r.elem).size) for r in bound))
            plan = ex.plan_memory(replace(program, code=code),
                                  [_Written(r.data) for r in written.values()], grid3, tg,
                                  ex.default_memory_budget())
            if ex.within_resource_limits(m, code, len(regions) - len(bound), group3) and (
                    m.total_threads):
                ex.run_batches(m, program, regions, tg, Coord("source", 1, 1),
                               max(plan.lanes, int(np.prod(tg))))
        m.trace = None
        return m, written, traffic

    tg = tuple(max(1, min(t, g)) for t, g in zip(group3, grid3))
    m, written, traffic = execute(tracing=False)
    if m.unfollowed_undefined and m.total_threads <= ex.MAX_TRACED_THREADS:
        # As `launch` does: an uninitialised read matters only where its value goes, which a
        # traced run (from the same buffers) follows; its findings replace the first run's.
        m, written, traffic = execute(tracing=True)
    report = ex.build_report(m, grid3, tg, traffic)
    if check and report.errors:
        raise KernelFault(report.diagnostics)
    result: dict[int, mx.array | bytes] = {}
    for index, value in buffers.items():
        region = written.get(index)
        result[index] = (_as_mx(region.data, value) if region is not None
                         else value if isinstance(value, bytes) else mx.array(value))
    return Dispatch(result, report)


def _dims(what: str, dims: Sequence[int]) -> tuple[int, int, int]:
    values = tuple(dims)
    if len(values) != 3 or not all(isinstance(v, int | np.integer) and v > 0 for v in values):
        raise ValueError(f"[metalsim] {what} must be three positive ints, got {dims!r}.")
    return int(values[0]), int(values[1]), int(values[2])


@dataclass
class _Argument:
    name: str
    index: int | None   # None: absent (its function constant is false)
    var: object
    threadgroup: bool = False   # `[[threadgroup(n)]]`: `index` is n


def _buffer_arguments(program, function: str) -> list[_Argument]:
    """The kernel's buffer arguments and their indices; any other argument must be a thread
    attribute. Arguments without `[[buffer(n)]]` take 0, 1, 2, ... in order (MLX's
    arange.h declares none); metalsim refuses a mix of the two forms rather than guess how
    the compiler numbers it."""
    from metalsim.exec import launch as ex
    from metalsim.lang import ast

    arguments = []
    implicit, explicit = [], []
    for name, var in program.params.items():
        attributes = {a.name: a for a in program.param_attributes.get(name, ())}
        if "threadgroup" in attributes:
            literal = attributes["threadgroup"].args[0] if attributes["threadgroup"].args else None
            if not isinstance(literal, ast.IntLiteral):
                raise ValueError(f"[metalsim] argument '{name}' of '{function}': metalsim "
                                 "reads [[threadgroup(n)]] with n an integer literal.")
            arguments.append(_Argument(name, literal.value, var, threadgroup=True))
            continue
        if program.attribute_of(name) in ex.THREAD_ATTRIBUTES:
            continue
        buffer = attributes.get("buffer")
        if buffer is None:
            implicit.append(name)
            index = len(implicit) - 1
        else:
            explicit.append(name)
            literal = buffer.args[0] if buffer.args else None
            if not isinstance(literal, ast.IntLiteral):
                raise ValueError(f"[metalsim] argument '{name}' of '{function}': metalsim "
                                 "reads [[buffer(n)]] with n an integer literal.")
            index = literal.value
        condition = attributes.get("function_constant")
        constant = condition.args[0] if condition is not None and condition.args else None
        if isinstance(constant, ast.Name) and not program.function_constants.get(constant.name):
            index = None   # Metal binds the argument only where its function constant is true
        arguments.append(_Argument(name, index, var))
    if implicit and explicit:
        raise ValueError(f"[metalsim] '{function}' gives [[buffer(n)]] to some arguments "
                         f"({', '.join(explicit)}) and not to others ({', '.join(implicit)}); "
                         "metalsim.dispatch needs all or none.")
    return arguments


def _bind(m, program, function: str, arguments: list[_Argument], buffers: Mapping,
          threadgroup_memory: Mapping[int, int]):
    """A region per buffer argument (absent ones get an empty region: any access is out of
    bounds) and what each threadgroup argument is bound (`ThreadgroupArgument`), the writable
    buffers by index, and the traffic rows."""
    from metalsim.exec import launch as ex
    from metalsim.exec import memory as mem
    from metalsim.lang import types as ty

    regions: dict[str, tuple] = {}
    written: dict[int, object] = {}
    traffic = []
    for arg in arguments:
        var = arg.var
        pointer = isinstance(var.type, ty.PointerType)
        elem = var.type.pointee if pointer else var.type
        space = var.type.space if pointer else (var.space or "constant")
        if arg.threadgroup:
            regions[arg.name] = ex.ThreadgroupArgument(elem, _threadgroup_length(
                function, arg, elem, threadgroup_memory))
            continue
        if arg.index is None:
            regions[arg.name] = (mem.Region(arg.name, space, elem, 0, data=np.zeros(0, np.uint8),
                                            element_count=0), 0)
            continue
        if arg.index not in buffers:
            raise ValueError(f"[metalsim] '{function}' takes buffer {arg.index} "
                             f"('{arg.name}', {var.type}), which `buffers` does not give.")
        data = _bytes_of(buffers[arg.index], elem, arg.name, pointer)
        writable = pointer and space == "device" and not var.type.const
        if writable:
            region = ex._buffer_region(arg.name, data, elem, "device", counted="global",
                                       track_races=True, track_writes=True,
                                       element_count=data.size // max(1, elem.size))
            written[arg.index] = region
            traffic.append((region, "output", data.size))
        else:
            region = ex._buffer_region(arg.name, data, elem, space, counted="global",
                                       element_count=data.size // max(1, elem.size))
            region.data.flags.writeable = False
            traffic.append((region, "input", data.size))
        m.buffers[arg.name] = {"role": "output" if writable else "input", "space": space,
                               "shape": (data.size // max(1, elem.size),), "type": str(elem)}
        regions[arg.name] = (region, 0)
    return regions, written, traffic


def _threadgroup_length(function: str, arg: _Argument, elem, lengths: Mapping[int, int]
                        ) -> int:
    """The bytes `lengths` binds to threadgroup argument `arg`, checked as Metal does."""
    if arg.index not in lengths:
        raise ValueError(f"[metalsim] '{function}' takes threadgroup memory {arg.index} "
                         f"('{arg.name}', threadgroup {elem}*), which `threadgroup_memory` "
                         f"does not give: pass threadgroup_memory={{{arg.index}: bytes}}.")
    length = lengths[arg.index]
    if not isinstance(length, int | np.integer) or length <= 0 or length % 16:
        raise ValueError(f"[metalsim] threadgroup_memory[{arg.index}] must be a positive "
                         f"multiple of 16 bytes (as setThreadgroupMemoryLength requires), got "
                         f"{length!r}.")
    if length < elem.size:
        raise ValueError(f"[metalsim] threadgroup_memory[{arg.index}] is {length} bytes, "
                         f"fewer than one {elem} ({elem.size} bytes).")
    return int(length)


def _bytes_of(value: Buffer, elem, name: str, pointer: bool) -> np.ndarray:
    """The bytes a buffer holds, checked against the element type the argument declares."""
    from metalsim.lang import types as ty

    if isinstance(value, bytes):
        if len(value) < elem.size:
            raise ValueError(f"[metalsim] buffer '{name}' holds {len(value)} bytes, fewer than "
                             f"one {elem} ({elem.size} bytes).")
        return np.frombuffer(value, np.uint8).copy()
    if not isinstance(elem, ty.ScalarType):
        raise ValueError(f"[metalsim] buffer '{name}' is a {elem}: pass its bytes.")
    if isinstance(value, bool | int | float) and not pointer:
        return np.asarray(value).astype(elem.dtype).reshape(1).view(np.uint8).copy()
    array = _numpy_view(value) if isinstance(value, mx.array) else np.asarray(value)
    if array.dtype != elem.dtype:
        raise ValueError(f"[metalsim] buffer '{name}' is {array.dtype}, but the kernel "
                         f"declares {elem} ({elem.dtype}) elements.")
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8).copy()


def _as_mx(data: np.ndarray, given: Buffer) -> mx.array | bytes:
    """A written buffer's bytes as the caller gave it: bytes, or an array of its dtype and
    shape."""
    raw = data.reshape(-1)
    if isinstance(given, bytes):
        return raw.tobytes()
    like = _numpy_view(given) if isinstance(given, mx.array) else np.asarray(given)
    values = raw.view(like.dtype).reshape(like.shape)
    if like.dtype == ml_dtypes.bfloat16:
        return mx.array(values.astype(np.float32)).astype(mx.bfloat16)  # exact round trip
    return mx.array(values)
