"""`metalsim.signature` / `metalsim.api.source` against the generated source of the installed MLX.

The oracle is live: each configuration is also run through the real `mx.fast.metal_kernel` while
`mx.export_function` traces (which works without Metal since MLX 0.32), and the generated source
is read back from the `.mlxfn` file, which stores it verbatim.
"""

from __future__ import annotations

import struct
from pathlib import Path

import mlx.core as mx
import numpy as np
import pytest

from metalsim import api
from metalsim.signature import (
    ATTRIBUTES,
    BoundInput,
    KernelParam,
    generate,
    make_spec,
    verbose_text,
)

BODY = "  uint i = thread_position_in_grid.x;\n  out[i] = a[i];"


def _f32(*shape: int) -> mx.array:
    return mx.zeros(shape, dtype=mx.float32)


def _config(factory: dict, **call: object) -> tuple[dict, dict]:
    call.setdefault("grid", (4, 1, 1))
    call.setdefault("threadgroup", (4, 1, 1))
    return factory, call


# (factory kwargs, call kwargs) pairs covering the rules of mlx-kernel-api.md §2.
CONFIGS: dict[str, tuple[dict, dict]] = {
    "spec_2_9_example": _config(
        dict(
            name="axpb",
            input_names=["a", "b"],
            output_names=["out"],
            header="\ninline float twice(float x) { return 2.0f * x; }\n",
            source=(
                "\n    uint i = thread_position_in_grid.x;\n"
                "    uint g = threadgroup_position_in_grid.x;\n"
                "    uint lane = thread_index_in_simdgroup;\n"
                "    if (i < uint(a_shape[0])) {\n"
                "        out[i] = T(twice(a[i]) + b[i]);\n    }\n"
            ),
        ),
        inputs=[_f32(1000), _f32(1000)],
        output_shapes=[(1000,)],
        output_dtypes=[mx.float32],
        template=[("T", mx.float32)],
    ),
    "buffer_order_many_inputs": _config(
        dict(
            name="many",
            input_names=["x", "y", "z", "w"],
            output_names=["out"],
            source=BODY + " // x_shape y_strides y_ndim w_shape w_strides w_ndim",
        ),
        inputs=[_f32(16), mx.zeros((4, 4), dtype=mx.int32), _f32(2, 2, 2), _f32(3, 5)],
        output_shapes=[(16,)],
        output_dtypes=[mx.float32],
    ),
    "constant_space_small_inputs": _config(
        dict(name="small", input_names=["a", "b", "c", "d"], output_names=["out"], source=BODY),
        inputs=[
            mx.zeros((7,), dtype=mx.int32),
            _f32(8),
            _f32(1),
            mx.zeros((0,), dtype=mx.int16),
        ],
        output_shapes=[(4,)],
        output_dtypes=[mx.float32],
    ),
    "scalars_0d_and_python": _config(
        dict(
            name="k1",
            input_names=["x", "s", "n", "f", "flag", "big"],
            output_names=["out", "idx"],
            source=BODY,
        ),
        inputs=[_f32(7), mx.array(1.5), 3, 2.5, True, 2**40],
        output_shapes=[(4,), (4,)],
        output_dtypes=[mx.float32, mx.int32],
    ),
    "numpy_inputs": _config(
        dict(name="np_in", input_names=["a", "b", "c"], output_names=["out"], source=BODY),
        inputs=[np.zeros(10), np.float32(2.0), np.arange(12, dtype=np.int64).reshape(3, 4)],
        output_shapes=[(4,)],
        output_dtypes=[mx.float32],
    ),
    "shape_substring_quirks": _config(
        dict(
            name="subs",
            input_names=["a", "x", "data"],
            output_names=["out"],
            # `data_shape` names `a_shape` too; `max_ndim` names `x_ndim`; comments count.
            source=BODY + "\n  // data_shape[0], max_ndim, a_strides\n  /* data_ndim */",
        ),
        inputs=[_f32(12), _f32(3, 4), _f32(2, 3)],
        output_shapes=[(4,)],
        output_dtypes=[mx.float32],
    ),
    "shape_skipped_for_0d": _config(
        dict(
            name="zerod",
            input_names=["a", "s"],
            output_names=["out"],
            source=BODY + " // s_shape s_strides s_ndim a_ndim",
        ),
        inputs=[_f32(9), mx.array(3, dtype=mx.int32)],
        output_shapes=[(4,)],
        output_dtypes=[mx.float32],
    ),
    "attributes_nested_and_reordered": _config(
        dict(
            name="attrs",
            input_names=["a"],
            output_names=["out"],
            source=(
                "  uint t = threads_per_simdgroup; // grid_size\n"
                "  uint3 d = dispatch_threads_per_threadgroup;\n"
                "  uint s = dispatch_simdgroups_per_threadgroup;\n"
                "  uint q = dispatch_quadgroups_per_threadgroup;\n"
                "  out[thread_index_in_threadgroup] = a[0];"
            ),
        ),
        inputs=[_f32(32)],
        output_shapes=[(32,)],
        output_dtypes=[mx.float32],
    ),
    "all_twenty_attributes": _config(
        dict(
            name="every",
            input_names=["a"],
            output_names=["out"],
            source="\n".join(f"// {attr}" for attr, _ in reversed(ATTRIBUTES)),
        ),
        inputs=[_f32(32)],
        output_shapes=[(32,)],
        output_dtypes=[mx.float32],
    ),
    "header_without_newline_template": _config(
        dict(
            name="hdr",
            input_names=["a"],
            output_names=["out"],
            header="#define TWO 2",
            source=BODY,
        ),
        inputs=[_f32(16)],
        output_shapes=[(16,)],
        output_dtypes=[mx.float32],
        template=[("T", mx.float16), ("N", 4)],
    ),
    "header_without_newline_plain": _config(
        dict(name="hdr2", input_names=["a"], output_names=["out"], header="// h", source=BODY),
        inputs=[_f32(16)],
        output_shapes=[(16,)],
        output_dtypes=[mx.float32],
    ),
    "template_mixed_values": _config(
        dict(name="tmpl", input_names=["a"], output_names=["out"], source=BODY),
        inputs=[_f32(16)],
        output_shapes=[(16,)],
        output_dtypes=[mx.float32],
        template=[
            ("T", mx.bfloat16),
            ("U", mx.int8),
            ("V", mx.uint64),
            ("W", mx.bool_),
            ("C", mx.complex64),
            ("N", -3),
            ("Z", 0),
            ("M", -(2**31)),
            ("P", 2**31 - 1),
            ("B", False),
            ("D", True),
        ],
    ),
    "template_ints_only": _config(
        dict(name="ints", input_names=["a"], output_names=["out"], source=BODY),
        inputs=[_f32(16)],
        output_shapes=[(16,)],
        output_dtypes=[mx.float32],
        template=[["N", 7], ("K", -12)],
    ),
    "template_empty_list": _config(
        dict(name="tnone", input_names=["a"], output_names=["out"], source=BODY),
        inputs=[_f32(16)],
        output_shapes=[(16,)],
        output_dtypes=[mx.float32],
        template=[],
    ),
    "multi_output_with_attributes": _config(
        dict(
            name="multi",
            input_names=["a"],
            output_names=["o1", "o2", "o3"],
            source="  o1[thread_position_in_grid.x] = a_shape[0]; // o2 o3",
        ),
        inputs=[_f32(10)],
        output_shapes=[(10,), (2, 5), ()],
        output_dtypes=[mx.float32, mx.int32, mx.uint8],
    ),
    "comma_bug_two_outputs": _config(
        dict(
            name="bug",
            input_names=["a"],
            output_names=["o1", "o2"],
            source="  o1[0] = a[0] + a_shape[0]; o2[0] = 1.0f;",
        ),
        inputs=[_f32(10)],
        output_shapes=[(1,), (1,)],
        output_dtypes=[mx.float32, mx.float32],
    ),
    "comma_bug_three_outputs_many_extras": _config(
        dict(
            name="bug3",
            input_names=["a", "b"],
            output_names=["o1", "o2", "o3"],
            source="  o1[0] = a_shape[0] + a_strides[0] + a_ndim + b_ndim;",
        ),
        inputs=[_f32(10), _f32(3, 3)],
        output_shapes=[(1,), (1,), (1,)],
        output_dtypes=[mx.float32, mx.int32, mx.float16],
    ),
    "single_output_extras_no_attributes": _config(
        dict(
            name="one",
            input_names=["a"],
            output_names=["out"],
            source="  out[0] = a[0] + a_shape[0];",
        ),
        inputs=[_f32(10)],
        output_shapes=[(1,)],
        output_dtypes=[mx.float32],
    ),
    "atomic_outputs": _config(
        dict(
            name="atom",
            input_names=["a"],
            output_names=["hist", "total"],
            source=(
                "  atomic_fetch_add_explicit(&hist[thread_position_in_grid.x], 1, "
                "memory_order_relaxed);"
            ),
            atomic_outputs=True,
        ),
        inputs=[_f32(64)],
        output_shapes=[(8,), (1,)],
        output_dtypes=[mx.int32, mx.float32],
        init_value=0,
    ),
    "dtype_zoo": _config(
        dict(
            name="zoo",
            input_names=["h", "bf", "i8", "u64", "bl", "c", "u16"],
            output_names=["o_h", "o_bf", "o_i8", "o_u64", "o_bl", "o_c"],
            source=BODY.replace("out", "o_h"),
        ),
        inputs=[
            mx.zeros((9,), dtype=mx.float16),
            mx.zeros((3,), dtype=mx.bfloat16),
            mx.zeros((2, 8), dtype=mx.int8),
            mx.zeros((8,), dtype=mx.uint64),
            mx.zeros((4,), dtype=mx.bool_),
            mx.zeros((10,), dtype=mx.complex64),
            mx.array(7, dtype=mx.uint16),
        ],
        output_shapes=[(1,)] * 6,
        output_dtypes=[mx.float16, mx.bfloat16, mx.int8, mx.uint64, mx.bool_, mx.complex64],
    ),
    "no_inputs_empty_source": _config(
        dict(name="empty", input_names=[], output_names=["out"], source=""),
        inputs=[],
        output_shapes=[(1,)],
        output_dtypes=[mx.int32],
    ),
    "strided_views_not_contiguous": _config(
        dict(
            name="views",
            input_names=["t", "s", "b"],
            output_names=["out"],
            source=BODY + " // t_strides s_strides b_strides",
            ensure_row_contiguous=False,
        ),
        inputs=[
            mx.arange(12, dtype=mx.float32).reshape(3, 4).T,
            mx.arange(20, dtype=mx.float32)[2:],
            mx.broadcast_to(mx.arange(4, dtype=mx.float32), (3, 4)),
        ],
        output_shapes=[(4,)],
        output_dtypes=[mx.float32],
    ),
    "unsanitised_name": _config(
        dict(name="my-k", input_names=["a"], output_names=["out"], source=BODY),
        inputs=[_f32(4)],
        output_shapes=[(4,)],
        output_dtypes=[mx.float32],
        template=[("N", -1), ("B", True)],
    ),
}

_TAG = struct.pack("<Q", len(b"CustomKernel")) + b"CustomKernel"


def _kernel_sources(path: Path) -> list[tuple[str, str]]:
    """(kernel name, source) of every custom kernel recorded in an `.mlxfn` file.

    The file stores the primitive name, then the kernel name and the source as length-prefixed
    (little-endian uint64) strings.
    """
    data = path.read_bytes()
    found = []
    pos = data.find(_TAG)
    while pos >= 0:
        at = pos + len(_TAG)
        strings = []
        for _ in range(2):
            (size,) = struct.unpack_from("<Q", data, at)
            strings.append(data[at + 8 : at + 8 + size].decode())
            at += 8 + size
        found.append((strings[0], strings[1]))
        pos = data.find(_TAG, at)
    return found


def _mlx_generated(tmp: Path, label: str, factory: dict, call: dict) -> tuple[str, str]:
    """MLX's (kernel name, generated source) for one configuration, via export tracing."""
    kernel = mx.fast.metal_kernel(**factory)

    def f(dummy: mx.array) -> list[mx.array]:
        return kernel(**call)  # returned, so the kernel is part of the exported graph

    path = tmp / f"{label}.mlxfn"
    mx.export_function(str(path), f, mx.zeros((1,)))
    (generated,) = _kernel_sources(path)
    return generated


@pytest.fixture(scope="module")
def mlx_sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    tmp = tmp_path_factory.mktemp("mlxfn")
    return {label: _mlx_generated(tmp, label, *cfg) for label, cfg in CONFIGS.items()}


@pytest.mark.parametrize("label", sorted(CONFIGS))
def test_source_matches_mlx(label: str, mlx_sources: dict[str, tuple[str, str]]) -> None:
    factory, call = CONFIGS[label]
    kernel_name, expected = mlx_sources[label]
    kernel = api.metal_kernel(**factory)
    assert api.source(kernel, **call) == expected
    assert kernel._prepare((), call).gen.kernel_name == kernel_name


def test_verbose_print_matches_mlx(capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """MLX prints `Generated source code for `NAME`:` and the text in a fence (C++ stdout)."""
    factory, call = CONFIGS["spec_2_9_example"]
    kernel = mx.fast.metal_kernel(**factory)

    def f(dummy: mx.array) -> list[mx.array]:
        return kernel(**call, verbose=True)

    mx.export_function(str(tmp_path / "v.mlxfn"), f, mx.zeros((1,)))
    printed_by_mlx = capfd.readouterr().out

    ours = api.metal_kernel(**factory)
    gen = ours._prepare((), call).gen
    assert verbose_text(gen) == printed_by_mlx
    assert printed_by_mlx.startswith("Generated source code for `axpb`:\n```\n")


def test_sections_locate_header_and_source() -> None:
    for factory, call in CONFIGS.values():
        kernel = api.metal_kernel(**factory)
        gen = kernel._prepare((), call).gen
        spans = {name: (start, end) for name, start, end in gen.sections}
        start, end = spans["header"]
        assert gen.text[start:end] == kernel.spec.header
        start, end = spans["source"]
        assert gen.text[start:end] == kernel.spec.source
        assert gen.text[end:].startswith("\n}\n")


def test_float64_prints_source_then_raises_like_mlx(
    capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """MLX generates (and prints) the `double` source before rejecting float64."""
    factory = dict(name="dbl", input_names=["a"], output_names=["out"], source=BODY)
    call = dict(
        inputs=[mx.zeros((3,), dtype=mx.float64)],
        output_shapes=[(3,)],
        output_dtypes=[mx.float32],
        grid=(3, 1, 1),
        threadgroup=(3, 1, 1),
        verbose=True,
    )
    kernel = mx.fast.metal_kernel(**factory)

    def f(dummy: mx.array) -> mx.array:
        with pytest.raises(ValueError, match="^float64 is not supported on the GPU$"):
            kernel(**call)
        return dummy

    mx.export_function(str(tmp_path / "d.mlxfn"), f, mx.zeros((1,)))
    printed_by_mlx = capfd.readouterr().out
    assert "const constant double* a [[buffer(0)]]" in printed_by_mlx

    ours = api.metal_kernel(**factory)
    with pytest.raises(ValueError, match="^float64 is not supported on the GPU$"):
        ours(**call)
    assert capfd.readouterr().out == printed_by_mlx
    assert api.source(ours, **call) in printed_by_mlx


def _bound(name: str, dtype: str, shape: tuple[int, ...]) -> BoundInput:
    size = int(np.prod(shape))
    return BoundInput(name, np.zeros(size), dtype, shape, (), size, shape == ())


def test_params_in_declaration_order() -> None:
    spec = make_spec(
        "p",
        ["a", "s"],
        ["o1", "o2"],
        "o1[thread_position_in_grid.x] = a_shape[0] + a_ndim + s_shape[0]; grid_size",
        atomic_outputs=True,
    )
    gen = generate(
        spec,
        [_bound("a", "float32", (10,)), _bound("s", "int32", ())],
        ["float32", "int32"],
        [("T", "float16"), ("N", 2)],
    )
    assert gen.params == [
        KernelParam("a", "input", 0, 0, "const device float*"),
        KernelParam("a_shape", "shape", 0, 1, "const constant int*"),
        KernelParam("a_ndim", "ndim", 0, 2, "const constant int&"),
        KernelParam("s", "input", 1, 3, "const constant int32_t&"),
        KernelParam("o1", "output", 0, 4, "device atomic<float>*"),
        KernelParam("o2", "output", 1, 5, "device atomic<int32_t>*"),
        KernelParam("grid_size", "attribute", None, None, "uint3"),
        KernelParam("thread_position_in_grid", "attribute", None, None, "uint3"),
    ]
    assert gen.kernel_name == "custom_kernel_p__float16_t_2_float_int32_ts_float_int32_t"
    assert gen.text.endswith(
        '\ntemplate [[host_name("custom_kernel_p__float16_t_2_float_int32_ts_float_int32_t")]]'
        " [[kernel]] decltype(custom_kernel_p__float16_t_2_float_int32_ts_float_int32_t"
        "<float16_t, 2>) custom_kernel_p__float16_t_2_float_int32_ts_float_int32_t"
        "<float16_t, 2>;\n"
    )


def test_scans_ignore_header() -> None:
    spec = make_spec("h", ["a"], ["out"], "out[0] = a[0];", header="// a_shape grid_size")
    assert spec.attributes == ()
    assert spec.shape_infos == ((False, False, False),)
