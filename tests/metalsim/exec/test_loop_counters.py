"""Loop counters every lane holds alike (`StatementCompiler.uniform_counter`), kept as one value
for all lanes: each kernel runs against a known answer, and gives the same outputs, counts and
findings as with every counter kept per lane."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

import metalsim
from metalsim.exec.statements import StatementCompiler

N = 64


def launch(source: str, x: np.ndarray, per_lane: bool, monkeypatch, header: str = "",
           out_dtype=mx.float32, uniform: list | None = None):
    """Run `source` on N threads (threadgroups of 32), every counter per lane if `per_lane`;
    `uniform` collects the counters kept as one value."""
    kept = StatementCompiler.uniform_counter

    def spy(self, node, scope):
        counter = kept(self, node, scope)
        if counter is not None and uniform is not None:
            uniform.append(node.init.decls[0].name)
        return counter
    with monkeypatch.context() as patch:
        patch.setattr(StatementCompiler, "uniform_counter",
                      (lambda self, node, scope: None) if per_lane else spy)
        kernel = metalsim.metal_kernel(f"k{int(per_lane)}", ["x"], ["out"], source,
                                       header=header)
        return metalsim.simulate(kernel, inputs=[mx.array(x)], output_shapes=[(N,)],
                                 output_dtypes=[out_dtype], grid=(N, 1, 1),
                                 threadgroup=(32, 1, 1), init_value=0)


def run_both(source: str, x: np.ndarray, monkeypatch, uniform: int = 1, **kw) -> np.ndarray:
    """The output, after checking that `uniform` counters were kept as one value and that
    per-lane counters give the same run."""
    names: list[str] = []
    uniform_run = launch(source, x, False, monkeypatch, uniform=names, **kw)
    assert len(names) == uniform, names
    per_lane = launch(source, x, True, monkeypatch, **kw)
    np.testing.assert_array_equal(np.array(uniform_run.outputs[0]),
                                  np.array(per_lane.outputs[0]))
    for name, counts in uniform_run.report.counts.items():
        np.testing.assert_array_equal(counts, per_lane.report.counts[name], err_msg=name)
    assert ([(d.kind, d.message, d.line, d.threads) for d in uniform_run.report.diagnostics]
            == [(d.kind, d.message, d.line, d.threads) for d in per_lane.report.diagnostics])
    return np.array(uniform_run.outputs[0])


X = np.arange(N, dtype=np.float32) * 0.5 + 1


def test_a_counter_with_a_per_lane_bound_break_and_continue(monkeypatch):
    out = run_both("""
        uint i = thread_position_in_grid.x;
        float s = 0;
        for (uint k = 0; k < i; ++k) {
            if (k == 5) continue;
            if (k * i > 300) break;
            s += x[k];
        }
        out[i] = s;""", X, monkeypatch)
    want = [sum(X[k] for k in range(i) if k != 5 and k * i <= 300
                and all(j * i <= 300 for j in range(k))) for i in range(N)]
    np.testing.assert_allclose(out, want, rtol=1e-6)


@pytest.mark.parametrize(("loop", "visits"), [
    ("for (int k = 0; k < 10; k++)", range(10)),
    ("for (int k = 9; k >= 0; --k)", range(9, -1, -1)),
    ("for (int k = 9; k > 0; k--)", range(9, 0, -1)),
    ("for (int k = 1; k < 40; k += 7)", range(1, 40, 7)),
    ("for (short k = 30; k > -9; k -= 4)", range(30, -9, -4)),
    ("for (ulong k = 0; k < 12; k += 3)", range(0, 12, 3)),
])
def test_every_step_form_visits_the_same_counts(monkeypatch, loop, visits):
    out = run_both(f"""
        uint i = thread_position_in_grid.x;
        float s = 0;
        {loop} s += float(k) * (k % 2 == 0 ? 1.0f : -1.0f) + x[(i + k) % {N}];
        out[i] = s;""", X, monkeypatch)
    want = [sum(k * (1 if k % 2 == 0 else -1) + X[(i + k) % N] for k in visits)
            for i in range(N)]
    np.testing.assert_allclose(out, want, rtol=1e-5)


def test_narrow_and_unsigned_counters_wrap_around(monkeypatch):
    out = run_both("""
        uint i = thread_position_in_grid.x;
        uint n = 0;
        for (uchar k = 250; k != 4; ++k) n += k;             // 250..255, then 0..3
        for (uint k = 2; k < 100u; k -= 1) n += 1000;        // 2, 1, 0, then 0xFFFFFFFF
        out[i] = n + i;""", X, monkeypatch, uniform=2, out_dtype=mx.uint32)
    np.testing.assert_array_equal(out, sum(range(250, 256)) + sum(range(4)) + 3000
                                  + np.arange(N))


def test_a_counter_as_lane_offset_index_and_operand(monkeypatch):
    out = run_both("""
        uint i = thread_position_in_grid.x;
        float t[4] = {1, 2, 3, 4};
        const device float* p = x + 1;
        float s = 0;
        for (ushort k = 0; k < 4; ++k) {
            s += simd_shuffle(x[i], k) + p[k] + t[k] + (k > 1 ? t[3 - k] : float(k));
        }
        out[i] = s;""", X, monkeypatch)
    base = (np.arange(N) // 32) * 32
    t = [1, 2, 3, 4]
    want = [sum(X[base[i] + k] + X[1 + k] + t[k] + (t[3 - k] if k > 1 else k)
                for k in range(4)) for i in range(N)]
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_an_inner_index_out_of_bounds_by_the_counter_is_reported_alike(monkeypatch):
    source = """
        uint i = thread_position_in_grid.x;
        float t[2][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}};
        float s = 0;
        for (int k = 0; k <= 4; ++k) s += t[0][k];
        out[i] = s;"""
    run_both(source, X, monkeypatch)
    run = launch(source, X, False, monkeypatch)
    assert [d.kind for d in run.report.errors] == ["out-of-bounds"]
    assert "inner array" in run.report.errors[0].message


def test_a_counter_a_function_changes_through_a_reference_stays_per_lane(monkeypatch):
    out = run_both("""
        uint i = thread_position_in_grid.x;
        float s = 0;
        for (uint k = 0; k < 10; ++k) {
            s += x[k];
            skip(k, i);
        }
        out[i] = s;""", X, monkeypatch, uniform=0,
        header="void skip(thread uint& k, uint i) { if (i % 2) k += 2; }")
    want = [X[0:10:3].sum() if i % 2 else X[:10].sum() for i in range(N)]
    np.testing.assert_allclose(out, want, rtol=1e-6)


@pytest.mark.parametrize("use", [
    "simd_broadcast(x[i], k)", "simd_shuffle_down(x[i], k)", "simd_shuffle_xor(x[i], k)",
    "quad_shuffle(x[i], k)", "simd_sum(float(k))", "float(simd_ballot(k > 1) != 0)",
    "select(1.0f, 2.0f, k > 2)", "float(clamp(k, 1u, 3u) + popcount(k) + ctz(k + 1))",
    "float(as_type<uint>(float(k)) & 0xFF)", "float(uint2(k, i).x + (k ? 1 : 2) + (k && i))",
    "float(k / 2 + k % 3 + (k << 2) + (k >> 1) + (~k & 7) + !k)", "float(mulhi(k, 3u))",
])
def test_a_counter_as_the_operand_of_built_in_functions_and_operators(monkeypatch, use):
    """One value where the built-ins expect one per lane: what per-lane counters give (those
    are checked against gcc and numpy elsewhere)."""
    run_both(f"""
        uint i = thread_position_in_grid.x;
        float s = 0;
        for (uint k = 0; k < 4; ++k) s += {use};
        out[i] = s;""", X, monkeypatch)
