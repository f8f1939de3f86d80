"""The CUDA back end without a GPU: every translation compiles with NVRTC, goldens pin a few,
untranslatable code is a clear error, and the Python API validates like MLX.

NVRTC comes with requirements.txt (`nvidia-cuda-nvrtc`, also the `cuda` extra).
Running kernels on a GPU is `tests/metalsim/cuda/gpu_differential.py`'s job (see its docstring).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import cuda_launches
import mlx.core as mx
import numpy as np
import pytest

import metalsim
import metalsim.cuda
from metalsim.cuda import nvrtc
from metalsim.cuda.prelude import PRELUDE
from metalsim.cuda.runtime import matrix_defines
from metalsim.cuda.translate import ENTRY, Translation, rounded_bits, translate
from puzzles.catalog import SOLUTIONS, all_puzzles

GOLDEN = Path(__file__).parent / "golden"
needs_nvrtc = pytest.mark.skipif(not nvrtc.available(),
                                 reason="NVRTC is not installed (pip install -e '.[cuda]')")


def compile_all(launches: list[cuda_launches.Launch]) -> None:
    """Compile every distinct translation with the matrix switches the runtime would give it:
    those that share the switches together in one NVRTC program (each kernel in a namespace
    of its own, one prelude), and one by one where that fails, to name the kernel."""
    groups: dict[tuple[str, ...], list[tuple[str, Translation]]] = {}
    seen = set()
    for launch in launches:
        translation = translate(cuda_launches.generated(launch))
        if translation.source in seen:
            continue
        seen.add(translation.source)
        groups.setdefault(matrix_defines(translation), []).append((launch.label, translation))
    for defines, members in groups.items():
        opts = (*nvrtc.OPTIONS, *defines)
        parts = [PRELUDE]
        for i, (_, t) in enumerate(members):
            body = t.kernel_text.replace(ENTRY, f"{ENTRY}_{i}")
            body = body.replace("namespace metal {", f"namespace metal {{ namespace k{i} {{", 1)
            parts.append(body.replace("}  // namespace metal", "}}  // namespace metal"))
        try:
            nvrtc.compile_ptx("\n".join(parts), opts=opts)
        except nvrtc.NvrtcError:
            for label, t in members:
                try:
                    nvrtc.compile_ptx(t.source, opts=opts)
                except nvrtc.NvrtcError as error:
                    pytest.fail(f"{label}: NVRTC rejects the translation:\n{error}")
            raise


@needs_nvrtc
@pytest.mark.parametrize("chapter", sorted({p.chapter for p in all_puzzles()}))
def test_every_puzzle_solution_translation_compiles_with_nvrtc(chapter):
    launches = [lu for lu in cuda_launches.puzzle_launches(hidden=False)
                if any(p.chapter == chapter and f" {p.slug} " in lu.label
                       for p in all_puzzles())]
    assert launches
    compile_all(launches)


@needs_nvrtc
def test_every_real_kernel_translation_compiles_with_nvrtc_forward_and_backward():
    launches = cuda_launches.real_kernel_launches(1)
    # Every kernel that solutions/*.py builds (each `name="..."` it passes to the factory).
    built = {m for f in SOLUTIONS.glob("*.py") for m in re.findall(r'name="(\w+)"', f.read_text())}
    assert built and built == {lu.kernel.spec.name for lu in launches}
    compile_all(launches)


@needs_nvrtc
def test_mlx_docs_kernels_and_generated_kernels_compile_with_nvrtc():
    compile_all(cuda_launches.docs_launches() + list(cuda_launches.generated_launches(24, seed=1)))


@needs_nvrtc
def test_kernels_compile_to_ieee_float_code_without_flush_to_zero_or_contraction():
    """Metal's safe math, which the simulator reproduces: denormals kept, `a * b + c` rounded
    twice (CuPy's own compilation flushed denormals: 64 generated kernels disagreed)."""
    kernel = metalsim.metal_kernel("f", ["a"], ["out"], """
        uint i = thread_position_in_grid.x;
        out[i] = a[i] * a[i + 1] + a[i + 2] / 3.0f;
    """)
    gen = kernel._prepare((), dict(inputs=[mx.zeros(8)], output_shapes=[(4,)],
                                   output_dtypes=[mx.float32], grid=(4, 1, 1),
                                   threadgroup=(4, 1, 1))).gen
    ptx = nvrtc.compile_ptx(translate(gen).source, opts=nvrtc.options("safe"))
    assert "mul.rn.f32" in ptx and "div.rn.f32" in ptx
    assert ".ftz" not in ptx and "fma" not in ptx
    fast = nvrtc.compile_ptx(translate(gen).source, opts=nvrtc.options("fast"))
    assert ".ftz" in fast


@needs_nvrtc
def test_the_struct_tests_kernels_compile_with_nvrtc():
    """Structs with member functions, constructors, operators, templates and references."""
    launches = cuda_launches.struct_test_launches()
    assert len(launches) >= 80
    compile_all(launches)


BLOCK_GROUPS = ("steel gemm", "steel attention", "quantized")


@needs_nvrtc
@pytest.mark.parametrize("group", BLOCK_GROUPS)
def test_every_mlx_building_block_translation_compiles_with_nvrtc(group):
    """The kernels built from MLX's own steel GEMM, steel attention and quantized headers
    (`cuda_launches.building_block_launches`), each alone: their headers declare Metal's
    `fast`/`precise` overloads, which a kernel's own namespace (`compile_all`) would hide."""
    launches = [lu for lu in cuda_launches.building_block_launches()
                if lu.label.startswith(group)]
    assert len(launches) >= 5
    for launch in launches:
        translation = translate(cuda_launches.generated(launch),
                                include_dirs=launch.kernel.include_dirs)
        try:
            nvrtc.compile_ptx(translation.source,
                              opts=(*nvrtc.OPTIONS, *matrix_defines(translation)))
        except nvrtc.NvrtcError as error:
            pytest.fail(f"{launch.label}: NVRTC rejects the translation:\n{error}")


def test_the_building_blocks_are_all_in_one_of_the_compiled_groups():
    labels = [lu.label for lu in cuda_launches.building_block_launches()]
    assert len(labels) == 21
    assert all(label.startswith(BLOCK_GROUPS) for label in labels)


def _kernel_text(puzzle_number: int) -> str:
    launch = next(lu for lu in cuda_launches.puzzle_launches(hidden=False)
                  if lu.label.startswith(f"puzzle {puzzle_number:02d} "))
    return translate(cuda_launches.generated(launch)).kernel_text


@pytest.mark.parametrize("number", [1, 8, 14, 20, 22])
def test_translation_of_a_puzzle_solution_matches_its_golden_file(number):
    """map, threadgroup memory + barrier, simd_sum, simdgroup_matrix, atomics. Regenerate with
    METALSIM_UPDATE_GOLDEN=1 after a deliberate change, and review the diff."""
    path = GOLDEN / f"puzzle_{number:02d}.cu"
    text = _kernel_text(number)
    if os.environ.get("METALSIM_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()


def test_translation_turns_metal_constructs_into_their_cuda_forms():
    text = _kernel_text(8)   # threadgroup memory
    assert "__shared__ float" in text and "threadgroup_barrier(mem_flags::mem_threadgroup)" in text
    kernel = metalsim.metal_kernel("swz", ["a"], ["out"], """
        uint i = thread_position_in_grid.x;
        float4 v = float4(a[i], 1.0, 2.0h, 3);
        v.zyx = v.xyz;
        out[i] = v.w + dot(v.xy, v.zw) + 0.1;
    """)
    text = translate(kernel._prepare((), dict(
        inputs=[mx.zeros(8)], output_shapes=[(8,)], output_dtypes=[mx.float32],
        grid=(8, 1, 1), threadgroup=(8, 1, 1))).gen).kernel_text
    assert "swizzle_ref<2, 1, 0>(v) = swizzle<0, 1, 2>(v)" in text
    assert "swizzle<0, 1>(v)" in text and "swizzle<2, 3>(v)" in text
    assert "half::from_bits(0x4000)" in text     # 2.0h, exactly
    assert "0x1.999999999999ap-4f" not in text  # 0.1 is rounded to float, not double
    assert "0x1.99999a0000000p-4f" in text


def test_untranslatable_construct_is_a_compile_error_with_line_and_caret():
    kernel = metalsim.metal_kernel("st", ["a"], ["out"], """
        uint i = thread_position_in_grid.x;
        static int calls = 0;
        out[i] = a[i] + calls;
    """)
    gen = kernel._prepare((), dict(inputs=[mx.zeros(8)], output_shapes=[(8,)],
                                   output_dtypes=[mx.float32], grid=(8, 1, 1),
                                   threadgroup=(8, 1, 1))).gen
    with pytest.raises(metalsim.CompileError) as info:
        translate(gen)
    message = str(info.value)
    assert "cannot translate the static local variable 'calls'" in message
    assert info.value.line == 3
    assert "static int calls = 0;" in message and "^" in message


@pytest.mark.parametrize(("text", "kind", "bits"), [
    ("16777217.0f", "float", 0x4B800000),        # a tie: to even (NVRTC itself rounds up)
    ("16777217.000000001f", "float", 0x4B800001),
    ("1.0000000596046448f", "float", 0x3F800001),  # just above a tie
    ("0.1f", "float", 0x3DCCCCCD),
    ("1e-45f", "float", 0x00000001),               # the smallest denormal
    ("3.4028235e38f", "float", 0x7F7FFFFF),
    ("3.40282357e38f", "float", 0x7F800000),       # past max + half an ulp: infinity
    ("0x1.8p1f", "float", 0x40400000),
    ("65519.0h", "half", 0x7BFF),
    ("65520.0h", "half", 0x7C00),
    ("1.00390625bf", "bfloat", 0x3F80),            # a tie in bfloat: to even
])
def test_float_literals_are_rounded_once_to_nearest_even(text, kind, bits):
    assert rounded_bits(text, kind) == bits


def test_cuda_metal_kernel_validates_its_arguments_exactly_like_mlx():
    with pytest.raises(ValueError, match="Must specify at least one output"):
        metalsim.cuda.metal_kernel("k", ["a"], [], "out[0] = 1;")
    kernel = metalsim.cuda.metal_kernel("k", ["a"], ["out"], "out[0] = a[0];")
    assert isinstance(kernel, metalsim.cuda.CudaKernel)
    with pytest.raises(TypeError, match="incompatible function arguments"):
        kernel(inputs=[np.zeros(4, np.float32)], output_shapes=[(4,)],
               output_dtypes=[mx.float32], grid=(4, 1), threadgroup=(4, 1, 1))
    with pytest.raises(ValueError, match="Expected `inputs` to have size 1 but got size 2"):
        kernel(inputs=[mx.zeros(4), mx.zeros(4)], output_shapes=[(4,)],
               output_dtypes=[mx.float32], grid=(4, 1, 1), threadgroup=(4, 1, 1))


def test_patch_with_the_cuda_backend_installs_the_cuda_factory_and_restores_mlx():
    original = mx.fast.metal_kernel
    with metalsim.patch(backend="cuda"):
        kernel = mx.fast.metal_kernel(name="k", input_names=["a"], output_names=["out"],
                                      source="out[0] = a[0];")
        assert isinstance(kernel, metalsim.cuda.CudaKernel)
    assert mx.fast.metal_kernel is original
    with pytest.raises(ValueError, match="backend must be 'sim' or 'cuda'"):
        metalsim.patch(backend="metal")



def _grouped_mvmr_translation() -> Translation:
    """The grouped MVMR's launch at C = M = 64 (4 SIMD-groups, each doing 4 x 4 products per
    8 channels, a slice of 16 channels unrolled: 32 products, written as 16 pairs sharing
    their weight piece)."""
    from solutions import mvmr_grouped

    k, t, c, m = 27, 40, 64, 64
    rng = np.random.default_rng(0)
    a_idx = np.sort(rng.integers(0, k, t)).astype(np.int32)
    runs = np.searchsorted(a_idx, np.arange(k + 1)).astype(np.int32)
    kernel, args = mvmr_grouped.launch(
        mx.zeros((k, 1, c, m)), mx.zeros((8, 1, c)), mx.zeros(t, mx.int32),
        mx.zeros(t, mx.int32), mx.array(runs), 8, metalsim.metal_kernel)
    assert mvmr_grouped.tiles(t, k, c, m) == (64, 64, 16, 128)
    return translate(kernel._prepare((), args).gen)


def _grouped_mvmr_ptx() -> str:
    """Its PTX, with the options and matrix switches the runtime would use."""
    translation = _grouped_mvmr_translation()
    return nvrtc.compile_ptx(translation.source, opts=(
        *nvrtc.options("safe"), "-DMETALSIM_MAX_THREADS=128", *matrix_defines(translation)))


@needs_nvrtc
def test_the_grouped_mvmr_compiles_for_its_launch_with_tensor_core_products():
    """Each pair of 8x8x8 products sharing B is three m16n8k8 TF32 tensor-core products
    (3xTF32 for both) on operands loaded in the tensor cores' layout (the kernel never calls
    thread_elements(): no Metal-layout copy, no shuffle but the 3 broadcasts of the chunk's
    slot, first triplet and length); each loaded piece is split into its TF32 parts once, not
    once per product (per 8 channels 4 feature and 4 weight pieces, 2 elements, each split by
    one mask and one subtraction, without a conversion instruction or a test),
    and the accumulators keep the products' two halves apart, added only where the epilogue
    stores them (16 accumulators x 2 elements); the launch's 128 threads reach the PTX as
    .maxntid (registers are not capped at the 64 of a 1024-thread block), and the packed
    4-vector loads of the feature staging become 16-byte loads (behind an alignment test);
    the float weights, in whole tiles, are read piece by piece from device memory."""
    translation = _grouped_mvmr_translation()
    assert matrix_defines(translation) == ()
    assert "simdgroup_multiply_accumulate_pair(acc[i][j], fa[i], acc[i][j], " in (
        translation.kernel_text)
    ptx = _grouped_mvmr_ptx()
    assert ".maxntid 128" in ptx
    assert len(re.findall(r"\bmma\.sync\.aligned\.m16n8k8\.row\.col\.f32\.tf32", ptx)) == 16 * 3
    # each element's split: its high part masked to TF32, the rest subtracted; no cvt, no test
    assert len(re.findall(r"\band\.b32\s+%r\d+, %r\d+, -8192;", ptx)) == 2 * (4 + 4) * 2
    assert len(re.findall(r"\bsub\.rn\.f32", ptx)) == 2 * (4 + 4) * 2
    assert len(re.findall(r"\bcvt\.rn", ptx)) == 0
    assert len(re.findall(r"\bfma\.rn\.f32", ptx)) == 0
    assert len(re.findall(r"\badd\.rn\.f32", ptx)) == 16 * 2
    assert len(re.findall(r"\bshfl\.sync", ptx)) == 3
    # two feature vectors per thread and slice
    assert len(re.findall(r"\bld\.global\.v4\.[uf]32", ptx)) == 2


@needs_nvrtc
def test_exact_matrix_products_compile_to_fused_multiply_adds_in_k_order():
    """Inside exact_matrix_products(): 16 fused multiply-adds per lane and product after
    8 + 2 x 8 shuffles, no tensor-core instruction, no separate multiply (paired products
    run one after the other)."""
    with metalsim.cuda.exact_matrix_products():
        ptx = _grouped_mvmr_ptx()
    assert len(re.findall(r"\bmma\.sync", ptx)) == 0
    assert len(re.findall(r"\bfma\.rn\.f32", ptx)) == 32 * 16
    assert len(re.findall(r"\bmul\.rn\.f32", ptx)) == 0
    assert len(re.findall(r"\bshfl\.sync", ptx)) == 32 * 24 + 3


@needs_nvrtc
@pytest.mark.parametrize(("kind", "instruction"), [("half", "f16"), ("bfloat", "bf16")])
def test_half_and_bfloat_products_compile_to_one_tensor_core_product_each(kind, instruction):
    """Without thread_elements() the matrices stay in the tensor cores' layout, and a loaded
    operand comes with the column pairs a B operand needs: no shuffle at all."""
    kernel = metalsim.metal_kernel("hmm", ["a"], ["out"], f"""
        simdgroup_{kind}8x8 ma, mb;
        simdgroup_load(ma, a, 8);
        simdgroup_load(mb, a + 64, 8);
        simdgroup_multiply_accumulate(ma, ma, mb, ma);
        simdgroup_store(ma, out, 8);
    """)
    dtype = mx.float16 if kind == "half" else mx.bfloat16
    translation = translate(kernel._prepare((), dict(
        inputs=[mx.zeros(128, dtype)], output_shapes=[(64,)], output_dtypes=[dtype],
        grid=(32, 1, 1), threadgroup=(32, 1, 1))).gen)
    assert matrix_defines(translation) == ()
    ptx = nvrtc.compile_ptx(translation.source)
    assert len(re.findall(rf"\bmma\.sync\.aligned\.m16n8k8\.row\.col\.f32\.{instruction}\.",
                          ptx)) == 1
    assert len(re.findall(r"\bshfl\.sync", ptx)) == 0


@needs_nvrtc
@pytest.mark.parametrize(("use", "defines", "shuffles"), [
    ("float2 v = mc.thread_elements(); out[64 + lane] = v.x;", ("-DMETALSIM_SGM_ELEMENTS_READ",),
     2 + 2),
    ("mc.thread_elements()[1] = 2.0f;", ("-DMETALSIM_SGM_METAL_LAYOUT",), 2 * 8),
    ("if (lane == 3) { mc.thread_elements().x += 1.0f; }", ("-DMETALSIM_SGM_METAL_LAYOUT",),
     2 * 8),
])
def test_the_lane_layout_follows_what_the_kernel_does_with_thread_elements(use, defines,
                                                                          shuffles):
    """Read: a copy in Metal's layout follows every product (2 shuffles each); written: the
    matrices live in Metal's layout and every product shuffles its two operands, its
    accumulator and its result (8 shuffles)."""
    kernel = metalsim.metal_kernel("te", ["a"], ["out"], f"""
        uint lane = thread_index_in_simdgroup;
        simdgroup_float8x8 ma, mb, mc;
        simdgroup_load(ma, a, 8);
        simdgroup_load(mb, a + 64, 8);
        simdgroup_multiply(mc, ma, mb);
        {use}
        simdgroup_multiply_accumulate(mc, ma, mb, mc);
        simdgroup_store(mc, out, 8);
    """)
    translation = translate(kernel._prepare((), dict(
        inputs=[mx.zeros(128)], output_shapes=[(128,)], output_dtypes=[mx.float32],
        grid=(32, 1, 1), threadgroup=(32, 1, 1))).gen)
    assert matrix_defines(translation) == defines
    ptx = nvrtc.compile_ptx(translation.source, opts=(*nvrtc.OPTIONS, *defines))
    assert len(re.findall(r"\bshfl\.sync", ptx)) == shuffles
    assert len(re.findall(r"\bmma\.sync", ptx)) == 2 * 2


@needs_nvrtc
def test_loops_over_simdgroup_matrices_are_unrolled_and_keep_them_in_registers():
    """NVVM leaves a loop of tensor-core products rolled; the array of accumulators it
    indexes then lives in local memory. The translation asks for unrolling."""
    from solutions import gemm

    a = mx.zeros((2048, 2048))
    kernel, args = gemm.launch(a, a, metalsim.metal_kernel)
    translation = translate(kernel._prepare((), args).gen)
    assert translation.kernel_text.count("#pragma unroll") >= 4
    ptx = nvrtc.compile_ptx(translation.source, opts=(
        *nvrtc.options("safe"), "-DMETALSIM_MAX_THREADS=512", *matrix_defines(translation)))
    assert ".local" not in ptx


@needs_nvrtc
def test_a_conditional_between_simdgroup_matrices_compiles_with_nvrtc():
    kernel = metalsim.metal_kernel("pick", ["a"], ["out"], """
        simdgroup_float8x8 m = simdgroup_float8x8(1.0f);
        simdgroup_multiply(m, a[0] > 0 ? m : simdgroup_float8x8(2.0f), m);
        simdgroup_store(m, out);
    """)
    translation = translate(kernel._prepare((), dict(
        inputs=[mx.zeros(128)], output_shapes=[(64,)], output_dtypes=[mx.float32],
        grid=(32, 1, 1), threadgroup=(32, 1, 1))).gen)
    assert "? m : " in translation.kernel_text
    nvrtc.compile_ptx(translation.source)


PAIR_KERNEL = """
    simdgroup_float8x8 fa[2], wb[2], acc[2][2];
    thread simdgroup_float8x8& r = acc[1][0];
    uint i = 0, j = 1, k = a_shape[0] > 64 ? 1 : 0;
    for (uint q = 0; q < 2; ++q) {
        simdgroup_load(fa[q], a, 8, ulong2(0, 8 * q));
        simdgroup_load(wb[q], a, 8, ulong2(8 * q, 0), true);
        acc[q][0] = acc[q][1] = simdgroup_float8x8(0.0f);
    }
    CALLS
    for (uint q = 0; q < 4; ++q) {
        simdgroup_store(acc[q / 2][q % 2], out + 64 * q, 8);
    }
"""


@needs_nvrtc
@pytest.mark.parametrize(("calls", "paired"), [
    ("simdgroup_multiply_accumulate(acc[i][j], fa[i], wb[j], acc[i][j]);"
     "simdgroup_multiply_accumulate(acc[i + 1][j], fa[i + 1], wb[j], acc[i + 1][j]);", True),
    ("simdgroup_multiply_accumulate(acc[0][1], fa[0], wb[1], acc[0][1]);"
     "simdgroup_multiply_accumulate(acc[1][1], fa[1], wb[1], acc[1][1]);", True),
    # the second product reads the first's result (as A, as accumulator)
    ("simdgroup_multiply_accumulate(acc[0][0], fa[0], wb[0], acc[0][0]);"
     "simdgroup_multiply_accumulate(acc[1][0], acc[0][0], wb[0], acc[1][0]);", False),
    ("simdgroup_multiply_accumulate(acc[i][j], fa[0], wb[0], acc[i][j]);"
     "simdgroup_multiply_accumulate(acc[k][j], fa[1], wb[0], acc[k][j]);", False),
    # a reference may name the first's destination
    ("simdgroup_multiply_accumulate(acc[1][0], fa[0], wb[0], acc[1][0]);"
     "simdgroup_multiply_accumulate(acc[0][0], fa[1], wb[0], r);", False),
    # different B operands
    ("simdgroup_multiply_accumulate(acc[0][0], fa[0], wb[0], acc[0][0]);"
     "simdgroup_multiply_accumulate(acc[1][1], fa[1], wb[1], acc[1][1]);", False),
    ("simdgroup_multiply_accumulate(acc[0][0], fa[0], wb[i++], acc[0][0]);"
     "simdgroup_multiply_accumulate(acc[1][0], fa[1], wb[i++], acc[1][0]);", False),
])
def test_consecutive_products_sharing_b_are_paired_only_where_the_second_cannot_see_the_first(
        calls, paired):
    """Two float products sharing B, the first's destination provably none of the second's
    operands (different names declared as values, or subscripts a constant apart), run as
    three tensor-core products instead of four."""
    kernel = metalsim.metal_kernel("pair", ["a"], ["out"], PAIR_KERNEL.replace("CALLS", calls))
    args = dict(inputs=[mx.zeros(128)], output_shapes=[(256,)], output_dtypes=[mx.float32],
                grid=(32, 1, 1), threadgroup=(32, 1, 1))
    assert metalsim.simulate(kernel, **args).report.errors == []
    translation = translate(kernel._prepare((), args).gen)
    assert ("simdgroup_multiply_accumulate_pair(" in translation.kernel_text) == paired
    ptx = nvrtc.compile_ptx(translation.source)
    assert len(re.findall(r"\bmma\.sync", ptx)) == (3 if paired else 4)
