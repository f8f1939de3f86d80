"""The segment-reduce real kernels of notebook 06 against the checked plain-MLX reference
(`shared/design/pointcloud_ops_ref.py`), in the simulator, at mid sizes: forward values, VJPs
against MLX autodiff of the reference (ties, repeats, empty segments), input validation, the
traffic report, and MLX's acceptance of the very launches.

Tolerances (`pointcloud-ops.md` §7): float32 sum/mean 1e-5 relative to the largest value
(the summation order differs), max/min exact; float16 and bfloat16 5e-3 and 1.5e-2. The one
intended difference from the reference: the indexed mean of an empty segment is 0 here, NaN
there (notebook 06, decision 1).
"""


import mlx.core as mx
import numpy as np
import pointcloud_ops_ref as ref  # the design's checked plain-MLX reference, vendored
import pytest

import metalsim
from solutions import segment_reduce as sr

OPS = sr.REDUCES


def ties(rows: int, columns: int, seed: int, dtype: mx.Dtype = mx.float32) -> mx.array:
    """Integer values in [-4, 4]: many ties for max and min."""
    rng = np.random.default_rng(seed)
    return mx.array(rng.integers(-4, 5, (rows, columns)).astype(np.float32)).astype(dtype)


def normal(rows: int, columns: int, seed: int, dtype: mx.Dtype = mx.float32) -> mx.array:
    return mx.array(np.random.default_rng(seed).standard_normal((rows, columns))).astype(dtype)


def random_lengths(total: int, segments: int, empty: int, seed: int) -> mx.array:
    """`segments` lengths adding up to `total`, `empty` of them 0."""
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.integers(0, total + 1, segments - empty - 1))
    lengths = np.diff(np.r_[0, cuts, total])
    lengths = np.insert(lengths, rng.integers(0, lengths.size + 1, empty), 0)
    return mx.array(lengths.astype(np.int32))


def assert_matches(actual: mx.array, expected: mx.array, op: str, tol: float = 1e-5) -> None:
    """Exact for max/min (and everywhere in ±inf), `tol` relative to the largest finite value
    for sum/mean."""
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    a = np.array(actual.astype(mx.float32))
    e = np.array(expected.astype(mx.float32))
    if op in ("max", "min") and tol <= 1e-5:
        np.testing.assert_array_equal(a, e)
        return
    finite = np.abs(e[np.isfinite(e)])
    scale = max(1.0, float(finite.max()) if finite.size else 1.0)
    np.testing.assert_allclose(a, e, rtol=tol, atol=tol * scale)


# --- contiguous segments --------------------------------------------------------------------

CONTIGUOUS = [
    (ties(13, 3, 0), mx.array([2, 0, 3, 1, 4, 0, 3])),           # §6 puzzle tier
    (ties(3000, 64, 1), random_lengths(3000, 10, 2, 1)),         # ties, empty segments
    (normal(20000, 1, 2), random_lengths(20000, 8, 0, 2)),       # layer norm: C = 1
    (normal(5000, 5, 3), random_lengths(5000, 7, 2, 3)),         # odd C, partial column tile
    (ties(4000, 40, 4), mx.array([0, 4000, 0])),                 # one segment, 2 column tiles
    (normal(600, 3, 5), mx.array([600])),                        # K = 1
    (ties(257, 2, 6), mx.ones(257, dtype=mx.int32)),             # K = N: one row each
    (ties(3000, 32, 7), random_lengths(3000, 400, 30, 7)),       # many short segments
    (normal(2000, 7, 8), random_lengths(2000, 90, 5, 8)),        # short, odd C
]
CONTIGUOUS_IDS = ["puzzle-tier", "ties-empty", "c1", "odd-c", "one-segment", "k1", "k-is-n",
                  "short", "short-odd-c"]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize(("x", "lengths"), CONTIGUOUS, ids=CONTIGUOUS_IDS)
def test_segment_reduce_equals_the_reference(metalsim_patch, x, lengths, op):
    assert_matches(sr.segment_reduce(x, lengths, op), ref.large_segment_reduce_ref(x, op, lengths),
                   op)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize(("x", "lengths"), [CONTIGUOUS[0], CONTIGUOUS[1], CONTIGUOUS[3]],
                         ids=["puzzle-tier", "ties-empty", "odd-c"])
def test_segment_reduce_vjp_equals_autodiff_of_the_reference(metalsim_patch, x, lengths, op):
    cotangent = normal(lengths.size, x.shape[1], 7)
    (_, (ours,)) = mx.vjp(lambda x: sr.segment_reduce(x, lengths, op), [x], [cotangent])
    (_, (theirs,)) = mx.vjp(lambda x: ref.large_segment_reduce_ref(x, op, lengths), [x],
                            [cotangent])
    assert_matches(ours, theirs, "sum", 1e-6)


def test_segment_max_gradient_goes_whole_to_every_tied_maximum(metalsim_patch):
    x = mx.array([[1.0], [3.0], [3.0], [2.0], [5.0]])
    grad = mx.grad(lambda x: (sr.segment_reduce(x, mx.array([4, 0, 1]), "max") * 2).sum())(x)
    assert grad[:, 0].tolist() == [0, 2, 2, 0, 2]


def test_segment_reduce_under_mx_grad_equals_mx_scatter_ops(metalsim_patch):
    x, lengths = CONTIGUOUS[1]
    seg = ref.segment_ids(lengths, x.shape[0])
    w = normal(lengths.size, x.shape[1], 8)

    def ours(x):
        mean, low = sr.segment_reduce(x, lengths, "mean"), sr.segment_reduce(x, lengths, "min")
        return (mean * w).sum() + mx.clip(low, -9, 9).sum()   # clip: empty segments are inf

    def theirs(x):
        mean = mx.zeros(w.shape).at[seg].add(x) / mx.maximum(lengths, 1)[:, None]
        low = mx.full(w.shape, mx.inf).at[seg].minimum(x)
        return (mean * w).sum() + mx.clip(low, -9, 9).sum()

    assert_matches(mx.grad(ours)(x), mx.grad(theirs)(x), "sum", 1e-6)


@pytest.mark.parametrize(("dtype", "tol"), [(mx.float16, 5e-3), (mx.bfloat16, 1.5e-2)])
@pytest.mark.parametrize("op", OPS)
def test_segment_reduce_in_half_types_equals_the_reference(metalsim_patch, dtype, tol, op):
    x, lengths = normal(3000, 16, 9, dtype), random_lengths(3000, 6, 1, 9)
    expected = ref.large_segment_reduce_ref(x, op, lengths)
    assert_matches(sr.segment_reduce(x, lengths, op), expected, op, tol)


def test_segment_reduce_clamps_float16_like_the_original():
    x = mx.full((4, 2), 60000.0, dtype=mx.float16)
    with metalsim.patch():
        total = sr.segment_reduce(x, mx.array([4, 0]), "sum")
        largest = sr.segment_reduce(x, mx.array([4, 0]), "max")
    assert total.tolist() == [[65504.0, 65504.0], [0.0, 0.0]]
    assert largest.tolist() == [[60000.0, 60000.0], [-65504.0, -65504.0]]


def test_segment_reduce_forward_is_deterministic_and_near_ideal_traffic():
    x, lengths = normal(40000, 32, 10), random_lengths(40000, 8, 1, 10)
    run = sr.simulate(x, lengths, "sum")
    report = run.report
    assert report.diagnostics == [], report.summary()
    assert report.totals()["atomics"] == 0
    traffic = {t.name: t.bytes_moved for t in report.traffic}
    assert traffic["x"] == x.nbytes   # every element read exactly once
    assert report.bytes_moved <= 1.02 * report.ideal_bytes, report.summary()
    parts = run.outputs[0].reshape(lengths.size, -1, 32)
    assert_matches(parts.sum(axis=1), ref.large_segment_reduce_ref(x, "sum", lengths), "sum")


@pytest.mark.parametrize("op", OPS)
def test_short_segments_give_the_two_pass_kernels_results(op):
    """`segment_reduce` reduces segments averaging at most SHORT_ROWS rows in one pass, a
    thread per segment and column vector; the two-pass kernels give the same values there
    (sum and mean up to the order of the additions), with no finding in either."""
    x, lengths = ties(3000, 32, 9), random_lengths(3000, 400, 30, 9)
    assert x.shape[0] <= sr.SHORT_ROWS * lengths.size
    kernel, args = sr.launch_short(x, lengths, op, metalsim.metal_kernel)
    short = metalsim.simulate(kernel, **args)
    kernel, args = sr.launch(x, lengths, op, metalsim.metal_kernel)
    partials = metalsim.simulate(kernel, **args)
    kernel, args = sr.launch_final(mx.array(partials.outputs[0]), lengths, op, x.dtype,
                                   metalsim.metal_kernel)
    final = metalsim.simulate(kernel, **args)
    for run in (short, partials, final):
        assert run.report.diagnostics == [], run.report.summary()
    assert short.report.totals()["atomics"] == 0
    assert_matches(mx.array(short.outputs[0]), mx.array(final.outputs[0]), op)


# --- indexed segments -----------------------------------------------------------------------


def indexed_case(rows: int, columns: int, segments: int, longest: int, empty: int, seed: int,
                 values=ties) -> tuple[mx.array, mx.array, mx.array]:
    """x, indices with repeats (also inside a segment), lengths in [1, longest] with `empty`
    zeros."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, longest + 1, segments)
    lengths[rng.choice(segments, empty, replace=False)] = 0
    indices = rng.integers(0, rows, int(lengths.sum())).astype(np.int32)
    return values(rows, columns, seed), mx.array(indices), mx.array(lengths.astype(np.int32))


INDEXED = [
    (mx.array(np.random.default_rng(0).integers(-3, 4, (12, 3)).astype(np.float32)),
     mx.array([4, 7, 4, 1, 9, 7, 2, 11, 4, 0]), mx.array([3, 0, 2, 4, 1])),   # §6 tier
    indexed_case(1000, 16, 2000, 25, 50, 1),       # max-pool shape: many short segments
    indexed_case(300, 64, 400, 30, 10, 2),         # 2 column tiles
    indexed_case(500, 3, 700, 20, 30, 3, normal),  # odd C, distinct values
    indexed_case(50, 1, 100, 40, 5, 4),            # C = 1: 32 segments per SIMD-group
    indexed_case(200, 40, 3, 600, 1, 5),           # few long segments, last tile partial
]
INDEXED_IDS = ["puzzle-tier", "maxpool", "c64", "odd-c", "c1", "long-segments"]


def indexed_reference(x: mx.array, indices: mx.array, lengths: mx.array, op: str) -> mx.array:
    """The reference, with this series' rule for the mean of an empty segment (0, not NaN)."""
    out = ref.indexed_segment_reduce_ref(x, op, indices, lengths)
    if op == "mean":
        out = mx.where((lengths == 0)[:, None], mx.zeros_like(out), out)
    return out


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize(("x", "indices", "lengths"), INDEXED, ids=INDEXED_IDS)
def test_indexed_segment_reduce_equals_the_reference(metalsim_patch, x, indices, lengths, op):
    ours = sr.indexed_segment_reduce(x, indices, None, lengths, op, check_indices=True)
    assert_matches(ours, indexed_reference(x, indices, lengths, op), op)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize(("x", "indices", "lengths"), INDEXED[:4], ids=INDEXED_IDS[:4])
def test_indexed_segment_reduce_vjp_equals_autodiff_of_the_reference(metalsim_patch, x,
                                                                     indices, lengths, op):
    cotangent = normal(lengths.size, x.shape[1], 11)
    (_, (ours,)) = mx.vjp(lambda x: sr.indexed_segment_reduce(x, indices, None, lengths, op),
                          [x], [cotangent])
    (_, (theirs,)) = mx.vjp(lambda x: ref.indexed_segment_reduce_ref(x, op, indices, lengths),
                            [x], [cotangent])
    assert_matches(ours, theirs, "sum", 1e-5)


def test_indexed_segment_reduce_takes_explicit_offsets_in_any_segment_order(metalsim_patch):
    x, indices, lengths = INDEXED[1]
    offsets = mx.cumsum(lengths) - lengths
    order = mx.array(np.random.default_rng(12).permutation(lengths.size))
    permuted = sr.indexed_segment_reduce(x, indices, offsets[order], lengths[order], "max")
    assert_matches(permuted, sr.indexed_segment_reduce(x, indices, None, lengths, "max")[order],
                   "max")


def test_indexed_max_gradient_counts_repeats_and_every_tie(metalsim_patch):
    x = mx.array([[1.0], [3.0], [3.0]])
    indices, lengths = mx.array([1, 1, 2, 0, 2]), mx.array([3, 0, 2])
    grad = mx.grad(lambda x: sr.indexed_segment_reduce(x, indices, None, lengths, "max").sum())(x)
    # Segment 0: row 1 twice and row 2 tie at 3; segment 2: row 2 is the max.
    assert grad[:, 0].tolist() == [0, 2, 2]


@pytest.mark.parametrize(("dtype", "tol"), [(mx.float16, 5e-3), (mx.bfloat16, 1.5e-2)])
@pytest.mark.parametrize("op", ["sum", "max"])
def test_indexed_segment_reduce_in_half_types_equals_the_reference(metalsim_patch, dtype, tol,
                                                                   op):
    x, indices, lengths = indexed_case(300, 24, 500, 20, 10, 13, normal)
    x = x.astype(dtype)
    assert_matches(sr.indexed_segment_reduce(x, indices, None, lengths, op),
                   indexed_reference(x, indices, lengths, op), op, tol)


def test_indexed_forward_reads_each_index_once_per_column_tile_with_no_atomics():
    x, indices, lengths = INDEXED[1]    # C = 16: one tile of 16 columns
    run = sr.simulate_indexed(x, indices, None, lengths, "max")
    report = run.report
    assert report.diagnostics == [] and report.totals()["atomics"] == 0
    traffic = {t.name: t.bytes_moved for t in report.traffic}
    assert traffic["indices"] == indices.nbytes
    assert traffic["x"] == indices.size * x.shape[1] * 4   # one gathered row per position
    assert traffic["out"] == lengths.size * x.shape[1] * 4


def test_indexed_backward_issues_one_atomic_per_maximal_element_and_no_race():
    x, indices, lengths = INDEXED[1]
    y = ref.indexed_segment_reduce_ref(x, "max", indices, lengths)
    run = sr.simulate_indexed_backward(x, indices, None, lengths, y, mx.ones(y.shape), "max")
    assert run.report.diagnostics == []
    seg = ref.segment_ids(lengths, indices.size)
    maximal = mx.sum(x[indices] == y[seg]).item()
    assert run.report.totals()["atomics"] == maximal


# --- validation -----------------------------------------------------------------------------


def test_segment_reduce_rejects_bad_inputs_with_clear_errors():
    x = normal(10, 2, 14)
    with pytest.raises(ValueError, match=r"sum\(lengths\) = 9 but x has 10 rows"):
        sr.segment_reduce(x, mx.array([4, 5]), "sum", check_lengths=True)
    with pytest.raises(TypeError, match="lengths must be an integer"):
        sr.segment_reduce(x, mx.array([4.0, 6.0]), "sum")
    with pytest.raises(ValueError, match="lengths must be 1-D"):
        sr.segment_reduce(x, mx.array([[4, 6]]), "sum")
    with pytest.raises(ValueError, match="non-negative"):
        sr.segment_reduce(x, mx.array([12, -2]), "sum", check_lengths=True)
    with pytest.raises(ValueError, match="x must be 2-D"):
        sr.segment_reduce(x.reshape(-1), mx.array([20]), "sum")
    with pytest.raises(TypeError, match="floating point"):
        sr.segment_reduce(mx.zeros((10, 2), dtype=mx.int32), mx.array([10]), "sum")
    with pytest.raises(ValueError, match="op must be one of"):
        sr.segment_reduce(x, mx.array([10]), "prod")
    with pytest.raises(ValueError, match="at least one segment"):
        sr.segment_reduce(x, mx.array([], dtype=mx.int32), "sum")


@pytest.mark.parametrize("lengths", [[4, 9], [12, -2], [3, 2]], ids=["long", "negative", "short"])
def test_unchecked_wrong_lengths_stay_inside_x(lengths):
    """Without `check_lengths` nothing is read back to the CPU; lengths that do not add up
    give wrong values but both passes stay inside their buffers (the simulator's
    out-of-bounds check finds nothing)."""
    x = normal(10, 8, 17)
    partials = sr.simulate(x, mx.array(lengths), "max")
    assert partials.report.diagnostics == [], partials.report.summary()
    kernel, args = sr.launch_final(partials.outputs[0], mx.array(lengths), "max", x.dtype,
                                   metalsim.metal_kernel)
    final = metalsim.simulate(kernel, **args)
    assert final.report.diagnostics == [], final.report.summary()


def test_indexed_segment_reduce_rejects_bad_inputs_with_clear_errors():
    x, indices = normal(10, 2, 15), mx.array([0, 9, 3, 3])
    with pytest.raises(ValueError, match=r"sum\(lengths\) = 3 but indices has 4 rows"):
        sr.indexed_segment_reduce(x, indices, None, mx.array([1, 2]), "max", check_indices=True)
    with pytest.raises(TypeError, match="indices must be an integer"):
        sr.indexed_segment_reduce(x, indices.astype(mx.float32), None, mx.array([4]), "max")
    with pytest.raises(ValueError, match="offsets and lengths must have one shape"):
        sr.indexed_segment_reduce(x, indices, mx.array([0, 2, 3]), mx.array([2, 2]), "max")
    with pytest.raises(IndexError, match=r"indices must lie in \[0, 10\)"):
        sr.indexed_segment_reduce(x, mx.array([0, 10]), None, mx.array([2]), "max",
                                  check_indices=True)
    with pytest.raises(IndexError, match="every segment"):
        sr.indexed_segment_reduce(x, indices, mx.array([0, 3]), mx.array([2, 2]), "max",
                                  check_indices=True)


def test_indexed_segment_reduce_accepts_64_bit_and_unsigned_indices(metalsim_patch):
    x, indices, lengths = INDEXED[0]
    expected = sr.indexed_segment_reduce(x, indices, None, lengths, "sum")
    wide = sr.indexed_segment_reduce(x, indices.astype(mx.int64), None,
                                     lengths.astype(mx.uint32), "sum")
    assert mx.array_equal(wide, expected).item()


# --- the same launches are what MLX itself would compile -------------------------------------


@pytest.mark.parametrize(
    ("launch", "arrays", "rest"),
    [
        (sr.launch, (normal(100, 3, 16), mx.array([60, 0, 40])), ("max",)),
        (sr.launch_short, (normal(100, 8, 16), mx.array([6, 0, 40, 4, 50])), ("mean",)),
        (sr.launch_indexed, INDEXED[0][:2] + (None, INDEXED[0][2]), ("mean",)),
    ],
    ids=["contiguous", "short", "indexed"],
)
def test_real_mlx_accepts_each_launch_and_generates_the_simulated_source(tmp_path, launch,
                                                                         arrays, rest):
    """MLX (without Metal) traces the call under `mx.export_function`; the exported function
    holds MLX's generated source, which must be what metalsim compiled."""
    given = [a for a in arrays if a is not None]

    def call(*xs: mx.array) -> list[mx.array]:
        it = iter(xs)
        kernel, args = launch(*(None if a is None else next(it) for a in arrays), *rest)
        return kernel(**args)

    path = tmp_path / "kernel.mlxfn"
    mx.export_function(str(path), call, *given)
    kernel, args = launch(*arrays, *rest, metalsim.metal_kernel)
    assert metalsim.source(kernel, **args).encode() in path.read_bytes()
