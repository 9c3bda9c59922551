"""The embedded engine's denoising loop, on a tiny random causal LM with SmolLM2's tokenizer.

Random weights write nonsense, so these tests assert behaviour: every draft is one pass, the
layout keeps the base's causal reading of the prompt, rewrites pin what they keep, one-line
infills stop at the line's end, the cache is reused, a cancel stops between passes.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest

torch = pytest.importorskip("torch")

from sfumato.model.api import Cancelled, CancelFlag, EngineError, InfillRequest, ModelInfo, TemplateRequest  # noqa: E402
from sfumato.model.lm_layout import SpecialIds, canvas_mask, prompt_ids  # noqa: E402
from sfumato.model.lm_row import heal_position, stop_loop  # noqa: E402


@pytest.fixture
def backend(tiny_lm, smol_tokenizer):
    from sfumato.model.lm_engine import LmDenoiserBackend

    return LmDenoiserBackend(tiny_lm, smol_tokenizer, ModelInfo("tiny", "lm-denoiser", "cpu", 0, False))


def run(backend, request):
    passes = [drafts[0] for drafts in backend.stream([request])]
    return passes, passes[-1]


def test_the_layout_keeps_the_base_reading_of_the_prompt(tiny_lm, smol_tokenizer):
    special = SpecialIds.of(smol_tokenizer)
    ids = prompt_ids(special, smol_tokenizer("def f(x):\n    return").input_ids, smol_tokenizer("\n").input_ids)
    canvas = [special.mask] * 4
    x = torch.tensor([ids + canvas])
    with torch.inference_mode():
        plain = tiny_lm(torch.tensor([ids])).logits
        laid_out = tiny_lm(x, attention_mask=canvas_mask(len(ids), len(canvas))).logits
        causal = tiny_lm(x).logits
    assert torch.allclose(plain, laid_out[:, : len(ids)], atol=1e-5)  # the prompt reads as the base reads it
    assert not torch.allclose(causal[:, len(ids) :], laid_out[:, len(ids) :], atol=1e-5)  # the canvas looks both ways



def test_the_engine_reads_as_much_prefix_as_its_adapter_was_trained_with(tiny_lm, smol_tokenizer, tmp_path):
    from sfumato.model.lm_base import trained_prefix
    from sfumato.model.lm_engine import PREFIX_TOKENS, LmDenoiserBackend

    (tmp_path / "older").mkdir()
    (tmp_path / "older" / "training.json").write_text(json.dumps({"step": 1}))
    (tmp_path / "longer").mkdir()
    (tmp_path / "longer" / "training.json").write_text(json.dumps({"step": 1, "prefix": 448}))
    assert (trained_prefix(None), trained_prefix(tmp_path / "older"), trained_prefix(tmp_path / "longer")) == \
        (PREFIX_TOKENS, PREFIX_TOKENS, 448)
    request = InfillRequest(prefix="x = 1\n" * 300, suffix="")
    mark = SpecialIds.of(smol_tokenizer).prefix_mark
    for prefix_tokens in (PREFIX_TOKENS, 448):
        backend = LmDenoiserBackend(tiny_lm, smol_tokenizer, ModelInfo("tiny", "lm-denoiser", "cpu", 0, False),
                                    prefix_tokens=prefix_tokens)
        prompt, heal = backend._prompt(request)
        assert len(prompt) - prompt.index(mark) - 1 == prefix_tokens - 1 and heal  # its last token is healed

def test_project_snippets_go_before_the_prefix(backend, smol_tokenizer):
    snippet = "# shapes.py\ndef area(width, height):\n    return width * height\n"
    request = InfillRequest(prefix="from shapes import area\nprint(", suffix=")\n", context=(snippet,))
    prompt, _ = backend._prompt(request)
    plain, _ = backend._prompt(replace(request, context=()))
    snippet_ids = smol_tokenizer(snippet, add_special_tokens=False).input_ids
    mark = prompt.index(SpecialIds.of(smol_tokenizer).prefix_mark)
    assert prompt[mark + 1 : mark + 1 + len(snippet_ids)] == snippet_ids
    assert prompt[:mark + 1] + prompt[mark + 1 + len(snippet_ids):] == plain
    huge = replace(request, context=("# big.py\n" + "x = 1\n" * 400,))
    assert backend._prompt(huge)[0] == plain  # a snippet over the budget is left out whole


def test_the_documents_name_heads_its_prefix_unless_it_is_python(backend, smol_tokenizer):
    """A shell script's first lines read as Python to a model that learnt from Python: its name,
    headed as a snippet's, goes right before the prefix; a Python file, a prose file or an untitled
    one has none."""
    request = InfillRequest(prefix="set -e\nout=build\n", suffix="\n", context=("# notes.txt\nbuild steps\n",))
    plain, _ = backend._prompt(request)
    named, _ = backend._prompt(replace(request, file_name="deploy.sh"))
    header = smol_tokenizer("# deploy.sh\n", add_special_tokens=False).input_ids
    mark = plain.index(SpecialIds.of(smol_tokenizer).prefix_mark)
    context = smol_tokenizer("# notes.txt\nbuild steps\n", add_special_tokens=False).input_ids
    assert named == plain[: mark + 1 + len(context)] + header + plain[mark + 1 + len(context) :]
    assert backend._prompt(replace(request, file_name="deploy.py"))[0] == plain
    assert backend._prompt(replace(request, file_name="README.md"))[0] == plain  # prose: no header
    assert InfillRequest(file_name="a\nb.sh").file_name == "a b.sh"  # a name is one line


def test_every_draft_is_one_pass_and_the_last_is_final(backend):
    passes, final = run(backend, InfillRequest(prefix="x = ", suffix="\n", max_new_tokens=6, seed=1))
    assert [d.batch_passes for d in passes] == list(range(1, len(passes) + 1))
    assert [d.final for d in passes] == [False] * (len(passes) - 1) + [True]
    assert final.forward_passes == len(passes)
    assert final.generated_tokens <= 7  # the cap, plus the end that closes the canvas
    assert final.text == "".join(t.text for t in final.tokens)
    assert all(t.accepted for t in final.tokens)
    assert "<empty_output>" not in final.text and "<|im_start|>" not in final.text


def test_a_settled_token_stays_settled_across_passes(backend):
    """... but for a loop's repeats, which a later pass cuts (the tiny random model loops here)."""
    passes, _ = run(backend, InfillRequest(prefix="value = ", suffix="", max_new_tokens=8, seed=2))
    for before, after in zip(passes, passes[1:]):
        kept = before.tokens[: len(after.tokens)]
        assert all(now.accepted for then, now in zip(kept, after.tokens) if then.accepted)


def test_one_line_infill_never_writes_a_newline(backend):
    for seed in range(4):
        _, final = run(backend, InfillRequest(prefix="def f(x):\n    ", suffix="\n\nprint(1)\n", max_new_tokens=24,
                                              one_line=True, seed=seed))
        assert "\n" not in final.text


def test_longer_texts_go_on_canvas_after_canvas(backend):
    _, final = run(backend, InfillRequest(prefix="Once upon a time", suffix="", max_new_tokens=40, seed=3))
    assert final.final and final.generated_tokens >= 1
    assert final.generated_tokens <= 41


def test_a_heavy_rewrite_writes_its_least_likely_lines_again_and_keeps_the_rest(backend):
    """At strength 0.5 half the lines are written again, each as a one-line infill; the other
    lines, the line breaks and the indentation come back exactly."""
    lines = ["alpha = compute(1)", "beta = compute(2)", "gamma = compute(3)", "delta = compute(4)"]
    request = InfillRequest(prefix="def f():\n    ", suffix="\n    return alpha\n", max_new_tokens=60,
                            init_text="\n    ".join(lines), strength=0.5, seed=4)
    lead, plan = backend._plan(request)
    chosen = [lines.index(line) for line, _ in plan]
    assert len(chosen) == 2 and lead == "".join(line + "\n    " for line in lines[: chosen[0]])
    _, final = run(backend, request)
    out = final.text.split("\n    ")
    assert final.final and len(out) == len(lines)
    assert all(out[k] == lines[k] for k in range(len(lines)) if k not in chosen)


def test_a_heavy_rewrites_lines_know_where_the_selection_ends(backend, monkeypatch):
    """Each line written again is told how much of its suffix the selection still holds, so that a
    line leaving its block is kept out where it would leave the user's unselected lines unreachable
    (``line_rewrite.fits_its_place``)."""
    seen, row = [], backend._row
    monkeypatch.setattr(backend, "_row", lambda request, k, *line: seen.append((request, line)) or row(request, k, *line))
    after = "\n    low.sort()\n    return low\n"
    request = InfillRequest(prefix="def restock(items):\n    ", suffix=after, max_new_tokens=60,
                            init_text="low = [i for i in items if i.quantity < 5]\n    low.reverse()", strength=1.0, seed=2)
    run(backend, request)
    assert seen and all(len(line) == 3 for _, line in seen)  # (whole lines, the line replaced, the selection's rest)
    assert all(part.suffix[line[2]:] == after for part, line in seen)  # past the selection: the user's lines
    assert {part.suffix[: line[2]] for part, line in seen} == {"\n    low.reverse()", ""}


def test_a_rewrite_at_strength_zero_gives_the_selection_back(backend):
    _, final = run(backend, InfillRequest(prefix="a = 1\n", suffix="\n", max_new_tokens=16, init_text="b = 2",
                                          strength=0.0, seed=5))
    assert final.text == "b = 2"


def test_a_rewrite_of_one_line_writes_one_line(tiny_lm, smol_tokenizer):
    """The slack after a one-line selection is not a place to go on into the next lines (a model
    that writes line breaks everywhere still gives one line back)."""
    backend = newline_biased(tiny_lm, smol_tokenizer)
    request = InfillRequest(prefix="def f():\n    ", suffix="\n    return total\n", max_new_tokens=30,
                            init_text="total = sum(values)", strength=0.8, seed=1, n_alternatives=2)
    assert backend._row(request, 0).no_breaks
    _, final = run(backend, request)
    assert final.candidates and all("\n" not in candidate.text for candidate in final.candidates)
    block = InfillRequest(prefix="", suffix="\n", init_text="a = 1\nb = 2", strength=0.5)
    assert not backend._row(block, 0).no_breaks  # a selection of lines may change its line count


def test_a_rewrite_never_renoises_the_healed_line_break_before_the_selection(tiny_lm, smol_tokenizer):
    """The canvas spells the prefix's last token first; rewritten, the model rewrote the text before
    the selection (a line break came back as a line break and indentation)."""
    backend = newline_biased(tiny_lm, smol_tokenizer)
    request = InfillRequest(prefix="import sys\n", suffix="\nprint(sys.argv)\n", init_text="import poerator", strength=1.0, seed=3)
    _, final = run(backend, request)
    row = backend._row(request, 0)
    assert row.heal == b"\n" and smol_tokenizer.decode(row.canvas[:1]) == "\n"
    assert "\n" not in final.text  # the line break before the selection stays the prompt's


def test_a_long_selection_is_rewritten_part_after_part(backend, monkeypatch):
    """No canvas is longer than the ones the model trained on; the line breaks and indentation
    between the parts come back as they were, and each part's prompt holds the parts before it."""
    from sfumato.model.lm_engine import MAX_CANVAS

    lines = [f"value_{i} = compute(alpha_{i}, beta, gamma)" for i in range(8)]
    selection = "\n    ".join(lines)
    widths, prompts = [], []
    canvas_pass, row = backend._canvas_pass, backend._row
    monkeypatch.setattr(backend, "_canvas_pass", lambda rows, *args, **kw: widths.append(len(rows[0].canvas)) or canvas_pass(rows, *args, **kw))

    def spy(request, k, *line):
        if k == 0:  # a part's first row (a heavy rewrite's line has two, its branches)
            prompts.append(request.prefix)
        return row(request, k, *line)

    monkeypatch.setattr(backend, "_row", spy)
    request = InfillRequest(prefix="def f():\n    ", suffix="\n    return value_7\n", max_new_tokens=200,
                            init_text=selection, strength=0.5, seed=3)
    passes, final = run(backend, request)
    assert max(widths) <= MAX_CANVAS and len(prompts) >= 3
    assert final.text.count("\n    ") >= len(prompts) - 1  # every break between parts kept
    assert all(a.startswith("def f():\n    ") and len(b) > len(a) for a, b in zip(prompts, prompts[1:]))
    assert [d.batch_passes for d in passes] == list(range(1, len(passes) + 1)) and final.final
    assert [d.final for d in passes].count(True) == 1
    _, same = run(backend, InfillRequest(prefix="def f():\n    ", suffix="\n", init_text=selection, strength=0.0))
    assert same.text == selection


def test_no_result_holds_a_broken_character(backend, smol_tokenizer):
    """Characters the tokenizer spells in several byte tokens (CJK, emoji): no fix splits one,
    and no pass writes part of one."""
    selection = 'labels = ["勹", "匕", "🙂"]'
    ids = smol_tokenizer(selection, add_special_tokens=False).input_ids
    assert any(backend.vocabulary.partial[i] for i in ids)  # the premise: some tokens are parts of characters
    for seed, strength in ((0, 0.3), (1, 0.3), (2, 1.0)):
        _, final = run(backend, InfillRequest(prefix="def f():\n    ", suffix="\n", init_text=selection,
                                              strength=strength, seed=seed, n_alternatives=2))
        for candidate in final.candidates:
            assert "\ufffd" not in candidate.text
    _, infill = run(backend, InfillRequest(prefix='emoji = "', suffix='"\n', max_new_tokens=24, seed=1))
    assert "\ufffd" not in infill.text


def newline_biased(tiny_lm, smol_tokenizer, boost=8.0):
    """The engine on a copy of the tiny model that prefers line breaks and the end everywhere."""
    favoured = [i for token, i in smol_tokenizer.get_vocab().items() if token.startswith("Ċ")]
    return biased(tiny_lm, smol_tokenizer, favoured + [SpecialIds.of(smol_tokenizer).end], boost)


def biased(tiny_lm, smol_tokenizer, favoured: list[int], boost: float):
    """The engine on a copy of the tiny model whose logits for ``favoured`` are raised by ``boost``."""
    from sfumato.model.lm_engine import LmDenoiserBackend

    model = copy.deepcopy(tiny_lm)
    model.lm_head.register_forward_hook(lambda module, args, out: out.index_add(
        -1, torch.tensor(favoured), torch.full((*out.shape[:-1], len(favoured)), boost)))
    return LmDenoiserBackend(model, smol_tokenizer, ModelInfo("tiny", "lm-denoiser", "cpu", 0, False))


def test_the_cursor_on_a_blank_line_gets_a_line(tiny_lm, smol_tokenizer):
    """Ctrl+K on an empty line asks for a line, inside a line for text: its first token may not
    end it (it came back empty)."""
    backend = newline_biased(tiny_lm, smol_tokenizer)
    request = InfillRequest(prefix="def mean(values):\n    total = sum(values)\n    ", suffix="\n    return total\n",
                            max_new_tokens=8, one_line=True, seed=0)
    assert backend._row(request, 0).must_write
    _, final = run(backend, request)
    assert final.text.strip()
    assert not final.text.strip().startswith("return")  # the next line's copy is no line of its own
    avoid = backend._row(request, 0).avoid
    assert avoid[smol_tokenizer(" return", add_special_tokens=False).input_ids[0]] and not avoid[smol_tokenizer(" total").input_ids[0]]
    mid_line = InfillRequest(prefix='def clamp(value, low, high):\n    """', suffix='"""\n    return value\n',
                             max_new_tokens=8, one_line=True, seed=0)
    assert backend._row(mid_line, 0).must_write  # a gap inside a line gets text too (a docstring came back empty)
    assert run(backend, mid_line)[1].text.strip()
    end_of_line = InfillRequest(prefix="x = compute(a)", suffix="\n", one_line=True)
    assert not backend._row(end_of_line, 0).must_write  # after a whole line, nothing may be the answer


def test_a_line_at_the_end_of_the_file_is_written(tiny_lm, smol_tokenizer):
    """Ctrl+K on the empty last line of a file (nothing after the cursor) writes a line, its branches
    unscored, the second first word on Try Again: the stream failed with an IndexError after its
    last pass (a branch for every row, an alternative kept for one)."""
    backend = newline_biased(tiny_lm, smol_tokenizer)
    request = InfillRequest(prefix="import os\n\nprint(os.getcwd())\n", suffix="", max_new_tokens=8, one_line=True, seed=0)
    first, again = (run(backend, replace(request, first_alternative=k))[1] for k in (0, 1))
    assert len(first.candidates) == len(again.candidates) == 1
    assert first.text.strip() and again.text.strip() and first.text != again.text


def test_a_templates_gap_is_never_filled_empty(tiny_lm, smol_tokenizer):
    """A gap the user marked asks for text, after a line's text as well (``debug: [MASK]`` came back
    empty): a model that would end every text at once still writes each gap."""
    backend = newline_biased(tiny_lm, smol_tokenizer)
    template = TemplateRequest(segments=("server:\n  debug: ", "\n", "\n  port: 8080\n"), max_new_tokens=(4, 4), seed=0)
    *_, final = backend.stream_template(template)
    assert all(draft.text.strip() for draft in final)


def test_a_number_after_a_space_is_written_as_the_base_spells_it(tiny_lm, smol_tokenizer):
    """``port = `` + Ctrl+K: SmolLM2 joins no space to a digit, so a number there is a space alone
    and then its digits. The healed space may be that lone token (not two spaces), and the token
    after it may not bring a space of its own (TOML and YAML values came back quoted, ``port =
    "80"``, and a held-out ``0,`` came back ``-1,``: `` -`` was the only way to begin a number)."""
    vocab = smol_tokenizer.get_vocab()
    backend = biased(tiny_lm, smol_tokenizer, [vocab["Ġ"], vocab["ĠĠ"]], 12.0)
    backend = biased(backend.model, smol_tokenizer, [vocab["8"]], 6.0)
    for prefix in ('[server]\nhost = "127.0.0.1"\nport = ', "PORTS = [\n    80,\n    "):
        request = InfillRequest(prefix=prefix, suffix="\n", max_new_tokens=4, one_line=True, seed=0)
        assert backend._row(request, 0).lone_space
        assert run(backend, request)[1].text.startswith("8"), prefix  # after text, and a line's indentation
    # after a sentence's end a space alone is the first of two (``certificate.  By``): not a number's
    sentence = InfillRequest(prefix="Trust the proxy's certificate. ", suffix="\n", max_new_tokens=4, one_line=True, seed=0)
    assert not backend._row(sentence, 0).lone_space
    assert not run(backend, sentence)[1].text[:1].isspace()
    assert backend.vocabulary.heal_spaces(b" ")[vocab["Ġ"]] and not backend.vocabulary.heal_spaces(b" ", lone_space=True)[vocab["Ġ"]]


def test_a_gap_inside_a_line_does_not_begin_as_the_text_after_it(tiny_lm, smol_tokenizer):
    """``listens on [gap] port 8080``: the gap's first token spells the healed space, and `` port``
    (a model's likeliest) would have begun it as the suffix does: ``listens on port port 8080``."""
    port, the = (smol_tokenizer(word, add_special_tokens=False).input_ids[0] for word in (" port", " the"))
    backend = biased(tiny_lm, smol_tokenizer, [port], 12.0)
    request = InfillRequest(prefix="The server listens on ", suffix=" port 8080 by default.\n", max_new_tokens=6, one_line=True, seed=0)
    row = backend._row(request, 0)
    assert row.heal == b" " and row.avoid_healed[port] and not row.avoid_healed[the]
    assert not backend.vocabulary.repeating("portable", b" ")[port]  # a word repeated, not a word's start
    text = run(backend, request)[1].text.strip()
    assert text and not text.startswith("port")
    docstring = backend._row(InfillRequest(prefix='def f():\n    """', suffix='"""\n', one_line=True), 0)
    assert not docstring.avoid_healed[smol_tokenizer('"""', add_special_tokens=False).input_ids[0]]  # the heal itself may be


def test_the_vocabularys_word_index_finds_what_reading_every_token_finds(backend):
    vocabulary = backend.vocabulary

    def read_all(data: bytes, healed: bytes | None) -> list[int]:
        found = []
        for i, piece in enumerate(vocabulary.table):
            rest = piece.strip() if healed is None else piece[len(healed) :].strip()
            whole = healed is None or not (rest[-1:].isalnum() and data[len(rest) : len(rest) + 1].isalnum())
            found += [i] * (piece.startswith(healed or b"") and bool(rest) and data.startswith(rest) and whole)
        return found

    for text in ["port 8080 by default.", "any vulnerability", "(x) + 1", "return total", "é, then more"]:
        assert vocabulary.starting(text).nonzero()[:, 0].tolist() == read_all(text.encode(), None)
        for healed in (b" ", b"", b"\n    ", b'"""', b"."):
            assert vocabulary.repeating(text, healed).nonzero()[:, 0].tolist() == read_all(text.encode(), healed), (text, healed)


def test_a_blank_indented_line_is_healed_on_the_tokenizer_grid(tiny_lm, smol_tokenizer):
    """The cursor after a line break and 8 spaces: the prompt leaves out that one token and the
    canvas spells it again. Spelt as a line break and then spaces one at a time (a model fond of
    them), the spaces looped until the line was cut to nothing (8 of 100 held-out lines came back
    empty); spelt whole, the next token brought a space of its own (a line one space too deep)."""
    vocab = smol_tokenizer.get_vocab()
    favoured = [vocab["Ċ"], vocab["Ġ"], vocab["ĠĠ"], vocab["ĠĠĠĠ"], vocab["ĊĠĠĠĠĠĠĠĠ"]]
    backend = biased(tiny_lm, smol_tokenizer, favoured, 12.0)
    request = InfillRequest(prefix="class A:\n    def f(self, x):\n        y = x + 1\n        ", suffix="\n        return y\n",
                            max_new_tokens=12, one_line=True, seed=2)
    row = backend._row(request, 0)
    assert row.heal == b"\n        "
    _, final = run(backend, request)
    assert final.text.strip() and not final.text[:1].isspace()
    allowed = backend.vocabulary.heal_allowed(row.heal)
    assert allowed[vocab["ĊĠĠĠĠĠĠĠ"]] and not allowed[vocab["Ċ"]]  # a start of it only when one space is left
    assert backend.vocabulary.heal_allowed(b"\n\n")[vocab["Ċ"]]  # whole lines may come one at a time
    assert backend.vocabulary.heal_spaces(row.heal)[vocab["ĊĠĠĠĠĠĠĠĠ"]]
    assert not backend.vocabulary.heal_spaces(b"\n").any()  # after a line break alone indentation may begin


def test_the_heal_masks_are_their_definitions_over_the_whole_vocabulary(backend):
    """Built from the tokens sorted by text and the starts of the healed text, not a pass over
    every token: the same masks, token by token, as each rule read over the whole vocabulary."""
    vocabulary, table = backend.vocabulary, backend.table

    def whole(piece):
        return piece.decode("utf-8", "ignore").encode() == piece

    def allowed(piece, left):
        rest = left[len(piece):]
        return bool(piece) and (piece.startswith(left) or left.startswith(piece) and (
            rest == b" " and vocabulary.space_joins_word or rest.startswith(b"\n") or not whole(piece)))

    for left in (b"\n        ", b"\n       ", b"\n", b"\n\n", b" ", b"    ", b"e", b" re", b"\xc3", b"):\n    "):
        spaces = [vocabulary.space_joins_word and left.endswith(b" ") and p.startswith(left) and not p.strip()
                  and p.endswith(b" ") for p in table]
        breaks = [p.startswith(left) and b"\n" in p[len(left):] for p in table]
        assert vocabulary.heal_allowed(left).tolist() == [allowed(p, left) for p in table], left
        assert vocabulary.heal_spaces(left).tolist() == spaces, left
        assert vocabulary.heal_breaks(left).tolist() == breaks, left


def test_a_gap_inside_a_line_or_ending_one_is_filled_within_it(backend, monkeypatch):
    """A gap with text before or after it on its line fills the line (``runs-on: ubuntu-[MASK]``
    went on with lines of its own below it); a gap with its line to itself may write several."""
    seen = []
    stream = backend.stream
    monkeypatch.setattr(backend, "stream", lambda requests, cancel=None: seen.extend(requests) or stream(requests, cancel))
    template = TemplateRequest(segments=("root = math.", "(16)  # the root\ndef f():\n    ", "\n    runs-on: ubuntu-",
                                         "\n    steps:\n"), max_new_tokens=(4, 4, 4))
    list(backend.stream_template(template))
    assert [r.one_line for r in seen] == [True, False, True]


def test_a_line_that_loops_ends_after_the_first_copy():
    from sfumato.model.lm_row import loop_cut

    ids = [10, 11, 12, 13, 12, 13, 12, 13, 12, 13]  # return width * height * height * height * height
    assert loop_cut(ids) == 4
    assert loop_cut([10, 11, 12, 13, 12, 13, 12]) is None  # not yet four copies
    assert loop_cut([7, 7, 7, 7, 7]) is None and loop_cut([7] * 6) == 1
    sentence = list(range(20, 31))  # "It is a text based language for writing and editing."
    assert loop_cut([5, 6] + sentence * 3) == 2 + len(sentence) and loop_cut([5, 6] + sentence * 2) is None


def test_the_engine_stops_a_loop(backend, smol_tokenizer):
    row = backend._row(InfillRequest(prefix="def area(w, h):\n    ", suffix="\n", one_line=True), 0)
    ids = smol_tokenizer(row.heal.decode() + "return w * h * h * h * h * h", add_special_tokens=False).input_ids
    row.canvas, row.masked, row.confidence = ids + [0] * 2, [False] * len(ids) + [True] * 2, [0.9] * len(ids) + [0.0] * 2
    stop_loop(row)
    assert row.done and "".join(s.text for s in backend._states(row)) == "return w * h"


def test_the_healed_token_is_spelt_once(backend, smol_tokenizer):
    """A cursor after indentation: the prompt ends a token early and the result does not repeat it."""
    _, final = run(backend, InfillRequest(prefix="def f(x):\n    ", suffix="\n", max_new_tokens=6, one_line=True, seed=6))
    row = backend._row(InfillRequest(prefix="def f(x):\n    ", suffix="\n"), 0)
    assert row.heal.endswith(b" ") and smol_tokenizer.decode(row.prompt[-1:]) == "):"
    allowed = backend.vocabulary.heal_allowed(row.heal).nonzero()[:, 0].tolist()
    assert allowed and all(backend.table[i].startswith(row.heal) or row.heal.startswith(backend.table[i]) for i in allowed)
    assert not final.text.startswith("\n")


def test_the_same_request_twice_reuses_the_prompt_cache(backend):
    request = InfillRequest(prefix="import os\n" * 20, suffix="\n", max_new_tokens=5, seed=7)
    _, first = run(backend, request)
    calls = []
    hook = backend.model.register_forward_pre_hook(lambda module, args, kwargs: calls.append(kwargs["input_ids"].shape),
                                                   with_kwargs=True)
    try:
        _, second = run(backend, request)
    finally:
        hook.remove()
    assert second.text == first.text
    assert all(shape[1] <= 6 for shape in calls)  # only canvases: the prompt was not read again


def test_alternatives_come_from_one_batch_and_differ(backend):
    _, final = run(backend, InfillRequest(prefix="name = ", suffix="\n", max_new_tokens=6, n_alternatives=3, seed=8))
    texts = [c.text for c in final.candidates]
    assert len(texts) == len(set(texts)) >= 1


def test_try_again_shows_the_alternative_after_those_shown_not_the_same_text(backend):
    """The first candidate is greedy, so the same request again would write the same text:
    Try Again's request starts at the next alternative, the one a batch of two would show second."""
    request = InfillRequest(prefix="name = ", suffix="\n", max_new_tokens=6, seed=8, one_line=True)
    first = run(backend, request)[1].text
    assert run(backend, request)[1].text == first
    batch = [c.text for c in run(backend, replace(request, n_alternatives=2))[1].candidates]
    again = run(backend, replace(request, first_alternative=1))[1].text
    assert again == batch[1] != first
    template = TemplateRequest(segments=("name = ", "\n"), max_new_tokens=(6,), seed=8)
    assert [d.text for d in list(backend.stream_template(replace(template, first_alternative=1)))[-1]] == [again]


def test_template_gaps_are_rows_of_one_batch(backend):
    template = TemplateRequest(segments=("def ", "(x):\n    return ", "\n"), max_new_tokens=(4, 6), seed=0)
    steps = list(backend.stream_template(template))
    assert all(len(drafts) == 2 for drafts in steps)
    assert all(d.final for d in steps[-1])


def test_cancel_stops_between_passes(backend):
    cancel = CancelFlag()
    stream = backend.stream([InfillRequest(prefix="x", suffix="", max_new_tokens=30, seed=9)], cancel)
    next(stream)
    cancel.set()
    with pytest.raises(Cancelled):
        next(stream)


def count_prompt_reads(backend, action, model=None) -> list[int]:
    """The lengths of the token runs ``action`` feeds the model (or ``model``, a part of it)."""
    calls = []
    hook = (model or backend.model).register_forward_pre_hook(lambda m, args, kwargs: calls.append(kwargs["input_ids"].shape[1]),
                                                   with_kwargs=True)
    try:
        action()
    finally:
        hook.remove()
    return calls


def test_a_warmed_prompt_is_not_read_again(backend):
    request = InfillRequest(prefix="def area(r):\n    return 3.14 * r * r\n" * 8, suffix="\n", max_new_tokens=4, seed=10)
    backend.prompt_cache.clear()
    _, cold = run(backend, request)
    backend.prompt_cache.clear()
    assert count_prompt_reads(backend, lambda: backend.warm(request))  # the prompt was read
    reads = count_prompt_reads(backend, lambda: run(backend, request))
    assert reads and max(reads) <= 5  # canvases only
    _, warm = run(backend, request)
    assert warm.text == cold.text


@pytest.mark.parametrize("strength", [1.0, 0.5, 0.3])
def test_a_warmed_selection_is_rewritten_from_its_first_pass(backend, strength):
    """At rest on a selection a rewrite is made ready: a heavy one's lines are chosen (read at 0.5,
    every one at 1) and the first one's prompt read, a light one's first part's prompt read."""
    prefix = "def area(r):\n    return 3.14 * r * r\n" * 8
    request = InfillRequest(prefix=prefix, suffix="\nprint(area(2))\n", init_text="x = area(1)\ny = area(3)\nz = x + y",
                            strength=strength, max_new_tokens=8, seed=3)
    backend.prompt_cache.clear()
    _, cold = run(backend, request)
    backend.prompt_cache.clear()
    warmed = count_prompt_reads(backend, lambda: backend.warm(request))
    assert sum(warmed) > 80  # the prompt, read ahead
    stream = backend.stream([request])
    first = count_prompt_reads(backend, lambda: next(stream), backend.model.model)  # up to the first pass drawn
    for _ in stream:
        pass
    if strength >= 0.5:  # its lines chosen by the warm (read at 0.5), the first one's prompt read
        assert sum(first) <= 16  # the first line's canvas only: the first pass comes at once
    else:  # the selection is read first (the fixes proposed), after the warmed prompt
        assert first[0] <= len(backend._encode(request.init_text)) + 1
    backend.prompt_cache.clear()
    _, again = run(backend, request)
    assert again.text == cold.text


def test_a_prompt_read_computes_the_vocabulary_only_after_its_last_token(backend):
    """Only the last prompt position's logits are used (the output layer is a fifth of a prefill):
    a warm, and a batch of two prompts read together, keep no other position's."""
    calls = []
    hook = backend.model.register_forward_hook(
        lambda m, args, kwargs, out: calls.append((kwargs["input_ids"].shape[1], out.logits.shape[1])), with_kwargs=True)
    body = "def area(r):\n    return 3.14 * r * r\n" * 12
    try:
        backend.prompt_cache.clear()
        backend.warm(InfillRequest(prefix=body, suffix="\n"))
        list(backend.stream([InfillRequest(prefix=body + "x = ", suffix="\n", max_new_tokens=4),
                             InfillRequest(prefix="y = ", suffix="\n" + body, max_new_tokens=4)]))
    finally:
        hook.remove()
    prompt_reads = [kept for read, kept in calls if read > 32]  # a canvas is at most 32 tokens
    assert len(prompt_reads) >= 3 and set(prompt_reads) == {1}


def test_a_cancelled_warm_keeps_what_it_read(backend):
    from sfumato.model.lm_engine import PREFILL_CHUNK

    request = InfillRequest(prefix="x = 1\n" * 200, suffix="", max_new_tokens=3, seed=11)
    backend.prompt_cache.clear()
    cancel = CancelFlag()
    hook = backend.model.register_forward_hook(lambda *_: cancel.set())  # cancel after the first chunk
    try:
        with pytest.raises(Cancelled):
            backend.warm(request, cancel)
    finally:
        hook.remove()
    prompt = backend._row(request, 0).prompt
    assert len(prompt) > PREFILL_CHUNK
    reads = count_prompt_reads(backend, lambda: run(backend, request))
    assert reads[0] == len(prompt) - PREFILL_CHUNK  # only what the warm had not read


def test_a_text_that_runs_into_the_suffix_ends_before_it(backend):
    from sfumato.model.api import TokenState
    from sfumato.model.suffix_overlap import cut_at_stop

    row = backend._row(InfillRequest(prefix="jumps over the ", suffix=" dog. It sleeps.\n"), 0)
    assert row.stop == "dog. It sleeps.\n"[:16] and row.stop_space
    states = [TokenState("lazy", 0.9, True), TokenState(" dog", 0.8, True), TokenState(". It sleeps", 0.7, True)]
    cut = cut_at_stop(states, "dog. It", row.stop_space)
    assert "".join(s.text for s in cut) == "lazy"
    assert backend._row(InfillRequest(prefix="f(", suffix=")\n"), 0).stop == ""  # too short to tell


def test_a_row_whose_settled_text_runs_into_the_suffix_ends(backend, smol_tokenizer):
    """A full canvas whose text has run into the suffix does not go on to the next one: the
    rest would be cut from the result."""
    def settle(request, text):
        row = backend._row(request, 0)
        ids = smol_tokenizer(row.heal.decode() + text * 20, add_special_tokens=False).input_ids[: len(row.canvas)]
        row.canvas, row.masked = ids, [False] * len(ids)
        backend.settler.close_at_end(row)
        return row

    row = settle(InfillRequest(prefix="jumps over the ", suffix=" dog. It sleeps.\n", max_new_tokens=128), "lazy dog. It sleeps.\n")
    assert row.done and "".join(state.text for state in backend._states(row)) == "lazy"
    quoted = settle(InfillRequest(prefix="for f in *; do\n    ", suffix="\ndone\n", max_new_tokens=128, one_line=True),
                    'echo "done" ')
    assert not quoted.done  # `done` inside the line's own quotes is not the next line


def test_a_line_longer_than_its_canvas_keeps_its_healed_start_out(backend, smol_tokenizer):
    """The healed newline + indentation sits in the first canvas; once that canvas is committed
    and the line goes on in the next one, the heal is still the prompt's, not the line's end."""
    row = backend._row(InfillRequest(prefix="def f(x):\n    ", suffix="\n", one_line=True), 0)
    ids = smol_tokenizer(row.heal.decode() + "value = compute(alpha, beta, gamma, delta, epsilon, zeta, eta)",
                         add_special_tokens=False).input_ids
    cut = len(ids) // 2
    row.written, row.written_confidence = ids[:cut], [0.9] * cut
    row.canvas, row.masked, row.confidence = ids[cut:], [False] * (len(ids) - cut), [0.9] * (len(ids) - cut)
    text = "".join(state.text for state in backend._states(row))
    assert text == "value = compute(alpha, beta, gamma, delta, epsilon, zeta, eta)"
    assert backend.settler._end_index(row) == len(row.canvas) - 1
    assert heal_position(row, backend.table) == (None, b"")


def test_a_line_that_runs_into_the_suffix_ends_before_it(backend):
    """A one-line text never holds the suffix's newline, so the stop is the suffix's first line only."""
    row = backend._row(InfillRequest(prefix="root = math.", suffix="(16))  # 4.0\nprint(root)\n", one_line=True), 0)
    assert row.stop == "(16))  # 4.0"


def test_a_pass_reads_only_what_decides_and_changes_no_draft(backend, monkeypatch):
    """A pass reads only the canvas after the text that earlier passes read right (its keys and
    values stay in the cache), and only up to the guesses' end (masked positions after them
    decide nothing): every draft as when each pass reads the whole canvas, over fewer positions.
    Alternatives of different lengths share the batch; a long infill goes canvas after canvas."""
    from sfumato.model import lm_engine

    requests = [InfillRequest(prefix="def f(x):\n    ", suffix="\n", one_line=True, max_new_tokens=12, seed=0),
                InfillRequest(prefix="value = ", suffix="\nprint(value)\n", max_new_tokens=40, seed=1, n_alternatives=3),
                InfillRequest(prefix="items = [", suffix="]\n", max_new_tokens=70, seed=2)]
    canvas_pass = backend._canvas_pass
    widths: list[int] = []

    def counted(rows, *args, **kwargs):
        logits, read = canvas_pass(rows, *args, **kwargs)
        widths.append(read[0].shape[1])
        return logits, read

    def drafts():
        widths.clear()
        seen = [[(d.text, tuple(c.text for c in d.candidates)) for d in ds] for r in requests for ds in backend.stream([r])]
        return seen, sum(widths)

    monkeypatch.setattr(backend, "_canvas_pass", counted)
    cached, cached_width = drafts()
    monkeypatch.setattr(backend, "_keep_settled", lambda rows, read, cache, logits: (read[0].shape[1] and cache.crop(-read[0].shape[1])) or logits)
    whole, whole_width = drafts()
    assert cached == whole
    assert cached_width < whole_width
    monkeypatch.undo()
    monkeypatch.setattr(backend, "_canvas_pass", counted)
    monkeypatch.setattr(lm_engine, "read_end", lambda row, both_ways=False: len(row.canvas))
    every_position, every_width = drafts()  # masked positions after the guesses read too
    assert every_position == cached
    assert cached_width < every_width


def test_a_gap_of_several_lines_ends_where_its_text_leaves_the_gaps_block(backend, smol_tokenizer):
    """``    return [MASK:12]`` at a file's end: the model writes the expression and goes on to the
    next function at the margin; the text ends with the expression and the row stops there."""
    request = InfillRequest(prefix="def is_palindrome(text):\n    return ", suffix="\n", max_new_tokens=128)
    row = backend._row(request, 0)
    assert row.scope == 4 and backend._row(replace(request, one_line=True), 0).scope == 0
    ids = smol_tokenizer(row.heal.decode() + "text == text[::-1]\n\n\ndef main():\n    pass\n" * 4,
                         add_special_tokens=False).input_ids[: len(row.canvas)]
    row.canvas, row.masked = ids, [False] * len(ids)
    backend.settler.close_at_end(row)
    assert row.done and "".join(state.text for state in backend._states(row)) == "text == text[::-1]"


def test_a_template_with_more_gaps_than_a_batch_fills_each_in_groups(backend, monkeypatch):
    from sfumato.model import gap_fill

    monkeypatch.setattr(gap_fill, "REQUESTS_AT_ONCE", 2)
    template = TemplateRequest(segments=("a = ", "\nb = ", "\nc = ", "\n"), max_new_tokens=(4, 4, 4), seed=0)
    steps = list(backend.stream_template(template))
    assert all(len(drafts) == 3 for drafts in steps) and all(d.final for d in steps[-1])
    monkeypatch.setattr(gap_fill, "REQUESTS_AT_ONCE", 8)
    assert [d.text for d in steps[-1]] == [d.text for d in list(backend.stream_template(template))[-1]]  # one batch: the same texts


def test_a_heavy_rewrite_reads_a_long_selection_a_window_at_a_time(backend, monkeypatch):
    """The line choice reads ``READ_TOKENS`` of the selection at once (100 KB read whole took 18 GB)."""
    from sfumato.model import lm_engine, rewrite_parts

    reads = []
    read = lm_engine.read_log_probs
    monkeypatch.setattr(lm_engine, "read_log_probs", lambda model, logits, cache, held, ids: reads.append(len(ids)) or read(model, logits, cache, held, ids))
    monkeypatch.setattr(rewrite_parts, "READ_TOKENS", 14)
    lines = ["alpha = compute(1)", "beta = compute(2)", "gamma = compute(3)", "delta = compute(4)"]
    request = InfillRequest(prefix="def f():\n    ", suffix="\n    return alpha\n", max_new_tokens=60,
                            init_text="\n    ".join(lines), strength=0.5, seed=4)
    _, plan = backend._plan(request)
    assert len(reads) >= 2 and max(reads) <= 14 + 2  # (the healed token before each window)
    assert len(plan) == 2
    _, final = run(backend, request)
    out = final.text.split("\n    ")
    assert len(out) == len(lines) and sum(a == b for a, b in zip(out, lines)) >= 2


@pytest.mark.parametrize("strength", [0.3, 0.6])
def test_a_rewrite_refuses_a_line_longer_than_it_reads_with_a_message(backend, monkeypatch, strength):
    from sfumato.model import rewrite_parts

    monkeypatch.setattr(rewrite_parts, "READ_TOKENS", 8)
    request = InfillRequest(prefix="x = 1\n", suffix="\n", init_text="short = 1\nvalues = [" + ", ".join(map(str, range(30))) + "]",
                            strength=strength, seed=1)
    with pytest.raises(EngineError, match=r"a selected line has \d+ tokens; a rewrite takes lines of at most 8"):
        run(backend, request)
