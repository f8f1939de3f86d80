"""The package's operations: one custom kernel, launched inside `mx.stream(mx.gpu)`, with MLX
operations around it given `stream=mx.gpu`."""

import mlx.core as mx

_SCALED_ADD = mx.fast.metal_kernel(
    name="scaled_add",
    input_names=["a", "b", "alpha"],
    output_names=["out"],
    source="""
        uint i = thread_position_in_grid.x;
        if (i < a_shape[0]) {
            out[i] = a[i] + alpha[0] * b[i];
        }
    """)


def scaled_add(a: mx.array, b: mx.array, alpha: float) -> mx.array:
    """a + alpha * b, by the kernel on the GPU stream."""
    with mx.stream(mx.gpu):
        (out,) = _SCALED_ADD(inputs=[a, b, mx.array([alpha])], output_shapes=[a.shape],
                             output_dtypes=[a.dtype], grid=(a.size, 1, 1), threadgroup=(32, 1, 1))
    return out


def normalised_square(x: mx.array) -> mx.array:
    """(x / max|x|)^2 + x / max|x|: MLX operations on an explicit GPU stream, then the kernel."""
    gpu = mx.default_stream(mx.gpu)
    unit = mx.divide(x, mx.abs(x, stream=gpu).max(stream=gpu), stream=mx.gpu)
    return scaled_add(unit, mx.square(unit, stream=mx.gpu), 1.0)


def gpu_default_scale(x: mx.array, alpha: float) -> mx.array:
    """x + alpha * x with the GPU made the default device for the rest of the process, as
    scripts that start with `mx.set_default_device(mx.gpu)` do."""
    mx.set_default_device(mx.gpu)
    assert mx.default_device() == mx.gpu, "this package runs on the GPU only"
    return scaled_add(x, x, alpha)
