"""--quantize: the checks before loading, and the memory estimate against real tiny models."""

from __future__ import annotations

import importlib.util

import pytest

from sfumato.model import quantization
from sfumato.model.api import EngineError
from sfumato.model.quantization import check_request, checkpoint_scheme, parse_quantize

BNB_NF4 = {"quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}}
TORCHAO_INT8 = {"quantization_config": {"quant_method": "torchao", "quant_type": {"default": {"_type": "Int8WeightOnlyConfig"}}}}


def test_quantize_choices():
    assert [parse_quantize(text) for text in (None, "auto", "none", "INT8", "int4", "nf4")] == ["auto", "auto", "none", "int8", "int4", "nf4"]
    with pytest.raises(EngineError, match="none, int8, int4, nf4"):
        parse_quantize("fp8")


@pytest.mark.parametrize(
    ("raw", "scheme"),
    [({}, None), (BNB_NF4, "nf4"), (TORCHAO_INT8, "int8"),
     ({"quantization_config": {"quant_method": "bitsandbytes", "load_in_8bit": True}}, "int8"),
     ({"quantization_config": {"quant_method": "gptq", "bits": 4}}, "int4"),
     ({"quantization_config": {"quant_method": "fp8"}}, "fp8")],
)
def test_a_folder_s_own_quantization_is_read_from_its_config(raw, scheme):
    assert checkpoint_scheme(raw) == scheme


@pytest.mark.parametrize(("quantize", "device"), [("nf4", "cpu"), ("int4", "cpu"), ("nf4", "mps"), ("int4", "mps")])
def test_four_bit_needs_cuda(quantize, device):
    with pytest.raises(EngineError, match=f"--quantize {quantize} needs a CUDA GPU .*on {device}.*int8"):
        check_request(quantize, device, {}, "m")


def test_int8_is_refused_on_mps_only():
    with pytest.raises(EngineError, match="not on Apple's MPS"):
        check_request("int8", "mps", {}, "m")
    check_request("int8", "cpu", {}, "m")  # torchao is installed for the tests


def test_an_already_quantized_folder_refuses_another_scheme_but_takes_none():
    with pytest.raises(EngineError, match="folder: the weights are already quantized \\(nf4\\); load it with --quantize none"):
        check_request("int8", "cuda", BNB_NF4, "folder")
    check_request("none", "cpu", TORCHAO_INT8, "folder")
    check_request("int8", "cpu", TORCHAO_INT8, "folder")  # the same scheme is no conflict


def test_a_missing_library_names_the_extra_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torchao" else real(name, *a))
    with pytest.raises(EngineError, match=r"--quantize int8 needs torchao: pip install 'sfumato\[gpu\]'"):
        check_request("int8", "cpu", {}, "m")
    with pytest.raises(EngineError, match="folder \\(quantized with torchao\\) needs torchao"):
        check_request("none", "cpu", TORCHAO_INT8, "folder")
    if real("bitsandbytes") is None:
        with pytest.raises(EngineError, match="needs bitsandbytes"):
            check_request("nf4", "cuda", {}, "m")


def _load_tiny(folder, quantize: str, dtype: str):
    import torch
    from transformers import DiffusionGemmaForBlockDiffusion

    options = quantization.transformers_options(quantize, diffusion_gemma=True, compute_dtype=dtype)
    return DiffusionGemmaForBlockDiffusion.from_pretrained(folder, dtype=getattr(torch, dtype), **options)


def _estimate_tiny(folder, quantize: str, dtype: str):
    from transformers import DiffusionGemmaConfig, DiffusionGemmaForBlockDiffusion

    from sfumato.model.memory import estimate_weights

    config = DiffusionGemmaConfig.from_pretrained(folder)
    return estimate_weights(lambda: DiffusionGemmaForBlockDiffusion._from_config(config), quantize, dtype)


@pytest.mark.parametrize(("quantize", "dtype"), [("none", "float32"), ("none", "bfloat16"), ("int8", "float32")])
def test_the_estimate_from_the_config_matches_the_loaded_model(tiny_model_dir, quantize, dtype):
    from sfumato.model.memory import measured_bytes

    estimate = _estimate_tiny(tiny_model_dir, quantize, dtype)
    real = measured_bytes(_load_tiny(tiny_model_dir, quantize, dtype))
    assert abs(estimate.bytes - real) <= 0.01 * real
    assert (estimate.quantized_parameters > 0) == (quantize != "none")


def test_int8_quantizes_exactly_the_weights_the_estimate_prices(tiny_model_dir):
    model = _load_tiny(tiny_model_dir, "int8", "float32")
    modules = dict(model.named_modules())
    stored_small = {name for name, param in model.named_parameters() if type(param.data).__name__ == "Int8Tensor"}
    priced_small = {
        name for name, param in model.named_parameters()
        if quantization.quantizes(name, modules[name.rpartition(".")[0]], "int8")
    }
    assert stored_small == priced_small
    assert any(".self_attn.q_proj." in name for name in stored_small)  # the tied text weights are included
    assert any(".experts." in name for name in stored_small)
    assert not any("embed_tokens" in name or "lm_head" in name for name in stored_small)


def test_the_released_model_fits_a_24_gb_card_only_at_int4():
    """Priced from its shapes alone: bitsandbytes leaves the experts (3-D weights) in bfloat16."""
    from transformers import DiffusionGemmaForBlockDiffusion

    from sfumato.model.memory import estimate_weights
    from sfumato.model.released import released_config

    config = released_config()
    sizes = {
        quantize: estimate_weights(lambda: DiffusionGemmaForBlockDiffusion._from_config(config), quantize, "bfloat16")
        for quantize in ("none", "int8", "int4", "nf4")
    }
    assert 25e9 < sizes["none"].parameters < 26.5e9  # "26B"
    assert sizes["none"].bytes > 48e9
    assert sizes["int4"].bytes < 18e9 < sizes["int8"].bytes < 0.6 * sizes["none"].bytes
    assert sizes["int4"].quantized_parameters > 0.9 * sizes["none"].parameters
    assert sizes["nf4"].bytes > 0.9 * sizes["none"].bytes  # only the small nn.Linear layers shrink
