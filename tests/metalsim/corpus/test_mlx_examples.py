"""An LSTM cell kernel in the shape of mlx-examples' EnCodec one, which is not on PyPI.

ml-explore/mlx-examples encodec/encodec.py (commit 7ddca42) runs its LSTM's pointwise step as
a custom kernel named `lstm`: MLX matmuls give the four gates' pre-activations for a time step,
and one thread per (batch row, hidden unit) applies the sigmoids and tanh and updates the cell
and hidden state. Its bug: it indexes the (B, hidden) cell state with the gates' row stride,
4 * hidden (`elem = b * d + ...` with `d = hidden_size * 4`), so with batch > 1 it reads and
writes past the end of the cell and hidden state; batch 1, the only size EnCodec's example runs,
is right. mlx-audio copied the kernel with the bug (tests/metalsim/corpus/test_mlx_audio.py
runs that installed copy). The kernel here is written for this test and does the same work;
its wrong variant makes the same indexing mistake, which metalsim must report.
"""

import mlx.core as mx
import numpy as np
import pytest
from references import lstm_reference

import metalsim

RNG = np.random.default_rng(1)

STEP = """
    uint unit = thread_position_in_grid.x;
    uint row = thread_position_in_grid.y;
    uint gates_at = row * 4 * HIDDEN + unit;
    uint state_at = row * STATE_STRIDE + unit;
    float in_gate = 1.0f / (1.0f + metal::exp(-float(gates[gates_at])));
    float forget_gate = 1.0f / (1.0f + metal::exp(-float(gates[gates_at + HIDDEN])));
    float candidate = metal::precise::tanh(float(gates[gates_at + 2 * HIDDEN]));
    float out_gate = 1.0f / (1.0f + metal::exp(-float(gates[gates_at + 3 * HIDDEN])));
    float c = forget_gate * float(cell[state_at]) + in_gate * candidate;
    cell_out[state_at] = c;
    hidden_out[state_at] = out_gate * metal::precise::tanh(c);
"""


def lstm(x: mx.array, wx: mx.array, wh: mx.array, bias: mx.array,
         state_stride: int | None = None) -> mx.array:
    """The hidden states over x (B, T, in): per step, gates by MLX matmuls, then the kernel."""
    batch, steps, _ = x.shape
    hidden = wh.shape[1]
    kernel = mx.fast.metal_kernel(name="lstm_step", input_names=["gates", "cell"],
                                  output_names=["hidden_out", "cell_out"], source=STEP)
    h, c = mx.zeros((batch, hidden)), mx.zeros((batch, hidden))
    outs = []
    for t in range(steps):
        gates = x[:, t] @ wx.T + bias + h @ wh.T
        h, c = kernel(inputs=[gates, c],
                      template=[("HIDDEN", hidden), ("STATE_STRIDE", state_stride or hidden)],
                      grid=(hidden, batch, 1), threadgroup=(hidden, 1, 1),
                      output_shapes=[(batch, hidden)] * 2, output_dtypes=[mx.float32] * 2)
        outs.append(h)
    return mx.stack(outs, axis=1)


def weights(input_size: int, hidden: int) -> list[np.ndarray]:
    return [(RNG.standard_normal(shape) * scale).astype(np.float32) for shape, scale in
            (((4 * hidden, input_size), 0.3), ((4 * hidden, hidden), 0.3), ((4 * hidden,), 0.1))]


@pytest.mark.parametrize("batch", [1, 3])
def test_the_lstm_kernel_equals_a_numpy_lstm(metalsim_patch, batch):
    wx, wh, bias = weights(6, 8)
    x = RNG.standard_normal((batch, 5, 6)).astype(np.float32)
    out = lstm(mx.array(x), *map(mx.array, (wx, wh, bias)))
    np.testing.assert_allclose(np.array(out), lstm_reference(x, wx, wh, bias, 8), rtol=1e-4,
                               atol=1e-5)


def test_indexing_the_state_with_the_gates_stride_is_right_for_batch_one(metalsim_patch):
    wx, wh, bias = weights(6, 8)
    x = RNG.standard_normal((1, 4, 6)).astype(np.float32)
    out = lstm(mx.array(x), *map(mx.array, (wx, wh, bias)), state_stride=4 * 8)
    np.testing.assert_allclose(np.array(out), lstm_reference(x, wx, wh, bias, 8), rtol=1e-4,
                               atol=1e-5)


def test_indexing_the_state_with_the_gates_stride_is_diagnosed_out_of_bounds_for_batch_two(
        metalsim_patch):
    wx, wh, bias = weights(6, 8)
    with pytest.raises(metalsim.KernelFault) as info:
        lstm(mx.array(RNG.standard_normal((2, 3, 6)).astype(np.float32)),
             *map(mx.array, (wx, wh, bias)), state_stride=4 * 8)
    assert {d.kind for d in info.value.diagnostics if d.severity == "error"} == {"out-of-bounds"}
    assert "out-of-bounds read: 'cell' has 16 elements" in str(info.value)
