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


def test_next_tasks_take_out_whole_top_level_units_between_units_and_at_the_end():
    from sfumato.model.training.corpus import Document
    from sfumato.model.training.edit_tasks import next_placement, next_tasks
    from sfumato.model.training.evaluate_lm import request_for

    text = ('import os\n\n\n@cache\ndef home():\n    return os.environ["HOME"]\n\n\n'
            'class Paths:\n    root = "/"\n\n\nLIMIT = 3\n# a note\nSTEP = 1\n')
    tasks = next_tasks([Document("stdlib", "paths.py", text)], 3, seed=0)
    units = {'@cache\ndef home():\n    return os.environ["HOME"]', 'class Paths:\n    root = "/"', "LIMIT = 3"}
    assert {t.middle for t in tasks} == units  # STEP follows a comment, not a blank line: not a unit here
    assert sorted(next_placement(t) for t in tasks) == ["between", "end", "under"]
    for task in tasks:
        assert text.startswith(task.prefix.rstrip("\n")) and task.prefix.endswith("\n")
        assert task.suffix == "" or text.endswith(task.middle + task.suffix)
        assert next_placement(task) != "under" or not task.prefix.endswith("\n\n")  # straight under the code
        assert request_for(task, "next").one_line  # the editor asks for one line at the margin


def test_a_next_text_counts_as_valid_while_it_parses_or_only_lacks_its_end():
    from sfumato.model.training.evaluate_lm import valid_so_far

    assert valid_so_far("def f(x):\n    if x:\n")  # cut by the token cap
    assert valid_so_far("\n\n    def method(self):\n        return 1")  # a method of the class above
    assert valid_so_far("")
    assert not valid_so_far("ortunately, the following is a list")
    assert not valid_so_far("from ._types import (\n    None,")
