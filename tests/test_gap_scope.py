"""A text of several lines ends where it leaves the block its gap sits in."""

from __future__ import annotations

from sfumato.model.gap_scope import at_block_end, repeat_end, scope_end, whole_lines_end


def test_a_text_ends_before_the_first_line_less_indented_than_its_gap():
    text = 'cleaned == cleaned[::-1]\n\n\ndef main'
    assert text[: scope_end(text, 4)] == "cleaned == cleaned[::-1]"
    body = "total = 0\n    for x in xs:\n        total += x\n    return total\n\nprint"
    assert body[: scope_end(body, 4)] == "total = 0\n    for x in xs:\n        total += x\n    return total"


def test_a_text_that_stays_in_its_block_is_whole():
    assert scope_end("{\n        'a': 1,\n    }", 4) == -1  # a closing bracket at the gap line's own indentation
    assert scope_end("x\n\n  ", 4) == -1  # the next line's first character is not written yet
    assert scope_end("x\ndef f", 0) == -1  # a gap at the margin has no block to leave
    assert scope_end("\nprint(x)", 4) == 0  # it left at once: nothing is kept


def test_a_blank_indented_line_above_a_dedent_ends_its_block():
    assert at_block_end("def area(w, h):\n    ", "\n\n\nprint(area(2, 3))\n")
    assert at_block_end("for f in *.log; do\n    ", "\ndone\n")
    assert at_block_end("def f():\n    ", "")  # the file ends: nothing follows the block
    assert at_block_end("def f():\n\tx = 1\n\t", "  \n")


def test_a_cursor_with_text_on_its_line_or_more_of_the_block_below_does_not():
    assert not at_block_end("def mean(values):\n    total = sum(values)\n    ", "\n    return total\n")
    assert not at_block_end("def f():\n    return ", "\n")  # text before the cursor
    assert not at_block_end("def f():\n    ", "x\n")  # text after it
    assert not at_block_end("x = 1\n", "\ny = 2\n")  # at the margin nothing is less indented


def test_a_text_ends_before_its_lines_start_repeating_the_lines_before_them():
    loop = 'if not x:\n        return None\n    if not x:\n        return None\n    if not x:\n        return'
    assert loop[: repeat_end(loop, 4)] == "if not x:\n        return None"  # the first line is written at column 4
    one = "total += x\n    total += x\n    total += x\n"
    assert one[: repeat_end(one, 0)] == "total += x\n    total += x"  # at column 0 the first is another line
    assert repeat_end("a = 1\nb = 2\na = 1\n", 0) == -1  # a line again, not right after itself
    assert repeat_end("x\n    )\n    )\n", 4) == -1  # lines without a word may repeat once
    brackets = "x\n    (\n    (\n    (\n    ("
    assert brackets[: repeat_end(brackets, 4)] == "x\n    ("  # ... not twice
    assert repeat_end("y = 1\ny = 1", 0) == -1  # the second is not whole yet
    assert repeat_end("a = 1\n\n\n\n\nb = 2\n", 0) == -1  # blank lines are not written again


def test_a_text_its_budget_cut_ends_after_its_last_line_that_closes_what_it_opened():
    text = "total = 0\n    for x in xs:\n        total += x\n    if total:\n        ret"
    assert text[: whole_lines_end(text, 4)] == "total = 0\n    for x in xs:\n        total += x"
    opened = "if x is None:\n        return None\n    if y is None:\n"  # the last line's body was never written
    assert opened[: whole_lines_end(opened, 4)] == "if x is None:\n        return None"
    call = "names = (\n        'a',\n        'b',"
    assert whole_lines_end(call, 4) == -1  # its bracket never closes: no line of it ends the text
    assert whole_lines_end("return self._rescale(self._rescale(", 4) == -1  # one line: kept as it is
