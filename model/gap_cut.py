"""Where a gap inside a line ends: at the cut after which the model finds the rest of the line likeliest.

A denoiser filling ``Keep a copy on another [gap] and check it`` rarely ends its canvas at the gap's
end: it writes on (``machine, and keep it safe``). Every cut at a word start is scored, in one
forward pass over the cached prompt, by the causal reading of the text up to the cut followed by
the suffix's first tokens: log p(text[:k]) + log p(suffix start | text[:k]). The queries are a tree:
the text once, then one copy of the suffix's start per cut, each seeing only the text before its cut.
No threshold is involved; the model's own likelihood picks the cut.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sfumato.model.lm_row import Row

SUFFIX_SCORE_TOKENS = 8  # of the suffix, what a cut is scored on


def cut_candidates(pieces: list[bytes], first: int = 1) -> list[int]:
    """Cuts k (the text is tokens[:k], k >= ``first``) where the next token starts a new word, and
    the whole text; a cut never splits a word."""
    return [k for k in range(first, len(pieces) + 1) if k == len(pieces) or not pieces[k][:1].isalnum()]


def text_pieces(row: Row, table: list[bytes], ends: tuple[int, ...]) -> tuple[list[int], list[bytes]]:
    """The row's text tokens (committed and in the canvas, up to one of ``ends``, a mask or a cut;
    for one line, up to its line break) and the bytes each adds after the healed start."""
    ids, pieces, spelt = [], [], 0
    for i, token in enumerate(row.written + row.canvas):
        piece = table[token][max(0, len(row.heal) - spelt) :]
        spelt += len(table[token])
        if (row.cut is not None and i >= row.cut) or token in ends or (row.one_line and b"\n" in piece):
            break
        ids.append(token)
        pieces.append(piece)
    return ids, pieces


@dataclass(frozen=True)
class CutQueries:
    ids: list[int]  # the text, then the suffix's start once per candidate
    offsets: list[int]  # each query's position after the cached tokens
    mask: torch.Tensor  # [L, L] bool: which query sees which
    candidates: list[int]
    suffix: list[int]

    @classmethod
    def build(cls, text: list[int], suffix: list[int], candidates: list[int]) -> CutQueries:
        n, m = len(text), len(suffix)
        length = n + m * len(candidates)
        mask = torch.zeros(length, length, dtype=torch.bool)
        mask[:n, :n] = torch.tril(torch.ones(n, n, dtype=torch.bool))
        ids, offsets = list(text), list(range(n))
        for c, k in enumerate(candidates):
            start = n + c * m
            mask[start : start + m, :k] = True
            mask[start : start + m, start : start + m] = torch.tril(torch.ones(m, m, dtype=torch.bool))
            ids += suffix
            offsets += range(k, k + m)
        return cls(ids, offsets, mask, candidates, suffix)

    def best(self, first_logits: torch.Tensor, logits: torch.Tensor) -> int:
        """The candidate with the highest score."""
        scores = self.scores(first_logits, logits)
        return self.candidates[max(range(len(scores)), key=scores.__getitem__)]

    def scores(self, first_logits: torch.Tensor, logits: torch.Tensor) -> list[float]:
        """Each candidate's log p(text[:k] + suffix start), from the logits after the cached tokens
        [V] and the queries' logits [L, V]."""
        n, m = len(self.ids) - len(self.suffix) * len(self.candidates), len(self.suffix)
        log_probs = torch.cat([first_logits[None], logits]).float().log_softmax(-1)  # row i predicts query i
        text = torch.tensor(self.ids[:n])
        text_lp = log_probs[torch.arange(n), text].cumsum(0)
        suffix = torch.tensor(self.suffix)
        scores = []
        for c, k in enumerate(self.candidates):
            start = n + c * m
            first = log_probs[k, suffix[0]]  # the text's token k-1 (query k-1, row k) predicts the suffix's first
            rest = log_probs[start + 1 : start + m, :].gather(1, suffix[1:, None]).sum()
            scores.append(float(text_lp[k - 1] + first + rest))
        return scores
