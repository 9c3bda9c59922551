"""A text of several lines ends where it leaves the block its gap sits in."""

from __future__ import annotations

from sfumato.model.gap_scope import scope_end


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
