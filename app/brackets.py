"""Brackets: which ones pair, which close as they are typed, and finding a bracket's partner."""

from __future__ import annotations

PAIRS = {"(": ")", "[": "]", "{": "}"}
_OPENER_OF = {closer: opener for opener, closer in PAIRS.items()}
AUTO_CLOSED = {**PAIRS, '"': '"', "'": "'", "`": "`"}
ROOM_FOR_A_PAIR = set(")]}\"'`,;:.")  # an opener typed before one of these (or a space) gets its closer


def matching_bracket(text: str, cursor: int) -> tuple[int, int] | None:
    """The indices of the bracket next to ``cursor`` (after it, else before it) and its partner."""
    for index in (cursor, cursor - 1):
        if 0 <= index < len(text) and (text[index] in PAIRS or text[index] in _OPENER_OF):
            break
    else:
        return None
    bracket = text[index]
    forward = bracket in PAIRS
    partner = PAIRS[bracket] if forward else _OPENER_OF[bracket]
    depth = 0
    for other in range(index, len(text)) if forward else range(index, -1, -1):
        if text[other] == bracket:
            depth += 1
        elif text[other] == partner:
            depth -= 1
            if depth == 0:
                return (index, other)
    return None
