"""`metalsim.mlx_include_dir()`: the installed MLX's `include` directory, for `include_dirs`."""

from pathlib import Path

import mlx
import mlx.core as mx
import pytest

import metalsim


def test_it_is_the_include_directory_inside_the_installed_mlx_package():
    include = metalsim.mlx_include_dir()
    assert include == Path(mx.__file__).parent / "include"
    kernels = include / "mlx" / "backend" / "metal" / "kernels"
    assert (kernels / "utils.h").is_file() and (kernels / "steel" / "gemm" / "gemm.h").is_file()


def test_a_kernel_includes_an_mlx_header_through_it():
    header = '#include "mlx/backend/metal/kernels/steel/utils/integral_constant.h"\n'
    source = "out[0] = mlx::steel::Int<3>::value + mlx::steel::Int<4>{};"
    with metalsim.patch(force=True, include_dirs=[metalsim.mlx_include_dir()]):
        kernel = mx.fast.metal_kernel("include_mlx", ["a"], ["out"], source, header=header)
        (out,) = kernel(inputs=[mx.zeros(1)], output_shapes=[(1,)], output_dtypes=[mx.int32],
                        grid=(1, 1, 1), threadgroup=(1, 1, 1))
    assert out.tolist() == [7]


def test_an_mlx_without_headers_is_reported_with_where_it_looked(monkeypatch, tmp_path):
    monkeypatch.setattr(mlx, "__path__", [str(tmp_path)])
    with pytest.raises(FileNotFoundError, match="ships no Metal kernel headers") as info:
        metalsim.mlx_include_dir()
    assert str(tmp_path / "include") in str(info.value) and "hint:" in str(info.value)
