"""Accept Word (Ctrl+Right): how much of a result its next word is, and the rest offered after it."""

from __future__ import annotations

import re
from dataclasses import replace

from sfumato.model.api import Candidate

# white space, then a word (``don't``, ``well-known`` whole) or a run of punctuation
NEXT_WORD = re.compile(r"\s*(?:\w+(?:['’-]\w+)*|[^\w\s]+)")


def next_word_end(text: str) -> int:
    """Where ``text``'s next word ends (the white space before it included); 0 for white space alone."""
    word = NEXT_WORD.match(text)
    return word.end() if word else 0


def rest_of(candidate: Candidate, chars: int) -> Candidate:
    """``candidate`` after its first ``chars`` characters; every token keeps its confidence (one cut
    in two keeps it for its part)."""
    tokens, seen = [], 0
    for token in candidate.tokens:
        if seen + len(token.text) > chars:
            tokens.append(replace(token, text=token.text[max(0, chars - seen) :]))
        seen += len(token.text)
    return Candidate(candidate.text[chars:], tuple(tokens))
