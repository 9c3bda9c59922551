"""Where a gap inside a line ends: at the cut after which the model finds the rest of the line likeliest.

A denoiser filling ``Keep a copy on another [gap] and check it`` rarely ends its canvas at the gap's
end: it writes on (``machine, and keep it safe``). Every cut at a word start is scored, in one
forward pass over the cached prompt, by the causal reading of the text up to the cut followed by
the suffix's first tokens: log p(text[:k]) + log p(suffix start | text[:k]). The queries are a tree:
the text once, then one copy of the suffix's start per cut, each seeing only the text before its cut.
The model's own likelihood picks the cut, with a small bonus for each word kept (``WORD_BONUS``).

The same score ranks a gap's branches: rows that begin with the first word's likeliest choices
(``BRANCHES``; ``sfumato.model.lm_settle``), each greedy after it and cut; the best scored is the
result, the next ones its alternatives. The suffix then chooses the first word as well as the end:
on held-out documentation gaps (120) 18 exact, similarity 0.443 and 18 / 0.473 (seeds 1 and 2),
against 16 / 0.423 and 15 / 0.448 from the likeliest first word alone (docs/training.md, session 31).
A line a heavy rewrite writes again is branched the same way; its end is its line break, so it is
scored whole (the line, then the suffix's start, the same bonus a word): held-out 3-6 line rewrites
parse 11 -> 19 and 14 -> 13 of 30 (seeds 1, 2), 37 -> 43 and 33 -> 38 of 60 (seeds 3, 4; session 33).
Ctrl+K's line at a blank line is branched and scored whole too (session 34, once bfloat16 layers
made two branches fit the single line's time goal).

A token may join a gap's end to what follows it (one token holds a docstring's full stop and its
closing quotes, another a list item's closing quote and comma), so cuts are also made inside a token,
before its punctuation: the kept part of the token and the suffix's start are encoded together and
scored as the continuation (``inner_cuts``). Without them a docstring before its closing quotes
could only be cut at a word start (the first word alone, once). And where the model's own line ends
as the suffix's line does (it wrote the closing quotes, the closing bracket), it ended the gap
itself: the cut is there, unscored (``own_end``); a likelihood would rather have had a shorter text.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate

import torch

from sfumato.model.api import InfillRequest
from sfumato.model.line_rewrite import fits_its_place, reads_its_own_target
from sfumato.model.project_context import copies_the_header
from sfumato.model.lm_row import Row
from sfumato.model.log_probs import block_positions, log_probs_at
from sfumato.model.template import within_its_line

SUFFIX_SCORE_TOKENS = 8  # of the suffix, what a cut is scored on
# Nats added to a cut's score for each word it keeps. A likelihood prefers fewer words: without it,
# 64 of 120 held-out prose gaps came back shorter than the words taken out (``To use [the] your
# proxy``). Chosen among 0.5, 1 and 2 on one set of gaps, confirmed on two others (docs/training.md, session 29).
WORD_BONUS = 1.0
BRANCHES = 2  # a gap's rows: its first word's likeliest choices
PUNCTUATION = frozenset(string.punctuation.encode())
SENTENCE_END = re.compile(rb"[.!?](?:\s|$)")  # a suffix that ends the sentence: the gap's text holds no end of its own


def cut_candidates(pieces: list[bytes], first: int = 1) -> list[int]:
    """Cuts k (the text is tokens[:k], k >= ``first``) where the next token starts a new word, and
    the whole text; a cut never splits a word."""
    return [k for k in range(first, len(pieces) + 1) if k == len(pieces) or not pieces[k][:1].isalnum()]


def word_count(pieces: list[bytes]) -> int:
    """Words in the text ``pieces`` spell (what ``WORD_BONUS`` counts)."""
    return len(b"".join(pieces).split())


def inner_cuts(pieces: list[bytes], first: int = 1) -> list[tuple[int, int]]:
    """Cuts inside a token, (j, c): the text is pieces[:j] + pieces[j][:c], where the part of piece j
    that goes starts with punctuation and is ASCII (so it is that many characters)."""
    return [(j, c) for j in range(max(0, first - 1), len(pieces)) for c in range(1, len(pieces[j]))
            if pieces[j][c] in PUNCTUATION and pieces[j][c:].isascii()]


def own_end(pieces: list[bytes], suffix_line: bytes) -> tuple[int, int] | None:
    """Where the text, ``pieces`` up to its line's end, ends with the suffix's line (white space
    around it aside): (tokens kept, characters the last of them drops); None if it does not, or
    if nothing would be left before it. A suffix's line that ends a sentence (``[MASK].``) ends
    the text at its first sentence end, not after the sentences it ran on with."""
    text, wanted = b"".join(pieces).rstrip(), suffix_line.strip()
    if not wanted or not text.endswith(wanted) or not text[: -len(wanted)].strip():
        return None
    first = text.find(wanted + b" ") if wanted.endswith((b".", b"!", b"?")) else -1
    at, spelt = first if first > 0 and text[:first].strip() else len(text) - len(wanted), 0
    for j, piece in enumerate(pieces):
        if spelt + len(piece) > at:
            tail = piece[at - spelt :]
            return (j, 0) if at == spelt else (j + 1, len(tail.decode("utf-8", "replace")))
        spelt += len(piece)
    return None


@dataclass(frozen=True)
class Cut:
    """Where a gap's text ends: after ``tokens`` whole tokens, then ``continuation`` is scored (the
    suffix's start; for a cut inside a token, the part of it kept and the suffix's start, encoded
    together). A cut inside a token keeps that token but its last ``drop`` characters."""

    tokens: int
    continuation: list[int]
    drop: int = 0
    words: int = 0  # in the text it keeps (``WORD_BONUS``)

    @property
    def keep(self) -> int:
        """The tokens the result keeps."""
        return self.tokens + (1 if self.drop else 0)


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
    ids: list[int]  # the text, then each cut's continuation
    offsets: list[int]  # each query's position after the cached tokens
    mask: torch.Tensor  # [L, L] bool: which query sees which
    cuts: list[Cut]
    text: int  # the text's length in tokens

    @classmethod
    def build(cls, text: list[int], cuts: list[Cut]) -> CutQueries:
        n = len(text)
        length = n + sum(len(cut.continuation) for cut in cuts)
        mask = torch.zeros(length, length, dtype=torch.bool)
        mask[:n, :n] = torch.tril(torch.ones(n, n, dtype=torch.bool))
        ids, offsets = list(text), list(range(n))
        for cut in cuts:
            start, m, k = len(ids), len(cut.continuation), cut.tokens
            mask[start : start + m, :k] = True
            mask[start : start + m, start : start + m] = torch.tril(torch.ones(m, m, dtype=torch.bool))
            ids += cut.continuation
            offsets += range(k, k + m)
        return cls(ids, offsets, mask, cuts, n)

    def best(self, first_logits: torch.Tensor, hidden: torch.Tensor, head: Callable[[torch.Tensor], torch.Tensor]) -> tuple[Cut, float]:
        """The cut with the highest score, and its score."""
        scores = [score + WORD_BONUS * cut.words for score, cut in zip(self.scores(first_logits, hidden, head), self.cuts)]
        best = max(range(len(scores)), key=scores.__getitem__)
        return self.cuts[best], scores[best]

    def scores(self, first_logits: torch.Tensor, hidden: torch.Tensor, head: Callable[[torch.Tensor], torch.Tensor]) -> list[float]:
        """Each cut's log p(text[:k] + continuation), from the logits after the cached tokens [V]
        and the queries' last hidden states [L, H] read by the output layer ``head``."""
        n = self.text
        rows, tokens = list(range(n)), list(self.ids[:n])  # row 0: the cached tokens' logits; row i: query i - 1's
        start = n
        for cut in self.cuts:  # the text's token k-1 (row k) predicts a continuation's first token
            rows += [cut.tokens, *range(start + 1, start + len(cut.continuation))]
            tokens += cut.continuation
            start += len(cut.continuation)
        rows_t, tokens_t = torch.tensor(rows), torch.tensor(tokens)
        first = rows_t == 0
        log_probs = log_probs_at(hidden, head, (rows_t - 1).clamp(min=0), tokens_t, block_positions(first_logits.shape[-1]))
        log_probs[first] = first_logits.float().log_softmax(-1)[tokens_t[first]]
        text_lp = torch.cat([torch.zeros(1), log_probs[:n].cumsum(0)])
        scores, start = [], n
        for cut in self.cuts:
            scores.append(float(text_lp[cut.tokens] + log_probs[start : start + len(cut.continuation)].sum()))
            start += len(cut.continuation)
        return scores


def gap_queries(row: Row, table: list[bytes], encode: Callable[[str], list[int]], ends: tuple[int, ...]) -> CutQueries | None:
    """The queries that score each cut of a gap row's text (canvases already committed included).
    None where the model closed the line as the suffix does (the cut is its own end, and the row's
    score the highest there is) or wrote nothing to keep (the lowest)."""
    ids, pieces = text_pieces(row, table, ends)
    line_end = next((k for k, piece in enumerate(pieces) if b"\n" in piece), len(pieces))
    first = 2 if pieces and not pieces[0] else 1  # not the healed start alone
    if row.whole_line:  # one cut: the line's end
        if line_end < first:
            row.score = -math.inf
            return None
        return CutQueries.build(ids[:line_end], [Cut(line_end, row.gap_suffix, words=word_count(pieces[:line_end]))])
    suffix = b"".join(table[t] for t in row.gap_suffix)
    ended = own_end(pieces[:line_end], suffix.split(b"\n", 1)[0])
    if ended:
        (row.cut, row.cut_chars), row.score = ended, math.inf
        return None
    last, inner_end = len(pieces), line_end  # the whole text; a cut inside a token before the line's end
    if SENTENCE_END.match(suffix.split(b"\n", 1)[0].strip()) and (end := SENTENCE_END.search(b"".join(pieces))):
        before = sum(1 for spelt in accumulate(map(len, pieces)) if spelt <= end.start())
        if before < line_end:  # the suffix ends the sentence: no cut past the text's own first sentence end
            line_end = last = before
            inner_end = before + 1
    cuts = [Cut(k, row.gap_suffix, words=word_count(pieces[:k])) for k in cut_candidates(pieces, first)
            if k <= line_end or k == last]  # within the gap's line, or the whole text
    cuts += [Cut(j, encode((pieces[j][:c] + suffix).decode("utf-8", "replace")), len(pieces[j]) - c,
                 word_count(pieces[:j] + [pieces[j][:c]]))
             for j, c in inner_cuts(pieces, first)
             if j < inner_end and pieces[j] == table[ids[j]]]  # not inside the healed start
    if not cuts:  # no text to keep
        row.score = -math.inf
        return None
    return CutQueries.build(ids, cuts)


def is_inside_line(request: InfillRequest) -> bool:
    """A gap with text after it on its line (``math.[MASK](16)``, a cursor before ``port 8080``)."""
    return not request.is_rewrite and bool(request.suffix.split("\n", 1)[0].strip())


def is_blank_line(request: InfillRequest) -> bool:
    """A line to write alone on its line: Ctrl+K's at a blank line, or a line a heavy rewrite writes again."""
    return request.one_line and not request.is_rewrite and not within_its_line(request.prefix, request.suffix)


def is_branched(request: InfillRequest, whole_lines: bool = True) -> bool:
    """Whether a request is written from its first word's likeliest choices, a row a branch, the
    best scored kept: a gap inside a line, or (``whole_lines``) a line at a blank line."""
    return is_inside_line(request) or (whole_lines and is_blank_line(request))


def row_count(request: InfillRequest, whole_lines: bool = True) -> int:
    """A request's rows: one an alternative, or for a branched request one a branch."""
    if is_branched(request, whole_lines):
        return max(request.first_alternative + request.n_alternatives, BRANCHES)
    return request.n_alternatives


def rank_branches(group: list[Row], request: InfillRequest, text_of: Callable[[Row], str]) -> None:
    """A request's branches (rows with a suffix to score) in the order of their scores, the best
    first, where a heavy rewrite writes a line again those that keep the line's structure
    (``line_rewrite.fits_its_place``) before those that do not, which keep the line as it was
    (``Row.keeps_line``: a line that breaks the code around it is no rewrite), and those that read
    the name their own statement assigns first (``line_rewrite.reads_its_own_target``), or only copy
    the document's header (``project_context.copies_the_header``), after those that do not: its
    alternatives are the best, from the ``first_alternative``-th on (Try Again shows the ones after
    those shown); with no suffix to score (the end of the file) they stay in their first words' order.
    Any other request's rows are its alternatives already."""
    if not group[0].branch:
        return
    if group[0].gap_suffix and all(row.score is not None for row in group):
        flawed = {}
        for row in group:
            written = text_of(row)
            row.keeps_line = row.replaces is not None and not fits_its_place(written, row.replaces, request.prefix, request.suffix,
                                                                             row.selection_rest)
            flawed[id(row)] = (reads_its_own_target(written, request.prefix, request.suffix)
                               or copies_the_header(written, request.file_name))
        group.sort(key=lambda row: (row.keeps_line, flawed[id(row)], -row.score))
    group[:] = group[request.first_alternative : request.first_alternative + request.n_alternatives]
