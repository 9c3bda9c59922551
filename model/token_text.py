"""Turning canvas token ids into per-token text for drafts, safely.

A token can hold part of a UTF-8 character (byte-level BPE, SentencePiece byte fallback), so
decoding tokens one by one can split a character. Instead every token id maps to its raw bytes
once; a draft joins the bytes, decodes them with replacement characters for incomplete
sequences, and gives each character to the token its first byte came from. Final results are
decoded by the tokenizer itself.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache


@lru_cache(maxsize=1)
def _byte_level_alphabet() -> dict[str, int]:
    """The printable stand-in character of each byte in byte-level BPE vocabularies (GPT-2 scheme)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    stand_ins = {byte: chr(byte) for byte in printable}
    extra = 0
    for byte in range(256):
        if byte not in stand_ins:
            stand_ins[byte] = chr(256 + extra)
            extra += 1
    return {char: byte for byte, char in stand_ins.items()}


def _decoder_kind(tokenizer) -> str:
    decoder = tokenizer.backend_tokenizer.decoder  # its own state only: the whole tokenizer's is 33 MB of JSON for Gemma
    state = json.loads(decoder.__getstate__()) if decoder else {}
    kinds = {state.get("type")} | {d.get("type") for d in state.get("decoders", [])}
    if "ByteLevel" in kinds:
        return "byte-level"
    if "ByteFallback" in kinds or "Metaspace" in kinds or "Replace" in kinds:
        return "sentencepiece"
    return "plain"


def token_bytes_table(tokenizer) -> list[bytes]:
    """Raw bytes of every token id; special tokens map to b'' (they are never shown as text), the
    named ones and every added one marked special (Gemma's 6,242 ``<unusedN>`` among them)."""
    kind = _decoder_kind(tokenizer)
    alphabet = _byte_level_alphabet()
    special = set(tokenizer.all_special_ids) | {i for i, added in tokenizer.added_tokens_decoder.items() if added.special}
    table = []
    for token_id, token in enumerate(tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))):
        if token is None or token_id in special:
            table.append(b"")
        elif kind == "byte-level":
            table.append(bytes(alphabet.get(char, 0x3F) for char in token))
        elif kind == "sentencepiece" and len(token) == 6 and token.startswith("<0x") and token.endswith(">"):
            table.append(bytes([int(token[3:5], 16)]))
        elif kind == "sentencepiece":
            table.append(token.replace("\u2581", " ").encode("utf-8"))
        else:
            table.append(token.encode("utf-8"))
    return table


def split_text(table: Sequence[bytes], ids: Sequence[int]) -> list[str]:
    """Per-token text of ``ids``: their concatenation is the bytes decoded with replacement."""
    owners: list[int] = []
    for index, token_id in enumerate(ids):
        owners.extend([index] * len(table[token_id]))
    data = b"".join(table[token_id] for token_id in ids)
    pieces = [""] * len(ids)
    position = 0
    while position < len(data):
        length = _utf8_length(data, position)
        chunk = data[position : position + length]
        pieces[owners[position]] += chunk.decode("utf-8", errors="replace")
        position += length
    return pieces


def _utf8_length(data: bytes, position: int) -> int:
    """Bytes of the well-formed character at ``position``, or 1 for a byte that starts none."""
    lead = data[position]
    need = 1 if lead < 0x80 else 2 if 0xC2 <= lead < 0xE0 else 3 if 0xE0 <= lead < 0xF0 else 4 if 0xF0 <= lead < 0xF5 else 1
    if need == 1:
        return 1
    chunk = data[position : position + need]
    try:
        chunk.decode("utf-8")
    except UnicodeDecodeError:
        return 1
    return need


def drop_incomplete_tail(table: Sequence[bytes], ids: list[int]) -> list[int]:
    """``ids`` without the last few tokens if they end inside a UTF-8 character.

    A middle cut at its token budget can stop between the bytes of one character; keeping those
    bytes would put a replacement character into the user's text.
    """
    ids = list(ids)
    for _ in range(3):
        data = b"".join(table[token_id] for token_id in ids[-4:])
        try:
            data.decode("utf-8")
            return ids
        except UnicodeDecodeError as error:
            if error.reason != "unexpected end of data" or not ids:
                return ids
            ids.pop()
    return ids
