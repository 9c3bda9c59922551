"""Held-out sentence-end tasks: a writer finishing a paragraph held as one line, as Markdown keeps it."""

from __future__ import annotations

from sfumato.model.training.corpus import Document
from sfumato.model.training.edit_tasks import (
    END_COLUMN,
    sentence_end_tasks,
    wrapped_end_tasks,
)
from sfumato.model.training.lm_corpus import unwrapped

WRAPPED = """Title
=====

This paragraph is wrapped near eighty columns, as reStructuredText sources keep
their prose, and it goes on for a while so that the sentence it holds ends well
past the column where a wrapped file would have broken it.

.. code-block:: python

    print("code is never a task")

A short line.
"""


def test_a_sentence_end_is_the_rest_of_an_unwrapped_paragraph_past_the_column():
    documents = [Document("guide-docs", "guide:intro.rst", WRAPPED), Document("stdlib", "stdlib/x:x.py", WRAPPED)]
    tasks = sentence_end_tasks(documents, 20, seed=3)
    assert len(tasks) == 20
    text = unwrapped(WRAPPED)
    paragraph = next(line for line in text.split("\n") if line.startswith("This paragraph"))
    for task in tasks:
        assert (task.prefix + task.middle + task.suffix) in text  # the unwrapped document, cut at the cursor
        line = task.prefix.rsplit("\n", 1)[-1] + task.middle
        assert line == paragraph and paragraph.endswith(" " + task.middle)
        assert len(task.prefix.rsplit("\n", 1)[-1]) > END_COLUMN and 1 <= len(task.middle.split()) <= 8
    assert len({task.middle for task in tasks}) > 1  # the cut varies


def test_a_wrapped_end_is_the_rest_of_a_wrapped_paragraphs_last_line():
    documents = [Document("guide-docs", "guide:intro.rst", WRAPPED), Document("stdlib", "stdlib/x:x.py", WRAPPED)]
    tasks = wrapped_end_tasks(documents, 20, seed=3)
    assert len(tasks) == 20
    last_line = "past the column where a wrapped file would have broken it."
    for task in tasks:
        assert task.prefix + task.middle + task.suffix in WRAPPED  # the document as it holds the paragraph
        line = task.prefix.rsplit("\n", 1)[-1]
        assert line.strip() and line + task.middle == last_line  # a word or more before the cursor
        assert task.suffix.startswith("\n\n") and 1 <= len(task.middle.split()) <= 8
    assert len({task.middle for task in tasks}) > 1
    last = wrapped_end_tasks(documents, 20, seed=3, last=True)  # the paragraph is the last one written so far
    assert [(t.prefix, t.middle) for t in last] == [(t.prefix, t.middle) for t in tasks] and {t.suffix for t in last} == {"\n"}
