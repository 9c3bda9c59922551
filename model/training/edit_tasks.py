"""Held-out tasks shaped as the editor sends them (``sfumato.model.training.evaluate_lm`` runs them).

* ``line``: one non-blank line of held-out code; the cursor sits after its indentation, the
  prefix holds ~3,000 characters before the cursor and the suffix ~1,500 after the line's end.
* ``typed``: a ``line`` task of which the user has typed the first words (a cut at a word's end,
  at most half the line in): the rest of the line is the middle, as a suggestion while typing asks.
* ``value``: a ``line`` task cut after its first ``= `` or ``: ``: the rest of the line is the middle.
* ``prose``: 1-4 words cut from a line of English prose in held-out documentation.
* ``end``: the last 1-8 words of a paragraph of held-out documentation joined into one line (as a
  Markdown file keeps it), the cursor past column ``END_COLUMN``: a writer finishing a sentence.
* ``wrapped``: the same in a paragraph as the document holds it, wrapped: the cursor after a word
  on the paragraph's last line, the rest of that line the middle; ``last``: that paragraph the
  last one written so far (nothing after it but a line break).
* ``next``: a top-level definition or statement of held-out Python (after a blank line) taken out
  whole: the cursor on the empty line where it stood, between the units around it, or with nothing
  after it, as at the end of a file being written (after the blank line, or straight under the code
  above it: ``next_placement``). The unit is the middle;
  its first line is what a user pressing Ctrl+K there most needs right.

Answers are compared whitespace-normalised (``exact``) and by ``difflib`` character similarity.
"""

from __future__ import annotations

import ast
import difflib
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from sfumato.model.training.lm_corpus import unwrapped

BEFORE_CHARS = 3000
AFTER_CHARS = 1500
END_COLUMN = 60  # a sentence-end task's cursor is past it, so the sentence runs on beyond a wrapped file's 80
REPAIR_STRENGTH = 0.3  # a repair task's rewrite renoises this share of the broken line's tokens
PROSE_SOURCES_EXCLUDED = ("stdlib", "site-packages")  # every other corpus source is documentation
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
WORD = re.compile(r"[A-Za-z][a-z]+(?:'[a-z]+)?[,.;:]?")


@dataclass(frozen=True)
class EditTask:
    kind: str  # "line", "prose" (or "body": evaluate_lm's function bodies)
    document: str
    prefix: str
    middle: str
    suffix: str


def normalise(text: str) -> str:
    """Whitespace-normalised text: what makes two answers the same answer here."""
    return " ".join(text.split())


def exact(prediction: str, reference: str) -> bool:
    return normalise(prediction) == normalise(reference)


def similarity(prediction: str, reference: str) -> float:
    return difflib.SequenceMatcher(None, prediction, reference, autojunk=False).ratio()


def line_tasks(documents: Sequence, n: int, seed: int, code_only: bool = True) -> list[EditTask]:
    """``n`` line tasks from ``documents`` (those of code sources only, unless not ``code_only``)."""
    rng = random.Random(f"{seed}:line")
    documents = [doc for doc in documents if (doc.source in PROSE_SOURCES_EXCLUDED or not code_only)
                 and sum(1 for line in doc.text.splitlines() if line.strip()) >= 8]
    tasks = []
    while documents and len(tasks) < n:
        doc = rng.choice(documents)
        lines = doc.text.split("\n")
        i = rng.randrange(len(lines))
        if not lines[i].strip() or len(lines[i]) > 300:
            continue
        indent = len(lines[i]) - len(lines[i].lstrip())
        start = sum(len(line) + 1 for line in lines[:i]) + indent
        middle = lines[i].strip()
        end = start + len(middle)
        tasks.append(EditTask("line", doc.name, doc.text[max(0, start - BEFORE_CHARS) : start], middle,
                              doc.text[end : end + AFTER_CHARS]))
    return tasks


def typed_tasks(documents: Sequence, n: int, seed: int) -> list[EditTask]:
    """``line`` tasks cut after a word within the line's first half: the typed words join the prefix."""
    rng = random.Random(f"{seed}:typed")
    tasks = []
    for task in line_tasks(documents, 3 * n, seed):
        cuts = [m.end() for m in re.finditer(r"\w+", task.middle) if m.end() <= len(task.middle) // 2]
        if cuts and len(tasks) < n:
            cut = rng.choice(cuts)
            tasks.append(EditTask("typed", task.document, task.prefix + task.middle[:cut], task.middle[cut:], task.suffix))
    return tasks


def value_tasks(documents: Sequence, n: int, seed: int) -> list[EditTask]:
    """``line`` tasks cut after the line's first ``= `` or ``: `` (an assignment, a key, an
    annotation): the cursor after a space, the value the rest of the line, as a template's
    ``port = [MASK]`` or Ctrl+K after typing ``timeout = `` asks."""
    tasks = []
    for task in line_tasks(documents, 4 * n, seed):
        found = re.search(r"(?<![=!<>:+\-*/%&|^])[=:] (?=\S)", task.middle)
        if found and len(tasks) < n:
            tasks.append(EditTask("value", task.document, task.prefix + task.middle[: found.end()], task.middle[found.end() :], task.suffix))
    return tasks


def is_prose(line: str) -> bool:
    """A line of running English text: mostly words, no markup at its start."""
    words = line.split()
    return (len(words) >= 8 and not line.lstrip().startswith(("..", ":", ">>>", "|", "+", "=", "-", "*", "#"))
            and sum(bool(WORD.fullmatch(word)) for word in words) >= 0.8 * len(words))


def prose_tasks(documents: Sequence, n: int, seed: int) -> list[EditTask]:
    rng = random.Random(f"{seed}:prose")
    documents = [doc for doc in documents if doc.source not in PROSE_SOURCES_EXCLUDED]
    lines = [(doc, match) for doc in documents for match in re.finditer(r"[^\n]+", doc.text) if is_prose(match.group())]
    tasks = []
    while lines and len(tasks) < n:
        doc, match = rng.choice(lines)
        words = list(re.finditer(r"\S+", match.group()))
        length = rng.randint(1, 4)
        first = rng.randrange(len(words) - length + 1)
        start = match.start() + words[first].start()
        end = match.start() + words[first + length - 1].end()
        tasks.append(EditTask("prose", doc.name, doc.text[max(0, start - BEFORE_CHARS) : start], doc.text[start:end],
                              doc.text[end : end + AFTER_CHARS]))
    return tasks


def sentence_end_tasks(documents: Sequence, n: int, seed: int) -> list[EditTask]:
    """The cursor before the last 1-8 words of a one-line paragraph ending with a full stop,
    past column ``END_COLUMN``; the paragraph is the document's, ``unwrapped``."""
    rng = random.Random(f"{seed}:end")
    documents = [doc for doc in documents if doc.source not in PROSE_SOURCES_EXCLUDED]
    found = []
    for doc in documents:
        text = unwrapped(doc.text)
        for match in re.finditer(r"(?<=\n\n)[^\n]+(?=\n\n)", text):
            if is_prose(match.group()) and match.group().endswith("."):
                cuts = [w.start() for w in list(re.finditer(r"\S+", match.group()))[-8:] if w.start() > END_COLUMN]
                if cuts:
                    found.append((doc, text, match, cuts))
    tasks = []
    while found and len(tasks) < n:
        doc, text, match, cuts = rng.choice(found)
        start = match.start() + rng.choice(cuts)
        tasks.append(EditTask("end", doc.name, text[max(0, start - BEFORE_CHARS) : start], text[start : match.end()],
                              text[match.end() : match.end() + AFTER_CHARS]))
    return tasks


def wrapped_end_tasks(documents: Sequence, n: int, seed: int, last: bool = False) -> list[EditTask]:
    """The cursor after one of the first words of the last line of a wrapped paragraph (two lines
    or more, ending with a full stop), before its last 1-8 words; the rest of the line is the middle.
    ``last``: the paragraph is the last one written so far (the suffix a line break)."""
    rng = random.Random(f"{seed}:wrapped")
    found = []
    for doc in documents:
        if doc.source in PROSE_SOURCES_EXCLUDED:
            continue
        for match in re.finditer(r"(?<=\n\n)[^\n]+\n[^\n]+(?:\n[^\n]+)*(?=\n\n)", doc.text):
            final_line = match.group().rsplit("\n", 1)[-1]
            if is_prose(match.group().replace("\n", " ")) and final_line.endswith(".") and not final_line[:1].isspace():
                line_start = match.start() + len(match.group()) - len(final_line)
                cuts = [line_start + w.start() for w in list(re.finditer(r"\S+", final_line))[1:][-8:]]
                if cuts:
                    found.append((doc, match, cuts))
    tasks = []
    while found and len(tasks) < n:
        doc, match, cuts = rng.choice(found)
        start = rng.choice(cuts)
        suffix = "\n" if last else doc.text[match.end() : match.end() + AFTER_CHARS]
        tasks.append(EditTask("last" if last else "wrapped", doc.name, doc.text[max(0, start - BEFORE_CHARS) : start],
                              doc.text[start : match.end()], suffix))
    return tasks


def next_tasks(documents: Sequence, n: int, seed: int) -> list[EditTask]:
    """``n`` ``next`` tasks, placed by turns (``next_placement``)."""
    rng = random.Random(f"{seed}:next")
    found = []
    for doc in documents:
        if doc.source not in PROSE_SOURCES_EXCLUDED:
            continue
        try:
            body = ast.parse(doc.text).body
        except (SyntaxError, ValueError):
            continue
        lines = doc.text.split("\n")
        for node in body[1:]:
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1
            if first >= 1 and not lines[first - 1].strip() and not lines[first][:1].isspace():
                start = sum(len(line) + 1 for line in lines[:first])
                end = sum(len(line) + 1 for line in lines[: node.end_lineno]) - 1
                found.append((doc, start, end))
    rng.shuffle(found)
    tasks = []
    for k, (doc, start, end) in enumerate(found[:n]):
        prefix = doc.text[max(0, start - BEFORE_CHARS) : start]
        if k % 3 == 2:  # straight under the last line of code
            prefix = prefix.rstrip("\n") + "\n"
        tasks.append(EditTask("next", doc.name, prefix, doc.text[start:end], doc.text[end : end + AFTER_CHARS] if k % 3 == 0 else ""))
    return tasks


def next_placement(task: EditTask) -> str:
    """Where a ``next`` task's cursor is: ``between`` units, at the ``end`` after a blank line, or at
    the end straight ``under`` the last line of code."""
    return "between" if task.suffix.strip() else "end" if task.prefix.endswith("\n\n") else "under"


def corrupt(line: str, document: str, rng: random.Random) -> str | None:
    """``line`` with one typo or one wrong name; None when the line offers no place for one."""
    names = [m for m in IDENTIFIER.finditer(line)]
    kind = rng.choice(["swap", "drop", "double", "name"])
    if kind == "name" and names:
        target = rng.choice(names)
        others = sorted({m.group() for m in IDENTIFIER.finditer(document)} - {target.group()})
        if others:
            return line[: target.start()] + rng.choice(others) + line[target.end() :]
    letters = [i for i, c in enumerate(line) if c.isalpha()]
    if len(letters) < 4:
        return None
    i = rng.choice(letters[:-1])
    if kind == "swap" and line[i] != line[i + 1]:
        return line[:i] + line[i + 1] + line[i] + line[i + 2 :]
    if kind == "double":
        return line[: i + 1] + line[i] + line[i + 1 :]
    return line[:i] + line[i + 1 :]
