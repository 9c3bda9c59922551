"""Candidate text for a one-line region, found rather than generated.

The region is the rest of the cursor's line: the request's prefix ends with the line's head (its
indentation, and whatever was typed before the cursor), the suffix starts with the line's tail.
A candidate is a whole line seen elsewhere whose head and tail match, cut to the part the region
takes. Sources, strongest first within each key kind:

1. the open document itself (the request's prefix and suffix);
2. other open files and folder snippets (``InfillRequest.context``);
3. the table built from the training corpus (``sfumato.model.line_table``).

Keys are the line's nearest non-blank neighbours, as in the table: the line that sat between the
same two lines, then after the same two lines, then after the same line, then before it.

A region inside a line (a few words of prose, a template gap after ``return``) also gets
``span`` candidates: text that sat elsewhere in the document or the context between the same two
words before and the same word after (word n-grams around the gap), then the phrase table's
(``sfumato.model.phrase_table``: phrases of the training corpus's documentation between the same words). Where the line so far asks
for an expression (``return ``, ``x = ``, an open bracket), each name in scope (the enclosing
function's parameters and the names assigned in it) is a ``scope`` candidate: short, but it parses.
For a whole line, the nearest line above is a last ``repeat`` candidate: never right as it is, but
often close (the baseline ``repeat`` of the evaluation), a better guess than a denoised sample.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sfumato.model.line_table import END, KEY_KINDS, START, LineTable, lines_with_neighbours, normalise
from sfumato.model.phrase_table import PhraseTable, words_around

CURSOR_LINE = "\x04"  # stands for the cursor's line: a neighbour that equals no key
MAX_CANDIDATES = 8  # from the line keys
MAX_EXTRA = 4  # span candidates per source
SPAN_CHARS = 80  # the longest span candidate
SPAN_LEFT_WORDS = 2
EXPRESSION_START = re.compile(r"(?:\breturn|\byield|[=(\[{,:]|\bin|\bif|\band|\bor|\bnot)\s*$")
DEF_LINE = re.compile(r"^(\s*)(?:async\s+)?def\s+\w+\s*\(([^)]*)\)")
ASSIGNED = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::[^=]+)?=(?!=)")
MAX_SCOPE_NAMES = 4
SOURCE_ORDER = ("document", "context", "table")
PROSE_WORD = re.compile(r"[(\"'`*]*[A-Za-z][A-Za-z'-]*[)\"'`*]*[,.;:!?)]*")  # a word, maybe quoted or marked up
PROSE_MIN_TOKENS, PROSE_SHARE = 3, 0.7


@dataclass(frozen=True)
class Retrieved:
    """One candidate for the region: the text it would insert, and where it came from."""

    text: str
    source: str  # "document", "context", "table" or "phrases"
    kind: str  # the neighbour key that found it (``line_table.KEY_KINDS``)
    count: int  # how often it sat under that key


@dataclass(frozen=True)
class Cursor:
    """The cursor's line split at the region, and its nearest non-blank neighbours (normalised)."""

    head: str  # the line before the region, without its indentation
    tail: str  # the line after the region
    above2: str
    above: str
    below: str


def cursor_of(prefix: str, suffix: str) -> Cursor:
    head = prefix[prefix.rfind("\n") + 1 :].lstrip()
    newline = suffix.find("\n")
    tail = suffix if newline < 0 else suffix[:newline]
    before = [normalise(line) for line in prefix.split("\n")[:-1] if line.strip()]
    after = [normalise(line) for line in suffix.split("\n")[1:] if line.strip()] if newline >= 0 else []
    before = [START, START, *before]
    return Cursor(head, tail.rstrip(), before[-2], before[-1], after[0] if after else END)


def fit(line: str, cursor: Cursor) -> str | None:
    """The part of a whole (stripped) ``line`` that goes between the cursor's head and tail, or
    None when the line does not start with the head or end with the tail."""
    if not line.startswith(cursor.head):
        return None
    rest = line[len(cursor.head) :]
    tail = cursor.tail.strip()
    if tail:
        if not rest.endswith(tail):
            return None
        rest = rest[: len(rest) - len(tail)]
        rest = rest + cursor.tail[: len(cursor.tail) - len(cursor.tail.lstrip())] if rest.strip() else rest
    return rest if rest.strip() else None


def _text_matches(texts: Iterable[str], cursor: Cursor) -> dict[str, dict[str, int]]:
    """Per key kind, the lines of ``texts`` found under the cursor's keys, with their counts."""
    wanted = {
        "pair": (cursor.above, cursor.below),
        "above": (cursor.above2, cursor.above),
        "above1": (cursor.above,),
        "below": (cursor.below,),
    }
    found: dict[str, dict[str, int]] = {kind: {} for kind in KEY_KINDS}
    for text in texts:
        for above2, above, line, below in lines_with_neighbours(text):
            have = {"pair": (above, below), "above": (above2, above), "above1": (above,), "below": (below,)}
            for kind in KEY_KINDS:
                if have[kind] == wanted[kind] and line != CURSOR_LINE:
                    found[kind][line] = found[kind].get(line, 0) + 1
    return found


def document_around_region(prefix: str, suffix: str) -> str:
    """The document with the cursor's line replaced by a placeholder, so that the lines next to
    it keep it as their neighbour (rather than becoming each other's) and it proposes nothing."""
    head_start = prefix.rfind("\n") + 1
    newline = suffix.find("\n")
    rest = "" if newline < 0 else suffix[newline:]
    return prefix[:head_start] + CURSOR_LINE + rest


def retrieve(prefix: str, suffix: str, context: Sequence[str] = (), table: LineTable | None = None,
             limit: int = MAX_CANDIDATES, phrases: PhraseTable | None = None) -> list[Retrieved]:
    """Candidates for the region at the end of ``prefix``: line-key candidates, strongest key first,
    then by source (document, context, table), then by count; then span, phrase and scope
    candidates; each text once."""
    cursor = cursor_of(prefix, suffix)
    if cursor.above == START and cursor.below == END:
        return []
    by_source: dict[str, dict[str, dict[str, int]]] = {
        "document": _text_matches([document_around_region(prefix, suffix)], cursor),
        "context": _text_matches(context, cursor),
        "table": {kind: {} for kind in KEY_KINDS},
    }
    if table is not None:
        for proposal in table.lookup(cursor.above2, cursor.above, cursor.below):
            by_source["table"][proposal.kind].setdefault(proposal.text, proposal.count)
    results: list[Retrieved] = []
    seen: set[str] = set()

    def add(text: str, source: str, kind: str, count: int) -> None:
        if normalise(text) not in seen and CURSOR_LINE not in text:
            seen.add(normalise(text))
            results.append(Retrieved(text, source, kind, count))

    for kind in KEY_KINDS:
        for source in SOURCE_ORDER:
            for line, count in sorted(by_source[source][kind].items(), key=lambda item: -item[1]):
                text = fit(line, cursor)
                if text is not None and len(results) < limit:
                    add(text, source, kind, count)
    document = prefix + CURSOR_LINE + suffix
    for source, texts in (("document", [document]), ("context", context)):
        for text, count in retrieve_spans(prefix, suffix, texts, MAX_EXTRA):
            add(text, source, "span", count)
    if phrases is not None and reads_as_prose(cursor):
        for phrase in phrases.lookup(*words_around(prefix, suffix), MAX_EXTRA):
            add(phrase.text, "phrases", phrase.kind, phrase.count)
    for text in scope_candidates(prefix, suffix):
        add(text, "document", "scope", 0)
    if not cursor.head and not cursor.tail and cursor.above not in (START, END):
        add(nearest_line_above(prefix), "document", "repeat", 0)
    indent = indentation_for_empty_line(prefix, suffix)
    return [Retrieved(indent + r.text, r.source, r.kind, r.count) for r in results] if indent else results


def indentation_for_empty_line(prefix: str, suffix: str) -> str:
    """The indentation a line written at the start of an empty line needs (retrieved lines are
    stripped; the cursor after an Enter already sits after it, so usually this is empty): one
    level deeper than a line above that opens a block, else the shallower of the lines above and
    below (a blank line before a dedent usually starts the outer block's next line)."""
    if prefix and not prefix.endswith("\n") or suffix.split("\n", 1)[0].strip():
        return ""
    above = next((line for line in reversed(prefix.split("\n")[:-1]) if line.strip()), "")
    below = next((line for line in suffix.split("\n")[1:] if line.strip()), "")
    if above.rstrip().endswith((":", "{", "(", "[")):
        deeper = _indent_of(below) if len(_indent_of(below)) > len(_indent_of(above)) else ""
        return deeper or _indent_of(above) + ("\t" if _indent_of(above).startswith("\t") else "    ")
    return min(_indent_of(above), _indent_of(below), key=len) if below else _indent_of(above)


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def reads_as_prose(cursor: Cursor) -> bool:
    """Whether the cursor's line around the region is running text (a sentence in a document, a
    comment, a docstring), where documentation phrases belong, rather than code."""
    tokens = f"{cursor.head} {cursor.tail}".split()
    return len(tokens) >= PROSE_MIN_TOKENS and sum(bool(PROSE_WORD.fullmatch(t)) for t in tokens) >= PROSE_SHARE * len(tokens)


def nearest_line_above(prefix: str) -> str:
    """The nearest non-blank line above the cursor's, stripped: a guess to edit when nothing
    fits (lines near each other often share their shape: asserts, arguments, entries)."""
    return next(line.strip() for line in reversed(prefix.split("\n")[:-1]) if line.strip())


def retrieve_spans(prefix: str, suffix: str, texts: Iterable[str], limit: int = MAX_CANDIDATES) -> list[tuple[str, int]]:
    """(text, count) of what sat between the same ``SPAN_LEFT_WORDS`` words and the same next
    word in ``texts``, most frequent first; nothing unless the region has words on both sides
    on its line."""
    head = prefix[prefix.rfind("\n") + 1 :]
    newline = suffix.find("\n")
    tail = suffix if newline < 0 else suffix[:newline]
    left, right = head.split()[-SPAN_LEFT_WORDS:], tail.split()[:1]
    if len(left) < SPAN_LEFT_WORDS or not right:
        return []
    pattern = re.compile(
        r"\s+".join(map(re.escape, left)) + (r"\s+" if head[-1:].isspace() else "")
        + f"([^\\n]{{1,{SPAN_CHARS}}}?)" + (r"\s+" if tail[:1].isspace() else "") + re.escape(right[0])
    )
    counts: dict[str, int] = {}
    for text in texts:
        for match in pattern.finditer(text):
            counts[match.group(1)] = counts.get(match.group(1), 0) + 1
    return sorted(counts.items(), key=lambda item: -item[1])[:limit]


def scope_names(prefix: str) -> list[str]:
    """Names assigned in the enclosing function before the cursor, nearest first, then its
    parameters; nothing when the cursor is not inside a ``def``."""
    lines = prefix.split("\n")[:-1]
    names: list[str] = []
    for line in reversed(lines):
        match = DEF_LINE.match(line)
        if match:
            for parameter in match.group(2).split(","):
                name = parameter.split(":")[0].split("=")[0].strip().lstrip("*")
                if name and name not in ("self", "cls") and name.isidentifier():
                    names.append(name)
            return list(dict.fromkeys(names))
        assigned = ASSIGNED.match(line)
        if assigned:
            names.append(assigned.group(1))
    return []


def scope_candidates(prefix: str, suffix: str) -> list[str]:
    """Names in scope, when the cursor's line so far asks for an expression and the rest is empty."""
    head = prefix[prefix.rfind("\n") + 1 :]
    tail = suffix.split("\n", 1)[0]
    if tail.strip() or not EXPRESSION_START.search(head):
        return []
    target = ASSIGNED.match(head + "x")
    names = [name for name in scope_names(prefix) if not target or name != target.group(1)]
    return names[:MAX_SCOPE_NAMES]
