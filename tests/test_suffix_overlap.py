"""A generated text's end that repeats the suffix's start is dropped only when it is doubled."""

from __future__ import annotations

import pytest

from sfumato.model.suffix_overlap import overlap_to_drop, without_overlap


@pytest.mark.parametrize(
    ("before", "text", "after", "drop"),
    [
        ('    """', 'Return the variance of values."""', '"""\n    n = len(values)\n', 3),  # closing quotes twice
        ("The module computes", " the statistics of a dataset.", ".\n\nUse it", 1),  # a doubled period
        ("    total = sum(", "values)", ")\n", 1),  # a bracket the line then closes twice
        ('name = "', 'world"', '"\n', 1),  # a quote left open by the repeat
        ("result = f(g(", "x)", ")\n", 0),  # meant twice: f(g(x)) balances only with both
        ("items = ", "[1, 2]", "]\n", 1),
        ("value = ", "compute()", "\n", 0),  # nothing repeated
        ("call(", "a,", " b)\n", 0),  # white space alone is no overlap
        ("call(", "a, ", " b)\n", 1),  # ... but a double space loses the text's
        ('    return "Good morning, " + ', "name ", ' + "!"\n', 1),
        ("x = ", "total\n    ", " y\n", 0),  # an indentation is not a space before the suffix
        ("prefix_", "name", "name_suffix\n", 0),  # a word that is all the text: left as written
        ("root = math.", "sqrt(16)", "(16)  # the square root\n", 4),  # the call's argument, copied
        ("x = f", "(a)", "(a)\n", 0),  # too short to tell
        ('  "license": "', 'MIT",', '"\n}\n', 2),  # the closing quote and a comma, as if an entry followed
        ("call(a, ", "b),", ")\n", 2),
        ("pair = (", "a, b", ")\n", 0),
        ("f(g(", "x),", ")\n", 0),  # f(g(x), ...: the bracket closes g, the comma goes on
        ('    "A",\n', '"B",\n    "NORM', '\n    "NORMAL",\n', len('\n    "NORM')),  # the next line's start, copied
        ("x = [", "1,\n    2", "\n    2, 3]\n", 0),  # too short to tell
    ],
)
def test_the_overlap_dropped(before, text, after, drop):
    assert overlap_to_drop(text, before, after) == drop


def test_the_engine_drops_the_repeat_from_its_tokens(tiny_lm, smol_tokenizer):
    pytest.importorskip("torch")
    from sfumato.model.api import InfillRequest, ModelInfo, TokenState
    from sfumato.model.lm_engine import LmDenoiserBackend

    backend = LmDenoiserBackend(tiny_lm, smol_tokenizer, ModelInfo("tiny", "lm-denoiser", "cpu", 0, False))
    row = backend._row(InfillRequest(prefix='def f():\n    """', suffix='"""\n    return 1\n'), 0)
    states = (TokenState("Return one", 0.9, True), TokenState(".", 0.8, True), TokenState('"""', 0.7, True))
    assert "".join(s.text for s in without_overlap(states, row.before, row.after)) == "Return one."
    states = (TokenState("Return one", 0.9, True), TokenState('."""', 0.8, True))
    assert [s.text for s in without_overlap(states, row.before, row.after)] == ["Return one", "."]
    row.canvas = backend._encode(row.heal.decode() + 'Return one."""')
    row.masked, row.confidence = [False] * len(row.canvas), [0.9] * len(row.canvas)
    assert "".join(s.text for s in backend._states(row)) == "Return one."  # the engine's drafts go through it


@pytest.mark.parametrize(
    ("text", "stop", "stop_space", "at"),
    [
        ('echo "done"', "done", True, -1),  # a word the line quotes: the suffix is a line `done`
        ("echo; done", "done", True, 6),  # the suffix's line, written on: run into
        ("done", "done", True, 0),
        ("def __str__(self, x):", "self,", True, 12),  # the arguments the next lines hold
        ("it's done", "done", True, 5),  # an apostrophe opens no quote
        ('x = ""done', "done", False, 6),  # a suffix with no space before it is run into inside a word too
        ("undone done", "done", True, 7),  # inside a word is not where a spaced suffix starts
    ],
)
def test_where_a_text_runs_into_the_suffix(text, stop, stop_space, at):
    from sfumato.model.suffix_overlap import stop_at

    assert stop_at(text, stop, stop_space) == at
