"""Retrieval of candidate text: the document, project context, the corpus table, spans, scope."""

from __future__ import annotations

from sfumato.model.hashed_table import BLOCK_LINES
from sfumato.model.line_table import LineTable, build
from sfumato.model.project_context import context_tokens, file_chunks, nearest_chunks
from sfumato.model.retrieval import retrieve, retrieve_spans, scope_candidates

DOCUMENT = """import os


def first(path):
    base = os.path.basename(path)
    stem = base.rsplit(".", 1)[0]
    return stem


def second(path):
    base = os.path.basename(path)
"""


def test_a_line_between_the_same_neighbours_in_the_document_comes_first():
    suffix = "\n    return stem\n"
    found = retrieve(DOCUMENT + "    ", suffix)
    assert found[0].text == 'stem = base.rsplit(".", 1)[0]'
    assert (found[0].source, found[0].kind) == ("document", "pair")


def test_the_cursor_line_and_its_neighbours_do_not_propose_themselves():
    prefix = "a = 1\nb = 2\n"
    found = retrieve(prefix, "\nc = 3\n")
    assert "b = 2" not in [r.text for r in found if r.kind == "pair"]
    assert "c = 3" not in [r.text for r in found if r.kind in ("above", "above1")]


def test_a_candidate_must_fit_what_is_typed_before_and_after_the_region():
    found = retrieve(DOCUMENT + "    stem = base.", "\n    return stem\n")
    assert found[0].text == 'rsplit(".", 1)[0]'
    found = retrieve(DOCUMENT + "    other = ", "\n    return stem\n")
    assert [r.kind for r in found] == ["scope", "scope"]  # no line starts with "other = "


def test_the_table_proposes_lines_from_its_corpus(tmp_path):
    corpus = ["if __name__ == '__main__':\n    main()\n"] * 3 + ["x = 1\ny = 2\nz = 3\n"]
    sizes = build(corpus, tmp_path / "table")
    assert sizes["entries"] > 0
    table = LineTable(tmp_path / "table")
    found = retrieve("import sys\n\nif __name__ == '__main__':\n    ", "\n", table=table)
    assert found[0].text == "main()" and found[0].source == "table"
    assert found[0].count == 3


def test_table_lines_survive_block_boundaries_and_unicode(tmp_path):
    lines = [f"value_{i} = 'é{i}'" for i in range(2 * BLOCK_LINES + 5)]
    build(["\n".join(lines)], tmp_path / "table")
    table = LineTable(tmp_path / "table")
    for i in (1, BLOCK_LINES, 2 * BLOCK_LINES + 3):
        proposals = table.lookup(lines[i - 2] if i > 1 else "\x02", lines[i - 1], lines[i + 1])
        assert proposals[0].text == lines[i] and proposals[0].kind == "pair"


def test_context_snippets_are_a_source():
    context = ("def f(path):\n    base = os.path.basename(path)\n    name = base.upper()\n    return name\n",)
    found = retrieve("def g(path):\n    base = os.path.basename(path)\n    ", "\n    return name\n", context)
    assert (found[0].text, found[0].source) == ("name = base.upper()", "context")


def test_spans_fill_words_inside_a_line():
    text = "The parser reads the whole file before it returns.\nLater the parser reads the whole file again."
    assert retrieve_spans("Now the parser reads ", " file twice.", [text])[0] == ("the whole", 2)
    assert retrieve_spans("", "file", [text]) == []


def test_names_in_scope_where_an_expression_starts():
    prefix = "def mean(values):\n    total = sum(values)\n    return "
    assert scope_candidates(prefix, "\n") == ["total", "values"]
    assert scope_candidates("def f(a):\n    print(a)\n    ", "\n") == []
    assert scope_candidates("x = ", "\n") == []


def test_nearest_snippets_share_names_with_the_cursor(project_tokenizer):
    files = [("a.py", "def parse_header(line):\n    return line.split(':')\n"),
             ("b.py", "def unrelated():\n    return 42\n")]
    snippets = nearest_chunks("header = parse_header(", ")\n", [c for name, text in files for c in file_chunks(name, text)])
    assert len(snippets) == 1 and snippets[0].startswith("# a.py\n")
    tokens = context_tokens(project_tokenizer, snippets * 50, budget=128)
    assert 0 < len(tokens) <= 128 // 4


def test_chat_and_served_prompts_carry_the_context():
    from sfumato.model.api import InfillRequest
    from sfumato.model.region_prompt import context_text, region_message

    request = InfillRequest(prefix="x = ", suffix="\n", context=("# a.py\ndef helper():\n    pass\n",))
    assert "def helper" in region_message(request, 512)
    assert context_text(request, 512) == request.context[0]
    assert context_text(request, 8) == ""  # a snippet that does not fit whole is left out


def test_a_whole_line_gets_the_line_above_as_a_last_guess():
    found = retrieve("def f(x):\n    assert g(x) == 1\n    ", "\n    return x\n")
    assert (found[-1].text, found[-1].kind) == ("assert g(x) == 1", "repeat")
    inside = retrieve("def f(x):\n    assert g(x) == 1\n    y = ", "\n    return x\n")
    assert all(r.kind != "repeat" for r in inside)  # a gap inside a line is not a line


def test_a_line_suggested_at_the_start_of_an_empty_line_gets_the_blocks_indentation():
    found = retrieve("def f(x):\n    assert g(x) == 1\n", "\n    return x\n")
    assert (found[-1].text, found[-1].kind) == ("    assert g(x) == 1", "repeat")
    opened = retrieve("def f(x):\n    if x:\n", "\n    return x\n")
    assert opened[-1].text == "        if x:"  # a block was opened above: one level deeper
    after_indent = retrieve("def f(x):\n    assert g(x) == 1\n    ", "\n    return x\n")
    assert after_indent[-1].text == "assert g(x) == 1"  # the cursor already sits after it
    top_level = retrieve("x = 1\n", "\n    return 1\n")
    assert top_level[-1].text == "x = 1"  # the line below is deeper: it may open a block itself
