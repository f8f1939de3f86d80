"""The `mx.fast.metal_kernel` features that MLX's own tests and documentation exercise, with
kernels written here, run under metalsim.patch() and checked against MLX operations.

MLX keeps these outside its wheel, so they cannot be installed: its custom-kernel tests
(ml-explore/mlx python/tests/test_fast.py, `test_custom_kernel_*` at v0.32.1) and its
documentation page docs/src/dev/custom_metal_kernels.rst (the `myexp` and `myexp_strided`
examples; its `grid_sample` kernels are the subject of tests/metalsim/test_grid_sample.py).
What they exercise, and what each test below exercises in its own kernel: a launch with
`stream=mx.gpu`; inputs of several dtypes with a Python scalar among them, template arguments of
type bool, int and dtype, two outputs of different dtypes; `ensure_row_contiguous=False` with
`elem_to_loc` and the `_shape`/`_strides`/`_ndim` arguments, on a tiled slice;
`metal::precise::exp` and `threads_per_simdgroup`; a template helper in `header`;
`threads_per_threadgroup`; two kernels of one name and different sources, called apart and in
one evaluation (MLX issue #3832, fixed in #3833: Metal's library cache was keyed on the name);
`compile_options` (`math_mode` "safe" or "fast", anything else a ValueError; `__FAST_MATH__`
defined only for "fast"); and one kernel called with float16 and float32 inputs in one graph.
MLX's `test_custom_kernel_attributes` has both threads of its launch store the same value to
`out[0]`, which metalsim reports as a benign race, a warning (the last test pins that down).
"""

import mlx.core as mx
import numpy as np
import pytest

import metalsim


def launch(kernel, inputs, shape, dtype=mx.float32, grid=None, threadgroup=(32, 1, 1),
           **options):
    size = int(np.prod(shape))
    return kernel(inputs=inputs, output_shapes=[shape], output_dtypes=[dtype],
                  grid=grid or (size, 1, 1), threadgroup=threadgroup, stream=mx.gpu,
                  **options)[0]


def test_a_launch_on_the_gpu_stream_negates_its_input(metalsim_patch):
    kernel = mx.fast.metal_kernel(name="negate", input_names=["x"], output_names=["y"],
                                  source="uint k = thread_position_in_grid.x;\ny[k] = -x[k];")
    x = mx.random.normal((3, 2), key=mx.random.key(1))
    out = launch(kernel, [x], (3, 2), grid=(6, 1, 1), threadgroup=(3, 1, 1))
    assert mx.array_equal(out, -x).item()


ARGS = """
    uint k = thread_position_in_grid.x;
    U half_weight = U(w[k % 4]) * U(0.5);
    total[k] = rows[k] * scale + float(counts[k % 3]) + float(half_weight)
               + (WITH_OFFSET ? float(OFFSET) : 0.0f);
    parity[k] = int(counts[k % 3]) % 2 - (WITH_OFFSET ? 1 : 0);
"""


@pytest.mark.parametrize("with_offset", [True, False])
def test_inputs_of_four_dtypes_template_arguments_and_two_outputs(metalsim_patch, with_offset):
    kernel = mx.fast.metal_kernel(name="mixed_args",
                                  input_names=["rows", "counts", "w", "scale"],
                                  output_names=["total", "parity"], source=ARGS)
    rows = mx.random.normal((4, 3), key=mx.random.key(2))
    counts = mx.array([5, 8, 13])                                # int32
    w = mx.random.normal((2, 2), key=mx.random.key(3)).astype(mx.bfloat16)
    total, parity = kernel(
        inputs=[rows, counts, w, 1.75],
        template=[("WITH_OFFSET", with_offset), ("OFFSET", 9), ("U", mx.float16)],
        grid=(12, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4, 3), (12,)],
        output_dtypes=[mx.float32, mx.int32], stream=mx.gpu)
    k = np.arange(12)
    w16 = np.array(w.astype(mx.float16)).reshape(-1)
    half_weight = (w16[k % 4] * np.float16(0.5)).astype(np.float32)
    expected = (np.array(rows).reshape(-1) * 1.75 + np.array(counts)[k % 3] + half_weight
                + (9 if with_offset else 0))
    np.testing.assert_allclose(np.array(total).reshape(-1), expected, rtol=1e-6)
    assert np.array(parity).tolist() == (np.array([5, 8, 13])[k % 3] % 2
                                         - int(with_offset)).tolist()


STRIDED = """
    uint k = thread_position_in_grid.x;
    uint at = elem_to_loc(k, v_shape, v_strides, v_ndim);
    y[k] = metal::precise::exp(v[at]) / threads_per_simdgroup;
"""
CONTIGUOUS = """
    uint k = thread_position_in_grid.x;
    y[k] = metal::precise::exp(v[k]) / threads_per_simdgroup;
"""


@pytest.mark.parametrize("contiguous", [True, False], ids=["row-contiguous-copy", "strided"])
def test_precise_exp_of_a_tiled_slice_read_through_its_strides_or_a_copy(metalsim_patch,
                                                                        contiguous):
    v = mx.random.normal((5, 4), key=mx.random.key(4))
    v = mx.tile(v[1::2, ::-1], [3, 2])                       # not row contiguous
    kernel = mx.fast.metal_kernel(name="exp_by_simd_width", input_names=["v"], output_names=["y"],
                                  source=CONTIGUOUS if contiguous else STRIDED,
                                  ensure_row_contiguous=contiguous)
    out = launch(kernel, [v], v.shape, threadgroup=(256, 1, 1))
    np.testing.assert_allclose(np.array(out), np.exp(np.array(v)) / 32, rtol=1e-6)


def test_a_template_helper_from_the_header(metalsim_patch):
    header = """
    template <typename F>
    F softplus(F t) { return t > F(20) ? t : metal::precise::log(F(1) + metal::precise::exp(t)); }
    """
    kernel = mx.fast.metal_kernel(name="softplus", input_names=["x"], output_names=["y"],
                                  header=header, source="y[thread_position_in_grid.x] = "
                                                        "softplus(x[thread_position_in_grid.x]);")
    x = mx.array([-3.0, 0.0, 2.5, 30.0])
    out = launch(kernel, [x], (4,), threadgroup=(2, 1, 1))
    np.testing.assert_allclose(np.array(out), np.logaddexp(0, np.array(x)), rtol=1e-6)


def test_threads_per_threadgroup_seen_by_the_one_thread_that_stores(metalsim_patch):
    kernel = mx.fast.metal_kernel(
        name="group_width", input_names=["x"], output_names=["width"],
        source="if (thread_position_in_grid.x == 0) { width[0] = threads_per_threadgroup.x; }")
    out = launch(kernel, [mx.zeros(1)], (1,), dtype=mx.uint32, grid=(6, 1, 1),
                 threadgroup=(3, 1, 1))
    assert out.item() == 3


def fill(a: mx.array, source: str) -> mx.array:
    kernel = mx.fast.metal_kernel(name="same_name", input_names=["a"], output_names=["b"],
                                  source=source)
    return launch(kernel, [a], a.shape)


@pytest.mark.parametrize("one_eval", [False, True], ids=["evaluated-apart", "one-evaluation"])
def test_two_kernels_of_one_name_run_their_own_sources(metalsim_patch, one_eval):
    a = mx.arange(16, dtype=mx.float32)
    tripled = fill(a, "uint k = thread_position_in_grid.x; b[k] = a[k] * 3.0f;")
    if not one_eval:
        mx.eval(tripled)
    shifted = fill(a, "uint k = thread_position_in_grid.x; b[k] = a[k] - 7.0f;")
    mx.eval(tripled, shifted)
    assert mx.array_equal(tripled, a * 3).item() and mx.array_equal(shifted, a - 7).item()


@pytest.mark.parametrize("options", [{"math_mode": "precise"}, {"optimise": "yes"}])
def test_compile_options_other_than_safe_or_fast_math_are_refused(metalsim_patch, options):
    with pytest.raises(ValueError):
        mx.fast.metal_kernel(name="bad_options", input_names=["a"], output_names=["b"],
                             source="b[0] = a[0];", compile_options=options)


FAST_MATH_FLAG = """
    uint k = thread_position_in_grid.x;
#if defined(__FAST_MATH__) && __FAST_MATH__
    b[k] = a[k] + 2.0f;
#else
    b[k] = a[k] - 2.0f;
#endif
"""


@pytest.mark.parametrize(("mode", "shift"), [("safe", -2.0), ("fast", 2.0), ("safe", -2.0)])
def test_math_mode_reaches_the_preprocessor_whatever_was_built_before(metalsim_patch, mode,
                                                                     shift):
    kernel = mx.fast.metal_kernel(name="math_flag", input_names=["a"], output_names=["b"],
                                  source=FAST_MATH_FLAG, compile_options={"math_mode": mode})
    a = mx.arange(4, dtype=mx.float32)
    assert launch(kernel, [a], (4,)).tolist() == (np.arange(4) + shift).tolist()


def test_one_kernel_called_with_half_and_float_inputs_in_one_graph(metalsim_patch):
    kernel = mx.fast.metal_kernel(name="squared", input_names=["a"], output_names=["b"],
                                  source="uint k = thread_position_in_grid.x; b[k] = a[k] * a[k];")
    halves = launch(kernel, [mx.full((16,), 1.5, dtype=mx.float16)], (16,), dtype=mx.float16)
    floats = launch(kernel, [mx.full((16,), 0.5)], (16,))
    assert (halves.astype(mx.float32) + floats).tolist() == [2.5] * 16


def test_two_threads_storing_the_same_value_to_one_element_are_warned_a_benign_race():
    kernel = metalsim.metal_kernel(name="both_store", input_names=["x"], output_names=["width"],
                                   source="width[0] = threads_per_threadgroup.x;")
    run = metalsim.simulate(kernel, inputs=[mx.zeros(1)], output_shapes=[(1,)],
                            output_dtypes=[mx.uint32], grid=(2, 1, 1), threadgroup=(2, 1, 1))
    assert run.outputs[0].item() == 2 and not run.report.errors
    assert [(d.severity, d.kind) for d in run.report.diagnostics] == [("warning", "race")]
    assert "benign race on 'width': identical values" in run.report.diagnostics[0].message
