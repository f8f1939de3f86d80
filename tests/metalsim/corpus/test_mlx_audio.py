"""mlx-audio's custom kernels, from the installed mlx-audio (requirements-test.txt), run unchanged
under metalsim.patch() through mlx-audio's own functions and compared with references written
here."""

from types import ModuleType

import mlx.core as mx
import numpy as np
import pytest
from installed import import_fresh
from references import lstm_reference

import metalsim

RNG = np.random.default_rng(2)


def normal(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16])
def test_mossformer_depthwise_conv1d(metalsim_patch, dtype):
    mod = import_fresh("mlx_audio.sts.models.mossformer2_se.depthwise_conv1d_kernel")
    B, L, C, K = 2, 9, 3, 5
    x, w = normal(B, L, C), normal(C, K, 1)
    out = mod.depthwise_conv1d(mx.array(x).astype(dtype), mx.array(w).astype(dtype),
                                  padding=2, groups=C)
    padded = np.pad(x.astype(np.float64), ((0, 0), (2, 2), (0, 0)))
    ref = sum(padded[:, k:k + L, :] * w[:, k, 0] for k in range(K))
    tol = 1e-5 if dtype == mx.float32 else 1e-2
    np.testing.assert_allclose(np.array(out.astype(mx.float32)), ref, rtol=tol, atol=tol)


def test_mossformer_depthwise_conv1d_falls_back_to_conv1d_where_the_kernel_does_not_apply(
        metalsim_patch):
    mod = import_fresh("mlx_audio.sts.models.mossformer2_se.depthwise_conv1d_kernel")
    x, w = mx.array(normal(1, 8, 2)), mx.array(normal(2, 4, 1))   # even kernel: no symmetric pad
    out = mod.depthwise_conv1d(x, w, padding=1, groups=2)
    assert out.shape == mx.conv1d(x, w, padding=1, groups=2).shape


def relu_squared_attention(q, k, v, group_size):
    sim = q.astype(np.float64) @ np.swapaxes(k, -1, -2) / group_size
    return np.maximum(sim, 0) ** 2 @ v


@pytest.mark.parametrize("variant", ["simple_kernel", "fused_kernel"])
def test_mossformer_relu_squared_attention_kernels(metalsim_patch, variant):
    mod = import_fresh("mlx_audio.sts.models.mossformer2_se.flash_attention_kernels")
    q, k, v = normal(2, 2, 6, 4), normal(2, 2, 6, 4), normal(2, 2, 6, 3)
    impl = getattr(mod.FlashAttentionImplementations, variant)
    out = impl(mx.array(q), mx.array(k), mx.array(v))
    np.testing.assert_allclose(np.array(out), relu_squared_attention(q, k, v, 6), rtol=1e-4,
                               atol=1e-5)


def test_mossformer_fused_multiply_add_kernel(metalsim_patch):
    mod = import_fresh("mlx_audio.sts.models.mossformer2_se.flash_attention_kernels")
    a, b = normal(37), normal(37)
    out = mod.fused_multiply_add(inputs=[mx.array(a), mx.array(b), mx.array([0.5])],
                                    grid=(37, 1, 1), threadgroup=(32, 1, 1),
                                    output_shapes=[(37,)], output_dtypes=[mx.float32])[0]
    np.testing.assert_allclose(np.array(out), a * b * 0.5, rtol=1e-6)


def make_lstm(mod: ModuleType, input_size: int, hidden: int):
    """mlx-audio's EnCodec `LSTM` module with random weights."""
    lstm = mod.LSTM(input_size, hidden)
    lstm.Wx = mx.array(RNG.standard_normal((4 * hidden, input_size)).astype(np.float32) * 0.3)
    lstm.Wh = mx.array(RNG.standard_normal((4 * hidden, hidden)).astype(np.float32) * 0.3)
    lstm.bias = mx.array(RNG.standard_normal(4 * hidden).astype(np.float32) * 0.1)
    return lstm


def test_encodec_lstm_with_batch_one(metalsim_patch):
    mod = import_fresh("mlx_audio.codec.models.encodec.encodec")
    lstm = make_lstm(mod, 4, 8)
    x = normal(1, 3, 4)
    ref = lstm_reference(x, *(np.array(p) for p in (lstm.Wx, lstm.Wh, lstm.bias)), 8)
    np.testing.assert_allclose(np.array(lstm(mx.array(x))), ref, rtol=1e-4, atol=1e-5)


def test_encodec_lstm_with_batch_two_is_diagnosed_reading_out_of_bounds(metalsim_patch):
    """Upstream bug, in mlx-audio 0.5.9's mlx_audio/codec/models/encodec/encodec.py (the `lstm`
    kernel, taken from mlx-examples' encodec/encodec.py, which has it too): the kernel indexes
    the (B, hidden) cell state with a stride of 4 * hidden per batch row (`elem = b * d + ...`
    with `d = hidden_size * 4`), so for batch > 1 it reads and writes past the end of `cell`,
    `hidden_state` and `cell_state`. Still there in 0.6.2."""
    mod = import_fresh("mlx_audio.codec.models.encodec.encodec")
    with pytest.raises(metalsim.KernelFault, match="out-of-bounds read: .cell. has 16 elements"):
        make_lstm(mod, 4, 8)(mx.array(normal(2, 3, 4)))
