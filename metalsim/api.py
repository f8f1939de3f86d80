"""`metal_kernel`: a drop-in for `mx.fast.metal_kernel` that runs kernels in the simulator.

Code written for MLX must behave the same here, errors included, so this module reproduces what
MLX 0.32.4 accepts and rejects (`shared/design/mlx-kernel-api.md` §1), in MLX's order:

1. nanobind's argument conversion: a wrong type gives nanobind's "incompatible function
   arguments" TypeError, whose text (signature and "Invoked with types") is rebuilt here;
2. the conversion of each input to an array (`to_array`), then the template arguments;
3. the length checks, then the stream (only the GPU);
4. the source generation (and the `verbose` print), then the float64 check.

MLX checks the threadgroup size only at eval time; the simulator runs eagerly, so it checks at
call time. Where MLX accepts a call whose launch cannot work (negative sizes, an empty
threadgroup), the call raises a ValueError tagged `[metalsim]` instead of guessing.
"""

from __future__ import annotations

import inspect
import math
import operator
import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from typing import Any

import ml_dtypes
import mlx.core as mx
import numpy as np

from metalsim.diagnostics import KernelFault, TransformError
from metalsim.exec.machine import MAX_THREADS_PER_THREADGROUP
from metalsim.signature import (
    BoundInput,
    GeneratedKernel,
    KernelSpec,
    OutputBuffer,
    TemplateValue,
    generate,
    make_spec,
    verbose_text,
)

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

# The signatures nanobind prints in its TypeError, as the 0.32.4 binary renders them.
_FACTORY_SIGNATURE = (
    "metal_kernel(name: str, input_names: collections.abc.Sequence[str], "
    "output_names: collections.abc.Sequence[str], source: str, header: str = '', "
    "ensure_row_contiguous: bool = True, atomic_outputs: bool = False, "
    "compile_options: object | None = None) -> object"
)
_CALL_SIGNATURE = (
    "__call__(self, *, inputs: list[scalar | array], output_shapes: list[Sequence[int]], "
    "output_dtypes: list[Dtype], grid: tuple[int, int, int], "
    "threadgroup: tuple[int, int, int], "
    "template: list[tuple[str, bool | int | Dtype]] | None = None, "
    "init_value: float | None = None, verbose: bool = false, stream: StreamOrDevice = None)"
)

_MATH_MODES = ("safe", "relaxed", "fast")


# --- nanobind's argument conversion ---------------------------------------------------------


class _NoMatch(Exception):
    """An argument nanobind's type caster would refuse."""


_REQUIRED = object()
_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE


def _type_name(obj: object) -> str:
    """nanobind's name of `type(obj)`: `__name__`, prefixed by `__module__` for heap types."""
    cls = type(obj)
    name = cls.__name__
    if cls.__flags__ & _HEAPTYPE:
        module = getattr(cls, "__module__", None)
        if isinstance(module, str):
            name = f"{module}.{name}"
    return name


def _is_sequence(obj: object) -> bool:
    # PySequence_Check: dicts never; otherwise types with item access (approximated by
    # __getitem__, which a few C mapping types also have).
    return not isinstance(obj, dict) and hasattr(type(obj), "__getitem__")


def _sequence(obj: object) -> tuple:
    """nanobind's `seq_get`: any sequence except an exact str or bytes."""
    if type(obj) in (str, bytes):
        raise _NoMatch
    if type(obj) in (tuple, list) or _is_sequence(obj):
        try:
            return tuple(obj)
        except Exception:
            raise _NoMatch from None
    raise _NoMatch


def _sequence_of_size(obj: object, size: int) -> tuple:
    """nanobind's `seq_get_with_size` (tuples and pairs): str and bytes are allowed here."""
    if type(obj) in (tuple, list) or _is_sequence(obj):
        try:
            if len(obj) == size:
                return tuple(obj)
        except Exception:
            pass
    raise _NoMatch


def _integer(obj: object, low: int, high: int) -> int:
    # An exact int, else anything with __index__ (bool, numpy ints); never a float.
    if type(obj) is int:
        value = obj
    else:
        try:
            value = operator.index(obj)
        except Exception:
            raise _NoMatch from None
    if not low <= value <= high:
        raise _NoMatch
    return value


def _cast_int32(obj: object) -> int:
    return _integer(obj, INT32_MIN, INT32_MAX)


def _cast_str(obj: object) -> str:
    if not isinstance(obj, str):
        raise _NoMatch
    return str.__str__(obj)


def _cast_bool(obj: object) -> bool:
    if obj is True or obj is False:
        return obj
    raise _NoMatch


def _cast_any(obj: object) -> object:
    return obj


def _cast_float(obj: object) -> float:
    """`float` with conversion: floats, or anything with `__float__` / `__index__`."""
    try:
        if isinstance(obj, float) or hasattr(type(obj), "__float__"):
            value = float(obj)
        elif hasattr(type(obj), "__index__"):
            value = float(operator.index(obj))
        else:
            raise _NoMatch
    except Exception:  # whatever float() raises, nanobind just refuses the argument
        raise _NoMatch from None
    with np.errstate(over="ignore"):
        return float(np.float32(value))  # MLX keeps init_value as a C float


def _cast_shape(obj: object) -> tuple[int, ...]:
    """MLX's `Shape` caster: int64 elements, then an OverflowError outside int32.

    (The 0.32.4 binary aborts the whole process on that overflow; an exception is kinder.)
    """
    shape = tuple(_integer(x, INT64_MIN, INT64_MAX) for x in _sequence(obj))
    for value in shape:
        if not INT32_MIN <= value <= INT32_MAX:
            raise OverflowError(
                f"Integer value {value} is outside the supported range [{INT32_MIN}, {INT32_MAX}]."
            )
    return shape


def _cast_dtype(obj: object) -> mx.Dtype:
    if not isinstance(obj, mx.Dtype):
        raise _NoMatch
    return obj


def _cast_int3(obj: object) -> tuple[int, int, int]:
    x, y, z = (_cast_int32(v) for v in _sequence_of_size(obj, 3))
    return x, y, z


def _cast_template_pair(obj: object) -> tuple[str, object]:
    name, value = _sequence_of_size(obj, 2)
    return _cast_str(name), value


def _cast_stream(obj: object) -> object:
    """MLX's StreamOrDevice: None, a Stream, Device or DeviceType, or a DeviceType's int value."""
    if obj is None or isinstance(obj, (mx.Stream, mx.Device, mx.DeviceType, mx.ThreadLocalStream)):
        return obj
    try:
        value = operator.index(obj)  # nanobind converts ints (0, 1, True, ...) to the enum
    except Exception:
        raise _NoMatch from None
    if value not in {member.value for member in mx.DeviceType}:
        raise _NoMatch
    return mx.DeviceType(value)


def _cast_input(obj: object) -> object:
    # MLX's ScalarOrArray ends with ArrayLike, implicitly built from any object but None;
    # the real conversion (`to_array`) happens after all arguments are cast.
    if obj is None:
        raise _NoMatch
    return obj


def _list_of(cast: Callable[[object], Any]) -> Callable[[object], list]:
    return lambda obj: [cast(x) for x in _sequence(obj)]


def _optional(cast: Callable[[object], Any]) -> Callable[[object], Any]:
    return lambda obj: None if obj is None else cast(obj)


@dataclass(frozen=True)
class _Param:
    name: str
    cast: Callable[[object], Any]
    default: object = _REQUIRED


_FACTORY_PARAMS = (
    _Param("name", _cast_str),
    _Param("input_names", _list_of(_cast_str)),
    _Param("output_names", _list_of(_cast_str)),
    _Param("source", _cast_str),
    _Param("header", _cast_str, ""),
    _Param("ensure_row_contiguous", _cast_bool, True),
    _Param("atomic_outputs", _cast_bool, False),
    _Param("compile_options", _cast_any, None),
)
_CALL_PARAMS = (
    _Param("inputs", _list_of(_cast_input)),
    _Param("output_shapes", _list_of(_cast_shape)),
    _Param("output_dtypes", _list_of(_cast_dtype)),
    _Param("grid", _cast_int3),
    _Param("threadgroup", _cast_int3),
    _Param("template", _optional(_list_of(_cast_template_pair)), None),
    _Param("init_value", _optional(_cast_float), None),
    _Param("verbose", _cast_bool, False),
    _Param("stream", _cast_stream, None),
)


def _bind(
    func: str,
    signature: str,
    params: tuple[_Param, ...],
    positional: bool,
    args: tuple,
    kwargs: dict[str, object],
) -> dict[str, Any]:
    """Match and convert arguments as nanobind does, or raise its TypeError."""
    try:
        if len(args) > (len(params) if positional else 0):
            raise _NoMatch
        if set(kwargs) - {p.name for p in params}:
            raise _NoMatch
        values: dict[str, Any] = {}
        for i, param in enumerate(params):
            if i < len(args):
                if param.name in kwargs:
                    raise _NoMatch
                values[param.name] = param.cast(args[i])
            elif param.name in kwargs:
                values[param.name] = param.cast(kwargs[param.name])
            elif param.default is _REQUIRED:
                raise _NoMatch
            else:
                values[param.name] = param.default
        return values
    except _NoMatch:
        invoked = ", ".join(_type_name(a) for a in args)
        if kwargs:
            named = ", ".join(f"{k}: {_type_name(v)}" for k, v in kwargs.items())
            invoked += (", " if args else "") + "kwargs = { " + named + " }"
        raise TypeError(
            f"{func}(): incompatible function arguments. The following argument types are "
            f"supported:\n    1. {signature}\n\nInvoked with types: {invoked}"
        ) from None


def _signature(params: tuple[_Param, ...], method: bool) -> inspect.Signature:
    """The Python signature to show for a function whose arguments `_bind` matches."""
    kind = inspect.Parameter.KEYWORD_ONLY if method else inspect.Parameter.POSITIONAL_OR_KEYWORD
    empty = inspect.Parameter.empty
    shown = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)] if method else []
    shown += [
        inspect.Parameter(p.name, kind, default=empty if p.default is _REQUIRED else p.default)
        for p in params
    ]
    return inspect.Signature(shown)


# --- MLX's conversions and checks -----------------------------------------------------------


def _dtype_name(dtype: mx.Dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]  # "mlx.core.float32" -> "float32"


def _numpy_dtype(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def _exports_buffer(obj: object) -> bool:
    """Whether nanobind's ndarray caster takes `obj`: it exports DLPack or a buffer."""
    if hasattr(obj, "__dlpack__"):
        try:
            obj.__dlpack__()
            return True
        except Exception:
            pass
    try:
        memoryview(obj)
    except Exception:
        return False
    return True


def _to_array(obj: object) -> mx.array:
    """MLX's `to_array` for a kernel input, tried in the order of MLX's ScalarOrArray."""
    if isinstance(obj, bool):
        return mx.array(obj, dtype=mx.bool_)
    if isinstance(obj, int):
        value = int(obj)
        if not INT64_MIN <= value <= INT64_MAX:
            raise RuntimeError("std::bad_cast")  # what nb::cast<int64_t> failing raises
        return mx.array(value, dtype=mx.int32 if INT32_MIN <= value <= INT32_MAX else mx.int64)
    if isinstance(obj, float):  # includes numpy.float64, a float subclass: it becomes float32
        return mx.array(float(obj), dtype=mx.float32)
    if isinstance(obj, mx.array):
        return obj
    if _exports_buffer(obj):  # numpy arrays and scalars; float64 numpy becomes float32
        return mx.array(obj)
    if isinstance(obj, complex):
        return mx.array(complex(obj), dtype=mx.complex64)
    if hasattr(obj, "__mlx_array__"):
        result = obj.__mlx_array__()
        if not isinstance(result, mx.array):
            raise RuntimeError("std::bad_cast")
        return result
    raise ValueError(f"Invalid type {_type_name(obj)} received in array initialization.")


def _template_args(pairs: list[tuple[str, object]] | None) -> list[tuple[str, TemplateValue]]:
    """Check template values (bool, then exact int32, then Dtype) and normalise Dtypes to names."""
    result: list[tuple[str, TemplateValue]] = []
    for name, value in pairs or []:
        # `type(...) is int`: MLX's int check converts nothing (no IntEnum, no numpy ints).
        is_int32 = type(value) is int and INT32_MIN <= value <= INT32_MAX
        if value is True or value is False or is_int32:
            result.append((name, value))
        elif isinstance(value, mx.Dtype):
            result.append((name, _dtype_name(value)))
        else:
            raise ValueError(
                "[metal_kernel] Invalid template argument. "
                "Must be `mlx.core.Dtype`, `int` or `bool`."
            )
    return result


def _check_size(actual: int, expected: int, what: str) -> None:
    if actual != expected:
        # MLX ends this message with std::endl, hence the newline.
        raise ValueError(
            f"[metal_kernel] Expected `{what}` to have size {expected} but got size {actual}.\n"
        )


def _check_stream(stream: object) -> None:
    """MLX runs custom kernels on the GPU only; no stream means the default GPU stream."""
    if stream is None:
        return
    if isinstance(stream, mx.DeviceType):
        device_type = stream
    elif isinstance(stream, mx.Device):
        device_type = stream.type
    else:
        device_type = stream.device.type
    if device_type != mx.gpu:
        raise ValueError("[metal_kernel] Only supports the GPU.")


def _parse_compile_options(options: object) -> str:
    """The math mode from `compile_options`, with MLX's errors."""
    if options is None:
        return "safe"
    if not isinstance(options, dict):
        raise ValueError("[metal_kernel] Expected `compile_options` to be a dict.")
    math_mode = "safe"
    for key, value in options.items():
        if not isinstance(key, str):
            raise RuntimeError("std::bad_cast")  # nb::cast<std::string> of the key
        if key != "math_mode":
            raise ValueError(f"[metal_kernel] Unknown compile option `{key}`.")
        if not isinstance(value, str):
            raise RuntimeError("std::bad_cast")
        if value not in _MATH_MODES:
            raise ValueError(
                "[metal_kernel] Expected math_mode to be 'safe', 'relaxed', or 'fast'."
            )
        math_mode = value
    return math_mode


# --- inputs and outputs as numpy memory -----------------------------------------------------


def _row_major_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def _is_row_contiguous(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    # Strides of size-1 dimensions do not matter, as in MLX's `row_contiguous` flag.
    expected = _row_major_strides(shape)
    return all(n <= 1 or s == e for n, s, e in zip(shape, strides, expected, strict=True))


def _numpy_view(arr: mx.array) -> np.ndarray:
    """A numpy view of `arr` with its real strides and offset (no copy)."""
    mx.eval(arr)
    if arr.dtype == mx.bfloat16:
        # The buffer protocol has no bfloat16 format: view the bits as uint16 (MLX's `view`
        # keeps strides and offset) and reinterpret them with ml_dtypes.
        return np.asarray(arr.view(mx.uint16)).view(ml_dtypes.bfloat16)
    return np.asarray(arr)


def _bind_input(name: str, arr: mx.array, ensure_row_contiguous: bool) -> BoundInput:
    """The memory the kernel sees for one input, after MLX's contiguity rule.

    With `ensure_row_contiguous`, a non-row-contiguous input is copied to row-major; otherwise
    (and for row-contiguous views with an offset) the view is bound where it starts, keeping
    its strides. `data` is an owned, read-only copy of every element the view can reach.
    """
    view = _numpy_view(arr)
    shape = tuple(view.shape)
    strides = tuple(s // view.itemsize for s in view.strides)
    if ensure_row_contiguous and not _is_row_contiguous(shape, strides):
        view = np.ascontiguousarray(view)
        strides = _row_major_strides(shape)
    if view.size == 0:
        data, offset = np.empty(0, dtype=view.dtype), 0
    elif view.flags.c_contiguous:   # its elements are its span, in order
        data, offset = view.reshape(-1).copy(), 0
    else:
        low = sum(s * (n - 1) for s, n in zip(strides, shape, strict=True) if s < 0)
        high = sum(s * (n - 1) for s, n in zip(strides, shape, strict=True) if s > 0)
        # Flip the negative-stride axes so the view starts at its lowest address.
        lowest = view[tuple(slice(None, None, -1) if s < 0 else slice(None) for s in strides)]
        span = np.lib.stride_tricks.as_strided(
            lowest, shape=(high - low + 1,), strides=(view.itemsize,), writeable=False
        )
        data, offset = span.copy(), -low
    data.flags.writeable = False  # inputs are `const` in the kernel
    return BoundInput(
        name=name,
        data=data,
        dtype=_dtype_name(arr.dtype),
        shape=shape,
        strides=strides,
        size=int(arr.size),
        is_scalar=arr.ndim == 0,
        offset=offset,
    )


def _fill_value(value: float, dtype: str) -> object:
    """`init_value` (a C float) cast to `dtype`, as MLX casts its fill scalar.

    For integers C++ defines only in-range values (truncated toward zero); outside the range
    this saturates and NaN gives 0, which is what arm64's conversion instructions do.
    """
    v = np.float32(value)
    np_dtype = _numpy_dtype(dtype)
    if dtype == "bool":
        return bool(v != 0)
    if np_dtype.kind in "fc" or dtype == "bfloat16":
        return np.array(v).astype(np_dtype)
    if np.isnan(v):
        return 0
    info = np.iinfo(np_dtype)
    if v >= info.max:
        return info.max
    if v <= info.min:
        return info.min
    return int(v)


def _output_buffer(
    name: str, dtype: str, shape: tuple[int, ...], init_value: float | None
) -> OutputBuffer:
    """A fresh row-major output; without `init_value` it holds poison, like reused GPU memory."""
    np_dtype = _numpy_dtype(dtype)
    size = math.prod(shape)
    if init_value is not None:
        data = np.full(size, _fill_value(init_value, dtype), dtype=np_dtype)
    elif np_dtype.kind in "fc" or dtype == "bfloat16":
        data = np.full(size, np.nan, dtype=np_dtype)
    else:
        data = np.full(size * np_dtype.itemsize, 0xBE, dtype=np.uint8).view(np_dtype)
    return OutputBuffer(name, dtype, shape, data, initialized=init_value is not None)


def _to_mx(buffer: OutputBuffer) -> mx.array:
    values = np.asarray(buffer.data).reshape(buffer.shape)
    if buffer.dtype == "bfloat16":
        return mx.array(values.astype(np.float32)).astype(mx.bfloat16)  # exact round trip
    return mx.array(values)


# --- the kernel object ----------------------------------------------------------------------


@dataclass
class _Prepared:
    """One validated call, ready to launch."""

    gen: GeneratedKernel
    inputs: list[BoundInput]
    output_shapes: list[tuple[int, ...]]
    output_dtypes: list[str]
    grid: tuple[int, int, int]
    threadgroup: tuple[int, int, int]
    template: list[tuple[str, TemplateValue]]
    init_value: float | None
    verbose: bool


@dataclass
class Run:
    """The result of `simulate`: the outputs and the executor's Report (diagnostics etc.)."""

    outputs: list[mx.array]
    report: Any


class Kernel:
    """The callable `metal_kernel` returns; call it exactly like MLX's kernel object.

    Keyword-only arguments: inputs, output_shapes, output_dtypes, grid, threadgroup,
    template=None, init_value=None, verbose=False, stream=None. Returns `list[mx.array]`;
    raises `KernelFault` if the simulation found errors (use `simulate` to collect them), or,
    with `strict` set (as `metalsim.patch(strict=True)` does), warnings too.
    """

    def __init__(self, spec: KernelSpec) -> None:
        self.spec = spec
        self.strict = False   # set by `metalsim.patch(strict=True)`
        self.max_steps: int | None = None     # set by `metalsim.patch(max_steps=...)`
        self.max_seconds: float | None = None  # set by `metalsim.patch(max_seconds=...)`
        # Where `#include "..."` looks (a compiler's -I); set by `metalsim.patch(include_dirs=...)`
        self.include_dirs: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"<metalsim.Kernel {self.spec.name!r}>"

    def __call__(self, *args: object, **kwargs: object) -> list[mx.array]:
        run = self._run(args, kwargs, trace=False, strict=self.strict,
                        max_steps=self.max_steps, max_seconds=self.max_seconds)
        if any(d.severity == "error" for d in run.report.diagnostics):
            raise KernelFault(run.report.diagnostics)
        inputs = kwargs.get("inputs", args[0] if args else [])
        return _without_derivatives(list(inputs), run.outputs)

    def _prepare(self, args: tuple, kwargs: dict[str, object]) -> _Prepared:
        """MLX's call up to and including source generation, in MLX's order of checks."""
        spec = self.spec
        v = _bind("__call__", _CALL_SIGNATURE, _CALL_PARAMS, False, args, kwargs)
        arrays = [_to_array(x) for x in v["inputs"]]
        template = _template_args(v["template"])
        _check_size(len(arrays), len(spec.input_names), "inputs")
        _check_size(len(v["output_shapes"]), len(spec.output_names), "output_shapes")
        _check_size(len(v["output_dtypes"]), len(spec.output_names), "output_dtypes")
        _check_stream(v["stream"])
        try:
            inputs = [
                _bind_input(name, arr, spec.ensure_row_contiguous)
                for name, arr in zip(spec.input_names, arrays, strict=True)
            ]
        except ValueError as error:
            # MLX refuses to evaluate a traced input; say why in the kernel's terms.
            if "during function transformations" not in str(error):
                raise
            raise TransformError(spec.name) from None
        output_dtypes = [_dtype_name(d) for d in v["output_dtypes"]]
        return _Prepared(
            gen=generate(spec, inputs, output_dtypes, template),
            inputs=inputs,
            output_shapes=v["output_shapes"],
            output_dtypes=output_dtypes,
            grid=v["grid"],
            threadgroup=v["threadgroup"],
            template=template,
            init_value=v["init_value"],
            verbose=v["verbose"],
        )

    def _run(self, args: tuple, kwargs: dict[str, object], trace: bool | Collection[int],
             strict: bool = False, profile: bool = False, max_steps: int | None = None,
             max_seconds: float | None = None, memory_budget: int | None = None) -> Run:
        _check_limits(max_steps, max_seconds)
        call = self._prepare(args, kwargs)
        if call.verbose:
            sys.stdout.write(verbose_text(call.gen))
            sys.stdout.flush()
        if "float64" in call.output_dtypes or any(b.dtype == "float64" for b in call.inputs):
            raise ValueError("float64 is not supported on the GPU")
        _check_launch(call, self.spec.output_names)
        outputs = [
            _output_buffer(name, dtype, shape, call.init_value)
            for name, dtype, shape in zip(
                self.spec.output_names, call.output_dtypes, call.output_shapes, strict=True
            )
        ]
        from metalsim.exec.launch import launch  # the executor is imported only to run

        report = launch(
            call.gen,
            call.inputs,
            outputs,
            call.grid,
            call.threadgroup,
            call.template,
            self.spec.math_mode,
            trace,
            profile=profile,
            step_limit=max_steps,
            time_limit=max_seconds,
            # the launch's own default (none) unless the kernel has include directories
            **({"include_dirs": tuple(str(d) for d in self.include_dirs)}
               if self.include_dirs else {}),
            # the launch's own default unless a budget is given
            **({} if memory_budget is None else {"memory_budget": memory_budget}),
        )
        if strict:
            report.diagnostics = [replace(d, severity="error") for d in report.diagnostics]
        return Run(outputs=[_to_mx(b) for b in outputs], report=report)


def _without_derivatives(inputs: list[object], outputs: list[mx.array]) -> list[mx.array]:
    """The outputs, tied to the array inputs as MLX's CustomKernel primitive ties them: in the
    graph, so that `mx.grad` or `mx.jvp` through a raw kernel call raises MLX's own error
    instead of treating the simulated outputs as constants (a silent zero gradient)."""
    arrays = [x for x in inputs if isinstance(x, mx.array)]
    if not arrays:
        return outputs

    @mx.custom_function
    def custom_kernel(*_: mx.array) -> list[mx.array]:
        return outputs

    @custom_kernel.vjp
    def _vjp(*_: object) -> None:
        raise ValueError("[Primitive::vjp] Not implemented for CustomKernel.")

    @custom_kernel.jvp
    def _jvp(*_: object) -> None:
        raise ValueError("[Primitive::jvp] Not implemented for CustomKernel.")

    return list(custom_kernel(*arrays))


def _check_limits(max_steps: int | None, max_seconds: float | None) -> None:
    if max_steps is not None and (isinstance(max_steps, bool) or not isinstance(max_steps, int)
                                  or max_steps < 1):
        raise ValueError(f"[metalsim] max_steps must be a positive int, got {max_steps!r}.")
    if max_seconds is not None and (isinstance(max_seconds, bool)
                                    or not isinstance(max_seconds, int | float)
                                    or not max_seconds > 0):
        raise ValueError(f"[metalsim] max_seconds must be a positive number, got "
                         f"{max_seconds!r}.")


def _check_launch(call: _Prepared, output_names: tuple[str, ...]) -> None:
    """What MLX leaves to eval time (or to Metal), checked before the simulated launch."""
    if any(n < 1 for n in call.threadgroup):
        raise ValueError(
            f"[metalsim] `threadgroup` sizes must be positive, got {call.threadgroup}: "
            "Metal cannot dispatch an empty threadgroup."
        )
    if any(n < 0 for n in call.grid):
        raise ValueError(f"[metalsim] `grid` sizes must not be negative, got {call.grid}.")
    for name, shape in zip(output_names, call.output_shapes, strict=True):
        if any(n < 0 for n in shape):
            raise ValueError(
                f"[metalsim] `output_shapes` must not hold negative sizes, got {shape} for "
                f"output `{name}`."
            )
    total = math.prod(call.threadgroup)
    if total > MAX_THREADS_PER_THREADGROUP:
        raise ValueError(
            f"Thread group size ({total}) is greater than  the maximum allowed threads per "
            f"threadgroup ({MAX_THREADS_PER_THREADGROUP})."
        )


def metal_kernel(*args: object, **kwargs: object) -> Kernel:
    """Build a kernel like `mx.fast.metal_kernel(name, input_names, output_names, source,
    header="", ensure_row_contiguous=True, atomic_outputs=False, compile_options=None)`.

    The source scans (attributes, `<input>_shape`/`_strides`/`_ndim`) happen here, once.
    """
    v = _bind("metal_kernel", _FACTORY_SIGNATURE, _FACTORY_PARAMS, True, args, kwargs)
    # MLX parses compile_options while building the arguments of its C++ factory, so its
    # errors come before the empty-outputs check.
    math_mode = _parse_compile_options(v["compile_options"])
    if not v["output_names"]:
        raise ValueError("[metal_kernel] Must specify at least one output.")
    return Kernel(
        make_spec(
            name=v["name"],
            input_names=v["input_names"],
            output_names=v["output_names"],
            source=v["source"],
            header=v["header"],
            ensure_row_contiguous=v["ensure_row_contiguous"],
            atomic_outputs=v["atomic_outputs"],
            math_mode=math_mode,
        )
    )


metal_kernel.__signature__ = _signature(_FACTORY_PARAMS, method=False)
Kernel.__call__.__signature__ = _signature(_CALL_PARAMS, method=True)


def simulate(kernel: Kernel, *, trace: bool | Collection[int] = False, strict: bool = False,
             profile: bool = False, max_steps: int | None = None,
             max_seconds: float | None = None, memory_budget: int | None = None,
             **call_kwargs: object) -> Run:
    """Run `kernel` with the call's keyword arguments; diagnostics are collected, not raised.

    `trace=True` asks the executor to record every memory access (for diagrams); a collection
    of linear threadgroup ids records only those threadgroups' accesses, which costs little
    more than an untraced run (what the diagram of one threadgroup needs).
    `strict=True` makes every warning (division by zero, a shift out of range, a SIMD-group
    read of an inactive lane, behaviour the Metal spec leaves open) an error.
    `profile=True` measures coalescing and threadgroup-memory bank conflicts into
    `run.report.memory` (`metalsim.efficiency` states the model).
    `max_steps` bounds the work of the launch in expression nodes evaluated (default
    1,000,000; a memory access counts 4), `max_seconds` its wall time (default: none); past
    either the launch stops with a `step-limit` error. They default to the kernel's own
    (`metalsim.patch(max_steps=...)`).
    `memory_budget` (bytes) bounds the simulator's bookkeeping: batches of threadgroups are
    sized to fit it, and a launch that cannot fit is a `resource-limit` error, reported before
    anything is allocated (default: a sixteenth of the machine's RAM).
    """
    return kernel._run((), call_kwargs, trace, strict, profile,
                       kernel.max_steps if max_steps is None else max_steps,
                       kernel.max_seconds if max_seconds is None else max_seconds,
                       memory_budget)


def source(kernel: Kernel, **call_kwargs: object) -> str:
    """The exact text MLX would generate for this call (what `verbose=True` shows), unexecuted.

    The call is validated as MLX validates it up to generation; like MLX, a float64 dtype still
    generates text (MLX rejects it only afterwards), and nothing is printed.
    """
    return kernel._prepare((), call_kwargs).gen.text
