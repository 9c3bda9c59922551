"""Draft tokens from plain text, for servers that send text and no token ids.

The editor draws a draft token by token; a server sends only text, and the client has no copy of
the served model's tokenizer. So received text is split where tokenizers mostly split too: a run
of letters and digits, a run of whitespace, or one punctuation character. The pieces spell the
text exactly; they are drawing units, never counted as the model's tokens.

What a piece says about the model is only what the server sent: text of a finished canvas is
settled; in a server's intermediate draft (a draft stream), a piece is settled when difflib
finds it kept from the previous draft, and unsettled (drawn as still denoising) when it is new.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

from sfumato.model.api import Candidate, TokenState

PIECE = re.compile(r"\w+|\s+|[^\w\s]")


def split_pieces(text: str) -> list[str]:
    return PIECE.findall(text)


class SettledText:
    """Text received chunk by chunk, every piece settled; a chunk costs its own length (only the
    last piece before it can grow), never the whole text again."""

    def __init__(self):
        self.text = ""
        self._tokens: list[TokenState] = []

    def add(self, piece: str) -> Candidate:
        last = self._tokens.pop().text if self._tokens else ""
        self._tokens.extend(TokenState(part, 1.0, True) for part in split_pieces(last + piece))
        self.text += piece
        return Candidate(self.text, tuple(self._tokens))

    @property
    def pieces(self) -> int:
        return len(self._tokens)


def settled_candidate(text: str) -> Candidate:
    """Text the server has finished: every piece settled."""
    return Candidate(text, tuple(TokenState(piece, 1.0, True) for piece in split_pieces(text)))


def draft_candidate(text: str, previous: str) -> Candidate:
    """An intermediate draft: pieces kept from ``previous`` (matched by difflib) are settled."""
    before, now = split_pieces(previous), split_pieces(text)
    kept = [False] * len(now)
    for block in SequenceMatcher(None, before, now, autojunk=False).get_matching_blocks():
        kept[block.b : block.b + block.size] = [True] * block.size
    return Candidate(text, tuple(TokenState(piece, 1.0 if keep else 0.0, keep) for piece, keep in zip(now, kept)))
