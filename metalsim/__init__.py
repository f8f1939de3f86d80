"""metalsim: run `mx.fast.metal_kernel` kernels on any machine, faithfully, and see inside them.

    import metalsim
    kernel = metalsim.metal_kernel(name, input_names, output_names, source, header="")
    outputs = kernel(inputs=[...], output_shapes=[...], output_dtypes=[...],
                     grid=(x, y, z), threadgroup=(x, y, z))    # like MLX; raises KernelFault
    run = metalsim.simulate(kernel, inputs=[...], ..., trace=False)   # run.outputs, run.report
    text = metalsim.source(kernel, inputs=[...], ...)                  # MLX's generated source
    with metalsim.patch(): ...     # mx.fast.metal_kernel itself runs in the simulator
    with metalsim.patch(include_dirs=[metalsim.mlx_include_dir()]): ...   # MLX's kernel headers
    run = metalsim.dispatch(metal_source, "kernel_name", buffers={0: x, 1: out}, grid=...,
                            threadgroup=...)    # a whole [[kernel]] function, buffers by index
"""

from metalsim.api import Kernel, Run, metal_kernel, simulate, source
from metalsim.diagnostics import CompileError, Diagnostic, KernelFault, TransformError
from metalsim.dispatch import Dispatch, dispatch
from metalsim.mlx_headers import mlx_include_dir
from metalsim.patch import NoMetalDevice, patch
from metalsim.report import Report

__all__ = ["CompileError", "Diagnostic", "Dispatch", "Kernel", "KernelFault", "NoMetalDevice",
           "Report", "Run", "TransformError", "dispatch", "metal_kernel", "mlx_include_dir",
           "patch", "simulate", "source"]
