"""Shared fixtures: a tiny random DiffusionGemma saved with the project's tokenizer, and a tiny
random causal LM with SmolLM2's tokenizer for the embedded engine.

Random weights write nonsense, so tests built on it assert behaviour (lengths, EOS handling,
determinism, cancel), never the quality of the text.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

REPO = Path(__file__).resolve().parent.parent
TOKENIZER_DIR = REPO / "resources" / "tokenizer"


@pytest.fixture(scope="session", autouse=True)
def cycles_collector(qapp):
    """Cycles collected on the Qt thread only, as in the application (app/ui_thread_gc.py): a test's
    worker thread never frees another test's editors, sessions or timers."""
    from sfumato.app.ui_thread_gc import UiThreadCollector

    collector = UiThreadCollector(qapp)
    collector.start()
    yield collector
    collector.stop()


@pytest.fixture(autouse=True)
def cycles_collected_after_each_test(cycles_collector):
    """A test that spins no Qt event loop still has its cycles collected when it ends."""
    yield
    cycles_collector.collect_due()


@pytest.fixture(scope="session")
def project_tokenizer():
    from sfumato.model.tokenizer import load_tokenizer

    return load_tokenizer(TOKENIZER_DIR)


def small_config(tokenizer, hidden_size: int, num_layers: int, num_heads: int, head_dim: int,
                 intermediate_size: int, canvas_length: int):
    """A DiffusionGemma config at test size, with ids taken from ``tokenizer``. The released
    checkpoints are 26B mixture-of-experts models; this is the same class scaled down. The class
    always builds a vision tower, so it gets the smallest one that validates; MoE is required by
    the config, and one expert with top-1 routing makes it a plain MLP in cost."""
    from transformers import DiffusionGemmaConfig, DiffusionGemmaTextConfig, Gemma4VisionConfig

    from sfumato.model.tokenizer import BOI, EOI, IMAGE

    text = DiffusionGemmaTextConfig(
        vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=intermediate_size,
        num_hidden_layers=num_layers, num_attention_heads=num_heads, num_key_value_heads=max(1, num_heads // 2),
        head_dim=head_dim, global_head_dim=head_dim, max_position_embeddings=8192, sliding_window=512,
        layer_types=["sliding_attention"] * (num_layers - 1) + ["full_attention"],
        num_experts=1, top_k_experts=1, moe_intermediate_size=intermediate_size // 4,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.bos_token_id,
    )
    vision = Gemma4VisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=1,
                                num_key_value_heads=1, head_dim=16, position_embedding_size=64)
    return DiffusionGemmaConfig(
        text_config=text, vision_config=vision, canvas_length=canvas_length,
        boi_token_id=tokenizer.convert_tokens_to_ids(BOI), eoi_token_id=tokenizer.convert_tokens_to_ids(EOI),
        image_token_id=tokenizer.convert_tokens_to_ids(IMAGE),
    )


def build_tiny_model(folder: Path, tokenizer, canvas_length: int = 16, noise: str = "mask", seed: int = 0) -> Path:
    """Save a ~0.7M-parameter DiffusionGemma with ``tokenizer`` and a FIM profile to ``folder``."""
    import torch
    from transformers import DiffusionGemmaForBlockDiffusion
    from transformers.models.diffusion_gemma.generation_diffusion_gemma import (
        DiffusionGemmaGenerationConfig,
        EntropyBoundSamplerConfig,
    )

    torch.manual_seed(seed)
    config = small_config(
        tokenizer, hidden_size=64, num_layers=2, num_heads=2, head_dim=32, intermediate_size=128,
        canvas_length=canvas_length,
    )
    model = DiffusionGemmaForBlockDiffusion(config)
    model.generation_config = DiffusionGemmaGenerationConfig(
        max_denoising_steps=8, sampler_config=EntropyBoundSamplerConfig(entropy_bound=0.5),
        t_min=0.4, t_max=0.8, stability_threshold=1, confidence_threshold=0.005,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.bos_token_id,
    )
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    (folder / "sfumato.json").write_text(
        json.dumps({"format": 1, "prompt_layout": "fim", "canvas_noise": noise, "context_tokens": 512})
    )
    return folder


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, project_tokenizer) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"), project_tokenizer)


@pytest.fixture(scope="session")
def smol_tokenizer():
    """SmolLM2's tokenizer, read from the installed base package (skipped without it)."""
    from transformers import AutoTokenizer

    from sfumato.model.lm_base import BaseMissing, gguf_path

    try:
        path = gguf_path()
    except BaseMissing as error:
        pytest.skip(str(error))
    return AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)


@pytest.fixture(scope="session")
def tiny_lm(smol_tokenizer):
    """A tiny random Llama causal LM with SmolLM2's vocabulary, for the embedded engine's loop."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(smol_tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True)
    return LlamaForCausalLM(config).eval()


@pytest.fixture
def read_queries(tiny_lm):
    """Reads a prompt causally, then queries (``ids``, ``offsets``, and ``mask``: which query sees
    which) that all see the whole prompt, as the engine's one-pass scorings do: logits [P + L, V]."""
    import torch

    def read(prompt: list[int], q):
        p = len(prompt)
        mask = torch.zeros(p + len(q.ids), p + len(q.ids), dtype=torch.bool)
        mask[:p, :p] = torch.tril(torch.ones(p, p, dtype=torch.bool))
        mask[p:, :p] = True
        mask[p:, p:] = q.mask
        with torch.no_grad():
            return tiny_lm(input_ids=torch.tensor([prompt + q.ids]), attention_mask=mask[None, None],
                           position_ids=torch.tensor([list(range(p)) + [p + o for o in q.offsets]])).logits[0]
    return read


@pytest.fixture(scope="session")
def tiny_backend(tiny_model_dir):
    from sfumato.model.loading import load_backend

    return load_backend(str(tiny_model_dir), device="cpu")


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory, project_tokenizer) -> Path:
    """A tiny random Llama with the project's tokenizer and a chat template (for ``transformers serve``)."""
    from remote_servers import build_tiny_llama

    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"), project_tokenizer)


@pytest.fixture(scope="session")
def transformers_server(tiny_llama_dir, tmp_path_factory):
    """A real ``transformers serve`` on 127.0.0.1 serving ``tiny_llama_dir`` (see remote_servers.py)."""
    from remote_servers import serving

    with serving(tiny_llama_dir, tmp_path_factory.mktemp("serve") / "server.log") as server:
        yield server


@pytest.fixture
def replay_server():
    """A scripted loopback HTTP server (see remote_servers.ReplayServer)."""
    from remote_servers import ReplayServer

    server = ReplayServer()
    yield server
    server.stop()


@pytest.fixture
def tls_replay_server(tmp_path):
    """A scripted server behind TLS with a self-signed certificate (which clients must refuse)."""
    from remote_servers import ReplayServer, self_signed_certificate

    server = ReplayServer(certificate=self_signed_certificate(tmp_path))
    yield server
    server.stop()
