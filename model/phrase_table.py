"""A table of short phrases keyed by the words around them, for gaps inside a line of prose.

For every run of 1-4 words (whitespace-separated, as typed) in the training corpus's English
documentation, the words around it within its paragraph give keys, lower-cased:

* ``gap2``: two words before and two after, the strongest evidence;
* ``gapleft`` / ``gapright``: two words on one side, one on the other;
* ``gap1``: one word either side.

Each key keeps the phrases seen most often under it (``sfumato.model.hashed_table`` stores them). A gap's
candidates are the phrases under all four keys, ordered by their share of each key's sightings,
weighted by the key's strength: the gap's length is unknown, and the wider keys tell it best.

When no gap key knows the words around a gap (about two gaps in five), the two side keys propose:
``after1`` keeps the phrases of 1-2 words seen after the word before, ``before1`` those seen
before the word after, and a phrase is ranked by the product of its two shares (kind ``sides``).
Such a phrase is a guess: on dev it raised the character similarity of those gaps from 0.11 to
about 0.20 and was exact once in 82.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from sfumato.model.hashed_table import HashedTable, key_hash, write

GAP_KINDS = ("gap2", "gapleft", "gapright", "gap1")
SIDE_KINDS = ("after1", "before1")
SIDES = "sides"  # the kind of a phrase the two side keys proposed together
KIND_WEIGHT = {"gap2": 8.0, "gapleft": 3.0, "gapright": 3.0, "gap1": 1.0}
MIN_COUNT = {"gap2": 2, "gapleft": 2, "gapright": 2, "gap1": 2, "after1": 3, "before1": 3}
KEEP = {"gap2": 4, "gapleft": 4, "gapright": 4, "gap1": 4, "after1": 32, "before1": 32}
MAX_WORDS = 4
SIDE_WORDS = 2  # the longest phrase the side keys keep
SHARE_FLOOR = 0.01  # a side's share for a phrase it did not propose
EDGE = "\x02"  # the word beyond a paragraph's first or last
PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


def gap_keys(left: list[str], right: list[str]) -> dict[str, int]:
    """The hashed keys of a gap after the words ``left`` and before the words ``right``."""
    l2, l1 = ([EDGE, EDGE] + [word.lower() for word in left[-2:]])[-2:]
    r1, r2 = ([word.lower() for word in right[:2]] + [EDGE, EDGE])[:2]
    return {
        "gap2": key_hash("gap2", l2, l1, r1, r2),
        "gapleft": key_hash("gapleft", l2, l1, r1),
        "gapright": key_hash("gapright", l1, r1, r2),
        "gap1": key_hash("gap1", l1, r1),
    }


def side_keys(left: list[str], right: list[str]) -> dict[str, int]:
    """The hashed keys of the word before a gap and of the word after it, each alone."""
    l1 = left[-1].lower() if left else EDGE
    r1 = right[0].lower() if right else EDGE
    return {"after1": key_hash("after1", l1), "before1": key_hash("before1", r1)}


def words_around(prefix: str, suffix: str) -> tuple[list[str], list[str]]:
    """The words of the cursor's paragraph before and after the region."""
    return PARAGRAPH_BREAK.split(prefix)[-1].split(), PARAGRAPH_BREAK.split(suffix, 1)[0].split()


def phrases_with_context(text: str) -> Iterator[tuple[list[str], str, list[str]]]:
    """(two words before, phrase, two words after) for every run of 1-``MAX_WORDS`` words in
    each paragraph of ``text``."""
    for paragraph in PARAGRAPH_BREAK.split(text):
        words = paragraph.split()
        for i in range(len(words)):
            for length in range(1, min(MAX_WORDS, len(words) - i) + 1):
                yield words[max(0, i - 2) : i], " ".join(words[i : i + length]), words[i + length : i + length + 2]


@dataclass(frozen=True)
class Phrase:
    text: str
    kind: str  # the strongest key that proposed it
    count: int  # how often it sat under that key
    score: float  # the weighted share of sightings over all keys


class PhraseTable(HashedTable):
    """Phrases seen between given words in the training corpus."""

    def lookup(self, left: list[str], right: list[str], limit: int = 6) -> list[Phrase]:
        """The ``limit`` best phrases for a gap between the words ``left`` and ``right``."""
        scores: dict[int, float] = {}
        strongest: dict[int, tuple[str, int]] = {}
        for kind, key in gap_keys(left, right).items():
            found = self.under(key)
            total = sum(count for _, count in found)
            for index, count in found:
                scores[index] = scores.get(index, 0.0) + KIND_WEIGHT[kind] * count / total
                strongest.setdefault(index, (kind, count))
        if not scores:
            return self.by_sides(left, right, limit)
        best = sorted(scores, key=lambda index: -scores[index])[:limit]
        return [Phrase(self.text(index), *strongest[index], scores[index]) for index in best]

    def by_sides(self, left: list[str], right: list[str], limit: int) -> list[Phrase]:
        """Phrases of 1-2 words that often follow the word before and often precede the word after."""
        counts, shares = {}, []
        for key in side_keys(left, right).values():
            found = self.under(key)
            total = sum(count for _, count in found)
            shares.append({index: count / total for index, count in found})
            for index, count in found:
                counts[index] = max(count, counts.get(index, 0))
        after, before = shares
        scores = {index: math.log(after.get(index, 0.0) + SHARE_FLOOR) + math.log(before.get(index, 0.0) + SHARE_FLOOR)
                  for index in counts}
        best = sorted(scores, key=lambda index: -scores[index])[:limit]
        return [Phrase(self.text(index), SIDES, counts[index], math.exp(scores[index])) for index in best]


def keys_of(left: list[str], phrase: str, right: list[str]) -> Iterator[tuple[int, int]]:
    """(kind index, key hash) of every key a sighting of ``phrase`` counts under."""
    yield from enumerate(gap_keys(left, right).values())
    if phrase.count(" ") < SIDE_WORDS:
        yield from enumerate(side_keys(left, right).values(), start=len(GAP_KINDS))


def build(texts: Iterable[str], folder: Path) -> dict:
    """Write the phrase table of ``texts`` into ``folder``. Returns sizes."""
    entries = (
        (kind_index, key, phrase)
        for text in texts
        for left, phrase, right in phrases_with_context(text)
        for kind_index, key in keys_of(left, phrase, right)
    )
    kinds = (*GAP_KINDS, *SIDE_KINDS)
    return write(entries, folder, [MIN_COUNT[kind] for kind in kinds], [KEEP[kind] for kind in kinds])
