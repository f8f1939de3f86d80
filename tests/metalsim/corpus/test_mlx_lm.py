"""mlx-lm's custom kernels, from the installed mlx-lm (requirements-test.txt), run unchanged under
metalsim.patch() through mlx-lm's own functions and compared with references written here in
numpy."""

from types import ModuleType

import mlx.core as mx
import numpy as np
import pytest
from installed import import_fresh
from references import log_softmax, softmax

import metalsim

RNG = np.random.default_rng(0)


def normal(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def gated_delta_reference(q, k, v, g, beta, state, mask=None):
    """The recurrence: per step, decay the state, correct it toward v along k, read it with q."""
    B, T, Hk, Dk = k.shape
    Hv = v.shape[2]
    q, k = np.repeat(q, Hv // Hk, axis=2), np.repeat(k, Hv // Hk, axis=2)
    state = state.astype(np.float64).copy()
    ys = np.zeros(v.shape)
    for t in range(T):
        on = np.ones(B, bool) if mask is None else mask[:, t]
        decay = g[:, t][..., None, None] if g.ndim == 3 else g[:, t][:, :, None, :]
        new = state * decay
        kv = (new * k[:, t][:, :, None, :]).sum(-1)
        delta = (v[:, t] - kv) * beta[:, t][..., None]
        new = new + k[:, t][:, :, None, :] * delta[..., None]
        ys[:, t] = np.where(on[:, None, None], (new * q[:, t][:, :, None, :]).sum(-1), 0)
        state = np.where(on[:, None, None, None], new, state)
    return ys, state


@pytest.mark.parametrize("vectorized", [False, True], ids=["scalar-gate", "vector-gate"])
@pytest.mark.parametrize("masked", [False, True], ids=["no-mask", "mask"])
def test_gated_delta_kernel(metalsim_patch, vectorized, masked):
    mod = import_fresh("mlx_lm.models.gated_delta")
    B, T, Hk, Hv, Dk, Dv = 2, 3, 1, 2, 32, 4
    q, k = normal(B, T, Hk, Dk, scale=0.3), normal(B, T, Hk, Dk, scale=0.3)
    v = normal(B, T, Hv, Dv)
    g = RNG.uniform(0.5, 1.0, (B, T, Hv, Dk) if vectorized else (B, T, Hv)).astype(np.float32)
    beta = RNG.uniform(0, 1, (B, T, Hv)).astype(np.float32)
    state = normal(B, Hv, Dv, Dk, scale=0.1)
    # All steps on: a masked-off step has every lane of a SIMD-group store the same 0 (a benign
    # race, reported as an error until metalsim grades those as warnings).
    mask = np.ones((B, T), bool) if masked else None
    y, new_state = mod.gated_delta_kernel(
        *map(mx.array, (q, k, v, g, beta, state)), None if mask is None else mx.array(mask))
    y_ref, state_ref = gated_delta_reference(q, k, v, g, beta, state, mask)
    np.testing.assert_allclose(np.array(y), y_ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.array(new_state), state_ref, rtol=1e-4, atol=1e-5)


def test_gated_delta_update_takes_the_kernel_path_inside_the_patch(metalsim_patch, monkeypatch):
    mod = import_fresh("mlx_lm.models.gated_delta")
    calls = []
    kernel = mod.gated_delta_kernel
    monkeypatch.setattr(mod, "gated_delta_kernel", lambda *a: calls.append(1) or kernel(*a))
    B, T, H, D = 1, 2, 1, 32
    args = [mx.array(normal(B, T, H, D, scale=0.3)) for _ in range(3)]
    a, b = mx.array(normal(B, T, H)), mx.array(normal(B, T, H))
    y, _ = mod.gated_delta_update(*args, a, b, mx.zeros(H), mx.zeros(H))
    assert calls == [1]
    y_ops, _ = mod.gated_delta_update(*args, a, b, mx.zeros(H), mx.zeros(H), use_kernel=False)
    np.testing.assert_allclose(np.array(y), np.array(y_ops), rtol=1e-4, atol=1e-5)


def test_ssm_update_kernel(metalsim_patch):
    mod = import_fresh("mlx_lm.models.ssm")
    n, h, d, groups, ds = 2, 4, 8, 2, 32
    x = normal(n, 1, h, d)
    A_log, D = normal(h, scale=0.5), normal(h)
    Bm, Cm = normal(n, groups, ds), normal(n, groups, ds)
    dt, dt_bias = normal(n, h), normal(h)
    state = normal(n, h, d, ds, scale=0.1)
    out, new_state = mod.ssm_update_kernel(
        *map(mx.array, (x, A_log, Bm, Cm, D, dt, dt_bias, state)), (0.0, 100.0))
    dtv = np.clip(np.log1p(np.exp(dt.astype(np.float64) + dt_bias)), 0.0, 100.0)   # softplus
    dA = np.exp(-np.exp(A_log)[None, :] * dtv)                                      # [n, h]
    Bh, Ch = np.repeat(Bm, h // groups, axis=1), np.repeat(Cm, h // groups, axis=1)  # [n, h, ds]
    xs = x[:, 0]                                                                    # [n, h, d]
    ref_state = dA[..., None, None] * state + (xs * dtv[..., None])[..., None] * Bh[:, :, None]
    ref_out = (ref_state * Ch[:, :, None]).sum(-1) + xs * D[None, :, None]
    np.testing.assert_allclose(np.array(new_state), ref_state, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.array(out)[:, 0], ref_out, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("invert", [False, True])
def test_bitlinear_packed_ternary_matmul(metalsim_patch, invert):
    mod = import_fresh("mlx_lm.models.bitlinear_layers")
    batch, fin, fout = 3, 256, 8
    layer = mod.BitLinear(fin, fout, bias=True, invert_weight_scales=invert)
    ternary = RNG.integers(0, 3, (fout, fin))          # stored as value + 1 in two bits
    packed = np.zeros((fout // 4, fin), np.uint8)
    for part in range(4):
        packed |= (ternary[part * fout // 4:(part + 1) * fout // 4] << (2 * part)).astype(np.uint8)
    layer.weight = mx.array(packed)
    layer.weight_scale = mx.array([2.5])
    layer.bias = mx.array(normal(fout))
    x = normal(batch, fin)
    scale = 1 / 2.5 if invert else 2.5
    ref = x.astype(np.float64) @ (ternary - 1).T * scale + np.array(layer.bias)
    np.testing.assert_allclose(np.array(layer(mx.array(x))), ref, rtol=1e-4, atol=1e-3)


def test_kl_div_loss_forward_is_diagnosed_a_missing_threadgroup_barrier(metalsim_patch):
    """Upstream bug, in mlx-lm 0.31.3's mlx_lm/tuner/losses.py (all four KL/JS kernels):
    `shared` is reused for the sums right after the maxima were read from it, with no barrier
    between (a SIMD-group that is ahead overwrites a maximum another has not read yet); and
    the final exchange is ordered by threadgroup_barrier(mem_flags::mem_none), which orders no
    memory. Still there in 0.32.2 (the latest release checked)."""
    mod = import_fresh("mlx_lm.tuner.losses")
    q, p = mx.array(normal(2, 64)), mx.array(normal(2, 64))
    with pytest.raises(metalsim.KernelFault) as info:
        mod.kl_div_loss(q, p)
    races = [d for d in info.value.diagnostics if d.kind == "race"]
    assert races and all("'shared'" in d.message for d in races)
    assert "shared[simd_group_id * 2 + 0] = sum_exp_q" in races[0].excerpt
    assert "no barrier between them" in str(info.value)
    # the last exchange, "ordered" by threadgroup_barrier(mem_flags::mem_none)
    assert any("shared[simd_group_id] = kl;" in d.excerpt for d in races)
    assert any("kl = shared[simd_lane_id];" in d.excerpt for d in races)


def test_kl_div_loss_with_the_barrier_fixed_is_right_and_its_vjp_kernel_too(metalsim_patch):
    fixed = _with_barriers_fixed()
    q, p = normal(2, 64), normal(2, 64)
    ref = (softmax(p) * (log_softmax(p) - log_softmax(q))).sum(-1)
    np.testing.assert_allclose(np.array(fixed.kl_div_loss(mx.array(q), mx.array(p))), ref,
                               rtol=1e-4, atol=1e-6)
    grad = mx.grad(lambda a: fixed.kl_div_loss(a, mx.array(p)).sum())(mx.array(q))
    np.testing.assert_allclose(np.array(grad), softmax(q) - softmax(p), rtol=1e-4, atol=1e-6)


def _with_barriers_fixed() -> ModuleType:
    """mlx-lm's losses module imported with its kernels' two barrier bugs fixed: a barrier
    before `shared` is reused for the sums, and mem_threadgroup for mem_none (mlx-lm's code
    otherwise unchanged)."""
    factory = mx.fast.metal_kernel

    def fixed_factory(*args, **kwargs):
        source = kwargs["source"].replace("mem_flags::mem_none", "mem_flags::mem_threadgroup")
        kwargs["source"] = source.replace(
            "        // Share the sum_exp across the threadgroup",
            "        threadgroup_barrier(mem_flags::mem_threadgroup);")
        return factory(*args, **kwargs)

    mx.fast.metal_kernel = fixed_factory
    try:
        return import_fresh("mlx_lm.tuner.losses")
    finally:
        mx.fast.metal_kernel = factory


def test_js_div_loss_forward_is_diagnosed_a_missing_threadgroup_barrier(metalsim_patch):
    mod = import_fresh("mlx_lm.tuner.losses")
    with pytest.raises(metalsim.KernelFault, match="data race on 'shared'"):
        mod.js_div_loss(mx.array(normal(2, 64)), mx.array(normal(2, 64)))


def test_js_div_loss_with_the_barrier_fixed(metalsim_patch):
    fixed = _with_barriers_fixed()
    q, p = normal(2, 64), normal(2, 64)
    m = 0.5 * (softmax(p) + softmax(q))
    ref = 0.5 * ((softmax(p) * (log_softmax(p) - np.log(m))).sum(-1)
                 + (softmax(q) * (log_softmax(q) - np.log(m))).sum(-1))
    np.testing.assert_allclose(np.array(fixed.js_div_loss(mx.array(q), mx.array(p))), ref,
                               rtol=1e-4, atol=1e-6)


def _js_reference(q: mx.array, p: mx.array) -> mx.array:
    lq, lp = q - mx.logsumexp(q, -1, keepdims=True), p - mx.logsumexp(p, -1, keepdims=True)
    lm = mx.log(0.5 * (mx.exp(lq) + mx.exp(lp)))
    return 0.5 * ((mx.exp(lp) * (lp - lm)).sum(-1) + (mx.exp(lq) * (lq - lm)).sum(-1))


def test_js_div_loss_vjp_kernel_with_the_barrier_fixed(metalsim_patch):
    fixed = _with_barriers_fixed()
    q, p = mx.array(normal(2, 64)), mx.array(normal(2, 64))
    weights = mx.array(normal(2))
    grad = mx.grad(lambda a: (fixed.js_div_loss(a, p) * weights).sum())(q)
    ref = mx.grad(lambda a: (_js_reference(a, p) * weights).sum())(q)
    np.testing.assert_allclose(np.array(grad), np.array(ref), rtol=1e-4, atol=1e-6)


def test_rwkv7_wkv7_kernel(metalsim_patch):
    mod = import_fresh("mlx_lm.models.rwkv7")
    B, T, H, D = 2, 3, 2, 32
    r, k, v, a, b = (normal(B, T, H, D, scale=0.3) for _ in range(5))
    w = RNG.uniform(0.6, 1.0, (B, T, H, D)).astype(np.float32)
    state = normal(B, H, D, D, scale=0.1)
    y, new_state = mod.wkv7_kernel(*map(mx.array, (r, w, k, v, a, b, state)))
    s = state.astype(np.float64)                     # [B, H, Dv, Dk]
    y_ref = np.zeros((B, T, H, D))
    for t in range(T):
        sa = (s * a[:, t][:, :, None, :]).sum(-1)    # [B, H, Dv]
        s = (s * w[:, t][:, :, None, :] + v[:, t][..., None] * k[:, t][:, :, None, :]
             + sa[..., None] * b[:, t][:, :, None, :])
        y_ref[:, t] = (s * r[:, t][:, :, None, :]).sum(-1)
    np.testing.assert_allclose(np.array(y), y_ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.array(new_state), s, rtol=1e-4, atol=1e-5)
