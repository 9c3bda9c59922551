"""The phrase table: short phrases of documentation keyed by the words around them."""

from __future__ import annotations

from model.phrase_table import PhraseTable, build, words_around
from model.retrieval import retrieve

CORPUS = [
    "The function returns a new list of the items.\n\nIt returns a new list of names.",
    "This method returns a new list of values, sorted.\n\nCall it twice.",
    "A view returns the same list of rows.",
]


def table(tmp_path) -> PhraseTable:
    build(CORPUS, tmp_path / "phrases")
    return PhraseTable(tmp_path / "phrases")


def test_the_phrase_seen_most_often_between_the_same_words_comes_first(tmp_path):
    found = table(tmp_path).lookup(["It", "returns"], ["list", "of"])
    assert found[0].text == "a new"
    assert found[0].kind == "gapright" and found[0].count == 3  # the two words before were seen once
    assert "the same" not in [phrase.text for phrase in found]  # seen once: below the table's floor


def test_keys_ignore_case_and_stop_at_a_paragraph_break(tmp_path):
    assert table(tmp_path).lookup(["IT", "RETURNS"], ["LIST", "OF"])[0].text == "a new"
    left, right = words_around("Intro.\n\nIt returns ", " list of things.\n\nNext paragraph.")
    assert left == ["It", "returns"] and right == ["list", "of", "things."]


def test_retrieval_proposes_phrases_inside_a_line_of_prose_only(tmp_path):
    phrases = table(tmp_path)
    inside = retrieve("Intro.\n\nHere the helper returns ", " list of files.\n", phrases=phrases)
    assert ("a new", "phrases", "gapright") in [(r.text, r.source, r.kind) for r in inside]
    whole_line = retrieve("Intro.\nIt returns\n", "\nlist of files.\n", phrases=phrases)
    assert all(r.source != "phrases" for r in whole_line)


def test_code_gets_no_documentation_phrases(tmp_path):
    build(["It may return ``None``. when empty.\n\nIt may return ``None``. when empty."], tmp_path / "code")
    phrases = PhraseTable(tmp_path / "code")
    assert phrases.lookup(["may", "return"], ["when", "empty."])[0].text == "``None``."
    sentence = retrieve("Intro.\n\nThe method may return ", " when empty.\n", phrases=phrases)
    assert "``None``." in [r.text for r in sentence]
    code = retrieve("def f(x):\n    y = x\n    return ", " when\n", phrases=phrases)
    assert all(r.source != "phrases" for r in code)
