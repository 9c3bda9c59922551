"""Training examples for the adapted LM: each one infill as the engine lays it out (``sfumato.model.lm_layout``).

A suffix and a prefix cut from a training document, and a canvas of C tokens holding the middle
(closed by ``<|endoftext|>`` padding). Half the prompts hold the project's snippets before the
prefix, chosen as the editor chooses them (other files of the document's unit); a window that
begins a file sometimes has the file's start as its middle and no prefix at all. Two kinds of noise,
as the engine uses them:

* infill / rewrite: every canvas token is masked with probability t ~ U(0, 1) (a rewrite at
  strength s is the case t = s), or (``LEFT_TO_RIGHT_SHARE``) every token from a random point on,
  the state a line is in while the engine writes it left to right; the loss is cross-entropy on
  the masked positions. With ``causal`` (``--causal``), that share of them masks nothing and takes the loss at
  every position, each read left to right (fill-in-the-middle, teacher-forced): the engine's text
  is written by exactly that reading (``sfumato.model.lm_settle``), which the masked examples
  train at one position of a written start and a masked rest (a masked position's own prediction
  the engine no longer reads: its guesses come from the prompt).
* fix: one or two canvas tokens are swapped for a wrong one (a token of the same document, as a
  wrong identifier would be) and a few more masked; the loss covers every canvas position, so
  the model learns to give a corrupted text back correct and to keep what is right.

With ``suffix_led`` (``--suffix-led``), that share of middles is a line that only the suffix tells.
"""

from __future__ import annotations

import difflib
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import NamedTuple

from sfumato.model.lm_base import TRAINED_PREFIX
from sfumato.model.lm_engine import context_ids
from sfumato.model.lm_layout import SpecialIds, prompt_ids
from sfumato.model.token_text import token_bytes_table
from sfumato.model.training.edit_tasks import corrupt

CANVAS_SIZES = (16, 32)
MAX_PREFIX, MAX_SUFFIX = TRAINED_PREFIX, 96  # the most tokens an example shows before / after its middle (--prefix: a run's own)
FIX_SHARE = 0.3
SLIP_SHARE = 0.6  # of fix examples: a slip of the hand re-tokenised (else a token swapped for another)
LINE_SHARE = 0.5  # middles that are exactly one line's tokens (the editor's commonest request)
WORDS_SHARE = 0.25  # middles of 1 to WORDS_MAX words inside a line
WORDS_MAX = 4
LEFT_TO_RIGHT_SHARE = 0.4  # of infill examples: a written start and a masked rest, not scattered masks
CONTEXT_SHARE = 0.5  # of examples: the project's snippets before the prefix, as the editor sends them
FILE_START_SHARE = 0.2  # of windows that begin a file: the middle begins it too, with no prefix at all
SELF_LEFT_TO_RIGHT = 0.7  # of self examples (adapt --self-targets): a written start and a masked rest (the state the engine decodes in)
NAME_CHARS = 3  # a name token (``Vocabulary.names``) has at least these letters


@dataclass(frozen=True)
class Vocabulary:
    """What example making needs to know of the tokenizer."""
    special: SpecialIds
    newlines: frozenset[int]  # tokens that hold a line break
    word_starts: frozenset[int]  # tokens that begin a word after a space ("Ġword")
    names: Mapping[int, bytes]  # tokens of NAME_CHARS or more letters: their letters (" name" and "name" alike)
    encode: Callable[[str], list[int]]
    decode: Callable[[list[int]], str]
    context: Callable[[Sequence[str]], list[int]]  # snippets as the engine lays them out

    @classmethod
    def of(cls, tokenizer) -> Vocabulary:
        table = token_bytes_table(tokenizer)
        return cls(SpecialIds.of(tokenizer),
                   frozenset(i for i, piece in enumerate(table) if b"\n" in piece),
                   frozenset(i for i, piece in enumerate(table) if piece[:1] == b" " and piece[1:2].isalnum()),
                   {i: piece.lstrip(b" ") for i, piece in enumerate(table)
                    if len(piece.lstrip(b" ")) >= NAME_CHARS and piece.lstrip(b" ").isalpha()},
                   lambda text: tokenizer(text, add_special_tokens=False).input_ids,
                   lambda ids: tokenizer.decode(ids),
                   lambda snippets: context_ids(tokenizer, snippets))


class Example(NamedTuple):
    """One training example: the prompt and the canvas as shown, what the canvas should hold, the
    loss weight of each canvas position. ``both_ways``: every canvas position reads the whole canvas
    (a fix, as the engine reads a rewrite's text); otherwise a position shown a token reads the
    canvas left to right and a masked one both ways, as the engine's passes read an infill."""
    ids: list[int]
    prompt_len: int
    target: list[int]
    weight: list[float]
    both_ways: bool = False


def make_example(tokens: list[int], rng: random.Random, vocab: Vocabulary, at_start: bool = False,
                 snippets: Callable[[str, str], Sequence[str]] | None = None, causal: float = 0.0,
                 max_prefix: int = MAX_PREFIX, suffix_led: float = 0.0, header: Sequence[int] = ()):
    """An ``Example``, or None for a window too short.
    ``at_start``: the tokens begin a file, so a middle may begin there too; ``snippets`` gives the
    project context for a prefix and suffix (text), which ``CONTEXT_SHARE`` of examples get;
    ``causal``: the share of infill examples read left to right whole (``--causal``);
    ``max_prefix``: the most tokens of the text before the middle (``--prefix``);
    ``suffix_led``: the share of examples whose middle is a ``_suffix_led_line`` (``--suffix-led``);
    ``header``: the tokens that head the document's prefix, as the engine's ``document_header`` does."""
    if len(tokens) < 24:
        return None
    special = vocab.special
    canvas = rng.choice(CANVAS_SIZES)
    led = _suffix_led_line(tokens, rng, canvas, vocab, max_prefix) if suffix_led and rng.random() < suffix_led else None
    if led is not None:
        start, length = led
    elif at_start and rng.random() < FILE_START_SHARE:
        start, length = 0, _first_line_length(tokens, rng, canvas, vocab)
    else:
        start, length = pick_middle(tokens, rng, canvas, vocab)
    middle = tokens[start : start + length]
    prefix = tokens[max(0, start - (max_prefix if led else rng.randint(8, max_prefix))) : start]
    suffix_len = MAX_SUFFIX if led else 0 if rng.random() < 0.2 else rng.randint(1, MAX_SUFFIX)
    suffix = tokens[start + length : start + length + suffix_len]
    prefix = [*header, *prefix]
    if snippets is not None and rng.random() < CONTEXT_SHARE:
        prefix = vocab.context(snippets(vocab.decode(prefix), vocab.decode(suffix))) + prefix
    fix = rng.random() < FIX_SHARE
    slip = _slip(middle, tokens, rng, vocab) if fix and rng.random() < SLIP_SHARE else None
    if slip is not None:
        shown, target, wrong = slip
        shown, target = (shown + [special.end] * canvas)[:canvas], (target + [special.end] * canvas)[:canvas]
        for i in range(len(shown)):
            # the engine renoises what it finds least likely: sometimes the slip itself, sometimes not
            if (i in wrong and rng.random() < 0.5) or rng.random() < 0.15:
                shown[i] = special.mask
        prompt = prompt_ids(special, prefix, suffix)
        return Example(prompt + shown, len(prompt), target, [1.0] * canvas, both_ways=True)
    target = (middle + [special.end] * canvas)[:canvas]
    shown, weight = list(target), [0.0] * canvas
    if fix:
        for i in rng.sample(range(min(len(middle), canvas)), k=min(len(middle), rng.randint(1, 2))):
            wrong = rng.choice(tokens)
            shown[i] = wrong if wrong != target[i] else special.mask
        for i in range(canvas):
            if rng.random() < 0.15:
                shown[i] = special.mask
        weight = [1.0] * canvas
    elif causal and rng.random() < causal:  # every position shown, each predicted from the text before it
        weight = [1.0] * canvas
    elif rng.random() < LEFT_TO_RIGHT_SHARE:
        # the state a line's decoding is in: the start written, everything after it still masked
        for i in range(rng.randrange(min(len(middle), canvas)), canvas):
            shown[i], weight[i] = special.mask, 1.0
    else:
        t = rng.random()
        for i in range(canvas):
            if rng.random() < t:
                shown[i], weight[i] = special.mask, 1.0
        if not any(weight):
            i = rng.randrange(canvas)
            shown[i], weight[i] = special.mask, 1.0
    prompt = prompt_ids(special, prefix, suffix)
    return Example(prompt + shown, len(prompt), target, weight, both_ways=fix)


def self_example(record: dict, rng: random.Random, vocab: Vocabulary):
    """An example whose middle is what the engine wrote there (a ``self_targets`` record), masked
    from a random point on or at random: the model learns to be sure, in parallel, of the tokens it
    would write one pass after another. Laid out as ``make_example`` lays out a line or a span."""
    special = vocab.special
    canvas = CANVAS_SIZES[0] if record["one_line"] else CANVAS_SIZES[-1]
    written = record["target"][:canvas]
    target = written + [special.end] * (canvas - len(written))
    shown, weight = list(target), [0.0] * canvas
    if rng.random() < SELF_LEFT_TO_RIGHT:
        masked = range(rng.randrange(len(written)), canvas)
    else:
        t = rng.random()
        masked = [i for i in range(canvas) if rng.random() < t] or [rng.randrange(canvas)]
    for i in masked:
        shown[i], weight[i] = special.mask, 1.0
    prefix = (vocab.context(record["snippets"]) if record["snippets"] else []) + record["prefix"]
    prompt = prompt_ids(special, prefix, record["suffix"])
    return Example(prompt + shown, len(prompt), target, weight)


def _slip(middle: list[int], tokens: list[int], rng: random.Random, vocab: Vocabulary):
    """The middle as typed with one slip (a dropped, doubled or swapped letter, a wrong name:
    ``edit_tasks.corrupt``) and re-tokenised, aligned with the correct tokens: (shown, target,
    positions that differ). Where the correct text needs fewer tokens, ``<|endoftext|>`` deletes
    the extra positions, as it does in the engine's rewrite. None when no slip fits in place."""
    text = vocab.decode(middle)
    typed = corrupt(text, vocab.decode(tokens), rng)
    if typed is None or typed == text:
        return None
    shown = vocab.encode(typed)
    target, wrong = [], set()
    for op, a0, a1, b0, b1 in difflib.SequenceMatcher(None, shown, middle, autojunk=False).get_opcodes():
        if op != "equal":
            if b1 - b0 > a1 - a0:
                return None  # the right text needs more positions than the slip left
            wrong.update(range(a0, a1))
        target += middle[b0:b1] + [vocab.special.end] * ((a1 - a0) - (b1 - b0))
    return shown, target, wrong


def _first_line_length(tokens, rng, canvas, vocab: Vocabulary) -> int:
    """The file's first line (what the cursor on a new file's first line writes), or a span."""
    first_break = next((i for i, t in enumerate(tokens) if t in vocab.newlines), len(tokens))
    if rng.random() < LINE_SHARE and 0 < first_break <= canvas:
        return first_break
    return min(rng.randint(1, canvas + 8), len(tokens))


def _suffix_led_line(tokens, rng, canvas, vocab: Vocabulary, max_prefix: int):
    """A line (fitting the canvas) that holds a name the text after it uses and the text before it
    does not, as (start, length); None when the window has none. Only the suffix tells such a
    middle: examples of them teach the model to read it (the base reads left to right only)."""
    breaks = [i for i, t in enumerate(tokens) if t in vocab.newlines]
    names = [vocab.names.get(t) for t in tokens]
    found = []
    for a, b in pairwise(breaks):
        if 0 < b - a - 1 <= canvas:
            before, after = set(names[max(0, a + 1 - max_prefix) : a + 1]), set(names[b : b + MAX_SUFFIX])
            if any(name and name in after and name not in before for name in names[a + 1 : b]):
                found.append((a + 1, b - a - 1))
    return rng.choice(found) if found else None


def pick_middle(tokens, rng, canvas, vocab: Vocabulary):
    """A line's tokens (between two newline tokens), a few words inside a line (a gap in a
    sentence) or a random span; at least 1 token."""
    kind = rng.random()
    if kind < LINE_SHARE:
        breaks = [i for i, t in enumerate(tokens) if t in vocab.newlines and 8 <= i < len(tokens) - 2]
        if len(breaks) >= 2:
            k = rng.randrange(len(breaks) - 1)
            start, end = breaks[k] + 1, breaks[k + 1]
            if 0 < end - start:
                return start, end - start
    elif kind < LINE_SHARE + WORDS_SHARE:
        starts = [i for i in range(8, len(tokens) - 1) if tokens[i] in vocab.word_starts]
        if len(starts) >= 2:
            k = rng.randrange(len(starts) - 1)
            words = rng.randint(1, WORDS_MAX)
            end = starts[min(k + words, len(starts) - 1)]
            cut = next((i for i in range(starts[k], end) if tokens[i] in vocab.newlines), end)
            if cut > starts[k]:
                return starts[k], cut - starts[k]
    start = rng.randrange(8, len(tokens) - 1)
    return start, min(rng.randint(1, canvas + 8), len(tokens) - start)
