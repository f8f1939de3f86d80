"""check() with an NVIDIA GPU present, without one: the CUDA kernel factory is replaced by one
that simulates (optionally corrupting the output), so the harness's GPU path runs in CI.
`test_gpu.py` runs the same path on a real GPU."""

from __future__ import annotations

import mlx.core as mx
import pytest

import metalsim
import metalsim.cuda
from puzzles import checking
from puzzles.catalog import find


class _FakeGpuKernel:
    launches = 0

    def __init__(self, corrupt: bool, *args, **kwargs) -> None:
        self.kernel = metalsim.metal_kernel(*args, **kwargs)
        self.corrupt = corrupt

    def __call__(self, **call) -> list[mx.array]:
        _FakeGpuKernel.launches += 1
        out = self.kernel(**call)[0]
        return [out + 1 if self.corrupt else out]


@pytest.fixture
def fake_gpu(monkeypatch):
    def install(corrupt: bool) -> None:
        _FakeGpuKernel.launches = 0
        monkeypatch.setattr(checking, "metal_available", lambda: False)
        monkeypatch.setattr(checking, "cuda_available", lambda: True)
        monkeypatch.setattr(metalsim.cuda, "metal_kernel",
                            lambda *a, **k: _FakeGpuKernel(corrupt, *a, **k))
        monkeypatch.setattr(metalsim.cuda, "gpu_name", lambda: "Fake GPU")
    return install


def test_check_runs_every_case_on_the_nvidia_gpu_and_says_so(fake_gpu):
    fake_gpu(corrupt=False)
    puzzle = find(1)
    result = checking.check_kernel(puzzle, puzzle.solution())
    assert result.passed
    assert _FakeGpuKernel.launches == len(result.cases)
    assert "Also ran on the real GPU through Fake GPU (CUDA)." in result.text


def test_check_fails_when_the_gpu_disagrees_with_the_spec(fake_gpu):
    fake_gpu(corrupt=True)
    puzzle = find(1)
    result = checking.check_kernel(puzzle, puzzle.solution())
    assert not result.passed
    assert all(r.metal_mismatches for r in result.cases)


def test_a_kernel_the_simulator_faults_is_never_launched_on_the_gpu(fake_gpu):
    fake_gpu(corrupt=False)
    puzzle = find(1)
    out_of_bounds = "out[0] = a[thread_position_in_grid.x + 1000];"
    result = checking.check_kernel(puzzle, out_of_bounds)
    assert result.status == "error"
    assert _FakeGpuKernel.launches == 0
