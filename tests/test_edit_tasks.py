"""Held-out sentence-end tasks: a writer finishing a paragraph held as one line, as Markdown keeps it."""

from __future__ import annotations

from sfumato.model.training.corpus import Document
from sfumato.model.training.edit_tasks import END_COLUMN, sentence_end_tasks
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
