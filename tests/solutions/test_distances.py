"""The distance kernels of notebook 07 (`solutions/distances.py`) against plain MLX, in the
simulator: forward values (pointcloud-ops.md §7: max|out - ref| / max|ref| <= 1e-6 for fp32),
the fused mask exactly (ties at the radius included), VJPs against MLX autodiff of the
references, input validation, and the traffic of each launch at mid sizes.

The indexed reference is the checked `pointcloud_ops_ref.py` of the design folder; the pairwise
reference is the plain-MLX definition below. `benchmarks/bench_distances.py` has the realistic
sizes.
"""


import mlx.core as mx
import numpy as np
import pointcloud_ops_ref as ref  # the design's checked plain-MLX reference, vendored
import pytest

from solutions import distances


def pairwise_ref(p: mx.array, q: mx.array) -> mx.array:
    diff = p[:, None, :] - q[None, :, :]
    return mx.sqrt(mx.sum(diff * diff, axis=-1))


def points(n: int, seed: int, dtype: mx.Dtype = mx.float32) -> mx.array:
    return mx.array(np.random.default_rng(seed).standard_normal((n, 3))).astype(dtype)


def grid_points(n: int, seed: int) -> mx.array:
    """Integer coordinates: pairs exactly at integer distances, and ties between coordinates."""
    return mx.array(np.random.default_rng(seed).integers(-3, 4, (n, 3)).astype(np.float32))


def indices(high: int, n: int, seed: int) -> mx.array:
    return mx.array(np.random.default_rng(seed).integers(0, high, n).astype(np.int32))


def rel_err(actual: mx.array, expected: mx.array) -> float:
    a = np.array(actual.astype(mx.float32), dtype=np.float64)
    e = np.array(expected.astype(mx.float32), dtype=np.float64)
    assert a.shape == e.shape
    if e.size == 0:
        return 0.0
    return float(np.abs(a - e).max() / max(np.abs(e).max(), 1e-30))


def candidates(n_a: int, n_b: int, n: int, seed: int) -> tuple[mx.array, ...]:
    """Random candidate pairs with repeated indices, a few pairs of coincident points, and one
    query point with many candidates (as a radius search produces)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n_a, 3)).astype(np.float32)
    b = rng.standard_normal((n_b, 3)).astype(np.float32)
    a_idx = rng.integers(0, n_a, n).astype(np.int32)
    b_idx = rng.integers(0, n_b, n).astype(np.int32)
    k = min(n_a, n_b, n, 4)
    b[:k] = a[:k]
    a_idx[:k] = b_idx[:k] = np.arange(k)            # distance 0
    a_idx[k:k + n // 4] = 0                          # one query, many candidates
    return mx.array(a), mx.array(a_idx), mx.array(b), mx.array(b_idx)


INDEXED_SHAPES = {
    "puzzle-tier": (50, 70, 500),
    "one-pair": (4, 5, 1),
    "two-points-in-constant-space": (2, 2, 9),   # (2, 3) arrays: MLX's constant address space
    "partial-threadgroup": (300, 200, 1000),
    "mid": (2000, 3000, 20000),
}


# --- indexed distance -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", distances.KINDS)
@pytest.mark.parametrize("shape", INDEXED_SHAPES.values(), ids=INDEXED_SHAPES.keys())
def test_indexed_distance_equals_the_reference(metalsim_patch, kind, shape):
    a, a_idx, b, b_idx = candidates(*shape, seed=sum(shape))
    d = distances.indexed_distance(a, a_idx, b, b_idx, kind)
    assert d.dtype == mx.float32
    assert rel_err(d, ref.indexed_distance_ref(a, a_idx, b, b_idx, kind)) <= 1e-6


def test_indexed_distance_of_no_pairs_is_empty(metalsim_patch):
    empty = mx.array(np.zeros(0, np.int32))
    d = distances.indexed_distance(points(3, 0), empty, points(4, 1), empty, "cube")
    assert d.shape == (0,) and d.dtype == mx.float32


@pytest.mark.parametrize("dtype", [mx.int64, mx.uint32, mx.int16])
def test_indexed_distance_accepts_other_integer_index_dtypes(metalsim_patch, dtype):
    a, a_idx, b, b_idx = candidates(50, 70, 500, seed=1)
    d = distances.indexed_distance(a, a_idx.astype(dtype), b, b_idx.astype(dtype))
    assert rel_err(d, ref.indexed_distance_ref(a, a_idx, b, b_idx)) <= 1e-6


def test_indexed_distance_in_half_precision_is_within_the_half_tolerance(metalsim_patch):
    a, a_idx, b, b_idx = candidates(50, 70, 500, seed=2)
    a16, b16 = a.astype(mx.float16), b.astype(mx.float16)
    for kind in distances.KINDS:
        d = distances.indexed_distance(a16, a_idx, b16, b_idx, kind)
        assert d.dtype == mx.float16
        assert rel_err(d, ref.indexed_distance_ref(a16, a_idx, b16, b_idx, kind)) <= 5e-3


@pytest.mark.parametrize("kind", distances.KINDS)
def test_within_radius_equals_the_reference_including_ties(metalsim_patch, kind):
    a, b = grid_points(50, 3), grid_points(70, 4)
    a_idx, b_idx = indices(50, 2000, 5), indices(70, 2000, 6)
    d = ref.indexed_distance_ref(a, a_idx, b, b_idx, kind)
    assert mx.sum(d == 3.0).item() > 10   # pairs exactly at the radius
    mask = distances.within_radius(a, a_idx, b, b_idx, 3.0, kind)
    assert mask.dtype == mx.bool_
    assert mx.array_equal(mask, ref.indexed_within_radius_ref(a, a_idx, b, b_idx, 3.0, kind))


@pytest.mark.parametrize("kind", distances.KINDS)
def test_indexed_distance_vjp_equals_autodiff_of_the_reference(metalsim_patch, kind):
    # Integer coordinates: the cube's maximum often ties between coordinates, which MLX's max
    # VJP splits evenly. Coincident pairs are left out here (see the next test).
    a, b = grid_points(50, 7), grid_points(70, 8) + 0.5
    a_idx, b_idx = indices(50, 800, 9), indices(70, 800, 10)
    weights = mx.array(np.random.default_rng(11).standard_normal(800).astype(np.float32))

    def loss(fn):
        return lambda a, b: mx.sum(fn(a, a_idx, b, b_idx, kind) * weights)

    ours = mx.grad(loss(distances.indexed_distance), argnums=(0, 1))(a, b)
    theirs = mx.grad(loss(ref.indexed_distance_ref), argnums=(0, 1))(a, b)
    for g, r in zip(ours, theirs):
        assert rel_err(g, r) <= 1e-5


def test_indexed_ball_vjp_is_zero_at_zero_distance_where_autodiff_is_nan(metalsim_patch):
    a, a_idx, b, b_idx = candidates(50, 70, 500, seed=12)   # pairs 0-3 are coincident
    d = ref.indexed_distance_ref(a, a_idx, b, b_idx)
    grad_ref = mx.grad(lambda a: ref.indexed_distance_ref(a, a_idx, b, b_idx).sum())(a)
    assert mx.any(mx.isnan(grad_ref)).item()
    ours = mx.grad(lambda a: distances.indexed_distance(a, a_idx, b, b_idx).sum())(a)
    assert not mx.any(mx.isnan(ours)).item()
    # Equal to autodiff with the zero-distance pairs' cotangent removed.
    keep = (d > 0).astype(mx.float32)
    safe = mx.where(d > 0, d, 1.0)
    expected = mx.grad(lambda a: mx.sum(
        mx.sum((a[a_idx] - b[b_idx]) ** 2, axis=-1) / safe * 0.5 * keep))(a)
    assert rel_err(ours, expected) <= 1e-5


# --- pairwise distance ----------------------------------------------------------------------

PAIRWISE_SHAPES = {
    "one-by-one": (1, 1),
    "constant-space": (2, 2),
    "one-block": (64, 64),
    "partial-blocks": (65, 130),
    "several-blocks": (300, 200),
}


@pytest.mark.parametrize("shape", PAIRWISE_SHAPES.values(), ids=PAIRWISE_SHAPES.keys())
def test_pairwise_distance_equals_the_reference(metalsim_patch, shape):
    p, q = points(shape[0], shape[0]), points(shape[1], shape[1] + 1)
    d = distances.pairwise_distance(p, q)
    assert d.shape == shape and d.dtype == mx.float32
    assert rel_err(d, pairwise_ref(p, q)) <= 1e-6


def test_pairwise_distance_of_a_cloud_with_itself_has_a_zero_diagonal(metalsim_patch):
    p = points(100, 13)
    d = distances.pairwise_distance(p, p)
    assert mx.all(mx.diag(d) == 0).item()
    assert rel_err(d, pairwise_ref(p, p)) <= 1e-6


def test_pairwise_distance_in_half_precision_and_of_empty_clouds(metalsim_patch):
    p, q = points(70, 14, mx.float16), points(90, 15, mx.float16)
    d = distances.pairwise_distance(p, q)
    assert d.dtype == mx.float16
    assert rel_err(d, pairwise_ref(p, q)) <= 5e-3
    assert distances.pairwise_distance(points(0, 0), q.astype(mx.float32)).shape == (0, 90)


@pytest.mark.parametrize(("n", "m"), [(70, 100), (300, 40), (5, 300)],
                         ids=["small", "p-over-a-threadgroup", "q-over-a-threadgroup"])
def test_pairwise_distance_vjp_equals_autodiff_of_the_reference(metalsim_patch, n, m):
    p, q = points(n, n), points(m, m + 1)
    weights = mx.array(np.random.default_rng(16).standard_normal((n, m)).astype(np.float32))

    def loss(fn):
        return lambda p, q: mx.sum(fn(p, q) * weights)

    ours = mx.grad(loss(distances.pairwise_distance), argnums=(0, 1))(p, q)
    theirs = mx.grad(loss(pairwise_ref), argnums=(0, 1))(p, q)
    for g, r in zip(ours, theirs):
        assert rel_err(g, r) <= 1e-5


def test_pairwise_vjp_of_coincident_points_is_finite_and_drops_those_pairs(metalsim_patch):
    p = points(40, 17)
    q = mx.concatenate([points(30, 18), p[:10]])          # q[30 + k] == p[k]
    weights = mx.array(np.random.default_rng(19).standard_normal((40, 40)).astype(np.float32))
    ours = mx.grad(lambda p, q: mx.sum(distances.pairwise_distance(p, q) * weights),
                   argnums=(0, 1))(p, q)
    # Autodiff with the coincident pairs' cotangent removed: d = |diff|^2 / (2 |diff|) + const
    # has the gradient diff / |diff| of the distance wherever |diff| > 0.
    keep = (pairwise_ref(p, q) > 0).astype(mx.float32)
    safe = mx.where(keep > 0, pairwise_ref(p, q), 1.0)

    def masked(p, q):
        squared = mx.sum((p[:, None] - q[None]) ** 2, axis=-1)
        return mx.sum(squared / safe * 0.5 * keep * weights)

    expected = mx.grad(masked, argnums=(0, 1))(p, q)
    for g, r in zip(ours, expected):
        assert not mx.any(mx.isnan(g)).item()
        assert rel_err(g, r) <= 1e-5


# --- validation -----------------------------------------------------------------------------


def test_inputs_are_validated_with_clear_errors():
    a, a_idx, b, b_idx = candidates(50, 70, 500, seed=20)
    with pytest.raises(ValueError, match="'ball'.*'cube'"):
        distances.indexed_distance(a, a_idx, b, b_idx, "chebyshev")
    with pytest.raises(ValueError, match=r"shape \(N, 3\)"):
        distances.indexed_distance(a[:, :2], a_idx, b, b_idx)
    with pytest.raises(TypeError, match="floating-point"):
        distances.pairwise_distance(a.astype(mx.int32), b)
    with pytest.raises(TypeError, match="integer"):
        distances.indexed_distance(a, a_idx.astype(mx.float32), b, b_idx)
    with pytest.raises(ValueError, match="same length"):
        distances.indexed_distance(a, a_idx[:10], b, b_idx)
    with pytest.raises(ValueError, match="1-D"):
        distances.within_radius(a, a_idx.reshape(2, -1), b, b_idx.reshape(2, -1), 1.0)


def test_out_of_range_indices_are_reported_when_checking_is_asked_for():
    a, a_idx, b, b_idx = candidates(50, 70, 500, seed=21)
    with pytest.raises(IndexError, match=r"b_idx has indices in \[1, 70\], outside \[0, 70\)"):
        distances.indexed_distance(a, a_idx, b[:70], b_idx + 1, check_indices=True)
    with pytest.raises(IndexError, match="a_idx"):
        distances.within_radius(a, a_idx - 1, b, b_idx, 1.0, check_indices=True)


# --- traffic --------------------------------------------------------------------------------


def test_indexed_distance_reads_two_indices_and_two_packed_points_per_pair():
    n = 20000
    a, a_idx, b, b_idx = candidates(2000, 3000, n, seed=22)
    report = distances.simulate_indexed(a, a_idx, b, b_idx, "ball").report
    assert report.diagnostics == []
    assert report.max_per_thread()["global_reads"] == 4
    assert report.max_per_thread()["global_writes"] == 1
    moved = {t.name: t.bytes_moved for t in report.traffic}
    assert moved == {"a": 12 * n, "a_idx": 4 * n, "b": 12 * n, "b_idx": 4 * n, "out": 4 * n}


def test_indexed_distance_vjp_scatters_with_six_atomics_per_pair():
    a, a_idx, b, b_idx = candidates(200, 300, 3000, seed=23)
    cot = mx.ones((3000,))
    run = distances.simulate_indexed_vjp(a, a_idx, b, b_idx, cot, "cube")
    assert run.report.diagnostics == []
    assert run.report.max_per_thread()["atomics"] == 6
    assert run.report.totals()["atomics"] == 6 * 3000


def test_pairwise_distance_blocks_keep_traffic_near_the_ideal():
    run = distances.simulate_pairwise(points(256, 24), points(320, 25))
    report = run.report
    assert report.diagnostics == []
    out = next(t for t in report.traffic if t.name == "out")
    assert out.bytes_moved == out.ideal_bytes
    # Each point is read once per 64-wide block of the other side: 5x for p, 4x for q.
    moved = {t.name: t.bytes_moved for t in report.traffic}
    assert moved["p"] == 12 * 256 * 5 and moved["q"] == 12 * 320 * 4
    assert report.bytes_moved <= 1.1 * report.ideal_bytes
