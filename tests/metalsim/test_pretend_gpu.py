"""The GPU that `metalsim.patch()` pretends where MLX has no Metal: `mx.stream(mx.gpu)`,
`stream=mx.gpu` and `mx.set_default_device(mx.gpu)` run (on the CPU), and `platform="darwin"`
lets an Apple-only package import. Driven through `packages/apple_only_kernels`, a package of
this project's own built the way published MLX projects are."""

import sys
from pathlib import Path

import mlx.core as mx
import numpy as np
import pytest

import metalsim

pytestmark = pytest.mark.skipif(mx.metal.is_available(), reason="Metal is really here")
PACKAGES = Path(__file__).parent / "packages"


@pytest.fixture
def apple_only(monkeypatch):
    """A fresh import path for `apple_only_kernels` (it must be imported inside the patch)."""
    monkeypatch.syspath_prepend(str(PACKAGES))
    for name in [n for n in sys.modules if n.startswith("apple_only_kernels")]:
        monkeypatch.delitem(sys.modules, name)
    yield
    mx.set_default_device(mx.cpu)


def test_the_package_refuses_to_import_off_darwin_even_inside_a_plain_patch(apple_only):
    with metalsim.patch(), pytest.raises(ImportError, match="needs macOS"):
        import apple_only_kernels  # noqa: F401


def test_platform_darwin_imports_the_package_and_its_kernel_runs_inside_mx_stream_gpu(
        apple_only):
    a, b = np.arange(37, dtype=np.float32), np.linspace(-1, 1, 37, dtype=np.float32)
    with metalsim.patch(platform="darwin"):
        assert sys.platform == "darwin"
        import apple_only_kernels

        out = apple_only_kernels.scaled_add(mx.array(a), mx.array(b), 0.5)
    np.testing.assert_allclose(np.array(out), a + 0.5 * b, rtol=1e-6)


def test_the_kernel_inside_mx_stream_gpu_is_simulated_and_its_bugs_reported(apple_only):
    with metalsim.patch(platform="darwin"):
        import apple_only_kernels

        with pytest.raises(metalsim.KernelFault, match="out-of-bounds read: 'b'"):
            apple_only_kernels.scaled_add(mx.arange(8.0), mx.arange(4.0), 1.0)


def test_sys_platform_is_restored_when_the_patch_exits_even_by_an_exception():
    real = sys.platform
    with pytest.raises(RuntimeError), metalsim.patch(platform="darwin"):
        raise RuntimeError
    assert sys.platform == real


def test_a_platform_other_than_darwin_is_refused():
    with pytest.raises(ValueError, match="platform must be None or 'darwin', not 'win32'"):
        metalsim.patch(platform="win32")


def test_mlx_operations_given_a_gpu_stream_or_device_run_on_the_cpu(apple_only):
    x = np.array([-4.0, 1.0, 2.0, 3.0], np.float32)
    with metalsim.patch(platform="darwin"):
        import apple_only_kernels

        out = apple_only_kernels.normalised_square(mx.array(x))
    unit = x / np.abs(x).max()
    np.testing.assert_allclose(np.array(out), unit + unit ** 2, rtol=1e-6)


def test_set_default_device_gpu_makes_the_gpu_the_reported_default_until_the_patch_exits(
        apple_only):
    x = np.arange(5, dtype=np.float32)
    with metalsim.patch(platform="darwin"):
        import apple_only_kernels

        out = apple_only_kernels.gpu_default_scale(mx.array(x), 2.0)
        assert mx.default_device() == mx.gpu
        assert (mx.ones(2) * 3).tolist() == [3.0, 3.0]       # MLX computes on the CPU
        mx.set_default_device(mx.cpu)
        assert mx.default_device() == mx.cpu
        mx.set_default_device(mx.Device(mx.gpu, 0))
        assert mx.default_device() == mx.gpu
    np.testing.assert_allclose(np.array(out), 3 * x)
    assert mx.default_device() == mx.cpu


def test_streams_of_the_gpu_are_cpu_streams_inside_the_patch():
    with metalsim.patch():
        assert mx.default_stream(mx.gpu) == mx.default_stream(mx.cpu)
        assert mx.new_stream(mx.gpu).device == mx.cpu
        with mx.stream(mx.Device(mx.gpu, 0)):
            assert mx.arange(3.0).sum(stream=mx.gpu).item() == 3.0
        mx.synchronize(mx.gpu)
        assert mx.device_count(mx.gpu) == 1


X = mx.array([[3.0, 4.0], [1.0, -2.0]])


@pytest.mark.parametrize(("call", "reference"), [
    (lambda s: mx.fast.rms_norm(X, None, 1e-6, stream=s), lambda: mx.fast.rms_norm(X, None, 1e-6)),
    (lambda s: mx.linalg.norm(X, axis=1, stream=s), lambda: mx.linalg.norm(X, axis=1)),
    (lambda s: mx.fft.fft(X, stream=s), lambda: mx.fft.fft(X)),
    (lambda s: mx.random.normal((3,), key=mx.random.key(5), stream=s),
     lambda: mx.random.normal((3,), key=mx.random.key(5))),
    (lambda s: X.T.reshape(4, stream=s), lambda: X.T.reshape(4)),
], ids=["mx.fast", "mx.linalg", "mx.fft", "mx.random", "array method"])
def test_every_mlx_namespace_takes_the_gpu_stream_inside_the_patch(call, reference):
    with metalsim.patch():
        for stream in (mx.gpu, mx.Device(mx.gpu), mx.default_stream(mx.gpu)):
            assert mx.array_equal(call(stream), reference()).item()


def test_outside_the_patch_mlx_refuses_gpu_streams_again():
    with metalsim.patch():
        pass
    with pytest.raises(ValueError, match="Cannot get gpu stream"):
        mx.add(mx.array(1), mx.array(2), stream=mx.gpu)
    with pytest.raises(ValueError, match="Cannot get gpu stream"), mx.stream(mx.gpu):
        pass
    assert mx.device_count(mx.gpu) == 0


@pytest.mark.parametrize("call", [lambda: mx.device_info(mx.gpu), lambda: mx.device_info()],
                         ids=["device_info(gpu)", "device_info() of the default"])
def test_the_properties_of_the_pretended_gpu_raise_no_metal_device(call):
    with metalsim.patch(), pytest.raises(metalsim.NoMetalDevice, match="needs a real Metal GPU"):
        call()


def test_metal_available_false_leaves_gpu_streams_refused():
    with metalsim.patch(metal_available=False), pytest.raises(ValueError, match="gpu stream"):
        mx.add(mx.array(1), mx.array(2), stream=mx.gpu)
