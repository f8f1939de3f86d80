"""Indices by variables that keep their declared value (`uses.fixed_names`) are converted,
checked and scaled once per set of lanes and then reused (`ExpressionCompiler.x_Index`):
each kernel runs against a known answer, and gives the same outputs, counts and findings as
with every index computed afresh."""

from __future__ import annotations

import mlx.core as mx
import numpy as np

import metalsim
from metalsim.exec import compile as compile_module

N = 64
X = np.arange(N, dtype=np.float32) * 0.25 - 3


def launch(source: str, fresh: bool, monkeypatch, header: str = "",
           fixed: set[str] | None = None):
    """Run `source` on N threads (threadgroups of 32); no index kept if `fresh`. `fixed`
    collects the names whose indices may be kept (of every function compiled)."""
    found = compile_module.fixed_names

    def spy(uses):
        names = found(uses)
        if fixed is not None:
            fixed.update(names)
        return names
    with monkeypatch.context() as patch:
        patch.setattr(compile_module, "fixed_names", (lambda uses: set()) if fresh else spy)
        kernel = metalsim.metal_kernel(f"k{int(fresh)}", ["x"], ["out"], source, header=header)
        return metalsim.simulate(kernel, inputs=[mx.array(X)], output_shapes=[(N,)],
                                 output_dtypes=[mx.float32], grid=(N, 1, 1),
                                 threadgroup=(32, 1, 1), init_value=0)


def run_both(source: str, monkeypatch, kept_names: set[str], not_kept: set[str] = frozenset(),
             **kw) -> np.ndarray:
    """The output, after checking that indices by `kept_names` (and none by `not_kept`) were
    kept and that indices computed afresh give the same run."""
    fixed: set[str] = set()
    kept = launch(source, False, monkeypatch, fixed=fixed, **kw)
    assert kept_names <= fixed and not not_kept & fixed, fixed
    fresh = launch(source, True, monkeypatch, **kw)
    np.testing.assert_array_equal(np.array(kept.outputs[0]), np.array(fresh.outputs[0]))
    for name, counts in kept.report.counts.items():
        np.testing.assert_array_equal(counts, fresh.report.counts[name], err_msg=name)
    assert ([(d.kind, d.message, d.line, d.threads) for d in kept.report.diagnostics]
            == [(d.kind, d.message, d.line, d.threads) for d in fresh.report.diagnostics])
    return np.array(kept.outputs[0])


def test_a_kept_index_serves_the_lanes_it_was_computed_for_only(monkeypatch):
    out = run_both("""
        uint i = thread_position_in_grid.x;
        uint r = i % 4;
        threadgroup float t[4][8];
        uint lx = thread_position_in_threadgroup.x;
        if (lx < 8) {
            for (uint j = 0; j < 4; ++j) t[j][lx] = j * 8 + lx;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        float s = 0;
        for (uint k = 0; k < 8; ++k) {
            if (k % 2 == i % 2) s += t[r][k];        // half the lanes, alternating sets
            else s -= t[r][0] + x[r];
            s += t[r][k];                            // every lane
        }
        out[i] = s;""", monkeypatch, kept_names={"r", "lx"})
    t = np.arange(32, dtype=np.float32).reshape(4, 8)
    want = [sum((t[i % 4][k] if k % 2 == i % 2 else -(t[i % 4][0] + X[i % 4])) + t[i % 4][k]
                for k in range(8)) for i in range(N)]
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_a_variable_declared_in_a_loop_is_indexed_afresh_each_iteration(monkeypatch):
    out = run_both("""
        uint i = thread_position_in_grid.x;
        float s = 0;
        for (uint k = 0; k < 5; ++k) {
            uint r = (i + k * 7) % 64;
            s += x[r];
        }
        out[i] = s;""", monkeypatch, kept_names={"i"}, not_kept={"r", "s"})
    np.testing.assert_allclose(out, [sum(X[(i + k * 7) % 64] for k in range(5))
                                     for i in range(N)], rtol=1e-6)


def test_a_function_called_again_indexes_with_its_new_arguments(monkeypatch):
    # (`i` is an argument of a user function, which might take it by reference: not kept)
    out = run_both("""
        uint i = thread_position_in_grid.x;
        float s = 0;
        for (uint k = 0; k < 3; ++k) s += pick(x, i, k);
        out[i] = s;""", monkeypatch, kept_names={"r"}, not_kept={"i"}, header="""
        float pick(const device float* x, uint i, uint k) {
            uint r = (i * 3 + k) % 64;
            return x[r] + x[r];
        }""")
    np.testing.assert_allclose(out, [sum(2 * X[(i * 3 + k) % 64] for k in range(3))
                                     for i in range(N)], rtol=1e-6)


def test_a_kept_index_past_an_inner_end_is_reported_for_the_same_threads(monkeypatch):
    source = """
        uint i = thread_position_in_grid.x;
        uint r = i % 5;
        float t[2][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}};
        float s = 0;
        for (uint k = 0; k < 3; ++k) s += t[0][r];
        out[i] = s;"""
    run_both(source, monkeypatch, kept_names={"r"})
    run = launch(source, False, monkeypatch)
    assert [d.kind for d in run.report.errors] == ["out-of-bounds"]
    assert [x for x, _, _ in run.report.errors[0].threads] == list(range(4, N, 5))[:8]
