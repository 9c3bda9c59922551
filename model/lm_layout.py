"""How a pretrained causal LM sees an infill as block denoising (shared by training and the engine).

The Dream / DiffuLLaMA adaptation: a causal LM's logits at position i-1 predict token i, so a
canvas placed right after the prefix is first predicted exactly as the base would continue the
text. The prompt is read causally (and cached); the canvas attends to the whole prompt, a masked
canvas position to every canvas position both ways and one shown a token (settled, or guessed) to
the canvas up to itself, through a 4-D boolean mask.

Sequence (suffix-prefix-middle order, so the canvas continues the prefix)::

    <filename> suffix... <jupyter_code> prefix... | canvas (C tokens: middle, then <|endoftext|>)

The markers and the mask token are special tokens SmolLM2's tokenizer already has and that plain
text never produces, so no embedding is added: ``<filename>`` opens the text after the region,
``<jupyter_code>`` the text before it, ``<empty_output>`` stands for a still-masked canvas token.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

SUFFIX_MARK = "<filename>"
PREFIX_MARK = "<jupyter_code>"
MASK = "<empty_output>"
END = "<|endoftext|>"


@dataclass(frozen=True)
class SpecialIds:
    suffix_mark: int
    prefix_mark: int
    mask: int
    end: int

    @classmethod
    def of(cls, tokenizer) -> SpecialIds:
        names = [SUFFIX_MARK, PREFIX_MARK, MASK, END]
        ids = tokenizer.convert_tokens_to_ids(names)
        if any(i is None for i in ids) or tokenizer.convert_ids_to_tokens(ids) != names:
            raise ValueError("the tokenizer lacks the special tokens of this layout (SmolLM2's)")
        return cls(*ids)


def prompt_ids(special: SpecialIds, prefix: list[int], suffix: list[int]) -> list[int]:
    """The causal part: the suffix first, then the prefix that the canvas continues."""
    return [special.suffix_mark, *suffix, special.prefix_mark, *prefix]


def canvas_mask(prompt_len: int, canvas_len: int, device=None, shown: list[bool] | None = None) -> torch.Tensor:
    """[1, 1, P + C, P + C] bool, True = may attend: causal over the prompt, and every canvas
    position sees the whole prompt and the whole canvas; with ``shown``, a canvas position shown
    a token sees the canvas only up to itself (as the engine's passes read settled text and guesses)."""
    total = prompt_len + canvas_len
    mask = torch.tril(torch.ones(total, total, dtype=torch.bool, device=device))
    mask[prompt_len:, prompt_len:] = True
    if shown is not None:
        rows = prompt_len + torch.tensor(shown, dtype=torch.bool, device=device).nonzero()[:, 0]
        mask[rows, prompt_len:] = torch.tril(torch.ones(canvas_len, canvas_len, dtype=torch.bool, device=device))[rows - prompt_len]
    return mask[None, None]


def cached_canvas_mask(prompt_len: int, canvas_len: int, rows: int = 1, device=None) -> torch.Tensor:
    """[rows, 1, C, P + C] bool: the canvas rows of ``canvas_mask``, for a pass over a cached prompt."""
    return torch.ones(rows, 1, canvas_len, prompt_len + canvas_len, dtype=torch.bool, device=device)
