"""The bounds and alignment check of memory accesses: its one-pass test of every lane at once
(`memory._all_valid`) agrees with the per-lane check, and a bad lane among good ones is reported
and read as zero whichever way the one-pass test goes (decided by the bitwise or, or by the
largest offset where the or is past the end of a buffer whose size is no power of two)."""

import mlx.core as mx
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import metalsim
from metalsim.exec import memory

offsets = st.lists(st.one_of(st.integers(0, 300), st.integers(-(2**63), 2**63 - 1),
                             st.sampled_from([-1, -4, 2**62, 2**63 - 1, -(2**63)])),
                   min_size=1, max_size=40)


@settings(max_examples=400, deadline=None)
@given(offsets, st.integers(-64, 400), st.sampled_from([1, 2, 4, 8, 16]),
       st.sampled_from([1, 2, 4]))
def test_one_pass_validity_is_the_per_lane_check(offs, limit, align, scale):
    """`_all_valid` is true exactly when every offset is in [0, limit] and aligned, for
    negative, huge and misaligned offsets among good ones, and limits of any size."""
    off = np.array(offs, np.int64) * scale if max(map(abs, offs)) < 2**60 else np.array(
        offs, np.int64)
    exact = bool(((off >= 0) & (off <= limit) & (off % align == 0)).all())
    assert bool(memory._all_valid(off, limit, align)) == exact


def simulate(source: str, data: np.ndarray, lanes: int = 32):
    kernel = metalsim.metal_kernel("k", ["a"], ["out"], source)
    run = metalsim.simulate(kernel, inputs=[mx.array(data)], output_shapes=[(lanes,)],
                            output_dtypes=[mx.float32], grid=(lanes, 1, 1),
                            threadgroup=(lanes, 1, 1), init_value=-1)
    return np.array(run.outputs[0]), run.report


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(0, 31), st.sampled_from(["past", "negative", "none"]))
def test_a_lane_out_of_bounds_among_good_ones_is_reported_and_reads_zero(size, bad, fault):
    """Buffers of every size (power of two or not, so the or decides or the largest offset
    does): only the bad lane is reported, with the element it read, and it reads 0."""
    index = {"past": f"{size} + {bad % 3}", "negative": "-1 - int(i % 2)", "none": "0"}[fault]
    source = f"""
    uint i = thread_position_in_grid.x;
    int k = i == {bad} ? {index} : int(i % {size});
    out[i] = a[k];
    """
    data = np.arange(1, size + 1, dtype=np.float32)
    out, report = simulate(source, data)
    want = data[np.arange(32) % size]
    if fault == "none":   # the chosen lane reads element 0
        want[bad] = data[0]
        assert report.diagnostics == []
        np.testing.assert_array_equal(out, want)
        return
    [d] = report.diagnostics
    element = size + bad % 3 if fault == "past" else -1 - bad % 2
    assert (d.kind, d.severity) == ("out-of-bounds", "error")
    assert d.message == f"out-of-bounds read: 'a' has {size} element{'s' * (size != 1)}"
    assert d.threads == [(bad, 0, 0)]
    assert d.detail == f"a thread read element {element} of 'a'"
    assert d.cells == [("a", -1, element)]
    want[bad] = 0
    np.testing.assert_array_equal(out, want)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 31), st.sampled_from([1, 2, 3]))
def test_a_misaligned_lane_among_aligned_ones_is_reported_and_reads_zero(bad, shift):
    source = f"""
    uint i = thread_position_in_grid.x;
    const device char* bytes = (const device char*)a + (i == {bad} ? {shift} : 0);
    out[i] = ((const device float*)bytes)[i];
    """
    data = np.arange(1, 41, dtype=np.float32)
    out, report = simulate(source, data)
    [d] = report.diagnostics
    assert (d.kind, d.severity) == ("out-of-bounds", "error")
    assert d.message == "misaligned float access to 'a' (needs 4-byte alignment)"
    assert d.threads == [(bad, 0, 0)]
    want = data[:32].copy()
    want[bad] = 0
    np.testing.assert_array_equal(out, want)
