"""numpy references shared by the corpus tests."""

from __future__ import annotations

import numpy as np


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def log_softmax(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def lstm_reference(x: np.ndarray, wx: np.ndarray, wh: np.ndarray, bias: np.ndarray,
                   hidden: int) -> np.ndarray:
    """An LSTM over x (B, T, in) from zero state, gates in PyTorch's order (input, forget,
    cell, output), which EnCodec's weights use: the hidden states (B, T, hidden)."""
    batch, steps, _ = x.shape
    h, c = np.zeros((batch, hidden)), np.zeros((batch, hidden))
    outs = []
    for t in range(steps):
        z = x[:, t] @ wx.T + bias + h @ wh.T
        i, f, g, o = np.split(z, 4, axis=-1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        outs.append(h)
    return np.stack(outs, axis=1)
