"""MLX's own custom-kernel tests (ml-explore/mlx python/tests/test_fast.py at v0.32.1), run
unchanged under metalsim.patch(): each test method builds its kernels with
mx.fast.metal_kernel, launches them with stream=mx.gpu and checks them with MLX's own
assertions against MLX ops (mx.exp, constants MLX computed)."""

import unittest

import mlx.core as mx
import numpy as np
import pytest
from corpus import load, python_blocks

# test_custom_kernel_attributes is left out: both of its threads store the same value to
# out[0], which metalsim reports as a race (a benign one; grading it is another issue item).
METHODS = ["test_custom_kernel_basic", "test_custom_kernel_args", "test_custom_kernel_strides",
           "test_custom_kernel_helper", "test_custom_kernel_caching",
           "test_custom_kernel_same_name_different_source_one_eval",
           "test_custom_metal_kernel_math_mode", "test_custom_kernel_mixed_dtypes"]


def mlx_test_case(method: str) -> unittest.TestCase:
    """MLX's TestFast with the copied methods (MLXTestCase's base is unittest.TestCase)."""
    module = load("ml-explore__mlx/fast_custom_kernel_tests.py",
                  enclosing="class TestFast(unittest.TestCase):", unittest=unittest, mx=mx)
    return module["TestFast"](method)


@pytest.mark.parametrize("method", METHODS)
def test_mlx_custom_kernel_test(metalsim_patch, method):
    case = mlx_test_case(method)
    getattr(case, method)()     # raises AssertionError (or a metalsim error) on a failure


def test_the_copied_tests_are_skipped_without_metal_outside_the_patch():
    """Outside the patch (on a machine without Metal) MLX's own skip conditions hold, so the
    kernels above really ran because the patch made MLX report Metal."""
    if mx.metal.is_available():
        pytest.skip("Metal is really here")
    case = mlx_test_case("test_custom_kernel_basic")
    with pytest.raises(unittest.SkipTest):
        case.test_custom_kernel_basic()



def docs_block(index: int) -> str:
    return python_blocks("ml-explore__mlx/custom_metal_kernels.rst")[index]


@pytest.mark.parametrize("index", [0, 2], ids=["myexp", "myexp_strided"])
def test_mlx_documentation_exp_kernels_with_their_own_asserts(metalsim_patch, index):
    """The documentation's examples run as written: build, launch, `assert mx.allclose(b,
    mx.exp(a))`."""
    block = docs_block(index)
    assert "mx.fast.metal_kernel(" in block and "assert mx.allclose(b, mx.exp(a))" in block
    namespace = {"mx": mx}
    exec(block, namespace)  # noqa: S102 - the fixture's example code
    a = namespace["a"]
    np.testing.assert_allclose(np.array(namespace["b"]), np.exp(np.array(a, np.float32)),
                               rtol=2e-3)
