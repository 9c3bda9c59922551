"""The engine's DiffusionGemma loop against the library's own ``generate()``.

``sfumato.model.diffusion_gemma_library`` drives the library's private generation parts; if an upgrade
changes what they mean, the engine and ``generate()`` stop agreeing here. The engine draws tokens
by inverse CDF, which uses the random stream differently from the library's ``multinomial``, so it
is switched to the library's draw; everything else is the engine as the editor runs it.
"""

from __future__ import annotations

import pytest
import torch
from conftest import build_tiny_model
from transformers.generation import LogitsProcessorList, SuppressTokensLogitsProcessor
from transformers.models.diffusion_gemma.generation_diffusion_gemma import EntropyBoundSampler

from sfumato.model.api import InfillRequest
from sfumato.model.diffusion_gemma_library import draw_like_library
from sfumato.model.loading import load_backend
from sfumato.model.token_text import drop_incomplete_tail, token_bytes_table
from sfumato.model.tokenizer import decode_ids
from sfumato.model.untrusted_text import clean_model_text

STEPS = 8


@pytest.fixture(scope="module")
def uniform_backend(tmp_path_factory, project_tokenizer):
    """A tiny random DiffusionGemma with the library's uniform noise, drawing tokens as the library does."""
    folder = build_tiny_model(tmp_path_factory.mktemp("uniform"), project_tokenizer, noise="uniform")
    backend = load_backend(str(folder), device="cpu")
    backend.draw_tokens = draw_like_library
    return backend


def library_text(backend, request: InfillRequest) -> str:
    """``generate()``'s text for ``request``: same prompt, seed, steps and banned control tokens."""
    model, tokenizer = backend.model, backend.tokenizer
    prompt = torch.tensor([backend.prompt_ids(request)])
    config = model.generation_config
    ends = {tokenizer.eos_token_id, tokenizer.pad_token_id}
    banned = sorted(set(tokenizer.all_special_ids) - ends)
    torch.manual_seed(request.seed)
    # The engine starts each canvas from one it draws itself (a rewrite pins tokens in it); for
    # plain infill that is the library sampler's noise, handed to generate() as its start.
    sampler = EntropyBoundSampler(config.sampler_config, model.config.canvas_length, model.config.text_config.vocab_size, STEPS)
    start = sampler.initialize_canvas(1, prompt.device)
    with torch.inference_mode():
        out = model.generate(
            prompt, max_new_tokens=request.max_new_tokens, max_denoising_steps=STEPS, decoder_input_ids=start,
            logits_processor=LogitsProcessorList([SuppressTokensLogitsProcessor(banned)]),
        )
    ids = []
    for token_id in out.sequences[0, prompt.shape[1] :].tolist():
        if token_id in ends:
            break
        ids.append(token_id)
    return decode_ids(tokenizer, drop_incomplete_tail(token_bytes_table(tokenizer), ids))


@pytest.mark.parametrize("seed", [3, 11])
def test_plain_infill_gives_the_text_of_the_librarys_generate(uniform_backend, seed):
    request = InfillRequest(
        prefix="def area(width, height):\n    return ", suffix="\n\nprint(area(2, 3))\n",
        max_new_tokens=uniform_backend.canvas_length, steps=STEPS, seed=seed,
    )
    *_, (final,) = uniform_backend.stream([request])
    expected = library_text(uniform_backend, request)
    assert final.final and final.forward_passes == STEPS  # random weights never meet the early stop
    assert len(expected) > 0  # the comparison is not between two empty texts
    assert final.text == clean_model_text(expected)  # the same text, controls dropped (model/untrusted_text.py)
