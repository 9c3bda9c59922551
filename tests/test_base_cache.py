"""The dequantised copy of the embedded model's base in the user's cache: one per release, made
again when it is damaged."""

from __future__ import annotations

import os
import shutil

import pytest

pytest.importorskip("torch")

from sfumato.model import lm_base


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "sfumato"


def _source():
    try:
        return lm_base.gguf_path()
    except lm_base.BaseMissing as error:
        pytest.skip(str(error))


def test_two_installs_of_one_release_share_a_copy_and_another_release_gets_its_own(tmp_path, cache):
    source = _source()
    first, second = tmp_path / "a" / source.name, tmp_path / "b" / source.name
    for copy in (first, second):
        copy.parent.mkdir()
        shutil.copyfile(source, copy)
    os.utime(second, (1_000_000, 1_000_000))  # installed at another time
    assert lm_base.dequantised_folder(first) == lm_base.dequantised_folder(second)
    with second.open("r+b") as file:  # another release: other bytes
        file.seek(os.path.getsize(second) - 10)
        file.write(b"0123456789")
    assert lm_base.dequantised_folder(first) != lm_base.dequantised_folder(second)


def test_a_damaged_copy_is_made_again_and_older_copies_are_removed(cache):
    source = _source()
    folder = lm_base.dequantised_folder(source)
    older = cache / f"{source.stem}-98362432-1796118374"  # named as earlier versions named it
    older.mkdir(parents=True)
    (older / "model.safetensors").write_bytes(b"old")
    from transformers import AutoTokenizer, LlamaConfig

    # a copy whose tokenizer and config read but whose weights do not (a bad disk block)
    AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name).save_pretrained(folder)
    LlamaConfig(hidden_size=8, intermediate_size=16, num_hidden_layers=1, num_attention_heads=1).save_pretrained(folder)
    (folder / "model.safetensors").write_bytes(b"\x00" * 100)
    model, tokenizer = lm_base.load_base()
    assert model.config.num_hidden_layers == 30 and tokenizer("def").input_ids
    assert (folder / "model.safetensors").stat().st_size > 500_000_000  # the whole base again
    assert not older.exists()
    assert [p.name for p in cache.iterdir() if not p.name.startswith(".")] == [folder.name]


@pytest.fixture()
def tiny_shipped(cache, tmp_path, monkeypatch, tiny_lm, smol_tokenizer):
    """A tiny base (as ``load_base``) and an adapter shipped for it (its path): (adapter, base)."""
    import peft
    import torch
    from transformers import LlamaForCausalLM

    def tiny_base(base=None):
        torch.manual_seed(0)
        return LlamaForCausalLM(tiny_lm.config).eval(), smol_tokenizer

    adapter = tmp_path / "adapter"
    lora = peft.LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)  # B not zero
    peft.get_peft_model(tiny_base()[0], lora).save_pretrained(adapter)
    source = tmp_path / "base.gguf"
    source.write_bytes(b"a release of the base")
    monkeypatch.setattr(lm_base, "gguf_path", lambda base=None: source)
    monkeypatch.setattr(lm_base, "load_base", tiny_base)
    monkeypatch.setattr(lm_base, "shipped_adapter", lambda: adapter)
    return adapter, tiny_base


def test_the_shipped_adapter_is_merged_once_and_then_read_from_the_cache(cache, monkeypatch, tiny_shipped, smol_tokenizer):
    import peft
    import torch

    adapter, tiny_base = tiny_shipped
    older = cache / f"{lm_base.MERGED_PREFIX}0123456789abcdef"  # merged with an earlier adapter
    older.mkdir(parents=True)

    merged, _ = lm_base.load_adapted()
    weights = {name: tensor.clone() for name, tensor in merged.state_dict().items()}
    base_q = tiny_base()[0].model.layers[0].self_attn.q_proj.weight
    assert not torch.equal(weights["model.layers.0.self_attn.q_proj.weight"], base_q)  # the adapter is in it
    folders = [p for p in cache.iterdir() if not p.name.startswith(".")]
    assert len(folders) == 1 and folders[0].name.startswith(lm_base.MERGED_PREFIX) and not older.exists()

    with monkeypatch.context() as blocked:  # a second start merges nothing: it reads the copy
        blocked.setattr(lm_base, "load_base", lambda base=None: pytest.fail("the base was read again"))
        blocked.setattr(peft.PeftModel, "from_pretrained", lambda *a, **k: pytest.fail("the adapter was merged again"))
        again, tokenizer = lm_base.load_adapted()
    assert all(torch.equal(again.state_dict()[name], tensor) for name, tensor in weights.items())
    assert tokenizer("def f():").input_ids == smol_tokenizer("def f():").input_ids

    (folders[0] / "model.safetensors").write_bytes(b"\x00" * 100)  # a damaged copy is merged again
    repaired, _ = lm_base.load_adapted()
    assert all(torch.equal(repaired.state_dict()[name], tensor) for name, tensor in weights.items())
    lm_base.load_adapted(adapter)  # a checkpoint under evaluation is merged in memory, not cached
    assert [p for p in cache.iterdir() if not p.name.startswith(".")] == folders


def test_a_start_packs_the_cached_copy_ahead_and_reads_the_layers_so_packed(cache, monkeypatch, tiny_shipped):
    """Where a start will read the float32 copy into the CPU form, its matrices are packed ahead
    (before transformers' modules are imported) and the model read holds those very layers; where
    no copy is cached yet, or bfloat16 pays, nothing is packed ahead."""
    from sfumato.model import lm_bfloat16, lm_cpu

    monkeypatch.setattr(lm_bfloat16, "bfloat16_pays", lambda: False)
    assert lm_base.packing_ahead() is None  # nothing cached yet: the first start merges
    lm_base.load_adapted()
    packing = lm_base.packing_ahead()
    assert isinstance(packing, lm_cpu.Packing)
    model, _ = lm_base.load_adapted(reduced=True, packing=packing)
    layers = [module for module in model.modules() if isinstance(module, lm_cpu.Float16Linear)]
    assert len(layers) == len(packing.result()) and {id(layer) for layer in layers} == {id(layer) for layer in packing.result().values()}
    monkeypatch.setattr(lm_bfloat16, "bfloat16_pays", lambda: True)
    assert lm_base.packing_ahead() is None
