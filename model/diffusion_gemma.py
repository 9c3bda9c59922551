"""The DiffusionGemma backend: infill and rewrite with transformers' block-diffusion model.

``generate()`` runs the whole loop and reports only argmax drafts, so the editor could neither
see which tokens the sampler accepted nor cancel between passes, and a rewrite could not keep
tokens fixed. This module therefore drives the loop itself from the library's own parts (the
encoder prefill and canvas masks, the temperature schedule, the entropy-bound sampler, the
stopping criteria and self-conditioning), reached only through ``sfumato.model.diffusion_gemma_library``,
which composes each pass as the library's ``_denoising_step`` does. Two small additions:

* ``PinnedTokens``, a logits processor that forces chosen canvas positions to chosen tokens:
  the untouched part of a rewrite, and, for absorbing-mask models, tokens already accepted.
* ``MaskNoiseSampler`` (in the library module), the library's entropy-bound sampler with
  ``<mask>`` instead of uniform random tokens as noise, for models trained with absorbing-mask
  corruption (the embedded one).

Shapes: B rows (requests x alternatives), L = canvas length, V = vocabulary.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import torch
from transformers.generation import LogitsProcessor, SuppressTokensLogitsProcessor

from sfumato.model import diffusion_gemma_library as library

from sfumato.model.api import (
    Candidate,
    CancelFlag,
    Draft,
    InfillRequest,
    ModelInfo,
    TemplateRequest,
    TokenState,
)
from sfumato.model.gap_fill import fill_gaps_separately
from sfumato.model.layout import Layout
from sfumato.model.project_context import context_tokens
from sfumato.model.prompt_cache import PromptCache
from sfumato.model.quantization import grad_free
from sfumato.model.region_prompt import region_messages
from sfumato.model.token_text import drop_incomplete_tail, split_text, token_bytes_table
from sfumato.model.tokenizer import decode_ids, encode_text

PIN_LOGIT = 1e4


@dataclass(frozen=True)
class Profile:
    """How a checkpoint expects to be prompted and noised (``sfumato.json`` in its folder)."""

    prompt_layout: str = "chat"  # "fim" (trained by this project) or "chat" (released -it checkpoints)
    fim_order: str = "psm"  # "fim" layout only: "psm" or "spm" (see sfumato.model.layout)
    canvas_noise: str = "uniform"  # "uniform" (DiffusionGemma's) or "mask" (absorbing)
    context_tokens: int = 4096  # prompt budget; longer prefixes lose their start
    joint_gaps: bool = False  # trained to fill several gap sentinels on one canvas


class PinnedTokens(LogitsProcessor):
    """Forces ``pinned`` canvas positions to ``ids``: they win argmax and sampling, with ~0 entropy."""

    def __init__(self, pinned: torch.BoolTensor, ids: torch.LongTensor):
        self.pinned = pinned  # (B, L)
        self.ids = ids  # (B, L)

    def __call__(self, input_ids, scores: torch.Tensor, cur_step=None) -> torch.Tensor:
        if not self.pinned.any():
            return scores
        forced = torch.full_like(scores, -PIN_LOGIT).scatter_(-1, self.ids.unsqueeze(-1), PIN_LOGIT)
        return torch.where(self.pinned.unsqueeze(-1), forced, scores)


@dataclass
class _RowRequest:
    """What one row of the batch asks for: a request's alternative, or a template's gaps on one
    canvas. Its output after each pass is a ``_RowState``."""

    prompt: list[int]
    max_new_tokens: int
    init_ids: list[int] | None = None  # rewrite: the current text's tokens
    strength: float = 1.0
    sentinels: list[int] = field(default_factory=list)  # joint fill: the gap tokens it may write


@dataclass
class _RowState:
    """A row's visible tokens after a pass: what a draft is made of."""

    ids: list[int]
    accepted: list[bool]
    confidence: list[float]
    batch_passes: int
    forward_passes: int
    final: bool = False


class DiffusionGemmaBackend:
    def __init__(self, model, tokenizer, profile: Profile, info: ModelInfo):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.profile = profile
        self.info = info
        self.layout = Layout(tokenizer, profile.fim_order) if profile.prompt_layout == "fim" else None
        self.canvas_length = model.config.canvas_length
        self._bytes = token_bytes_table(tokenizer)
        eos = model.generation_config.eos_token_id
        eos = eos if isinstance(eos, list) else [eos]
        self._end_ids = {tokenizer.eos_token_id, tokenizer.pad_token_id, *(i for i in eos if i is not None)}
        # control tokens never belong in the user's text
        self._suppressed = sorted(set(tokenizer.all_special_ids) - self._end_ids)
        self.device = next(model.parameters()).device
        self._end_tensor = torch.tensor(sorted(self._end_ids), device=self.device)
        self.prompt_cache = PromptCache()
        # How a pass draws the denoiser's tokens: the fast inverse CDF, or ``library.draw_like_library``
        # to consume the random stream exactly as ``generate()`` does.
        self.draw_tokens = library.sample_tokens

    # ---- public API -------------------------------------------------------------------------

    def stream(self, requests: Sequence[InfillRequest], cancel: CancelFlag | None = None) -> Iterator[tuple[Draft, ...]]:
        rows, owners = [], []
        for index, request in enumerate(requests):
            for _ in range(request.n_alternatives):
                rows.append(self._row(request))
                owners.append(index)
        first = requests[0]
        denoising = self._denoise(rows, first.steps, first.seed, first.sampler_bound, cancel)
        for states in _in_inference_mode(denoising, self.model):
            drafts = [self._draft(state) for state in states]
            yield tuple(
                _merge([drafts[i] for i, owner in enumerate(owners) if owner == index]) for index in range(len(requests))
            )

    def stream_template(self, template: TemplateRequest, cancel: CancelFlag | None = None) -> Iterator[tuple[Draft, ...]]:
        """All gaps on one canvas when the model was trained on gap sentinels and they fit; else a batch."""
        n_gaps = len(template.max_new_tokens)
        budget = sum(template.max_new_tokens) + n_gaps + 1
        if not self.profile.joint_gaps or not 2 <= n_gaps <= len(self.layout.gaps) or budget > self.canvas_length:
            yield from fill_gaps_separately(self, template, cancel)
            return
        segments = [encode_text(self.tokenizer, segment) for segment in template.segments]
        room = self.profile.context_tokens - sum(map(len, segments[1:-1])) - n_gaps - 3
        if room < 0:
            yield from fill_gaps_separately(self, template, cancel)
            return
        keep_first = min(len(segments[0]), room * 3 // 4)
        segments[0] = segments[0][len(segments[0]) - keep_first :]
        segments[-1] = segments[-1][: max(0, room - keep_first)]
        row = _RowRequest(self.layout.multi_gap_prompt(segments), self.canvas_length, sentinels=self.layout.gaps[:n_gaps])
        denoising = self._denoise([row], template.steps, template.seed, None, cancel)
        for (state,) in _in_inference_mode(denoising, self.model):
            yield tuple(self._draft(part) for part in _split_gaps(state, row.sentinels))

    # ---- prompts ------------------------------------------------------------------------------

    def _row(self, request: InfillRequest) -> _RowRequest:
        init_ids = encode_text(self.tokenizer, request.init_text) if request.is_rewrite else None
        max_new = max(request.max_new_tokens, len(init_ids) + 1) if init_ids is not None else request.max_new_tokens
        return _RowRequest(self.prompt_ids(request), max_new, init_ids, request.strength)

    def prompt_ids(self, request: InfillRequest) -> list[int]:
        """The prompt the engine encodes for ``request``, within the model's context budget."""
        budget = self.profile.context_tokens
        if self.layout is not None:
            prefix = encode_text(self.tokenizer, request.prefix)
            suffix = encode_text(self.tokenizer, request.suffix)
            context = context_tokens(self.tokenizer, request.context, budget)
            return self.layout.fim_prompt(prefix, suffix, budget, context)
        return self._chat_prompt(request, budget)

    def _chat_prompt(self, request: InfillRequest, budget: int) -> list[int]:
        """For instruction-tuned checkpoints: describe the region and ask for its new text only."""
        messages = region_messages(request, budget)
        ids = self.tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
        if isinstance(ids, dict) or hasattr(ids, "input_ids"):
            ids = ids["input_ids"]
        return list(ids)[-budget:]

    # ---- the denoising loop -------------------------------------------------------------------

    def _denoise(self, rows: list[_RowRequest], steps, seed, sampler_bound, cancel: CancelFlag | None):
        model, L, device = self.model, self.canvas_length, self.device
        config = library.generation_config(model, steps, sampler_bound)
        torch.manual_seed(seed if seed is not None else torch.seed())

        B = len(rows)
        width = max(len(row.prompt) for row in rows)
        input_ids = torch.full((B, width), self.tokenizer.pad_token_id, dtype=torch.long, device=device)
        attention_mask = torch.zeros((B, width), dtype=torch.bool, device=device)
        for b, row in enumerate(rows):  # left padding: every canvas starts right after its prompt
            input_ids[b, width - len(row.prompt) :] = torch.tensor(row.prompt)
            attention_mask[b, width - len(row.prompt) :] = True
        n_canvases = math.ceil(max(row.max_new_tokens for row in rows) / L)
        # One prompt for every row (a request and its alternatives): its start may already be encoded.
        shared_prompt = rows[0].prompt if all(row.prompt == rows[0].prompt for row in rows) else None
        cache, reused = self.prompt_cache.lookup(shared_prompt, B) if shared_prompt else (None, 0)
        if cache is None:
            cache = library.new_cache(model, config, B, width + n_canvases * L)

        mask_noise = self.tokenizer.mask_token_id if self.profile.canvas_noise == "mask" else None
        sampler = library.sampler(model, config, mask_noise)
        pinned = PinnedTokens(torch.zeros((B, L), dtype=torch.bool, device=device), torch.zeros((B, L), dtype=torch.long, device=device))
        allowed = {token for row in rows for token in row.sentinels}
        suppressed = [token for token in self._suppressed if token not in allowed]
        suppress = SuppressTokensLogitsProcessor(suppressed, device=device)
        logits_processor = library.logits_processors(model, config, [suppress, pinned])
        stopping = library.early_stop(config)

        generated: list[list[int]] = [[] for _ in rows]
        finished = [False] * B
        passes = [0] * B
        batch_passes = 0
        cur_len = width
        new_ids = input_ids[:, reused:]
        decoder_attention_mask = torch.nn.functional.pad(attention_mask, (0, L), value=True)
        for canvas_index in range(n_canvases):
            encoder_position_ids = torch.arange(cur_len - new_ids.shape[1], cur_len, device=device).unsqueeze(0)
            decoder_position_ids = torch.arange(cur_len, cur_len + L, device=device).unsqueeze(0)
            if new_ids.shape[1]:  # nothing to encode when the whole prompt came from the prompt cache
                cache = library.encode(model, new_ids, attention_mask, encoder_position_ids, cache, canvas_index == 0)
            if canvas_index == 0 and shared_prompt and reused < len(shared_prompt):
                self.prompt_cache.store(shared_prompt, cache)

            start = self._start_canvas(rows, canvas_index, sampler, pinned)
            canvas, self_conditioning, mask_mapping, done = library.start_denoising(
                model, decoder_attention_mask, cache, sampler, stopping, start
            )
            argmax = canvas
            # Rows that ended on an earlier canvas still ride along (the library's step cannot
            # start with finished rows), but their passes are not counted and their output is ignored.
            ended = torch.tensor(finished, device=device)
            for cur_step in reversed(range(1, config.max_denoising_steps + 1)):
                if cancel is not None:
                    cancel.raise_if_set()
                idle = done | ended
                if bool(idle.all()):
                    break
                for b in range(B):
                    passes[b] += not bool(idle[b])
                canvas, argmax, self_conditioning, probs, done = library.denoising_pass(
                    model, canvas, argmax, self_conditioning, done, cur_step, sampler, logits_processor, stopping,
                    dict(decoder_attention_mask=mask_mapping, cache=cache, decoder_position_ids=decoder_position_ids),
                    self.draw_tokens,
                )
                batch_passes += 1
                accepted = sampler.accepted_token_mask | pinned.pinned
                shown = torch.where(accepted, canvas, argmax)
                if self.profile.canvas_noise == "mask":  # absorbing: accepted tokens never change again
                    pinned.ids = torch.where(accepted & ~pinned.pinned, canvas, pinned.ids)
                    pinned.pinned = accepted
                    done = done | self._settled(accepted, pinned.ids)
                yield self._states(rows, generated, shown, accepted, probs, batch_passes, passes, finished)

            final_canvas = torch.where(pinned.pinned, pinned.ids, argmax)
            self._append(rows, generated, finished, final_canvas)
            if all(finished) or canvas_index == n_canvases - 1:
                break
            new_ids = final_canvas
            cur_len += L
            attention_mask = torch.nn.functional.pad(attention_mask, (0, L), value=True)
            decoder_attention_mask = torch.nn.functional.pad(decoder_attention_mask, (0, L), value=True)
        yield [
            _RowState(drop_incomplete_tail(self._bytes, ids), [True] * len(ids), [1.0] * len(ids), batch_passes, passes[b], True)
            for b, ids in enumerate(generated)
        ]

    def _settled(self, accepted: torch.BoolTensor, ids: torch.LongTensor) -> torch.BoolTensor:
        """(B,) rows whose text can no longer change: with absorbing noise, every position up to the
        first accepted end token (or the whole canvas) is accepted. Another pass would only confirm it."""
        is_end = accepted & torch.isin(ids, self._end_tensor)
        L = ids.shape[1]
        first_end = torch.where(is_end.any(dim=1), is_end.int().argmax(dim=1), L)
        before_end = torch.arange(L, device=ids.device).unsqueeze(0) < first_end.unsqueeze(1)
        return (accepted | ~before_end).all(dim=1)

    def _start_canvas(self, rows: list[_RowRequest], canvas_index: int, sampler, pinned: PinnedTokens) -> torch.LongTensor:
        """Noise everywhere, except a rewrite's pinned tokens: (1 - strength) of its text and EOS."""
        L = self.canvas_length
        start = sampler.initialize_canvas(len(rows), self.device)
        pinned.pinned = torch.zeros_like(pinned.pinned)
        pinned.ids = torch.zeros_like(pinned.ids)
        for b, row in enumerate(rows):
            if row.init_ids is None:
                continue
            text = [*row.init_ids, self.tokenizer.eos_token_id][canvas_index * L : (canvas_index + 1) * L]
            if not text:
                continue
            n_keep = round((1.0 - row.strength) * len(text))
            keep = torch.randperm(len(text))[:n_keep].to(self.device)
            ids = torch.tensor(text, device=self.device)
            pinned.ids[b, keep] = ids[keep]
            pinned.pinned[b, keep] = True
            start[b, keep] = ids[keep]
        return start

    def _append(self, rows, generated, finished, canvas: torch.LongTensor) -> None:
        """Add a finished canvas to each row's output; a row ends at EOS/pad or its token budget."""
        for b, row in enumerate(rows):
            if finished[b]:
                continue
            for token_id in canvas[b].tolist():
                if token_id in self._end_ids or len(generated[b]) >= row.max_new_tokens:
                    finished[b] = True
                    break
                generated[b].append(token_id)

    # ---- drafts -------------------------------------------------------------------------------

    def _states(self, rows, generated, shown, accepted, probs, batch_passes, passes, finished) -> list[_RowState]:
        """Each row's output so far: finished canvases, then the current canvas up to its first end."""
        confidence = probs.gather(-1, shown.unsqueeze(-1)).squeeze(-1)
        states = []
        for b, row in enumerate(rows):
            ids, flags, scores = list(generated[b]), [True] * len(generated[b]), [1.0] * len(generated[b])
            if not finished[b]:
                for token_id, ok, score in zip(shown[b].tolist(), accepted[b].tolist(), confidence[b].tolist()):
                    if token_id in self._end_ids or len(ids) >= row.max_new_tokens:
                        break
                    ids.append(token_id)
                    flags.append(ok)
                    scores.append(score)
            states.append(_RowState(ids, flags, scores, batch_passes, passes[b]))
        return states

    def _draft(self, state: _RowState) -> Draft:
        pieces = split_text(self._bytes, state.ids)
        text = decode_ids(self.tokenizer, state.ids) if state.final else "".join(pieces)
        tokens = tuple(TokenState(p, c, a) for p, c, a in zip(pieces, state.confidence, state.accepted))
        return Draft(state.batch_passes, (Candidate(text, tokens),), state.final, state.forward_passes, len(state.ids))


def _in_inference_mode(steps: Iterator, model):
    """Run each step of a generator under ``torch.inference_mode`` (``grad_free``), but never hold
    the mode while it is suspended: the mode is per thread, and a paused generator that kept it on
    would leak it into the caller (and into other generators it interleaves with)."""
    while True:
        with grad_free(model):
            try:
                item = next(steps)
            except StopIteration:
                return
        yield item


def _split_gaps(state: _RowState, sentinels: list[int]) -> list[_RowState]:
    """A joint canvas ``<gap_0> fill0 <gap_1> fill1 ...`` cut into one state per gap.

    A fill runs from its gap's first sentinel to the next sentinel of any kind; a sentinel the
    model writes again, and tokens before the first sentinel, belong to no gap. A gap whose
    sentinel has not been written (yet) is empty.
    """
    spans: dict[int, tuple[int, int]] = {}
    current, start = None, 0
    for position, token_id in enumerate([*state.ids, None]):
        if token_id is not None and token_id not in sentinels:
            continue
        if current is not None:
            spans[current] = (start, position)
        current = token_id if token_id is not None and token_id not in spans else None
        start = position + 1
    parts = []
    for sentinel in sentinels:
        begin, end = spans.get(sentinel, (0, 0))
        parts.append(
            _RowState(state.ids[begin:end], state.accepted[begin:end], state.confidence[begin:end],
                      state.batch_passes, state.forward_passes, state.final)
        )
    return parts


def _merge(drafts: list[Draft]) -> Draft:
    """One request's draft from its alternatives' rows: candidates side by side."""
    first = drafts[0]
    return Draft(
        first.batch_passes,
        tuple(candidate for draft in drafts for candidate in draft.candidates),
        all(draft.final for draft in drafts),
        max(draft.forward_passes for draft in drafts),
        sum(draft.generated_tokens for draft in drafts) // len(drafts),
    )
