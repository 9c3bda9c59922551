"""A gap inside a line ends at the cut the model finds the rest of the line likeliest after."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

torch = pytest.importorskip("torch")

from sfumato.model.api import InfillRequest, ModelInfo, TokenState  # noqa: E402
from sfumato.model.gap_cut import (  # noqa: E402
    WORD_BONUS, Cut, CutQueries, cut_candidates, gap_queries, inner_cuts, own_end, rank_branches, text_pieces, word_count,
)
from sfumato.model.lm_drafts import row_states  # noqa: E402
from sfumato.model.lm_row import Row  # noqa: E402


def test_cuts_fall_at_word_starts_and_at_the_end():
    pieces = [b" machine", b",", b" and", b" keep", b"ing", b" it"]
    assert cut_candidates(pieces) == [1, 2, 3, 5, 6]  # never between " keep" and "ing"
    assert cut_candidates(pieces, first=2) == [2, 3, 5, 6]


def test_cuts_inside_a_token_fall_before_its_punctuation():
    pieces = [b" Clamp", b" a", b" value", b'."""', b"\n"]
    assert inner_cuts(pieces) == [(3, 1), (3, 2), (3, 3)]  # after the full stop, or after one or two quotes
    assert inner_cuts([b'",', b" x.\xe2\x80\x9d"]) == [(0, 1)]  # what goes is ASCII (here not: a curly quote)
    assert inner_cuts([b'",', b" x"], first=2) == []


def test_a_line_the_model_ends_as_the_suffix_does_is_cut_there():
    assert own_end([b" Clamp", b" a", b" value", b'."""'], b'"""') == (4, 3)  # the quotes go, the full stop stays
    assert own_end([b"Hello", b'")'], b'")  # greet') is None  # the suffix's line goes on: not its end
    assert own_end([b"x", b")"], b")") == (1, 0)
    ran_on = [b"Jupiter", b".", b" It", b" is", b" big", b"."]  # "[MASK]." filled with sentences after it
    assert own_end(ran_on, b".") == (1, 0) and own_end(ran_on[:2], b".") == (1, 0)
    assert own_end([b")"], b")") is None  # nothing would be left
    assert own_end([b"name", b")"], b" and then.") is None


def test_a_gap_before_a_full_stop_is_not_cut_past_its_own_first_sentence():
    """``[MASK].`` filled with sentences its token budget cut (so no line end to find): no cut keeps
    the text's first sentence end and what ran on after it; a suffix that goes on leaves every cut."""
    table = [b"Jupiter", b".", b" It", b" is", b" big", b" and"]
    row = Row([], b"", 0, True, 0.0, torch.Generator(), written=[0, 1, 2, 3, 4], ran_out=True, gap_suffix=[1])
    cuts = gap_queries(row, table, lambda text: [1], ()).cuts
    assert {cut.tokens for cut in cuts} == {1}  # "Jupiter", then the suffix's "."
    row.gap_suffix = [5]  # " and ...": the sentence goes on
    assert max(cut.tokens for cut in gap_queries(row, table, lambda text: [5], ()).cuts) == 5


def reference_score(model, prompt, text, suffix, k) -> float:
    """log p(text[:k] + suffix | prompt), read plainly left to right."""
    ids = torch.tensor([prompt + text[:k] + suffix])
    log_probs = model(input_ids=ids).logits[0].log_softmax(-1)
    targets = ids[0, len(prompt):]
    return float(log_probs[len(prompt) - 1 : -1].gather(1, targets[:, None]).sum())


def test_the_tree_of_queries_scores_each_cut_as_a_plain_reading_would(tiny_lm, read_queries):
    prompt, text, suffix = [5, 17, 99, 240, 7], [301, 12, 977, 45, 630, 88], [410, 29, 3001]
    inner = [2, 3001]  # a cut inside token 4 (630): the kept part of it and the suffix, encoded again
    cuts = [Cut(k, suffix) for k in [1, 3, 4, 6]] + [Cut(4, [902, *inner], 1)]
    q = CutQueries.build(text, cuts)
    p, logits = len(prompt), read_queries(prompt, q)
    with torch.no_grad():
        scores = [reference_score(tiny_lm, prompt, text[: cut.tokens] + cut.continuation, [], cut.tokens + len(cut.continuation))
                  for cut in cuts]
    assert q.scores(logits[p - 1], logits[p:], lambda read: read) == pytest.approx(scores, abs=1e-4)
    best = max(range(len(cuts)), key=scores.__getitem__)
    assert q.best(logits[p - 1], logits[p:], lambda read: read) == (cuts[best], pytest.approx(scores[best] + WORD_BONUS * cuts[best].words))


def test_each_word_a_cut_keeps_adds_the_bonus_to_its_likelihood(monkeypatch):
    """Two cuts 1.5 nats apart: the shorter wins on likelihood alone, the one two words longer with
    a bonus of 1 nat a word."""
    import sfumato.model.gap_cut as gap_cut

    cuts = [Cut(1, [7], words=1), Cut(3, [7], words=3)]
    queries = CutQueries.build([4, 5, 6], cuts)
    monkeypatch.setattr(CutQueries, "scores", lambda self, *read: [-2.0, -3.5])
    monkeypatch.setattr(gap_cut, "WORD_BONUS", 0.0)
    assert queries.best(None, None, None) == (cuts[0], -2.0)
    monkeypatch.setattr(gap_cut, "WORD_BONUS", 1.0)
    assert queries.best(None, None, None) == (cuts[1], -0.5)


def test_a_gap_inside_a_line_is_cut_at_a_word_start_of_what_the_model_wrote(tiny_lm, smol_tokenizer, monkeypatch):
    from sfumato.model.lm_engine import LmDenoiserBackend

    backend = LmDenoiserBackend(tiny_lm, smol_tokenizer, ModelInfo("tiny", "lm-denoiser", "cpu", 0, False))
    request = InfillRequest(prefix="Keep a copy of your files on another ", suffix=" and check it now and then.\n",
                            max_new_tokens=16, one_line=True, seed=2)
    assert backend._row(request, 0).gap_suffix
    assert not backend._row(InfillRequest(prefix="x = ", suffix="\ny = 2\n", one_line=True), 0).gap_suffix
    assert backend._row(replace(request, one_line=False), 0).gap_suffix  # an infill of lines at the gap, too
    cut = [d[0] for d in backend.stream([request])][-1].text
    monkeypatch.setattr(backend, "_cut_gaps", lambda rows, last_logits, cache: None)
    whole = [d[0] for d in backend.stream([request])][-1].text
    assert cut and whole.startswith(cut)
    assert len(cut) == len(whole) or not whole[len(cut)].isalnum()


def test_over_several_canvases_the_cut_is_the_one_a_plain_reading_prefers(tiny_lm, smol_tokenizer, monkeypatch):
    """Canvases already committed to the cache are read again with the text: the cut chosen is the
    argmax of log p(text[:k] + suffix start) read plainly after the prompt, plus the bonus for each word kept."""
    import sfumato.model.lm_engine as engine
    import sfumato.model.lm_settle as settle
    from sfumato.model.gap_cut import cut_candidates

    from sfumato.model.lm_layout import SpecialIds

    monkeypatch.setattr(engine, "LINE_CANVAS", 4)
    monkeypatch.setattr(engine, "MAX_CANVAS", 4)
    monkeypatch.setattr(settle, "stop_loop", lambda row: None)  # the random model repeats a word
    model = copy.deepcopy(tiny_lm)  # one that never ends a line: the text runs over several canvases
    enders = [i for token, i in smol_tokenizer.get_vocab().items() if "Ċ" in token] + [SpecialIds.of(smol_tokenizer).end]
    model.lm_head.register_forward_hook(lambda module, args, out: out.index_add(
        -1, torch.tensor(enders), torch.full((*out.shape[:-1], len(enders)), -30.0)))
    backend = engine.LmDenoiserBackend(model, smol_tokenizer, ModelInfo("tiny", "lm-denoiser", "cpu", 0, False))
    seen = []
    cut_gaps = engine.LmDenoiserBackend._cut_gaps

    def spy(self, rows, prompt_logits, cache):
        seen.append((list(rows[0].prompt), *text_pieces(rows[0], self.table, (self.special.end, self.special.mask)), list(rows[0].gap_suffix)))
        cut_gaps(self, rows, prompt_logits, cache)
        seen.append(rows[0].cut)

    monkeypatch.setattr(engine.LmDenoiserBackend, "_cut_gaps", spy)
    request = InfillRequest(prefix="Keep a copy of your files on another ", suffix=" and check it now and then.\n",
                            max_new_tokens=14, one_line=True, seed=2)
    for _ in backend.stream([request]):
        pass
    (prompt, ids, pieces, suffix), chosen = seen
    assert len(ids) > 4  # the text spans more than one canvas
    candidates = cut_candidates(pieces, 2 if not pieces[0] else 1)
    assert not inner_cuts(pieces, 2 if not pieces[0] else 1)  # words only: every cut is at a token's start
    with torch.no_grad():
        scores = {k: reference_score(model, prompt, ids, suffix, k) + WORD_BONUS * word_count(pieces[:k])
                  for k in candidates}
    assert chosen == max(scores, key=scores.get)



def test_a_gaps_branches_are_ranked_by_score_and_as_many_kept_as_alternatives_were_asked_for():
    rows = [Row([], b"", 4, True, 0.0, torch.Generator(), score=score, gap_suffix=[7], branch=True) for score in (-5.0, -2.0, float("inf"), -9.0)]
    gap = InfillRequest(prefix="listens on ", suffix=" port 8080\n", one_line=True, n_alternatives=2)
    group = list(rows)
    rank_branches(group, gap, lambda row: "")
    assert group == [rows[2], rows[1]]  # a text that closes the line as the suffix does first, then the likeliest
    group = list(rows)
    rank_branches(group, replace(gap, n_alternatives=1, first_alternative=1), lambda row: "")
    assert group == [rows[1]]  # Try Again: the next best
    unscored = [replace(row, gap_suffix=[], score=None) for row in rows]
    group = list(unscored)
    rank_branches(group, replace(gap, suffix=""), lambda row: "")
    assert group == unscored[:2]  # the end of the file (no suffix to score): the first words' order
    alternatives = [replace(row, branch=False) for row in unscored]
    group = list(alternatives)
    rank_branches(group, InfillRequest(prefix="x = ", suffix="\n", n_alternatives=4), lambda row: "")
    assert group == alternatives  # not branches: the alternatives as they were


def test_a_heavy_rewrites_line_keeps_its_structure_before_its_score():
    """Of a rewritten line's branches, one that would leave the next lines no code (a block opened
    above a line as deep, a lone docstring quote) ranks after one that fits, whatever their scores;
    where none fits, the line stays as it was."""
    request = InfillRequest(prefix="def f(items):\n    ", suffix="\n    return total\n", one_line=True)
    texts = {-1.0: "if not items:", -4.0: "total = sum(items)", -2.0: '"""'}
    rows = [Row([], b"", 4, True, 0.0, torch.Generator(), score=score, gap_suffix=[7], branch=True, whole_line=True,
                replaces="total = 0") for score in texts]
    group = list(rows)
    rank_branches(group, request, lambda row: texts[row.score])
    assert [row.score for row in group] == [-4.0] and not group[0].keeps_line
    texts[-4.0] = "for item in items:"
    group = list(rows)
    rank_branches(group, request, lambda row: texts[row.score])
    assert [row.score for row in group] == [-1.0] and group[0].keeps_line  # none fits: the likeliest keeps the line
    assert row_states(group[0], [], 0) == (TokenState("total = 0", 1.0, True),)


def test_a_branch_that_reads_the_name_its_statement_assigns_ranks_after_one_that_does_not():
    """``const doubled = numbers.map(doubled)`` computes nothing: that branch goes after the other,
    whatever their scores; where both do, the likelier is first."""
    request = InfillRequest(prefix="const numbers = [1, 2, 3];\nconst doubled = numbers.map(", suffix=");\nconsole.log(doubled);\n",
                            one_line=True, n_alternatives=2)
    texts = {-1.0: "doubled", -3.0: "n => n * 2"}
    rows = [Row([], b"", 4, True, 0.0, torch.Generator(), score=score, gap_suffix=[7], branch=True) for score in texts]
    group = list(rows)
    rank_branches(group, request, lambda row: texts[row.score])
    assert [texts[row.score] for row in group] == ["n => n * 2", "doubled"]
    texts[-3.0] = "doubled.slice()"
    group = list(rows)
    rank_branches(group, request, lambda row: texts[row.score])
    assert [row.score for row in group] == [-1.0, -3.0]


def test_a_branch_that_only_copies_the_documents_header_ranks_after_one_that_does_not():
    """In a headed document (``# deploy.sh`` before its prefix) a line ``# build.sh`` is the
    prompt's form copied, no code; in a Python file (no header) such a comment is left alone."""
    request = InfillRequest(prefix='#!/bin/sh\nset -e\ndist="dist"\n', suffix='\ncp build/* "$dist/"\n', one_line=True,
                            n_alternatives=2, file_name="deploy.sh")
    texts = {-1.0: "# build.sh", -3.0: 'mkdir -p "$dist"'}
    rows = [Row([], b"", 4, True, 0.0, torch.Generator(), score=score, gap_suffix=[7], branch=True, whole_line=True) for score in texts]
    group = list(rows)
    rank_branches(group, request, lambda row: texts[row.score])
    assert [texts[row.score] for row in group] == ['mkdir -p "$dist"', "# build.sh"]
    group = list(rows)
    rank_branches(group, replace(request, file_name="deploy.py"), lambda row: texts[row.score])
    assert [row.score for row in group] == [-1.0, -3.0]


def test_a_gap_inside_a_line_branches_on_its_first_word_and_the_suffix_chooses(tiny_lm, smol_tokenizer, monkeypatch):
    """Four rows begin with the first word's four likeliest choices; the one whose cut reads on into
    the suffix best is the result, even when its first word was not the likeliest."""
    from sfumato.model.lm_engine import LmDenoiserBackend

    the, a = (smol_tokenizer(word, add_special_tokens=False).input_ids[0] for word in (" the", " a"))
    model = copy.deepcopy(tiny_lm)
    model.lm_head.register_forward_hook(lambda module, args, out: out.index_add(
        -1, torch.tensor([the, a]), torch.tensor([12.0, 10.0]).expand(*out.shape[:-1], 2)))
    backend = LmDenoiserBackend(model, smol_tokenizer, ModelInfo("tiny", "lm-denoiser", "cpu", 0, False))
    request = InfillRequest(prefix="The server listens on ", suffix=" port 8080 by default.\n", max_new_tokens=6,
                            one_line=True, seed=0)
    assert [backend._row(request, k).first_word_rank for k in range(3)] == [0, 1, 2]
    assert not backend._row(InfillRequest(prefix="x = ", suffix="\n", one_line=True), 1).first_word_rank  # a line: sampled
    both = [d for d in backend.stream([replace(request, n_alternatives=2)])][-1][0].candidates
    assert len(both) == 2 and {c.text.split()[0] for c in both} == {"the", "a"}
    for favoured, word in ((the, "the"), (a, "a")):
        monkeypatch.setattr(CutQueries, "scores", lambda self, *read, f=favoured: [100.0 * (self.ids[0] == f)] * len(self.cuts))
        final = [d for d in backend.stream([request])][-1][0]
        assert final.text.split()[0] == word and len(final.candidates) == 1
        again = [d for d in backend.stream([replace(request, first_alternative=1)])][-1][0]
        assert again.text.split()[0] != word  # Try Again: the next best branch, not the same text


def test_a_heavy_rewrites_lines_are_written_as_branches_scored_whole(tiny_lm, smol_tokenizer, monkeypatch):
    """Each line a heavy rewrite writes again is two rows, from its first word's two likeliest
    choices; each is scored whole (its text to the line break, then the suffix's start: one cut)
    and the better is the line written. Ctrl+K's line at a blank line is two such rows too; a
    heavy rewrite's alternatives (``whole_lines`` False) are one row each, sampled."""
    import sfumato.model.lm_engine as engine
    from sfumato.model.gap_cut import row_count

    backend = engine.LmDenoiserBackend(tiny_lm, smol_tokenizer, ModelInfo("tiny", "lm-denoiser", "cpu", 0, False))
    line = InfillRequest(prefix="def mean(values):\n    ", suffix="\n    return total\n", one_line=True)
    assert row_count(line) == 2 and backend._row(line, 0).gap_suffix and backend._row(line, 0).whole_line
    assert [backend._row(line, k).first_word_rank for k in range(2)] == [0, 1]
    assert row_count(line, whole_lines=False) == 1 and not backend._row(line, 0, lines=False).gap_suffix

    scored, chosen, replaced, rank = [], [], [], engine.rank_branches

    def favour_the_second(group, request, text_of):
        if group[0].whole_line:
            assert [row.first_word_rank for row in group] == [0, 1]
            replaced.append({row.replaces for row in group})
            for row in group:
                row.score, row.replaces = float(row.first_word_rank == 1), None  # the scores alone decide here
            chosen.append(text_of(group[1]))
        rank(group, request, text_of)

    scores = CutQueries.scores
    monkeypatch.setattr(CutQueries, "scores", lambda self, *read: scored.append(self.cuts) or scores(self, *read))
    monkeypatch.setattr(engine, "rank_branches", favour_the_second)
    request = InfillRequest(prefix="def mean(values):\n", suffix="\n\nprint(mean([1, 2]))\n", max_new_tokens=24,
                            init_text="    total = sum(values)\n    return total / len(values)", strength=1.0, seed=0)
    final = [d for d in backend.stream([request])][-1][0]
    assert len(chosen) == 2  # both lines written again, each from two branches
    assert replaced == [{"    total = sum(values)"}, {"return total / len(values)"}]  # each knows the line it replaces
    assert all(len(cuts) == 1 for cuts in scored)  # a whole line: its end is the only cut
    assert [line.strip() for line in final.text.split("\n")] == [text.strip() for text in chosen]  # the favoured, whole
    monkeypatch.setattr(engine, "rank_branches", rank)
    two = [d for d in backend.stream([replace(request, n_alternatives=2)])][-1][0]
    assert len(two.candidates) == 2  # alternatives asked for: sampled rows, as before
    mid_line = replace(request, prefix="def mean(values):\n    total = ", init_text="sum(values)\n    return total")
    assert len([d for d in backend.stream([mid_line])][-1][0].candidates) == 1  # a line begun before the selection: one row
