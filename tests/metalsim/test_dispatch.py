"""`metalsim.dispatch`: a whole Metal kernel function run with buffers bound by index, thread
attributes named and typed freely, kernel templates picked by `[[host_name]]`, and function
constants set as a pipeline sets them."""

import mlx.core as mx
import numpy as np
import pytest

import metalsim

SOURCE = """
constant bool doubled [[function_constant(0)]];
constant int offset [[function_constant(1)]];
constant bool has_bias [[function_constant(2)]];

template <typename T>
[[kernel]] void scaled(
    device T* out [[buffer(2)]],
    const device T* in [[buffer(0)]],
    constant int& n [[buffer(1)]],
    const device T* bias [[buffer(3), function_constant(has_bias)]],
    uint gid [[threadgroup_position_in_grid]],
    ushort lane [[thread_index_in_simdgroup]],
    uint2 pos [[thread_position_in_grid]]) {
  if (int(pos.x) >= n) {
    return;
  }
  T value = in[pos.x] * T(doubled ? 2 : 1) + T(offset) + T(gid * 1000 + lane * 0);
  if (has_bias) {
    value += bias[pos.x];
  }
  out[pos.x] = value + T(is_function_constant_defined(offset) ? 0 : 1);
}

template [[host_name("scaled_float")]] [[kernel]] decltype(scaled<float>) scaled<float>;
template [[host_name("scaled_int")]] [[kernel]] decltype(scaled<int>) scaled<int>;
"""


def run(function="scaled_float", constants=None, **buffers):
    x = np.arange(10, dtype=np.float32 if function == "scaled_float" else np.int32)
    given = {0: x, 1: 9, 2: np.zeros_like(x), **{int(k[1:]): v for k, v in buffers.items()}}
    return metalsim.dispatch(SOURCE, function, given, grid=(10, 1, 1), threadgroup=(4, 1, 1),
                             function_constants={0: True, 1: 5, 2: False} if constants is None
                             else constants)


def test_buffers_bind_by_index_and_attributes_by_their_attribute_whatever_their_names():
    out = np.array(run().buffers[2])
    i = np.arange(9)
    assert out[:9].tolist() == (i * 2 + 5 + (i // 4) * 1000).tolist()
    assert out[9] == 0   # n = 9: the tenth thread returned


def test_the_host_name_picks_the_instantiation():
    out = run("scaled_int").buffers[2]
    assert out.dtype == mx.int32 and np.array(out)[:3].tolist() == [5, 7, 9]


def test_function_constants_by_index_or_name_and_a_buffer_bound_only_when_its_constant_is_true():
    bias = np.full(10, 100, np.float32)
    out = np.array(run(constants={"doubled": False, "offset": 0, "has_bias": True},
                       b3=bias).buffers[2])
    assert out[:4].tolist() == [100, 101, 102, 103]


def test_an_undefined_function_constant_reads_as_not_defined_and_cannot_be_read():
    with pytest.raises(metalsim.CompileError, match="function constant 'offset' has no value"):
        run(constants={0: True, 2: False})


def test_an_unknown_function_name_suggests_the_close_one():
    with pytest.raises(metalsim.CompileError, match="no kernel function named 'scaled_flaot'"
                       r"(.|\n)*did you mean 'scaled_float'"):
        run("scaled_flaot")


def test_a_missing_buffer_or_a_wrong_element_type_is_a_clear_error():
    with pytest.raises(ValueError, match=r"takes buffer 0 \('in', const device float\*\)"):
        metalsim.dispatch(SOURCE, "scaled_float", {1: 3, 2: np.zeros(3, np.float32)},
                          grid=(3, 1, 1), threadgroup=(3, 1, 1),
                          function_constants={0: True, 1: 0, 2: False})
    with pytest.raises(ValueError, match="buffer 'in' is float64, but the kernel declares float"):
        run(b0=np.arange(10.0))


def test_an_out_of_bounds_write_is_a_kernel_fault_naming_the_buffer():
    x = np.arange(10, dtype=np.float32)
    with pytest.raises(metalsim.KernelFault, match="'in'"):   # 12 threads, 10 elements
        metalsim.dispatch(SOURCE, "scaled_float", {0: x, 1: 12, 2: np.zeros(12, np.float32)},
                          grid=(12, 1, 1), threadgroup=(4, 1, 1),
                          function_constants={0: True, 1: 0, 2: False})


ARANGE = """#include "mlx/backend/metal/kernels/arange.h"
template [[host_name("arange_float32")]] [[kernel]] decltype(arange<float>) arange<float>;
"""


def test_arguments_without_buffer_indices_take_them_in_order():
    # MLX's arange.h declares `constant const T& start, constant const T& step, device T* out`
    out = metalsim.dispatch(ARANGE, "arange_float32", {0: 1.5, 1: 0.5, 2: mx.zeros(6)},
                            grid=(6, 1, 1), threadgroup=(32, 1, 1),
                            include_dirs=[metalsim.mlx_include_dir()]).buffers[2]
    assert out.tolist() == [1.5, 2.0, 2.5, 3.0, 3.5, 4.0]


DEFAULTS = """
template <typename T, typename AccT = T, int N = sizeof(AccT) * 10>
[[kernel]] void sizes(device int* out [[buffer(0)]]) { out[0] = sizeof(T) * 100 + N; }
template [[host_name("sizes_half")]] [[kernel]] decltype(sizes<half>) sizes<half>;
template [[host_name("sizes_half_float")]] [[kernel]] decltype(sizes<half, float>)
    sizes<half, float>;
"""


def test_default_template_arguments_of_a_kernel_may_name_the_parameters_before_them():
    # MLX's softmax.h: `template <typename T, typename AccT = T, int N_READS = ...>`
    def size(function: str) -> int:
        out = metalsim.dispatch(DEFAULTS, function, {0: np.zeros(1, np.int32)},
                                grid=(1, 1, 1), threadgroup=(1, 1, 1)).buffers[0]
        return out.item()
    assert (size("sizes_half"), size("sizes_half_float")) == (220, 240)


REDUCE = """
[[kernel]] void block_sum(
    device int* out [[buffer(0)]],
    const device int* in [[buffer(1)]],
    threadgroup int* partial [[threadgroup(0)]],
    threadgroup float* unused [[threadgroup(1)]],
    uint tid [[thread_position_in_grid]],
    uint lid [[thread_position_in_threadgroup]],
    uint group [[threadgroup_position_in_grid]],
    uint size [[threads_per_threadgroup]]) {
  partial[lid] = in[tid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint stride = size / 2; stride > 0; stride /= 2) {
    if (lid < stride) {
      partial[lid] += partial[lid + stride];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (lid == 0) {
    out[group] = partial[0];
  }
}
"""


def reduce(source=REDUCE, lengths=None, check=True):
    x = np.arange(32, dtype=np.int32)
    return metalsim.dispatch(source, "block_sum", {0: np.zeros(4, np.int32), 1: x},
                             grid=(32, 1, 1), threadgroup=(8, 1, 1), check=check,
                             threadgroup_memory={0: 32, 1: 16} if lengths is None else lengths)


def test_threadgroup_memory_arguments_get_the_length_bound_to_their_index_per_threadgroup():
    out = np.array(reduce().buffers[0])
    assert out.tolist() == np.arange(32).reshape(4, 8).sum(axis=1).tolist()


def test_threadgroup_memory_arguments_are_bounds_race_and_initialisation_checked():
    with pytest.raises(metalsim.KernelFault, match="out-of-bounds write: 'partial' has 4 elements"):
        reduce(lengths={0: 16, 1: 16})   # 4 ints for 8 threads
    racy = REDUCE.replace("threadgroup_barrier(mem_flags::mem_threadgroup);\n  for",
                          "for")
    with pytest.raises(metalsim.KernelFault, match="race"):
        reduce(racy)
    unwritten = REDUCE.replace("partial[lid] = in[tid];", "if (lid > 0) partial[lid] = in[tid];")
    with pytest.raises(metalsim.KernelFault, match="uninitiali[sz]ed"):
        reduce(unwritten)


@pytest.mark.parametrize("lengths, message", [
    ({1: 16}, r"takes threadgroup memory 0 \('partial', threadgroup int\*\)"),
    ({0: 30, 1: 16}, "multiple of 16 bytes"),
    ({0: 32, 1: 0}, "multiple of 16 bytes"),
])
def test_a_missing_or_misaligned_threadgroup_memory_length_is_a_clear_error(lengths, message):
    with pytest.raises(ValueError, match=message):
        reduce(lengths=lengths)


def test_bound_threadgroup_memory_counts_toward_metal_s_limit():
    with pytest.raises(metalsim.KernelFault, match="threadgroup memory"):
        reduce(lengths={0: 32, 1: 32768})
