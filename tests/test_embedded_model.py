"""The shipped default model: the base from its registry package, the adapter from git, loaded
through the engine as the editor loads it, writing held-out code and prose."""

from __future__ import annotations

import json

import pytest

from sfumato.model.api import InfillRequest
from sfumato.model.lm_base import ADAPTER_DIR, BaseMissing, gguf_path


@pytest.fixture(scope="module")
def backend():
    try:
        gguf_path()
    except BaseMissing as error:
        pytest.skip(str(error))
    from sfumato.model.loading import load_backend

    return load_backend("embedded", device="cpu")


def final_draft(engine, request):
    drafts = None
    for drafts in engine.stream([request]):
        pass
    return drafts[0]


def test_git_holds_only_a_small_float16_adapter():
    from safetensors import safe_open

    files = {f.name: f.stat().st_size for f in ADAPTER_DIR.iterdir()}
    assert {"adapter_config.json", "adapter_model.safetensors", "README.md"} <= set(files)
    assert sum(files.values()) < 60 * 2**20
    assert not any(name.endswith((".gguf", ".bin", ".pt")) for name in files)  # never the base, never pickle
    with safe_open(ADAPTER_DIR / "adapter_model.safetensors", "pt") as weights:
        dtypes = {str(weights.get_slice(name).get_dtype()) for name in weights.keys()}
    assert dtypes == {"F16"}
    assert json.loads((ADAPTER_DIR / "adapter_config.json").read_text())["peft_type"] == "LORA"


def test_it_loads_as_the_embedded_engine(backend):
    from sfumato.model.lm_bfloat16 import runs_bfloat16

    assert backend.info.backend == "lm-denoiser" and backend.info.name == "sfumato-lm"
    assert 100e6 < backend.info.parameters < 200e6
    # where this CPU multiplies bfloat16 faster, the layers below the output layer in it (2 bytes
    # each); elsewhere every linear layer with float16 weights, which fbgemm pads (SmolLM2's 576-wide
    # layers: 3.56 bytes a weight), beside the float32 input layer
    if runs_bfloat16(backend.model):
        assert backend.info.precision == "bfloat16 layers, float32 output layer" and 300e6 < backend.info.memory_bytes < 350e6
    else:
        assert backend.info.precision == "float16 weights (float32 sums)" and 500e6 < backend.info.memory_bytes < 600e6


def test_it_completes_a_common_line_in_one_line(backend):
    prefix = 'import sys\n\n\ndef main():\n    print(sys.argv)\n\n\nif __name__ == "__main__":\n    '
    draft = final_draft(backend, InfillRequest(prefix=prefix, suffix="\n", max_new_tokens=16, one_line=True, seed=0))
    assert draft.final and "\n" not in draft.text
    assert draft.text.strip() == "main()"


def test_it_writes_the_words_of_a_sentence_gap(backend):
    draft = final_draft(backend, InfillRequest(prefix="The function returns ", suffix=" if the file does not exist.\n",
                                               max_new_tokens=8, seed=0))
    assert draft.text.strip() and len(draft.text.split()) <= 6


def test_every_draft_is_a_pass_of_the_model(backend):
    passes = list(backend.stream([InfillRequest(prefix="def add(a, b):\n    return ", suffix="\n", max_new_tokens=12,
                                                one_line=True, seed=0)]))
    assert [drafts[0].batch_passes for drafts in passes] == list(range(1, len(passes) + 1))
    final = passes[-1][0]
    assert final.forward_passes == len(passes) and final.generated_tokens >= 1


def test_int8_is_there_when_asked_for_smaller_and_still_writes_the_line():
    try:
        gguf_path()
    except BaseMissing as error:
        pytest.skip(str(error))
    from sfumato.model.loading import load_backend

    int8 = load_backend("embedded", device="cpu", quantize="int8")
    assert int8.info.precision == "int8 (float32)" and 150e6 < int8.info.memory_bytes < 400e6
    prefix = 'import sys\n\n\ndef main():\n    print(sys.argv)\n\n\nif __name__ == "__main__":\n    '
    draft = final_draft(int8, InfillRequest(prefix=prefix, suffix="\n", max_new_tokens=16, one_line=True, seed=0))
    assert draft.text.strip() == "main()"
