"""The kernels the CUDA back end is checked on: every puzzle solution on each of its cases, the
real kernels of solutions/ (through their MLX functions, forward and backward), kernels in the
shape of the MLX documentation's examples, and kernels of the gcc-oracle generator
(`tests/metalsim/cgen.py`).

Each is a `Launch`: a metalsim kernel and the keyword arguments of one call. The CI test
translates and compiles them all with NVRTC; `gpu_differential.py` beside this file runs them
on a GPU and in the simulator and compares.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import mlx.core as mx
import numpy as np

import metalsim
from puzzles.catalog import all_puzzles
from puzzles.checking import call_kwargs

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "exec"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "mlx_kernels"))
import cgen  # noqa: E402  (the gcc-oracle generator, a sibling test helper)
import test_grid_sample  # noqa: E402  (bilinear sampling, shaped like the MLX docs' example)


@dataclass
class Launch:
    label: str
    kernel: metalsim.Kernel
    kwargs: dict
    sim_outputs: list[np.ndarray] | None = None   # filled when recorded through the simulator


def generated(launch: Launch) -> metalsim.signature.GeneratedKernel:
    """MLX's generated source for the launch (what gets translated)."""
    return launch.kernel._prepare((), launch.kwargs).gen


# --- puzzle solutions ----------------------------------------------------------------------

def puzzle_launches(hidden: bool = True, seed: int = 0) -> Iterator[Launch]:
    rng = np.random.default_rng(seed)
    for p in all_puzzles():
        kernel = metalsim.metal_kernel(
            name=p.kernel, input_names=list(p.input_names), output_names=list(p.output_names),
            source=p.solution(), header=p.header, atomic_outputs=p.atomic_outputs)
        cases = [("visible", p.visible)]
        if hidden:
            cases += [(f"hidden {i + 1}", c) for i, c in enumerate(p.hidden(rng))]
        for label, case in cases:
            kwargs = call_kwargs(case, [mx.array(x) for x in case.inputs], p.init_value)
            yield Launch(f"puzzle {p.number:02d} {p.slug} ({label})", kernel, kwargs)


# --- real kernels, recorded through their MLX functions -------------------------------------

class Recorder:
    """A kernel factory for `mx.fast.metal_kernel` that simulates each call and records it."""

    def __init__(self) -> None:
        self.launches: list[Launch] = []
        self.label = ""

    def factory(self, *args: object, **kwargs: object) -> metalsim.Kernel:
        spec = metalsim.metal_kernel(*args, **kwargs).spec
        return _Recording(spec, self)

    def record(self, label: str, thunk: Callable[[], object]) -> None:
        self.label = label
        saved = mx.fast.metal_kernel
        mx.fast.metal_kernel = self.factory
        mx.disable_compile()
        try:
            mx.eval(thunk())
        finally:
            mx.fast.metal_kernel = saved
            mx.enable_compile()


class _Recording(metalsim.Kernel):
    def __init__(self, spec: object, recorder: Recorder) -> None:
        super().__init__(spec)
        self.recorder = recorder

    def __call__(self, *args: object, **kwargs: object) -> list[mx.array]:
        outputs = super().__call__(*args, **kwargs)
        launch = Launch(f"{self.recorder.label}: {self.spec.name}",
                        metalsim.Kernel(self.spec), dict(kwargs),
                        [np.array(o.astype(mx.float32)) if o.dtype == mx.bfloat16 else np.array(o)
                         for o in outputs])
        self.recorder.launches.append(launch)
        return outputs


def _normal(rng: np.random.Generator, *shape: int, dtype: mx.Dtype = mx.float32) -> mx.array:
    return mx.array(rng.standard_normal(shape).astype(np.float32)).astype(dtype)


def _lengths(rng: np.random.Generator, rows: int, segments: int) -> mx.array:
    cuts = np.sort(rng.integers(0, rows + 1, segments - 1))
    return mx.array(np.diff(np.r_[0, cuts, rows]).astype(np.int32))


def _vjp(f: Callable, primals: list[mx.array], seed: int = 7) -> Callable[[], object]:
    def run() -> object:
        out = f(*primals)
        cot = _normal(np.random.default_rng(seed), *out.shape, dtype=out.dtype)
        return mx.vjp(f, primals, [cot])
    return run


def _call(kernel: Callable, args: dict) -> list[mx.array]:
    """Call a kernel with the arguments of a `launch` function."""
    return kernel(**args)


def real_kernel_workloads(scale: int = 1) -> list[tuple[str, Callable[[], object]]]:
    """(label, thunk) pairs calling every real kernel's MLX function (and its VJP) at a small
    size (`scale=1`, for the simulator) or larger ones."""
    from solutions import axpby, conv1d, distances, gemm, mvmr, row_reduce, segment_reduce

    rng = np.random.default_rng(0)
    s = scale
    x, y = _normal(rng, 1000 * s + 3), _normal(rng, 1000 * s + 3)
    rows, row = _normal(rng, 24 * s, 136), _normal(rng, 136)
    signal, taps = _normal(rng, 700 * s), _normal(rng, 9)
    red = _normal(rng, 33 * s, 300)
    a, b = _normal(rng, 40 * s, 72), _normal(rng, 72, 56)
    a16, b16 = a.astype(mx.float16), b.astype(mx.float16)
    k, g, c, m, n_b, n_o, t = 5, 1, 16, 24, 60 * s, 40 * s, 300 * s
    wa, wb = _normal(rng, k, g, c, m), _normal(rng, n_b, g, c)
    o_idx = mx.array(np.sort(rng.integers(0, n_o, t)).astype(np.int32))
    a_idx = mx.array(rng.integers(0, k, t).astype(np.int32))
    b_idx = mx.array(rng.integers(0, n_b, t).astype(np.int32))
    vb = _normal(rng, n_b, g, m)
    seg_x, seg_len = _normal(rng, 500 * s, 24), _lengths(rng, 500 * s, 37)
    perm = mx.array(rng.permutation(500 * s).astype(np.int32))
    pa, pb = _normal(rng, 50 * s, 3), _normal(rng, 70 * s, 3)
    pa_idx = mx.array(rng.integers(0, 50 * s, 500 * s).astype(np.int32))
    pb_idx = mx.array(rng.integers(0, 70 * s, 500 * s).astype(np.int32))
    cloud_p, cloud_q = _normal(rng, 37 * s, 3), _normal(rng, 45 * s, 3)
    long_len = _lengths(rng, 500 * s, 4)     # segments of over 64 rows: the two-pass kernels
    return [
        ("axpby", _vjp(lambda x, y: axpby.axpby(x, y, 2.0, -0.5), [x, y])),
        ("axpby broadcast", _vjp(lambda r, w: axpby.axpby(r, w, 1.5, 3.0), [rows, row])),
        ("conv1d", _vjp(lambda v, w: conv1d.conv1d(v, w, 4), [signal, taps])),
        ("row sum", _vjp(row_reduce.row_sum, [red])),
        ("row max", _vjp(row_reduce.row_max, [red])),
        ("gemm float32", _vjp(gemm.gemm, [a, b])),
        ("gemm float16", lambda: gemm.gemm(a16, b16)),
        ("mvmr", _vjp(lambda wa, wb: mvmr.mvmr(wa, a_idx, wb, b_idx, o_idx, n_o), [wa, wb])),
        ("mvmr per-triplet", lambda: _call(*mvmr.mvmr_launch(wa, a_idx, wb, b_idx, o_idx, n_o))),
        ("vvor", lambda: mvmr.vvor(wb, b_idx, vb, b_idx, o_idx, n_o)),
        ("vvor per-triplet", lambda: _call(*mvmr.vvor_launch(wb, b_idx, vb, b_idx, o_idx, n_o))),
        ("segment sum", _vjp(lambda v: segment_reduce.segment_reduce(v, seg_len, "sum"),
                             [seg_x])),
        ("segment max", _vjp(lambda v: segment_reduce.segment_reduce(v, seg_len, "max"),
                             [seg_x])),
        ("segment mean, odd C", _vjp(lambda v: segment_reduce.segment_reduce(v, seg_len, "mean"),
                                     [_normal(np.random.default_rng(1), 500 * s, 5)])),
        ("segment sum, long segments", _vjp(
            lambda v: segment_reduce.segment_reduce(v, long_len, "sum"), [seg_x])),
        ("segment max, long segments, odd C", _vjp(
            lambda v: segment_reduce.segment_reduce(v, long_len, "max"),
            [_normal(np.random.default_rng(3), 500 * s, 5)])),
        ("indexed segment max", _vjp(lambda v: segment_reduce.indexed_segment_reduce(
            v, perm, None, seg_len, "max"), [seg_x])),
        ("indexed segment mean, odd C", lambda: segment_reduce.indexed_segment_reduce(
            _normal(np.random.default_rng(2), 500 * s, 5), perm, None, seg_len, "mean")),
        ("indexed distance", _vjp(lambda p, q: distances.indexed_distance(
            p, pa_idx, q, pb_idx), [pa, pb])),
        ("indexed distance cube", lambda: distances.indexed_distance(
            pa, pa_idx, pb, pb_idx, "cube")),
        ("within radius", lambda: distances.within_radius(pa, pa_idx, pb, pb_idx, 0.8)),
        ("pairwise distance", _vjp(distances.pairwise_distance, [cloud_p, cloud_q])),
    ]


def real_kernel_launches(scale: int = 1) -> list[Launch]:
    recorder = Recorder()
    for label, thunk in real_kernel_workloads(scale):
        recorder.record(label, thunk)
    return recorder.launches


# --- the MLX documentation's kernels -------------------------------------------------------

EXP_SOURCE = """
    uint k = thread_position_in_grid.x;
    y[k] = metal::exp(v[elem_to_loc(k, v_shape, v_strides, v_ndim)]);
"""

def docs_launches() -> list[Launch]:
    """Kernels shaped like the MLX custom-kernel docs' examples: an `exp` that reads its input
    through its strides, in three dtypes, and the bilinear grid sample forward and VJP
    (atomics, `simd_sum`) of `tests/metalsim/test_grid_sample.py`."""
    rng = np.random.default_rng(3)
    exp = metalsim.metal_kernel(name="exp_strided", input_names=["v"],
                                output_names=["y"], source=EXP_SOURCE,
                                ensure_row_contiguous=False)
    a = _normal(rng, 16, 33)[::2].T
    launches = []
    for dtype in (mx.float32, mx.float16, mx.bfloat16):
        launches.append(Launch(f"docs exp strided {dtype}", exp, {
            "inputs": [a.astype(dtype)], "template": [("T", dtype)], "grid": (a.size, 1, 1),
            "threadgroup": (256, 1, 1), "output_shapes": [a.shape], "output_dtypes": [dtype]}))
    recorder = Recorder()
    x, grid = test_grid_sample.inputs(width=8)   # interior samples: no out-of-bounds corner
    cotangent = _normal(rng, 2, 3, 4, 5)
    recorder.record("docs grid_sample forward and VJP", lambda: mx.vjp(
        test_grid_sample.make_grid_sample(), [x, grid], [cotangent]))
    launches += recorder.launches
    return launches


# --- generated kernels ---------------------------------------------------------------------

def generated_launches(count: int, seed: int = 0) -> Iterator[Launch]:
    """Kernels of the gcc-oracle generator: straight-line expression programs and loop kernels
    with divergent control flow over every scalar type."""
    for i in range(count):
        ch = cgen.RandomChooser(seed * 100_003 + i)
        if i % 3 == 2:
            prog = cgen.loop_program(ch, ch.integer(1, 4), n_functions=ch.integer(0, 2))
        else:
            kinds = cgen.PURE_STATEMENTS if i % 3 == 0 else cgen.SIDE_EFFECT_STATEMENTS
            prog = cgen.expression_program(ch, ch.integer(1, 5), kinds)
        inputs = cgen.make_inputs(seed * 7919 + i)
        names = list(prog.slots)
        kernel = metalsim.metal_kernel("oracle", [f"in_{t}" for t in cgen.TYPES],
                                       [f"o_{n}" for n in names], cgen.kernel_source(prog),
                                       header=prog.header)
        kwargs = {
            "inputs": [mx.array(inputs[t]) for t in cgen.TYPES],
            "output_shapes": [(cgen.N_THREADS * prog.slots[n],) for n in names],
            "output_dtypes": [cgen.TYPES[n].mx_dtype for n in names],
            "grid": (cgen.N_THREADS, 1, 1), "threadgroup": prog.threadgroup,
        }
        yield Launch(f"generated {i}", kernel, kwargs)


# --- MLX's own building blocks, from the installed MLX's headers --------------------------------

def building_block_launches() -> list[Launch]:
    """The `mx.fast.metal_kernel` bodies of tests/metalsim/mlx_kernels that drive MLX's steel
    GEMM, steel attention and quantized qmv routines, each with its MLX headers translated
    whole (through `#include`s from
    `metalsim.mlx_include_dir()`: each kernel carries its `include_dirs`). MLX's whole
    `[[kernel]]` functions run through `metalsim.dispatch` (softmax, reductions, scans) are not
    `metal_kernel` launches and are not among these."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "mlx_kernels"))
    import quantized_blocks
    import steel_attention_blocks
    import steel_gemm_blocks

    return [Launch(case.label, case.kernel, case.kwargs)
            for module in (steel_gemm_blocks, steel_attention_blocks, quantized_blocks)
            for case in module.cases()]


# --- MLX's own [[kernel]] functions, run whole through dispatch -------------------------------

@dataclass
class DispatchLaunch:
    """One of MLX's whole kernels (a `LibraryCase` of tests/metalsim/mlx_kernels), and which of
    the simulator's diagnostics on it are MLX's own, understood and accepted by its test (every
    other one makes the differential skip the case)."""

    label: str
    case: object                                  # block_case.LibraryCase
    accepted: Callable[[object], list] = lambda run: []


def dispatch_launches() -> list[DispatchLaunch]:
    """MLX's softmax/logsumexp, all_reduce/row_reduce_simple/contiguous_scan, steel attention
    and steel_gemm_fused kernels, instantiated from the installed MLX's headers, with the
    buffers, grid, threadgroup and function constants MLX's host code gives them. For the steel
    GEMM, the diagnostics `test_mlx_gemm_kernel` accepts: its reads of an argument its
    function constant leaves unbound, and of C past its end (values never used)."""
    import mlx_attention_kernel
    import mlx_gemm_kernel
    import mlx_reduce_scan_kernels
    import mlx_softmax_kernels
    import test_mlx_gemm_kernel

    def gemm_accepted(run: object) -> list:
        return (test_mlx_gemm_kernel.unbound_argument_reads(run)
                + test_mlx_gemm_kernel.epilogue_reads_past_c(run))

    launches = [DispatchLaunch(case.label, case)
                for module in (mlx_softmax_kernels, mlx_reduce_scan_kernels, mlx_attention_kernel)
                for case in module.cases()]
    return launches + [DispatchLaunch(case.label, case, gemm_accepted)
                       for case in mlx_gemm_kernel.cases()]


# --- C++ feature kernels: the struct tests' kernels ---------------------------------------------

def struct_test_launches() -> list[Launch]:
    """Every kernel the struct tests (tests/metalsim/exec/test_struct*.py) run cleanly through
    `struct_kernels.Kernels.simulate`: structs, member functions, constructors, operators,
    templates, references, in headers. Collected by running those tests with the helper
    recording each launch whose simulation has no error."""
    import pytest
    import struct_kernels

    launches: list[Launch] = []
    original = struct_kernels.Kernels.simulate

    def recording(self, source, inputs=(), header=None, out_shape=None, dtype=mx.float32,
                  grid=None, tg=None, init_value=None):
        run = original(self, source, inputs, header, out_shape, dtype, grid, tg, init_value)
        if not run.report.errors:
            kernel = metalsim.metal_kernel("k", [f"in{i}" for i in range(len(inputs))], ["out"],
                                           source, header=self.header if header is None
                                           else header)
            launch = (self.threads, 1, 1)
            launches.append(Launch(f"struct kernel {len(launches)}", kernel, {
                "inputs": list(inputs), "output_shapes": [out_shape or (self.threads,)],
                "output_dtypes": [dtype], "grid": grid or launch, "threadgroup": tg or launch,
                "init_value": init_value}))
        return run

    exec_tests = Path(__file__).resolve().parent.parent / "exec"
    struct_kernels.Kernels.simulate = recording
    try:
        pytest.main(["-q", "-p", "no:cacheprovider", "--no-header", "-o", "addopts=",
                     *map(str, sorted(exec_tests.glob("test_struct*.py")))])
    finally:
        struct_kernels.Kernels.simulate = original
    return launches
