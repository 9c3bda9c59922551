"""What a canvas position of the embedded engine may hold: masks over the vocabulary, built once.

Every token id maps to its bytes (``sfumato.model.token_text``). Markers, the mask and chat tokens
spell nothing and are never written (only text or the end); a token that is part of a character
(byte-level BPE) is never written either, nor renoised by a rewrite, so a result never holds a
broken character; line-break tokens are known, for one-line rewrites and blank lines; the heal
masks say which tokens may spell the token at the cursor that the prompt left out.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

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
        self.spaced = torch.tensor([piece[:1].isspace() for piece in table], device=device)  # begin with white space
        self.text_ends = torch.zeros_like(self.breaks)  # what ends a text of several lines: the end token
        self.text_ends[special.end] = True
        self.line_ends = self.breaks | self.text_ends  # ... and one line: any token with a line break too
        self._heal_masks: dict[tuple[str, bytes], torch.Tensor] = {}
        self._by_stripped: dict[bytes, list[int]] = {}  # a token's text, white space aside -> the tokens that spell it
        self._by_text: dict[bytes, list[int]] = {}  # a token's text -> the tokens that spell it
        for token_id, piece in enumerate(table):
            if piece.strip():
                self._by_stripped.setdefault(piece.strip(), []).append(token_id)
            if piece:
                self._by_text.setdefault(piece, []).append(token_id)
        self._longest = max(map(len, self._by_stripped), default=0)
        self._order = sorted(range(len(table)), key=table.__getitem__)  # token ids by their text, for prefix ranges
        self._sorted_texts = [table[i] for i in self._order]
        # SmolLM2's byte-level BPE gives an indentation's last space to the word after it
        # (``\n       `` + `` if``); Gemma's SentencePiece keeps it whole (``\n`` + ``    `` + ``if``)
        pieces = [table[i] for i in tokenizer("\n    if x:", add_special_tokens=False).input_ids]
        self.space_joins_word = b" if" in pieces

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
        return self._mask(self._spelling(data[:n] for n in range(1, min(len(data), self._longest) + 1)))

    def repeating(self, text: str, healed: bytes) -> torch.Tensor | bool:
        """[V] bool: tokens that spell ``healed`` and then whole words that begin ``text`` (a gap's
        first token spells the prefix's last one again: `` port`` after ``listens on `` repeats the
        suffix's ``port 8080``; `` a`` before ``any`` does not)."""
        if not text:
            return False
        data = text.encode("utf-8")

        def whole(rest: bytes) -> bool:
            return bool(rest) and data.startswith(rest) and not (rest[-1:].isalnum() and data[len(rest) : len(rest) + 1].isalnum())

        if healed.strip():  # the rest of such a token is not its text white space aside: each one beginning with it read
            return self._mask(i for i in self._beginning(healed) if whole(self.table[i][len(healed) :].strip()))
        words = (data[:n] for n in range(1, min(len(data), self._longest) + 1) if whole(data[:n]))
        return self._mask(i for i in self._spelling(words) if self.table[i].startswith(healed))

    def _beginning(self, start: bytes) -> Iterator[int]:
        """The tokens whose text begins with ``start``: a run of the tokens sorted by text."""
        at = bisect.bisect_left(self._sorted_texts, start)
        while at < len(self._order) and self._sorted_texts[at].startswith(start):
            yield self._order[at]
            at += 1

    def _spelling(self, texts) -> list[int]:
        """The tokens whose text, white space aside, is one of ``texts``."""
        return [i for text in texts for i in self._by_stripped.get(text, ())]

    def _mask(self, ids) -> torch.Tensor:
        mask = torch.zeros(len(self.table), dtype=torch.bool, device=self.device)
        mask[list(ids)] = True
        return mask

    def heal_allowed(self, left: bytes) -> torch.Tensor:
        """[V] bool: tokens that begin with ``left``, or spell a start of it that leaves one space
        (where the tokenizer joins an indentation's last space to the word after it: ``\n       `` +
        `` return``), that leaves whole lines (``\n`` + ``\n``) or that is part of a character.
        Not any start: ``\n`` + indentation healed as ``\n`` and then spaces one at a time took
        the model off its grid, and the spaces looped until the line was cut to nothing."""
        def ids() -> Iterator[int]:
            yield from (i for i in self._beginning(left) if self.table[i])
            for n in range(1, len(left)):  # the tokens that spell a start of it
                piece, rest = left[:n], left[n:]
                if (rest == b" " and self.space_joins_word) or rest.startswith(b"\n") or not _whole_characters(piece):
                    yield from self._by_text.get(piece, ())

        return self._heal_mask("allowed", left, ids)

    def heal_spaces(self, left: bytes, lone_space: bool = False) -> torch.Tensor:
        """[V] bool, for ``left`` that ends with a space: tokens of white space alone that spell it
        and end with a space. Before a line's text a byte-level tokenizer never ends an indentation
        so (its last space goes with the word: ``\n       `` + `` if``); chosen, the next token
        brought a space of its own, one too many. (After ``\n`` alone, indentation may begin.) None
        for a tokenizer that keeps an indentation whole (Gemma's): its indentation token is the grid.
        ``lone_space`` (``Row.lone_space``): not a space alone that spells all that is left (`` `` after
        ``port =``, or after ``\n   `` of an indentation): SmolLM2 joins no space to a digit, so that is
        how a number's space is written (`` `` + ``8080``)."""
        if not (self.space_joins_word and left.endswith(b" ")):
            return self._heal_mask("spaces", left, tuple)
        return self._heal_mask("spaces, a lone one allowed" if lone_space else "spaces", left, lambda: (
            i for i in self._beginning(left)
            if not self.table[i].strip() and self.table[i].endswith(b" ") and not (lone_space and self.table[i] == b" ")))

    def heal_breaks(self, left: bytes) -> torch.Tensor:
        """[V] bool: tokens that spell ``left`` and then a line break."""
        return self._heal_mask("breaks", left, lambda: (i for i in self._beginning(left) if b"\n" in self.table[i][len(left) :]))

    def _heal_mask(self, kind: str, left: bytes, ids) -> torch.Tensor:
        """The mask of ``ids()``, made once for each ``left``: from the tokens sorted by text and the
        starts of ``left``, never a pass over the whole vocabulary (in Python that took 30-70 ms a
        new heal, holding the GIL, and the window's thread stalled 20 ms waiting for it)."""
        if (kind, left) not in self._heal_masks:
            self._heal_masks[kind, left] = self._mask(ids())
        return self._heal_masks[kind, left]


def _whole_characters(piece: bytes) -> bool:
    try:
        piece.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False
