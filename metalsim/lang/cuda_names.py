"""CUDA's names and their Metal counterparts, for compile errors of kernels written with CUDA
habits (`threadIdx.x`, `__syncthreads()`, `__shared__`, `atomicAdd`).

Only messages use this: a CUDA name is never accepted, it is explained.
"""

from __future__ import annotations

# CUDA name -> what Metal calls it (and how MLX provides it).
_ATTRIBUTE = "a uint3 (.x, .y, .z) MLX passes to the kernel when the body mentions it"
CUDA_TO_METAL: dict[str, str] = {
    "threadIdx": f"thread_position_in_threadgroup, {_ATTRIBUTE}",
    "blockIdx": f"threadgroup_position_in_grid, {_ATTRIBUTE}",
    "blockDim": f"threads_per_threadgroup (or dispatch_threads_per_threadgroup, the size "
                f"asked for at launch), {_ATTRIBUTE}",
    "gridDim": f"threadgroups_per_grid, {_ATTRIBUTE}; and blockIdx * blockDim + threadIdx "
               f"is thread_position_in_grid",
    "warpSize": "threads_per_simdgroup (a SIMD-group is Metal's warp: 32 threads on Apple "
                "GPUs)",
    "__syncthreads": "threadgroup_barrier(mem_flags::mem_threadgroup), which every thread of "
                     "the threadgroup must reach",
    "__syncwarp": "simdgroup_barrier(mem_flags::mem_threadgroup)",
    "__threadfence_block": "threadgroup_barrier(mem_flags::mem_device)",
    "__shared__": "the threadgroup address space: declare the array `threadgroup` in the "
                  "body, with a size known at compile time",
    "__constant__": "the constant address space",
    "__device__": "nothing: a helper function needs no qualifier in Metal, and belongs in "
                  "the kernel's header= (a variable in device memory is a `device` buffer)",
    "__global__": "kernel (`[[kernel]]`); but with mx.fast.metal_kernel you write only the "
                  "body, and MLX writes the kernel function around it",
    "__host__": "nothing: Metal kernels and their helpers never run on the CPU",
    "__forceinline__": "nothing (or `inline`)",
    "__restrict__": "nothing: drop it",
    "atomicAdd": "atomic_fetch_add_explicit(pointer, value, memory_order_relaxed) on an "
                 "atomic type (outputs become atomic with atomic_outputs=True)",
    "atomicSub": "atomic_fetch_sub_explicit(pointer, value, memory_order_relaxed)",
    "atomicMax": "atomic_fetch_max_explicit(pointer, value, memory_order_relaxed)",
    "atomicMin": "atomic_fetch_min_explicit(pointer, value, memory_order_relaxed)",
    "atomicAnd": "atomic_fetch_and_explicit(pointer, value, memory_order_relaxed)",
    "atomicOr": "atomic_fetch_or_explicit(pointer, value, memory_order_relaxed)",
    "atomicXor": "atomic_fetch_xor_explicit(pointer, value, memory_order_relaxed)",
    "atomicExch": "atomic_exchange_explicit(pointer, value, memory_order_relaxed)",
    "atomicCAS": "atomic_compare_exchange_weak_explicit(pointer, &expected, desired, "
                 "memory_order_relaxed, memory_order_relaxed)",
    "__shfl_sync": "simd_shuffle(value, lane), with no mask argument",
    "__shfl_down_sync": "simd_shuffle_down(value, delta), with no mask argument",
    "__shfl_up_sync": "simd_shuffle_up(value, delta), with no mask argument",
    "__shfl_xor_sync": "simd_shuffle_xor(value, mask), with no lane-mask argument",
    "__ballot_sync": "simd_ballot(condition)",
    "__any_sync": "simd_any(condition)",
    "__all_sync": "simd_all(condition)",
}

# The CUDA words that qualify a declaration (where the parser stumbles, not the name lookup).
CUDA_QUALIFIERS = frozenset({"__shared__", "__constant__", "__device__", "__global__",
                             "__host__", "__forceinline__", "__restrict__"})


def cuda_hint(name: str) -> str:
    """The hint for a CUDA name ("" for any other name)."""
    metal = CUDA_TO_METAL.get(name)
    if metal is None:
        return ""
    if metal.startswith("nothing"):
        return f"'{name}' is CUDA's; Metal has no such word{metal.removeprefix('nothing')}"
    return f"'{name}' is CUDA's name; Metal's is {metal}"
