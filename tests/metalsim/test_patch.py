"""Unchanged `mx.fast.metal_kernel` code runs under `metalsim.patch()`: the MLX documentation's
kernels (exp, strided exp, grid_sample forward and VJP) against their plain-MLX references, and
`mx.custom_function` VJPs that launch simulated kernels, differentiated by `mx.grad`."""

import mlx.core as mx
import numpy as np
import pytest

import metalsim

# --- the MLX documentation's kernels, as users write them (braces restored) -----------------


def exp_elementwise(a: mx.array):
    source = """
        uint elem = thread_position_in_grid.x;
        T tmp = inp[elem];
        out[elem] = metal::exp(tmp);
    """
    kernel = mx.fast.metal_kernel(
        name="myexp",
        input_names=["inp"],
        output_names=["out"],
        source=source,
    )
    outputs = kernel(
        inputs=[a],
        template=[("T", mx.float32)],
        grid=(a.size, 1, 1),
        threadgroup=(256, 1, 1),
        output_shapes=[a.shape],
        output_dtypes=[a.dtype],
        verbose=False,
    )
    return outputs[0]


def exp_elementwise_strided(a: mx.array):
    source = """
        uint elem = thread_position_in_grid.x;
        // Utils from `mlx/backend/metal/kernels/utils.h` are automatically included
        uint loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
        T tmp = inp[loc];
        // Output arrays are always row contiguous
        out[elem] = metal::exp(tmp);
    """
    kernel = mx.fast.metal_kernel(
        name="myexp_strided",
        input_names=["inp"],
        output_names=["out"],
        source=source,
        ensure_row_contiguous=False,
    )
    outputs = kernel(
        inputs=[a],
        template=[("T", mx.float32)],
        grid=(a.size, 1, 1),
        threadgroup=(256, 1, 1),
        output_shapes=[a.shape],
        output_dtypes=[a.dtype],
    )
    return outputs[0]


def test_patch_replaces_metal_kernel_and_restores_it():
    original = mx.fast.metal_kernel
    with metalsim.patch():
        assert mx.fast.metal_kernel is metalsim.metal_kernel
    assert mx.fast.metal_kernel is original


def test_patch_works_as_a_decorator():
    @metalsim.patch()
    def inside():
        return mx.fast.metal_kernel

    assert inside() is metalsim.metal_kernel


def test_patch_fixture_is_available(metalsim_patch):
    assert mx.fast.metal_kernel is metalsim.metal_kernel


def test_exp_elementwise_from_the_mlx_docs_equals_mx_exp(metalsim_patch):
    a = mx.random.normal(shape=(4, 16)).astype(mx.float16)
    b = exp_elementwise(a)
    assert mx.allclose(b, mx.exp(a)).item()


def test_strided_exp_from_the_mlx_docs_equals_mx_exp(metalsim_patch):
    a = mx.random.normal(shape=(4, 16)).astype(mx.float16)
    a = a[::2]
    b = exp_elementwise_strided(a)
    assert mx.allclose(b, mx.exp(a)).item()


def test_gpu_stream_is_accepted_and_cpu_stream_is_rejected_as_in_mlx(metalsim_patch):
    kernel = mx.fast.metal_kernel("k", ["a"], ["out"], "out[0] = a[0];")
    args = dict(inputs=[mx.ones(1)], output_shapes=[(1,)], output_dtypes=[mx.float32],
                grid=(1, 1, 1), threadgroup=(1, 1, 1))
    assert kernel(**args, stream=mx.gpu)[0].item() == 1
    with pytest.raises(ValueError, match="Only supports the GPU"):
        kernel(**args, stream=mx.cpu)


# --- mx.custom_function with a simulated VJP kernel -----------------------------------------

SQUARE = "uint i = thread_position_in_grid.x;\nout[i] = x[i] * x[i];"
SQUARE_VJP = """
uint i = thread_position_in_grid.x;
atomic_fetch_add_explicit(&dx[idx[i]], 2.0f * x[idx[i]] * cot[i], memory_order_relaxed);
"""


def gathered_square(x: mx.array, idx: mx.array) -> mx.array:
    """y[i] = x[idx[i]]**2 with a forward kernel and a scatter-add (atomic) backward kernel."""

    @mx.custom_function
    def f(x):
        xg = x[idx]
        kernel = mx.fast.metal_kernel("square", ["x"], ["out"], SQUARE)
        return kernel(inputs=[xg], output_shapes=[xg.shape], output_dtypes=[xg.dtype],
                      grid=(xg.size, 1, 1), threadgroup=(64, 1, 1))[0]

    @f.vjp
    def f_vjp(x, cot, out):
        kernel = mx.fast.metal_kernel("square_vjp", ["x", "idx", "cot"], ["dx"], SQUARE_VJP,
                                      atomic_outputs=True)
        return kernel(inputs=[x, idx, cot], output_shapes=[x.shape], output_dtypes=[x.dtype],
                      grid=(idx.size, 1, 1), threadgroup=(64, 1, 1), init_value=0)[0]

    return f(x)


def test_grad_through_a_custom_function_with_simulated_kernels_equals_autodiff(metalsim_patch):
    x = mx.random.normal(shape=(50,))
    idx = mx.array(np.random.default_rng(0).integers(0, 50, 300).astype(np.uint32))
    weights = mx.random.normal(shape=(300,))

    def loss(x):
        return (gathered_square(x, idx) * weights).sum()

    def loss_ref(x):
        return ((x[idx] ** 2) * weights).sum()

    np.testing.assert_allclose(np.array(loss(x)), np.array(loss_ref(x)), rtol=1e-5)
    np.testing.assert_allclose(np.array(mx.grad(loss)(x)), np.array(mx.grad(loss_ref)(x)),
                               rtol=1e-4, atol=1e-5)


# --- function transformations -----------------------------------------------------------------


def doubling_kernel(a: mx.array) -> mx.array:
    source = "out[thread_position_in_grid.x] = 2 * a[thread_position_in_grid.x];"
    kernel = mx.fast.metal_kernel(name="double", input_names=["a"], output_names=["out"],
                                  source=source)
    return kernel(inputs=[a], output_shapes=[a.shape], output_dtypes=[a.dtype],
                  grid=(a.size, 1, 1), threadgroup=(a.size, 1, 1))[0]


def test_functions_compiled_before_the_patch_run_uncompiled_inside_it():
    compiled = mx.compile(lambda a: doubling_kernel(a) + 1)
    with metalsim.patch(force=True):
        assert compiled(mx.arange(4.0)).tolist() == [1.0, 3.0, 5.0, 7.0]


def test_compilation_is_back_on_after_the_last_patch_exits():
    traces = []

    def counted(a: mx.array) -> mx.array:
        traces.append(1)   # a Python side effect runs only while tracing, when compiled
        return a + 1

    compiled = mx.compile(counted)
    with metalsim.patch(force=True), metalsim.patch(force=True):
        compiled(mx.arange(3.0))
        compiled(mx.arange(3.0))
        assert len(traces) == 2
    traces.clear()
    compiled(mx.arange(3.0))
    compiled(mx.arange(3.0))
    assert len(traces) == 1


def test_a_simulated_kernel_inside_vmap_says_which_transformation_and_why(metalsim_patch):
    with pytest.raises(metalsim.TransformError, match=r"kernel 'double' .* mx\.vmap") as info:
        mx.vmap(doubling_kernel)(mx.ones((2, 4)))
    assert "hint:" in str(info.value)


def test_exporting_a_function_with_a_simulated_kernel_raises_a_transform_error(metalsim_patch,
                                                                              tmp_path):
    with pytest.raises(metalsim.TransformError, match="mx.export_function"):
        mx.export_function(str(tmp_path / "double.mlxfn"), doubling_kernel, mx.ones(4))


# --- strict mode ------------------------------------------------------------------------------


def dividing_kernel(a: mx.array, b: mx.array) -> mx.array:
    kernel = mx.fast.metal_kernel(name="divide", input_names=["a", "b"], output_names=["out"],
                                  source="uint i = thread_position_in_grid.x;\n"
                                         "out[i] = a[i] / b[i];")
    return kernel(inputs=[a, b], output_shapes=[a.shape], output_dtypes=[a.dtype],
                  grid=(a.size, 1, 1), threadgroup=(a.size, 1, 1))[0]


def test_integer_division_by_zero_is_a_warning_that_does_not_raise_by_default():
    with metalsim.patch(force=True):
        out = dividing_kernel(mx.array([6, 7, 8], mx.int32), mx.array([2, 0, 4], mx.int32))
    assert out[0].item() == 3 and out[2].item() == 2


def test_strict_patch_raises_on_the_division_by_zero_warning():
    with metalsim.patch(force=True, strict=True), pytest.raises(
            metalsim.KernelFault, match=r"division by zero[\s\S]*out\[i\] = a\[i\] / b\[i\]"):
        dividing_kernel(mx.array([6, 7, 8], mx.int32), mx.array([2, 0, 4], mx.int32))


# --- what MLX reports inside the patch ----------------------------------------------------------


@pytest.mark.skipif(mx.metal.is_available(), reason="off Apple GPUs, Metal is really absent")
def test_patch_makes_the_metal_availability_checks_true_and_restores_them():
    assert not mx.metal.is_available() and not mx.is_available(mx.gpu)
    with metalsim.patch():
        assert mx.metal.is_available() and mx.is_available(mx.gpu)
        assert mx.is_available(mx.cpu)
        assert mx.default_device() == mx.gpu
    assert not mx.metal.is_available() and not mx.is_available(mx.gpu)
    assert mx.default_device() == mx.cpu


@pytest.mark.skipif(mx.metal.is_available(), reason="off Apple GPUs, Metal is really absent")
def test_metal_available_false_opts_out_of_pretending():
    with metalsim.patch(metal_available=False):
        assert not mx.metal.is_available() and not mx.is_available(mx.gpu)
        assert mx.fast.metal_kernel is metalsim.metal_kernel


@pytest.mark.skipif(mx.metal.is_available(), reason="off Apple GPUs, Metal is really absent")
def test_a_wrapper_takes_its_metal_branch_inside_the_patch():
    def wrapper(a: mx.array) -> mx.array:   # the shape of most real projects' wrappers
        on_metal = mx.default_device() == mx.gpu and mx.metal.is_available()
        return doubling_kernel(a) if on_metal else a * 3

    with metalsim.patch():
        assert wrapper(mx.arange(4.0)).tolist() == [0.0, 2.0, 4.0, 6.0]


@pytest.mark.skipif(mx.metal.is_available(), reason="off Apple GPUs, Metal is really absent")
@pytest.mark.parametrize("call", [lambda: mx.metal.device_info(),
                                  lambda: mx.metal.start_capture("x.gputrace")],
                         ids=["device_info", "start_capture"])
def test_what_needs_a_real_gpu_raises_a_clear_error_inside_the_patch(call):
    with metalsim.patch(), pytest.raises(metalsim.NoMetalDevice, match="needs a real Metal GPU"):
        call()


def test_grad_of_a_raw_kernel_call_raises_as_mlx_does(metalsim_patch):
    with pytest.raises(ValueError, match=r"\[Primitive::vjp\] Not implemented for CustomKernel\."):
        mx.grad(lambda a: doubling_kernel(a).sum())(mx.arange(4.0))


def test_jvp_of_a_raw_kernel_call_raises_as_mlx_does(metalsim_patch):
    with pytest.raises(ValueError, match=r"\[Primitive::jvp\] Not implemented for CustomKernel\."):
        mx.jvp(doubling_kernel, [mx.arange(4.0)], [mx.ones(4)])


def test_grad_with_respect_to_something_the_kernel_does_not_read_is_fine(metalsim_patch):
    x = mx.arange(4.0)
    grad = mx.grad(lambda w: (doubling_kernel(x) * w).sum())(mx.ones(4))
    assert grad.tolist() == [0.0, 2.0, 4.0, 6.0]


def test_patch_include_dirs_resolve_a_kernel_headers_quoted_include(tmp_path):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "scale.h").write_text("#pragma once\ninline float scale(float x) "
                                               "{ return 3 * x; }\n")
    header = '#include "proj/scale.h"\n#include "proj/scale.h"\n'
    source = "uint i = thread_position_in_grid.x;\nout[i] = scale(a[i]);"
    with metalsim.patch(force=True, include_dirs=[tmp_path]):
        kernel = mx.fast.metal_kernel("inc", ["a"], ["out"], source, header=header)
        out = kernel(inputs=[mx.arange(4, dtype=mx.float32)], output_shapes=[(4,)],
                     output_dtypes=[mx.float32], grid=(4, 1, 1), threadgroup=(4, 1, 1))[0]
    assert out.tolist() == [0, 3, 6, 9]
    with metalsim.patch(force=True), pytest.raises(metalsim.CompileError,
                                                   match="'proj/scale.h' file not found"):
        mx.fast.metal_kernel("inc", ["a"], ["out"], source, header=header)(
            inputs=[mx.arange(4, dtype=mx.float32)], output_shapes=[(4,)],
            output_dtypes=[mx.float32], grid=(4, 1, 1), threadgroup=(4, 1, 1))



def test_an_edited_included_header_is_compiled_again(tmp_path):
    source = "uint i = thread_position_in_grid.x;\nout[i] = scale(a[i]);"

    def run() -> list[float]:
        with metalsim.patch(force=True, include_dirs=[tmp_path]):
            kernel = mx.fast.metal_kernel("inc", ["a"], ["out"], source,
                                          header='#include "scale.h"\n')
            return kernel(inputs=[mx.arange(3, dtype=mx.float32)], output_shapes=[(3,)],
                          output_dtypes=[mx.float32], grid=(3, 1, 1),
                          threadgroup=(3, 1, 1))[0].tolist()

    (tmp_path / "scale.h").write_text("inline float scale(float x) { return 3 * x; }\n")
    assert run() == [0, 3, 6]
    (tmp_path / "scale.h").write_text("inline float scale(float x) { return 10 * x; }\n")
    assert run() == [0, 10, 20]  # the same kernel text, not the program compiled before
