"""The kernel source MLX 0.32.4 generates for `mx.fast.metal_kernel`, byte for byte.

MLX never compiles the user's `source` alone: it wraps it in a generated function whose signature
depends on the call (input dtypes, sizes and ranks, template arguments). The simulator runs that
generated text, so what it accepts is what Metal would compile. The rules are in
`shared/design/mlx-kernel-api.md` §2 and were checked against the 0.32.4 binary.

This module is pure Python (no MLX import): dtypes are MLX dtype *names* ("float32", "bool", ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# MLX dtype name -> Metal type string (MLX's `get_type_string`), also used in kernel names.
METAL_TYPES: dict[str, str] = {
    "bool": "bool",
    "uint8": "uint8_t",
    "uint16": "uint16_t",
    "uint32": "uint32_t",
    "uint64": "uint64_t",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "float16": "float16_t",
    "bfloat16": "bfloat16_t",
    "float32": "float",
    "float64": "double",
    "complex64": "complex64_t",
}

# The thread-position attributes MLX scans `source` for, in MLX's fixed table order.
ATTRIBUTES: tuple[tuple[str, str], ...] = (
    ("dispatch_quadgroups_per_threadgroup", "uint"),
    ("dispatch_simdgroups_per_threadgroup", "uint"),
    ("dispatch_threads_per_threadgroup", "uint3"),
    ("grid_origin", "uint3"),
    ("grid_size", "uint3"),
    ("quadgroup_index_in_threadgroup", "uint"),
    ("quadgroups_per_threadgroup", "uint"),
    ("simdgroup_index_in_threadgroup", "uint"),
    ("simdgroups_per_threadgroup", "uint"),
    ("thread_execution_width", "uint"),
    ("thread_index_in_quadgroup", "uint"),
    ("thread_index_in_simdgroup", "uint"),
    ("thread_index_in_threadgroup", "uint"),
    ("thread_position_in_grid", "uint3"),
    ("thread_position_in_threadgroup", "uint3"),
    ("threadgroup_position_in_grid", "uint3"),
    ("threadgroups_per_grid", "uint3"),
    ("threads_per_grid", "uint3"),
    ("threads_per_simdgroup", "uint"),
    ("threads_per_threadgroup", "uint3"),
)

# Inputs with fewer elements than this live in the `constant` address space.
MAX_CONSTANT_ARRAY_SIZE = 8

TemplateValue = bool | int | str  # a str is an MLX dtype name


def metal_type(dtype: str) -> str:
    """The Metal type string of an MLX dtype name."""
    return METAL_TYPES[dtype]


@dataclass(frozen=True)
class KernelSpec:
    """What `metal_kernel(...)` fixes at construction, including MLX's substring scans.

    `attributes` are the (name, type) pairs of `ATTRIBUTES` whose name occurs in `source`;
    `shape_infos[i]` says whether `<input_names[i]>_shape`, `_strides`, `_ndim` occur in `source`.
    """

    name: str
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    source: str
    header: str
    ensure_row_contiguous: bool
    atomic_outputs: bool
    math_mode: str
    attributes: tuple[tuple[str, str], ...]
    shape_infos: tuple[tuple[bool, bool, bool], ...]


def make_spec(
    name: str,
    input_names: list[str] | tuple[str, ...],
    output_names: list[str] | tuple[str, ...],
    source: str,
    header: str = "",
    ensure_row_contiguous: bool = True,
    atomic_outputs: bool = False,
    math_mode: str = "safe",
) -> KernelSpec:
    """Build a KernelSpec, doing MLX's plain substring scans of `source` (never `header`).

    A mention in a comment counts, and `dispatch_threads_per_threadgroup` also matches
    `threads_per_threadgroup`: that is what MLX does.
    """
    shape_infos = tuple(
        (f"{n}_shape" in source, f"{n}_strides" in source, f"{n}_ndim" in source)
        for n in input_names
    )
    attributes = tuple((attr, typ) for attr, typ in ATTRIBUTES if attr in source)
    return KernelSpec(
        name=name,
        input_names=tuple(input_names),
        output_names=tuple(output_names),
        source=source,
        header=header,
        ensure_row_contiguous=ensure_row_contiguous,
        atomic_outputs=atomic_outputs,
        math_mode=math_mode,
        attributes=attributes,
        shape_infos=shape_infos,
    )


@dataclass
class BoundInput:
    """One kernel input as the kernel sees it once bound.

    `data` is the 1-D memory the kernel can reach through the pointer and `offset` the index in
    `data` of the element the pointer points at. `offset` is 0 except for views with negative
    strides (possible only with `ensure_row_contiguous=False`), whose elements lie below the
    pointer. `strides` are in elements, as MLX passes them in `<name>_strides`.
    """

    name: str
    data: np.ndarray
    dtype: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    size: int
    is_scalar: bool
    offset: int = 0


@dataclass
class OutputBuffer:
    """One output: a fresh row-major buffer, poisoned unless `init_value` initialised it."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    data: np.ndarray
    initialized: bool


@dataclass(frozen=True)
class KernelParam:
    """One parameter of the generated kernel function, in declaration order.

    `role` is "input", "shape", "strides", "ndim", "output" or "attribute"; `index` is the input
    or output index (None for attributes); `buffer` the `[[buffer(i)]]` index (None for
    attributes); `type` the declared type, e.g. "const device float*" or "uint3".
    """

    name: str
    role: str
    index: int | None
    buffer: int | None = None
    type: str = ""


@dataclass
class GeneratedKernel:
    """The full text MLX compiles after its prelude, and where the user's parts lie in it.

    `sections` holds ("header", start, end) and ("source", start, end) character ranges of `text`.
    `name` is the name the user gave; `kernel_name` is MLX's mangled function name.
    """

    text: str
    name: str
    kernel_name: str
    sections: list[tuple[str, int, int]]
    params: list[KernelParam] = field(default_factory=list)


def _template_value(value: TemplateValue) -> str:
    # bool before int: True is an int in Python, but MLX writes bools as 1/0 (C++ ostream).
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    return metal_type(value)


def _template_kind(value: TemplateValue) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    return "typename"


def _template_hash(template_def: str) -> str:
    """MLX's name fragment for `<V1, V2>`: `<`, `>` and `, ` become `_`, last char dropped.

    The 0.32.4 binary also turns the `-` of a negative int into `_` (the v0.32.1 source
    keeps it); `-` is the only other character a template definition can hold.
    """
    text = template_def.replace("<", "_").replace(">", "_").replace(", ", "_")
    return text.replace("-", "_")[:-1]


def generate(
    spec: KernelSpec,
    inputs: list[BoundInput],
    output_dtypes: list[str],
    template: list[tuple[str, TemplateValue]] | None,
) -> GeneratedKernel:
    """The generated source for one call, exactly as MLX 0.32.4 writes it (§2 of the spec).

    Includes MLX's multi-output bug (§2.8): the decision between `,` and `) {` after an output
    compares the running buffer index, which also counts shape/strides/ndim buffers, with
    `len(inputs) + len(outputs) - 1`, so an output can close the parameter list too early.
    """
    template = list(template or [])
    template_def = ""
    kernel_name = "custom_kernel_" + spec.name
    if template:
        template_def = "<" + ", ".join(_template_value(v) for _, v in template) + ">"
        kernel_name += "_" + _template_hash(template_def)
    for bound in inputs:
        kernel_name += "_" + metal_type(bound.dtype)
        if bound.is_scalar:
            kernel_name += "s"
        elif bound.size < MAX_CONSTANT_ARRAY_SIZE:
            kernel_name += "c"
    for dtype in output_dtypes:
        kernel_name += "_" + metal_type(dtype)

    parts: list[str] = [spec.header]
    if template:
        decls = ", ".join(f"{_template_kind(v)} {n}" for n, v in template)
        parts.append(f"template <{decls}>\n")
    parts.append(f"[[kernel]] void {kernel_name}(\n")

    params: list[KernelParam] = []
    buffer = 0
    for i, (name, bound) in enumerate(zip(spec.input_names, inputs, strict=True)):
        space = "constant" if bound.size < MAX_CONSTANT_ARRAY_SIZE else "device"
        ref = "&" if bound.is_scalar else "*"
        decl = f"const {space} {metal_type(bound.dtype)}{ref}"
        parts.append(f"  {decl} {name} [[buffer({buffer})]],\n")
        params.append(KernelParam(name, "input", i, buffer, decl))
        buffer += 1
        if bound.is_scalar:
            continue  # MLX never declares shape/strides/ndim for 0-d inputs
        extras = (
            ("shape", "const constant int*"),
            ("strides", "const constant int64_t*"),
            ("ndim", "const constant int&"),
        )
        for found, (role, decl) in zip(spec.shape_infos[i], extras, strict=True):
            if found:
                parts.append(f"  {decl} {name}_{role} [[buffer({buffer})]],\n")
                params.append(KernelParam(f"{name}_{role}", role, i, buffer, decl))
                buffer += 1

    last_output_buffer = len(inputs) + len(spec.output_names) - 1
    for i, (name, dtype) in enumerate(zip(spec.output_names, output_dtypes, strict=True)):
        typ = metal_type(dtype)
        if spec.atomic_outputs:
            typ = f"atomic<{typ}>"
        decl = f"device {typ}*"
        close = ",\n" if buffer < last_output_buffer or spec.attributes else ") {\n"
        parts.append(f"  {decl} {name} [[buffer({buffer})]]{close}")
        params.append(KernelParam(name, "output", i, buffer, decl))
        buffer += 1

    for j, (attr, typ) in enumerate(spec.attributes):
        close = ",\n" if j < len(spec.attributes) - 1 else ") {\n"
        parts.append(f"  {typ} {attr} [[{attr}]]{close}")
        params.append(KernelParam(attr, "attribute", None, None, typ))

    source_start = sum(len(p) for p in parts)
    parts.append(spec.source)
    parts.append("\n}\n")
    if template:
        inst = kernel_name + template_def
        parts.append(
            f'\ntemplate [[host_name("{kernel_name}")]] [[kernel]] decltype({inst}) {inst};\n'
        )
    return GeneratedKernel(
        text="".join(parts),
        name=spec.name,
        kernel_name=kernel_name,
        sections=[
            ("header", 0, len(spec.header)),
            ("source", source_start, source_start + len(spec.source)),
        ],
        params=params,
    )


def verbose_text(gen: GeneratedKernel) -> str:
    """Exactly what MLX prints for `verbose=True`: the user's name, then the text in a fence."""
    return f"Generated source code for `{gen.name}`:\n```\n{gen.text}\n```\n"
