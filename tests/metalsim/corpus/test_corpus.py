"""The corpus as a whole: which real kernels it holds, from which public repositories, and that
each fixture names where it was copied from."""

from corpus import ATTRIBUTION, FIXTURES

# Every kernel the corpus tests launch, by the name its project gives it (the `name=` of its
# mx.fast.metal_kernel call, or for a generated name, the fixed part), per fixture file.
KERNELS = {
    "ml-explore__mlx/fast_custom_kernel_tests.py": [
        'name="basic"', 'name="arg_test"', 'name="myexp" + str(contig)',
        'source=source_contig if contig else source', 'name="helper"',
        'out[elem] = 0.0;', 'out[elem] = 1.0;', 'out[e] = inp[e] * 2.0f;',
        'out[e] = inp[e] + 100.0f;', 'name="math_mode"', 'name="mixed_dtypes"'],
    "ml-explore__mlx/custom_metal_kernels.rst": ['name="myexp"', 'name="myexp_strided"'],
    "ml-explore__mlx-lm/gated_delta.py": [
        'suffix += "_vec"', 'suffix += "_mask"', "has_mask=False, vectorized=False",
        "has_mask=True, vectorized=True"],
    "ml-explore__mlx-lm/ssm.py": ['name="ssm_kernel"'],
    "ml-explore__mlx-lm/bitlinear_layers.py": ['name="bitlinear_matmul"'],
    "ml-explore__mlx-lm/losses.py": ['name="kl_forward"', 'name="kl_backward"',
                                     'name="js_forward"', 'name="js_backward"'],
    "ml-explore__mlx-lm/rwkv7_wkv7.py": ['name="wkv7_kernel"'],
    "ml-explore__mlx-examples/encodec_lstm.py": ['name="lstm"'],
    "Blaizzy__mlx-audio/encodec_lstm.py": ['name="lstm"'],
    "Blaizzy__mlx-audio/depthwise_conv1d_kernel.py": ['name="custom_depthwise_conv1d"'],
    "Blaizzy__mlx-audio/flash_attention_kernels.py": [
        'name="relu_squared"', 'name="fused_multiply_add"', 'name="qk_relu_squared"'],
    "Blaizzy__mlx-vlm/kernels.py": ['name="nearest_interpolation"',
                                    'name="bicubic_interpolation_antialias"',
                                    'name="grid_sample"'],
    # each run with pairing "half_split" and "even_odd", which builds different sources
    "Blaizzy__mlx-vlm/rope_utils.py": ['name=f"mrope_apply_{pairing}',
                                       'name=f"mrope_apply_{pairing}',
                                       'f"rotary_apply_{pairing}', 'f"rotary_apply_{pairing}'],
    "Blaizzy__mlx-vlm/turboquant_kernels.py": [
        'name="turboquant_pack_lowbit"', 'name="turboquant_unpack_lowbit"',
        'name="turboquant_mse_score"', 'name=f"turboquant_mse_score_tiled_{repeat_count}"',
        'name="turboquant_qjl_score"'],
}
KERNEL_COUNT = 42


def test_every_fixture_names_its_repository_path_commit_and_licence():
    files = sorted(p for p in FIXTURES.rglob("*") if p.is_file())
    assert files
    for path in files:
        head = path.read_text()[:600]
        assert all(a in head for a in ATTRIBUTION), path


def test_the_corpus_holds_at_least_40_real_kernels_from_at_least_5_repositories():
    for relpath, markers in KERNELS.items():
        text = (FIXTURES / relpath).read_text()
        missing = [m for m in markers if m not in text]
        assert not missing, f"{relpath}: {missing}"
    assert sum(len(m) for m in KERNELS.values()) == KERNEL_COUNT >= 40
    repositories = {relpath.split("/")[0] for relpath in KERNELS}
    assert len(repositories) >= 5, repositories
