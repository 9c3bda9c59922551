"""A compact table of lines keyed by their neighbours, built from the training corpus.

For every non-blank line of the training split, its nearest non-blank neighbours give keys:

* ``pair``: (the line above, the line below), the strongest evidence;
* ``above``: the two lines above;
* ``above1`` / ``below``: one neighbour alone, the weakest.

Each key keeps the few lines seen most often under it, with their counts. Neighbour text is
whitespace-normalised before hashing; keys are 32-bit BLAKE2 hashes (at ~4M entries a lookup
meets a foreign key about once in a thousand), so the table stores no key text. Files, numpy
``.npy`` memory-mapped on open, so opening costs milliseconds and pages come in as lookups touch
them::

    keys.npy     uint32 (N,)  sorted key hashes; a key repeats once per line it keeps
    lines.npy    uint32 (N,)  index of the proposed line
    counts.npy   uint8 (N,)   how often that line sat under that key (capped at 255)
    blocks.npy   uint8        the distinct lines, newline-joined, zlib-compressed in blocks
    starts.npy   uint64 (B+1,) byte offset of each block in blocks.npy

Lines keep their first-seen order, so a block holds neighbouring lines of one file and compresses
well (about 3x); reading a line inflates one block of ``BLOCK_LINES`` lines.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
import zlib
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

KEY_KINDS = ("pair", "above", "above1", "below")
START, END = "\x02", "\x03"  # the neighbour of a file's first / last line
FILES = ("keys", "lines", "counts", "blocks", "starts")
BLOCK_LINES = 256
CACHED_BLOCKS = 64


def normalise(line: str) -> str:
    """Whitespace-normalised text: what makes two lines the same line here."""
    return " ".join(line.split())


def key_hash(kind: str, *parts: str) -> int:
    data = "\x1f".join((kind, *parts)).encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(data, digest_size=4).digest(), "little")


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


class LineTable:
    """Lookups in a table folder written by ``build``; opened lazily, memory-mapped."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self._arrays: dict[str, np.ndarray] | None = None
        self._blocks: OrderedDict[int, list[str]] = OrderedDict()  # the last CACHED_BLOCKS inflated

    @staticmethod
    def exists(folder: Path) -> bool:
        return all((Path(folder) / f"{name}.npy").is_file() for name in FILES)

    def _open(self) -> dict[str, np.ndarray]:
        if self._arrays is None:
            self._arrays = {name: np.load(self.folder / f"{name}.npy", mmap_mode="r") for name in FILES}
        return self._arrays

    def line(self, index: int) -> str:
        arrays = self._open()
        block, row = divmod(index, BLOCK_LINES)
        if block in self._blocks:
            self._blocks.move_to_end(block)
        else:
            start, end = int(arrays["starts"][block]), int(arrays["starts"][block + 1])
            data = zlib.decompress(arrays["blocks"][start:end].tobytes())
            self._blocks[block] = data.decode("utf-8", "surrogatepass").split("\n")
            if len(self._blocks) > CACHED_BLOCKS:
                self._blocks.popitem(last=False)
        return self._blocks[block][row]

    def lookup(self, above2: str, above: str, below: str) -> list[Proposal]:
        """Lines seen between these neighbours, strongest key first, most frequent first within a key."""
        arrays = self._open()
        found: list[Proposal] = []
        seen: set[int] = set()
        for kind, key in neighbour_keys(above2, above, below).items():
            lo, hi = np.searchsorted(arrays["keys"], np.uint32(key), "left"), np.searchsorted(arrays["keys"], np.uint32(key), "right")
            rows = sorted(range(lo, hi), key=lambda r: -int(arrays["counts"][r]))
            for r in rows:
                index = int(arrays["lines"][r])
                if index not in seen:
                    seen.add(index)
                    found.append(Proposal(self.line(index), kind, int(arrays["counts"][r])))
        return found


def build(texts: Iterable[str], folder: Path, keep: int = 3, min_count: dict[str, int] | None = None) -> dict:
    """Write the table for ``texts`` into ``folder``: per key, its ``keep`` most frequent lines
    seen at least ``min_count[kind]`` times. Returns sizes."""
    min_count = min_count or {"pair": 1, "above": 2, "above1": 3, "below": 3}
    key_list, line_list, kind_list = array("I"), array("I"), array("B")
    line_ids: dict[str, int] = {}
    for text in texts:
        for above2, above, line, below in lines_with_neighbours(text):
            index = line_ids.setdefault(line, len(line_ids))
            for kind_index, key in enumerate(neighbour_keys(above2, above, below).values()):
                key_list.append(key)
                line_list.append(index)
                kind_list.append(kind_index)
    keys = np.frombuffer(key_list, dtype=np.uint32)
    lines = np.frombuffer(line_list, dtype=np.uint32)
    kinds = np.frombuffer(kind_list, dtype=np.uint8)
    del key_list, line_list, kind_list
    # count (key, line) pairs
    order = np.lexsort((lines, keys))
    keys, lines, kinds = keys[order], lines[order], kinds[order]
    boundary = np.ones(len(keys), dtype=bool)
    boundary[1:] = (keys[1:] != keys[:-1]) | (lines[1:] != lines[:-1])
    starts = np.flatnonzero(boundary)
    counts = np.diff(np.append(starts, len(keys))).astype(np.uint32)
    keys, lines, kinds = keys[starts], lines[starts], kinds[starts]
    floor = np.array([min_count[kind] for kind in KEY_KINDS], dtype=np.uint32)[kinds]
    ok = counts >= floor
    keys, lines, counts = keys[ok], lines[ok], counts[ok]
    # the ``keep`` most frequent lines of each key
    order = np.lexsort((-counts.astype(np.int64), keys))
    keys, lines, counts = keys[order], lines[order], counts[order]
    first = np.ones(len(keys), dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    group_start = np.maximum.accumulate(np.where(first, np.arange(len(keys)), 0))
    ok = np.arange(len(keys)) - group_start < keep
    keys, lines, counts = keys[ok], lines[ok], counts[ok]
    # renumber the kept lines densely and write their text in compressed blocks
    kept, lines = np.unique(lines, return_inverse=True)
    texts_by_id = {index: line for line, index in line_ids.items()}
    kept_text = [texts_by_id[int(index)] for index in kept]
    blocks = [
        zlib.compress("\n".join(kept_text[i : i + BLOCK_LINES]).encode("utf-8", "surrogatepass"), 9)
        for i in range(0, len(kept_text), BLOCK_LINES)
    ]
    starts = np.zeros(len(blocks) + 1, dtype=np.uint64)
    starts[1:] = np.cumsum([len(block) for block in blocks])
    arrays = {
        "keys": keys, "lines": lines.astype(np.uint32), "counts": np.minimum(counts, 255).astype(np.uint8),
        "blocks": np.frombuffer(b"".join(blocks), dtype=np.uint8), "starts": starts,
    }
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, values in arrays.items():
        np.save(folder / f"{name}.npy", values)
    return {"entries": int(len(keys)), "distinct_lines": len(kept_text),
            "bytes": sum((folder / f"{name}.npy").stat().st_size for name in FILES)}
