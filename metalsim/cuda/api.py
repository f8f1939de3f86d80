"""`metalsim.cuda.metal_kernel`: `mx.fast.metal_kernel`'s API, run on an NVIDIA GPU.

The factory and the call accept and reject exactly what MLX (and `metalsim.metal_kernel`)
accept and reject, generate the same source, and return `mx.array`s; only the execution
differs: the generated source is translated to CUDA C++ and launched with MLX's dispatch
(`metalsim.cuda.runtime`). The GPU gives values, not diagnostics: counts, races and
out-of-bounds checks stay the simulator's.

    kernel = metalsim.cuda.metal_kernel(name, input_names, output_names, source)
    out = kernel(inputs=[...], output_shapes=[...], output_dtypes=[...], grid=..., threadgroup=...)
    launch = metalsim.cuda.prepare(kernel, inputs=[...], ...)   # buffers kept on the GPU
    launch.enqueue(); launch.fetch()
"""

from __future__ import annotations

import sys

import mlx.core as mx

from metalsim import api as sim_api
from metalsim.cuda import runtime
from metalsim.signature import OutputBuffer, verbose_text


class CudaKernel(sim_api.Kernel):
    """The callable `metal_kernel` returns: call it like MLX's kernel object."""

    def __repr__(self) -> str:
        return f"<metalsim.cuda.CudaKernel {self.spec.name!r}>"

    def __call__(self, *args: object, **kwargs: object) -> list[mx.array]:
        return self._run(args, kwargs, trace=False).outputs

    def _launch(self, args: tuple, kwargs: dict[str, object]
                ) -> tuple[runtime.DeviceLaunch, list[OutputBuffer]]:
        call = self._prepare(args, kwargs)
        if call.verbose:
            sys.stdout.write(verbose_text(call.gen))
            sys.stdout.flush()
        if "float64" in call.output_dtypes or any(b.dtype == "float64" for b in call.inputs):
            raise ValueError("float64 is not supported on the GPU")
        sim_api._check_launch(call, self.spec.output_names)
        outputs = [
            sim_api._output_buffer(name, dtype, shape, call.init_value)
            for name, dtype, shape in zip(
                self.spec.output_names, call.output_dtypes, call.output_shapes, strict=True)
        ]
        launch = runtime.prepare(call.gen, call.inputs, outputs, call.grid, call.threadgroup,
                                 self.spec.math_mode,
                                 include_dirs=tuple(str(d) for d in self.include_dirs))
        return launch, outputs

    def _run(self, args: tuple, kwargs: dict[str, object], trace: bool,
             strict: bool = False) -> sim_api.Run:
        if trace:
            raise ValueError("the CUDA back end records no trace: use metalsim.simulate")
        launch, outputs = self._launch(args, kwargs)
        launch.enqueue()
        launch.fetch()
        return sim_api.Run(outputs=[sim_api._to_mx(b) for b in outputs], report=None)


def metal_kernel(*args: object, **kwargs: object) -> CudaKernel:
    """Like `mx.fast.metal_kernel(name, input_names, output_names, source, header="",
    ensure_row_contiguous=True, atomic_outputs=False, compile_options=None)`, on the GPU."""
    kernel = sim_api.metal_kernel(*args, **kwargs)
    return CudaKernel(kernel.spec)


metal_kernel.__signature__ = sim_api.metal_kernel.__signature__  # type: ignore[attr-defined]


def prepare(kernel: sim_api.Kernel, **call_kwargs: object
            ) -> tuple[runtime.DeviceLaunch, list[OutputBuffer]]:
    """Any metalsim kernel's call, ready to launch on the GPU (for timing: `enqueue()` only)."""
    return _on_gpu(kernel)._launch((), call_kwargs)


def time_kernel(kernel: sim_api.Kernel, *, repeat: int = 20, warmup: int = 3,
                **call_kwargs: object) -> float:
    """Median milliseconds of the kernel on the GPU (CUDA events; buffers stay on the GPU),
    over `repeat` timed launches after `warmup` untimed ones."""
    import statistics

    cupy = runtime.cupy_module()
    launch, _ = prepare(kernel, **call_kwargs)
    for _ in range(warmup):
        launch.enqueue()
    times = []
    for _ in range(repeat):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        launch.enqueue()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop))
    return statistics.median(times)


def run_on_gpu(kernel: sim_api.Kernel, **call_kwargs: object) -> list[mx.array]:
    """Run a kernel built by `metalsim.metal_kernel` (or this module) on the GPU."""
    return _on_gpu(kernel)(**call_kwargs)


def _on_gpu(kernel: sim_api.Kernel) -> CudaKernel:
    """`kernel` as a CudaKernel, with its include directories."""
    gpu = CudaKernel(kernel.spec)
    gpu.include_dirs = kernel.include_dirs
    return gpu
