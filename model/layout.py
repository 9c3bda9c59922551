"""How infill requests are laid out as DiffusionGemma prompts and canvases.

A checkpoint whose ``sfumato.json`` names the ``fim`` prompt layout was trained on exactly these
prompts and canvases, with the FIM special tokens of its tokenizer (``sfumato.model.tokenizer``);
``sfumato.model.diffusion_gemma`` decodes with them. Checkpoints without that file (the released
instruction-tuned ones) get a chat prompt instead (``sfumato.model.region_prompt``).

Single gap, prefix-suffix-middle (PSM) order::

    prompt: <bos> <fim_prefix> prefix <fim_suffix> suffix <fim_middle>
    canvas: middle <eos> <pad> <pad> ...

or suffix-prefix-middle (SPM, Bavarian et al. 2022 "Efficient training of language models to fill in
the middle"; StarCoder's token order), where the prefix runs straight into the middle, so the causal
encoder's next-token loss on the prompt is the same task as continuing it at the cursor::

    prompt: <bos> <fim_prefix> <fim_suffix> suffix <fim_middle> prefix
    canvas: middle <eos> <pad> <pad> ...

Several gaps at once (joint fill), each gap marked by its sentinel::

    prompt: <bos> <fim_prefix> seg0 <gap_0> seg1 <gap_1> seg2 <fim_middle>
    canvas: <gap_0> fill0 <gap_1> fill1 <eos> <pad> ...

A middle longer than one canvas continues on the next canvas, after the previous one is appended
to the prompt (DiffusionGemma's block-autoregressive outer loop).
"""

from __future__ import annotations

from collections.abc import Sequence

from sfumato.model.tokenizer import FIM_MIDDLE, FIM_PREFIX, FIM_SUFFIX, GAP_TOKENS, special_id


class Layout:
    """Special-token ids of one tokenizer, and the prompt/canvas builders that use them."""

    def __init__(self, tokenizer, fim_order: str = "psm"):
        if fim_order not in ("psm", "spm"):
            raise ValueError(f"unknown FIM order {fim_order!r}")
        self.fim_order = fim_order
        self.pad = tokenizer.pad_token_id
        self.eos = tokenizer.eos_token_id
        self.bos = tokenizer.bos_token_id
        self.mask = tokenizer.mask_token_id
        self.fim_prefix = special_id(tokenizer, FIM_PREFIX)
        self.fim_suffix = special_id(tokenizer, FIM_SUFFIX)
        self.fim_middle = special_id(tokenizer, FIM_MIDDLE)
        self.gaps = [special_id(tokenizer, token) for token in GAP_TOKENS]

    def fim_prompt(self, prefix: Sequence[int], suffix: Sequence[int], budget: int,
                   context: Sequence[int] = ()) -> list[int]:
        """The FIM prompt within ``budget`` tokens: the prefix loses its start, the suffix its end.
        ``context`` (project snippets, already cut to their share) goes before the prefix.

        A prefix's start is dropped in steps of ``budget // 16`` tokens, so that typing at the
        cursor of a long document leaves the prompt's start, and its cached encoding, unchanged.
        """
        room = max(0, budget - 4 - len(context))
        keep_suffix = min(len(suffix), max(room // 4, room - len(prefix)))
        keep_prefix = min(len(prefix), room - keep_suffix)
        step = max(1, budget // 16)
        drop = -(-(len(prefix) - keep_prefix) // step) * step
        prefix = prefix[drop:]
        suffix = suffix[:keep_suffix]
        if self.fim_order == "spm":
            return [self.bos, self.fim_prefix, self.fim_suffix, *suffix, self.fim_middle, *context, *prefix]
        return [self.bos, self.fim_prefix, *context, *prefix, self.fim_suffix, *suffix, self.fim_middle]

    def multi_gap_prompt(self, segments: Sequence[Sequence[int]]) -> list[int]:
        """Prompt for ``len(segments) - 1`` gaps, the i-th gap between segments i and i+1."""
        if not 2 <= len(segments) <= len(self.gaps) + 1:
            raise ValueError(f"joint fill takes 1 to {len(self.gaps)} gaps")
        ids = [self.bos, self.fim_prefix, *segments[0]]
        for gap, segment in zip(self.gaps, segments[1:]):
            ids += [gap, *segment]
        return ids + [self.fim_middle]

    def canvas_target(self, middle: Sequence[int], canvas_length: int) -> list[int]:
        """The canvas a model should produce for ``middle``: middle, EOS, then padding."""
        ids = [*middle, self.eos][:canvas_length]
        return ids + [self.pad] * (canvas_length - len(ids))
