"""Small kernels over a shared header, for the struct tests: simulate, run clean, or fail to
compile."""

from __future__ import annotations

from dataclasses import dataclass

import mlx.core as mx
import numpy as np
import pytest

import metalsim


@dataclass(frozen=True)
class Kernels:
    """Kernels with inputs `in0, in1, ...` and one output `out`, launched as one threadgroup of
    `threads` threads unless told otherwise."""

    header: str
    threads: int = 4

    def simulate(self, source, inputs=(), header=None, out_shape=None, dtype=mx.float32,
                 grid=None, tg=None, init_value=None) -> metalsim.Run:
        kernel = metalsim.metal_kernel("k", [f"in{i}" for i in range(len(inputs))], ["out"],
                                       source, header=self.header if header is None else header)
        launch = (self.threads, 1, 1)
        return metalsim.simulate(kernel, inputs=list(inputs),
                                 output_shapes=[out_shape or (self.threads,)],
                                 output_dtypes=[dtype], grid=grid or launch,
                                 threadgroup=tg or launch, init_value=init_value)

    def run(self, source, inputs=(), **kw) -> np.ndarray:
        """The output of a kernel that must run without errors."""
        result = self.simulate(source, inputs, **kw)
        assert result.report.errors == [], result.report.summary()
        return np.array(result.outputs[0])

    def compile_error(self, source, header=None):
        """The diagnostic of a kernel that must not compile."""
        with pytest.raises(metalsim.CompileError) as info:
            self.simulate(source, header=header)
        return info.value.diagnostic


def kinds(result: metalsim.Run) -> list[str]:
    return sorted({d.kind for d in result.report.diagnostics})
