"""Structs with atomic members, as MLX's atomic.h declares them (`struct mlx_atomic { atomic<T>
val; }`): laid out in device or threadgroup memory, updated through `&object[i].val`, never
held in thread memory nor copied (atomic<T>'s copy is deleted). The values are checked against
numpy, and MLX's own atomic.h runs from a kernel body."""

import mlx.core as mx
import numpy as np
import pytest

import metalsim

BOX = "template <typename T> struct box { atomic<T> val; };\n"
MLX_ATOMIC = '#include "mlx/backend/metal/kernels/atomic.h"\n'


def run(source: str, header: str, inputs: list[np.ndarray], shapes, dtypes,
        grid: int = 64, threadgroup: int = 32) -> list[np.ndarray]:
    kernel = metalsim.metal_kernel("atomic_members", [f"in{i}" for i in range(len(inputs))],
                                   [f"out{i}" for i in range(len(shapes))], source,
                                   header=header)
    kernel.include_dirs = (str(metalsim.mlx_include_dir()),)
    outs = kernel(inputs=[mx.array(a) for a in inputs], output_shapes=shapes,
                  output_dtypes=dtypes, grid=(grid, 1, 1), threadgroup=(threadgroup, 1, 1),
                  init_value=0)
    return [np.array(o) for o in outs]


def test_a_histogram_through_a_device_struct_with_an_atomic_member_counts_every_value():
    bins = np.random.default_rng(1).integers(0, 5, 256).astype(np.int32)
    source = ("device box<int>* h = (device box<int>*)out0;\n"
              "atomic_fetch_add_explicit(&(h[in0[thread_position_in_grid.x]].val), 1, "
              "memory_order_relaxed);")
    (hist,) = run(source, BOX, [bins], [(5,)], [mx.int32], grid=256)
    assert hist.tolist() == np.bincount(bins, minlength=5).tolist()


def test_a_threadgroup_array_of_structs_with_atomic_members_sums_each_threadgroup():
    values = np.arange(128, dtype=np.int32)
    source = """
threadgroup box<int> sums[2];
uint lid = thread_position_in_threadgroup.x;
if (lid < 2) { atomic_store_explicit(&sums[lid].val, 0, memory_order_relaxed); }
threadgroup_barrier(mem_flags::mem_threadgroup);
atomic_fetch_add_explicit(&sums[lid % 2].val, in0[thread_position_in_grid.x],
                          memory_order_relaxed);
threadgroup_barrier(mem_flags::mem_threadgroup);
if (lid < 2) {
  out0[threadgroup_position_in_grid.x * 2 + lid] =
      atomic_load_explicit(&sums[lid].val, memory_order_relaxed);
}"""
    (out,) = run(source, BOX, [values], [(8,)], [mx.int32], grid=128, threadgroup=32)
    groups = values.reshape(4, 16, 2).sum(axis=1)
    assert out.tolist() == groups.ravel().tolist()


def test_a_struct_with_an_atomic_member_bound_to_a_reference_parameter_is_not_copied():
    header = BOX + ("int add_to(device box<int>& b, int k) {\n"
                    "  return atomic_fetch_add_explicit(&b.val, k, memory_order_relaxed);\n}\n")
    source = "device box<int>* b = (device box<int>*)out0; add_to(b[1], 2);"
    (out,) = run(source, header, [np.zeros(1, np.int32)], [(2,)], [mx.int32])
    assert out.tolist() == [0, 128]


@pytest.mark.parametrize("source", [
    "box<int> local; out0[0] = 1;",
    "thread box<float> locals[2]; out0[0] = 1;",
])
def test_a_struct_with_an_atomic_member_in_thread_memory_is_an_error(source):
    with pytest.raises(metalsim.CompileError,
                       match="atomic variables must live in device or threadgroup memory"):
        run(source, BOX, [np.zeros(1, np.int32)], [(1,)], [mx.int32])


@pytest.mark.parametrize("statement", [
    "b[1] = b[0];",
    "out0[0] = by_value(b[0]);",
])
def test_copying_a_struct_with_an_atomic_member_is_an_error(statement):
    header = BOX + "int by_value(box<int> b) { return 1; }\n"
    source = f"device box<int>* b = (device box<int>*)out0; {statement}"
    with pytest.raises(metalsim.CompileError, match="cannot be copied"):
        run(source, header, [np.zeros(1, np.int32)], [(2,)], [mx.int32])


def test_mlx_atomic_float_min_max_and_add_give_numpys_values():
    """min and max of float use atomic.h's explicit specialisations (compare-exchange loops);
    add is Metal's float atomic; integer-valued floats keep the sum exact in any order."""
    values = np.random.default_rng(2).integers(-50, 50, 96).astype(np.float32)
    source = """
uint i = thread_position_in_grid.x;
device mlx_atomic<float>* o = (device mlx_atomic<float>*)out0;
mlx_atomic_fetch_min_explicit(o, in0[i], 0);
mlx_atomic_fetch_max_explicit(o, in0[i], 1);
mlx_atomic_fetch_add_explicit(o, in0[i], 2);"""
    (out,) = run(source, MLX_ATOMIC, [values], [(3,)], [mx.float32], grid=96)
    assert out.tolist() == [min(values.min(), 0), max(values.max(), 0), values.sum()]


def test_mlx_atomic_half_packs_two_elements_in_one_uint_word_and_gives_numpys_values():
    """MLX's atomics for types Metal has none of update the `uint` word holding the element
    with a compare-exchange loop: elements 0 and 1 share a word, as do 2 and 3."""
    values = np.random.default_rng(3).integers(-8, 8, 64).astype(np.float32)
    source = """
uint i = thread_position_in_grid.x;
device mlx_atomic<half>* h = (device mlx_atomic<half>*)out0;
mlx_atomic_fetch_add_explicit(h, half(in0[i]), 0);
mlx_atomic_fetch_max_explicit(h, half(in0[i]), 1);
mlx_atomic_fetch_min_explicit(h, half(in0[i]), 3);"""
    (out,) = run(source, MLX_ATOMIC, [values], [(4,)], [mx.float16])
    assert out.tolist() == [values.sum(), max(values.max(), 0), 0, min(values.min(), 0)]


def test_a_plain_write_to_the_other_half_of_a_packed_atomic_word_is_a_race():
    source = """
uint i = thread_position_in_grid.x;
if (i == 40) { out0[1] = 3.0h; }
mlx_atomic_fetch_add_explicit((device mlx_atomic<half>*)out0, half(in0[i]), 0);"""
    with pytest.raises(metalsim.KernelFault, match="data race on 'out0'") as info:
        run(source, MLX_ATOMIC, [np.ones(64, np.float32)], [(2,)], [mx.float16])
    assert "thread (40, 0, 0) wrote" in str(info.value)
