"""Which of the installed MLX's Metal kernel headers the CUDA back end translates and NVRTC
compiles, and why the others fail: the CUDA counterpart of `tests/metalsim/mlx_header_census.py`
(the same kernels: each header included alone, else after `utils.h` and its prerequisites, with
a trivial body).

Run: python tests/metalsim/cuda/cuda_header_census.py   (needs NVRTC, no GPU)
"""

from __future__ import annotations

import sys
from pathlib import Path

import mlx.core as mx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import mlx_header_census as census  # noqa: E402  (the simulator's census, a sibling helper)

import metalsim  # noqa: E402
from metalsim.cuda import nvrtc  # noqa: E402
from metalsim.cuda.translate import translate  # noqa: E402


def cuda_error(header_text: str) -> str | None:
    """Why a trivial kernel after `header_text` does not translate or compile (its first
    line), None if it does; a header the simulator rejects is not translated."""
    kernel = metalsim.metal_kernel("census", ["a"], ["out"], "out[0] = a[0];",
                                   header=header_text)
    include_dirs = (str(metalsim.mlx_include_dir()),)
    gen = kernel._prepare((), dict(inputs=[mx.zeros(1)], output_shapes=[(1,)],
                                   output_dtypes=[mx.float32], grid=(1, 1, 1),
                                   threadgroup=(1, 1, 1))).gen
    try:
        source = translate(gen, include_dirs=include_dirs).source
    except metalsim.CompileError as error:
        return "translate: " + str(error).splitlines()[0]
    try:
        nvrtc.compile_ptx(source)
    except nvrtc.NvrtcError as error:
        first = next((line for line in str(error).splitlines() if "error" in line), "")
        return "nvrtc: " + first.strip()
    return None


def header_error(header: str) -> str | None:
    if cuda_error(census.include(header)) is None:
        return None
    before = (census.UTILS, *census.PREREQUISITES.get(header, ()))
    return cuda_error("".join(census.include(h) for h in (*before, header)))


def main() -> int:
    results = {}
    for header in census.kernel_headers():
        if census.header_error(header) is not None:
            results[header] = "the simulator does not compile it"
            print(f"SKIP {header}: {results[header]}", flush=True)
            continue
        results[header] = header_error(header)
        print(f"{'ok  ' if results[header] is None else 'FAIL'} {header}"
              + ("" if results[header] is None else f": {results[header]}"), flush=True)
    passed = sum(1 for r in results.values() if r is None)
    print(f"{passed} of {len(results)} headers translate and compile with NVRTC")
    return 0


if __name__ == "__main__":
    sys.exit(main())
