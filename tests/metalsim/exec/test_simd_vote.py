"""`simd_vote` and `quad_vote` (MSL §6.9.2.1): `all()` and `any()` look at the bits of every
thread of the group, active or not, unlike `simd_all` / `simd_any`; the explicit conversions to
and from `vote_t`."""

import mlx.core as mx
import numpy as np
import pytest

import metalsim


def run(source: str, threads: int = 48) -> list[int]:
    kernel = metalsim.metal_kernel("vote", ["a"], ["out"], source)
    out = kernel(inputs=[mx.zeros(1)], output_shapes=[(threads,)], output_dtypes=[mx.int32],
                 grid=(threads, 1, 1), threadgroup=(threads, 1, 1))[0]
    return np.array(out).tolist()


def test_all_and_any_of_ballots_in_a_full_and_a_partial_simdgroup():
    """48 threads: a SIMD-group of 32 and one of 16, where all 16 set bits make `all()` true."""
    source = """
    uint l = thread_index_in_simdgroup;
    simd_vote every = simd_ballot(true), one = simd_ballot(l == 3), none = simd_ballot(false);
    out[thread_position_in_grid.x] = every.all() + 2 * every.any() + 4 * one.all()
        + 8 * one.any() + 16 * none.all() + 32 * none.any();
    """
    assert run(source) == [1 + 2 + 8] * 48


def test_all_is_false_where_a_lane_of_the_group_is_inactive_unlike_simd_all():
    source = """
    uint l = thread_index_in_simdgroup;
    int r = 0;
    if (l < 5) { r = simd_ballot(true).all() + 2 * simd_all(true) + 4 * simd_ballot(true).any(); }
    out[thread_position_in_grid.x] = r;
    """
    assert run(source, 32) == [2 + 4] * 5 + [0] * 27


def test_quad_vote_members_and_vote_t_conversions():
    source = """
    quad_vote q = quad_ballot(thread_index_in_quadgroup != 1);
    simd_vote made = simd_vote(0xFFFFFFFFul);
    out[thread_position_in_grid.x] = q.all() + 2 * q.any() + 4 * int(ushort(q))
        + 100 * made.all() + 1000 * int(ulong(simd_ballot(thread_index_in_simdgroup < 2)));
    """
    assert run(source, 32) == [2 + 4 * 0b1101 + 100 + 1000 * 3] * 32


@pytest.mark.parametrize("source, message", [
    ("ulong x = 3; out[0] = x.any();", "member reference base type 'ulong' is not a structure"),
    ("simd_vote v = simd_ballot(true); out[0] = v.all(1);", "too many arguments"),
])
def test_members_only_on_votes_and_without_arguments(source, message):
    with pytest.raises(metalsim.CompileError, match=message):
        run(source, 1)
