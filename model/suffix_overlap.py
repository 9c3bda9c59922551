"""Where a generated text meets the text after the gap (the suffix).

A model that writes past its gap repeats what follows it. Two cases, on a draft's token states:
the text holds several characters of the suffix's start (``cut_at_stop``: it ends before them),
or its last characters are the suffix's first ones (``without_overlap``): a docstring's closing
quotes, a sentence's period, a call's closing bracket, the start of the suffix's next line. Whether those are doubled or meant twice
is read from the line around the gap: brackets and quotes that balance only without them, a
doubled sentence mark, three or more marks repeated (closing quotes, ``);``), four or more
characters with letters or digits, or closing marks written with a separator after them (``MIT",`` before ``"``).
White space the text ends with goes where the suffix's line begins with white space (a double space).
"""

from __future__ import annotations

from collections.abc import Sequence

from sfumato.model.api import TokenState

PAIRS = {")": "(", "]": "[", "}": "{"}
QUOTES = "\"'`"
SENTENCE_MARKS = ".,;:!?"
SEPARATORS = ",;"
LONGEST = 8
MIN_WORD_OVERLAP = 4  # letters or digits: this many repeated (``sqrt(16)`` before ``(16)``) were copied
MIN_LINE_START = 4  # a last line this long that the suffix's next line starts with was copied from it


def overlap_to_drop(text: str, before: str, after: str) -> int:
    """How many characters at the end of ``text`` repeat the start of ``after`` and should go.

    ``before`` is the line before the gap, ``after`` the text after it (its first line is read;
    a text whose last line is the start of the suffix's first written line drops that line)."""
    head, brk, last = text.rpartition("\n")
    if brk and len(last.strip()) >= MIN_LINE_START and after.lstrip().startswith(last.strip()):
        return len(text) - len(head)
    line_after = after.split("\n", 1)[0]
    spaces = len(text) - len(text.rstrip(" \t"))
    if spaces and line_after[:1] in (" ", "\t") and text.strip() and not text.rstrip(" \t").endswith("\n"):
        return spaces  # ``name `` before `` + "!"``: the line already has its space there
    longest = 0
    for k in range(min(LONGEST, len(text), len(line_after)), 0, -1):
        if not line_after[:k].strip():
            break  # white space alone is not an overlap
        if text.endswith(line_after[:k]):
            longest = k
            break
    if not longest:
        return _closed_then_punctuated(text, before, line_after)
    repeated = line_after[:longest]
    if any(c.isalnum() for c in repeated):  # a word or a number: copied when long enough and not all there is
        return longest if MIN_WORD_OVERLAP <= longest < len(text.strip()) else 0
    if longest >= 3:
        return longest
    if all(c in SENTENCE_MARKS for c in repeated):
        return longest
    kept = before + text + line_after
    trimmed = before + text[:-longest] + line_after
    return longest if _imbalance(trimmed) < _imbalance(kept) else 0


def _closed_then_punctuated(text: str, before: str, line_after: str) -> int:
    """A text that writes the suffix's closing marks and then a separator (``MIT",`` before ``"``,
    as if another entry followed): the marks and the separator go when the line balances without them."""
    body = text.rstrip(SEPARATORS)
    tail = len(text) - len(body)
    if not tail or not body or not line_after[:1] or line_after[0].isalnum() or line_after[0].isspace():
        return 0
    mark = line_after[0]
    if not body.endswith(mark):
        return 0
    kept, trimmed = before + text + line_after, before + body[:-1] + line_after
    return tail + 1 if _imbalance(trimmed) < _imbalance(kept) else 0


def _imbalance(line: str) -> int:
    """Brackets that do not pair up on the line, plus quotes left open."""
    score = 0
    for close, open_ in PAIRS.items():
        score += abs(line.count(open_) - line.count(close))
    return score + sum(line.count(q) % 2 for q in QUOTES)


def stop_at(text: str, stop: str, stop_space: bool) -> int:
    """Where ``text`` runs into ``stop`` (the suffix's start), -1 when it does not. Not inside a
    string the text itself opened (``echo "done"`` before a line ``done`` quotes a word), nor,
    when the suffix starts with white space (``stop_space``), inside a word (``undone``)."""
    at = text.find(stop) if stop else -1
    while at > 0 and (_in_open_quote(text[:at]) or stop_space and _word_char(text[at - 1]) and _word_char(stop[0])):
        at = text.find(stop, at + 1)
    return at


def _word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _in_open_quote(text: str) -> bool:
    """Whether ``text`` ends inside a quote it opened (an apostrophe between letters is not one)."""
    line = text.rsplit("\n", 1)[-1]
    marks = [c for i, c in enumerate(line) if c in QUOTES
             and not (c == "'" and 0 < i < len(line) - 1 and line[i - 1].isalpha() and line[i + 1].isalpha())]
    return any(marks.count(q) % 2 for q in QUOTES)


def cut_at_stop(states: Sequence[TokenState], stop: str, stop_space: bool) -> tuple[TokenState, ...]:
    """``states`` up to where their text runs into ``stop`` (``stop_at``); when the suffix
    starts with white space (``stop_space``), so does the cut, and the text's own trailing space goes."""
    at = stop_at("".join(state.text for state in states), stop, stop_space)
    if at < 0:
        return tuple(states)
    kept = list(cut_states(states, at))
    if stop_space:
        while kept and not kept[-1].text.rstrip():
            kept.pop()
        if kept:
            kept[-1] = TokenState(kept[-1].text.rstrip(), kept[-1].confidence, kept[-1].accepted)
    return tuple(state for state in kept if state.text or not state.accepted)


def cut_states(states: Sequence[TokenState], at: int) -> tuple[TokenState, ...]:
    """``states`` whose text ends at character ``at`` of their joined text (all of it when ``at`` < 0)."""
    if at < 0:
        return tuple(states)
    kept, length = [], 0
    for state in states:
        if length + len(state.text) >= at:
            kept.append(TokenState(state.text[: at - length], state.confidence, state.accepted))
            break
        kept.append(state)
        length += len(state.text)
    return tuple(kept)


def without_overlap(states: Sequence[TokenState], before: str, after: str) -> tuple[TokenState, ...]:
    """``states`` less an end that repeats the start of ``after`` where it is doubled (``before``:
    the line before the gap)."""
    drop = overlap_to_drop("".join(state.text for state in states), before, after) if after else 0
    kept = list(states)
    while drop and kept:
        last = kept.pop()
        if len(last.text) > drop:
            kept.append(TokenState(last.text[:-drop], last.confidence, last.accepted))
            break
        drop -= len(last.text)
    return tuple(kept)
