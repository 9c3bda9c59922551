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
