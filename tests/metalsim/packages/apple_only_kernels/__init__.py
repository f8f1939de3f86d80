"""A package built the way published MLX projects are: it refuses to import off macOS, builds its
kernel at import, selects the GPU itself and launches there (`tests/metalsim/test_pretend_gpu.py`
runs it under `metalsim.patch()`)."""

import sys

if sys.platform != "darwin":
    raise ImportError("apple_only_kernels needs macOS: its kernels are written for Metal")

from apple_only_kernels.ops import gpu_default_scale, normalised_square, scaled_add  # noqa: E402

__all__ = ["gpu_default_scale", "normalised_square", "scaled_add"]
