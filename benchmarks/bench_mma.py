"""Throughput of the tensor-core instruction the CUDA back end uses for float `simdgroup_matrix`
products: `mma.sync.aligned.m16n8k8` with TF32 operands and float accumulation.

Run (needs CuPy and an NVIDIA GPU of sm_80 or later):
    python benchmarks/bench_mma.py

Each warp of a grid of 8 blocks per SM runs `CHAINS` independent accumulator chains (each
instruction waits only for the previous one of its chain) for `ITERATIONS` rounds; the time of
one launch (CUDA events, after a warm-up launch) gives instructions per clock per SM at the
GPU's rated clock, and the float32 TFLOPS that rate would be (2 x 16 x 8 x 8 per instruction).
Whatever a kernel spends beyond this rate on its products is the work around them.
"""

from __future__ import annotations

import sys

SOURCE = r"""
extern "C" __global__ void chains(float* out, int iterations) {
  unsigned a = threadIdx.x, b = threadIdx.x * 3u;
  float d[CHAINS][4];
  for (int c = 0; c < CHAINS; ++c) for (int q = 0; q < 4; ++q) d[c][q] = 0.0f;
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int c = 0; c < CHAINS; ++c)
      asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
                   "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                   : "+f"(d[c][0]), "+f"(d[c][1]), "+f"(d[c][2]), "+f"(d[c][3])
                   : "r"(a), "r"(b), "r"(a), "r"(b), "r"(a), "r"(b));
  }
  float s = 0.0f;
  for (int c = 0; c < CHAINS; ++c) s += d[c][0] + d[c][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;   // keeps the chains alive
}
"""
ITERATIONS = 4096


def main() -> int:
    try:
        import cupy
    except ImportError:
        print("bench_mma.py needs CuPy and an NVIDIA GPU")
        return 1
    device = cupy.cuda.Device()
    sms = device.attributes["MultiProcessorCount"]
    props = cupy.cuda.runtime.getDeviceProperties(device.id)
    clock = props["clockRate"] * 1e3
    print(f"GPU: {props['name'].decode()}, {sms} SMs, rated clock {clock / 1e9:.2f} GHz")
    for chains in (1, 4, 8, 16):
        module = cupy.RawModule(code=SOURCE.replace("CHAINS", str(chains)),
                                options=(f"-arch=sm_{device.compute_capability}",))
        kernel = module.get_function("chains")
        for warps in (4, 8, 16):
            out = cupy.zeros(sms * 8 * warps * 32, cupy.float32)
            args = ((sms * 8,), (warps * 32,), (out, cupy.int32(ITERATIONS)))
            kernel(*args)
            start, stop = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            kernel(*args)
            stop.record()
            stop.synchronize()
            ms = cupy.cuda.get_elapsed_time(start, stop)
            per_clock = sms * 8 * warps * ITERATIONS * chains / sms / (ms * 1e-3 * clock)
            tflops = per_clock * 2 * 16 * 8 * 8 * sms * clock / 1e12
            print(f"{chains:2d} chains per warp, {warps:2d} warps per block: {ms:7.3f} ms, "
                  f"{per_clock:5.2f} per clock per SM ({tflops:6.1f} TFLOPS)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
