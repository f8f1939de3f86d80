"""Function objects: a struct's `operator()` called on a variable, a member, an array element
and a temporary, as MLX's reduction functors use it; and what is refused."""

import mlx.core as mx
import numpy as np
import pytest
from struct_kernels import Kernels

import metalsim

OPS = """
struct Max { float operator()(float a, float b) const { return max(a, b); } };
struct Scale {
    float k;
    float operator()(float x) const { return k * x; }
    float operator()(float x, float y) const { return k * (x + y); }
};
template <typename Op>
float reduce(const device float* x, int n, Op op) {
    float acc = x[0];
    for (int i = 1; i < n; i++) acc = op(acc, x[i]);
    return acc;
}
"""

KERNELS = Kernels(OPS)
simulate = KERNELS.simulate
run = KERNELS.run


def test_functor_variable_called_in_a_loop_matches_numpy_max():
    x = np.random.default_rng(3).standard_normal(16).astype(np.float32)
    out = run("""
    Max op;
    float acc = in0[0];
    for (int i = 1; i < 16; i++) acc = op(acc, in0[i]);
    out[thread_position_in_grid.x] = acc;
    """, [mx.array(x)])
    assert out.tolist() == [x.max()] * 4


def test_functor_passed_to_a_function_template():
    x = np.arange(8, dtype=np.float32)
    out = run("out[thread_position_in_grid.x] = reduce(in0, 8, Max());", [mx.array(x)])
    assert out.tolist() == [7] * 4


def test_call_operator_overloads_and_state():
    out = run("""
    Scale s = {3.0f};
    Scale arr[2] = {{1.0f}, {2.0f}};
    out[thread_position_in_grid.x] = s(2.0f) + s(1.0f, 1.0f) + arr[1](5.0f) + Scale{4.0f}(1.0f);
    """)
    assert out.tolist() == [26] * 4


def test_a_temporary_functor_is_called_directly():
    assert run("out[thread_position_in_grid.x] = Max()(1.0f, 4.0f);").tolist() == [4] * 4


def test_a_parenthesised_functor_or_function_name_is_called_not_cast():
    header = OPS + "float twice(float x) { return 2 * x; }"
    out = run("Max op; Scale s = {3.0f}; (s)(1.0f); "
              "out[thread_position_in_grid.x] = (op)(1.0f, 2.0f) + (s)(2.0f) + (twice)(5.0f);",
              header=header)
    assert out.tolist() == [18] * 4


@pytest.mark.parametrize("source, message", [
    ("struct N { float v; }; N n = {1}; out[0] = n(1.0f);",
     "type 'N' does not provide a call operator"),
    ("float g[2] = {1, 2}; out[0] = g[0](2.0f);",
     "called object type 'float' is not a function"),
    ("Max op; out[0] = op(1.0f);", r"no matching member function for call to 'operator\(\)"),
])
def test_call_operator_misuse_is_a_compile_error(source, message):
    with pytest.raises(metalsim.CompileError, match=message) as info:
        simulate(source)
    assert info.value.line is not None
