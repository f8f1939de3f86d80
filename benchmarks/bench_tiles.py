"""Tile and split choices of the grouped MVMR / VVOR and the segment reduction, on the GPU.

Run (needs CuPy, PyTorch with CUDA, and a GPU):
    python benchmarks/bench_tiles.py [--only mvmr,vvor,segment]

For each benchmark shape of `bench_gpu.py` (MVMR and VVOR at C = M = 256, 128, 32; segment
sum and max at C = 32 and 256), every variant of the choices the kernels make from the sizes
(`mvmr_grouped.tiles`, `c_parts`' threadgroup target, `vvor_tiles`, the VVOR split targets,
`segment_reduce.ROWS_PER_THREAD` and `UNROLL`) is set, the function is run once under the
recording CUDA back end, its launches are timed as `bench_gpu.py` times them (kernel time,
median of 20), and the output is checked against PyTorch's in float64. One line per variant;
the first of each shape is the current choice.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import mlx.core as mx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_gpu  # noqa: E402

import metalsim.cuda  # noqa: E402
from solutions import mvmr_grouped, segment_reduce  # noqa: E402


@contextlib.contextmanager
def patched(module: object, **values: object) -> Iterator[None]:
    saved = {name: getattr(module, name) for name in values}
    for name, value in values.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)


def measure(bench: bench_gpu.Bench) -> tuple[float, float]:
    """(median kernel milliseconds, max error relative to PyTorch's float64 result)."""
    import torch

    operands = bench.setup(np.random.default_rng(0))
    result, launches = bench_gpu.record(lambda: bench.ours(*[mx.array(o) for o in operands]))
    prepared = [metalsim.cuda.prepare(kernel, **kwargs)[0] for kernel, kwargs in launches]
    ms = bench_gpu.kernel_ms(lambda: [launch.enqueue() for launch in prepared])
    tensors = [torch.from_numpy(o.astype(np.int64) if o.dtype == np.int32 else o).cuda()
               for o in operands]
    want = bench.torch(*[t.double() if t.is_floating_point() else t for t in tensors])
    return ms, bench_gpu._relative_error(np.array(result.astype(mx.float32)),
                                         want.cpu().numpy())


def mvmr_variants(m: int) -> list[tuple[str, Callable]]:
    base = mvmr_grouped.tiles(0, 0, 0, m)
    shapes = [base, (base[0], base[1], 32, base[3]), (128, base[1], 16, base[3]),
              (32, base[1], 16, base[3]), (128, base[1], 32, base[3])]
    out = []
    for shape in shapes:
        for target in (768, 1536):
            out.append((f"BL,BM,BC,NT={shape} threadgroups>={target}",
                        lambda s=shape, t=target: [
                            patched(mvmr_grouped, tiles=lambda *_, s=s: s),
                            patched(mvmr_grouped, MVMR_THREADGROUPS=t)]))
    return out


def vvor_variants(m: int, c: int) -> list[tuple[str, Callable]]:
    base = mvmr_grouped.vvor_tiles(m, c)
    out = []
    for tile in dict.fromkeys([base, (32, base[1]), (base[0], 64), (128, base[1])]):
        for target, part in ((1024, 64), (2048, 32), (512, 128)):
            out.append((f"BM,BN={tile} threadgroups~{target} min part {part}",
                        lambda tl=tile, t=target, p=part: [
                            patched(mvmr_grouped, vvor_tiles=lambda *_, tl=tl: tl),
                            patched(mvmr_grouped, VVOR_THREADGROUPS=t, VVOR_MIN_PART=p)]))
    return out


def segment_variants() -> list[tuple[str, Callable]]:
    return [(f"rows/thread={rows} unroll={unroll}",
             lambda r=rows, u=unroll: [patched(segment_reduce, ROWS_PER_THREAD=r, UNROLL=u)])
            for rows, unroll in ((16, 4), (32, 4), (64, 4), (16, 8), (32, 8), (64, 8))]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="mvmr,vvor,segment")
    opts = parser.parse_args()
    wanted = opts.only.split(",")
    copy_ms, copy_gbs = bench_gpu.copy_bandwidth()
    print(f"GPU: {metalsim.cuda.gpu_name()}; device copy {copy_gbs:.0f} GB/s", flush=True)
    for bench in bench_gpu.benches():
        name = bench.name.lower()
        if name.startswith("mvmr") and "mvmr" in wanted:
            variants = mvmr_variants(int(name.rsplit("=", 1)[1]))
        elif name.startswith("vvor") and "vvor" in wanted:
            size = int(name.rsplit("=", 1)[1])
            variants = vvor_variants(size, size)
        elif name.startswith("segment") and "random" not in name and "segment" in wanted:
            variants = segment_variants()
        else:
            continue
        print(bench.name, flush=True)
        for label, contexts in variants:
            try:
                with contextlib.ExitStack() as stack:
                    for context in contexts():
                        stack.enter_context(context)
                    ms, err = measure(bench)
                ideal = sum(o.nbytes for o in bench.setup(np.random.default_rng(0)))
                print(f"    {label:50s} {ms:8.4f} ms | {ideal / (ms * 1e-3) / 1e9 / copy_gbs:6.1%}"
                      f" of copy (inputs) | max rel err {err:.1e}", flush=True)
            except Exception as error:  # noqa: BLE001 - report the variant and go on
                print(f"    {label:50s} FAILED {type(error).__name__}: {str(error)[:200]}",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
