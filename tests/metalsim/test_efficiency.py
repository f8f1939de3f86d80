"""Coalescing and bank conflicts: the model's counts against a brute-force count in plain
Python, and kernels with known access patterns (coalesced, strided, bank-conflicting)."""

import mlx.core as mx
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import metalsim
from metalsim.efficiency import bank_cycles, comparison, segments_touched


def brute_segments(offsets, width):
    return len({byte // 64 for o in offsets for byte in range(o, o + width)})


def brute_cycles(offsets, width):
    words = {byte // 4 for o in offsets for byte in range(o, o + width)}
    per_bank = [0] * 32
    for w in words:
        per_bank[w % 32] += 1
    return max(per_bank)


offsets_and_width = st.integers(1, 4).flatmap(lambda k: st.tuples(
    st.lists(st.integers(0, 4096).map(lambda o, k=k: o * 2 ** (k - 1)), min_size=1,
             max_size=32),
    st.just(2 ** (k - 1))))


@settings(max_examples=200, deadline=None)
@given(offsets_and_width)
def test_segments_and_bank_cycles_match_a_brute_force_count(case):
    offsets, width = case
    assert segments_touched(np.array(offsets), width) == brute_segments(offsets, width)
    assert bank_cycles(np.array(offsets), width) == brute_cycles(offsets, width)


def test_model_on_known_patterns():
    lanes = np.arange(32)
    assert segments_touched(lanes * 4, 4) == 2          # 128 consecutive bytes
    assert segments_touched(lanes * 64, 4) == 32        # one segment per lane
    assert segments_touched(np.zeros(32, np.int64), 4) == 1   # a broadcast
    assert bank_cycles(lanes * 4, 4) == 1                # one word per bank
    assert bank_cycles(lanes * 128, 4) == 32             # stride 32 words: all in bank 0
    assert bank_cycles(lanes * 8, 4) == 2                # stride 2: two words per bank
    assert bank_cycles(np.zeros(32, np.int64), 4) == 1   # a broadcast
    assert bank_cycles(lanes * 16, 16) == 4              # float4: 128 words over 32 banks


def profiled(source, n=256, out=256, tg=64, inputs=None):
    kernel = metalsim.metal_kernel("k", ["a"], ["out"], source)
    a = inputs if inputs is not None else mx.arange(n, dtype=mx.float32)
    run = metalsim.simulate(kernel, inputs=[a], output_shapes=[(out,)],
                            output_dtypes=[mx.float32], grid=(out, 1, 1),
                            threadgroup=(tg, 1, 1), profile=True)
    assert run.report.errors == []
    return run.report.memory


def test_a_coalesced_kernel_touches_two_segments_per_simdgroup_access():
    memory = profiled("uint i = thread_position_in_grid.x;\nout[i] = a[i] * 2;")
    g = memory.global_
    assert g.accesses == 2 * 256 // 32   # a read and a write per SIMD-group
    assert g.per_access == 2 and g.efficiency == 1.0 and g.worst == 2
    assert memory.threadgroup.accesses == 0


def test_an_uncoalesced_kernel_touches_a_segment_per_lane():
    memory = profiled("uint i = thread_position_in_grid.x;\nout[i] = a[i * 16];", n=4096)
    reads = memory.by_line[("global", 2)]
    assert reads.accesses == 2 * 8 and memory.global_.worst == 32
    assert memory.global_.cost == 8 * 32 + 8 * 2          # strided reads, coalesced writes
    assert memory.global_.efficiency == (8 * 2 + 8 * 2) / (8 * 32 + 8 * 2)


BANKED = """
threadgroup float t[64 * 33];
uint l = thread_position_in_threadgroup.x;
t[l * STRIDE] = a[thread_position_in_grid.x];
threadgroup_barrier(mem_flags::mem_threadgroup);
out[thread_position_in_grid.x] = t[l * STRIDE];
"""


def test_a_strided_threadgroup_access_is_a_bank_conflict_and_a_padded_one_is_not():
    conflicting = profiled(BANKED.replace("STRIDE", "32")).threadgroup
    assert conflicting.accesses == 2 * 256 // 32
    assert conflicting.per_access == 32 and conflicting.worst == 32
    assert conflicting.efficiency == 1 / 32
    padded = profiled(BANKED.replace("STRIDE", "33")).threadgroup   # the usual fix
    assert padded.per_access == 1 and padded.efficiency == 1.0


def test_a_partial_simdgroup_and_a_broadcast_count_as_the_bytes_they_ask_for():
    # 40 threads: SIMD-groups of 32 and 8 lanes. Reads of a[0]: one segment each (a
    # broadcast asks for 4 bytes); writes: 2 segments for 32 lanes, 1 for 8.
    memory = profiled("out[thread_position_in_grid.x] = a[0];", n=4, out=40, tg=40)
    line = memory.by_line[("global", 1)]
    assert (line.accesses, line.cost, line.ideal, line.worst) == (4, 1 + 1 + 2 + 1, 5, 2)


def test_the_comparison_puts_launches_side_by_side_and_states_the_model():
    kernel = metalsim.metal_kernel("k", ["a"], ["out"], BANKED.replace("STRIDE", "32"))
    call = dict(inputs=[mx.arange(256, dtype=mx.float32)], output_shapes=[(256,)],
                output_dtypes=[mx.float32], grid=(256, 1, 1), threadgroup=(64, 1, 1))
    ok = metalsim.metal_kernel("k", ["a"], ["out"], BANKED.replace("STRIDE", "1"))
    text = comparison({"yours": metalsim.simulate(kernel, profile=True, **call),
                       "reference": metalsim.simulate(ok, profile=True, **call)})
    lines = text.splitlines()
    assert lines[0].split() == ["yours", "reference"]
    worst = next(line for line in lines if "worst bank conflict" in line)
    assert worst.split()[-2:] == ["32", "1"]
    assert "32 banks of 4 bytes" in lines[-1] and "64-byte segments" in lines[-1]
