"""Where the installed MLX keeps its Metal kernel headers, for `#include` in a kernel's header."""

from __future__ import annotations

from pathlib import Path

import mlx

KERNELS = Path("mlx", "backend", "metal", "kernels")


def mlx_include_dir() -> Path:
    """The installed MLX's `include` directory (`<site-packages>/mlx/include`), which holds
    MLX's Metal kernel headers under `mlx/backend/metal/kernels/` (`utils.h`, `steel/gemm/...`).

    Give it to `metalsim.patch(include_dirs=[...])` (or a kernel's `include_dirs`) and include
    the headers by the path MLX's own sources use:
    `#include "mlx/backend/metal/kernels/steel/gemm/gemm.h"`."""
    candidates = [Path(p) / "include" for p in mlx.__path__]
    for include in candidates:
        if (include / KERNELS).is_dir():
            return include
    searched = ", ".join(str(c) for c in candidates) or "(mlx has no package directory)"
    raise FileNotFoundError(
        f"the installed MLX ships no Metal kernel headers (looked for {KERNELS} under: "
        f"{searched}).\n    hint: MLX's wheels (mlx on macOS, mlx[cpu] elsewhere) include them; "
        "an MLX built from source without its headers installed does not.")
