"""The held-out figures' scoring of block rewrites."""

from __future__ import annotations

from sfumato.model.training.evaluate_lm import rewrite_parses

CODE = "total = 0\nfor value in values:\n    total += value\n"


def test_a_rewrite_that_parses_as_code_counts():
    assert rewrite_parses(CODE, "total = sum(values)\n")


def test_an_empty_or_comment_only_rewrite_of_code_does_not_count_though_it_parses():
    assert not rewrite_parses(CODE, "")
    assert not rewrite_parses(CODE, "\n    \n")
    assert not rewrite_parses(CODE, "# add the values up\n#\n")


def test_a_comment_block_may_be_rewritten_as_comments():
    assert rewrite_parses("# Copyright\n# the licence\n", "# Copyright\n# a licence\n")


def test_a_rewrite_that_does_not_parse_does_not_count():
    assert not rewrite_parses(CODE, "total = = 0\n")


def test_a_body_task_asks_for_the_rest_of_the_block_from_its_first_lines_indentation():
    from sfumato.model.training.corpus import Document
    from sfumato.model.training.evaluate_lm import body_tasks, parses, request_for

    text = 'def area(w, h):\n    """The area."""\n    if w < 0:\n        raise ValueError(w)\n    return w * h\n\n\nprint(area(2, 3))\n'
    (task,) = body_tasks([Document("stdlib", "shapes.py", text)], 1, seed=0)
    assert task.prefix.endswith('"""The area."""\n    ') and task.middle == "if w < 0:\n        raise ValueError(w)\n    return w * h"
    request = request_for(task, "body")
    assert not request.one_line and request.max_new_tokens == 64  # the rest of the block, as Ctrl+K there asks
    assert parses(task, task.middle) and not parses(task, "if w < 0:")
