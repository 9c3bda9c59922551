"""How a pretrained causal LM sees an infill as block denoising (shared by training and the engine).

The Dream / DiffuLLaMA adaptation: a causal LM's logits at position i-1 predict token i, so a
canvas placed right after the prefix is first predicted exactly as the base would continue the
text. The prompt is read causally (and cached); the canvas attends to the whole prompt, a masked
canvas position to every canvas position both ways and one shown a token (settled, or guessed) to
the canvas up to itself, through a 4-D boolean mask.

Sequence (suffix-prefix-middle order, so the canvas continues the prefix)::

    <filename> suffix... <jupyter_code> prefix... | canvas (C tokens: middle, then <|endoftext|>)

The markers and the mask token are special tokens the base's tokenizer already has and that plain
text never produces, so no embedding is added. SmolLM2's: ``<filename>`` opens the text after the
region, ``<jupyter_code>`` the text before it, ``<empty_output>`` stands for a still-masked canvas
token. Gemma 3's: ``<unused0>``, ``<unused1>``, ``<mask>``, ``<eos>``, and the sequence begins with
``<bos>`` (without it Gemma reads any text badly).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

LAYOUTS = (  # suffix mark, prefix mark, mask, end; and the sequence's first token, if the base needs one
    ("<filename>", "<jupyter_code>", "<empty_output>", "<|endoftext|>", None),  # SmolLM2
    ("<unused0>", "<unused1>", "<mask>", "<eos>", "<bos>"),  # Gemma 3
)


@dataclass(frozen=True)
class SpecialIds:
    suffix_mark: int
    prefix_mark: int
    mask: int
    end: int
    start: int | None = None

    @classmethod
    def of(cls, tokenizer) -> SpecialIds:
        for layout in LAYOUTS:
            names = [name for name in layout if name is not None]
            ids = tokenizer.convert_tokens_to_ids(names)
            if all(i is not None for i in ids) and tokenizer.convert_ids_to_tokens(ids) == names:
                return cls(*ids)
        raise ValueError("the tokenizer lacks the special tokens of this layout (SmolLM2's or Gemma 3's)")

    @property
    def opening(self) -> list[int]:
        """What every sequence the base reads begins with: its start token, or nothing."""
        return [] if self.start is None else [self.start]


def prompt_ids(special: SpecialIds, prefix: list[int], suffix: list[int]) -> list[int]:
    """The causal part: the suffix first, then the prefix that the canvas continues."""
    return [*special.opening, special.suffix_mark, *suffix, special.prefix_mark, *prefix]


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
