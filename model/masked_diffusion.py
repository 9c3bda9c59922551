"""The masked-diffusion backend: LLaDA, Dream and any ``AutoModelForMaskedLM`` (BERT, RoBERTa, ModernBERT).

Each row of the batch is one sequence, ``[cls/bos] segment0 gap0 segment1 ... segmentN [sep]``:
a gap is a run of mask tokens in place between the text around it, and every position attends
both ways. A template's gaps all sit in one row and are denoised together, so what goes into
one gap sees the others settle.

One pass: the model predicts every masked position; a token is sampled for each (temperature,
seeded generator); the sampler (``sfumato.model.masked_samplers``) commits some of them and the rest stay
masked. Committed tokens never change. Drafts show committed tokens as accepted and the masked
positions as their current guess, unaccepted, so the editor draws a shimmer of guesses that
settles into text, as it does for DiffusionGemma's uniform-noise canvas.

Gap length: a gap starts at an estimate (the rewritten text's length, else ``span_tokens``) and
is capped by ``max_new_tokens``. When the model commits an end token (EOS, pad, sep) the gap
ends there and what follows is dropped; when every position is committed without an end and the
cap allows, the gap grows by ``span_tokens`` fresh masks (semi-autoregressive continuation).

Logit shift: LLaDA and masked LMs predict position i from output i. Dream (and models built on
it, such as DiffuCoder) were adapted from autoregressive Qwen2.5 and predict position i from
output i - 1; a config may also say so itself with a boolean ``shift_logits``.

Shapes: B rows, T sequence length, V vocabulary, n masked positions of one row.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import torch

from sfumato.model.api import (
    Candidate,
    CancelFlag,
    Draft,
    EngineError,
    InfillRequest,
    ModelInfo,
    TemplateRequest,
    TokenState,
)
from sfumato.model.gap_fill import fill_gaps_separately
from sfumato.model.quantization import grad_free
from sfumato.model.masked_samplers import SAMPLERS, Sampler, Scores
from sfumato.model.project_context import context_tokens
from sfumato.model.token_text import split_text, token_bytes_table
from sfumato.model.tokenizer import decode_ids, encode_text

SPAN_TOKENS = 32  # first length estimate of a gap with no other hint, and the growth step
TOKENS_PER_PASS = 2  # default schedule when a request gives no ``steps``
TEMPERATURE = 0.2  # Dream's recommended value; 0 is greedy (alternatives would all agree)
DEFAULT_WINDOW = 4096  # context when the config names none

# families that ship their own modeling code, by model_type (lower case) or architecture
REMOTE_FAMILIES = {
    "llada": "llada", "lladamoe": "llada", "dream": "dream",
    "LLaDAModelLM": "llada", "LLaDAMoEModelLM": "llada", "DreamModel": "dream",
}
SHIFTED_FAMILIES = {"dream"}


def _field(config, name: str, default=None):
    """A config attribute, from a config object or a raw config.json dict."""
    if isinstance(config, dict):
        return config.get(name, default)
    return getattr(config, name, default)


def architecture_name(config) -> str:
    architectures = _field(config, "architectures") or []
    return architectures[0] if architectures else repr(_field(config, "model_type"))


def masked_diffusion_family(config) -> str | None:
    """``"masked-lm"``, ``"llada"`` or ``"dream"`` for a config this backend loads, else None."""
    architectures = _field(config, "architectures") or []
    for name in [str(_field(config, "model_type") or "").lower(), *architectures]:
        if name in REMOTE_FAMILIES:
            return REMOTE_FAMILIES[name]
    if any(name.endswith("ForMaskedLM") for name in architectures):
        return "masked-lm"
    return None


def predicts_next_position(config) -> bool:
    """Whether output i predicts token i + 1 (Dream) rather than token i (see the module note)."""
    flag = _field(config, "shift_logits")
    if isinstance(flag, bool):
        return flag
    return masked_diffusion_family(config) in SHIFTED_FAMILIES


def _ids(*values) -> set[int]:
    """Token ids from values that may be None, an int or a list of ints."""
    found = set()
    for value in values:
        if isinstance(value, int):
            found.add(value)
        elif isinstance(value, (list, tuple)):
            found.update(v for v in value if isinstance(v, int))
    return found


@dataclass
class _Span:
    """One gap of one row: its tokens, and which of them the sampler has committed."""

    ids: list[int]  # committed or kept token, or the mask id
    settled: list[bool]
    confidence: list[float]  # at commit (1.0 for kept text); for masks, of the current guess
    guess: list[int]  # latest sampled token, shown while a position is still masked
    cap: int  # most tokens this gap may hold
    quota: int  # tokens committed per pass by the uniform schedule
    ended: bool = False  # closed by an end token
    committed: int = 0  # tokens the sampler has committed (kept text excluded)

    @property
    def settled_all(self) -> bool:
        return all(self.settled)

    @property
    def finished(self) -> bool:
        return self.settled_all and (self.ended or len(self.ids) >= self.cap)

    def grow(self, mask_id: int, tokens: int) -> None:
        """Append fresh masks when every position is committed but the text has not ended."""
        if self.settled_all and not self.finished:
            extra = min(tokens, self.cap - len(self.ids))
            self.ids += [mask_id] * extra
            self.settled += [False] * extra
            self.confidence += [0.0] * extra
            self.guess += [mask_id] * extra

    def commit(self, index: int, token: int, confidence: float) -> None:
        self.ids[index], self.settled[index], self.confidence[index] = token, True, confidence
        self.committed += 1

    def close_at_end(self, end_ids: set[int]) -> None:
        """Cut the gap before its first committed end token."""
        for index, (token, settled) in enumerate(zip(self.ids, self.settled)):
            if settled and token in end_ids:
                for values in (self.ids, self.settled, self.confidence, self.guess):
                    del values[index:]
                self.ended = True
                return


@dataclass
class _GappedSequence:
    """One row of the batch: the token runs around its gaps (one more run than gaps), the span
    being denoised in each gap, and its random generator."""

    segments: list[list[int]]
    spans: list[_Span]
    generator: torch.Generator
    passes: int = 0
    masked: list[tuple[int, int]] = field(default_factory=list)  # (gap, position) fed as masks this pass

    @property
    def finished(self) -> bool:
        return all(span.finished for span in self.spans)


class MaskedDiffusionBackend:
    """Infill, rewrite and joint template filling with a mask-predicting model.

    ``instruction`` is ignored: none of the supported families has an in-place instruction
    format, so ``info.instruction_tuned`` is False.
    """

    def __init__(
        self,
        model,
        tokenizer,
        info: ModelInfo,
        *,
        sampler: Sampler | str = "llada",
        temperature: float = TEMPERATURE,
        span_tokens: int = SPAN_TOKENS,
        tokens_per_pass: int = TOKENS_PER_PASS,
        shift_logits: bool | None = None,
    ):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.info = info
        self.sampler = SAMPLERS[sampler] if isinstance(sampler, str) else sampler
        self.temperature = temperature
        self.span_tokens = span_tokens
        self.tokens_per_pass = tokens_per_pass
        config = model.config
        self.family = masked_diffusion_family(config) or "masked-lm"
        self.shift = predicts_next_position(config) if shift_logits is None else shift_logits
        self.device = next(model.parameters()).device

        mask_id = _field(config, "mask_token_id")
        self.mask_id = mask_id if isinstance(mask_id, int) else tokenizer.mask_token_id
        if self.mask_id is None:
            raise EngineError(f"{info.name}: neither the config nor the tokenizer names a mask token")
        generation = getattr(model, "generation_config", None)
        self.end_ids = _ids(
            tokenizer.eos_token_id, tokenizer.pad_token_id, tokenizer.sep_token_id,
            _field(config, "eos_token_id"), _field(config, "pad_token_id"),
            getattr(generation, "eos_token_id", None),
        ) - {self.mask_id}
        vocab = min(len(tokenizer), _field(config, "vocab_size") or len(tokenizer))  # LLaDA pads its logits
        # control tokens, the mask and ids past the tokenizer never belong in the user's text
        suppressed = (set(tokenizer.all_special_ids) | {self.mask_id}) - self.end_ids
        self._suppressed = torch.tensor(sorted(i for i in suppressed if i < vocab), device=self.device)
        self._vocab = vocab
        start = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
        self.head = [start] if start is not None else []
        self.tail = [tokenizer.sep_token_id] if tokenizer.sep_token_id is not None else []
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.mask_id
        self.window = self._window(config, tokenizer)
        self._bytes = token_bytes_table(tokenizer)

    # ---- public API -------------------------------------------------------------------------

    def stream(
        self, requests: Sequence[InfillRequest], cancel: CancelFlag | None = None
    ) -> Iterator[tuple[Draft, ...]]:
        groups = []
        for request in requests:
            generator = self._generator(request.seed)
            groups.append([self._infill_row(request, generator) for _ in range(request.n_alternatives)])
        for batch_passes in self._denoise([row for group in groups for row in group], cancel):
            yield tuple(self._draft(group, batch_passes, gap=0) for group in groups)

    def stream_template(
        self, template: TemplateRequest, cancel: CancelFlag | None = None
    ) -> Iterator[tuple[Draft, ...]]:
        """All gaps in one sequence; if they and the text between them overflow the window,
        gaps are filled one request each instead (``fill_gaps_separately``)."""
        segments = [encode_text(self.tokenizer, text) for text in template.segments]
        budget = self._budget(sum(template.max_new_tokens)) - sum(len(s) for s in segments[1:-1])
        if budget < 0:
            yield from fill_gaps_separately(self, template, cancel)
            return
        first, last = _fit(segments[0], segments[-1], budget)
        spans = [self._blank_span(cap, template.steps) for cap in template.max_new_tokens]
        row = _GappedSequence([first, *segments[1:-1], last], spans, self._generator(template.seed))
        for batch_passes in self._denoise([row], cancel):
            yield tuple(self._draft([row], batch_passes, gap) for gap in range(len(spans)))

    # ---- rows ---------------------------------------------------------------------------------

    def _window(self, config, tokenizer) -> int:
        sizes = [_field(config, name) for name in ("max_position_embeddings", "max_sequence_length")]
        sizes.append(tokenizer.model_max_length if tokenizer.model_max_length < 10**9 else None)
        known = [size for size in sizes if isinstance(size, int)]
        return min(known) if known else DEFAULT_WINDOW

    def _budget(self, gap_tokens: int) -> int:
        """Context tokens left once the special tokens and ``gap_tokens`` are placed."""
        return self.window - len(self.head) - len(self.tail) - gap_tokens

    def _generator(self, seed: int | None) -> torch.Generator:
        generator = torch.Generator(device=self.device)
        if seed is None:
            generator.seed()
        else:
            generator.manual_seed(seed)
        return generator

    def _quota(self, cap: int, steps: int | None) -> int:
        steps = steps or math.ceil(cap / self.tokens_per_pass)
        return math.ceil(cap / steps)

    def _blank_span(self, cap: int, steps: int | None) -> _Span:
        length = min(cap, self.span_tokens)
        return _Span([self.mask_id] * length, [False] * length, [0.0] * length, [self.mask_id] * length,
                     cap, self._quota(cap, steps))

    def _infill_row(self, request: InfillRequest, generator: torch.Generator) -> _GappedSequence:
        init = encode_text(self.tokenizer, request.init_text) if request.init_text else []
        room = self._budget(0)
        if len(init) > room:
            raise EngineError(f"the selection is {len(init)} tokens; the model's window holds {room}")
        if init:
            cap = len(init) if request.strength == 0 else min(max(request.max_new_tokens, len(init)), room)
            noised = set(torch.randperm(len(init), generator=generator, device=self.device)
                         [: math.ceil(request.strength * len(init))].tolist())
            ids = [self.mask_id if i in noised else token for i, token in enumerate(init)]
            settled = [i not in noised for i in range(len(init))]
            span = _Span(ids, settled, [1.0 if ok else 0.0 for ok in settled], list(ids), cap,
                         self._quota(cap, request.steps))
        else:
            span = self._blank_span(min(request.max_new_tokens, room), request.steps)
        prefix = encode_text(self.tokenizer, request.prefix)
        suffix = encode_text(self.tokenizer, request.suffix)
        context = context_tokens(self.tokenizer, request.context, self._budget(span.cap))
        prefix, suffix = _fit(prefix, suffix, self._budget(span.cap) - len(context))
        return _GappedSequence([context + prefix, suffix], [span], generator)

    # ---- denoising ----------------------------------------------------------------------------

    def _denoise(self, rows: list[_GappedSequence], cancel: CancelFlag | None) -> Iterator[int]:
        """Run passes until every row is finished; yield the pass count after each (0 if none ran)."""
        step = 0
        while True:
            for row in rows:
                for span in row.spans:
                    span.grow(self.mask_id, self.span_tokens)
            active = [row for row in rows if not row.finished]
            if not active:
                if step == 0:
                    yield 0
                return
            if cancel is not None:
                cancel.raise_if_set()
            with grad_free(self.model):
                self._pass(active)
            step += 1
            yield step

    def _pass(self, rows: list[_GappedSequence]) -> None:
        sequences, positions = [], []
        for row in rows:
            sequence, where = self._sequence(row)
            sequences.append(sequence)
            positions.append(where)
        for row, logits, where in zip(rows, self._forward(sequences), positions):
            index = torch.tensor(where, device=self.device)
            if self.shift:
                index = (index - 1).clamp(min=0)
            self._update(row, logits[index])  # (n, V)
            row.passes += 1

    def _sequence(self, row: _GappedSequence) -> tuple[list[int], list[int]]:
        """The row's token ids, and the sequence positions of its masks (recorded in ``row.masked``)."""
        ids, where = list(self.head), []
        row.masked = []
        for gap, segment in enumerate(row.segments):
            ids += segment
            if gap < len(row.spans):
                span = row.spans[gap]
                for position, settled in enumerate(span.settled):
                    if not settled:
                        row.masked.append((gap, position))
                        where.append(len(ids) + position)
                ids += span.ids
        return ids + self.tail, where

    def _forward(self, sequences: list[list[int]]) -> list[torch.Tensor]:
        """Logits (T, V) of each sequence. Masked LMs take a right-padded batch with an attention
        mask; remote-code models get no padding (their masks differ), one batch per length."""
        logits: list[torch.Tensor | None] = [None] * len(sequences)
        if self.family == "masked-lm":
            width = max(len(s) for s in sequences)
            ids = torch.full((len(sequences), width), self.pad_id, device=self.device)
            attention = torch.zeros_like(ids)
            for b, sequence in enumerate(sequences):
                ids[b, : len(sequence)] = torch.tensor(sequence)
                attention[b, : len(sequence)] = 1
            out = self.model(input_ids=ids, attention_mask=attention).logits  # (B, T, V)
            return [out[b] for b in range(len(sequences))]
        for length in sorted({len(s) for s in sequences}):
            members = [b for b, s in enumerate(sequences) if len(s) == length]
            out = self.model(input_ids=torch.tensor([sequences[b] for b in members], device=self.device)).logits
            for row_logits, b in zip(out, members):
                logits[b] = row_logits
        return logits

    def _update(self, row: _GappedSequence, logits: torch.Tensor) -> None:
        """Sample the row's masks, let the sampler commit some per gap, close gaps at end tokens."""
        logits = logits[:, : self._vocab].float()
        logits[:, self._suppressed] = -math.inf
        probs = torch.softmax(logits, dim=-1)  # (n, V)
        if self.temperature > 0:
            tempered = torch.softmax(logits / self.temperature, dim=-1)
            tokens = torch.multinomial(tempered, 1, generator=row.generator).squeeze(-1)
        else:
            tokens = probs.argmax(dim=-1)
        top = probs.topk(2, dim=-1).values
        scores = Scores(
            confidence=probs.gather(-1, tokens[:, None]).squeeze(-1),
            margin=top[:, 0] - top[:, 1],
            entropy=torch.special.entr(probs).sum(-1),
        )
        token_list, confidence_list = tokens.tolist(), scores.confidence.tolist()
        for gap, span in enumerate(row.spans):
            members = [k for k, (g, _) in enumerate(row.masked) if g == gap]
            if not members:
                continue
            for k in members:
                position = row.masked[k][1]
                span.guess[position], span.confidence[position] = token_list[k], confidence_list[k]
            block = self.sampler.block_length
            if block:
                current = row.masked[members[0]][1] // block
                members = [k for k in members if row.masked[k][1] // block == current]
            chosen = torch.tensor(members, device=self.device)
            picked = self.sampler.select(
                Scores(scores.confidence[chosen], scores.margin[chosen], scores.entropy[chosen]),
                min(span.quota, len(members)),
            )
            for k in (members[i] for i in picked.tolist()):
                span.commit(row.masked[k][1], token_list[k], confidence_list[k])
            span.close_at_end(self.end_ids)

    # ---- drafts -------------------------------------------------------------------------------

    def _draft(self, rows: list[_GappedSequence], batch_passes: int, gap: int) -> Draft:
        """One request's (or one template gap's) draft: a candidate per row."""
        spans = [row.spans[gap] for row in rows]
        return Draft(
            batch_passes,
            tuple(self._candidate(span) for span in spans),
            final=all(row.finished for row in rows),
            forward_passes=max(row.passes for row in rows),
            generated_tokens=sum(span.committed for span in spans) // len(spans),
        )

    def _candidate(self, span: _Span) -> Candidate:
        """Committed tokens as accepted, masks as their current guess (end-token guesses show as
        nothing: that is where the text would stop). Settled text is decoded whole."""
        shown = [token if settled else guess for token, settled, guess in zip(span.ids, span.settled, span.guess)]
        pieces = split_text(self._bytes, shown)
        text = "".join(pieces)
        if span.settled_all:
            text = decode_ids(self.tokenizer, shown)
            if "".join(pieces) != text:  # tokenizers whose decoding is not concatenation (WordPiece)
                pieces = _prefix_pieces(self.tokenizer, shown, text)
        tokens = tuple(TokenState(p, c, s) for p, c, s in zip(pieces, span.confidence, span.settled))
        return Candidate(text, tokens)


def _fit(prefix: list[int], suffix: list[int], budget: int) -> tuple[list[int], list[int]]:
    """Keep the end of ``prefix`` and the start of ``suffix`` within ``budget`` tokens, half each
    when both are long, the unused share of a short one going to the other."""
    keep_suffix = min(len(suffix), max(budget // 2, budget - len(prefix)))
    keep_prefix = min(len(prefix), budget - keep_suffix)
    return prefix[len(prefix) - keep_prefix :], suffix[:keep_suffix]


def _prefix_pieces(tokenizer, ids: list[int], text: str) -> list[str]:
    """Per-token text as the growth of decoded prefixes; the remainder goes to the last token."""
    pieces, done = [], ""
    for end in range(1, len(ids)):
        head = decode_ids(tokenizer, ids[:end])
        if head.startswith(done) and text.startswith(head):
            pieces.append(head[len(done) :])
            done = head
        else:
            pieces.append("")
    return pieces + [text[len(done) :]] if ids else []
