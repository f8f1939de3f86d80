"""What the GPU benchmarks' kernels compile to, without a GPU: registers, spills, threadgroups
resident per SM, waves, and the SASS of each kernel's main loop.

Run (needs NVRTC, ptxas, cuobjdump and nvdisasm: `pip install -r benchmarks/requirements-sass.txt`):
    python benchmarks/bench_sass.py [--only NAME,NAME] [--arch sm_90] [--sms 132] [--keep DIR]

Each benchmark of `bench_gpu.py` calls its MLX function once with `mx.fast.metal_kernel`
replaced by a recorder: every launch is kept and answered with zeros of its output shapes, so
no kernel runs (launches that depend on an earlier launch's values see zeros; the benchmarks'
launch sizes depend on shapes only). Each launch is translated and compiled as
`metalsim.cuda.runtime` compiles it (NVRTC to PTX with the same options and switches, blocks
of the launch's threadgroup size), then assembled by ptxas for `--arch` and disassembled. Per
launch it prints registers a thread, the bytes of local memory (spills), threadgroups per SM
and what limits them (registers, threads, shared memory: 64K registers, 2048 threads and
228 KiB an SM, 1 KiB reserved per block, as on an H100), the grid's waves over `--sms` SMs,
and the instructions of the longest loop that holds a tensor-core instruction or, failing
that, the longest loop, with the most frequent opcodes (one iteration, every instruction of
the loop counted once, cold paths included).
The GPU's own ptxas (the driver's) may allocate a few registers differently.
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import mlx.core as mx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench_gpu  # noqa: E402

import metalsim  # noqa: E402
from metalsim.cuda import nvrtc, runtime  # noqa: E402
from metalsim.cuda.translate import translate  # noqa: E402

SM_REGISTERS, SM_THREADS, SM_SHARED, BLOCK_RESERVED, SM_BLOCKS = 65536, 2048, 228 * 1024, 1024, 32


def tool(name: str) -> str:
    """A CUDA tool from PATH, CUDA_HOME, /usr/local/cuda or the `nvidia-cuda-*` wheels
    (the wheels first: their ptxas reads the PTX version of the wheel's NVRTC)."""
    for entry in sys.path:
        for found in sorted(glob.glob(os.path.join(entry, "nvidia", "cu*", "bin", name))):
            return found
    for folder in (os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"):
        if folder and os.path.exists(os.path.join(folder, "bin", name)):
            return os.path.join(folder, "bin", name)
    found = shutil.which(name)
    if found is None:
        raise SystemExit(f"{name} not found: pip install -r benchmarks/requirements-sass.txt")
    return found


def recorded_launches(bench: bench_gpu.Bench) -> list[tuple[object, dict]]:
    """The kernel launches of one call of the benchmark's function (no kernel runs)."""
    launches = []

    def factory(*args: object, **kwargs: object):
        kernel = metalsim.metal_kernel(*args, **kwargs)

        def call(**call_kwargs: object) -> list[mx.array]:
            launches.append((kernel, call_kwargs))
            return [mx.zeros(shape, dtype) for shape, dtype in
                    zip(call_kwargs["output_shapes"], call_kwargs["output_dtypes"], strict=True)]
        return call

    saved = mx.fast.metal_kernel
    mx.fast.metal_kernel = factory
    mx.disable_compile()
    try:
        operands = bench.setup(np.random.default_rng(0))
        mx.eval(bench.ours(*[mx.array(o) for o in operands]))
    finally:
        mx.fast.metal_kernel = saved
        mx.enable_compile()
    return launches


def assemble(ptx: str, arch: str, folder: str) -> tuple[dict[str, int], str]:
    """ptxas's resource report ({registers, local, shared}) and the SASS listing."""
    ptx_path, cubin = os.path.join(folder, "k.ptx"), os.path.join(folder, "k.cubin")
    Path(ptx_path).write_text(ptx)
    report = subprocess.run([tool("ptxas"), f"-arch={arch}", "-v", ptx_path, "-o", cubin],
                            capture_output=True, text=True, check=True).stderr

    def number(pattern: str) -> int:
        match = re.search(pattern, report)
        return int(match.group(1)) if match else 0

    resources = {"registers": number(r"Used (\d+) registers"),
                 "local": number(r"(\d+) bytes stack frame"),
                 "shared": number(r"(\d+) bytes smem")}
    sass = subprocess.run([tool("cuobjdump"), "-sass", cubin], capture_output=True, text=True,
                          check=True).stdout
    return resources, sass


def compiled(kernel: object, call: dict, arch: str, folder: str
             ) -> tuple[dict[str, int], str, int]:
    """(resources, SASS, threads) of a launch compiled as the runtime compiles it."""
    translation = translate(kernel._prepare((), call).gen, kernel.spec.math_mode)
    tg = runtime.clamp_threadgroup(call["grid"], call["threadgroup"])
    threads = max(32, -(-tg[0] * tg[1] * tg[2] // 32) * 32)
    ptx = nvrtc.compile_ptx(translation.source, opts=(
        *nvrtc.options(kernel.spec.math_mode), f"-DMETALSIM_MAX_THREADS={threads}",
        *runtime.matrix_defines(translation)))
    return (*assemble(ptx, arch, folder), threads)


def resident(resources: dict[str, int], threads: int) -> tuple[int, str]:
    """Threadgroups per SM and the resource that limits them."""
    warps = threads // 32
    per_warp = 32 * -(-max(resources["registers"], 1) // 8) * 8
    limits = {"registers": SM_REGISTERS // (per_warp * warps),
              "threads": SM_THREADS // threads,
              "shared memory": SM_SHARED // (resources["shared"] + BLOCK_RESERVED),
              "blocks": SM_BLOCKS}
    limit = min(limits, key=limits.get)
    return limits[limit], limit


def main_loop(sass: str) -> tuple[int, collections.Counter]:
    """Instructions of the longest backward-branch loop holding an HMMA (else the longest
    loop), and its opcodes."""
    lines = [(int(a, 16), text.strip()) for a, text in
             re.findall(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", sass)]
    index = {address: i for i, (address, _) in enumerate(lines)}
    loops = []
    for i, (address, text) in enumerate(lines):
        target = re.search(r"\bBRA (0x[0-9a-f]+)", text)
        if target and int(target.group(1), 16) < address and int(target.group(1), 16) in index:
            start = index[int(target.group(1), 16)]
            loops.append((any("HMMA" in t for _, t in lines[start:i]), i - start + 1, start, i))
    if not loops:
        return 0, collections.Counter()
    _, size, start, end = max(loops)
    opcodes = collections.Counter(
        re.sub(r"^@!?U?P\w+\s+", "", text).split()[0].split(".")[0]
        for _, text in lines[start:end + 1])
    return size, opcodes


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="", help="comma-separated parts of benchmark names")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--sms", type=int, default=132, help="SMs, for the waves (H100 SXM)")
    parser.add_argument("--keep", default="", help="a folder for the PTX and SASS")
    opts = parser.parse_args()
    wanted = [part.strip().lower() for part in opts.only.split(",") if part.strip()]
    print(f"ptxas {tool('ptxas')} for {opts.arch}")
    with tempfile.TemporaryDirectory() as scratch:
        for bench in bench_gpu.benches():
            if wanted and not any(part in bench.name.lower() for part in wanted):
                continue
            print(bench.name, flush=True)
            for n, (kernel, call) in enumerate(recorded_launches(bench)):
                resources, sass, threads = compiled(kernel, call, opts.arch, scratch)
                if opts.keep:
                    os.makedirs(opts.keep, exist_ok=True)
                    stem = re.sub(r"\W+", "_", f"{bench.name}_{n}_{kernel.spec.name}")
                    Path(opts.keep, stem + ".sass").write_text(sass)
                blocks, limit = resident(resources, threads)
                grid, tg = call["grid"], runtime.clamp_threadgroup(
                    call["grid"], call["threadgroup"])
                groups = np.prod([-(-g // t) for g, t in zip(grid, tg, strict=True)])
                size, opcodes = main_loop(sass)
                print(f"    {kernel.spec.name:22s} {threads:4d} threads, "
                      f"{resources['registers']:3d} registers, {resources['local']} B local,"
                      f" {resources['shared']} B shared: {blocks} per SM ({limit}), "
                      f"{groups} threadgroups = {groups / (blocks * opts.sms):.2f} waves")
                print(f"        main loop {size} instructions: " + " ".join(
                    f"{op} {count}" for op, count in opcodes.most_common(12)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
