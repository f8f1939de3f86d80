"""Whole Metal sources (several kernels, templates instantiated under host names, function
constants, a struct, `constant T&` scalars, freely named and typed thread attributes) and the
buffers of one dispatch of them: what `metalsim.cuda.dispatch` is tested on, with and without
a GPU."""

from __future__ import annotations

import mlx.core as mx
import numpy as np

SCALE_ROWS = """
#include <metal_stdlib>
using namespace metal;

struct Params {
  int n;
  float scale;
  int64_t stride;
};

constant bool use_bias [[function_constant(10)]];
constant int repeats [[function_constant(11)]];
constant float extra [[function_constant(12)]];

template <typename T>
[[kernel]] void scale_rows(
    const device T* in [[buffer(1)]],
    device T* out [[buffer(0)]],
    constant Params& p [[buffer(3)]],
    const device T* bias [[buffer(2), function_constant(use_bias)]],
    constant int& offset [[buffer(4)]],
    uint2 gid [[thread_position_in_grid]],
    ushort lane [[thread_index_in_simdgroup]],
    uint3 group [[threadgroup_position_in_grid]]) {
  if (int(gid.x) >= p.n) return;
  long i = long(gid.y) * p.stride + gid.x;
  T v = in[i] * T(p.scale);
  for (int r = 1; r < repeats; ++r) v += in[i];
  if (use_bias) v += bias[gid.x];
  out[i] = v + T(offset) + T(lane % 3) + T(group.x) * T(1000)
           + (is_function_constant_defined(extra) ? T(0.5f) : T(0));
}
template [[host_name("scale_rows_float")]] [[kernel]] decltype(scale_rows<float>) scale_rows<float>;
template [[host_name("scale_rows_half")]] [[kernel]] decltype(scale_rows<half>) scale_rows<half>;

[[kernel]] void add_extra(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  x[i] += extra;
}
"""

# The kernel's `Params`, laid out as Metal lays it out (int, float, then an 8-aligned int64).
PARAMS = np.dtype([("n", np.int32), ("scale", np.float32), ("stride", np.int64)], align=True)
ROWS, STRIDE = 3, 40


def scale_rows_buffers(n: int = 37, dtype: mx.Dtype = mx.float32, bias: bool = True) -> dict:
    """Buffers for `scale_rows`: out (0), in (1), bias (2, where used), Params (3), offset (4)."""
    rng = np.random.default_rng(n)
    x = mx.array(rng.standard_normal(ROWS * STRIDE).astype(np.float32)).astype(dtype)
    params = np.zeros(1, PARAMS)
    params[0]["n"], params[0]["scale"], params[0]["stride"] = n, 1.5, STRIDE
    buffers = {0: mx.zeros_like(x), 1: x, 3: params.tobytes(), 4: 7}
    if bias:
        buffers[2] = mx.array(rng.standard_normal(STRIDE).astype(np.float32)).astype(dtype)
    return buffers


# What MLX's reduction and scan headers lean on (atomic.h, binary_ops.h, logging.h): Metal's
# internal `_disjunction`/`_conjunction`, `metal::array`, and a `constant` object built by a
# `constant`-qualified constructor of a struct without data members. C++ gives 210 everywhere.
TRAITS = """
#include <metal_stdlib>
using namespace metal;

namespace ns {
struct quiet_log {
  constexpr quiet_log(constant char*, constant char*) constant {}
};
}
constant ns::quiet_log logger("mlx", "ops");

template <typename T>
bool is_small() { return _disjunction<is_same<T, char>, is_same<T, short>>::value; }

[[kernel]] void traits(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  metal::array<int, 2> a = {int(is_small<short>()),
                            int(_conjunction<is_same<int, int>, is_same<int, float>>::value)};
  out[i] = a[0] * 10 + a[1] + int(a.size()) * 100;
}
"""

# A kernel template instantiated with a parameter left to its default, which a buffer argument's
# type names (as steel attention's `MaskType = float`).
WIDEN = """
template <typename T, typename U = float>
[[kernel]] void widen(const device T* in [[buffer(0)]], device U* out [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
  out[i] = U(in[i]) * U(2);
}
template [[host_name("widen_half")]] [[kernel]] decltype(widen<half>) widen<half>;
"""
