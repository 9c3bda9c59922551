"""The fence around transformers' internals: the only module that calls its private API or reaches
into a model's submodules (``model.model.encoder``, ``model.model.decoder``).

``DiffusionGemmaForBlockDiffusion.generate()`` runs its whole loop and reports only argmax drafts,
so the engine (``sfumato.model.diffusion_gemma``) drives the loop itself from the library's parts. Those
parts are private, so this module is written against one version of the library's
``generation_diffusion_gemma.py`` (the same in transformers 5.24 and 5.25; ``pyproject.toml`` caps it):

* ``_prepare_generation_config``, ``_prepare_cache_for_generation``, ``_prepare_logits_processor``,
  ``_prepare_sampler``, ``_prepare_encoder_inputs`` and ``_prepare_denoiser_inputs`` are called as
  ``generate()`` calls them;
* ``denoising_pass`` mirrors ``_denoising_step`` (decoder, logits processors, sample, accept,
  renoise, early stop, self-conditioning, in that order), and ``accept_lowest_entropy`` and
  ``StableAndConfident`` mirror ``EntropyBoundSampler.accept_canvas`` and
  ``StableAndConfidentStoppingCriteria`` from entropies computed once per pass.

The contract test (``tests/test_diffusion_gemma_contract.py``) holds this to the library: with the
library's way of drawing tokens (``draw_like_library``), a seeded plain infill gives the same text
as ``generate()``. A library upgrade that changes the loop's meaning fails that test, not a user.

Outside the loop: ``from_config`` (``_from_config``) for the memory estimate, and ``called_parts`` for
the CPU's thread count (``sfumato.model.cpu_threads``).

Shapes: B rows, L = canvas length, V = vocabulary.
"""

from __future__ import annotations

import torch
from transformers.models.diffusion_gemma.generation_diffusion_gemma import (
    EntropyBoundSampler,
    EntropyBoundSamplerConfig,
)


def generation_config(model, steps: int | None, entropy_bound: float | None):
    """The model's generation config with the library's defaults filled in, and a request's overrides."""
    config, _ = model._prepare_generation_config(None)
    if steps is not None:
        config.max_denoising_steps = steps
    if entropy_bound is not None:
        config.sampler_config = EntropyBoundSamplerConfig(entropy_bound=float(entropy_bound))
    return config


def new_cache(model, config, batch_size: int, max_length: int):
    return model._prepare_cache_for_generation(config, batch_size, max_length)


def logits_processors(model, config, first: list):
    """The library's processors (its temperature schedule) after ours in ``first``, as ``generate()``
    orders a caller's processors before its own."""
    processors = model._prepare_logits_processor(config, None)
    for processor in reversed(first):
        processors.insert(0, processor)
    return processors


def sampler(model, config, mask_id: int | None = None) -> EntropyBoundSampler:
    """The library's entropy-bound sampler; with ``mask_id``, one whose noise is that token."""
    if mask_id is None:
        return model._prepare_sampler(config)
    return MaskNoiseSampler(
        config.sampler_config, model.config.canvas_length, model.config.text_config.vocab_size,
        config.max_denoising_steps, mask_id,
    )


def early_stop(config) -> StableAndConfident | None:
    if config.stability_threshold is None or config.confidence_threshold is None:
        return None
    return StableAndConfident(config.stability_threshold, config.confidence_threshold)


def from_config(model_class, config):
    """``model_class`` built from ``config`` alone, as ``from_pretrained`` builds it before reading
    weights (on the ``meta`` device: the memory estimate, ``sfumato.model.memory``)."""
    return model_class._from_config(config)


def called_parts(model) -> tuple[torch.nn.Module, torch.nn.Module]:
    """The submodules the engine calls: the encoder on its own (``encode``), the decoder through the model."""
    return model.model.encoder, model.model.decoder


def encode(model, input_ids, attention_mask, position_ids, cache, is_prefill: bool):
    """Run the encoder over ``input_ids`` (the prompt, or the last canvas) into ``cache``; the new cache."""
    encoder_inputs, encoder_mask = model._prepare_encoder_inputs(
        input_ids=input_ids, attention_mask=attention_mask, encoder_position_ids=position_ids,
        cache=cache, is_prefill=is_prefill, canvas_length=model.config.canvas_length, batch_size=input_ids.shape[0],
    )
    return model.model.encoder(
        input_ids=encoder_inputs, attention_mask=encoder_mask, cache=cache, position_ids=position_ids
    ).cache


def start_denoising(model, decoder_attention_mask, cache, sampler, stopping, start: torch.LongTensor):
    """(canvas, self-conditioning logits, decoder masks, done) for a canvas starting at ``start``.

    The library draws a fresh noise canvas even when given one (a default argument evaluated
    eagerly), so this consumes the random stream exactly as ``generate()`` given ``decoder_input_ids``.
    """
    return model._prepare_denoiser_inputs(
        decoder_attention_mask=decoder_attention_mask, cache=cache, sampler=sampler,
        diffusion_stopping_criteria=stopping, batch_size=start.shape[0], device=start.device,
        model_kwargs={"decoder_input_ids": start},
    )


def denoising_pass(model, canvas, argmax, self_conditioning, done, cur_step, sampler, logits_processor, stopping,
                   inputs: dict, draw):
    """One denoising pass, in the order of the library's ``_denoising_step``, with two differences
    that leave the result's distribution unchanged:

    * tokens are drawn by ``draw`` from the probabilities: the engine's ``sample_tokens`` inverts the
      cumulative distribution at one uniform number per position instead of ``torch.multinomial``
      over the full vocabulary (32 x 8192 logits on this CPU: multinomial ~11 ms, the inverse CDF
      0.25 ms); ``draw_like_library`` is the library's own draw, for the contract test;
    * the distribution and its entropies are computed once and shared by sampling, acceptance,
      the early stop and the drafts' confidences; the library's sampler and stop each build a
      ``Categorical`` (~1 ms each).

    Rows already ``done`` keep their state whether or not an early stop is configured.
    Returns (canvas, argmax, self-conditioning logits, probabilities, done).
    """
    logits = model(decoder_input_ids=canvas, self_conditioning_logits=self_conditioning, **inputs).logits
    logits = logits_processor(None, logits, cur_step=cur_step)  # (B, L, V)
    probs, entropy = distribution(logits)
    denoised = draw(probs)
    new_argmax = logits.argmax(dim=-1)
    accepted = accept_lowest_entropy(sampler, canvas, denoised, entropy)
    new_canvas = sampler.renoise_canvas(accepted, cur_step)
    if done.any():  # rows that already stopped keep their state
        new_argmax = torch.where(done[:, None], argmax, new_argmax)
        new_canvas = torch.where(done[:, None], canvas, new_canvas)
        logits = torch.where(done[:, None, None], self_conditioning, logits)
        probs = torch.where(done[:, None, None], torch.softmax(self_conditioning.float(), dim=-1), probs)
        # and accept nothing new: the noise still standing in a frozen canvas must not be pinned
        sampler.accepted_token_mask = sampler.accepted_token_mask & ~done[:, None]
    if stopping is not None:
        done = done | stopping(new_argmax, entropy)
    return new_canvas, new_argmax, logits.to(model.model.decoder.embed_tokens.weight.dtype), probs, done


class MaskNoiseSampler(EntropyBoundSampler):
    """Entropy-bound acceptance as in the library; noise is the ``<mask>`` token (absorbing diffusion)."""

    def __init__(self, config, canvas_length: int, vocab_size: int, max_denoising_steps: int, mask_id: int):
        super().__init__(config, canvas_length, vocab_size, max_denoising_steps)
        self.mask_id = mask_id

    def initialize_canvas(self, batch_size: int, device: torch.device) -> torch.LongTensor:
        return torch.full((batch_size, self.canvas_length), self.mask_id, dtype=torch.long, device=device)


def distribution(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(probabilities (..., V) in float32, entropy (...) in nats) of softmax(logits); suppressed
    tokens (logit -inf) count as probability 0, as in ``torch.distributions.Categorical``."""
    log_probs = torch.log_softmax(logits.float(), dim=-1)
    probs = log_probs.exp()
    entropy = -(probs * log_probs.clamp_min(torch.finfo(torch.float32).min)).sum(dim=-1)
    return probs, entropy


def accept_lowest_entropy(sampler: EntropyBoundSampler, current: torch.LongTensor, denoised: torch.LongTensor,
                          entropy: torch.Tensor) -> torch.LongTensor:
    """The library's entropy-bound acceptance (``EntropyBoundSampler.accept_canvas``) from entropies
    already computed: per row, the k lowest-entropy positions whose summed entropy less its largest
    term is within the bound. Sets ``sampler.accepted_token_mask`` as the library does."""
    ordered, order = torch.sort(entropy, dim=-1)
    chosen = torch.cumsum(ordered, dim=-1) - ordered <= sampler.entropy_bound
    sampler.accepted_token_mask = torch.zeros_like(chosen).scatter(-1, order, chosen)
    return torch.where(sampler.accepted_token_mask, denoised, current)


class StableAndConfident:
    """The library's stable-and-confident early stop (``StableAndConfidentStoppingCriteria``), fed
    the pass's entropies: a row stops once its argmax canvas has not changed for ``stability``
    passes and its mean entropy is below ``confidence``."""

    def __init__(self, stability: int, confidence: float):
        self.stability = stability
        self.confidence = confidence
        self.history: torch.LongTensor | None = None  # (stability, B, L) the last argmax canvases

    def reset(self) -> None:
        self.history = None

    def __call__(self, argmax: torch.LongTensor, entropy: torch.Tensor) -> torch.BoolTensor:
        if self.stability == 0:
            stable = torch.ones(argmax.shape[0], dtype=torch.bool, device=argmax.device)
        else:
            if self.history is None:
                self.history = torch.full((self.stability, *argmax.shape), -1, dtype=argmax.dtype, device=argmax.device)
            stable = (self.history == argmax[None]).all(dim=-1).all(dim=0)
            self.history = torch.roll(self.history, shifts=-1, dims=0)
            self.history[-1] = argmax
        return stable & (entropy.mean(dim=-1) < self.confidence)


def sample_tokens(probs: torch.Tensor) -> torch.LongTensor:
    """One token per position (..., V) -> (...), drawn from the probabilities ``probs`` by inverse CDF."""
    cdf = probs.cumsum(dim=-1)
    uniform = torch.rand(cdf.shape[:-1], device=cdf.device).clamp_min(1e-7).unsqueeze(-1) * cdf[..., -1:]
    return torch.searchsorted(cdf, uniform).squeeze(-1).clamp_max(cdf.shape[-1] - 1)


def draw_like_library(probs: torch.Tensor) -> torch.LongTensor:
    """(B, L, V) -> (B, L) drawn as ``_denoising_step`` draws: ``torch.multinomial`` per position,
    consuming the random stream as ``generate()`` does."""
    batch, length, vocab = probs.shape
    return torch.multinomial(probs.view(-1, vocab), num_samples=1).view(batch, length)
