"""Speed of the simulator at the sizes the project promises.

Run: python benchmarks/bench_metalsim.py

Targets on a 2-core machine: a puzzle-sized kernel (compile cached) under 20 ms; compiling a
50-line kernel under 200 ms; a 1,048,576-thread elementwise kernel under 1 s; a 256x256 tiled
matmul through threadgroup memory with barriers under 3 s; a 1,048,576-element `simd_sum`
reduction (with atomics) and a 256x256 `simdgroup_matrix` matmul each under 3 s.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np
from timing import best_of

import metalsim
from metalsim.exec import launch
from metalsim.viz.examples import REVERSE
from solutions import gemm

FIFTY_LINES = """
template <typename T>
inline T clamp_index(T i, T n) { return i < n ? i : n - 1; }
inline float weight(int k) { return k == 0 ? 0.5f : 0.25f; }
""", """
threadgroup float tile[64 + 2];
uint gid = thread_position_in_grid.x;
uint lid = thread_position_in_threadgroup.x;
uint n = a_shape[0];
uint tg = threads_per_threadgroup.x;
uint base = threadgroup_position_in_grid.x * tg;
tile[lid + 1] = gid < n ? a[gid] : 0.0f;
if (lid == 0) {
    uint left = base == 0 ? 0 : base - 1;
    tile[0] = a[left];
}
if (lid == tg - 1) {
    tile[tg + 1] = a[clamp_index(base + tg, n)];
}
threadgroup_barrier(mem_flags::mem_threadgroup);
float acc = 0.0f;
for (int k = -1; k <= 1; ++k) {
    float w = weight(k < 0 ? -k : k);
    acc += w * tile[int(lid) + 1 + k];
}
float4 v = float4(acc, acc * 2.0f, acc * 3.0f, 1.0f);
v.xy = v.yx;
float m = max(max(v.x, v.y), max(v.z, v.w));
int bucket = int(m) % 4;
switch (bucket) {
    case 0: acc += 1.0f; break;
    case 1: acc -= 1.0f; break;
    default: acc *= 0.5f;
}
uint steps = 0;
while (steps < 3 && acc > 100.0f) {
    acc *= 0.5f;
    steps++;
}
do {
    acc += 0.0f;
} while (false);
half h = half(acc);
bfloat b = bfloat(float(h));
ulong wide = ulong(gid) * 3ul;
int narrow = int(wide & 0xffu);
acc += float(b) * 0.0f + float(narrow) * 0.0f;
if (gid < n) {
    out[gid] = acc;
}
"""

MATMUL = """
threadgroup float As[16][16];
threadgroup float Bs[16][16];
uint col = thread_position_in_grid.x, row = thread_position_in_grid.y;
uint lx = thread_position_in_threadgroup.x, ly = thread_position_in_threadgroup.y;
uint n = a_shape[0];
float acc = 0.0f;
for (uint t = 0; t < n; t += 16) {
    As[ly][lx] = a[row * n + t + lx];
    Bs[ly][lx] = b[(t + ly) * n + col];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint k = 0; k < 16; ++k) {
        acc += As[ly][k] * Bs[k][lx];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
out[row * n + col] = acc;
"""

SIMD_REDUCE = """
threadgroup float partial[32];
float v = simd_sum(x[thread_position_in_grid.x]);
if (thread_index_in_simdgroup == 0) partial[simdgroup_index_in_threadgroup] = v;
threadgroup_barrier(mem_flags::mem_threadgroup);
if (simdgroup_index_in_threadgroup == 0) {
    float total = simd_sum(thread_index_in_simdgroup < simdgroups_per_threadgroup
                           ? partial[thread_index_in_simdgroup] : 0.0f);
    if (thread_index_in_simdgroup == 0) {
        atomic_fetch_add_explicit(&out[0], total, memory_order_relaxed);
    }
}
"""

def main() -> None:
    kernel = metalsim.metal_kernel("reverse", ["a"], ["out"], REVERSE)
    args = dict(inputs=[mx.arange(8, dtype=mx.float32)], output_shapes=[(8,)],
                output_dtypes=[mx.float32], grid=(8, 1, 1), threadgroup=(8, 1, 1))
    metalsim.simulate(kernel, **args)
    t = best_of(lambda: metalsim.simulate(kernel, **args), 20)
    print(f"puzzle-sized kernel (reverse, 8 threads, compile cached): {t * 1e3:7.1f} ms  "
          "(target 20 ms)")

    header, body = FIFTY_LINES
    kernel = metalsim.metal_kernel("stencil", ["a"], ["out"], body, header=header)
    n = 1000
    args = dict(inputs=[mx.arange(n, dtype=mx.float32)], output_shapes=[(n,)],
                output_dtypes=[mx.float32], grid=(n, 1, 1), threadgroup=(64, 1, 1))
    gen = kernel._prepare((), args).gen
    lines = len(header.splitlines()) + len(body.splitlines())

    def compile_fresh():
        launch.compile_program.cache_clear()
        launch.compile_program(gen.text, tuple(gen.sections), "safe")
    t = best_of(compile_fresh, 5)
    print(f"compile a {lines}-line kernel (parse + check + lower):   {t * 1e3:7.1f} ms  "
          f"(target 200 ms)")
    run = metalsim.simulate(kernel, **args)
    assert run.report.errors == [], run.report.summary()

    n = 1 << 20
    kernel = metalsim.metal_kernel("axpy", ["x", "y"], ["out"],
                                   "uint i = thread_position_in_grid.x;\n"
                                   "out[i] = 2.0f * x[i] + y[i];")
    x, y = mx.random.normal((n,)), mx.random.normal((n,))
    args = dict(inputs=[x, y], output_shapes=[(n,)], output_dtypes=[mx.float32],
                grid=(n, 1, 1), threadgroup=(256, 1, 1))
    metalsim.simulate(kernel, **args)
    t = best_of(lambda: metalsim.simulate(kernel, **args), 3)
    print(f"elementwise, 1,048,576 threads:                        {t:7.2f} s   (target 1 s)")

    size = 256
    kernel = metalsim.metal_kernel("matmul", ["a", "b"], ["out"], MATMUL)
    a, b = mx.random.normal((size, size)), mx.random.normal((size, size))
    args = dict(inputs=[a, b], output_shapes=[(size, size)], output_dtypes=[mx.float32],
                grid=(size, size, 1), threadgroup=(16, 16, 1))
    metalsim.simulate(kernel, **args)
    t = best_of(lambda: metalsim.simulate(kernel, **args), 2)
    run = metalsim.simulate(kernel, **args)
    np.testing.assert_allclose(np.array(run.outputs[0]), np.array(a) @ np.array(b),
                               rtol=1e-3, atol=1e-3)
    print(f"tiled matmul 256x256 (16x16 tiles, barriers):          {t:7.2f} s   (target 3 s)")

    n = 1 << 20
    kernel = metalsim.metal_kernel("reduce", ["x"], ["out"], SIMD_REDUCE, atomic_outputs=True)
    x = mx.random.normal((n,))
    args = dict(inputs=[x], output_shapes=[(1,)], output_dtypes=[mx.float32],
                grid=(n, 1, 1), threadgroup=(1024, 1, 1), init_value=0)
    metalsim.simulate(kernel, **args)
    t = best_of(lambda: metalsim.simulate(kernel, **args), 2)
    run = metalsim.simulate(kernel, **args)
    assert run.report.errors == [], run.report.summary()
    np.testing.assert_allclose(np.array(run.outputs[0])[0], float(np.array(x).sum()),
                               rtol=1e-3, atol=1e-1)
    print(f"simd_sum reduction of 1,048,576 floats (+ atomics):     {t:7.2f} s   (target 3 s)")

    size = 256  # notebook 04's real kernel: 64x64 tiles, 4 SIMD-groups of simdgroup_matrix
    a, b = mx.random.normal((size, size)), mx.random.normal((size, size))
    kernel, args = gemm.launch(a, b, metalsim.metal_kernel)
    metalsim.simulate(kernel, **args)
    t = best_of(lambda: metalsim.simulate(kernel, **args), 2)
    run = metalsim.simulate(kernel, **args)
    np.testing.assert_allclose(np.array(run.outputs[0]), np.array(a) @ np.array(b),
                               rtol=1e-3, atol=1e-3)
    print(f"simdgroup_matrix matmul 256x256 (solutions/gemm.py):   {t:7.2f} s   (target 3 s)")


if __name__ == "__main__":
    main()
