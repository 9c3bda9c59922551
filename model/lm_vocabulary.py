"""What a canvas position of the embedded engine may hold: masks over the vocabulary, built once.

Every token id maps to its bytes (``sfumato.model.token_text``). Markers, the mask and chat tokens
spell nothing and are never written (only text or the end); a token that is part of a character
(byte-level BPE) is never written either, nor renoised by a rewrite, so a result never holds a
broken character; line-break tokens are known, for one-line rewrites and blank lines; the heal
masks say which tokens may spell the token at the cursor that the prompt left out.
"""

from __future__ import annotations

import torch

from sfumato.model.lm_layout import SpecialIds
from sfumato.model.token_text import token_bytes_table


class CanvasVocabulary:
    def __init__(self, tokenizer, special: SpecialIds, device: str = "cpu"):
        table = token_bytes_table(tokenizer)
        for token_id in (special.suffix_mark, special.prefix_mark, special.mask, special.end):
            table[token_id] = b""
        self.table, self.device = table, device
        self.unwritable = torch.tensor([not piece for piece in table], device=device)
        self.unwritable[special.end] = False
        self.partial = torch.tensor([bool(piece) and not _whole_characters(piece) for piece in table], device=device)
        self.breaks = torch.tensor([b"\n" in piece for piece in table], device=device)
        self._heal_masks: dict[tuple[str, bytes], torch.Tensor] = {}

    def blocked(self, positions: int, no_breaks: bool = False) -> torch.Tensor:
        """[positions, V] bool: what no position of a canvas may hold (a copy, to add to)."""
        rule = self.unwritable | self.partial
        if no_breaks:
            rule = rule | self.breaks
        return rule.expand(positions, -1).clone()

    def starting(self, text: str) -> torch.Tensor | bool:
        """[V] bool: tokens whose text, white space aside, begins ``text`` (False for no text)."""
        if not text:
            return False
        data = text.encode("utf-8")
        return torch.tensor([bool(piece.strip()) and data.startswith(piece.strip()) for piece in self.table], device=self.device)

    def heal_allowed(self, left: bytes) -> torch.Tensor:
        """[V] bool: tokens that begin with ``left``, or spell a start of it (the next token goes on)."""
        return self._heal_mask("allowed", left, lambda piece: bool(piece) and (piece.startswith(left) or left.startswith(piece)))

    def heal_breaks(self, left: bytes) -> torch.Tensor:
        """[V] bool: tokens that spell ``left`` and then a line break."""
        return self._heal_mask("breaks", left, lambda piece: piece.startswith(left) and b"\n" in piece[len(left) :])

    def _heal_mask(self, kind: str, left: bytes, keep) -> torch.Tensor:
        if (kind, left) not in self._heal_masks:
            self._heal_masks[kind, left] = torch.tensor([keep(piece) for piece in self.table], device=self.device)
        return self._heal_masks[kind, left]


def _whole_characters(piece: bytes) -> bool:
    try:
        piece.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False
