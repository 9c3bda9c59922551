"""A compact, memory-mapped table of texts under hashed keys: the storage of the line and phrase tables.

Keys are 32-bit BLAKE2 hashes of a key kind and its parts (at a few million entries a lookup meets a
foreign key about once in a thousand), so the table stores no key text. Files, numpy ``.npy``
memory-mapped on open, so opening costs milliseconds and pages come in as lookups touch them::

    buckets.npy  uint32 (65537,) where each value of a key's high 16 bits starts in keys.npy
    keys.npy     uint16 (N,)  the low 16 bits of the sorted key hashes; a key repeats once per text it keeps
    lines.npy    uint32 (N,)  index of the proposed text
    counts.npy   uint8 (N,)   how often that text sat under that key (capped at 255)
    blocks.npy   uint8        the distinct texts, newline-joined, zlib-compressed in blocks
    starts.npy   uint64 (B+1,) byte offset of each block in blocks.npy

Texts keep their first-seen order, so a block holds neighbouring texts of one file and compresses
well (about 3x); reading a text inflates one block of ``BLOCK_LINES`` texts.
"""

from __future__ import annotations

import hashlib
import zlib
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

FILES = ("buckets", "keys", "lines", "counts", "blocks", "starts")
BLOCK_LINES = 256
CACHED_BLOCKS = 64


def key_hash(kind: str, *parts: str) -> int:
    data = "\x1f".join((kind, *parts)).encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(data, digest_size=4).digest(), "little")


class HashedTable:
    """Lookups in a table folder written by ``write``; opened lazily, memory-mapped."""

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

    def text(self, index: int) -> str:
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

    def under(self, key: int) -> list[tuple[int, int]]:
        """(text index, count) of the texts kept under ``key``, most frequent first."""
        arrays = self._open()
        bucket, low = divmod(key, 1 << 16)
        first, end = int(arrays["buckets"][bucket]), int(arrays["buckets"][bucket + 1])
        keys = arrays["keys"][first:end]
        lo = first + int(np.searchsorted(keys, np.uint16(low), "left"))
        hi = first + int(np.searchsorted(keys, np.uint16(low), "right"))
        rows = sorted(range(lo, hi), key=lambda r: -int(arrays["counts"][r]))
        return [(int(arrays["lines"][r]), int(arrays["counts"][r])) for r in rows]


def split_keys(keys: np.ndarray) -> dict[str, np.ndarray]:
    """Sorted 32-bit key hashes as a table of where each high half starts and the low halves:
    half the bytes of the keys themselves."""
    high = (keys >> 16).astype(np.int64)
    buckets = np.searchsorted(high, np.arange((1 << 16) + 1)).astype(np.uint32)
    return {"buckets": buckets, "keys": (keys & 0xFFFF).astype(np.uint16)}


def write(entries: Iterable[tuple[int, int, str]], folder: Path, min_count: Sequence[int], keep: Sequence[int]) -> dict:
    """Write a table of ``entries`` ((kind index, key hash, text), one per sighting) into ``folder``:
    per key, its ``keep[kind]`` most frequent texts seen at least ``min_count[kind]`` times. Returns sizes."""
    key_list, text_list, kind_list = array("I"), array("I"), array("B")
    text_ids: dict[str, int] = {}
    for kind, key, text in entries:
        key_list.append(key)
        text_list.append(text_ids.setdefault(text, len(text_ids)))
        kind_list.append(kind)
    keys = np.frombuffer(key_list, dtype=np.uint32)
    texts = np.frombuffer(text_list, dtype=np.uint32)
    kinds = np.frombuffer(kind_list, dtype=np.uint8)
    del key_list, text_list, kind_list
    # count (key, text) pairs
    order = np.lexsort((texts, keys))
    keys, texts, kinds = keys[order], texts[order], kinds[order]
    boundary = np.ones(len(keys), dtype=bool)
    boundary[1:] = (keys[1:] != keys[:-1]) | (texts[1:] != texts[:-1])
    starts = np.flatnonzero(boundary)
    counts = np.diff(np.append(starts, len(keys))).astype(np.uint32)
    keys, texts, kinds = keys[starts], texts[starts], kinds[starts]
    ok = counts >= np.asarray(min_count, dtype=np.uint32)[kinds]
    keys, texts, counts, kinds = keys[ok], texts[ok], counts[ok], kinds[ok]
    # the ``keep[kind]`` most frequent texts of each key
    order = np.lexsort((-counts.astype(np.int64), keys))
    keys, texts, counts, kinds = keys[order], texts[order], counts[order], kinds[order]
    first = np.ones(len(keys), dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    group_start = np.maximum.accumulate(np.where(first, np.arange(len(keys)), 0))
    ok = np.arange(len(keys)) - group_start < np.asarray(keep)[kinds]
    keys, texts, counts = keys[ok], texts[ok], counts[ok]
    # renumber the kept texts densely and write them in compressed blocks
    kept, texts = np.unique(texts, return_inverse=True)
    by_id = {index: text for text, index in text_ids.items()}
    kept_text = [by_id[int(index)] for index in kept]
    blocks = [
        zlib.compress("\n".join(kept_text[i : i + BLOCK_LINES]).encode("utf-8", "surrogatepass"), 9)
        for i in range(0, len(kept_text), BLOCK_LINES)
    ]
    starts = np.zeros(len(blocks) + 1, dtype=np.uint64)
    starts[1:] = np.cumsum([len(block) for block in blocks])
    arrays = {
        **split_keys(keys), "lines": texts.astype(np.uint32), "counts": np.minimum(counts, 255).astype(np.uint8),
        "blocks": np.frombuffer(b"".join(blocks), dtype=np.uint8), "starts": starts,
    }
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, values in arrays.items():
        np.save(folder / f"{name}.npy", values)
    return {"entries": int(len(keys)), "distinct_texts": len(kept_text),
            "bytes": sum((folder / f"{name}.npy").stat().st_size for name in FILES)}
