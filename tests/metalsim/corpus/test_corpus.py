"""The corpus as a whole: the public MLX packages it runs, installed at the versions
requirements-test.txt pins, and the real kernels their installed modules hold."""

import importlib.metadata
import re
from pathlib import Path

import pytest
from installed import import_fresh, installed_source

REQUIREMENTS = Path(__file__).resolve().parents[3] / "requirements-test.txt"
PACKAGES = ("mlx-lm", "mlx-vlm", "mlx-audio")

# Every kernel the corpus tests launch, by the name its package gives it (the `name=` of its
# mx.fast.metal_kernel call, or for a generated name, the fixed part), per installed module.
KERNELS = {
    "mlx_lm.models.gated_delta": ['suffix += "_vec"', 'suffix += "_mask"',
                                  "has_mask=False, vectorized=False",
                                  "has_mask=True, vectorized=True"],
    "mlx_lm.models.ssm": ['name="ssm_kernel"'],
    "mlx_lm.models.bitlinear_layers": ['name="bitlinear_matmul"'],
    "mlx_lm.tuner.losses": ['name="kl_forward"', 'name="kl_backward"', 'name="js_forward"',
                            'name="js_backward"'],
    "mlx_lm.models.rwkv7": ['name="wkv7_kernel"'],
    "mlx_audio.codec.models.encodec.encodec": ['name="lstm"'],
    "mlx_audio.sts.models.mossformer2_se.depthwise_conv1d_kernel": [
        'name="custom_depthwise_conv1d"'],
    "mlx_audio.sts.models.mossformer2_se.flash_attention_kernels": [
        'name="relu_squared"', 'name="fused_multiply_add"', 'name="qk_relu_squared"'],
    "mlx_vlm.models.kernels": ['name="nearest_interpolation"',
                               'name="bicubic_interpolation_antialias"', 'name="grid_sample"'],
    # each run with pairing "half_split" and "even_odd", which builds different sources
    "mlx_vlm.models.rope_utils": ['name=f"mrope_apply_{pairing}', 'name=f"mrope_apply_{pairing}',
                                  'f"rotary_apply_{pairing}', 'f"rotary_apply_{pairing}'],
    "mlx_vlm.turboquant": ['name="turboquant_pack_lowbit"', 'name="turboquant_unpack_lowbit"',
                           'name="turboquant_mse_score"',
                           'name=f"turboquant_mse_score_tiled_{repeat_count}"',
                           'name="turboquant_qjl_score"'],
}


def pins() -> dict[str, str]:
    return dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$", REQUIREMENTS.read_text(), re.M))


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_is_installed_at_the_version_requirements_test_pins(package):
    assert importlib.metadata.version(package) == pins()[package]


def test_the_installed_modules_hold_the_28_kernels_the_corpus_runs_from_3_packages():
    for module, markers in KERNELS.items():
        text = installed_source(module)
        missing = [m for m in markers if m not in text]
        assert not missing, f"{module}: {missing}"
        assert "mx.fast.metal_kernel" in text or "from mlx.core.fast import metal_kernel" in text
    assert sum(len(m) for m in KERNELS.values()) == 28
    assert {module.split(".")[0] for module in KERNELS} == {"mlx_lm", "mlx_vlm", "mlx_audio"}


def test_a_package_that_is_not_installed_is_named_with_the_command_that_installs_it():
    with pytest.raises(ModuleNotFoundError, match="pip install --no-deps -r requirements-test"):
        import_fresh("no_such_mlx_package.kernels")
