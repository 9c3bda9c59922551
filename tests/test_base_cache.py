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
