"""Project context: snippets of other open files and the folder that share names with the cursor.

The idea of llama.vim's ring buffer of chunks: cut the other files into chunks of a few lines,
keep the ones that share the most identifiers with the text around the cursor, and put them in
the prompt before the document, within a fixed share of its budget. The editor gathers the files
(``nearest_snippets``); backends lay the snippets out (``context_tokens``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

CHUNK_LINES = 16
MAX_SNIPPETS = 8
AROUND_CHARS = 1500  # the text either side of the cursor whose names are looked for
CONTEXT_SHARE = 4  # snippets take at most 1/CONTEXT_SHARE of a prompt budget
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


def _names(text: str) -> set[str]:
    return set(IDENTIFIER.findall(text))


def chunks(text: str, lines: int = CHUNK_LINES) -> Iterable[str]:
    """Non-overlapping runs of ``lines`` lines, blank runs left out."""
    all_lines = text.split("\n")
    for start in range(0, len(all_lines), lines):
        chunk = "\n".join(all_lines[start : start + lines])
        if chunk.strip():
            yield chunk


def nearest_snippets(prefix: str, suffix: str, files: Iterable[tuple[str, str]],
                     limit: int = MAX_SNIPPETS) -> tuple[str, ...]:
    """Chunks of ``files`` ((name, text) pairs, other than the document) sharing the most names
    with the text around the cursor, nearest first; each starts with a line naming its file."""
    wanted = _names(prefix[-AROUND_CHARS:] + suffix[:AROUND_CHARS])
    if not wanted:
        return ()
    scored = []
    for name, text in files:
        for chunk in chunks(text):
            names = _names(chunk)
            shared = len(names & wanted)
            if shared:
                scored.append((shared / len(names | wanted), f"# {name}\n{chunk}\n"))
    scored.sort(key=lambda item: -item[0])
    return tuple(snippet for _, snippet in scored[:limit])


def context_tokens(tokenizer, snippets: Sequence[str], budget: int) -> list[int]:
    """The snippets' tokens that fit in ``budget // CONTEXT_SHARE``, nearest snippet last (next
    to the document); a snippet that does not fit whole is left out."""
    from model.tokenizer import encode_text  # here: the editor imports this module before torch is loaded

    room = budget // CONTEXT_SHARE
    kept: list[list[int]] = []
    for snippet in snippets:
        ids = encode_text(tokenizer, snippet)
        if len(ids) > room:
            continue
        kept.append(ids)
        room -= len(ids)
    return [token for ids in reversed(kept) for token in ids]
