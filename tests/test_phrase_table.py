"""The phrase table: short phrases of documentation keyed by the words around them."""

from __future__ import annotations

from sfumato.model.phrase_table import PhraseTable, build, words_around
from sfumato.model.rerank import Alternative, Evidence, Ranker
from sfumato.model.retrieval import retrieve

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


SIDES_CORPUS = [
    "It returns the value now. " * 4,  # "the" follows "returns" most often
    "It returns a value now. " * 3,
    "Make a list now. " * 4,  # "a" both follows "returns" and precedes "list"
]


def test_words_never_seen_together_get_phrases_likely_on_each_side_as_a_guess(tmp_path):
    build(SIDES_CORPUS, tmp_path / "sides")
    phrases = PhraseTable(tmp_path / "sides")
    found = phrases.lookup(["Someone", "returns"], ["list", "twice."])  # no gap key knows these words
    assert found and all(phrase.kind == "sides" for phrase in found)
    assert found[0].text == "a"  # likely after "returns" and before "list"; "the" is likely on one side only
    assert "the" in [phrase.text for phrase in found]
    assert all(len(phrase.text.split()) <= 2 for phrase in found)
    assert phrases.lookup(["unknown"], ["words"]) == []


def test_a_guess_from_the_sides_is_never_confident():
    ranker = Ranker({"sides": 50.0}, bias=0.0, confidence_bar=0.1)
    evidence = Evidence(None, None, 0, 0)
    assert not ranker.confident(ranker.log_odds(Alternative("a", "sides", "phrases"), evidence), Alternative("a", "sides", "phrases"))
    assert ranker.confident(ranker.log_odds(Alternative("a", "gap1", "phrases"), evidence) + 50, Alternative("a", "gap1", "phrases"))
