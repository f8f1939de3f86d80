"""The real MVMR and VVOR kernels of notebook 05 (`solutions/mvmr.py`) in the simulator.

Forward results against plain-MLX oracles written from `pointcloud-ops.md` 1.1 and 2.1, with
its metric `max|out - ref| / max|ref|` and the tolerances recommended in its section 7
(float32 1e-4, float16 5e-3, bfloat16 1.5e-2); gradients against `mx.vjp` of the oracles; the
traffic and atomics of the real MVMR against the naive kernel of puzzle 23 at a mid size.
"""


import mlx.core as mx
import numpy as np
import pytest

from solutions import mvmr as ops

TOL = {mx.float32: 1e-4, mx.float16: 5e-3, mx.bfloat16: 1.5e-2}


def mvmr_oracle(a, a_idx, b, b_idx, o_idx, n_o):
    per_triplet = mx.einsum("tgc,tgcm->tgm", b[b_idx].astype(mx.float32),
                            a[a_idx].astype(mx.float32))
    out = mx.zeros((n_o, a.shape[1], a.shape[3])).at[o_idx].add(per_triplet)
    return out.astype(mx.result_type(a, b))


def vvor_oracle(a, a_idx, b, b_idx, o_idx, n_o):
    outer = a[a_idx].astype(mx.float32)[..., :, None] * b[b_idx].astype(mx.float32)[..., None, :]
    out = mx.zeros((n_o, a.shape[1], a.shape[2], b.shape[2])).at[o_idx].add(outer)
    return out.astype(mx.result_type(a, b))


def normal(rng: np.random.Generator, *shape: int, dtype=mx.float32) -> mx.array:
    return mx.array(rng.standard_normal(shape).astype(np.float32)).astype(dtype)


def indices(values: np.ndarray, dtype=mx.int32) -> mx.array:
    return mx.array(np.asarray(values, dtype=np.int64)).astype(dtype)


def sorted_triplets(rng: np.random.Generator, k: int, n: int, t: int) -> tuple[mx.array, ...]:
    """(a_idx, b_idx, o_idx) of a convolution sorted by output point: 8 to 19 triplets per
    point (real scenes have 13-15), each through a distinct slot."""
    per_point = rng.integers(8, 20, n)
    o_idx = np.repeat(np.arange(n), per_point)[:t]
    a_idx = np.concatenate([rng.permutation(k)[:c] for c in per_point])[:t]
    return indices(a_idx), indices(rng.integers(0, n, o_idx.size)), indices(o_idx)


def relative_error(got: mx.array, want: mx.array) -> float:
    assert got.shape == want.shape and got.dtype == want.dtype
    g, w = np.array(got.astype(mx.float32)), np.array(want.astype(mx.float32))
    scale = float(np.abs(w).max()) if w.size else 0.0
    return float(np.abs(g - w).max()) / scale if scale else float(np.abs(g).max(initial=0.0))


# Shapes: (K, G, C, M, N_b, n_o, T, order), order "random", "sorted" (by o_idx), "one-slot"
# (every triplet through slot 13, as the edge test of the original), "twice" (every triplet
# repeated), "empty-tail" (n_o beyond every o_idx).
MVMR_SHAPES = [
    (27, 1, 8, 12, 40, 30, 300, "random"),
    (27, 2, 5, 3, 40, 30, 300, "sorted"),
    (27, 1, 16, 16, 32, 32, 0, "random"),
    (27, 1, 8, 8, 8, 8, 1, "random"),
    (27, 2, 32, 32, 64, 64, 500, "one-slot"),
    (4, 3, 3, 2, 10, 10, 60, "twice"),
    (125, 1, 33, 17, 50, 60, 700, "empty-tail"),
    (27, 1, 32, 32, 150, 150, 2000, "sorted"),
]


def triplets(rng: np.random.Generator, k: int, n_b: int, n_o: int, t: int,
             order: str) -> tuple[mx.array, ...]:
    a_idx, b_idx = rng.integers(0, k, t), rng.integers(0, n_b, t)
    o_idx = rng.integers(0, n_o - 3 if order == "empty-tail" else n_o, t)
    if order == "sorted":
        o_idx = np.sort(o_idx)
    elif order == "one-slot":
        a_idx = np.full(t, 13)
    elif order == "twice":
        a_idx, b_idx, o_idx = (np.tile(x[: t // 2], 2) for x in (a_idx, b_idx, o_idx))
    return indices(a_idx), indices(b_idx), indices(o_idx)


@pytest.mark.parametrize("shape", MVMR_SHAPES, ids=lambda s: "-".join(map(str, s)))
def test_mvmr_equals_the_spec(metalsim_patch, shape):
    k, g, c, m, n_b, n_o, t, order = shape
    rng = np.random.default_rng(t + c)
    a, b = normal(rng, k, g, c, m), normal(rng, n_b, g, c)
    a_idx, b_idx, o_idx = triplets(rng, k, n_b, n_o, t, order)
    got = ops.mvmr(a, a_idx, b, b_idx, o_idx, n_o)
    assert relative_error(got, mvmr_oracle(a, a_idx, b, b_idx, o_idx, n_o)) <= 1e-5


# Shapes: (N_a, G, M, C, N_b, n_o, T, order); in MVMR's weight gradient n_o = K = 27 slots.
VVOR_SHAPES = [
    (40, 1, 12, 8, 40, 27, 300, "sorted"),
    (40, 2, 3, 5, 30, 27, 300, "random"),
    (16, 1, 16, 16, 16, 27, 0, "random"),
    (8, 1, 8, 8, 8, 27, 1, "random"),
    (64, 2, 32, 32, 64, 27, 500, "one-slot"),
    (10, 3, 2, 3, 10, 5, 60, "twice"),
    (50, 1, 17, 33, 60, 30, 700, "empty-tail"),
]


@pytest.mark.parametrize("shape", VVOR_SHAPES, ids=lambda s: "-".join(map(str, s)))
def test_vvor_equals_the_spec(metalsim_patch, shape):
    n_a, g, m, c, n_b, n_o, t, order = shape
    rng = np.random.default_rng(t + m)
    a, b = normal(rng, n_a, g, m), normal(rng, n_b, g, c)
    # The output index plays the slot: "one-slot" puts every triplet into matrix 13.
    o_idx, b_idx, a_idx = triplets(rng, n_o, n_b, n_a, t, order)
    if order in ("sorted", "empty-tail"):
        o_idx = mx.sort(o_idx)
    got = ops.vvor(a, a_idx, b, b_idx, o_idx, n_o)
    assert relative_error(got, vvor_oracle(a, a_idx, b, b_idx, o_idx, n_o)) <= 1e-5


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16])
def test_half_precision_inputs_match_a_float32_computation(metalsim_patch, dtype):
    rng = np.random.default_rng(11)
    a, b = normal(rng, 27, 1, 64, 64, dtype=dtype), normal(rng, 200, 1, 64, dtype=dtype)
    a_idx, b_idx, o_idx = sorted_triplets(rng, 27, 200, 1000)
    got = ops.mvmr(a, a_idx, b, b_idx, o_idx, 200)
    assert got.dtype == dtype
    want = mvmr_oracle(a.astype(mx.float32), a_idx, b.astype(mx.float32), b_idx, o_idx, 200)
    assert relative_error(got.astype(mx.float32), want) <= TOL[dtype]
    got = ops.vvor(b, b_idx, b, o_idx, a_idx, 27)
    want = vvor_oracle(b.astype(mx.float32), b_idx, b.astype(mx.float32), o_idx, a_idx, 27)
    assert relative_error(got.astype(mx.float32), want) <= TOL[dtype]


def test_mixed_input_types_promote_and_any_integer_index_type_is_accepted(metalsim_patch):
    rng = np.random.default_rng(12)
    a, b = normal(rng, 27, 1, 8, 4, dtype=mx.float16), normal(rng, 20, 1, 8)
    a_idx, b_idx, o_idx = triplets(rng, 27, 20, 20, 100, "random")
    got = ops.mvmr(a, a_idx.astype(mx.int64), b, b_idx.astype(mx.uint32),
                   o_idx.astype(mx.int16), 20)
    assert got.dtype == mx.float32
    assert relative_error(got, mvmr_oracle(a, a_idx, b, b_idx, o_idx, 20)) <= 1e-5


def test_oracles_agree_with_the_checked_design_reference():
    import pointcloud_ops_ref as ref  # the design's checked plain-MLX reference, vendored

    rng = np.random.default_rng(13)
    a, b, f = normal(rng, 27, 2, 5, 3), normal(rng, 40, 2, 5), normal(rng, 30, 2, 3)
    a_idx, b_idx, o_idx = triplets(rng, 27, 40, 30, 300, "random")
    assert relative_error(mvmr_oracle(a, a_idx, b, b_idx, o_idx, 30),
                          ref.mvmr_ref(a, a_idx, b, b_idx, o_idx, 30)) <= 1e-6
    assert relative_error(vvor_oracle(b, b_idx, f, o_idx, a_idx, 27),
                          ref.vvor_ref(b, b_idx, f, o_idx, a_idx, 27)) <= 1e-6


# --- gradients ------------------------------------------------------------------------------


@pytest.mark.parametrize("order", ["sorted", "twice", "one-slot"])
def test_mvmr_vjp_equals_autodiff_of_the_spec(metalsim_patch, order):
    rng = np.random.default_rng(21)
    k, g, c, m, n = 27, 2, 8, 12, 40
    a, b, cot = normal(rng, k, g, c, m), normal(rng, n, g, c), normal(rng, n, g, m)
    a_idx, b_idx, o_idx = triplets(rng, k, n, n, 300, order)
    ours = mx.vjp(lambda a, b: ops.mvmr(a, a_idx, b, b_idx, o_idx, n), [a, b], [cot])[1]
    spec = mx.vjp(lambda a, b: mvmr_oracle(a, a_idx, b, b_idx, o_idx, n), [a, b], [cot])[1]
    for got, want in zip(ours, spec):
        assert relative_error(got, want) <= 1e-5


@pytest.mark.parametrize("order", ["sorted", "twice"])
def test_vvor_vjp_equals_autodiff_of_the_spec(metalsim_patch, order):
    rng = np.random.default_rng(22)
    n_a, g, m, c, n_b, n_o = 30, 2, 6, 5, 40, 27
    a, b, cot = normal(rng, n_a, g, m), normal(rng, n_b, g, c), normal(rng, n_o, g, m, c)
    o_idx, b_idx, a_idx = triplets(rng, n_o, n_b, n_a, 300, order)
    ours = mx.vjp(lambda a, b: ops.vvor(a, a_idx, b, b_idx, o_idx, n_o), [a, b], [cot])[1]
    spec = mx.vjp(lambda a, b: vvor_oracle(a, a_idx, b, b_idx, o_idx, n_o), [a, b], [cot])[1]
    for got, want in zip(ours, spec):
        assert relative_error(got, want) <= 1e-5


def test_mx_grad_of_a_loss_reaches_weights_and_features(metalsim_patch):
    rng = np.random.default_rng(23)
    a, b = normal(rng, 27, 1, 4, 4), normal(rng, 10, 1, 4)
    a_idx, b_idx, o_idx = triplets(rng, 27, 10, 10, 50, "sorted")

    def loss(op, a, b):
        return (op(a, a_idx, b, b_idx, o_idx, 10) ** 2).sum()

    ours = mx.grad(lambda a, b: loss(ops.mvmr, a, b), argnums=(0, 1))(a, b)
    spec = mx.grad(lambda a, b: loss(mvmr_oracle, a, b), argnums=(0, 1))(a, b)
    for got, want in zip(ours, spec):
        assert relative_error(got, want) <= 1e-5


# --- slot runs ------------------------------------------------------------------------------


def test_slot_runs_start_each_slot_at_its_first_triplet(metalsim_patch):
    idx = np.array([0, 0, 2, 2, 2, 5])
    got = np.array(ops.slot_runs(indices(idx), 7)).tolist()
    assert got == np.searchsorted(idx, np.arange(8)).tolist() == [0, 2, 2, 5, 5, 5, 6, 6]


def test_runs_passed_in_give_the_values_and_gradients_of_runs_computed(metalsim_patch):
    """The runs depend on the triplet list alone: built once from the sorted slots, they serve
    a call on the list in another order too (sorted inside), forward and backward."""
    rng = np.random.default_rng(24)
    k, g, c, m, n = 27, 1, 8, 12, 40
    a, b, cot = normal(rng, k, g, c, m), normal(rng, n, g, c), normal(rng, n, g, m)
    a_idx, b_idx, o_idx = triplets(rng, k, n, n, 300, "random")
    runs = ops.slot_runs(mx.sort(a_idx), k)
    spec = mx.vjp(lambda a, b: mvmr_oracle(a, a_idx, b, b_idx, o_idx, n), [a, b], [cot])
    ours = mx.vjp(lambda a, b: ops.mvmr(a, a_idx, b, b_idx, o_idx, n, runs=runs), [a, b], [cot])
    for got, want in zip([*ours[0], *ours[1]], [*spec[0], *spec[1]]):
        assert relative_error(got, want) <= 1e-5
    empty = mx.zeros(k + 1, mx.int32)               # every run empty: the runs are used
    assert not np.array(ops.mvmr(a, a_idx, b, b_idx, o_idx, n, runs=empty)).any()
    x, y = normal(rng, n, g, m), normal(rng, n, g, c)
    vvor_runs = ops.slot_runs(mx.sort(a_idx), k)
    assert relative_error(ops.vvor(x, o_idx, y, b_idx, a_idx, k, runs=vvor_runs),
                          vvor_oracle(x, o_idx, y, b_idx, a_idx, k)) <= 1e-5


def test_runs_of_another_length_or_type_are_refused():
    a, a_idx, b, b_idx, o_idx, n_o = operands()
    for runs in (mx.zeros(27, mx.int32), mx.zeros(28, mx.float32)):
        with pytest.raises(ValueError, match=r"runs must be the int32 \(28,\) array slot_runs"):
            ops.mvmr(a, a_idx, b, b_idx, o_idx, n_o, runs=runs)
    with pytest.raises(ValueError, match=r"runs must be the int32 \(4,\) array"):
        ops.vvor(b, b_idx, b, b_idx, o_idx, n_o, runs=mx.zeros(3, mx.int32))


def test_weights_are_read_from_device_memory_only_for_float_whole_tiles():
    """DIRECT (weight pieces loaded by simdgroup_load from device memory) needs float weights
    and C, M multiples of the tile; edge tiles and half weights are staged (converted, zeros
    past the edges), and both paths equal the spec (`test_mvmr_equals_the_spec`, the half
    test)."""
    import metalsim
    from solutions import mvmr_grouped

    def direct(c: int, m: int, dtype=mx.float32) -> bool:
        a, b = mx.zeros((27, 1, c, m), dtype), mx.zeros((8, 1, c), dtype)
        t = mx.zeros(40, mx.int32)
        _, args = mvmr_grouped.launch(a, b, t, t, mx.zeros(28, mx.int32), 8,
                                      metalsim.metal_kernel)
        return dict(args["template"])["DIRECT"]

    assert direct(64, 64) and direct(32, 32) and direct(256, 256)
    assert not direct(40, 64) and not direct(64, 72) and not direct(64, 64, mx.float16)


# --- validation -----------------------------------------------------------------------------


def operands() -> tuple:
    rng = np.random.default_rng(30)
    return (normal(rng, 27, 1, 4, 4), indices([0, 26]), normal(rng, 5, 1, 4), indices([0, 4]),
            indices([1, 2]), 3)


def test_float_indices_are_rejected_with_their_name():
    a, a_idx, b, b_idx, o_idx, n_o = operands()
    with pytest.raises(TypeError, match="b_idx must be an integer array"):
        ops.mvmr(a, a_idx, b, b_idx.astype(mx.float32), o_idx, n_o)


def test_index_arrays_of_different_lengths_are_rejected():
    a, a_idx, b, b_idx, o_idx, n_o = operands()
    with pytest.raises(ValueError, match=r"a_idx must have shape \(2,\)"):
        ops.mvmr(a, indices([0, 1, 2]), b, b_idx, o_idx, n_o)


def test_mismatched_channels_are_rejected():
    a, a_idx, b, b_idx, o_idx, n_o = operands()
    with pytest.raises(ValueError, match="input channels differ"):
        ops.mvmr(a, a_idx, b[..., :3], b_idx, o_idx, n_o)
    with pytest.raises(ValueError, match=r"vvor takes a \(N_a, G, C\)"):
        ops.vvor(a, a_idx, b, b_idx, o_idx, n_o)


def test_integer_features_are_rejected():
    a, a_idx, b, b_idx, o_idx, n_o = operands()
    with pytest.raises(TypeError, match="b must be float32"):
        ops.mvmr(a, a_idx, b.astype(mx.int32), b_idx, o_idx, n_o)


@pytest.mark.parametrize(("position", "bad", "name"),
                         [(1, indices([0, 27]), "a_idx"), (3, indices([-1, 0]), "b_idx"),
                          (4, indices([0, 3]), "o_idx")])
def test_out_of_range_indices_raise_when_checking_is_asked_for(position, bad, name):
    args = list(operands())
    args[position] = bad
    with pytest.raises(IndexError, match=f"{name} has values in"):
        ops.mvmr(*args, check_indices=True)


# --- traffic and atomics against the naive kernel of puzzle 23 -------------------------------


def test_mvmr_on_sorted_triplets_moves_4x_fewer_bytes_and_8x_fewer_atomics_than_naive():
    rng = np.random.default_rng(40)
    k, c, m, n, t = 27, 32, 32, 150, 2000
    a, b = normal(rng, k, 1, c, m), normal(rng, n, 1, c)
    a_idx, b_idx, o_idx = sorted_triplets(rng, k, n, t)
    ours = ops.simulate_mvmr(a, a_idx, b, b_idx, o_idx, n)
    naive = ops.simulate_naive_mvmr(a, a_idx, b, b_idx, o_idx, n)
    want = mvmr_oracle(a, a_idx, b, b_idx, o_idx, n)
    assert relative_error(ours.outputs[0], want) <= 1e-5
    assert relative_error(naive.outputs[0], want) <= 1e-5
    assert ours.report.diagnostics == [], ours.report.summary()
    assert naive.report.bytes_moved >= 4 * ours.report.bytes_moved, ours.report.summary()
    atomics = ours.report.totals()["atomics"]
    assert naive.report.totals()["atomics"] >= 8 * atomics
    # Exactly one atomic per output channel, run and sub-chunk of 64 triplets.
    o = np.array(o_idx)
    runs = sum(np.unique(o[s:s + ops.MVMR_LC]).size for s in range(0, t, ops.MVMR_LC))
    assert atomics == m * runs


# --- the grouped kernel (solutions/mvmr_grouped.py) in the simulator's models ----------------


def notebook_triplets() -> tuple[mx.array, ...]:
    """The data of notebook 05's real-kernel cell: 2,000 triplets sorted by output point."""
    from puzzles import ch05_sparse_mvmr

    scope: dict = {}
    setup = ch05_sparse_mvmr.REAL_KERNEL_CODE.split("\n\ndef ")[0]
    exec(setup.replace("import metalsim\n", ""), {"mx": mx, "np": np}, scope)  # noqa: S102
    return tuple(scope[n] for n in ("a", "a_idx", "b", "b_idx", "o_idx", "N"))


def test_grouped_mvmr_inner_loop_has_no_bank_conflicts_and_the_notebook_quotes_the_model():
    from puzzles import ch05_sparse_mvmr
    from solutions import mvmr_grouped

    a, a_idx, b, b_idx, o_idx, n = notebook_triplets()
    runs = mvmr_grouped.simulate_redesign(a, a_idx, b, b_idx, o_idx, n)
    want = mvmr_oracle(a, a_idx, b, b_idx, o_idx, n)
    for run in runs.values():
        assert run.report.diagnostics == [], run.report.summary()
        assert relative_error(mx.array(run.outputs[0]), want) <= 1e-5
    grouped, per_triplet = runs["grouped"].report, runs["per-triplet"].report
    features, staged_weights = mvmr_grouped.inner_loop_lines()
    loads = grouped.memory.by_line[("threadgroup", features)]
    # every simdgroup_load takes one cycle per 32 words: no conflict
    assert loads.accesses > 0 and loads.cost == loads.ideal and loads.worst == 1
    # float weights in whole tiles (C = M = 32) are read from device memory, not staged
    assert ("threadgroup", staged_weights) not in grouped.memory.by_line
    # The figures the notebook's text quotes are the simulator's.
    text = ch05_sparse_mvmr.REAL_KERNEL_REPORT
    figures = {
        "per-triplet threadgroup accesses": per_triplet.memory.threadgroup.accesses,
        "grouped threadgroup accesses": grouped.memory.threadgroup.accesses,
        "per-triplet barriers": per_triplet.totals()["barriers"],
        "grouped barriers": grouped.totals()["barriers"],
        "grouped atomics": grouped.totals()["atomics"],
        "grouped bytes": grouped.bytes_moved,
    }
    for name, value in figures.items():
        assert f"{value:,}" in text, (name, value)
    assert f"{per_triplet.memory.threadgroup.efficiency:.0%}" in text
    assert f"{grouped.memory.threadgroup.efficiency:.0%}" in text
    assert f"{grouped.simd_efficiency:.0%}" in text


@pytest.mark.parametrize("c", [264, 392])
def test_grouped_mvmr_split_over_c_adds_parts_of_unequal_slices(c):
    """Few threadgroups and many slices of 32 channels: the C reduction is split in 2 parts
    of 5 + 4 (264 channels) or 7 + 6 slices (392), the last one partial, each added
    atomically."""
    from solutions import mvmr_grouped

    rng = np.random.default_rng(3)
    k, n, t, m = 27, 60, 500, 24
    a, b = normal(rng, k, 1, c, m), normal(rng, n, 1, c)
    a_idx = indices(np.sort(rng.integers(0, k, t)))
    b_idx, o_idx = indices(rng.integers(0, n, t)), indices(rng.integers(0, n, t))
    run = mvmr_grouped.simulate(a, a_idx, b, b_idx, o_idx, n)
    assert run.report.diagnostics == [], run.report.summary()
    assert run.report.grid[1] == 2                         # one tile of 24 outputs, 2 parts
    assert relative_error(mx.array(run.outputs[0]), mvmr_oracle(a, a_idx, b, b_idx, o_idx, n)
                          ) <= 1e-5


def test_grouped_vvor_inner_loop_has_no_bank_conflicts_and_parts_add_up():
    """MVMR's weight gradient at K = 27 with partial tiles (M = 40, C = 24) and runs long
    enough to be split into parts (each part adds its tile atomically)."""
    from solutions import mvmr_grouped

    rng = np.random.default_rng(7)
    n, t, m, c, k = 300, 30000, 40, 24, 27
    a, b = normal(rng, n, 1, m), normal(rng, n, 1, c)
    o_idx = indices(np.sort(rng.integers(0, k, t)))
    a_idx, b_idx = indices(rng.integers(0, n, t)), indices(rng.integers(0, n, t))
    run = mvmr_grouped.simulate_vvor(a, a_idx, b, b_idx, o_idx, k)
    assert run.report.diagnostics == [], run.report.summary()
    assert run.report.grid[0] // mvmr_grouped.THREADS > k          # several parts per run
    got = mx.array(run.outputs[0])
    assert relative_error(got, vvor_oracle(a, a_idx, b, b_idx, o_idx, k)) <= 1e-5
    for line in mvmr_grouped.inner_loop_lines(mvmr_grouped.VVOR_SOURCE):
        loads = run.report.memory.by_line[("threadgroup", line)]
        assert loads.accesses > 0 and loads.cost == loads.ideal and loads.worst == 1
