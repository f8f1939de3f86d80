"""metalsim side by side with a checked-numpy floor and the simulators of two peer projects.

Run: python benchmarks/bench_peers.py [--limit SECONDS] [--only metalsim,floor,numba,triton]

Every kernel runs on four engines, each checked against numpy:

- metalsim: the Metal kernel through `metalsim.simulate` (every check on);
- floor: a hand-written numpy-lanes version of the same kernel with the same checks (bounds,
  per-thread access counts, initialisation and race shadows), for map and tiled matmul only: the
  fastest a Python simulator with those checks could plausibly be;
- numba: numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1), the engine of GPU-Puzzles;
- triton: Triton's interpreter (TRITON_INTERPRET=1, on CPU torch), the engine of Triton-Puzzles.

The peers are optional (`pip install -r benchmarks/requirements-peers.txt`); a missing one is
shown as such. Each engine runs in its own process (the peers read their switches at import)
and is timed in CPU seconds of that process, which a machine shared with other work disturbs
far less than wall time. metalsim and the floor are timed on a second run at the same size
(the first compiles and faults in memory), the peers after a run on one block; the floor
runs with the heap tuning that a metalsim launch makes (`metalsim.exec.heap`). Every engine's
time is the best of as many runs as fit in 2 s of CPU time, at most 200 (`REPEAT`). A peer is run
on consecutive slices of its grid; once it has used `--limit` seconds (120 by default) it is
stopped, and its time is extrapolated from the slices it finished, which the table marks with
`~`. Ratios are engine time / metalsim time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass

import numpy as np

TG = 256      # threads per threadgroup (block) for the 1-D kernels
TILE = 16     # matmul tiles are TILE x TILE, one thread per output element
BINS = 256

MAP = """
uint i = thread_position_in_grid.x;
if (i < a_shape[0]) {
    out[i] = a[i] + 10.0f;
}
"""

BLOCK_REDUCE = """
threadgroup float cache[256];
uint i = thread_position_in_grid.x, local = thread_position_in_threadgroup.x;
cache[local] = a[i];
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint s = 128; s > 0; s >>= 1) {
    if (local < s) {
        cache[local] += cache[local + s];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (local == 0) {
    out[threadgroup_position_in_grid.x] = cache[0];
}
"""

HISTOGRAM = """
uint i = thread_position_in_grid.x;
atomic_fetch_add_explicit(&out[bins[i]], 1u, memory_order_relaxed);
"""


@dataclass(frozen=True)
class Case:
    kernel: str   # map, matmul, reduce, histogram
    size: int     # elements (map, reduce, histogram) or matrix side (matmul)

    @property
    def label(self) -> str:
        if self.kernel == "matmul":
            return f"tiled matmul {self.size}x{self.size}"
        return f"{self.kernel} {self.size:,}"


CASES = [Case("map", 4096), Case("map", 65536), Case("map", 1 << 20),
         Case("matmul", 64), Case("matmul", 128), Case("matmul", 256), Case("matmul", 512),
         Case("reduce", 1 << 20), Case("histogram", 1 << 20)]
FLOOR_KERNELS = ("map", "matmul")
# Every engine's time is the best of up to REPEAT runs, repeated while the runs so far and one
# more stay within REPEAT_SECONDS of CPU time: every engine is sampled over about the same span.
# On a shared virtual machine a process runs 30-50% slower for seconds at a time; five runs of
# a few milliseconds fall inside one such stretch, while five runs of a peer spread over a
# second or more, so a fixed count of runs measured the stretch more than the engine.
REPEAT, REPEAT_SECONDS = 200, 2.0
PEER_SKIP = {Case("matmul", 512)}   # the floor comparison's extra size; peers stop at 256


def inputs(case: Case) -> list[np.ndarray]:
    rng = np.random.default_rng(case.size)
    if case.kernel == "matmul":
        return [rng.standard_normal((case.size, case.size), np.float32) for _ in range(2)]
    if case.kernel == "histogram":
        return [rng.integers(0, BINS, case.size).astype(np.int32)]
    return [rng.standard_normal(case.size, np.float32)]


def expected(case: Case, args: list[np.ndarray]) -> np.ndarray:
    if case.kernel == "map":
        return args[0] + np.float32(10)
    if case.kernel == "matmul":
        return args[0] @ args[1]
    if case.kernel == "reduce":
        return args[0].reshape(-1, TG).sum(axis=1)
    return np.bincount(args[0], minlength=BINS).astype(np.uint32)


def blocks(case: Case) -> int:
    """Threadgroups (blocks, programs) of a case, counted along the axis slices are cut on."""
    return case.size // TILE if case.kernel == "matmul" else -(-case.size // TG)


def rows_of(case: Case, done: int) -> slice:
    """The part of the expected result that the first `done` block slices produce."""
    if case.kernel == "matmul":
        return slice(0, done * TILE)
    if case.kernel == "reduce":
        return slice(0, done)
    return slice(0, done * TG)


# --- engines: each returns (result, blocks run) and runs in its own process ------------------

def run_metalsim(case: Case, args: list[np.ndarray], limit: float):
    import mlx.core as mx
    from bench_metalsim import MATMUL  # the tiled matmul that bench_metalsim times

    import metalsim
    xs = [mx.array(a) for a in args]
    if case.kernel == "map":
        kernel = metalsim.metal_kernel("map", ["a"], ["out"], MAP)
        launch = dict(output_shapes=[(case.size,)], output_dtypes=[mx.float32],
                      grid=(case.size, 1, 1), threadgroup=(TG, 1, 1))
    elif case.kernel == "matmul":
        kernel = metalsim.metal_kernel("matmul", ["a", "b"], ["out"], MATMUL)
        launch = dict(output_shapes=[(case.size, case.size)], output_dtypes=[mx.float32],
                      grid=(case.size, case.size, 1), threadgroup=(TILE, TILE, 1))
    elif case.kernel == "reduce":
        kernel = metalsim.metal_kernel("block_reduce", ["a"], ["out"], BLOCK_REDUCE)
        launch = dict(output_shapes=[(case.size // TG,)], output_dtypes=[mx.float32],
                      grid=(case.size, 1, 1), threadgroup=(TG, 1, 1))
    else:
        kernel = metalsim.metal_kernel("histogram", ["bins"], ["out"], HISTOGRAM,
                                       atomic_outputs=True)
        launch = dict(output_shapes=[(BINS,)], output_dtypes=[mx.uint32],
                      grid=(case.size, 1, 1), threadgroup=(TG, 1, 1), init_value=0)
    run = metalsim.simulate(kernel, inputs=xs, **launch)
    assert run.report.errors == [], run.report.summary()
    return np.array(run.outputs[0]), blocks(case)


def run_numba(case: Case, args: list[np.ndarray], limit: float):
    global cuda  # the simulator swaps a module global named after numba.cuda while it runs
    from numba import cuda, float32

    if case.kernel == "map":
        @cuda.jit
        def kernel(a, out, first):
            i = (cuda.blockIdx.x + first) * cuda.blockDim.x + cuda.threadIdx.x
            if i < a.shape[0]:
                out[i] = a[i] + 10
        out = np.zeros_like(args[0])

        def step(first, count):
            kernel[count, TG](args[0], out, first)
    elif case.kernel == "matmul":
        @cuda.jit
        def kernel(a, b, out, first):
            As = cuda.shared.array((TILE, TILE), float32)
            Bs = cuda.shared.array((TILE, TILE), float32)
            lx, ly = cuda.threadIdx.x, cuda.threadIdx.y
            col = cuda.blockIdx.x * TILE + lx
            row = (cuda.blockIdx.y + first) * TILE + ly
            n = a.shape[0]
            acc = float32(0)
            for t in range(0, n, TILE):
                As[ly, lx] = a[row, t + lx]
                Bs[ly, lx] = b[t + ly, col]
                cuda.syncthreads()
                for k in range(TILE):
                    acc += As[ly, k] * Bs[k, lx]
                cuda.syncthreads()
            out[row, col] = acc
        out = np.zeros_like(args[0])
        side = case.size // TILE

        def step(first, count):
            kernel[(side, count), (TILE, TILE)](args[0], args[1], out, first)
    elif case.kernel == "reduce":
        @cuda.jit
        def kernel(a, out, first):
            cache = cuda.shared.array(TG, float32)
            local = cuda.threadIdx.x
            group = cuda.blockIdx.x + first
            cache[local] = a[group * TG + local]
            cuda.syncthreads()
            s = TG // 2
            while s > 0:
                if local < s:
                    cache[local] += cache[local + s]
                cuda.syncthreads()
                s //= 2
            if local == 0:
                out[group] = cache[0]
        out = np.zeros(case.size // TG, np.float32)

        def step(first, count):
            kernel[count, TG](args[0], out, first)
    else:
        @cuda.jit
        def kernel(bins, out, first):
            i = (cuda.blockIdx.x + first) * TG + cuda.threadIdx.x
            cuda.atomic.add(out, bins[i], 1)
        out = np.zeros(BINS, np.uint32)

        def step(first, count):
            kernel[count, TG](args[0], out, first)
    return out, _sliced(step, blocks(case), limit)


def run_triton(case: Case, args: list[np.ndarray], limit: float):
    import torch
    import triton
    import triton.language as tl
    torch.set_num_threads(1)
    xs = [torch.from_numpy(a) for a in args]

    if case.kernel == "map":
        @triton.jit
        def kernel(a_ptr, out_ptr, n, first, BLOCK: tl.constexpr):
            offs = (tl.program_id(0) + first) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + 10.0, mask=mask)
        out = torch.zeros(case.size, dtype=torch.float32)

        def step(first, count):
            kernel[(count,)](xs[0], out, case.size, first, BLOCK=TG)
    elif case.kernel == "matmul":
        @triton.jit
        def kernel(a_ptr, b_ptr, out_ptr, n, first, BLOCK: tl.constexpr):
            rows = (tl.program_id(1) + first) * BLOCK + tl.arange(0, BLOCK)
            cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            ks = tl.arange(0, BLOCK)
            acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
            for t in range(0, n, BLOCK):
                a = tl.load(a_ptr + rows[:, None] * n + (t + ks)[None, :])
                b = tl.load(b_ptr + (t + ks)[:, None] * n + cols[None, :])
                acc += tl.dot(a, b, input_precision="ieee")
            tl.store(out_ptr + rows[:, None] * n + cols[None, :], acc)
        out = torch.zeros((case.size, case.size), dtype=torch.float32)
        side = case.size // TILE

        def step(first, count):
            kernel[(side, count)](xs[0], xs[1], out, case.size, first, BLOCK=TILE)
    elif case.kernel == "reduce":
        @triton.jit
        def kernel(a_ptr, out_ptr, first, BLOCK: tl.constexpr):
            group = tl.program_id(0) + first
            tl.store(out_ptr + group, tl.sum(tl.load(a_ptr + group * BLOCK
                                                     + tl.arange(0, BLOCK)), axis=0))
        out = torch.zeros(case.size // TG, dtype=torch.float32)

        def step(first, count):
            kernel[(count,)](xs[0], out, first, BLOCK=TG)
    else:
        @triton.jit
        def kernel(bins_ptr, out_ptr, first, BLOCK: tl.constexpr):
            offs = (tl.program_id(0) + first) * BLOCK + tl.arange(0, BLOCK)
            tl.atomic_add(out_ptr + tl.load(bins_ptr + offs), 1)
        out = torch.zeros(BINS, dtype=torch.int32)

        def step(first, count):
            kernel[(count,)](xs[0], out, first, BLOCK=TG)
    done = _sliced(step, blocks(case), limit)
    result = out.numpy()
    return (result.astype(np.uint32) if case.kernel == "histogram" else result), done


def _sliced(step, total: int, limit: float) -> int:
    """Run `step(first, count)` over consecutive slices of `total` blocks, doubling the slice,
    until done or `limit` CPU seconds are spent; returns the blocks run."""
    start, done, count = time.process_time(), 0, 1
    while done < total:
        spent = time.process_time() - start
        if spent >= limit:
            break
        if done:   # no slice that would run past the limit at the rate so far
            count = min(count, max(1, int((limit - spent) * done / spent)))
        count = min(count, total - done)
        step(done, count)
        done += count
        count *= 2
    return done


def run_floor(case: Case, args: list[np.ndarray], limit: float):
    from metalsim.exec.heap import keep_freed_memory
    keep_freed_memory()   # the heap tuning a metalsim launch makes, for a like comparison
    if case.kernel == "map":
        return floor_map(args[0]), blocks(case)
    return floor_matmul(args[0], args[1]), blocks(case)


ENGINES = {"metalsim": run_metalsim, "floor": run_floor, "numba": run_numba,
           "triton": run_triton}
ENVIRONMENT = {"numba": {"NUMBA_ENABLE_CUDASIM": "1"}, "triton": {"TRITON_INTERPRET": "1"}}


# --- the checked-numpy floor -----------------------------------------------------------------

class Shadow:
    """The checks a simulator keeps for one allocation (flat granules, one per 4-byte element):
    whether each was written, and the last writer and reader with the (threadgroup, barrier
    epoch) stamp of the access; -2 as reader means several threads read it in one epoch."""

    def __init__(self, granules: int, name: str) -> None:
        self.name = name
        self.init = np.zeros(granules, bool)
        self.w_tid = np.full(granules, -1, np.int64)
        self.w_stamp = np.zeros(granules, np.int64)
        self.r_tid = np.full(granules, -1, np.int64)
        self.r_stamp = np.zeros(granules, np.int64)

    def read(self, flat: np.ndarray, tid: np.ndarray, stamp: np.ndarray,
             check_init: bool) -> None:
        if check_init and not self.init[flat].all():
            raise AssertionError(f"uninitialised read of {self.name}")
        writer = self.w_tid[flat]
        other = (writer >= 0) & (writer != tid)
        if other.any() and (self.w_stamp[flat][other] == stamp[other]).any():
            raise AssertionError(f"read-after-write race on {self.name}")
        reader = self.r_tid[flat]
        several = (self.r_stamp[flat] == stamp) & (reader != -1) & (reader != tid)
        readers = np.where(several, -2, tid)
        self.r_tid[flat] = readers
        self.r_stamp[flat] = stamp
        repeated = self.r_tid[flat] != readers    # two lanes of this read hit one granule
        if repeated.any():
            self.r_tid[flat[repeated]] = -2

    def write(self, flat: np.ndarray, tid: np.ndarray, stamp: np.ndarray) -> None:
        for who, when in ((self.w_tid, self.w_stamp), (self.r_tid, self.r_stamp)):
            earlier = who[flat]
            other = (earlier != -1) & (earlier != tid)
            if other.any() and (when[flat][other] == stamp[other]).any():
                raise AssertionError(f"write race on {self.name}")
        self.w_tid[flat] = tid
        self.w_stamp[flat] = stamp
        if (self.w_tid[flat] != tid).any():
            raise AssertionError(f"two threads of one store write one element of {self.name}")
        self.init[flat] = True


def _in_bounds(index: np.ndarray, count: int) -> None:
    if index.min() < 0 or index.max() >= count:
        raise AssertionError("out-of-bounds access")


def floor_map(a: np.ndarray) -> np.ndarray:
    """`out[i] = a[i] + 10` for every thread, with every check a simulator makes."""
    n = a.size
    out = np.full(n, np.nan, np.float32)
    shadow = Shadow(n, "out")
    reads, writes = np.zeros(n, np.int64), np.zeros(n, np.int64)
    tid = np.arange(n, dtype=np.int64)
    stamp = (tid // TG) << 32                      # threadgroup, barrier epoch 0
    i = tid.astype(np.uint32)                      # thread_position_in_grid.x
    active = np.flatnonzero(i < np.uint32(n))      # if (i < a_shape[0])
    i, lanes = i[active], tid[active]
    _in_bounds(i, n)
    reads[lanes] += 1
    value = a[i] + np.float32(10)
    _in_bounds(i, n)
    out[i] = value
    writes[lanes] += 1
    shadow.write(i.astype(np.int64), lanes, stamp[active])
    return out


def floor_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The tiled matmul with threadgroup tiles, barriers and every check a simulator makes;
    all threadgroups run in lockstep, one numpy operation per statement."""
    n = a.shape[0]
    groups = (n // TILE) ** 2
    out = np.full(n * n, np.nan, np.float32)
    shadow_out = Shadow(n * n, "out")
    tiles = {name: np.full(groups * TILE * TILE, np.nan, np.float32) for name in ("As", "Bs")}
    shadows = {name: Shadow(groups * TILE * TILE, name) for name in ("As", "Bs")}
    counts = {name: np.zeros(n * n, np.int64) for name in ("global_reads", "global_writes",
                                                            "threadgroup_reads",
                                                            "threadgroup_writes", "barriers")}
    lane = np.arange(n * n, dtype=np.int64)        # lanes threadgroup-major, x fastest
    group, local = lane // (TILE * TILE), lane % (TILE * TILE)
    gx, gy = group % (n // TILE), group // (n // TILE)
    lx, ly = local % TILE, local // TILE
    col, row = gx * TILE + lx, gy * TILE + ly
    tid = row * n + col
    bank = group * TILE * TILE
    a_flat, b_flat = a.reshape(-1), b.reshape(-1)
    acc = np.zeros(n * n, np.float32)
    epoch = 0
    for t in range(0, n, TILE):
        stamp = (group << 32) | (epoch << 16)
        for name, source, index in (("As", a_flat, row * n + t + lx),
                                    ("Bs", b_flat, (t + ly) * n + col)):
            _in_bounds(index, n * n)
            counts["global_reads"][tid] += 1
            where = bank + ly * TILE + lx
            _in_bounds(where - bank, TILE * TILE)
            tiles[name][where] = source[index]
            counts["threadgroup_writes"][tid] += 1
            shadows[name].write(where, tid, stamp)
        counts["barriers"][tid] += 1
        epoch += 1
        stamp = (group << 32) | (epoch << 16)
        for k in range(TILE):
            x = bank + ly * TILE + k
            y = bank + k * TILE + lx
            for name, where in (("As", x), ("Bs", y)):
                _in_bounds(where - bank, TILE * TILE)
                counts["threadgroup_reads"][tid] += 1
                shadows[name].read(where, tid, stamp, check_init=True)
            acc += tiles["As"][x] * tiles["Bs"][y]
        counts["barriers"][tid] += 1
        epoch += 1
    _in_bounds(tid, n * n)
    out[tid] = acc
    counts["global_writes"][tid] += 1
    shadow_out.write(tid, tid, group << 32)
    return out.reshape(n, n)


# --- driver ---------------------------------------------------------------------------------

def measure(engine: str, case: Case, limit: float) -> dict:
    """Run one engine on one case in this process; its CPU seconds, blocks run and check."""
    args = inputs(case)
    run = ENGINES[engine]
    if engine in ("metalsim", "floor"):   # steady state: a first run at the same size
        run(case, args, limit)
    else:                                 # compile the kernel, warm the interpreter
        small = Case(case.kernel, TILE * 4 if case.kernel == "matmul" else TG)
        run(small, inputs(small), limit)
    best, spent, runs = float("inf"), 0.0, 0
    while runs < REPEAT and (runs == 0 or spent + best <= REPEAT_SECONDS):
        start = time.process_time()
        result, done = run(case, args, limit)
        seconds = time.process_time() - start
        spent, runs, best = spent + seconds, runs + 1, min(best, seconds)
        if done < blocks(case):   # stopped at the limit: one run, extrapolated
            break
    seconds = best
    total = blocks(case)
    want = expected(case, args)[rows_of(case, done)] if done < total else expected(case, args)
    got = np.asarray(result)[rows_of(case, done)] if done < total else np.asarray(result)
    if case.kernel == "histogram" and done < total:  # a partial histogram: its own counts
        want = np.bincount(args[0][:done * TG], minlength=BINS).astype(np.uint32)
        got = np.asarray(result)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                               rtol=1e-3, atol=1e-3 * max(1, case.size // 64))
    return {"seconds": seconds * total / done, "extrapolated": done < total,
            "fraction": done / total}


def in_process(engine: str, case: Case, limit: float, timeout: float) -> dict | str:
    """`measure` in a fresh Python process with the engine's switches; an error as text."""
    env = dict(os.environ, **ENVIRONMENT.get(engine, {}))
    command = [sys.executable, __file__, "--measure", engine, case.kernel, str(case.size),
               "--limit", str(limit)]
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"no result in {timeout:.0f} s of wall time"
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        return lines[-1] if lines else f"exit status {done.returncode}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def available(engine: str) -> bool:
    module = {"numba": "numba", "triton": "triton"}.get(engine)
    if module is None:
        return True
    import importlib.util
    return importlib.util.find_spec(module) is not None and (
        engine != "triton" or importlib.util.find_spec("torch") is not None)


def cell(result: dict | str | None, base: dict | str | None) -> str:
    if result is None:
        return "-"
    if isinstance(result, str):
        return "failed"
    text = f"{'~' if result['extrapolated'] else ''}{result['seconds']:.3f}s"
    if isinstance(base, dict) and result is not base:
        text += f" ({result['seconds'] / base['seconds']:.2f}x)"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=120.0,
                        help="CPU seconds after which a peer is stopped and extrapolated")
    parser.add_argument("--only", default="metalsim,floor,numba,triton",
                        help="comma-separated engines to run")
    parser.add_argument("--cases", default="", help="comma-separated kernels to run")
    parser.add_argument("--measure", nargs=3, metavar=("ENGINE", "KERNEL", "SIZE"),
                        help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.measure:
        engine, kernel, size = options.measure
        print(json.dumps(measure(engine, Case(kernel, int(size)), options.limit)))
        return
    engines = [e for e in ENGINES if e in options.only.split(",")]
    missing = [e for e in engines if not available(e)]
    for e in missing:
        print(f"{e}: not installed (pip install -r benchmarks/requirements-peers.txt)")
    engines = [e for e in engines if e not in missing]
    cases = [c for c in CASES if not options.cases or c.kernel in options.cases.split(",")]
    print(f"CPU seconds per kernel (ratio to metalsim); ~ = stopped after {options.limit:.0f} s "
          "and extrapolated from the blocks it ran\n")
    width = 24
    print(f"{'kernel':{width}}" + "".join(f"{e:>24}" for e in engines))
    for case in cases:
        results: dict[str, dict | str | None] = {}
        for engine in engines:
            skip = ((engine == "floor" and case.kernel not in FLOOR_KERNELS)
                    or (engine in ("numba", "triton") and case in PEER_SKIP))
            results[engine] = None if skip else in_process(
                engine, case, options.limit, timeout=max(600.0, 6 * options.limit))
        base = results.get("metalsim")
        print(f"{case.label:{width}}" + "".join(f"{cell(results[e], base):>24}"
                                                 for e in engines), flush=True)
        for engine, result in results.items():
            if isinstance(result, str):
                print(f"  {engine} failed: {result}")


if __name__ == "__main__":
    main()
