"""The weighted mean of two adapters (``sfumato.model.training.blend``)."""

import copy
import json

import pytest

from sfumato.model.training import blend


def _adapter(tiny_lm, folder, rank, alpha, seed, record):
    import torch
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(seed)
    model = get_peft_model(copy.deepcopy(tiny_lm), LoraConfig(r=rank, lora_alpha=alpha, target_modules=["q_proj", "down_proj"],
                                                              init_lora_weights=False))
    model.save_pretrained(folder)
    (folder / "training.json").write_text(json.dumps(record))
    return folder


def _merged(tiny_lm, adapter):
    from peft import PeftModel

    return PeftModel.from_pretrained(copy.deepcopy(tiny_lm), adapter).merge_and_unload().state_dict()


def test_a_blend_adds_the_weighted_mean_of_both_adapters_changes(tiny_lm, tmp_path):
    """Two adapters of different ranks and scales: every merged weight of the blend is the base's plus
    (1 - w) of the first's change plus w of the second's (to float16's precision), and the record keeps both."""
    import torch

    a = _adapter(tiny_lm, tmp_path / "a", 4, 8, 1, {"step": 10, "tokens": 1000})
    b = _adapter(tiny_lm, tmp_path / "b", 6, 12, 2, {"step": 3, "tokens": 500})
    config, weights, record = blend.blended(a, b, 0.25)
    blend.write(tmp_path / "ab", config, weights, record)
    base, first, second, mixed = (tiny_lm.state_dict(), _merged(tiny_lm, a), _merged(tiny_lm, b), _merged(tiny_lm, tmp_path / "ab"))
    changed = 0
    for name, weight in base.items():
        expected = weight + 0.75 * (first[name] - weight) + 0.25 * (second[name] - weight)
        assert torch.allclose(mixed[name], expected, atol=2e-3), name
        changed += not torch.allclose(first[name], second[name], atol=1e-3)
    assert changed == 4  # q_proj and down_proj of both layers
    assert config["r"] == 10
    record = json.loads((tmp_path / "ab" / "training.json").read_text())
    assert record["blend"] == {"weight": 0.25, "a": {"step": 10, "tokens": 1000}, "b": {"step": 3, "tokens": 500}}


def test_adapters_of_different_bases_or_modules_or_a_weight_outside_0_1_are_refused(tiny_lm, tmp_path):
    from peft import LoraConfig, get_peft_model

    a = _adapter(tiny_lm, tmp_path / "a", 4, 8, 1, {"step": 1})
    gemma = _adapter(tiny_lm, tmp_path / "g", 4, 8, 2, {"step": 1, "base": "gemma3-270m"})
    other = tmp_path / "other"
    get_peft_model(copy.deepcopy(tiny_lm), LoraConfig(r=4, target_modules=["k_proj"])).save_pretrained(other)
    for b, weight in ((gemma, 0.5), (other, 0.5), (a, 1.5)):
        with pytest.raises(ValueError):
            blend.blended(a, b, weight)
