"""The encoder's KV cache is reused between requests whose prompts start the same way."""

from __future__ import annotations

import pytest
import torch
from transformers.cache_utils import DynamicCache

from sfumato.model.api import InfillRequest
from sfumato.model.prompt_cache import PromptCache

PREFIX = "def mean(values):\n    total = sum(values)\n    return "


@pytest.fixture
def backend(tiny_backend):
    """The shared tiny backend with an empty prompt cache, recording what the encoder and decoder see."""
    tiny_backend.prompt_cache.clear()
    encoded: list[tuple[int, int]] = []
    first_logits: list[torch.Tensor] = []
    hooks = [
        tiny_backend.model.model.encoder.register_forward_pre_hook(
            lambda module, args, kwargs: encoded.append(tuple(kwargs["input_ids"].shape)), with_kwargs=True
        ),
        tiny_backend.model.register_forward_hook(lambda module, args, output: first_logits.append(output.logits.clone())),
    ]
    tiny_backend.encoded, tiny_backend.decoded = encoded, first_logits
    yield tiny_backend
    for hook in hooks:
        hook.remove()
    tiny_backend.prompt_cache.clear()


def infill(backend, prefix: str, n_alternatives: int = 1, seed: int = 3) -> str:
    backend.encoded.clear()
    backend.decoded.clear()
    request = InfillRequest(prefix=prefix, suffix="\n", max_new_tokens=12, seed=seed, n_alternatives=n_alternatives)
    final = None
    for drafts in backend.stream([request]):
        final = drafts
    return final[0].text


def prompt_length(backend, prefix: str) -> int:
    return len(backend.prompt_ids(InfillRequest(prefix=prefix, suffix="\n")))


def test_the_same_request_again_encodes_no_prompt_token_and_gives_the_same_text(backend):
    first = infill(backend, PREFIX)
    assert backend.encoded[0] == (1, prompt_length(backend, PREFIX))
    again = infill(backend, PREFIX)
    assert again == first
    prompt_calls = [shape for shape in backend.encoded if shape[1] != backend.canvas_length]
    assert prompt_calls == []  # only finished canvases are encoded, never the prompt
    assert backend.prompt_cache.reused_tokens == prompt_length(backend, PREFIX)


def test_a_longer_prefix_encodes_only_its_new_tokens_with_the_same_logits_as_a_fresh_prefill(backend):
    infill(backend, PREFIX)
    longer = PREFIX + "total / len(values)\n\ndef median(values):\n    "
    infill(backend, longer)
    reused = backend.prompt_cache.reused_tokens
    assert reused >= 8
    assert backend.encoded[0] == (1, prompt_length(backend, longer) - reused)
    reused_logits = backend.decoded[0]

    backend.prompt_cache.clear()
    infill(backend, longer)
    assert backend.encoded[0] == (1, prompt_length(backend, longer))
    torch.testing.assert_close(reused_logits, backend.decoded[0], atol=1e-4, rtol=1e-4)


def test_a_prompt_that_differs_from_its_start_is_encoded_whole(backend):
    infill(backend, PREFIX)
    other = "import os\n" + PREFIX
    infill(backend, other)
    assert backend.prompt_cache.reused_tokens == 0
    assert backend.encoded[0] == (1, prompt_length(backend, other))


def test_alternatives_share_the_cached_prompt(backend):
    infill(backend, PREFIX)
    infill(backend, PREFIX, n_alternatives=2)
    assert [shape for shape in backend.encoded if shape[1] != backend.canvas_length] == []
    assert backend.decoded[0].shape[0] == 2


def test_requests_with_different_prompts_in_one_batch_are_not_cached(backend):
    requests = [InfillRequest(prefix=PREFIX, suffix="\n", max_new_tokens=8, seed=1),
                InfillRequest(prefix="x = 1\n", suffix="\n", max_new_tokens=8, seed=1)]
    for _ in backend.stream(requests):
        pass
    infill(backend, PREFIX)
    assert backend.prompt_cache.reused_tokens == 0


def _sliding_cache(tokens: int, window: int) -> DynamicCache:
    from transformers.cache_utils import DynamicSlidingWindowLayer

    cache = DynamicCache()
    cache.layers = [DynamicSlidingWindowLayer(sliding_window=window)]
    cache.layers[0].update(torch.randn(1, 1, tokens, 4), torch.randn(1, 1, tokens, 4))
    return cache


def test_a_sliding_window_cache_past_its_window_is_reused_only_for_the_identical_prompt():
    prompt = list(range(100, 140))
    cache = PromptCache()
    cache.store(prompt, _sliding_cache(len(prompt), window=16))
    assert cache.lookup(prompt[:-4] + [1, 2, 3, 4], 1) == (None, 0)
    reused, n = cache.lookup(prompt, 1)
    assert n == len(prompt) and reused is not None


def test_a_sliding_window_cache_within_its_window_is_cut_back_to_the_shared_start():
    prompt = list(range(100, 130))
    cache = PromptCache()
    cache.store(prompt, _sliding_cache(len(prompt), window=64))
    reused, n = cache.lookup(prompt[:20] + [7, 7, 7], 2)
    assert n == 20
    assert reused.layers[0].keys.shape == (2, 1, 20, 4)
    assert reused.get_seq_length() == 20


def test_typing_at_the_cursor_of_a_long_document_keeps_the_prompt_start(backend):
    budget = backend.profile.context_tokens
    document = "".join(f"value_{i} = compute({i}, scale={i % 7})\n" for i in range(400))
    assert prompt_length(backend, document) <= budget
    before = backend.prompt_ids(InfillRequest(prefix=document, suffix="\n"))
    after = backend.prompt_ids(InfillRequest(prefix=document + "result = ", suffix="\n"))
    assert before[:budget // 2] == after[:budget // 2]
    infill(backend, document)
    infill(backend, document + "result = ")
    assert backend.prompt_cache.reused_tokens >= budget // 2
