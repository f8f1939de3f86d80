"""The CUDA back end: the kernels MLX would compile for Metal, translated and run on NVIDIA GPUs.

    import metalsim.cuda
    kernel = metalsim.cuda.metal_kernel(name, input_names, output_names, source)  # MLX's API
    outputs = kernel(inputs=[...], output_shapes=[...], ...)       # runs on the GPU
    run = metalsim.cuda.dispatch(source, "kernel_name", buffers, grid, threadgroup)  # .metal
    metalsim.cuda.gpu_available()                                  # CuPy + an NVIDIA GPU here?
    metalsim.cuda.time_kernel(kernel, inputs=[...], ...)           # median ms, CUDA events
    with metalsim.cuda.exact_matrix_products(): ...                # simdgroup_matrix on FMAs
    with metalsim.patch(backend="cuda"): ...                       # mx.fast.metal_kernel on CUDA

`translate` (AST -> CUDA C++) and `nvrtc` (compile to PTX) need no GPU; `runtime` needs CuPy.
"""

from metalsim.cuda.api import CudaKernel, metal_kernel, prepare, run_on_gpu, time_kernel
from metalsim.cuda.pipeline import dispatch
from metalsim.cuda.runtime import exact_matrix_products, gpu_available, gpu_name
from metalsim.cuda.translate import Translation, cuda_source, translate, translate_function

__all__ = ["CudaKernel", "Translation", "cuda_source", "dispatch", "exact_matrix_products",
           "gpu_available", "gpu_name", "metal_kernel", "prepare", "run_on_gpu", "time_kernel",
           "translate", "translate_function"]
