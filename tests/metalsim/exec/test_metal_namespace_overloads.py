"""What a program declares in Metal's namespaces joins Metal's own functions, as MLX's
bf16_math.h does with bfloat overloads of Metal's math in `metal`, `metal::fast` and
`metal::precise`: each namespace keeps its own overloads, and a call picks the program's
overload or Metal's by the arguments, as C++ overload resolution does."""

import mlx.core as mx
import numpy as np
import pytest

import metalsim

OVERLOADS = """
struct Box { float v; };
namespace metal {
Box abs(Box x) { return Box{x.v < 0.0f ? -x.v * 10.0f : x.v * 10.0f}; }
namespace fast { Box abs(Box x) { return Box{x.v < 0.0f ? -x.v * 100.0f : x.v * 100.0f}; } }
namespace precise {
Box abs(Box x) { return Box{x.v < 0.0f ? -x.v * 1000.0f : x.v * 1000.0f}; }
}
}
"""


def run(body: str, n: int) -> list[float]:
    kernel = metalsim.metal_kernel("overloads", ["unused"], ["out"], body, header=OVERLOADS)
    out = kernel(inputs=[mx.zeros(1)], output_shapes=[(n,)], output_dtypes=[mx.float32],
                 grid=(1, 1, 1), threadgroup=(1, 1, 1), init_value=0)[0]
    return np.array(out).tolist()


def test_each_metal_namespace_keeps_its_own_overload():
    body = ("Box b{-2.0f};\nout[0] = metal::abs(b).v; out[1] = metal::fast::abs(b).v;\n"
            "out[2] = metal::precise::abs(b).v; out[3] = abs(b).v; out[4] = fast::abs(b).v;")
    assert run(body, 5) == [20.0, 200.0, 2000.0, 20.0, 200.0]


def test_metal_s_own_function_still_serves_the_types_it_matches_exactly():
    body = ("float x = -2.5f; int i = -3;\nout[0] = abs(x); out[1] = metal::fast::abs(x);\n"
            "out[2] = metal::precise::abs(x); out[3] = abs(i); out[4] = abs(half(-1.5h));")
    assert run(body, 5) == [2.5, 2.5, 2.5, 3.0, 1.5]


def test_metal_s_function_serves_arguments_no_overload_of_the_program_takes():
    assert run("out[0] = metal::abs(float2(-1.0f, 4.0f)).x;", 1) == [1.0]


def test_a_variable_in_metal_and_in_the_global_namespace_is_refused_not_merged():
    kernel = metalsim.metal_kernel("clash", ["unused"], ["out"], "out[0] = K;",
                                   header="constant constexpr int K = 1;\n"
                                          "namespace metal { constant constexpr int K = 2; }\n")
    with pytest.raises(metalsim.CompileError, match="'K' is declared in namespace 'metal' and "
                                                    "in the global namespace"):
        kernel(inputs=[mx.zeros(1)], output_shapes=[(1,)], output_dtypes=[mx.float32],
               grid=(1, 1, 1), threadgroup=(1, 1, 1))
