"""The suggestion engine: retrieved and denoised alternatives ranked by the model and the checks."""

from __future__ import annotations

import dataclasses
import math

from sfumato.model.api import InfillRequest, TemplateRequest
from sfumato.model.candidate_score import mean_log_probs
from sfumato.model.checks import bracket_errors, parses, unknown_names
from sfumato.model.loading import load_backend
from sfumato.model.rerank import DEFAULT, FEATURES, Alternative, Ranker
from sfumato.model.suggest import RANKER_FILE, Settings, SuggestingBackend, selection_before_found

# Two lines sit between ``base = ...`` and ``return stem`` in the document: one parses, one does not.
PREFIX = """def first(path):
    base = path.name
    stem = base.split(".")[0]
    return stem


def second(path):
    base = path.name
    stem = base.split(".")[0
    return stem


def third(path):
    base = path.name
    """
SUFFIX = "\n    return stem\n"


def ranker(**weights) -> Ranker:
    return Ranker({name: weights.get(name, 0.0) for name in FEATURES}, bias=weights.get("bias", 0.0),
                  confidence_bar=weights.get("bar", 0.5))


def final(engine, request):
    drafts = None
    for drafts in engine.stream([request]):
        pass
    return drafts[0]


def test_the_checks_tell_parsing_and_balanced_text_apart():
    assert parses(PREFIX, 'stem = base.split(".")[0]', SUFFIX)
    assert not parses(PREFIX, 'stem = base.split(".")[0', SUFFIX)
    assert bracket_errors("f(a[1)]") == 2 and bracket_errors("s = '(' + x") == 0
    assert unknown_names("stem = base.split(sep)", PREFIX, SUFFIX) == 1  # sep
    assert unknown_names("stem = len(base)", PREFIX, SUFFIX) == 0


def test_the_model_scores_every_candidate(tiny_backend):
    request = InfillRequest(prefix=PREFIX, suffix=SUFFIX)
    scores = mean_log_probs(tiny_backend, request, ["a", "stem = base", "x" * 200])
    assert len(scores) == 3 and all(math.isfinite(s) and s < 0 for s in scores)
    assert mean_log_probs(tiny_backend, request, []) == []


def test_a_parsing_candidate_beats_a_non_parsing_one(tiny_backend):
    engine = SuggestingBackend(tiny_backend, None, ranker(parses=3.0, no_parse=-3.0), Settings(fresh=0))
    draft = final(engine, InfillRequest(prefix=PREFIX, suffix=SUFFIX, seed=0))
    texts = [c.text for c in draft.candidates]
    assert texts[0] == 'stem = base.split(".")[0]'
    assert 'stem = base.split(".")[0' in texts  # still reachable as an alternative
    assert draft.final and (draft.candidates[0].origin, draft.candidates[0].source) == ("pair", "document")
    score = {c.text: c.score for c in draft.candidates}
    assert score['stem = base.split(".")[0]'] > score['stem = base.split(".")[0']


def test_the_unchanged_text_can_win_a_rewrite(tiny_backend):
    engine = SuggestingBackend(tiny_backend, None, ranker(original=5.0))
    request = InfillRequest(prefix=PREFIX, suffix=SUFFIX, init_text="stem = base", strength=0.5, seed=0)
    draft = final(engine, request)
    assert draft.text == "stem = base" and draft.candidates[0].origin == "original"
    assert not draft.confident  # keeping the text is no suggestion: the editor says so


def test_a_selected_line_gets_the_lines_found_for_its_place_as_guesses(tiny_backend):
    engine = SuggestingBackend(tiny_backend, None, ranker(pair=3.0, parses=3.0, no_parse=-3.0))
    selection = "    stem = base.split('.')\n"  # the whole line, its indentation and its newline
    request = InfillRequest(prefix=PREFIX[: -len("    ")], suffix=SUFFIX[1:], init_text=selection, strength=0.5, seed=0)
    draft = final(engine, request)
    texts = [c.text for c in draft.candidates]
    found = next(c for c in draft.candidates if c.text == '    stem = base.split(".")[0]\n')  # fitted to the blanks
    assert (found.origin, found.source) == ("pair", "document")
    # preferred by the ranker, yet never put before the selection: a guess, not a confident rewrite
    assert texts.index(selection) < texts.index(found.text) and not draft.confident


def test_a_selected_line_is_not_offered_the_line_above_it(tiny_backend):
    engine = SuggestingBackend(tiny_backend, None, ranker())
    request = InfillRequest(prefix="def is_even(n):\n", suffix="\n", init_text="    return n % 2 == 1", strength=0.5, seed=0)
    assert all(c.origin != "repeat" for c in final(engine, request).candidates)
    infill = InfillRequest(prefix="def is_even(n):\n    ", suffix="\n", seed=0)
    assert "repeat" in [c.origin for c in final(engine, infill).candidates]  # an empty line still gets it


def test_a_selection_over_several_lines_gets_the_models_rewrite_only(tiny_backend):
    engine = SuggestingBackend(tiny_backend, None, ranker(pair=3.0))
    request = InfillRequest(prefix=PREFIX[: -len("    base = path.name\n    ")], suffix=SUFFIX,
                            init_text="    base = path.name\n    stem = base", strength=0.5, seed=0)
    assert {c.origin for c in final(engine, request).candidates} <= {"original", "started"}


def test_fresh_samples_join_the_ranking(tiny_backend):
    engine = SuggestingBackend(tiny_backend, None, ranker(sample=5.0), Settings(fresh=1))
    draft = final(engine, InfillRequest(prefix=PREFIX, suffix=SUFFIX, max_new_tokens=8, seed=0))
    assert (draft.candidates[0].origin, draft.candidates[0].source) == ("sample", "")  # the model wrote it
    assert {c.origin for c in draft.candidates} >= {"sample", "pair"}


def test_nothing_confident_is_said_so(tiny_backend):
    engine = SuggestingBackend(tiny_backend, None, ranker(bias=-10.0))
    draft = final(engine, InfillRequest(prefix=PREFIX, suffix=SUFFIX, max_new_tokens=8, seed=0))
    assert draft.final and not draft.confident
    sure = SuggestingBackend(tiny_backend, None, ranker(bias=10.0))
    assert final(sure, InfillRequest(prefix=PREFIX, suffix=SUFFIX, max_new_tokens=8, seed=0)).confident


def test_template_gaps_get_candidates_too(tiny_backend):
    engine = SuggestingBackend(tiny_backend, None, ranker(scope=3.0, parses=3.0))
    template = TemplateRequest(("def mean(values):\n    total = sum(values)\n    return ", "\n"), (8,), seed=0)
    drafts = None
    for drafts in engine.stream_template(template):
        pass
    assert drafts[0].text in ("total", "values")


def test_a_folder_with_a_ranker_loads_as_the_suggestion_engine(tiny_model_dir, tmp_path):
    import shutil

    folder = tmp_path / "model"
    shutil.copytree(tiny_model_dir, folder)
    assert not isinstance(load_backend(str(folder), device="cpu"), SuggestingBackend)
    dataclasses.replace(DEFAULT).save(folder / RANKER_FILE)
    engine = load_backend(str(folder), device="cpu")
    assert isinstance(engine, SuggestingBackend) and engine.table is None
    assert engine.ranker == DEFAULT


def test_project_context_goes_into_the_prompt_within_budget(tiny_backend):
    snippet = "def helper(stem):\n    return stem.upper()\n"
    request = InfillRequest(prefix="x = 1\n" * 400, suffix="y = 2\n" * 400, context=(snippet,))
    with_context = tiny_backend.prompt_ids(request)
    without = tiny_backend.prompt_ids(dataclasses.replace(request, context=()))
    snippet_ids = tiny_backend.tokenizer.encode(snippet, add_special_tokens=False)
    assert max(len(with_context), len(without)) <= tiny_backend.profile.context_tokens
    assert with_context[2 : 2 + len(snippet_ids)] == snippet_ids
    assert without[2 : 2 + len(snippet_ids)] != snippet_ids


def test_a_gap_inside_a_sentence_has_a_bar_of_its_own(tmp_path):
    stored = Ranker({name: 0.0 for name in FEATURES}, bias=0.0, confidence_bar=0.4, prose_bar=0.6)
    stored.save(tmp_path / RANKER_FILE)
    loaded = Ranker.load(tmp_path / RANKER_FILE)
    phrase = Alternative("a list", "gap1", "phrases")
    assert loaded.confident(0.0, phrase) and not loaded.confident(0.0, phrase, prose=True)  # probability 0.5
    assert Ranker(stored.weights, 0.0, 0.4).confident(0.0, phrase, prose=True)  # no prose bar: the one bar


def test_in_a_rewrite_found_text_moves_after_the_selection_and_keeps_the_rankers_order():
    def alt(text, origin):
        return Alternative(text, origin)

    scored = [(3.0, alt("found", "pair")), (2.0, alt("rewritten", "started")), (1.0, alt("phrase", "prose")),
              (0.5, alt("kept", "original")), (0.1, alt("other", "below"))]
    assert [a.text for _, a in selection_before_found(scored)] == ["rewritten", "kept", "found", "phrase", "other"]
