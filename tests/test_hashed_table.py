"""The table storage: keys split into their high and low halves still find exactly their texts."""

import numpy as np

from sfumato.model.hashed_table import HashedTable, split_keys, write


def test_every_key_finds_its_own_texts_at_the_edges_of_the_key_space(tmp_path):
    # keys that share their high half, that differ only there, and the extremes
    keys = [0, 1, 0xFFFF, 0x10000, 0x1FFFF, 0x12345678, 0x12349999, 0xFFFFFFFE, 0xFFFFFFFF]
    entries = [(0, key, f"text {key:x} {n}") for key in keys for n in range(1 + key % 3) for _ in range(2)]
    entries += [(0, 0x12345678, "text 12345678 0")]  # seen three times: first under its key
    write(entries, tmp_path, [2], [4])
    table = HashedTable(tmp_path)
    for key in keys:
        found = [table.text(index) for index, _ in table.under(key)]
        assert sorted(found) == sorted(f"text {key:x} {n}" for n in range(1 + key % 3))
    assert table.text(table.under(0x12345678)[0][0]) == "text 12345678 0"
    for absent in (2, 0x10001, 0x12345679, 0xFFFFFFFD):
        assert table.under(absent) == []


def test_split_keys_halves_the_bytes_and_keeps_the_order():
    keys = np.sort(np.random.default_rng(0).integers(0, 1 << 32, 10_000, dtype=np.uint64)).astype(np.uint32)
    split = split_keys(keys)
    assert split["keys"].nbytes == keys.nbytes // 2
    high = np.repeat(np.arange(1 << 16, dtype=np.uint32), np.diff(split["buckets"]))
    assert np.array_equal((high << 16) | split["keys"], keys)
