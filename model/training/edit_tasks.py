"""Held-out tasks shaped as the editor sends them, and the baselines every figure is set beside.

* ``line``: one non-blank line of held-out code; the cursor sits after its indentation, the
  prefix holds ~3,000 characters before the cursor and the suffix ~1,500 after the line's end.
* ``prose``: 1-4 words cut from a line of English prose in held-out documentation.
* ``repair``: a ``line`` task given as a rewrite of the correct line with 30% of its tokens
  renoised (the engine's ``strength``): the right answer is to give the line back.

Answers are compared whitespace-normalised (``exact``) and by ``difflib`` character similarity.
Baselines: ``repeat`` writes the nearest non-blank line above; ``lookup`` writes the line that
most often sits between the same two neighbours, in the same file first, then in the corpus
table (``sfumato.model.retrieval`` with the ``pair`` key alone).
"""

from __future__ import annotations

import difflib
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from sfumato.model.api import InfillRequest
from sfumato.model.line_table import LineTable, normalise
from sfumato.model.retrieval import retrieve

BEFORE_CHARS = 3000
AFTER_CHARS = 1500
REPAIR_STRENGTH = 0.3
PROSE_SOURCES_EXCLUDED = ("stdlib", "site-packages")  # every other corpus source is documentation
WORD = re.compile(r"[A-Za-z][a-z]+(?:'[a-z]+)?[,.;:]?")


@dataclass(frozen=True)
class EditTask:
    kind: str  # "line", "prose" or "repair"
    document: str
    prefix: str
    middle: str
    suffix: str
    context: tuple[str, ...] = ()  # project snippets, as the editor sends them (none unless asked)

    def request(self, max_new_tokens: int = 48, **options) -> InfillRequest:
        if self.kind == "repair":
            options = {"init_text": self.middle, "strength": REPAIR_STRENGTH, **options}
        return InfillRequest(prefix=self.prefix, suffix=self.suffix, max_new_tokens=max_new_tokens,
                             context=self.context, **options)


def exact(prediction: str, reference: str) -> bool:
    return normalise(prediction) == normalise(reference)


def similarity(prediction: str, reference: str) -> float:
    return difflib.SequenceMatcher(None, prediction, reference, autojunk=False).ratio()


def line_tasks(documents: Sequence, n: int, seed: int, kind: str = "line") -> list[EditTask]:
    rng = random.Random(f"{seed}:line")
    documents = [doc for doc in documents if doc.source in PROSE_SOURCES_EXCLUDED
                 and sum(1 for line in doc.text.splitlines() if line.strip()) >= 8]
    tasks = []
    while len(tasks) < n:
        doc = rng.choice(documents)
        lines = doc.text.split("\n")
        i = rng.randrange(len(lines))
        if not lines[i].strip() or len(lines[i]) > 300:
            continue
        indent = len(lines[i]) - len(lines[i].lstrip())
        start = sum(len(line) + 1 for line in lines[:i]) + indent
        middle = lines[i].strip()
        end = start + len(middle)
        tasks.append(EditTask(kind, doc.name, doc.text[max(0, start - BEFORE_CHARS) : start], middle,
                              doc.text[end : end + AFTER_CHARS]))
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


def repeat_baseline(task: EditTask) -> str:
    above = [line for line in task.prefix.split("\n")[:-1] if line.strip()]
    return above[-1].strip() if above else ""


def lookup_baseline(task: EditTask, table: LineTable | None) -> str:
    found = [r for r in retrieve(task.prefix, task.suffix, table=table, limit=4) if r.kind == "pair"]
    return found[0].text if found else ""
