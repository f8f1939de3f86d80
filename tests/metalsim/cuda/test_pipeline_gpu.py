"""`metalsim.cuda.dispatch` on a real NVIDIA GPU against `metalsim.dispatch`: whole sources of
our own bit for bit, and MLX's own whole kernels (tests/metalsim/mlx_kernels) through the GPU
differential's `check_dispatch`. These run only where CuPy sees an NVIDIA GPU; CI has none
(`test_pipeline.py` covers what needs no GPU)."""

from __future__ import annotations

import cuda_launches
import mlx.core as mx
import numpy as np
import pytest
from dispatch_sources import ROWS, SCALE_ROWS, TRAITS, WIDEN, scale_rows_buffers
from gpu_differential import check_dispatch

import metalsim
import metalsim.cuda

pytestmark = pytest.mark.skipif(not metalsim.cuda.gpu_available(),
                                reason="needs CuPy and an NVIDIA GPU")


def host(array: mx.array) -> np.ndarray:
    return np.array(array.astype(mx.float32))


@pytest.mark.parametrize("function, dtype, constants, threadgroup", [
    ("scale_rows_float", mx.float32, {10: True, "repeats": 2}, (16, 2, 1)),
    ("scale_rows_float", mx.float32, {10: False, 11: 1, 12: 0.25}, (64, 4, 1)),
    ("scale_rows_half", mx.float16, {"use_bias": True, 11: 3}, (8, 1, 1)),
])
def test_a_whole_source_kernel_gives_the_simulators_values_bit_for_bit(
        function, dtype, constants, threadgroup):
    buffers = scale_rows_buffers(dtype=dtype, bias=bool(constants.get(10, constants.get(
        "use_bias"))))
    args = (SCALE_ROWS, function, buffers, (37, ROWS, 1), threadgroup)
    sim = metalsim.dispatch(*args, function_constants=constants)
    gpu = metalsim.cuda.dispatch(*args, function_constants=constants)
    assert gpu.report is None
    np.testing.assert_array_equal(host(sim.buffers[0]), host(gpu.buffers[0]))
    assert gpu.buffers[1].dtype == dtype and gpu.buffers[3] == buffers[3]


def test_a_plain_kernel_reads_its_function_constant_on_the_gpu():
    x = mx.arange(100, dtype=mx.float32)
    run = metalsim.cuda.dispatch(SCALE_ROWS, "add_extra", {0: x}, (100, 1, 1), (32, 1, 1),
                                 function_constants={"extra": 0.5})
    np.testing.assert_array_equal(np.array(run.buffers[0]), np.arange(100) + 0.5)


def test_metal_internal_traits_and_array_give_cpps_value_on_the_gpu():
    run = metalsim.cuda.dispatch(TRAITS, "traits", {0: mx.zeros((40,), mx.int32)}, (40, 1, 1),
                                 (32, 1, 1))
    assert np.array(run.buffers[0]).tolist() == [210] * 40


def test_an_instantiation_leaving_a_parameter_to_its_default_runs_as_in_the_simulator():
    x = mx.array(np.linspace(-3, 3, 50), dtype=mx.float16)
    args = (WIDEN, "widen_half", {0: x, 1: mx.zeros((50,), mx.float32)}, (50, 1, 1), (32, 1, 1))
    sim, gpu = metalsim.dispatch(*args), metalsim.cuda.dispatch(*args)
    np.testing.assert_array_equal(np.array(sim.buffers[1]), np.array(gpu.buffers[1]))


LAUNCHES = cuda_launches.dispatch_launches()


@pytest.mark.parametrize("launch", LAUNCHES, ids=[lu.label for lu in LAUNCHES])
def test_mlx_whole_kernels_agree_with_the_simulator_and_mlx_cpu_on_the_gpu(launch):
    result = check_dispatch(launch)
    assert not result.get("skipped") and result["ok"], result["error"]
