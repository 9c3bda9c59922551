"""A result that leaves a file that parsed failing to parse is said so (``sfumato.app.syntax_check``)."""

from sfumato.app.syntax_check import broken_by_result, check_for, json_error, python_error, toml_error

BEFORE = "def doubled(items):\n    result = []\n    for item in items:\n        result.append(item * 2)\n    return result\n"
AFTER = "def doubled(items):\n    result = []\n    return [item * 2 for item in items]\n        result.append(item * 2)\n    return result\n"


def test_the_parser_says_where_and_why_without_running_anything():
    assert python_error(BEFORE) is None
    assert python_error(AFTER) == "line 4: unexpected indent"
    assert python_error("import os\nos.remove('/nonexistent')\n") is None  # read, never run
    assert python_error("x = (" * 10_000)  # too deep to read: a message, not a crash
    assert python_error("a = 1\x00") is not None


def test_only_a_file_that_parsed_before_is_said_to_be_broken_by_the_result():
    assert broken_by_result(python_error, BEFORE, AFTER) == "line 4: unexpected indent"
    assert broken_by_result(python_error, BEFORE, BEFORE.replace("2", "3")) is None
    assert broken_by_result(python_error, AFTER, AFTER + "x = 1\n") is None  # broken already: not the result's doing
    assert broken_by_result(None, BEFORE, AFTER) is None  # a language without a check
    huge = BEFORE + "#" * 200_000
    assert broken_by_result(python_error, huge, AFTER + huge) is None  # not parsed on the UI thread


def test_text_written_at_a_cursor_that_leaves_the_file_unfinished_at_its_end_breaks_nothing():
    before = "import math\n\n\ndef area(r):\n    return math.pi * r ** 2\n"
    header = before + "\n\ndef perimeter(r):"  # Ctrl+K on the last line: the body comes next
    assert broken_by_result(python_error, before, header, written_at_cursor=True) is None
    assert broken_by_result(python_error, before, before + "values = [\n    1,", written_at_cursor=True) is None
    assert broken_by_result(python_error, before, header) is not None  # a rewrite may have lost the body there
    middle = before.replace("\n\n\ndef", "\n\n\ndef perimeter(r):\n\ndef")  # a header with a definition after it
    assert broken_by_result(python_error, before, middle, written_at_cursor=True) is not None
    assert broken_by_result(python_error, before, before + "x = 1 +\n", written_at_cursor=True) is not None


def test_a_config_file_that_parsed_is_said_to_be_broken_by_the_result():
    package = '{\n  "name": "sfumato",\n  "license": "MIT"\n}\n'
    assert broken_by_result(json_error, package, package.replace('"MIT"', "MIT")) == "line 3: Expecting value"
    settings = '{\n  // comments: not JSON, so never judged\n  "a": 1\n}\n'
    assert broken_by_result(json_error, settings, settings.replace("1", "")) is None
    assert json_error("[" * 100_000) is not None
    project = '[project]\nname = "sfumato"\nversion = "1.0"\n'
    assert "line 3" in broken_by_result(toml_error, project, project.replace('"1.0"', "1.0.0"))
    assert broken_by_result(toml_error, project, project.replace("1.0", "1.1")) is None


def test_each_language_gets_its_own_check_and_the_others_none():
    assert check_for(["python", "py", "sage", "python3", "py3"]) is python_error
    assert check_for(["json", "json-object"]) is json_error
    assert check_for(["toml"]) is toml_error
    assert check_for(["bash", "sh", "ksh", "zsh", "shell"]) is None
    assert check_for(["markdown", "md"]) is None
