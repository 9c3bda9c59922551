"""A heavy rewrite's plan: which lines are written again, and what stays exactly as it was."""

from __future__ import annotations

from sfumato.model.line_rewrite import chosen_lines, line_means, rewrite_plan, selection_lines, standalone_lines

TEXT = "a = 1\n    b = 2\n\n    c = 3\n    d = 4"


def test_the_lines_join_back_to_the_selection():
    lines = selection_lines(TEXT)
    assert [line for line, _ in lines] == ["a = 1", "b = 2", "c = 3", "d = 4"]
    assert "".join(line + brk for line, brk in lines) == TEXT


def test_a_token_counts_for_the_line_its_last_byte_is_in():
    lines = selection_lines("ab\n  cd")
    # tokens after a healed "\n": "\n" (the heal), "ab", "\n  c", "d"
    means = line_means(lines, [1, 2, 4, 1], [-9.0, -1.0, -3.0, -5.0], heal=1)
    assert means == [-1.0, -4.0]  # the heal counts for no line; "\n  c" for the second


def test_the_least_likely_lines_are_chosen_and_the_rest_is_kept_as_it_was():
    lines = selection_lines(TEXT)
    chosen = chosen_lines(lines, [-0.5, -4.0, -0.1, -3.0], 0.5)
    assert chosen == [1, 3]
    lead, plan = rewrite_plan(lines, chosen)
    assert lead == "a = 1\n    " and [line for line, _ in plan] == ["b = 2", "d = 4"]
    assert lead + "".join(line + after for line, after in plan) == TEXT
    assert chosen_lines(lines, [0.0] * 4, 0.01) == [0]  # at least one line
    assert chosen_lines(selection_lines("\n\n"), [0.0], 1.0) == []  # none has text


def test_a_line_of_a_longer_statement_is_not_written_again_alone():
    text = 'from os import (path,\n    sep)\nname = "a (b"  # (c\nvalues = [1,\n    2]\ntotal = f(\'\\\'(\')'
    lines = selection_lines(text)
    assert [line for line, _ in lines][:2] == ["from os import (path,", "sep)"]
    # brackets inside quotes and comments do not count; an escaped quote does not end its string
    assert standalone_lines(lines) == [False, False, True, False, False, True]
    assert chosen_lines(lines, [-9.0, -8.0, -1.0, -7.0, -6.0, -2.0], 0.3) == [2, 5]
    assert chosen_lines(selection_lines("f(a,\n  b)"), [-1.0, -2.0], 0.5) == [1]  # none stands alone: any line
