"""The limits of a launch: the step limit counts work (expression nodes evaluated), both it
and a wall-time limit can be set per call (`simulate`) or per patch; Metal's resource limits
(threadgroup and thread-private memory, buffer count) are errors before anything runs."""

import time

import mlx.core as mx
import numpy as np
import pytest

import metalsim


def simulate(source, inputs=None, grid=(1, 1, 1), **kw):
    inputs = [mx.ones(1)] if inputs is None else inputs
    kernel = metalsim.metal_kernel("k", [f"in{i}" for i in range(len(inputs))], ["out"], source)
    return metalsim.simulate(kernel, inputs=list(inputs), output_shapes=[(1,)],
                             output_dtypes=[mx.float32], grid=grid, threadgroup=grid,
                             init_value=0, **kw)


def kinds(run):
    return [d.kind for d in run.report.diagnostics]


def loop(iterations, body):
    return (f"float s = 0; for (int k = 0; k < {iterations}; k++) {{ s += {body}; }}\n"
            f"out[0] = s;")


def test_the_step_limit_counts_the_work_of_an_expression_not_statements():
    wide = " + ".join(["in0[0]"] * 400)
    # 100 iterations are some 300 statements, but more than 100 * 400 memory reads.
    assert kinds(simulate(loop(100, "1"), max_steps=20_000)) == []
    started = time.monotonic()
    run = simulate(loop(100, wide), max_steps=20_000)
    assert kinds(run) == ["step-limit"]
    assert "20,000 steps (expression nodes evaluated)" in run.report.errors[0].message
    assert time.monotonic() - started < 10  # stopped after a few iterations


def test_a_finite_loop_over_the_limit_runs_when_the_limit_is_raised():
    source = "uint k = 0; while (k < 10000) k++; out[0] = k;"
    assert kinds(simulate(source, max_steps=40_000)) == ["step-limit"]
    run = simulate(source, max_steps=60_000)
    assert kinds(run) == [] and np.array(run.outputs[0]).tolist() == [10000]


def test_the_wall_time_limit_stops_a_long_launch():
    started = time.monotonic()
    run = simulate(loop(10 ** 9, "1"), max_steps=10 ** 15, max_seconds=0.5)
    assert kinds(run) == ["step-limit"]
    assert "longer than 0.5 s (max_seconds)" in run.report.errors[0].message
    assert time.monotonic() - started < 10


def test_patch_sets_the_limits_of_the_kernels_it_builds():
    source = "uint k = 0; while (k < 10000) k++; out[0] = k;"
    with metalsim.patch(force=True, max_steps=1_000):
        kernel = mx.fast.metal_kernel("k", ["in0"], ["out"], source)
        with pytest.raises(metalsim.KernelFault, match="step-limit|steps"):
            kernel(inputs=[mx.ones(1)], output_shapes=[(1,)], output_dtypes=[mx.float32],
                   grid=(1, 1, 1), threadgroup=(1, 1, 1))
        assert kinds(metalsim.simulate(kernel, inputs=[mx.ones(1)], output_shapes=[(1,)],
                                       output_dtypes=[mx.float32], grid=(1, 1, 1),
                                       threadgroup=(1, 1, 1), max_steps=100_000)) == []


@pytest.mark.parametrize("limits", [{"max_steps": 0}, {"max_steps": 1.5},
                                    {"max_seconds": -1}, {"max_seconds": "1"}])
def test_limits_must_be_positive_numbers(limits):
    with pytest.raises(ValueError, match="max_s"):
        simulate("out[0] = 1;", **limits)


def test_a_huge_thread_private_array_is_a_resource_limit_before_anything_is_allocated():
    started = time.monotonic()
    run = simulate("float big[1000000]; big[0] = 1; out[0] = big[0];", grid=(1024, 1, 1))
    assert kinds(run) == ["resource-limit"]
    assert "'big' alone is 4,000,000" in run.report.errors[0].message
    assert np.array(run.outputs[0]).tolist() == [0]  # nothing ran
    assert time.monotonic() - started < 5


def test_more_than_31_buffers_is_a_resource_limit():
    inputs = [mx.ones(4096)] * 31  # 31 inputs + the output: 32 buffers
    run = simulate("out[0] = in0[0];", inputs)
    assert kinds(run) == ["resource-limit"]
    assert "32 buffers" in run.report.errors[0].message


def test_31_buffers_are_allowed():
    run = simulate("out[0] = in29[0];", [mx.ones(4096)] * 30)
    assert kinds(run) == [] and np.array(run.outputs[0]).tolist() == [1]


def test_threadgroup_memory_over_32_kib_is_a_resource_limit():
    run = simulate("threadgroup float t[8193]; t[0] = 1; out[0] = t[0];")
    assert kinds(run) == ["resource-limit"]
