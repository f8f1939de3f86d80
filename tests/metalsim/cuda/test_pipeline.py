"""`metalsim.cuda.dispatch` without a GPU: which kernel function is translated, how function
constants become compile-time constants, how each argument is bound (by `[[buffer(n)]]`, as
`metalsim.dispatch` binds it), the launch size, and that the translations compile with NVRTC.
`test_pipeline_gpu.py` runs the same sources on a GPU against the simulator."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest
from dispatch_sources import ROWS, SCALE_ROWS, STRIDE, TRAITS, WIDEN, scale_rows_buffers

import metalsim
import metalsim.cuda
from metalsim.cuda import nvrtc, pipeline, runtime
from metalsim.cuda.translate import translate_function

needs_nvrtc = pytest.mark.skipif(not nvrtc.available(),
                                 reason="NVRTC is not installed (pip install -e '.[cuda]')")
CONSTANTS = {10: True, "repeats": 2}


def plan(function: str = "scale_rows_float", buffers: dict | None = None,
         constants: dict | None = None, grid=(37, ROWS, 1), threadgroup=(16, 2, 1)):
    return pipeline.plan(SCALE_ROWS, function, scale_rows_buffers() if buffers is None
                         else buffers, grid, threadgroup,
                         function_constants=CONSTANTS if constants is None else constants)


def test_the_entry_takes_each_buffer_argument_in_declaration_order_bound_by_its_index():
    bindings = plan().bindings
    assert [(b.name, b.index, b.writable) for b in bindings] == [
        ("in", 1, False), ("out", 0, True), ("p", 3, False), ("bias", 2, False),
        ("offset", 4, False)]
    assert plan().translation.buffers == ("in", "out", "p", "bias", "offset")


def test_array_buffers_are_bound_as_their_bytes():
    buffers = scale_rows_buffers()
    bound = {b.name: b.data for b in plan(buffers=buffers).bindings}
    assert bound["in"].tobytes() == np.array(buffers[1]).tobytes()
    assert bound["in"].size == ROWS * STRIDE * 4


def test_a_python_scalar_is_converted_to_the_type_its_constant_reference_declares():
    offset = next(b for b in plan().bindings if b.name == "offset")
    assert offset.data.tobytes() == np.int32(7).tobytes()


def test_struct_bytes_are_bound_as_given():
    buffers = scale_rows_buffers()
    params = next(b for b in plan(buffers=buffers).bindings if b.name == "p")
    assert params.data.tobytes() == buffers[3]


def test_an_argument_its_function_constant_leaves_out_is_bound_to_a_zero_block():
    buffers = scale_rows_buffers(bias=False)
    bias = next(b for b in plan(buffers=buffers, constants={10: False, 11: 1}).bindings
                if b.name == "bias")
    assert bias.index is None and not bias.data.any()
    assert bias.data.size == pipeline.ABSENT_BYTES


def test_a_missing_buffer_is_refused_with_its_index_and_name():
    buffers = scale_rows_buffers()
    del buffers[3]
    with pytest.raises(ValueError, match=r"takes buffer 3 \('p'"):
        plan(buffers=buffers)


def test_a_buffer_of_another_element_type_is_refused():
    buffers = scale_rows_buffers()
    buffers[1] = buffers[1].astype(mx.float16)
    with pytest.raises(ValueError, match="float16"):
        plan(buffers=buffers)


def test_an_unknown_kernel_name_is_refused_as_the_simulator_refuses_it():
    with pytest.raises(metalsim.CompileError, match="no kernel function named 'scale_rows'"):
        plan(function="scale_rows")


def test_without_a_gpu_dispatch_says_what_it_needs(monkeypatch):
    monkeypatch.setattr(runtime, "cupy_module", lambda: None)
    with pytest.raises(RuntimeError, match="needs CuPy and an NVIDIA GPU"):
        metalsim.cuda.dispatch(SCALE_ROWS, "scale_rows_float", scale_rows_buffers(),
                               (37, ROWS, 1), (16, 2, 1), function_constants=CONSTANTS)


def test_launch_size_counts_partial_edge_threadgroups():
    assert pipeline.launch_size(plan(grid=(37, 3, 1), threadgroup=(16, 2, 1))) == (3 * 2, 32)


def test_the_threadgroup_is_clamped_to_the_grid_as_mlx_dispatches():
    clamped = plan(grid=(37, 3, 1), threadgroup=(64, 4, 1))
    assert clamped.threadgroup == (37, 3, 1)
    assert pipeline.launch_size(clamped) == (1, 111)


def test_function_constants_become_constants_by_index_and_by_name():
    text = plan().translation.kernel_text
    assert "static __device__ constexpr bool use_bias = static_cast<bool>(true);" in text
    assert "static __device__ constexpr int repeats = static_cast<int>(2ll);" in text
    assert " extra" not in text   # unset, and read by no code of the chosen kernel


def test_a_float_function_constant_keeps_its_value_exactly():
    text = plan(constants={**CONSTANTS, "extra": 0.1}).translation.kernel_text
    assert f"static_cast<float>({float(np.float32(0.1)).hex()}f)" in text


def test_is_function_constant_defined_says_whether_the_dispatch_sets_it():
    unset = plan().translation.kernel_text
    assert "(false ? T(0x1.0000000000000p-1f) : T(0))" in unset
    assert "(true ? T(0x1.0000000000000p-1f) : T(0))" in plan(
        constants={**CONSTANTS, 12: 2.0}).translation.kernel_text


def test_a_host_name_picks_its_instantiation_and_no_other_kernel_is_translated():
    text = plan(function="scale_rows_half",
                buffers=scale_rows_buffers(dtype=mx.float16)).translation.kernel_text
    assert "scale_rows<half>(pointer_arg{b0}" in text
    assert "scale_rows<float>(" not in text and "add_extra" not in text


def test_a_plain_kernel_runs_under_its_own_name():
    text = translate_function(SCALE_ROWS, "add_extra", {"extra": 1.0}).kernel_text
    assert "add_extra(pointer_arg{b0}, attribute_as<uint>::from(info.thread_position_in_grid))" \
        in text
    assert "scale_rows" not in text


def test_a_kernel_without_buffer_attributes_numbers_its_arguments_in_order():
    source = """
    [[kernel]] void copy(const device float* a, device float* b,
                         uint i [[thread_position_in_grid]]) { b[i] = a[i]; }"""
    a = mx.arange(8, dtype=mx.float32)
    bound = pipeline.plan(source, "copy", {0: a, 1: mx.zeros_like(a)}, (8, 1, 1),
                          (8, 1, 1)).bindings
    assert [(b.name, b.index, b.writable) for b in bound] == [("a", 0, False), ("b", 1, True)]


def test_a_threadgroup_memory_argument_is_refused_naming_it():
    source = """
    [[kernel]] void k(device float* out [[buffer(0)]], threadgroup float* scratch
                      [[threadgroup(0)]], uint i [[thread_position_in_grid]]) { out[i] = 1; }"""
    with pytest.raises(metalsim.CompileError, match=r"threadgroup-memory argument 'scratch'"):
        translate_function(source, "k")


@needs_nvrtc
@pytest.mark.parametrize("function, constants", [
    ("scale_rows_float", CONSTANTS),
    ("scale_rows_half", {10: False, 11: 3, 12: -2.5}),
    ("add_extra", {"extra": 1.0}),
])
def test_the_translations_compile_with_nvrtc(function, constants):
    nvrtc.compile_ptx(translate_function(SCALE_ROWS, function, constants).source)


def test_a_kernel_that_reads_a_function_constant_the_dispatch_leaves_unset_is_refused():
    with pytest.raises(metalsim.CompileError, match="function constant 'extra', which this "
                                                     "launch leaves unset"):
        translate_function(SCALE_ROWS, "add_extra")


def test_an_instantiation_leaving_a_parameter_to_its_default_is_called_through_its_address():
    text = translate_function(WIDEN, "widen_half").kernel_text
    assert "auto* const kernel = &widen<half>;\n  kernel(pointer_arg{b0}, pointer_arg{b1}" in text


@needs_nvrtc
def test_an_instantiation_leaving_a_parameter_to_its_default_compiles_with_nvrtc():
    nvrtc.compile_ptx(translate_function(WIDEN, "widen_half").source)


def test_the_traits_kernel_gives_cpps_value_in_the_simulator():
    run = metalsim.dispatch(TRAITS, "traits", {0: mx.zeros((4,), mx.int32)}, (4, 1, 1),
                            (4, 1, 1))
    assert np.array(run.buffers[0]).tolist() == [210] * 4


@needs_nvrtc
def test_metal_internal_traits_array_and_stateless_constants_compile_with_nvrtc():
    nvrtc.compile_ptx(translate_function(TRAITS, "traits").source)


@needs_nvrtc
def test_a_program_declaring_its_own_array_keeps_it():
    source = """
    template <typename T, int N> struct array { T v[N]; };
    [[kernel]] void k(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      array<int, 3> a = {{1, 2, 3}};
      out[i] = a.v[2];
    }"""
    translation = translate_function(source, "k")
    assert "__elems" not in translation.kernel_text
    nvrtc.compile_ptx(translation.source)


# --- MLX's own whole kernels --------------------------------------------------------------

def _one_launch_per_kernel() -> list:
    import cuda_launches

    kernels = {}
    for launch in cuda_launches.dispatch_launches():
        kernels.setdefault((launch.case.source, launch.case.function), launch)
    return list(kernels.values())


MLX_KERNELS = _one_launch_per_kernel()


@needs_nvrtc
@pytest.mark.parametrize("launch", MLX_KERNELS, ids=[lu.case.function for lu in MLX_KERNELS])
def test_every_mlx_whole_kernel_translation_compiles_with_nvrtc(launch):
    """Each kernel function the GPU differential's dispatch group runs (softmax, logsumexp,
    reductions, scans, steel attention, steel GEMM), with its first case's function
    constants and the matrix switches the runtime would give it."""
    case = launch.case
    translation = translate_function(case.source, case.function, case.function_constants,
                                     include_dirs=(str(metalsim.mlx_include_dir()),))
    nvrtc.compile_ptx(translation.source,
                      opts=(*nvrtc.OPTIONS, *runtime.matrix_defines(translation)))


# --- the GPU differential's dispatch group, with the GPU replaced by the simulator ------------

@pytest.fixture
def fake_gpu(monkeypatch):
    """`metalsim.cuda.dispatch` replaced by the simulator (its outputs scaled by `1 + error`),
    counting launches: the differential's comparison runs in CI."""
    launches = []

    def install(error: float = 0.0) -> list:
        def run(source, function, buffers, grid, threadgroup, **options):
            launches.append(function)
            sim = metalsim.dispatch(source, function, buffers, grid, threadgroup, check=False,
                                    **options)
            return metalsim.Dispatch({i: b * (1 + error) if isinstance(b, mx.array) else b
                                      for i, b in sim.buffers.items()}, None)
        monkeypatch.setattr(metalsim.cuda, "dispatch", run)
        return launches
    return install


def softmax_launch(rows: int = 4, axis: int = 70):
    import cuda_launches
    import mlx_softmax_kernels

    case = mlx_softmax_kernels.softmax_case(rows, axis, mx.float32)
    return cuda_launches.DispatchLaunch(case.label, case)


def test_the_dispatch_differential_agrees_where_the_gpu_gives_the_simulators_values(fake_gpu):
    from gpu_differential import check_dispatch

    launches = fake_gpu()
    result = check_dispatch(softmax_launch())
    assert result["ok"] and result["ulps"] == 0.0 and not result["error"]
    assert launches == ["block_softmax_float32"]


def test_a_two_pass_reduction_chains_its_passes_on_the_gpu_side_too(fake_gpu):
    import cuda_launches
    import mlx_reduce_scan_kernels
    from gpu_differential import check_dispatch

    launches = fake_gpu()
    case = mlx_reduce_scan_kernels.all_reduce_case(10_000, mx.float32)
    result = check_dispatch(cuda_launches.DispatchLaunch(case.label, case))
    assert result["ok"] and result["ulps"] == 0.0
    assert launches == ["all_reduce_sum_float32"] * 2


def test_the_dispatch_differential_fails_a_gpu_off_by_a_thousandth(fake_gpu):
    from gpu_differential import check_dispatch

    fake_gpu(error=1e-3)
    result = check_dispatch(softmax_launch())
    assert not result["ok"]
    assert "ulps of the output's scale" in result["error"]
    assert "against MLX's CPU" in result["error"]


def test_a_kernel_the_simulator_faults_is_skipped_and_never_launched(fake_gpu):
    from gpu_differential import check_dispatch

    launches = fake_gpu()
    launch = softmax_launch()
    launch.case.buffers[2] = 75   # a row longer than the buffer's: reads past its end
    result = check_dispatch(launch)
    assert result["skipped"] and result["error"].startswith("simulator: ")
    assert launches == []
