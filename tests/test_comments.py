"""One-line comment markers and the comment toggle on plain lists of lines."""

from sfumato.app.comments import line_comment_marker, toggle_line_comments


def test_markers_come_from_the_pygments_aliases():
    assert line_comment_marker(["python", "py"]) == ("#", "")
    assert line_comment_marker(["rust", "rs"]) == ("//", "")
    assert line_comment_marker(["tsql", "t-sql"]) == ("--", "")
    assert line_comment_marker(["forth"]) == ("\\", "")
    assert line_comment_marker(["html"]) == ("<!--", "-->")
    assert line_comment_marker(["json"]) is None


def test_uncomment_removes_the_marker_and_one_space_only():
    assert toggle_line_comments(["  #  a", "#b", ""], ("#", "")) == ["   a", "b", ""]


def test_block_comment_languages_wrap_each_line_and_unwrap_it():
    lines = ["<ul>", "  <li>x</li>", "", "</ul>"]
    wrapped = toggle_line_comments(lines, ("<!--", "-->"))
    assert wrapped == ["<!-- <ul> -->", "<!--   <li>x</li> -->", "", "<!-- </ul> -->"]
    assert toggle_line_comments(wrapped, ("<!--", "-->")) == lines
    assert toggle_line_comments(["/*a*/  "], ("/*", "*/")) == ["a  "]


def test_blank_lines_alone_are_left_alone():
    assert toggle_line_comments(["", "   "], ("#", "")) == ["", "   "]
