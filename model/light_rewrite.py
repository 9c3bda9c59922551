"""A light rewrite (a fix): the denoiser proposes corrections, the causal reading picks one.

A line with one slip (``retrun``, ``hostnamee``, a wrong name) read by the denoiser with every
token visible gets, at the slip, a likelier token than the one typed; renoising a share of the
line's tokens instead rewrote correct ones too. So each position where the denoiser reads a
likelier token than the one typed proposes edits: its best tokens in place, perhaps also in
place of the next one or two tokens of the same word (a word the slip split in two), or the
position deleted inside a word (a doubled letter). Every proposal and the text as it is are read
by the model left to right after the cached prompt, each followed by the suffix's first tokens,
side by side (a block-diagonal mask: each sequence sees the prompt and itself); the likeliest is
the result, the text as typed favoured by a prior that grows as the strength falls (8 nats at
0.3: on lines of training files it turned wrong edits into none and lost no right fix). One edit
a round: after an edit the text is read again, so a second slip is fixed too.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass

import torch

from sfumato.model.lm_row import Row
from sfumato.model.log_probs import block_positions, target_log_probs

MAX_PROPOSALS = 6  # positions proposing edits, the least likely tokens first
TOP_TOKENS = 3  # a position proposes its likeliest tokens other than the one typed ...
MIN_PROBABILITY = 0.02  # ... that are this likely (the likeliest always, when it is not the typed one)
MAX_ABSORBED = 2  # following tokens a proposed token may also take the place of
MAX_ROUNDS = 3  # one edit a round; a round that keeps the text ends the fix (an alternative has one round)
READ_TOKENS = 256  # queries one reading holds: a fix's sequences are read a group at a time (the attention's memory)
FIX_STRENGTH, FIX_PRIOR = 0.3, 8.0  # at strength 0.3 an edit must be e^8 times likelier than the text as typed


def typed_prior(strength: float) -> float:
    """Nats the text as typed is favoured by at ``strength`` (> 0): a lower strength keeps more."""
    return FIX_PRIOR * FIX_STRENGTH / strength


def proposals(canvas: list[int], probs: torch.Tensor, first: int, table: list[bytes],
              encode: Callable[[str], list[int]], heal: bytes) -> list[list[int]]:
    """The text as it is, then every distinct edit the denoiser proposes at positions from
    ``first`` (``probs`` [C, V]: zero for tokens it may not write), each spelt again by
    ``encode`` as the tokenizer spells its text (edits that split a character or lose the healed
    start ``heal`` are left out). An edit takes the place of, or deletes, only tokens that go on
    a word: a slip never removes a whole word."""
    likely, tokens = probs.topk(TOP_TOKENS, -1)
    typed = [probs[i, canvas[i]].item() for i in range(len(canvas))]

    def proposed(i: int) -> list[int]:
        return [int(t) for r, t in enumerate(tokens[i]) if t != canvas[i] and likely[i, r] > 0
                and (r == 0 or likely[i, r] >= MIN_PROBABILITY)]

    def goes_on_word(j: int) -> bool:
        return j > 0 and _word_char(table[canvas[j]][:1]) and _word_char(table[canvas[j - 1]][-1:])

    where = sorted((i for i in range(first, len(canvas)) if proposed(i)), key=typed.__getitem__)
    out, seen = [canvas], {tuple(canvas)}
    for i in where[:MAX_PROPOSALS]:
        edits = []
        for token in proposed(i):
            edits.append(canvas[:i] + [token] + canvas[i + 1 :])
            for k in range(1, MAX_ABSORBED + 1):
                if i + k >= len(canvas) or not goes_on_word(i + k):
                    break
                edits.append(canvas[:i] + [token] + canvas[i + 1 + k :])
        if goes_on_word(i):
            edits.append(canvas[:i] + canvas[i + 1 :])
        for edit in edits:
            ids = _spelt_again(edit, table, encode, heal)
            if ids and tuple(ids) not in seen:
                seen.add(tuple(ids))
                out.append(ids)
    return out


def _spelt_again(ids: list[int], table: list[bytes], encode: Callable[[str], list[int]], heal: bytes) -> list[int] | None:
    data = b"".join(table[t] for t in ids)
    try:
        return encode(data.decode("utf-8")) if data.startswith(heal) else None
    except UnicodeDecodeError:
        return None


def _word_char(piece: bytes) -> bool:
    return piece.isalnum() or piece == b"_" or piece[:1] >= b"\x80"


@dataclass(frozen=True)
class SequenceQueries:
    """Whole sequences read causally after the cached prompt, side by side in one pass (a block-diagonal mask)."""

    ids: list[int]  # every sequence followed by the suffix's start, one after another
    offsets: list[int]  # each query's position after the cached tokens
    mask: torch.Tensor  # [L, L] bool: which query sees which
    spans: list[tuple[int, int]]  # where each sequence (with its suffix) lies in ids
    suffix_length: int

    @classmethod
    def build(cls, sequences: list[list[int]], suffix: list[int]) -> SequenceQueries:
        ids, offsets, spans = [], [], []
        for seq in sequences:
            start, whole = len(ids), seq + suffix
            ids += whole
            offsets += range(len(whole))
            spans.append((start, len(whole)))
        mask = torch.zeros(len(ids), len(ids), dtype=torch.bool)
        for start, n in spans:
            mask[start : start + n, start : start + n] = torch.tril(torch.ones(n, n, dtype=torch.bool))
        return cls(ids, offsets, mask, spans, len(suffix))

    @property
    def targets(self) -> list[int]:
        """The token each query predicts (the next of its sequence), -1 at a sequence's end."""
        out = [-1] * len(self.ids)
        for start, n in self.spans:
            out[start : start + n - 1] = self.ids[start + 1 : start + n]
        return out

    def scores(self, first_logits: torch.Tensor, target_log_probs: torch.Tensor, prior: float = 0.0) -> list[float]:
        """log p(sequence + suffix start) of each, from the logits after the cached tokens [V]
        and each query's log-probability of its target [L] (``target_log_probs``); the first
        sequence (the text as typed) gets ``prior`` more."""
        first = first_logits.float().log_softmax(-1)
        out = []
        for start, n in self.spans:
            inner = target_log_probs[start : start + n - 1].sum()
            out.append(float(first[self.ids[start]] + inner) + (prior if not out else 0.0))
        return out

    def token_probs(self, first_logits: torch.Tensor, target_log_probs: torch.Tensor) -> Callable[[int], list[float]]:
        """For a sequence's index, the probability of each of its tokens (its suffix left out)."""
        def of(index: int) -> list[float]:
            start, n = self.spans[index]
            first = first_logits.float().softmax(-1)[self.ids[start]]
            return [float(first)] + target_log_probs[start : start + n - self.suffix_length - 1].exp().tolist()
        return of


def read_sequences(light: dict[int, list[list[int]]], suffixes: dict[int, list[int]], read, head, first_logits,
                   priors: dict[int, float]) -> dict[int, tuple[list[float], Callable[[int], list[float]], int]]:
    """Each row's sequences (``light``, each followed by its ``suffixes``) read after the prompt by
    ``read`` (queries by row -> last hidden states [R, L, H]), whole sequences of every row in
    groups of about ``READ_TOKENS`` queries; per row: every sequence's score (the first, the text
    as typed, with its ``priors``), its token probabilities by index, and the readings run."""
    groups = {b: _groups(seqs, len(suffixes[b])) for b, seqs in light.items()}
    scores: dict[int, list[float]] = {b: [] for b in light}
    parts: dict[int, list] = {b: [] for b in light}  # (index of the group's first sequence, queries, read)
    for k in range(max(len(g) for g in groups.values())):
        queries = {b: SequenceQueries.build(g[k], suffixes[b]) for b, g in groups.items() if k < len(g)}
        hidden = read(queries)
        for b, q in queries.items():
            log_probs = target_log_probs(hidden[b, : len(q.ids)], head, q.targets, block_positions(first_logits.shape[-1]))
            parts[b].append((len(scores[b]), q, log_probs))
            scores[b] += q.scores(first_logits[b], log_probs, priors[b] if k == 0 else 0.0)

    def token_probs(b: int) -> Callable[[int], list[float]]:
        def of(index: int) -> list[float]:
            first, q, log_probs = next(part for part in reversed(parts[b]) if part[0] <= index)
            return q.token_probs(first_logits[b], log_probs)(index - first)
        return of
    return {b: (scores[b], token_probs(b), len(groups[b])) for b in light}


def _groups(sequences: list[list[int]], suffix_length: int) -> list[list[list[int]]]:
    out, current, size = [], [], 0
    for seq in sequences:
        if current and size + len(seq) + suffix_length > READ_TOKENS:
            out.append(current)
            current, size = [], 0
        current.append(seq)
        size += len(seq) + suffix_length
    return out + [current]


def settle(row: Row, sequences: list[list[int]], scores: torch.Tensor, token_probs: Callable[[int], list[float]],
           readings: int) -> None:
    """The row's result is the likeliest sequence (an alternative's row draws one by likelihood);
    after an edit, a greedy row reads its text again (``MAX_ROUNDS``)."""
    pick = (int(torch.multinomial((scores / row.temperature).softmax(0), 1, generator=row.generator))
            if row.temperature else int(scores.argmax()))
    chosen = sequences[pick]
    matcher = difflib.SequenceMatcher(None, row.canvas, chosen, autojunk=False)
    row.generated += sum(b1 - b0 for op, _, _, b0, b1 in matcher.get_opcodes() if op != "equal")  # the model's tokens
    row.canvas, row.masked, row.confidence = chosen, [False] * len(chosen), token_probs(pick)
    row.passes += readings
    row.fix_rounds += 1
    row.fixing = pick != 0 and not row.temperature and row.fix_rounds < MAX_ROUNDS  # a second slip: another round
    row.done = not row.fixing
