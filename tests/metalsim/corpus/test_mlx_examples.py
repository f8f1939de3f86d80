"""mlx-examples' EnCodec LSTM kernel (ml-explore/mlx-examples), run unchanged under
metalsim.patch() through its own `LSTM` module, against an LSTM written here in numpy."""

import mlx.core as mx
import numpy as np
import pytest
from corpus import load

import metalsim

RNG = np.random.default_rng(1)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def lstm_reference(x, Wx, Wh, bias, hidden):
    """PyTorch's gate order (input, forget, cell, output), which EnCodec's weights use."""
    B, T, _ = x.shape
    h, c = np.zeros((B, hidden)), np.zeros((B, hidden))
    outs = []
    for t in range(T):
        z = x[:, t] @ Wx.T + bias + h @ Wh.T
        i, f, g, o = np.split(z, 4, axis=-1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        outs.append(h)
    return np.stack(outs, axis=1)


def make_lstm(mod, input_size, hidden):
    lstm = mod["LSTM"](input_size, hidden)
    lstm.Wx = mx.array(RNG.standard_normal((4 * hidden, input_size)).astype(np.float32) * 0.3)
    lstm.Wh = mx.array(RNG.standard_normal((4 * hidden, hidden)).astype(np.float32) * 0.3)
    lstm.bias = mx.array(RNG.standard_normal(4 * hidden).astype(np.float32) * 0.1)
    return lstm


def test_encodec_lstm_with_batch_one(metalsim_patch):
    mod = load("ml-explore__mlx-examples/encodec_lstm.py")
    lstm = make_lstm(mod, 6, 8)
    x = RNG.standard_normal((1, 5, 6)).astype(np.float32)
    ref = lstm_reference(x, *(np.array(p) for p in (lstm.Wx, lstm.Wh, lstm.bias)), 8)
    np.testing.assert_allclose(np.array(lstm(mx.array(x))), ref, rtol=1e-4, atol=1e-5)


def test_encodec_lstm_with_batch_two_is_diagnosed_reading_out_of_bounds(metalsim_patch):
    """Upstream bug: the kernel indexes the (B, hidden) cell state with a stride of 4 * hidden
    per batch row (`elem = b * d + ...` with d = hidden_size * 4), so for batch > 1 it reads
    and writes past the end of `cell`, `hidden_state` and `cell_state`."""
    mod = load("ml-explore__mlx-examples/encodec_lstm.py")
    lstm = make_lstm(mod, 6, 8)
    with pytest.raises(metalsim.KernelFault) as info:
        lstm(mx.array(RNG.standard_normal((2, 3, 6)).astype(np.float32)))
    kinds = {d.kind for d in info.value.diagnostics if d.severity == "error"}
    assert kinds == {"out-of-bounds"}
    assert "'cell'" in str(info.value)
