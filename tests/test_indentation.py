"""Guessing a file's indentation from its lines."""

from sfumato.app.indentation import detect_indentation


def test_two_space_indentation_is_found_through_nesting_and_dedents():
    text = "a:\n  b:\n    c\n  d\ne\n  f\n"
    assert detect_indentation(text) == (True, 2)


def test_four_spaces_win_over_a_few_continuation_lines():
    text = "def f(x,\n      y):\n    if x:\n        return y\n    return x\nclass A:\n    pass\n"
    assert detect_indentation(text) == (True, 4)


def test_tabs_win_when_most_indented_lines_start_with_a_tab():
    assert detect_indentation("f() {\n\tx;\n\tif (y) {\n\t\tz;\n\t}\n  /* aligned */\n}\n") == (False, None)


def test_a_flat_file_says_nothing():
    assert detect_indentation("one\ntwo\n\nthree\n") is None
    assert detect_indentation("") is None
