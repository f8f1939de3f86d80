"""`metalsim.metal_kernel` accepts and rejects what `mx.fast.metal_kernel` 0.32.4 does.

Every case runs against the installed MLX, live. Kernel calls run inside `mx.export_function`
tracing, where MLX gets past its "No Metal back-end" check and performs every call-time check
(stream, float64) as it would on a Mac. The simulator's executor is replaced by a stub module,
so these tests exercise only the API layer.
"""

from __future__ import annotations

import enum
import sys
import types
from pathlib import Path

import ml_dtypes
import mlx.core as mx
import numpy as np
import pytest

from metalsim import api
from metalsim.diagnostics import Diagnostic, KernelFault
from metalsim.signature import BoundInput

SRC = "uint i = thread_position_in_grid.x; out[i] = a[i];"


class Color(enum.IntEnum):
    RED = 4


class NotAnArray:
    """An object MLX cannot turn into an array."""


class HasMlxArray:
    def __mlx_array__(self) -> mx.array:
        return mx.arange(3)


def _outcome(fn) -> tuple[str, str]:
    try:
        fn()
    except Exception as exc:  # the point is to compare whatever is raised
        return type(exc).__name__, str(exc)
    return "ok", ""


# --- the factory ----------------------------------------------------------------------------

FACTORY_CASES: dict[str, tuple[tuple, dict]] = {
    "positional": (("k", ["a"], ["out"], SRC, "", True, False, None), {}),
    "keywords": ((), dict(name="k", input_names=["a"], output_names=["out"], source=SRC)),
    "no inputs": (("k", [], ["out"], SRC), {}),
    "tuple names": (("k", ("a",), ("out",), SRC), {}),
    "numpy names": (("k", np.array(["a"]), ["out"], SRC), {}),
    "str subclass": ((type("S", (str,), {})("k"), ["a"], ["out"], SRC), {}),
    "no args": ((), {}),
    "missing source": (("k", ["a"], ["out"]), {}),
    "nine positional": (("k", ["a"], ["out"], SRC, "", True, False, None, 1), {}),
    "unknown keyword": (("k", ["a"], ["out"], SRC), dict(foo=1)),
    "name twice": (("k", ["a"], ["out"], SRC), dict(name="k")),
    "name int": ((3, ["a"], ["out"], SRC), {}),
    "name bytes": ((b"k", ["a"], ["out"], SRC), {}),
    "names str": (("k", "ab", ["out"], SRC), {}),
    "names set": (("k", {"a"}, ["out"], SRC), {}),
    "names dict": (("k", {"a": 1}, ["out"], SRC), {}),
    "names bytes elements": (("k", [b"a"], ["out"], SRC), {}),
    "names generator": (("k", (n for n in ["a"]), ["out"], SRC), {}),  # not a sequence
    "source None": (("k", ["a"], ["out"], None), {}),
    "header None": (("k", ["a"], ["out"], SRC), dict(header=None)),
    "ensure int": (("k", ["a"], ["out"], SRC), dict(ensure_row_contiguous=1)),
    "ensure numpy bool": (("k", ["a"], ["out"], SRC), dict(ensure_row_contiguous=np.bool_(1))),
    "atomic None": (("k", ["a"], ["out"], SRC), dict(atomic_outputs=None)),
    "empty outputs": (("k", ["a"], [], SRC), {}),
    "options None": (("k", ["a"], ["out"], SRC), dict(compile_options=None)),
    "options empty": (("k", ["a"], ["out"], SRC), dict(compile_options={})),
    "options safe": (("k", ["a"], ["out"], SRC), dict(compile_options={"math_mode": "safe"})),
    "options relaxed": (("k", ["a"], ["out"], SRC), dict(compile_options={"math_mode": "relaxed"})),
    "options fast": (("k", ["a"], ["out"], SRC), dict(compile_options={"math_mode": "fast"})),
    "options list": (("k", ["a"], ["out"], SRC), dict(compile_options=[("math_mode", "fast")])),
    "options unknown": (("k", ["a"], ["out"], SRC), dict(compile_options={"foo": 1})),
    "options bad mode": (("k", ["a"], ["out"], SRC), dict(compile_options={"math_mode": "x"})),
    "options mode int": (("k", ["a"], ["out"], SRC), dict(compile_options={"math_mode": 1})),
    "options key int": (("k", ["a"], ["out"], SRC), dict(compile_options={1: "fast"})),
    "options then unknown": (
        ("k", ["a"], ["out"], SRC),
        dict(compile_options={"math_mode": "fast", "foo": 1}),
    ),
    "options before outputs": (("k", ["a"], [], SRC), dict(compile_options={"foo": 1})),
}


@pytest.mark.parametrize("label", list(FACTORY_CASES))
def test_factory_matches_mlx(label: str) -> None:
    args, kwargs = FACTORY_CASES[label]
    theirs = _outcome(lambda: mx.fast.metal_kernel(*args, **kwargs))
    ours = _outcome(lambda: api.metal_kernel(*args, **kwargs))
    assert ours == theirs


def test_factory_records_math_mode_and_scans() -> None:
    kernel = api.metal_kernel(
        "k", ["a"], ["out"], SRC + " // a_ndim", compile_options={"math_mode": "fast"}
    )
    assert kernel.spec.math_mode == "fast"
    assert kernel.spec.shape_infos == ((False, False, True),)
    assert kernel.spec.attributes == (("thread_position_in_grid", "uint3"),)
    assert api.metal_kernel("k", ["a"], ["out"], SRC).spec.math_mode == "safe"


# --- the call -------------------------------------------------------------------------------


def _base() -> dict:
    return dict(
        inputs=[mx.zeros((4,))],
        output_shapes=[(4,)],
        output_dtypes=[mx.float32],
        grid=(4, 1, 1),
        threadgroup=(4, 1, 1),
    )


_DROP = object()


def _call(**changes: object) -> tuple[tuple, dict]:
    kwargs = _base()
    kwargs.update(changes)
    return (), {k: v for k, v in kwargs.items() if v is not _DROP}


a4 = mx.zeros((4,))

CALL_CASES: dict[str, tuple[tuple, dict]] = {
    "ok": _call(),
    "positional": (([a4],), {}),
    "positional and keyword": ((1,), dict(inputs=[1])),
    "nothing": ((), {}),
    "unknown keyword": _call(foo=1),
    "missing inputs": _call(inputs=_DROP),
    "missing output_shapes": _call(output_shapes=_DROP),
    "missing output_dtypes": _call(output_dtypes=_DROP),
    "missing grid": _call(grid=_DROP),
    "missing threadgroup": _call(threadgroup=_DROP),
    # inputs
    "inputs tuple": _call(inputs=(a4,)),
    "inputs dict": _call(inputs={"a": a4}),
    "inputs None": _call(inputs=None),
    "inputs str": _call(inputs="ab"),
    "inputs numpy array": _call(inputs=np.zeros(1)),
    "inputs mlx array": _call(inputs=mx.zeros(1)),
    "input None": _call(inputs=[None]),
    "input list": _call(inputs=[[1.0, 2.0]]),
    "input str": _call(inputs=["x"]),
    "input object": _call(inputs=[NotAnArray()]),
    "input bool": _call(inputs=[True]),
    "input int": _call(inputs=[3]),
    "input int64": _call(inputs=[-(2**31) - 1]),
    "input int too big": _call(inputs=[2**70]),
    "input IntEnum": _call(inputs=[Color.RED]),
    "input float": _call(inputs=[1e300]),
    "input complex": _call(inputs=[1 + 2j]),
    "input numpy float64 array": _call(inputs=[np.zeros(3)]),
    "input numpy float32 scalar": _call(inputs=[np.float32(2)]),
    "input numpy bfloat16": _call(inputs=[np.zeros(3, ml_dtypes.bfloat16)]),
    "input bytes": _call(inputs=[b"abc"]),
    "input __mlx_array__": _call(inputs=[HasMlxArray()]),
    "input mlx float64": _call(inputs=[mx.zeros((4,), dtype=mx.float64)]),
    "inputs too many": _call(inputs=[a4, a4]),
    "inputs none given": _call(inputs=[]),
    # output shapes and dtypes
    "shapes bare int": _call(output_shapes=4),
    "shapes of ints": _call(output_shapes=[4]),
    "shape list": _call(output_shapes=[[4]]),
    "shape float": _call(output_shapes=[(4.0,)]),
    "shape str": _call(output_shapes=["ab"]),
    "shape numpy int": _call(output_shapes=[(np.int64(4),)]),
    "shape bool": _call(output_shapes=[(True,)]),
    "shape empty": _call(output_shapes=[()]),
    "shape beyond int64": _call(output_shapes=[(2**63,)]),
    "shapes tuple": _call(output_shapes=((4,),)),
    "shapes too many": _call(output_shapes=[(4,), (4,)]),
    "dtype str": _call(output_dtypes=["float32"]),
    "dtype numpy": _call(output_dtypes=[np.float32]),
    "dtype None": _call(output_dtypes=[None]),
    "dtype category": _call(output_dtypes=[mx.floating]),
    "dtypes tuple": _call(output_dtypes=(mx.int32,)),
    "dtypes too many": _call(output_dtypes=[mx.float32, mx.float32]),
    "dtype float64": _call(output_dtypes=[mx.float64]),
    # grid and threadgroup
    "grid two": _call(grid=(4, 1)),
    "grid four": _call(grid=(4, 1, 1, 1)),
    "grid list": _call(grid=[4, 1, 1]),
    "grid float": _call(grid=(4.0, 1, 1)),
    "grid numpy ints": _call(grid=(np.int64(4), 1, 1)),
    "grid numpy array": _call(grid=np.array([4, 1, 1])),
    "grid bool": _call(grid=(True, 1, 1)),
    "grid IntEnum": _call(grid=(Color.RED, 1, 1)),
    "grid str": _call(grid="abc"),
    "grid int overflow": _call(grid=(2**31, 1, 1)),
    "threadgroup two": _call(threadgroup=(4, 1)),
    "threadgroup None": _call(threadgroup=None),
    # template
    "template None": _call(template=None),
    "template empty": _call(template=[]),
    "template dict": _call(template={"T": mx.float32}),
    "template float": _call(template=[("T", 1.0)]),
    "template str value": _call(template=[("T", "float")]),
    "template None value": _call(template=[("T", None)]),
    "template lists": _call(template=[["T", mx.float32]]),
    "template tuple of tuples": _call(template=(("T", mx.float32),)),
    "template triple": _call(template=[("T", mx.float32, 1)]),
    "template single": _call(template=[("T",)]),
    "template name int": _call(template=[(1, 2)]),
    "template name bytes": _call(template=[(b"T", 2)]),
    "template str pair": _call(template=["TN"]),
    "template numpy int": _call(template=[("N", np.int32(3))]),
    "template IntEnum": _call(template=[("N", Color.RED)]),
    "template numpy bool": _call(template=[("B", np.bool_(True))]),
    "template int32 min": _call(template=[("N", -(2**31))]),
    "template below int32": _call(template=[("N", -(2**31) - 1)]),
    "template above int32": _call(template=[("N", 2**31)]),
    "template Dtype class": _call(template=[("T", mx.Dtype)]),
    # init_value, verbose, stream
    "init int": _call(init_value=1),
    "init bool": _call(init_value=True),
    "init str": _call(init_value="1"),
    "init numpy float32": _call(init_value=np.float32(1)),
    "init mlx scalar": _call(init_value=mx.array(1.0)),
    "init mlx vector": _call(init_value=mx.array([1.0, 2.0])),
    "init huge float": _call(init_value=1e300),
    "init big int": _call(init_value=2**100),
    "init int beyond double": _call(init_value=10**400),
    "verbose int": _call(verbose=1),
    "verbose None": _call(verbose=None),
    "verbose numpy bool": _call(verbose=np.bool_(False)),
    "stream gpu": _call(stream=mx.gpu),
    "stream gpu device": _call(stream=mx.Device(mx.gpu)),
    "stream cpu": _call(stream=mx.cpu),
    "stream cpu device": _call(stream=mx.Device(mx.cpu)),
    "stream cpu stream": _call(stream=mx.default_stream(mx.cpu)),
    "stream str": _call(stream="gpu"),
    "stream int cpu": _call(stream=0),
    "stream int gpu": _call(stream=1),
    "stream bool": _call(stream=True),
    "stream numpy int": _call(stream=np.int64(0)),
    "stream int out of enum": _call(stream=2),
    "stream float": _call(stream=1.0),
    # the order of MLX's checks
    "order: bad input before bad template": _call(inputs=[[1]], template=[("T", 1.5)]),
    "order: bad template before sizes": _call(inputs=[a4, a4], template=[("T", 1.5)]),
    "order: sizes before stream": _call(inputs=[a4, a4], stream=mx.cpu),
    "order: inputs size before shapes size": _call(inputs=[], output_shapes=[]),
    "order: shapes size before dtypes size": _call(output_shapes=[], output_dtypes=[]),
    "order: stream before float64": _call(output_dtypes=[mx.float64], stream=mx.cpu),
    "order: type error before everything": _call(inputs=[[1]], grid=(1, 1)),
}


@pytest.fixture
def stub_launch(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """Replace the executor by a stub that records its arguments and reports nothing."""
    calls: list[dict] = []

    def launch(gen, inputs, outputs, grid, threadgroup, template, math_mode, trace,
               profile=False, step_limit=None, time_limit=None):
        calls.append(dict(locals()))
        return types.SimpleNamespace(diagnostics=list(STUB_DIAGNOSTICS))

    module = types.ModuleType("metalsim.exec.launch")
    module.launch = launch
    monkeypatch.setitem(sys.modules, "metalsim.exec.launch", module)
    return calls


STUB_DIAGNOSTICS: list[Diagnostic] = []


def _kernel_source(path: Path) -> str:
    """The generated source recorded in an `.mlxfn` file (a length-prefixed string that
    follows the primitive name and the kernel name)."""
    data = path.read_bytes()
    at = data.index(b"CustomKernel") + len(b"CustomKernel")
    for _ in range(2):
        size = int.from_bytes(data[at : at + 8], "little")
        text, at = data[at + 8 : at + 8 + size], at + 8 + size
    return text.decode()


def _run_in_mlx(kernel, args: tuple, kwargs: dict, path: Path) -> tuple[tuple[str, str], str]:
    """One call of a real MLX kernel inside export tracing: its outcome, and for a successful
    call the source MLX generated (read back from the exported file)."""
    outputs: list[mx.array] = []
    outcome: list[tuple[str, str]] = []

    def f(dummy: mx.array) -> list[mx.array]:
        outcome.append(_outcome(lambda: outputs.extend(kernel(*args, **kwargs))))
        return outputs or [dummy]  # returned, so a successful kernel is exported

    mx.export_function(str(path), f, mx.zeros((1,)))
    return outcome[0], _kernel_source(path) if outputs else ""


@pytest.fixture(scope="module")
def mlx_calls(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[tuple[str, str], str]]:
    kernel = mx.fast.metal_kernel("k", ["a"], ["out"], SRC)
    tmp = tmp_path_factory.mktemp("calls")
    return {
        label: _run_in_mlx(kernel, args, kwargs, tmp / f"{n}.mlxfn")
        for n, (label, (args, kwargs)) in enumerate(CALL_CASES.items())
    }


@pytest.mark.parametrize("label", list(CALL_CASES))
def test_call_matches_mlx(
    label: str, mlx_calls: dict[str, tuple[tuple[str, str], str]], stub_launch: list[dict]
) -> None:
    args, kwargs = CALL_CASES[label]
    kernel = api.metal_kernel("k", ["a"], ["out"], SRC)
    ours = _outcome(lambda: kernel(*args, **kwargs))
    theirs, their_source = mlx_calls[label]
    assert ours == theirs
    if ours[0] == "ok":  # then both generated the same kernel (input conversions included)
        (launched,) = stub_launch
        assert launched["gen"].text == their_source
    else:
        assert stub_launch == []


def test_mlx_outside_export_has_no_metal() -> None:
    """Why the oracle traces: a plain call on Linux stops at MLX's back-end check."""
    args, kwargs = _call()
    kernel = mx.fast.metal_kernel("k", ["a"], ["out"], SRC)
    assert _outcome(lambda: kernel(*args, **kwargs)) == (
        "RuntimeError",
        "[metal_kernel] No Metal back-end.",
    )


# --- what MLX defers to eval time (or to Metal): the simulator checks it at call time -------

DEFERRED_CASES: dict[str, tuple[dict, tuple[str, str]]] = {
    "threadgroup over 1024": (
        dict(threadgroup=(2048, 1, 1)),
        (
            "ValueError",
            "Thread group size (2048) is greater than  the maximum allowed threads per "
            "threadgroup (1024).",
        ),
    ),
    "threadgroup over 1024 before clamping": (
        dict(grid=(2, 1, 1), threadgroup=(64, 32, 1)),
        (
            "ValueError",
            "Thread group size (2048) is greater than  the maximum allowed threads per "
            "threadgroup (1024).",
        ),
    ),
    "empty threadgroup": (
        dict(threadgroup=(0, 1, 1)),
        (
            "ValueError",
            "[metalsim] `threadgroup` sizes must be positive, got (0, 1, 1): Metal cannot "
            "dispatch an empty threadgroup.",
        ),
    ),
    "negative grid": (
        dict(grid=(-1, 1, 1)),
        ("ValueError", "[metalsim] `grid` sizes must not be negative, got (-1, 1, 1)."),
    ),
    "negative output shape": (
        dict(output_shapes=[(-4,)]),
        (
            "ValueError",
            "[metalsim] `output_shapes` must not hold negative sizes, got (-4,) for output `out`.",
        ),
    ),
}


@pytest.mark.parametrize("label", list(DEFERRED_CASES))
def test_deferred_checks_raise_at_call(label: str, tmp_path: Path, stub_launch: list[dict]) -> None:
    changes, expected = DEFERRED_CASES[label]
    args, kwargs = _call(**changes)
    mlx_kernel = mx.fast.metal_kernel("k", ["a"], ["out"], SRC)
    theirs, _ = _run_in_mlx(mlx_kernel, args, kwargs, tmp_path / "f.mlxfn")
    assert theirs == ("ok", "")  # MLX accepts the call itself
    kernel = api.metal_kernel("k", ["a"], ["out"], SRC)
    assert _outcome(lambda: kernel(*args, **kwargs)) == expected
    assert stub_launch == []


def test_shape_overflow_is_an_exception() -> None:
    """The 0.32.4 binary aborts the process here; the simulator raises MLX's message."""
    args, kwargs = _call(output_shapes=[(2**31,)])
    kernel = api.metal_kernel("k", ["a"], ["out"], SRC)
    assert _outcome(lambda: kernel(*args, **kwargs)) == (
        "OverflowError",
        "Integer value 2147483648 is outside the supported range [-2147483648, 2147483647].",
    )


def test_source_needs_no_executor() -> None:
    kernel = api.metal_kernel("k", ["a"], ["out"], SRC)
    text = api.source(kernel, **_call()[1])
    assert text.startswith("[[kernel]] void custom_kernel_k_floatc_float(\n")
    with pytest.raises(ValueError, match="Expected `inputs` to have size 1 but got size 0"):
        api.source(kernel, **_call(inputs=[])[1])


# --- from arguments to the executor and back ------------------------------------------------


def _launch_once(stub_launch: list[dict], kernel: api.Kernel, **kwargs: object) -> dict:
    kernel(**kwargs)
    (call,) = stub_launch
    stub_launch.clear()
    return call


def test_launch_receives_the_validated_call(stub_launch: list[dict]) -> None:
    kernel = api.metal_kernel(
        "k", ["a", "n"], ["out"], SRC, compile_options={"math_mode": "relaxed"}
    )
    call = _launch_once(
        stub_launch,
        kernel,
        inputs=[mx.arange(6, dtype=mx.float32), 7],
        output_shapes=[[2, 3]],
        output_dtypes=[mx.float32],
        grid=[np.int64(6), True, 1],
        threadgroup=(6, 1, 1),
        template=[("T", mx.float16), ("N", 3), ("B", False)],
    )
    assert call["gen"].text == api.source(
        kernel,
        inputs=[mx.arange(6, dtype=mx.float32), 7],
        output_shapes=[(2, 3)],
        output_dtypes=[mx.float32],
        grid=(6, 1, 1),
        threadgroup=(6, 1, 1),
        template=[("T", mx.float16), ("N", 3), ("B", False)],
    )
    assert call["grid"] == (6, 1, 1) and call["threadgroup"] == (6, 1, 1)
    assert call["template"] == [("T", "float16"), ("N", 3), ("B", False)]
    assert call["math_mode"] == "relaxed" and call["trace"] is False
    a, n = call["inputs"]
    assert (a.dtype, a.shape, a.strides, a.size, a.is_scalar) == ("float32", (6,), (1,), 6, False)
    assert a.data.tolist() == [0, 1, 2, 3, 4, 5] and not a.data.flags.writeable
    assert (n.dtype, n.shape, n.strides, n.size, n.is_scalar) == ("int32", (), (), 1, True)
    assert n.data.tolist() == [7]
    (out,) = call["outputs"]
    assert (out.name, out.dtype, out.shape, out.initialized) == ("out", "float32", (2, 3), False)
    assert out.data.shape == (6,) and np.isnan(out.data).all()


def _bound_input(stub_launch: list[dict], x: mx.array, ensure_row_contiguous: bool) -> BoundInput:
    kernel = api.metal_kernel("k", ["a"], ["out"], SRC, ensure_row_contiguous=ensure_row_contiguous)
    call = _launch_once(
        stub_launch,
        kernel,
        inputs=[x],
        output_shapes=[(1,)],
        output_dtypes=[mx.float32],
        grid=(1, 1, 1),
        threadgroup=(1, 1, 1),
    )
    return call["inputs"][0]


def _reads(bound: BoundInput) -> np.ndarray:
    """The logical elements as a kernel using `<name>_strides` would read them."""
    index = np.zeros(bound.shape, dtype=np.int64) + bound.offset
    for axis, stride in enumerate(bound.strides):
        shape = [1] * len(bound.shape)
        shape[axis] = bound.shape[axis]
        index = index + stride * np.arange(bound.shape[axis]).reshape(shape)
    return bound.data[index]


BASE = mx.arange(24, dtype=mx.float32).reshape(4, 6)

VIEWS = {
    "transpose": BASE.T,
    "column slice": BASE[:, 2:],
    "row slice": BASE[1:],
    "step": BASE[:, ::2],
    "reversed": BASE[::-1],
    "broadcast": mx.broadcast_to(mx.arange(6, dtype=mx.float32), (4, 6)),
    "column": BASE[:, 1:2],
    "new axis": BASE[:, None, :],  # row-contiguous: the size-1 axis's stride does not matter
    "empty": BASE[:0],
}


@pytest.mark.parametrize("label", list(VIEWS))
@pytest.mark.parametrize("ensure_row_contiguous", [True, False])
def test_inputs_keep_or_copy_layout(
    label: str, ensure_row_contiguous: bool, stub_launch: list[dict]
) -> None:
    x = VIEWS[label]
    bound = _bound_input(stub_launch, x, ensure_row_contiguous)
    assert bound.shape == tuple(x.shape)
    np.testing.assert_array_equal(_reads(bound), np.array(x))
    mlx_strides = tuple(s // 4 for s in np.asarray(x).strides)
    contiguous = label in ("row slice", "new axis", "empty")
    if contiguous or not ensure_row_contiguous:
        assert bound.strides == mlx_strides  # bound as it is, strides included
    else:
        assert bound.strides == api._row_major_strides(bound.shape)  # a row-major copy
    if contiguous or ensure_row_contiguous:
        assert bound.offset == 0 and bound.data.size == bound.size


def test_bfloat16_input_keeps_bits_and_strides(stub_launch: list[dict]) -> None:
    values = mx.array([[1.5, -2.25, 3.0e38], [0.1, 7.0, -0.0]], dtype=mx.bfloat16)
    bound = _bound_input(stub_launch, values.T, ensure_row_contiguous=False)
    assert bound.dtype == "bfloat16" and bound.data.dtype == ml_dtypes.bfloat16
    assert bound.strides == (1, 3)
    expected = np.array(values.T.astype(mx.float32))
    np.testing.assert_array_equal(_reads(bound).astype(np.float32), expected)


@pytest.mark.parametrize(
    ("dtype", "init", "expected"),
    [
        (mx.float32, 2.5, 2.5),
        (mx.float16, 1 / 3, np.float16(1 / 3)),
        (mx.int32, -1.75, -1),
        (mx.uint8, -3.0, 0),
        (mx.uint8, 300.0, 255),
        (mx.int16, float("nan"), 0),
        (mx.bool_, 0.5, True),
        (mx.bool_, 0, False),
    ],
)
def test_init_value_fills_every_output(
    dtype: mx.Dtype, init: float, expected: object, stub_launch: list[dict]
) -> None:
    kernel = api.metal_kernel("k", [], ["out"], "")
    (result,) = kernel(
        inputs=[],
        output_shapes=[(2, 2)],
        output_dtypes=[dtype],
        grid=(1, 1, 1),
        threadgroup=(1, 1, 1),
        init_value=init,
    )
    (out,) = stub_launch[0]["outputs"]
    assert out.initialized
    assert result.dtype == dtype and result.shape == (2, 2)
    assert np.array(result).tolist() == np.full((2, 2), expected).tolist()


def test_bfloat16_output_round_trips(stub_launch: list[dict]) -> None:
    kernel = api.metal_kernel("k", [], ["out"], "")
    (result,) = kernel(
        inputs=[],
        output_shapes=[(3,)],
        output_dtypes=[mx.bfloat16],
        grid=(1, 1, 1),
        threadgroup=(1, 1, 1),
        init_value=1.1,
    )
    assert result.dtype == mx.bfloat16
    assert np.array(result.astype(mx.float32)).tolist() == [float(ml_dtypes.bfloat16(1.1))] * 3


def test_outputs_are_poisoned_without_init_value(stub_launch: list[dict]) -> None:
    kernel = api.metal_kernel("k", [], ["f", "i", "h"], "")
    results = kernel(
        inputs=[],
        output_shapes=[(2,), (3,), ()],
        output_dtypes=[mx.float32, mx.uint32, mx.float16],
        grid=(1, 1, 1),
        threadgroup=(1, 1, 1),
    )
    f, i, h = stub_launch[0]["outputs"]
    assert not (f.initialized or i.initialized or h.initialized)
    assert np.isnan(np.array(results[0])).all()
    assert np.array(results[1]).tolist() == [0xBEBEBEBE] * 3
    assert results[2].shape == () and np.isnan(np.array(results[2]))


def test_verbose_prints_before_launch(
    capsys: pytest.CaptureFixture[str], stub_launch: list[dict]
) -> None:
    kernel = api.metal_kernel("vk", ["a"], ["out"], SRC)
    kwargs = _call(verbose=True)[1]
    kernel(**kwargs)
    expected = "Generated source code for `vk`:\n```\n" + api.source(kernel, **kwargs) + "\n```\n"
    assert capsys.readouterr().out == expected


def test_errors_raise_kernel_fault_but_simulate_collects(
    stub_launch: list[dict], monkeypatch: pytest.MonkeyPatch
) -> None:
    problem = Diagnostic("out-of-bounds", "error", "thread (4,0,0) read `a[4]`")
    monkeypatch.setattr(sys.modules[__name__], "STUB_DIAGNOSTICS", [problem])
    kernel = api.metal_kernel("k", ["a"], ["out"], SRC)
    kwargs = _call()[1]
    with pytest.raises(KernelFault) as fault:
        kernel(**kwargs)
    assert fault.value.diagnostics == [problem]
    run = api.simulate(kernel, trace=True, **kwargs)
    assert run.report.diagnostics == [problem]
    assert [o.shape for o in run.outputs] == [(4,)]
    assert stub_launch[-1]["trace"] is True


def test_warnings_do_not_raise(stub_launch: list[dict], monkeypatch: pytest.MonkeyPatch) -> None:
    warning = Diagnostic("division-by-zero", "warning", "integer division by zero")
    monkeypatch.setattr(sys.modules[__name__], "STUB_DIAGNOSTICS", [warning])
    kernel = api.metal_kernel("k", ["a"], ["out"], SRC)
    assert len(kernel(**_call()[1])) == 1
