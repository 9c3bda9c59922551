"""A compact table of lines keyed by their neighbours, built from the training corpus.

For every non-blank line of the training split, its nearest non-blank neighbours give keys:

* ``pair``: (the line above, the line below), the strongest evidence;
* ``above``: the two lines above;
* ``above1`` / ``below``: one neighbour alone, the weakest.

Each key keeps the few lines seen most often under it, with their counts. Neighbour text is
whitespace-normalised before hashing; the storage is ``sfumato.model.hashed_table``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from sfumato.model.hashed_table import HashedTable, key_hash, write

KEY_KINDS = ("pair", "above", "above1", "below")
START, END = "\x02", "\x03"  # the neighbour of a file's first / last line
MIN_COUNT = {"pair": 1, "above": 2, "above1": 3, "below": 3}


def normalise(line: str) -> str:
    """Whitespace-normalised text: what makes two lines the same line here."""
    return " ".join(line.split())


def neighbour_keys(above2: str, above: str, below: str) -> dict[str, int]:
    """The hashed keys of a line whose nearest non-blank neighbours (normalised) are given."""
    return {
        "pair": key_hash("pair", above, below),
        "above": key_hash("above", above2, above),
        "above1": key_hash("above1", above),
        "below": key_hash("below", below),
    }


def lines_with_neighbours(text: str) -> Iterator[tuple[str, str, str, str]]:
    """(above2, above, line, below) for each non-blank line: neighbours normalised, the line
    stripped of its indentation and trailing blanks (the text a cursor after the indentation writes)."""
    lines = [line.strip() for line in text.split("\n")]
    lines = [line for line in lines if line]
    keys = [START, START, *map(normalise, lines), END]
    for i, line in enumerate(lines):
        yield keys[i], keys[i + 1], line, keys[i + 3]


@dataclass(frozen=True)
class Proposal:
    text: str
    kind: str  # the key kind that proposed it
    count: int


class LineTable(HashedTable):
    """Lines seen between given neighbours in the training corpus."""

    def lookup(self, above2: str, above: str, below: str) -> list[Proposal]:
        """Lines seen between these neighbours, strongest key first, most frequent first within a key."""
        found: list[Proposal] = []
        seen: set[int] = set()
        for kind, key in neighbour_keys(above2, above, below).items():
            for index, count in self.under(key):
                if index not in seen:
                    seen.add(index)
                    found.append(Proposal(self.text(index), kind, count))
        return found


def build(texts: Iterable[str], folder: Path, keep: int = 3) -> dict:
    """Write the table for ``texts`` into ``folder``: per key, its ``keep`` most frequent lines
    seen at least ``MIN_COUNT[kind]`` times. Returns sizes."""
    entries = (
        (kind_index, key, line)
        for text in texts
        for above2, above, line, below in lines_with_neighbours(text)
        for kind_index, key in enumerate(neighbour_keys(above2, above, below).values())
    )
    return write(entries, folder, [MIN_COUNT[kind] for kind in KEY_KINDS], [keep] * len(KEY_KINDS))
